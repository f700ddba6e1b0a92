"""Measure.aggregate means the same on every engine: a measure's summary is the mean, the sum
or the geometric mean (trec_eval's gm_map: exp of the mean of ln(max(value, 1e-5)),
MIN_GEO_MEAN in trec_eval.h) of its per-query values. No measure of the registry combines
other than by mean yet, so a per-query table with test-only columns stands in for them; the
expected values are the formulas written out."""

from __future__ import annotations

import math

import polars as pl
import pytest

from pipeline import aggregate
from pipeline.engines import duckdb as duckdb_engine
from pipeline.registry import Measure, SpecError, summary_variables

# three queries at one cutoff (and the whole ranking): a count summed, a score combined by
# geometric mean (one query scores 0: the floor 1e-5 stands in for it), and a plain mean
PER_QUERY = pl.DataFrame(
    {
        "query_id": ["q1", "q2", "q3", "q1", "q2", "q3"],
        "k": [None, None, None, 5, 5, 5],
        "cg": [1.0, 2.0, 3.0, 1.0, 1.0, 1.0],
        "dcg": [1.0, 2.0, 3.0, 1.0, 1.0, 1.0],
        "idcg": [2.0, 2.0, 3.0, 2.0, 2.0, 2.0],
        "ndcg": [0.5, 1.0, 1.0, 0.5, 0.5, 0.5],
        "found": [3.0, 0.0, 4.0, 2.0, 0.0, 1.0],
        "spread": [0.5, 0.0, 0.8, 0.25, 0.5, 1.0],
        "curve": [0.5, 0.0, 0.8, None, None, None],
    },
    schema_overrides={"k": pl.Int64},
)
TEST_MEASURES = (
    Measure("found", "found", "relevant retrieved", aggregate="sum"),
    Measure("spread", "spread", "a score in [0, 1]", aggregate="geometric_mean"),
    # of the whole ranking only, null at a cutoff (as gm_bpref): no geometric mean there, not the
    # floor's 1e-5 (SQL's greatest() skips a null)
    Measure("curve", "curve", "a score of the whole ranking", aggregate="geometric_mean"),
)


def geometric_mean(values: list[float]) -> float:
    return math.exp(sum(math.log(max(value, 1e-5)) for value in values) / len(values))


EXPECTED = {
    None: {
        "queries": 3,
        "ndcg": (0.5 + 1.0 + 1.0) / 3,
        "found": 7.0,
        "spread": geometric_mean([0.5, 0.0, 0.8]),
        "curve": geometric_mean([0.5, 0.0, 0.8]),
    },
    5: {"queries": 3, "ndcg": 0.5, "found": 3.0, "spread": geometric_mean([0.25, 0.5, 1.0]), "curve": None},
}


def check(summary: pl.DataFrame) -> None:
    assert summary.columns == ["k", "queries", "cg", "dcg", "idcg", "ndcg", "found", "spread", "curve"]
    for row in summary.iter_rows(named=True):
        expected = EXPECTED[row["k"]]
        assert row["queries"] == expected["queries"]
        for name in ("ndcg", "found", "spread", "curve"):
            if expected[name] is None:
                assert row[name] is None, name
            else:
                assert row[name] == pytest.approx(expected[name], rel=1e-12), name


def test_the_registry_s_measures_are_means() -> None:
    # trec_eval's counts are sums and its gm_map a geometric mean; every other measure a mean
    assert summary_variables() == {
        "sum_measures": ["num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"],
        "geometric_mean_measures": ["gm_map", "gm_bpref"],
    }
    assert summary_variables((*TEST_MEASURES,)) == {
        "sum_measures": ["found"],
        "geometric_mean_measures": ["spread", "curve"],
    }


def test_polars_sums_and_takes_geometric_means(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        aggregate,
        "AGGREGATE_OF",
        {**aggregate.AGGREGATE_OF, "found": "sum", "spread": "geometric_mean", "curve": "geometric_mean"},
    )
    check(aggregate.summarize(PER_QUERY.lazy()).collect())


def test_duckdb_sums_and_takes_geometric_means(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(duckdb_engine, "summary_variables", lambda: summary_variables(TEST_MEASURES))
    check(duckdb_engine.summarize(PER_QUERY))


@pytest.mark.spark
def test_spark_sums_and_takes_geometric_means(local_spark: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from pipeline.engines import spark as spark_engine

    monkeypatch.setattr(spark_engine, "summary_variables", lambda: summary_variables(TEST_MEASURES))
    table = local_spark.createDataFrame(PER_QUERY.to_arrow())  # type: ignore[attr-defined]
    summary = pl.from_arrow(spark_engine.summarize(table).orderBy("k").toArrow())
    assert isinstance(summary, pl.DataFrame)
    check(summary)


def test_a_geometric_mean_needs_a_value_at_every_cutoff() -> None:
    with pytest.raises(SpecError, match="geometric mean needs a value at every cutoff"):
        Measure("gm_P", "gm P", "P's geometric mean", aggregate="geometric_mean", whole=False)
    with pytest.raises(SpecError, match="unknown aggregate"):
        Measure("median_P", "median P", "P's median", aggregate="median")  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="unknown counters"):
        Measure("unjudged", "unjudged", "unjudged in the top k", counters=("unjudged_found",))


def test_polars_and_duckdb_add_the_queries_one_by_one_in_id_order() -> None:
    # values of every magnitude, so that the order of the additions shows in the last bits: each
    # engine's mean is the sum in query-id order, added one by one, over the count; DuckDB's window
    # sums gave other bits than Polars' in 186 of all_trec's 627 summary cells at 2M rows
    import random

    generator = random.Random(11)
    ids = [f"q{n:03d}" for n in range(300)]
    generator.shuffle(ids)
    values = {query: generator.random() * 10 ** generator.uniform(-12, 0) for query in ids}
    table = pl.DataFrame(
        {
            "query_id": ids,
            "k": [None] * len(ids),
            "cg": [1.0] * len(ids),
            "dcg": [1.0] * len(ids),
            "idcg": [1.0] * len(ids),
            "ndcg": [values[query] for query in ids],
        },
        schema_overrides={"k": pl.Int64},
    )
    total = 0.0
    for query in sorted(ids):
        total += values[query]
    expected = (total / len(ids)).hex()
    by_polars = aggregate.summarize(table.lazy()).collect()["ndcg"].item()
    by_duckdb = duckdb_engine.summarize(table)["ndcg"].item()
    assert (by_polars.hex(), by_duckdb.hex()) == (expected, expected)
