"""trec_eval's own test suite (tests/data/trec_eval/, copied with its provenance), through the CLI's
``--output-format trec``, on both engines. Expected values are trec_eval's, rounded to 4
decimals, so they are compared within 1e-4."""

from __future__ import annotations

import pytest

from pipeline.cli import main
from tests.helpers import CONFORMANCE
from tests.helpers.trec import ALL_TREC_CUTOFFS, assert_conformant, expected_lines

pytestmark = pytest.mark.local_engines("trec_eval's TREC files (Spark reads Parquet only)")


def trec_output(capsys: pytest.CaptureFixture[str], *args: str) -> dict[tuple[str, str], float]:
    assert main(["evaluate", "--output-format", "trec", *args]) == 0
    found = {}
    for line in capsys.readouterr().out.splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        found[(measure, query)] = float(value)
    return found


def args(run: str, qrels: str, *extra: str) -> list[str]:
    return ["--run", str(CONFORMANCE / run), "--qrels", str(CONFORMANCE / qrels), *extra]


def test_expected_a(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # trec_eval -m all_trec qrels.test results.test
    actual = trec_output(capsys, *args("results.test", "qrels.test", "--k", ALL_TREC_CUTOFFS, "--engine", engine))
    expected = expected_lines("expected.a")
    assert_conformant(actual, expected)
    assert set(actual) == set(expected)  # without --per-query only the `all` lines


def test_expected_aq(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # trec_eval -m all_trec -q qrels.test results.test
    actual = trec_output(
        capsys, *args("results.test", "qrels.test", "--k", ALL_TREC_CUTOFFS, "--per-query", "--engine", engine)
    )
    assert_conformant(actual, expected_lines("expected.aq"))


def test_expected_aqc(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # trec_eval -m all_trec -q -c qrels.test results.trunc: query 302 has no results
    actual = trec_output(
        capsys,
        *args(
            "results.trunc", "qrels.test", "--k", ALL_TREC_CUTOFFS, "--per-query", "--all-queries", "--engine", engine
        ),
    )
    assert_conformant(actual, expected_lines("expected.aqc"))


def test_expected_aqcm(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # trec_eval -m all_trec -q -c -M100 qrels.test results.trunc
    actual = trec_output(
        capsys,
        *args(
            "results.trunc",
            "qrels.test",
            "--k",
            ALL_TREC_CUTOFFS,
            "--per-query",
            "--all-queries",
            "--max-results",
            "100",
            "--engine",
            engine,
        ),
    )
    assert_conformant(actual, expected_lines("expected.aqcM"))


def test_expected_aql_graded_labels(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # trec_eval -m all_trec -q -l2 qrels.rel_level results.test: -l2 does not change nDCG
    actual = trec_output(
        capsys, *args("results.test", "qrels.rel_level", "--k", ALL_TREC_CUTOFFS, "--per-query", "--engine", engine)
    )
    assert_conformant(actual, expected_lines("expected.aql"))


def test_meas_params_cutoffs(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # -mndcg_cut.10,20,23.4 (23.4 is read as 23), default gains
    actual = trec_output(
        capsys, *args("results.test", "qrels.test", "--k", "10,20,23", "--per-query", "--engine", engine)
    )
    expected = {key: v for key, v in expected_lines("expected.meas_params").items() if key[0].startswith("ndcg_cut_")}
    assert {m for m, _ in expected} == {"ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"}
    assert_conformant(actual, expected)


def test_meas_params_gain_map(capsys: pytest.CaptureFixture[str], engine: str) -> None:
    # -mndcg.1=3,2=9,4=4.5: trec_eval names the whole-ranking line after the map; ours is `ndcg`.
    actual = trec_output(
        capsys,
        *args("results.test", "qrels.test", "--gain", "1=3,2=9,4=4.5", "--k", "10", "--per-query", "--engine", engine),
    )
    expected = expected_lines("expected.meas_params", rename={"ndcg_1=3,2=9,4=4.5": "ndcg"})
    expected = {key: v for key, v in expected.items() if key[0] == "ndcg"}
    assert len(expected) == 4  # three queries and `all`
    assert_conformant(actual, expected)
