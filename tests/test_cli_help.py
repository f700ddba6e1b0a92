"""``ndcg COMMAND --help`` is a screen: a one-line usage, the flags in groups with the first
clause of each, examples, and where the rest is; ``--help-all`` has every flag in full (the
help of evaluate was 246 lines, its usage block alone 36, choice lists of ~1,000 characters).
The examples run as printed, on the sample, from the repository root."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import pytest

from pipeline.cli_help import ADVANCED, EXAMPLES
from tests.helpers import ROOT, run_cli

COMMANDS = ("evaluate", "validate", "compare", "report", "sql")
FLAG = re.compile(r"^  (--[a-z][a-z0-9-]*)", re.MULTILINE)

pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_short_grouped_and_ends_with_examples(command: str) -> None:
    short, full = run_cli(command, "--help"), run_cli(command, "--help-all")
    assert short.returncode == 0 and full.returncode == 0
    lines = short.stdout.splitlines()
    assert lines[0].startswith(f"usage: ndcg {command} ") and lines[1] == ""  # one line of usage
    assert max(len(line) for line in lines if not line.startswith("  ndcg ")) <= 110
    assert len(lines) < len(full.stdout.splitlines())
    examples = short.stdout.split("\nexamples:\n", 1)[1]
    assert all(f"  {example}" in examples for example in EXAMPLES[command])
    assert f"`ndcg {command} --help-all`" in short.stdout and "exit codes:" in short.stdout
    # a flag --help leaves out is one of the few it leaves to --help-all, which has every flag
    left_out = set(FLAG.findall(full.stdout)) - set(FLAG.findall(short.stdout))
    assert {flag.removeprefix("--").replace("-", "_") for flag in left_out} <= ADVANCED


def test_evaluate_help_fits_in_half_its_former_length() -> None:
    """246 lines before; choices past 30 characters are a name (--measures LIST), not a list."""
    shown = run_cli("evaluate", "--help").stdout
    assert len(shown.splitlines()) <= 140
    assert "all_trec" not in shown.split("examples:")[0] or "--measures LIST" in shown


def test_the_examples_run_as_printed(tmp_path: Path) -> None:
    """Each example of each command's help, in order, in a copy of the sample, after two saved
    evaluations (out/a, out/b) for the examples that compare or report saved outputs."""
    for name in ("data", "eval.toml"):
        source = ROOT / name
        (shutil.copytree if source.is_dir() else shutil.copy2)(source, tmp_path / name)
    for saved, run in (("out/a", "data/run.parquet"), ("out/b", "data/run_b.parquet")):
        done = run_cli("evaluate", "--run", run, "--qrels", "data/qrels.parquet", "--out", saved, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    for command, examples in EXAMPLES.items():
        for example in examples:
            words = shlex.split(example.split("  #", 1)[0])
            assert words[:2] == ["ndcg", command]
            done = run_cli(*words[1:], cwd=tmp_path)
            assert done.returncode == 0, f"{example}\n{done.stdout[-1000:]}\n{done.stderr[-2000:]}"
