"""Two engines, one meaning: Polars and DuckDB SQL agree within 1e-9 on every per-query row,
on an edge-case matrix and on seeded random data, under every convention option, and both
agree with the independent reference in tests/reference.py."""

from __future__ import annotations

import math
import random
from math import log2
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import Discount, Evaluation, Gain, evaluate
from pipeline.aggregate import summarize
from pipeline.engines import duckdb as duckdb_engine
from pipeline.engines import polars as polars_engine
from pipeline.expressions import TIE_BOUNDS_PER_QUERY
from pipeline.spec import COMPANION_MEASURES
from tests import reference
from tests.conftest import TOLERANCE, as_table, assert_tables_close, compute, frames

# name: (run rows (query, doc, score), qrels rows (query, doc, label), evaluation options, id type)
CASES: dict[str, tuple[list[tuple], list[tuple], dict, type]] = {
    "ties across the cutoff": (
        [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0), ("q", "d", 0.5)],
        [("q", "a", 2), ("q", "c", 1), ("q", "d", 3)],
        {"cutoffs": (1, 2, 3)},
        pl.String,
    ),
    "all scores tied": (
        [("q", f"d{i}", 0.0) for i in range(6)],
        [("q", "d1", 1), ("q", "d4", 2)],
        {"cutoffs": (2, 5)},
        pl.String,
    ),
    "k larger than the list": (
        [("q", "a", 3.0), ("q", "b", 2.0)],
        [("q", "a", 1), ("q", "b", 2), ("q", "z", 3)],
        {"cutoffs": (10, 1000)},
        pl.String,
    ),
    "no relevant documents": (
        [("q", "a", 3.0), ("q", "b", 2.0), ("r", "a", 1.0)],
        [("q", "a", 0), ("q", "b", 0), ("r", "a", 1)],
        {"cutoffs": (1, 5)},
        pl.String,
    ),
    "negative labels": (
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        [("q", "a", -1), ("q", "b", 2), ("q", "c", -2), ("q", "d", 1)],
        {"cutoffs": (1, 2, 3)},
        pl.String,
    ),
    "query only in run": (
        [("q", "a", 1.0), ("orphan", "a", 1.0)],
        [("q", "a", 1)],
        {"cutoffs": (1,)},
        pl.String,
    ),
    "query only in qrels": (
        [("q", "a", 1.0)],
        [("q", "a", 1), ("missing", "x", 2)],
        {"cutoffs": (1, 3)},
        pl.String,
    ),
    "query only in qrels, all queries": (
        [("q", "a", 1.0)],
        [("q", "a", 1), ("missing", "x", 2)],
        {"cutoffs": (1, 3), "all_queries": True},
        pl.String,
    ),
    "unicode ids": (
        [("запрос", "文書-2", 1.0), ("запрос", "文書-1", 1.0), ("запрос", "é", 0.5), ("🔎", "ß", 1.0)],
        [("запрос", "文書-1", 2), ("запрос", "é", 1), ("🔎", "ß", 1), ("🔎", "ü", 3)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "integer ids tie-break in string order": (
        # doc 9 sorts above 10 as strings ("9" > "10"), though not as numbers
        [(1, 9, 1.0), (1, 10, 1.0), (1, 100, 1.0), (2, 5, 2.0)],
        [(1, 10, 1), (1, 100, 2), (2, 5, 1)],
        {"cutoffs": (1, 2)},
        pl.Int64,
    ),
    "gain map with an unmapped level and a mapped zero": (
        [("q", "a", 5.0), ("q", "b", 4.0), ("q", "c", 3.0), ("q", "d", 2.0), ("q", "e", 1.0)],
        [("q", "a", 0), ("q", "b", 3), ("q", "c", 1), ("q", "d", 4), ("q", "e", -1), ("q", "f", 2)],
        {"cutoffs": (2, 4), "gain": Gain.parse("0=0.5,1=3,2=9,4=4.5,-1=100")},
        pl.String,
    ),
    "gain map with a negative gain": (
        [("q", "a", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "b", 2)],
        {"cutoffs": (1,), "gain": Gain.parse("1=-2")},
        pl.String,
    ),
    "exponential gain, jk discount base 3": (
        [("q", f"d{i}", float(10 - i)) for i in range(8)],
        [("q", f"d{i}", i % 4) for i in range(8)],
        {"cutoffs": (3, 5), "gain": Gain("exponential"), "discount": Discount("jk", 3.0)},
        pl.String,
    ),
    "max results keeps the best, not the first rows": (
        [("q", "low", 0.1), ("q", "mid", 0.5), ("q", "top", 0.9)],
        [("q", "low", 3), ("q", "top", 1)],
        {"cutoffs": (1, 5), "max_results": 2},
        pl.String,
    ),
    "fractional labels": (
        [("q", "a", 0.3), ("q", "b", 0.2), ("q", "c", 0.1)],
        [("q", "a", 0.5), ("q", "b", 0.9), ("q", "c", 0.3)],
        {"cutoffs": (2,)},
        pl.String,
    ),
}

# The same edge cases again under each convention option, plus cases aimed at one option.
OPTION_VALUES: dict[str, list[dict]] = {
    "ties": [{"ties": "input-order"}, {"ties": "average"}],
    "ideal": [{"ideal": "retrieved"}, {"ideal": "judged-cut-at-hits"}],
    "empty_ideal": [{"empty_ideal": "one"}, {"empty_ideal": "skip"}, {"empty_ideal": "nan"}],
    "unjudged": [{"unjudged": "drop"}],
    "duplicates": [{"duplicates": "first"}, {"duplicates": "max-score"}],
    "relevance": [{"gain": Gain("binary")}, {"gain": Gain("binary"), "relevance_threshold": 2}],
}
OPTION_CASES: dict[str, tuple[list[tuple], list[tuple], dict, type]] = {
    "a tied group straddles the cutoff": (
        [("q", "a", 2.0), ("q", "b", 1.0), ("q", "c", 1.0), ("q", "d", 1.0), ("q", "e", 0.5)],
        [("q", "a", 1), ("q", "b", 3), ("q", "c", 0), ("q", "d", 2), ("q", "e", 1)],
        {"cutoffs": (1, 2, 3, 10)},
        pl.String,
    ),
    "an input rank column, partly missing": (
        [("q", "a", 1.0, 3), ("q", "b", 1.0, 1), ("q", "c", 5.0, None), ("q", "d", 0.5, 2), ("r", "x", 1.0, None)],
        [("q", "a", 2), ("q", "c", 3), ("q", "d", 1), ("r", "x", 1)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "duplicates in the run": (
        [("q", "a", 0.2), ("q", "b", 0.5), ("q", "a", 0.9), ("q", "c", 0.5), ("q", "a", 0.9), ("q", "c", 0.1)],
        [("q", "a", 1), ("q", "b", 2), ("q", "c", 3)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "only unjudged documents retrieved": (
        [("q", "x", 2.0), ("q", "y", 1.0), ("r", "a", 1.0), ("r", "z", 3.0)],
        [("q", "a", 1), ("r", "a", 2)],
        {"cutoffs": (1, 3)},
        pl.String,
    ),
    "fewer hits than relevant documents": (
        [("q", "a", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "c", 3), ("q", "d", 2), ("q", "e", 2)],
        {"cutoffs": (1, 3, 5)},
        pl.String,
    ),
}


def reference_options(evaluation: Evaluation) -> dict:
    """The spec as the keyword arguments of tests/reference.py."""
    return {
        "gain_kind": evaluation.gain.kind,
        "levels": dict(evaluation.gain.levels),
        "discount_kind": evaluation.discount.kind,
        "base": evaluation.discount.log_base,
        "all_queries": evaluation.all_queries,
        "max_results": evaluation.max_results,
        "ties": evaluation.ties,
        "ideal": evaluation.ideal,
        "empty_ideal": evaluation.empty_ideal,
        "unjudged": evaluation.unjudged,
        "duplicates": evaluation.duplicates,
        "relevance_threshold": evaluation.relevance_threshold,
    }


def reference_table(run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation) -> dict:
    return reference.ndcg_table(run_rows, qrels_rows, list(evaluation.cutoffs), **reference_options(evaluation))


def run_frame(run_rows: list[tuple], id_type: type = pl.String) -> pl.LazyFrame:
    """The run in row order (its arrival), with a ``rank`` column when the rows carry one."""
    schema: dict = {"query_id": id_type, "doc_id": id_type, "score": pl.Float64}
    if any(len(row) > 3 for row in run_rows):
        schema["rank"] = pl.Int64
        run_rows = [(*row[:3], row[3] if len(row) > 3 else None) for row in run_rows]
    return pl.LazyFrame(run_rows, schema=schema, orient="row")


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
    run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation, id_type: type = pl.String
) -> None:
    run, (_, qrels) = run_frame(run_rows, id_type), frames([], qrels_rows, id_type)
    by_polars = compute("polars", run, qrels, evaluation)
    by_sql = compute("duckdb", run, qrels, evaluation)
    assert_tables_match(as_table(by_sql), as_table(by_polars))
    # the plan `evaluate` runs: given the distinct query ids, text ids are hashed while it runs
    by_hashed_ids = polars_engine.per_query(run, qrels, evaluation, **distinct_query_ids(run, qrels)).collect()
    assert_frame_equal(by_hashed_ids, by_polars, rel_tol=0, abs_tol=TOLERANCE)
    expected = reference_table(run_rows, qrels_rows, evaluation)
    assert_tables_match(as_table(by_polars), expected)
    # the summaries too: the Polars aggregate, sql/summary.sql and the reference's means
    polars_summary = summarize(by_polars.lazy()).collect()
    connection = duckdb_engine.connect()
    try:
        # sql/summary.sql reads per_query.sql's columns, whose tie bounds (and companion
        # measures) are null when off
        missing = [c for c in (*TIE_BOUNDS_PER_QUERY, *COMPANION_MEASURES) if c not in by_polars.columns]
        connection.register(
            "per_query", by_polars.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in missing)
        )
        connection.execute(duckdb_engine.sql_file("summary.sql"))
        sql_summary = connection.table("summary").pl()
    finally:
        connection.close()
    for summary in (polars_summary, sql_summary):
        got = {
            row["k"]: (row["queries"], row["cg"], row["dcg"], row["idcg"], row["ndcg"]) for row in summary.to_dicts()
        }
        want = reference.summary(expected)
        assert set(got) == set(want)
        for k, (queries, *means) in want.items():
            assert got[k][0] == queries
            assert_tables_match({k: tuple(got[k][1:])}, {k: tuple(means)})


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


@pytest.mark.parametrize("case", list(CASES))
def test_edge_case_matrix(case: str) -> None:
    run_rows, qrels_rows, options, id_type = CASES[case]
    assert_engines_and_reference_agree(run_rows, qrels_rows, Evaluation(**options), id_type)


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


@pytest.mark.parametrize(("case", "options"), _option_matrix())
def test_edge_case_matrix_under_each_option(case: str, options: dict) -> None:
    run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
    assert_engines_and_reference_agree(run_rows, qrels_rows, Evaluation(**options), id_type)


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


def random_case(seed: int, *, conventions: bool = False) -> tuple[list[tuple], list[tuple], Evaluation]:
    """Random run and qrels; with ``conventions``, random convention options too, with
    duplicate rows when the duplicate policy allows them and a rank column at times."""
    rng = random.Random(seed)
    options: dict = {}
    if conventions:
        options = {name: rng.choice(values) for name, values in CONVENTION_VALUES.items()}
        if options["gain"] == "binary":
            options["gain"] = Gain("binary")
        else:
            options.pop("gain")
    with_duplicates = options.get("duplicates", "error") != "error"
    with_rank = conventions and rng.random() < 0.3
    run_rows, qrels_rows = [], []
    for q in range(rng.randint(1, 25)):
        docs = [f"d{d}" for d in range(rng.randint(1, 40))]
        retrieved = rng.sample(docs, rng.randint(1, len(docs)))
        if with_duplicates:
            retrieved += rng.choices(retrieved, k=rng.randint(0, 3))
        for doc in retrieved:
            row: tuple = (f"q{q}", doc, float(rng.randint(0, 8)))  # few distinct scores: many ties
            if with_rank:
                row = (*row, rng.choice(range(1, 6)))  # ties and gaps in the rank too (a null is refused)
            run_rows.append(row)
        for doc in docs:
            if rng.random() < 0.5:
                qrels_rows.append((f"q{q}", doc, rng.choice([-1, 0, 0, 1, 2, 3, 4])))
    if not qrels_rows:
        qrels_rows.append(("q0", "d0", 1))
    rng.shuffle(run_rows)
    gain = options.pop("gain", None) or rng.choice(
        [Gain(), Gain("exponential"), Gain.parse("1=3,2=9,4=4.5"), Gain.parse("0=1,3=-1")]
    )
    discount = rng.choice([Discount(), Discount("jk", 2.0), Discount("jk", 2.5)])
    evaluation = Evaluation(
        cutoffs=tuple(sorted(rng.sample([1, 2, 3, 5, 10, 20, 50], rng.randint(1, 4)))),
        gain=gain,
        discount=discount,
        all_queries=rng.random() < 0.5,
        max_results=rng.choice([None, None, 3, 15]),
        **options,
    )
    return run_rows, qrels_rows, evaluation


CONVENTION_VALUES: dict[str, list] = {
    "ties": ["docid-desc", "input-order", "average"],
    "ideal": ["judged", "retrieved", "judged-cut-at-hits"],
    "empty_ideal": ["zero", "one", "skip", "nan"],
    "unjudged": ["zero", "drop"],
    "duplicates": ["error", "first", "max-score"],
    "relevance_threshold": [None, 1, 2, 0.5],
    "gain": ["binary", "other"],
}


@pytest.mark.parametrize("seed", range(40))
def test_random_data(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(seed)
    assert_engines_and_reference_agree(run_rows, qrels_rows, evaluation)


@pytest.mark.parametrize("seed", range(60))
def test_random_data_random_conventions(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(1000 + seed, conventions=True)
    assert_engines_and_reference_agree(run_rows, qrels_rows, evaluation)


@pytest.mark.parametrize("seed", range(5))
def test_shuffling_rows_changes_nothing(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(100 + seed)
    run, qrels = frames(run_rows, qrels_rows)
    shuffled_run, shuffled_qrels = frames(
        random.Random(seed).sample(run_rows, len(run_rows)), random.Random(seed).sample(qrels_rows, len(qrels_rows))
    )
    for engine in ("polars", "duckdb"):
        assert_tables_close(
            as_table(compute(engine, shuffled_run, shuffled_qrels, evaluation)),
            as_table(compute(engine, run, qrels, evaluation)),
        )


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
        by_sql, _ = duckdb_engine.evaluate(connection, evaluation)
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
