"""A measure named in a peer tool's spelling: ``--measures nDCG@10`` (ir_measures') is scored with
the conventions given (trec_eval's by default, as every other name), and where the number is read
it says which conventions differ from ir_measures' and which flag gives ir_measures' numbers, and
ir_measures' names select the lines trec_eval prints for the same measures."""

from __future__ import annotations

import re

import pytest

from pipeline.cli import main
from tests.helpers import CONFORMANCE, run_cli

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


COMPANION_LINE = re.compile(r"^(P_\d+|recall_\d+|map|map_cut_\d+|recip_rank|success_\d+)$")


def companion_lines(text: str) -> dict[tuple[str, str], float]:
    """``{(measure, query): value}`` of the companion measures' lines of trec_eval's format."""
    found = {}
    for line in text.splitlines():
        measure, query, value = line.split()
        if COMPANION_LINE.match(measure):
            found[(measure, query)] = float(value)
    return found


def test_ir_measures_names_select_trec_eval_s_lines(capsys: pytest.CaptureFixture[str]) -> None:
    # the companion measures named as ir_measures names them; their cutoffs are added to --k
    argv = ["evaluate", "--output-format", "trec", "--per-query", "--k", "15,20,30,100,200,500,1000"]
    argv += ["--run", str(CONFORMANCE / "results.test"), "--qrels", str(CONFORMANCE / "qrels.test")]
    measures = "nDCG@5,P@5,P@10,R@5,R@10,AP,AP@5,AP@10,RR,Success@1,Success@5,Success@10"
    assert main([*argv, "--measures", measures]) == 0
    actual = companion_lines(capsys.readouterr().out)
    expected = companion_lines((CONFORMANCE / "full" / "out.test.aq").read_text())
    families = {re.sub(r"_\d+$", "", measure) for measure, _ in expected}
    assert families == {"P", "recall", "map", "map_cut", "recip_rank", "success"}, families
    assert not sorted(set(expected) - set(actual)), "lines trec_eval prints that we do not"
    for key, value in expected.items():
        assert abs(actual[key] - value) <= 5e-5 + 1e-12, (key, actual[key], value)  # 4 decimals printed


def test_names_in_another_case_are_the_measures_they_name() -> None:
    """``ndcg@10,MAP,p@5`` is ``nDCG@10,AP,P@5``: the same lines, exit 0 (issue 49); a name that
    matches no spelling in any case is refused with the spelling meant, the error first."""
    flags = ("evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", "--output-format", "trec")
    as_registered = run_cli(*flags, "--measures", "nDCG@10,AP,P@5")
    in_other_cases = run_cli(*flags, "--measures", "ndcg@10,MAP,p@5")
    assert as_registered.returncode == in_other_cases.returncode == 0, in_other_cases.stderr
    assert in_other_cases.stdout == as_registered.stdout
    assert {line.split()[0] for line in in_other_cases.stdout.splitlines()} == {"ndcg_cut_10", "map", "P_5"}
    for typo, meant in (("ndgc@10", "nDCG@10"), ("bperf", "bpref"), ("recip_rnak", "recip_rank")):
        refused = run_cli(*flags, "--measures", typo)
        assert refused.returncode == 2
        first, *rest = refused.stderr.splitlines()
        assert first.startswith(f"ndcg evaluate: error: argument --measures: unknown measure {typo!r}; ")
        assert f"did you mean {meant!r}?" in first
        assert rest == ["usage: ndcg evaluate [flags]; `ndcg evaluate --help` lists them"]
