"""The Python API takes what users hold: an int or a list for ``k``, Polars, pandas and DuckDB
frames and pyarrow tables with their own column names, and names the argument it refuses."""

from __future__ import annotations

from math import log2

import duckdb
import polars as pl
import pytest

from pipeline import evaluate, per_query
from pipeline.errors import InvalidInput, UsageError
from pipeline.io.read import Columns

# query a: x (score 2, label 0) then y (score 1, label 1); query b: x (label 1) alone
RUN = pl.DataFrame({"q": ["a", "a", "b"], "d": ["x", "y", "x"], "s": [2.0, 1.0, 1.0]})
QRELS = pl.DataFrame({"q": ["a", "a", "b"], "d": ["x", "y", "x"], "rel": [0, 1, 1]})
COLUMNS = Columns(query="q", doc="d", score="s", label="rel")
NDCG_A_WHOLE = (1 / log2(3)) / (1 / log2(2))  # the relevant document at rank 2 of an ideal with it at rank 1
EXPECTED = {None: (NDCG_A_WHOLE + 1.0) / 2, 1: (0.0 + 1.0) / 2}


def as_pandas(frame: pl.DataFrame) -> object:
    pytest.importorskip("pandas")
    return frame.to_pandas()


CONVERSIONS = {
    "polars": lambda frame: frame,
    "polars-lazy": lambda frame: frame.lazy(),
    "pyarrow": lambda frame: frame.to_arrow(),
    "pandas": as_pandas,
    "duckdb": lambda frame: duckdb.sql("select * from frame"),
}


def assert_expected(result: object) -> None:
    summary, per_query_table = result.summary, result.per_query  # type: ignore[attr-defined]
    means = dict(zip(summary["k"].to_list(), summary["ndcg"].to_list(), strict=True))
    assert means == pytest.approx(EXPECTED, abs=1e-12)
    assert per_query_table["query_id"].dtype == pl.String


@pytest.mark.local_engines("the front makes every kind a Polars frame for every engine (as_polars): Spark's case below")
@pytest.mark.parametrize("kind", list(CONVERSIONS))
def test_frames_of_every_kind_with_their_own_column_names(kind: str, engine: str) -> None:
    convert = CONVERSIONS[kind]
    assert_expected(evaluate(convert(RUN), convert(QRELS), k=1, columns=COLUMNS, engine=engine))  # type: ignore[arg-type]


def test_spark_takes_the_polars_frame_every_kind_becomes(local_spark: object) -> None:
    """On Spark, a frame of another kind is the Polars frame the front makes of it (the test
    above), handed to Spark through Arrow and renamed there."""
    assert_expected(evaluate(RUN.lazy(), QRELS, k=1, columns=COLUMNS, engine="spark"))


def test_k_as_an_int_a_list_or_text_gives_the_same_table() -> None:
    tables = [
        per_query(RUN, QRELS, k=k, columns=COLUMNS).collect().sort("query_id", "k")  # type: ignore[arg-type]
        for k in (1, [1], (1,), "1")
    ]
    for table in tables[1:]:
        assert table.equals(tables[0])


def test_columns_rename_a_frame_as_they_rename_a_file(tmp_path: object) -> None:
    from pathlib import Path

    folder = Path(str(tmp_path))
    RUN.write_parquet(folder / "run.parquet")
    QRELS.write_parquet(folder / "qrels.parquet")
    from_files = evaluate(folder / "run.parquet", folder / "qrels.parquet", k=[1], columns=COLUMNS)
    from_frames = evaluate(RUN, QRELS, k=[1], columns=COLUMNS)
    assert from_frames.per_query.sort("query_id", "k").equals(from_files.per_query.sort("query_id", "k"))


def test_a_frame_without_the_named_column_names_it() -> None:
    with pytest.raises(InvalidInput, match=r"run frame: missing column\(s\) 'score'; columns found: 'q', 'd', 's'"):
        evaluate(RUN, QRELS, k=1, columns=Columns(query="q", doc="d", label="rel"))


def test_a_canonical_column_does_not_shadow_the_renamed_one() -> None:
    run = RUN.with_columns(score=pl.lit(-5.0))  # a stray column called score; the user's is "s"
    result = evaluate(run, QRELS, k=1, columns=COLUMNS)
    means = dict(zip(result.summary["k"].to_list(), result.summary["ndcg"].to_list(), strict=True))
    assert means == pytest.approx(EXPECTED, abs=1e-12)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: evaluate(RUN, QRELS, columns=COLUMNS, gian="linear"), r"evaluate\(\) got unknown option\(s\) 'gian'"),
        (lambda: per_query(RUN, QRELS, columns=COLUMNS, cutoff=3), r"per_query\(\) got unknown option\(s\) 'cutoff'"),
        (lambda: evaluate(42, QRELS, columns=COLUMNS), r"run: expected a path, a Polars, pandas or DuckDB frame"),
        (lambda: evaluate(RUN, [1, 2], columns=COLUMNS), r"qrels: expected a path"),
        (lambda: evaluate(RUN, QRELS, columns=COLUMNS, k=0), r"cutoff k must be a positive integer, got 0"),
        (lambda: evaluate(RUN, QRELS, columns=COLUMNS, k=2.5), r"k must be an integer, a list of integers"),
        (lambda: evaluate(RUN, QRELS, columns=COLUMNS, engine="spork"), r"unknown engine 'spork'"),
    ],
)
def test_refusals_name_the_users_argument(call: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        call()  # type: ignore[operator]


def test_per_query_on_duckdb_runs_no_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """``per_query`` asks for the table alone: no engine sums it (on DuckDB the summary of a
    small evaluation cost as much again as the table)."""
    from pipeline.engines import duckdb as duckdb_engine

    def summary_asked_for(*args: object, **kwargs: object) -> None:
        raise AssertionError("per_query summarised the table")

    monkeypatch.setattr(duckdb_engine, "summarize", summary_asked_for)
    table = per_query(RUN, QRELS, k=1, columns=COLUMNS, engine="duckdb").collect().sort("query_id", "k")
    by_k = {k: table.filter(pl.col("k").eq_missing(k))["ndcg"].to_list() for k in EXPECTED}
    assert {k: sum(values) / len(values) for k, values in by_k.items()} == pytest.approx(EXPECTED, abs=1e-12)
