"""Two engines, one meaning: Polars and DuckDB SQL agree within 1e-9 on every per-query row,
on an edge-case matrix and on seeded random data, under every convention option, and both
agree with the independent reference in tests/helpers/reference.py."""

from __future__ import annotations

import dataclasses
import math
import random
from functools import cache
from math import log2
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import Evaluation, evaluate
from pipeline.aggregate import summarize
from pipeline.engines import duckdb as duckdb_engine
from pipeline.engines import polars as polars_engine
from pipeline.expressions import TIE_BOUNDS_PER_QUERY
from pipeline.registry import COMPANION_MEASURES
from tests.helpers import TOLERANCE, as_table, assert_tables_close, compute, frames, reference
from tests.helpers.batch import Batch, Case, batch_name, summaries_on_duckdb
from tests.helpers.cases import CASES, OPTION_CASES, OPTION_VALUES, random_case, reference_table, run_frame


def assert_tables_match(actual: dict, expected: dict, tolerance: float = TOLERANCE) -> None:
    """Every row and value within tolerance; None matches None and NaN matches NaN."""
    assert set(actual) == set(expected), f"rows differ: {set(actual) ^ set(expected)}"
    for key, values in expected.items():
        for name, got, want in zip(("cg", "dcg", "idcg", "ndcg"), actual[key], values, strict=True):
            if want is None or got is None:
                assert got is None and want is None, f"{name} of {key}: {got} != {want}"
            elif math.isnan(want):
                assert math.isnan(got), f"{name} of {key}: {got} != NaN"
            else:
                assert got == pytest.approx(want, abs=tolerance), f"{name} of {key}: {got} != {want}"


def assert_engines_and_reference_agree(
    run_rows: list[tuple],
    qrels_rows: list[tuple],
    evaluation: Evaluation,
    id_type: type = pl.String,
    sides: EngineSides | None = None,
    name: str = "",
) -> None:
    """``sides``: DuckDB's table for these inputs, the Polars engine's and sql/summary.sql's
    summary of it, where a batch computed them as case ``name`` (else here)."""
    run, (_, qrels) = run_frame(run_rows, id_type), frames([], qrels_rows, id_type)
    by_polars = compute("polars", run, qrels, evaluation) if sides is None else sides.polars(name)
    by_sql = compute("duckdb", run, qrels, evaluation) if sides is None else sides.duckdb(name)
    assert_tables_match(as_table(by_sql), as_table(by_polars))
    # the plan `evaluate` runs: given the distinct query ids, text ids are hashed while it runs
    by_hashed_ids = polars_engine.per_query(run, qrels, evaluation, **distinct_query_ids(run, qrels)).collect()
    assert_frame_equal(by_hashed_ids, by_polars, rel_tol=0, abs_tol=TOLERANCE)
    expected = reference_table(run_rows, qrels_rows, evaluation)
    assert_tables_match(as_table(by_polars), expected)
    # the summaries too: the Polars aggregate, sql/summary.sql and the reference's means
    polars_summary = summarize(by_polars.lazy()).collect()
    if sides is None:
        (sql_summary,) = summaries_on_duckdb({name: for_summary_sql(by_polars)}).values()
    else:
        sql_summary = sides.sql_summary(name)
    for summary in (polars_summary, sql_summary):
        got = {
            row["k"]: (row["queries"], row["cg"], row["dcg"], row["idcg"], row["ndcg"]) for row in summary.to_dicts()
        }
        want = reference.summary(expected)
        assert set(got) == set(want)
        for k, (queries, *means) in want.items():
            assert got[k][0] == queries
            assert_tables_match({k: tuple(got[k][1:])}, {k: tuple(means)})


def for_summary_sql(by_polars: pl.DataFrame) -> pl.DataFrame:
    """sql/summary.sql reads per_query.sql's columns, whose tie bounds (and companion measures)
    are null when off."""
    missing = [c for c in (*TIE_BOUNDS_PER_QUERY, *COMPANION_MEASURES) if c not in by_polars.columns]
    return by_polars.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in missing)


