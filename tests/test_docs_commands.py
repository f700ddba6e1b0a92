"""Every command the README and docs/ show runs as printed, so an example cannot rot.

The rule, also in docs/development.md:

- In the fenced code blocks of README.md and docs/*.md, every line that starts with ``ndcg ``,
  ``python -m pipeline ``, ``duckdb `` or ``make eval`` (after an optional ``$ `` prompt) is one
  test case, named ``file:line``. A line ending in ``\\`` goes on in the next one.
- It runs as a user runs it from the repository root after ``make dev`` with ``.venv/bin`` on the
  PATH: through bash, in a temporary copy of the files the commands read (``data/``, ``sql/``,
  ``eval.toml``, ``Makefile``, ``pyproject.toml``, ``docs/conventions/``), so outputs never land in the checkout.
- It must exit 0, or the code its own comment names: ``# exit 6``.
- A command reading what an earlier command of the same page wrote (a path given there to
  ``--out``, ``--html`` or ``--png``) gets those earlier commands replayed first, in page order.
- A block whose fence says ``bash whole`` is one case: the whole block runs as one bash script
  (``set -euo pipefail``) and must exit 0; its lines are not cases of their own.
- Not run: blocks whose fence ends in ``-norun`` (``console-norun``: a cluster, a placeholder,
  an install step), and lines naming a placeholder (``<...>``) or a remote URL (``s3://``,
  ``s3a://``, ``hdfs://``, ...), which need a store or a cluster this test does not have.
- A line with ``--engine spark`` is marked ``spark`` and runs in this process, on the test
  session's shared SparkSession (``pipeline.cli.main`` with the line's words, in the temporary
  copy): in a subprocess each such line started a JVM of its own (30 s to minutes). So such a
  line must be one plain ``ndcg ...`` command (no pipes, redirections or ``&&``).
  tests/test_spark.py runs the command line with ``--engine spark`` in a subprocess, as a user
  or a scheduler does, once.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from pipeline.cli import main
from tests.helpers import ROOT

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
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match.group(2)
            found.append((match.group(3).strip(), []))
        elif fence is not None and match and match.group(2).startswith(fence) and not match.group(3):
            fence = None
        elif fence is not None:
            found[-1][1].append((number, line))
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
        for number, line in lines:
            if joined and joined[-1][1].endswith("\\"):
                joined[-1] = (joined[-1][0], joined[-1][1][:-1].rstrip() + " " + line.strip())
            else:
                joined.append((number, line.strip().removeprefix("$ ")))
        found += [
            Command(name, number, text)
            for number, text in joined
            if text.startswith(COMMANDS) and not REMOTE.search(text) and not PLACEHOLDER.search(text)
        ]
    return found


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


def run(command: Command, cwd: Path) -> subprocess.CompletedProcess[str]:
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
    return pytest.param(command, id=command.name, marks=[pytest.mark.timeout(900)])


SHELL_SYNTAX = frozenset({"|", "||", "&&", ";", ">", ">>", "<", "&"})


def run_in_process(command: Command, cwd: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """A plain ``ndcg ...`` line run by ``pipeline.cli.main`` in ``cwd``: its exit code and stderr."""
    words = shlex.split(command.text, comments=True)
    program = 1 if words[:1] == ["ndcg"] else 3 if words[:3] == ["python", "-m", "pipeline"] else 0
    assert program and not SHELL_SYNTAX & set(words) and not command.whole_script, (
        f"{command.name}: a line with --engine spark must be one plain `ndcg ...` command, "
        f"which this test runs in process: {command.text}"
    )
    capsys.readouterr()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        code = main(words[program:])
    finally:
        os.chdir(previous)
    return code, capsys.readouterr().err


@pytest.fixture
def checkout_copy(tmp_path: Path) -> Path:
    for name in COPIED:
        source, target = ROOT / name, tmp_path / name
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
    return tmp_path


def test_the_pages_show_commands() -> None:
    readme = [command for command in ALL if command.page == "README.md"]
    assert len(readme) >= 10, "README.md's quick tour lost its commands"
    assert len(ALL) > len(readme)


def run_prerequisites(command: Command, cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for earlier in prerequisites(command):
        if on_spark(earlier):
            code, stderr = run_in_process(earlier, cwd, capsys)
        else:
            done = run(earlier, cwd)
            code, stderr = done.returncode, done.stderr
        assert code == earlier.expected_exit, (
            f"{earlier.name}, run before {command.name}, exited {code}:\n{stderr[-2000:]}"
        )


@pytest.mark.parametrize("command", [case(command) for command in ALL if not on_spark(command)])
def test_command_runs_as_printed(command: Command, checkout_copy: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_prerequisites(command, checkout_copy, capsys)
    done = run(command, checkout_copy)
    assert done.returncode == command.expected_exit, (
        f"{command.name} exited {done.returncode}, expected {command.expected_exit}\n"
        f"$ {command.text}\n--- stdout\n{done.stdout[-2000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )


@pytest.mark.parametrize("command", [case(command) for command in ALL if on_spark(command)])
def test_spark_command_runs_as_printed(
    command: Command, checkout_copy: Path, local_spark: object, capsys: pytest.CaptureFixture[str]
) -> None:
    run_prerequisites(command, checkout_copy, capsys)
    code, stderr = run_in_process(command, checkout_copy, capsys)
    assert code == command.expected_exit, (
        f"{command.name} exited {code}, expected {command.expected_exit}\n"
        f"$ {command.text}\n--- stderr\n{stderr[-3000:]}"
    )
