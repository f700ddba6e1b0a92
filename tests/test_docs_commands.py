"""Every command the README and docs/ show runs as printed, so an example cannot rot.

The rule, also in docs/development.md:

- In the fenced code blocks of README.md and docs/*.md, every line that starts with ``ndcg ``,
  ``python -m pipeline ``, ``duckdb `` or ``make eval`` (after an optional ``$ `` prompt) is one
  test case, named ``file:line``. A line ending in ``\\`` goes on in the next one.
- It runs as a user runs it from the repository root after ``make dev`` with ``.venv/bin`` on the
  PATH: through bash (plain ``ndcg`` lines: see below), in a temporary copy of the files the
  commands read (``data/``, ``sql/``, ``eval.toml``, ``Makefile``, ``pyproject.toml``,
  ``docs/conventions/``), so outputs never land in the checkout.
- It must exit 0, or the code its own comment names: ``# exit 6``.
- A command reading what an earlier command of the same page wrote (a path given there to
  ``--out``, ``--html`` or ``--png``) gets those earlier commands replayed first, in page order.
  Each pytest process replays a list of earlier commands once and copies the folder it left
  for every command that reads it (a replay is seconds of imports; a copy of the sample is not).
- A block whose fence says ``bash whole`` is one case: the whole block runs as one bash script
  (``set -euo pipefail``) and must exit 0; its lines are not cases of their own.
- Under a ``$ `` command, the lines up to the next one are what it prints: they must be the
  lines it prints, stderr's then stdout's (as a terminal shows them: warnings before the
  answer), a line ``...`` standing for any lines and a line ending in `` ...`` for any line
  that begins as it does. A command directly followed by another shows nothing (not checked).
- Not run: blocks whose fence ends in ``-norun`` (``console-norun``: a cluster, a placeholder,
  an install step), and lines naming a placeholder (``<...>``) or a remote URL (``s3://``,
  ``s3a://``, ``hdfs://``, ...), which need a store or a cluster this test does not have.
- A plain ``ndcg ...`` line (one line, no shell syntax: no glob, expansion, redirection, pipe or
  escape, so bash would only split it into words) runs in this process, through the command
  line's ``main`` (``run_cli``) with the words bash would pass: a second of imports saved per
  line. What bash and the ``ndcg`` script add is proved by the other lines (``python -m pipeline``,
  ``make``, pipes and redirections) and by the tests of the installed wheel.
- A line with ``--engine spark`` is marked ``spark`` and ``slow`` and runs in this process on the
  tests' shared SparkSession (``spark_cli``): in a subprocess it would start a JVM of its own
  (30 s or more, minutes on a busy machine). Such a line must be a plain ``ndcg ...`` command,
  which the test checks.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import ROOT, run_cli

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
COPIED = ["data", "sql", "eval.toml", "Makefile", "pyproject.toml", "docs/conventions"]
COMMANDS = ("ndcg ", "python -m pipeline ", "duckdb ", "make eval")
REMOTE = re.compile(r"\b(s3a?|gs|az|abfss?|hdfs|hf|spark)://")
PLACEHOLDER = re.compile(r"<[^<>\s]+>")
EXPECTED_EXIT = re.compile(r"#\s*exit (\d+)\b")
WRITES = ("--out", "--html", "--png")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*(.*)$")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str
    whole_script: bool = False
    # the lines a block shows under a ``$ `` command, up to the next one: what it prints
    shown: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def expected_exit(self) -> int:
        found = EXPECTED_EXIT.search(self.text)
        return int(found.group(1)) if found else 0

    def writes(self) -> set[str]:
        words = self.text.split()
        return {words[i + 1].rstrip("/") for i, word in enumerate(words[:-1]) if word in WRITES}

    def reads(self, path: str) -> bool:
        words = self.text.split()
        read = [word for i, word in enumerate(words) if i == 0 or words[i - 1] not in WRITES]
        return any(word.rstrip("/") == path or word.startswith(path + "/") for word in read)


def blocks(page: Path) -> list[tuple[str, list[tuple[int, str]]]]:
    """The fenced code blocks of a Markdown page: (info string, [(line number, line)])."""
    found: list[tuple[str, list[tuple[int, str]]]] = []
    fence: str | None = None
    indent = ""
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence, indent = match.group(2), match.group(1)
            found.append((match.group(3).strip(), []))
        elif fence is not None and match and match.group(2).startswith(fence) and not match.group(3):
            fence = None
        elif fence is not None:
            # a block in a list item is indented as its fence is: its lines read without it
            found[-1][1].append((number, line.removeprefix(indent)))
    return found


def commands(page: Path) -> list[Command]:
    name = str(page.relative_to(ROOT))
    found: list[Command] = []
    for info, lines in blocks(page):
        if info.endswith("-norun"):
            continue
        if info.split()[1:2] == ["whole"]:
            found.append(Command(name, lines[0][0], "\n".join(line for _, line in lines), whole_script=True))
            continue
        joined: list[tuple[int, str]] = []
        shown: dict[int, list[str]] = {}
        prompted = any(line.startswith("$ ") for _, line in lines)
        for number, line in lines:
            if joined and joined[-1][1].endswith("\\"):
                joined[-1] = (joined[-1][0], joined[-1][1][:-1].rstrip() + " " + line.strip())
            elif prompted and not line.startswith("$ ") and joined:
                shown.setdefault(joined[-1][0], []).append(line.rstrip())
            else:
                joined.append((number, line.strip().removeprefix("$ ")))
        found += [
            Command(name, number, text, shown=tuple(shown.get(number, ())))
            for number, text in joined
            if text.startswith(COMMANDS) and not REMOTE.search(text) and not PLACEHOLDER.search(text)
        ]
    return found


def shows(shown: tuple[str, ...], printed: list[str]) -> bool:
    """Whether the lines a page shows are those a command printed (stderr's, then stdout's: the
    order a terminal shows them in, warnings before the answer). A line ``...`` stands for any
    lines (none too), a line ending in `` ...`` for any line that begins with what precedes it."""

    @functools.cache
    def fits(i: int, j: int) -> bool:
        if i == len(shown):
            return j == len(printed)
        if shown[i] == "...":
            return fits(i + 1, j) or (j < len(printed) and fits(i, j + 1))
        if j == len(printed):
            return False
        line = shown[i]
        same = printed[j].startswith(line[:-4]) if line.endswith(" ...") else printed[j] == line
        return same and fits(i + 1, j + 1)

    return fits(0, 0)


ALL = [command for page in PAGES for command in commands(page)]


def prerequisites(command: Command) -> list[Command]:
    """The earlier commands of the page whose outputs ``command`` reads, and theirs, in page order."""
    earlier = [other for other in ALL if other.page == command.page and other.line < command.line]
    needed: list[Command] = []
    wanted = [command]
    while wanted:
        reader = wanted.pop()
        for other in earlier:
            if other not in needed and any(reader.reads(path) for path in other.writes()):
                needed.append(other)
                wanted.append(other)
    return sorted(needed, key=lambda other: other.line)


def shell_line(command: Command) -> str:
    """``make eval...`` runs the checkout's environment (the venv this test runs in), never
    installing one in the temporary folder."""
    if not command.text.startswith("make "):
        return command.text
    venv = Path(sys.prefix)
    line = command.text.split(" #", 1)[0]
    return f"{line} VENV={venv} -o {venv}/.installed -o {venv}/.installed-dev"


# what makes bash do more than split a line into words: globs, expansions, redirections, pipes,
# lists, escapes, line breaks
SHELL_SYNTAX = re.compile(r"[*?\[\]$~{}|&;<>`\\\n]")


def plain_ndcg_words(command: Command) -> list[str] | None:
    """The arguments of a one-line ``ndcg ...`` command without shell syntax, as bash would pass
    them to the script (None for any other line)."""
    line = command.text.split(" #", 1)[0]
    if command.whole_script or not line.startswith("ndcg ") or SHELL_SYNTAX.search(line):
        return None
    return shlex.split(line)[1:]


def run(command: Command, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A plain ``ndcg ...`` line runs the command line's ``main`` in this process (the same
    arguments, exit code and output, without a second of imports each); any other line runs
    in bash."""
    words = plain_ndcg_words(command)
    if words is not None:
        return run_cli(*words, cwd=cwd)
    environment = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        # the checkout's code, also where the venv's `ndcg` is another checkout's editable install
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    script = f"set -euo pipefail\n{command.text}\n" if command.whole_script else shell_line(command)
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=environment, capture_output=True, text=True, timeout=600)