class EngineSides:
    """What each case of a matrix is checked against, in few engine calls: each engine's
    per-query table from one evaluation per convention set (tests/helpers/batch.py), and
    sql/summary.sql's summary of the Polars table from one summary of all the cases' tables,
    each case under cutoff keys of its own (``summaries_on_duckdb``). An evaluation or a summary
    of a few rows costs its planning, not its rows (DuckDB's summary alone was 85 ms a case).
    Each case is still evaluated alone once, on Polars with hashed query ids, which the
    batched tables must equal, as must the reference's table of the case alone."""

    def __init__(self, cases: dict[str, tuple[list[tuple], list[tuple], Evaluation, type]]) -> None:
        batched = {
            name: Case(*inputs(run_rows, qrels_rows, id_type), evaluation)
            for name, (run_rows, qrels_rows, evaluation, id_type) in cases.items()
        }
        self._on_duckdb = Batch(batched, lambda *case: compute("duckdb", *case))
        self._on_polars = Batch(batched, lambda *case: compute("polars", *case))
        self._summaries: dict[str, pl.DataFrame] | None = None

    def duckdb(self, name: str) -> pl.DataFrame:
        return self._on_duckdb[name]

    def polars(self, name: str) -> pl.DataFrame:
        return self._on_polars[name]

    def sql_summary(self, name: str) -> pl.DataFrame:
        if self._summaries is None:
            self._summaries = summaries_on_duckdb(
                {case: for_summary_sql(self._on_polars[case]) for case in self._on_polars.names}
            )
        return self._summaries[name]


def inputs(run_rows: list[tuple], qrels_rows: list[tuple], id_type: type) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    return run_frame(run_rows, id_type), frames([], qrels_rows, id_type)[1]


def distinct_query_ids(run: pl.LazyFrame, qrels: pl.LazyFrame) -> dict[str, pl.DataFrame]:
    """What validation hands the Polars engine: each input's distinct query ids."""
    return {
        "run_queries": run.select("query_id").unique().collect(),
        "judged_queries": qrels.select("query_id").unique().collect(),
    }


def test_query_ids_that_hash_alike_are_not_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two text ids with one hash would merge two queries' rankings; the engine then keeps
    the ids themselves. Here every id hashes alike."""
    run_rows = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "a", 1.0), ("q2", "b", 2.0)]
    qrels_rows = [("q1", "a", 1), ("q2", "a", 1)]
    run, qrels = frames(run_rows, qrels_rows)
    ids = distinct_query_ids(run, qrels)
    assert polars_engine._hashed_query_ids(**ids) is not None
    monkeypatch.setattr(polars_engine, "QUERY_HASH", pl.lit(0, dtype=pl.UInt64).alias("query_id"))
    assert polars_engine._hashed_query_ids(**ids) is None
    evaluation = Evaluation(cutoffs=(1,))
    table = as_table(polars_engine.per_query(run, qrels, evaluation, **ids).collect())
    # q1 ranks a first (ndcg@1 = 1); q2 ranks b first (ndcg@1 = 0)
    assert table[("q1", 1)][3] == pytest.approx(1.0, abs=TOLERANCE)
    assert table[("q2", 1)][3] == pytest.approx(0.0, abs=TOLERANCE)
    assert_tables_match(table, reference_table(run_rows, qrels_rows, evaluation))


def test_duckdb_hashes_text_query_ids_only_where_none_hash_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The DuckDB engine gives its statement each text query id's hash in its place and the ids
    back after; where two ids hash alike (here every id, by a hash of one value) it keeps the
    ids. Both give the reference's numbers, the rows in the ids' order, and the same bits."""
    run_rows = [("q1", "a", 2.0), ("q1", "b", 1.0), ("q2", "a", 1.0), ("q2", "b", 2.0), ("q10", "c", 1.0)]
    qrels_rows = [("q1", "a", 1), ("q2", "a", 1), ("q10", "c", 2), ("q3", "d", 1)]
    run, qrels = frames(run_rows, qrels_rows)
    evaluation = Evaluation(cutoffs=(1, 2), measures=("ndcg", "P", "map", "bpref", "rbp"), all_queries=True)
    hashed: list[bool] = []
    hash_query_ids = duckdb_engine.hash_query_ids

    def recorded(*args: object) -> bool:
        hashed.append(hash_query_ids(*args))  # type: ignore[arg-type]
        return hashed[-1]

    monkeypatch.setattr(duckdb_engine, "hash_query_ids", recorded)
    tables = {}
    for name, hash_expression in (("hashed", duckdb_engine.HASH), ("one hash", "hash('q')")):
        monkeypatch.setattr(duckdb_engine, "HASH", hash_expression)
        tables[name] = evaluate(run, qrels, evaluation=evaluation, engine="duckdb").per_query
    assert hashed == [True, False]
    assert tables["hashed"]["query_id"].to_list() == sorted(tables["hashed"]["query_id"].to_list())
    assert_frame_equal(tables["hashed"], tables["one hash"])
    ndcg_only = Evaluation(cutoffs=(1, 2), all_queries=True)
    expected = reference_table(run_rows, qrels_rows, ndcg_only)
    assert_tables_match(as_table(tables["hashed"].select("query_id", "k", "cg", "dcg", "idcg", "ndcg")), expected)


