"""Warnings on a terminal: one short line each, one per kind (compare's two runs share the
judgments' warnings), the count in each, all of them before the answer and never between its
lines; ``--verbose`` prints them in full (the first ids, what changes them), as JSON logs and
the manifest always record them.

The sample (data/): q041-q043 are judged but not retrieved, q013, q026 and q039 have no
relevant judgment, 27 judgments have a negative label (data/README.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, run_cli
from tests.helpers.outputs import QRELS, RUN

RUN_B = ROOT / "data/run_b.parquet"
SAMPLE = ("--run", "data/run.parquet", "--qrels", "data/qrels.parquet")
SHORT = [
    "ndcg: warning: queries only in data/qrels.parquet, skipped: 3",
    "ndcg: warning: queries without a relevant judgment in data/qrels.parquet (they score 0): 3",
    "ndcg: warning: negative labels in data/qrels.parquet, counted as unjudged: 27",
]
HINT = "ndcg: --verbose prints each warning in full: its first ids and what changes it"

pytestmark = pytest.mark.timeout(120)


def test_each_warning_is_one_short_line_before_the_table() -> None:
    """Both streams into one pipe, as a terminal shows them: the warnings, then the hint, then
    the whole answer; each warning at most 100 characters (they were up to 194)."""
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", *SAMPLE, "--k", "5,10"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=100,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stdout
    lines = done.stdout.splitlines()
    assert lines[:4] == [*SHORT, HINT]
    assert all(len(line) <= 100 for line in SHORT)
    assert lines[4].startswith("# conventions: ")
    assert [line.split()[0] for line in lines[5:]] == ["k", "all", "5", "10"]


def test_verbose_prints_each_warning_in_full_and_no_hint() -> None:
    done = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "10", "--verbose")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 3 and HINT not in lines
    assert "queries only in the qrels" in lines[0] and lines[0].endswith(": 3 (q041, q042, q043)")
    assert lines[1].endswith(": 3 (q013, q026, q039)")
    assert "negative label" in lines[2] and ": 27 (q002/d002-006, " in lines[2]


def test_json_logs_carry_the_warning_in_full() -> None:
    done = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "10", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stderr.splitlines()]
    assert [record["warning"]["code"] for record in records] == [
        "queries_only_in_qrels",
        "queries_without_relevant",
        "negative_labels",
    ]
    assert records[0]["warning"]["examples"] == ["q041", "q042", "q043"]
    assert records[2]["warning"]["count"] == 27


def test_compare_warns_once_per_kind_naming_the_runs() -> None:
    """Two runs on the same judgments: the judgments' three warnings once each (they were
    printed for each run, six lines), naming both runs."""
    done = run_cli("compare", "--run", RUN, "--run", RUN_B, "--qrels", QRELS, "--k", "10", "--permutations", "200")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("ndcg: warning: ")]
    assert warnings == [
        line.replace("data/", f"{ROOT}/data/").replace("warning: ", "warning: run, run_b: ") for line in SHORT
    ]
    assert HINT in done.stderr.splitlines()


def test_log_level_error_silences_the_warnings_and_the_hint() -> None:
    for command in (("evaluate",), ("compare", "--run", RUN_B)):
        done = run_cli(*command, "--run", RUN, "--qrels", QRELS, "--k", "10", "--log-level", "error")
        assert done.returncode == 0, done.stderr
        assert done.stderr == ""