def on_spark(command: Command) -> bool:
    return "--engine spark" in command.text


def case(command: Command) -> object:
    marks = [pytest.mark.spark, pytest.mark.slow] if on_spark(command) else []
    return pytest.param(command, id=command.name, marks=[*marks, pytest.mark.timeout(900)])


def copy_checkout(target: Path) -> Path:
    for name in COPIED:
        source, copied = ROOT / name, target / name
        if source.is_dir():
            shutil.copytree(source, copied)
        else:
            copied.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copied)
    return target


class Replays:
    """The folder each list of earlier commands leaves, made once per pytest process: a copy of
    the checkout with the commands run in it in page order, each checked for its exit code. A
    longer list starts from the folder of its first commands (README's report reads what its
    compare read)."""

    def __init__(self, base: Path) -> None:
        self._base = base
        self._made: dict[tuple[Command, ...], Path] = {}

    def folder(self, commands: tuple[Command, ...]) -> Path:
        if commands in self._made:
            return self._made[commands]
        first = self.folder(commands[:-1]) if commands[:-1] else None
        target = self._base / f"replay-{len(self._made)}"
        if first is None:
            copy_checkout(target)
        else:
            shutil.copytree(first, target, symlinks=True)
        earlier = commands[-1]
        done = run(earlier, target)
        assert done.returncode == earlier.expected_exit, (
            f"{earlier.name}, run before the commands that read its output, exited {done.returncode}:\n"
            f"{done.stderr[-2000:]}"
        )
        self._made[commands] = target
        return target