@cache
def edge_cases() -> EngineSides:
    return EngineSides(
        {
            batch_name(case): (run_rows, qrels_rows, Evaluation(**options), id_type)
            for case, (run_rows, qrels_rows, options, id_type) in CASES.items()
        }
    )


@pytest.mark.parametrize("case", list(CASES))
def test_edge_case_matrix(case: str) -> None:
    run_rows, qrels_rows, options, id_type = CASES[case]
    evaluation = Evaluation(**options)
    assert_engines_and_reference_agree(run_rows, qrels_rows, evaluation, id_type, edge_cases(), batch_name(case))


def _option_matrix() -> list:
    params = []
    for case, (run_rows, _, options, _) in {**CASES, **OPTION_CASES}.items():
        has_duplicates = len({(row[0], row[1]) for row in run_rows}) < len(run_rows)
        for group, choices in OPTION_VALUES.items():
            for choice in choices:
                if has_duplicates and "duplicates" not in choice:
                    continue  # refused by validation, which these engine-level tests bypass
                label = ",".join(f"{name}={value}" for name, value in choice.items())
                params.append(pytest.param(case, {**options, **choice}, id=f"{case}-{group}-{label}"))
    return params


@cache
def option_matrix() -> EngineSides:
    """The matrix's cases by their pytest ids: DuckDB's side with the cases that share their
    conventions in one evaluation (tests/helpers/batch.py), the summaries in one."""
    cases = {}
    for param in _option_matrix():
        case, options = param.values
        run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
        cases[batch_name(param.id)] = (run_rows, qrels_rows, Evaluation(**options), id_type)
    return EngineSides(cases)


@pytest.mark.parametrize(("case", "options"), _option_matrix())
def test_edge_case_matrix_under_each_option(case: str, options: dict, request: pytest.FixtureRequest) -> None:
    run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
    name = batch_name(request.node.callspec.id)
    assert_engines_and_reference_agree(run_rows, qrels_rows, Evaluation(**options), id_type, option_matrix(), name)


def test_ties_are_broken_by_doc_id_descending() -> None:
    # a, b, c tie at 1.0: order c, b, a; gains 1 (c), 0 (b), 2 (a) by rank
    run_rows, qrels_rows, _, _ = CASES["ties across the cutoff"]
    run, qrels = frames(run_rows, qrels_rows)
    for engine in ("polars", "duckdb"):
        table = as_table(compute(engine, run, qrels, Evaluation(cutoffs=(1, 2, 3))))
        assert table[("q", 1)][1] == pytest.approx(1 / 1)
        assert table[("q", 3)][1] == pytest.approx(1 / 1 + 0 + 2 / 2)


def test_integer_ids_tie_break_as_strings() -> None:
    run_rows, qrels_rows, _, id_type = CASES["integer ids tie-break in string order"]
    run, qrels = frames(run_rows, qrels_rows, id_type)
    for engine in ("polars", "duckdb"):
        table = compute(engine, run, qrels, Evaluation(cutoffs=(1, 2)))
        assert table.schema["query_id"] == pl.Int64  # ids keep their type
        # string order descending: "9" > "100" > "10": rank 1 is doc 9 (unjudged), rank 2 doc 100 (label 2)
        assert as_table(table)[(1, 2)][1] == pytest.approx(0 / log2(2) + 2 / log2(3))


