"""What a new user meets first: a clone that needs nothing beside it, and a command line that
says what was meant when a flag is mistyped."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT, run_cli

# Files a user's clone runs: they must not reach outside the repository (a clone has
# nothing beside it).
SELF_CONTAINED = [
    *sorted((ROOT / "tests").rglob("*.py")),  # with tests/helpers
    *sorted((ROOT / "bench").rglob("*.py")),
    ROOT / "Makefile",
    ROOT / ".ci" / "run",
    ROOT / "pyproject.toml",
]


@pytest.mark.parametrize("path", SELF_CONTAINED, ids=lambda path: str(path.relative_to(ROOT)))
def test_nothing_reads_outside_the_repository(path: object) -> None:
    from pathlib import Path

    assert isinstance(path, Path)
    text = path.read_text(encoding="utf-8")
    if path.name == "test_fresh_clone.py":
        text = text.split("SELF_CONTAINED", 1)[0]  # its own patterns below are not paths
    outside = re.findall(r"\.\./\w+|ROOT\.parent\b|parent\.parent\.parent|/work/", text)
    assert not outside, f"{path.name} refers outside the repository: {outside}"


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["evaluate", "--gruop-by", "locale"], "did you mean --group-by?"),
        (["evaluate", "--kk=5"], "did you mean --k?"),
        (["compare", "--basline", "out/a"], "did you mean --baseline?"),
        (["validate", "--qrles", "q.parquet"], "did you mean --qrels?"),
    ],
)
def test_a_mistyped_flag_is_named_with_the_flag_meant(argv: list[str], suggestion: str) -> None:
    result = run_cli(*argv)
    assert result.returncode == 2
    assert f"ndcg {argv[0]}: error: unrecognized argument(s): {argv[1]}" in result.stderr
    assert suggestion in result.stderr
    assert f"usage: ndcg {argv[0]}" in result.stderr  # the command's usage, not the top level's


def test_an_unknown_word_points_at_the_commands_help() -> None:
    result = run_cli("evaluate", "--run", "data/run.parquet", "stray")
    assert result.returncode == 2
    assert "unrecognized argument(s): stray; `ndcg evaluate --help` lists the flags" in result.stderr
