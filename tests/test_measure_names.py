"""A measure named in a peer tool's spelling: ``--measures nDCG@10`` (ir_measures') is scored with
the conventions given (trec_eval's by default, as every other name), and where the number is read
it says which conventions differ from ir_measures' and which flag gives ir_measures' numbers."""

from __future__ import annotations

import pytest

from tests.helpers import run_cli

SAMPLE = ("--run", "data/run.parquet", "--qrels", "data/qrels.parquet")
NOTE = (
    "# nDCG@10, P@5: ir_measures' spelling, scored with these conventions, not ir_measures': "
    "all_queries=false (ir_measures: true); --profile ir_measures gives ir_measures' numbers"
)


def test_an_ir_measures_name_says_its_conventions_under_the_table() -> None:
    done = run_cli("evaluate", *SAMPLE, "--measures", "nDCG@10,P@5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == NOTE


@pytest.mark.parametrize(
    "flags",
    [
        ("--measures", "nDCG@10", "--profile", "ir_measures"),  # the tool's conventions, asked for
        ("--measures", "nDCG@10", "--all-queries"),  # nothing differs from ir_measures'
        ("--measures", "ndcg_cut_10,P_5"),  # trec_eval's spelling: its conventions are the defaults
        ("--measures", "ndcg,P"),  # our own names
    ],
)
def test_no_note_when_the_conventions_are_the_names_tools(flags: tuple[str, ...]) -> None:
    done = run_cli("evaluate", *SAMPLE, *flags)
    assert done.returncode == 0, done.stderr
    assert "spelling" not in done.stdout + done.stderr


def test_trec_output_says_it_on_stderr() -> None:
    done = run_cli("evaluate", *SAMPLE, "--measures", "nDCG@10,P@5", "--output-format", "trec")
    assert done.returncode == 0, done.stderr
    assert NOTE.removeprefix("# ") in done.stderr and "spelling" not in done.stdout
