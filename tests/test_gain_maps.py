"""Gain maps follow trec_eval (its -G map, as the seeds' formulas): mapped levels get the map,
unmapped ones keep their value, negative labels gain 0 whatever the map says, the ideal ranking
uses only positive gains; and under a map the whole ranking's trec line is still `ndcg`."""

from __future__ import annotations

from math import log2

import polars as pl
import pytest

from pipeline import Evaluation, Gain, per_query
from tests.helpers import CONFORMANCE, as_table, assert_tables_close, reference, run_cli

# Gain maps follow trec_eval: mapped levels get the map, unmapped keep their value, negative
#    labels gain 0 whatever the map says, the ideal ranking uses only positive gains.


def test_gain_map_on_graded_labels_by_hand(engine: str) -> None:
    # retrieved order: labels 4, 3, 0, 2, -1, 1; judged but not retrieved: 2
    labels = {"a": 4, "b": 3, "c": 0, "d": 2, "e": -1, "f": 1, "g": 2}
    run = pl.LazyFrame({"query_id": "q", "doc_id": list("abcdef"), "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": "q", "doc_id": list(labels), "relevance": list(labels.values())})
    gain = Gain.parse("1=3,2=9,4=4.5,-1=50")
    row = per_query(run, qrels, evaluation=Evaluation(cutoffs=(3,), gain=gain), engine=engine).collect()
    whole = row.filter(pl.col("k").is_null()).row(0, named=True)
    # gains by rank: 4 -> 4.5, 3 -> 3 (unmapped: its own value), 0 -> 0, 2 -> 9, -1 -> 0, 1 -> 3
    dcg = 4.5 / log2(2) + 3 / log2(3) + 0 / log2(4) + 9 / log2(5) + 0 / log2(6) + 3 / log2(7)
    # ideal gains, positive only: 9 (d), 9 (g), 4.5, 3 (b), 3 (f)
    idcg = 9 / log2(2) + 9 / log2(3) + 4.5 / log2(4) + 3 / log2(5) + 3 / log2(6)
    assert whole["dcg"] == pytest.approx(dcg)
    assert whole["idcg"] == pytest.approx(idcg)
    assert whole["ndcg"] == pytest.approx(dcg / idcg)
    at3 = row.filter(pl.col("k") == 3).row(0, named=True)
    assert at3["ndcg"] == pytest.approx((4.5 + 3 / log2(3)) / (9 + 9 / log2(3) + 4.5 / log2(4)))


def test_gain_map_level_zero_and_negative_gains(engine: str) -> None:
    run = pl.LazyFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": "q", "doc_id": ["a", "b", "c", "z"], "relevance": [0, 1, 2, 0]})
    gain = Gain.parse("0=1,2=-1")
    row = per_query(run, qrels, evaluation=Evaluation(cutoffs=(1,), gain=gain), engine=engine).collect()
    whole = row.filter(pl.col("k").is_null()).row(0, named=True)
    dcg = 1 / log2(2) + 1 / log2(3) + -1 / log2(4)  # label 0 -> 1, 1 -> 1 (unmapped), 2 -> -1
    idcg = 1 / log2(2) + 1 / log2(3) + 1 / log2(4)  # a, z (label 0 -> 1), b (1); never c (-1)
    assert whole["dcg"] == pytest.approx(dcg)
    assert whole["idcg"] == pytest.approx(idcg)


@pytest.mark.local_engines("trec_eval's TREC files (Spark reads Parquet only)")
@pytest.mark.parametrize("gain", ["1=3,2=9,4=4.5", "2=9", "0=1,1=2,3=0.5"])
def test_gain_map_on_rel_level_against_reference(engine: str, gain: str) -> None:
    # qrels.rel_level has graded labels 0..4, so a map changes NDCG here (unlike qrels.test).
    run_rows = [
        (q, d, float(s))
        for q, _, d, _, s, _ in (line.split() for line in (CONFORMANCE / "results.test").read_text().splitlines())
    ]
    qrels_rows = [
        (q, d, int(label))
        for q, _, d, label in (line.split() for line in (CONFORMANCE / "qrels.rel_level").read_text().splitlines())
    ]
    spec = Gain.parse(gain)
    table = per_query(
        CONFORMANCE / "results.test",
        CONFORMANCE / "qrels.rel_level",
        evaluation=Evaluation(cutoffs=(10, 100), gain=spec),
        engine=engine,
    ).collect()
    expected = reference.ndcg_table(run_rows, qrels_rows, [10, 100], levels=dict(spec.levels))
    assert_tables_close(as_table(table), expected)
    unmapped = per_query(
        CONFORMANCE / "results.test",
        CONFORMANCE / "qrels.rel_level",
        evaluation=Evaluation(cutoffs=(10, 100)),
        engine=engine,
    ).collect()
    assert (table["ndcg"] - unmapped["ndcg"]).abs().max() > 1e-3  # the map really changes the numbers


# Under a gain map the whole-ranking line is still called `ndcg`.


@pytest.mark.local_engines("the command line in a subprocess, over TREC files")
def test_trec_output_names_under_gain_map(engine: str) -> None:
    result = run_cli(
        "evaluate",
        "--run",
        CONFORMANCE / "results.test",
        "--qrels",
        CONFORMANCE / "qrels.test",
        "--gain",
        "1=3,2=9,4=4.5",
        "--k",
        "10",
        "--output-format",
        "trec",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    measures = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert measures == ["ndcg", "ndcg_cut_10"]