@cache
def random_cases(first_seed: int, count: int, *, conventions: bool = False) -> EngineSides:
    return EngineSides(
        {
            str(seed): (*random_case(seed, conventions=conventions), pl.String)
            for seed in range(first_seed, first_seed + count)
        }
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_data(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(seed)
    assert_engines_and_reference_agree(run_rows, qrels_rows, evaluation, pl.String, random_cases(0, 40), str(seed))


@pytest.mark.parametrize("seed", range(60))
def test_random_data_random_conventions(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(1000 + seed, conventions=True)
    sides = random_cases(1000, 60, conventions=True)
    assert_engines_and_reference_agree(run_rows, qrels_rows, evaluation, pl.String, sides, str(1000 + seed))


def copy_of(name: str, rows: list[tuple]) -> list[tuple]:
    """The rows with each query id prefixed ``name/``: a copy of the input beside another."""
    return [(f"{name}/{query}", *rest) for query, *rest in rows]


def own_rows(name: str, table: dict) -> dict:
    """The rows of the copy ``name`` of a table, under their own query ids."""
    prefix = f"{name}/"
    return {(query.removeprefix(prefix), k): row for (query, k), row in table.items() if query.startswith(prefix)}


@pytest.mark.parametrize("seed", range(5))
def test_shuffling_rows_changes_nothing(seed: int) -> None:
    """The input as drawn and shuffled in one evaluation per engine, each a copy of its own
    (query ids prefixed), the shuffled copy's rows in their shuffled order after the drawn ones:
    every number of a query is its rows' alone, so the copies must score alike."""
    run_rows, qrels_rows, evaluation = random_case(100 + seed)
    shuffled_run = random.Random(seed).sample(run_rows, len(run_rows))
    shuffled_qrels = random.Random(seed).sample(qrels_rows, len(qrels_rows))
    both = frames(
        copy_of("drawn", run_rows) + copy_of("shuffled", shuffled_run),
        copy_of("drawn", qrels_rows) + copy_of("shuffled", shuffled_qrels),
    )
    for engine in ("polars", "duckdb"):
        table = as_table(compute(engine, *both, evaluation))
        drawn = own_rows("drawn", table)
        assert drawn and len(drawn) * 2 == len(table)
        assert_tables_close(own_rows("shuffled", table), drawn)


@pytest.mark.parametrize("seed", range(5))
def test_an_ideal_run_scores_one(seed: int) -> None:
    rng = random.Random(seed)
    qrels_rows = [("q", f"d{i}", rng.randint(1, 4)) for i in range(rng.randint(1, 30))]
    run_rows = [(q, d, float(label) + rng.random() / 10) for q, d, label in qrels_rows]  # ranked by label
    run, qrels = frames(run_rows, qrels_rows)
    for engine in ("polars", "duckdb"):
        for row in compute(engine, run, qrels, Evaluation(cutoffs=(1, 3, 10))).iter_rows(named=True):
            assert row["ndcg"] == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize(
    "options",
    [
        {"duplicates": "first"},
        {"duplicates": "max-score"},
        {"duplicates": "first", "ties": "input-order"},
        {"duplicates": "max-score", "ties": "input-order", "unjudged": "drop", "max_results": 20},
        {"duplicates": "first", "ties": "average"},
    ],
)
def test_input_order_over_files_and_streaming_batches(tmp_path: Path, options: dict) -> None:
    """The conventions that read the input order (input-order ties, the duplicate policies)
    on a run of three Parquet files, large enough for Polars' streaming engine to work through
    each in many batches: the order in which the Polars engine numbers the rows as they stream
    against DuckDB's own reading of the files (file index, then row number within the file)."""
    rng = np.random.default_rng(7)

    def with_text_ids(queries: np.ndarray, docs: np.ndarray, **values: np.ndarray) -> pl.DataFrame:
        return pl.DataFrame({"query_id": queries, "doc_id": docs, **values}).with_columns(
            pl.format("q{}", "query_id").alias("query_id"), pl.format("d{}", "doc_id").alias("doc_id")
        )

    for part in range(3):
        rows = 100_000
        with_text_ids(
            rng.integers(0, 2_000, rows),
            rng.integers(0, 60, rows),  # about 2.7 copies of each (query, doc) over the files
            score=rng.integers(0, 5, rows).astype(float),  # five scores: long tie groups
        ).write_parquet(tmp_path / f"run-{part}.parquet")
    with_text_ids(
        rng.integers(0, 2_000, 60_000), rng.integers(0, 60, 60_000), relevance=rng.integers(-1, 4, 60_000)
    ).unique(["query_id", "doc_id"], keep="first", maintain_order=True).write_parquet(tmp_path / "qrels.parquet")
    evaluation = Evaluation(cutoffs=(1, 5, 10, 20), **options)

    by_polars = evaluate(str(tmp_path / "run-*.parquet"), str(tmp_path / "qrels.parquet"), evaluation=evaluation)
    connection = duckdb_engine.connect()
    try:
        duckdb_engine.read_parquet_inputs(
            connection,
            sorted(str(path) for path in tmp_path.glob("run-*.parquet")),
            [str(tmp_path / "qrels.parquet")],
            {"query_col": "query_id", "doc_col": "doc_id", "score_col": "score", "label_col": "relevance"},
        )
        by_sql = duckdb_engine.per_query_table(connection, evaluation)
    finally:
        connection.close()
    assert by_polars.per_query.height == 2_000 * 5
    assert_tables_match(as_table(by_polars.per_query), as_table(by_sql))


def test_duckdb_evaluate_twice_in_one_connection() -> None:
    """`duckdb_engine.evaluate` leaves its connection fit for another evaluation: the
    per-query frame its summary read is not left registered as a view named per_query, which
    the next run's `create or replace temp table per_query` could not replace."""
    run, qrels = frames([("q", "a", 2.0), ("q", "b", 1.0), ("r", "a", 1.0)], [("q", "b", 1), ("r", "a", 2)])
    connection = duckdb_engine.connect()
    try:
        duckdb_engine.register_inputs(connection, run, qrels)
        first = duckdb_engine.evaluate(connection, Evaluation(cutoffs=(1,)))
        second = duckdb_engine.evaluate(connection, Evaluation(cutoffs=(1,), measures=("ndcg", "P")))
    finally:
        connection.close()
    assert_frame_equal(second[0].drop("P"), first[0])
    assert second[1]["P"].to_list() == [None, pytest.approx(0.5)]  # the whole ranking has no P


@pytest.mark.parametrize("seed", range(12))
def test_every_trec_eval_measure_agrees_on_random_data(seed: int) -> None:
    """``--measures all_trec`` (every family, infAP, G, Rndcg, RBP ... among them) under random
    conventions: DuckDB's per-query table and summary equal Polars' to 1e-9, nulls in the same
    places (a measure of the whole ranking only is null at every cutoff on both)."""
    run_rows, qrels_rows, evaluation = random_case(2000 + seed, conventions=True)
    evaluation = dataclasses.replace(evaluation, measures=("all_trec",))
    run, (_, qrels) = run_frame(run_rows), frames([], qrels_rows)
    # one evaluation per engine gives both tables (the engine's per-query table and its summary)
    by_polars, by_sql = (evaluate(run, qrels, evaluation=evaluation, engine=engine) for engine in ("polars", "duckdb"))
    polars_table = by_polars.per_query.sort("query_id", "k", nulls_last=False)
    sql_table = by_sql.per_query.sort("query_id", "k", nulls_last=False)
    assert (
        sql_table.columns == polars_table.columns and "infap" in polars_table.columns and "rbp" in polars_table.columns
    )
    assert_frame_equal(sql_table, polars_table, check_dtypes=False, rel_tol=0, abs_tol=TOLERANCE)
    summaries = [result.summary.sort("k", nulls_last=False) for result in (by_polars, by_sql)]
    assert_frame_equal(summaries[1], summaries[0], check_dtypes=False, rel_tol=0, abs_tol=TOLERANCE)