@pytest.fixture(scope="session")
def replays(tmp_path_factory: pytest.TempPathFactory) -> Replays:
    return Replays(tmp_path_factory.mktemp("docs-replays"))


def checkout_copy(command: Command, replays: Replays, tmp_path: Path) -> Path:
    """A copy of the files the commands read, with the earlier commands whose outputs
    ``command`` reads already run in it."""
    earlier = tuple(prerequisites(command))
    target = tmp_path / "checkout"
    if earlier:
        shutil.copytree(replays.folder(earlier), target, symlinks=True)
        return target
    return copy_checkout(target)


def test_the_pages_show_commands() -> None:
    readme = [command for command in ALL if command.page == "README.md"]
    assert len(readme) >= 10, "README.md's quick tour lost its commands"
    assert len(ALL) > len(readme)


@pytest.mark.parametrize("command", [case(command) for command in ALL if not on_spark(command)])
def test_command_runs_as_printed(command: Command, replays: Replays, tmp_path: Path) -> None:
    done = run(command, checkout_copy(command, replays, tmp_path))
    assert done.returncode == command.expected_exit, (
        f"{command.name} exited {done.returncode}, expected {command.expected_exit}\n"
        f"$ {command.text}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
    if command.shown:
        printed = [line.rstrip() for line in (done.stderr + done.stdout).splitlines()]
        assert shows(command.shown, printed), (
            f"{command.name} shows what the command no longer prints\n--- shown\n"
            + "\n".join(command.shown)
            + "\n--- printed\n"
            + "\n".join(printed)
        )


def test_shown_output_is_matched_line_by_line() -> None:
    """The rule above on small cases: exact lines, ``...`` for any lines, `` ...`` for the rest of one."""
    assert shows(("a", "b"), ["a", "b"]) and not shows(("a",), ["a", "b"]) and not shows(("a", "b"), ["a", "c"])
    assert shows(("a", "...", "d"), ["a", "b", "c", "d"]) and shows(("a", "...", "d"), ["a", "d"])
    assert shows(("ndcg: skipped ...",), ["ndcg: skipped partition dt=1"]) and not shows(("x ...",), ["y"])


def test_the_pages_show_printed_output() -> None:
    """The output blocks the rule checks: the README's first evaluation among them."""
    assert any(command.shown for command in ALL if command.page == "README.md")


def spark_arguments(command: Command) -> list[str]:
    """The arguments of a plain ``ndcg ...`` line, what bash would pass to the script."""
    words = plain_ndcg_words(command)
    assert words is not None, (
        f"{command.name}: a line with --engine spark runs in the tests' process, so it must be a plain "
        f"`ndcg ...` command without shell syntax: {command.text}"
    )
    return words


@pytest.mark.parametrize("command", [case(command) for command in ALL if on_spark(command)])
def test_spark_command_runs_as_printed(
    command: Command,
    replays: Replays,
    tmp_path: Path,
    spark_cli: Callable[..., subprocess.CompletedProcess[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(checkout_copy(command, replays, tmp_path))
    done = spark_cli(*spark_arguments(command))
    assert done.returncode == command.expected_exit, (
        f"{command.name} exited {done.returncode}, expected {command.expected_exit}\n"
        f"$ {command.text}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
