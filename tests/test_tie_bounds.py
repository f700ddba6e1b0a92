"""Tie bounds (``--tie-bounds``): the lowest and highest NDCG@k over every order of tied
results, whether ties straddle each cutoff, and how many queries ties can change.

Expectations come from hand arithmetic and from tests/helpers/reference.py's brute force, which
scores every permutation of every tie group; both engines must agree with it within 1e-9.
"""

from __future__ import annotations

import json
import math
import random
from functools import cache
from math import log2
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, Gain
from pipeline.aggregate import summarize
from pipeline.engines import duckdb as duckdb_engine
from pipeline.registry import COMPANION_MEASURES, SpecError
from tests.helpers import TOLERANCE, compute, reference, run_cli
from tests.helpers.batch import Batch, Case, batch_name, batched_by_test_id
from tests.helpers.cases import (
    CASES,
    OPTION_CASES,
    OPTION_VALUES,
    reference_options,
    reference_table,
    run_frame,
)

pytestmark = pytest.mark.filterwarnings("ignore")


def bounds_of(per_query: pl.DataFrame) -> dict[tuple, tuple]:
    return {
        (row["query_id"], row["k"]): (row["ndcg_min"], row["ndcg_max"], row["ties_straddle_k"])
        for row in per_query.iter_rows(named=True)
    }


def qrels_frame(qrels_rows: list[tuple], id_type: type = pl.String) -> pl.LazyFrame:
    return pl.LazyFrame(
        qrels_rows, schema={"query_id": id_type, "doc_id": id_type, "relevance": pl.Float64}, orient="row"
    )


def reference_bounds(run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation) -> dict:
    options = reference_options(evaluation)
    return reference.tie_bounds_table(run_rows, qrels_rows, list(evaluation.cutoffs), **options)


def assert_close(got: float | None, want: float | None, what: str) -> None:
    if want is None or got is None:
        assert got is None and want is None, f"{what}: {got} != {want}"
    elif math.isnan(want):
        assert math.isnan(got), f"{what}: {got} != NaN"
    else:
        assert got == pytest.approx(want, abs=TOLERANCE), f"{what}: {got} != {want}"


def assert_bounds_agree(
    run_rows: list[tuple],
    qrels_rows: list[tuple],
    evaluation: Evaluation,
    id_type: type,
    batched: dict[str, pl.DataFrame] | None = None,
) -> None:
    """``batched``: each engine's table for these inputs, where a batch computed it (else here)."""
    run = run_frame(run_rows, id_type)
    qrels = qrels_frame(qrels_rows, id_type)
    expected = reference_bounds(run_rows, qrels_rows, evaluation)
    scores = reference_table(run_rows, qrels_rows, evaluation)
    for engine in ("polars", "duckdb"):
        table = compute(engine, run, qrels, evaluation) if batched is None else batched[engine]
        got = bounds_of(table)
        assert set(got) == set(expected), f"{engine}: rows differ"
        for key, (low, high, straddles) in expected.items():
            assert_close(got[key][0], low, f"{engine} ndcg_min of {key}")
            assert_close(got[key][1], high, f"{engine} ndcg_max of {key}")
            assert got[key][2] is straddles, f"{engine} ties_straddle_k of {key}: {got[key][2]} != {straddles}"
            # the convention's own ordering lies between the bounds (the average of the orders too)
            score = scores[key][3]
            if score is not None and not math.isnan(score):
                assert low - TOLERANCE <= score <= high + TOLERANCE, f"{engine} {key}: {score} outside bounds"


def _matrix() -> list:
    params = []
    for case, (run_rows, _, options, _) in {**CASES, **OPTION_CASES}.items():
        has_duplicates = len({(row[0], row[1]) for row in run_rows}) < len(run_rows)
        for group, choices in {"default": [{}], **OPTION_VALUES}.items():
            for choice in choices:
                if has_duplicates and "duplicates" not in choice:
                    continue
                try:
                    Evaluation(**{**options, **choice}, tie_bounds=True)
                except SpecError:
                    continue  # refused (see test_refused_where_the_bounds_would_not_be_exact)
                label = ",".join(f"{name}={value}" for name, value in choice.items()) or "defaults"
                params.append(pytest.param(case, {**options, **choice}, id=f"{case}-{group}-{label}"))
    return params


def matrix_case(case: str, options: dict) -> Case:
    run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
    return Case(run_frame(run_rows, id_type), qrels_frame(qrels_rows, id_type), Evaluation(**options, tie_bounds=True))


@cache
def matrix_on(engine: str) -> Batch:
    """An engine's side of the matrix, the cases that share their conventions in one evaluation
    (tests/helpers/batch.py): an evaluation of a few rows costs its planning, not its rows (on
    Polars 0.1 s a case, 40 of the 48 s this file took)."""
    return batched_by_test_id(_matrix(), matrix_case, lambda *case: compute(engine, *case))


@pytest.mark.parametrize(("case", "options"), _matrix())
def test_edge_case_matrix_matches_brute_force(case: str, options: dict, request: pytest.FixtureRequest) -> None:
    run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
    name = batch_name(request.node.callspec.id)
    batched = {engine: matrix_on(engine)[name] for engine in ("polars", "duckdb")}
    assert_bounds_agree(run_rows, qrels_rows, Evaluation(**options, tie_bounds=True), id_type, batched)


def small_random_case(seed: int) -> tuple[list[tuple], list[tuple], Evaluation]:
    """Few results per query (the brute force multiplies the orders of every tie group),
    scores from a tiny set so most results tie, random conventions."""
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    with_rank = rng.random() < 0.3
    for q in range(rng.randint(1, 6)):
        docs = [f"d{d}" for d in range(rng.randint(1, 8))]
        for doc in rng.sample(docs, rng.randint(1, min(6, len(docs)))):
            row: tuple = (f"q{q}", doc, float(rng.randint(0, 2)))
            run_rows.append((*row, rng.choice([None, 1, 2])) if with_rank else row)
        for doc in docs:
            if rng.random() < 0.6:
                qrels_rows.append((f"q{q}", doc, rng.choice([-1, 0, 1, 2, 3])))
    if not qrels_rows:
        qrels_rows.append(("q0", "d0", 1))
    rng.shuffle(run_rows)
    while True:
        options = {
            "cutoffs": tuple(sorted(rng.sample([1, 2, 3, 5, 10], rng.randint(1, 3)))),
            "gain": rng.choice([Gain(), Gain("exponential"), Gain("binary"), Gain.parse("1=3,2=-1")]),
            "ties": rng.choice(["docid-desc", "input-order", "average"]),
            "ideal": rng.choice(["judged", "retrieved", "judged-cut-at-hits"]),
            "empty_ideal": rng.choice(["zero", "one", "skip", "nan"]),
            "unjudged": rng.choice(["zero", "drop"]),
            "all_queries": rng.random() < 0.5,
            "max_results": rng.choice([None, 2, 4]),
        }
        try:
            return run_rows, qrels_rows, Evaluation(**options, tie_bounds=True)
        except SpecError:
            continue  # a refused combination (see test_refused_where_the_bounds_would_not_be_exact)


@pytest.mark.parametrize("seed", range(30))
def test_random_cases_match_brute_force(seed: int) -> None:
    run_rows, qrels_rows, evaluation = small_random_case(seed)
    assert_bounds_agree(run_rows, qrels_rows, evaluation, pl.String)


def test_hand_arithmetic() -> None:
    # a, b, c tie at 1.0 with gains 2, 0, 1; d follows with gain 3. Ideal: 3, 2, 1.
    run_rows, qrels_rows, _, id_type = CASES["ties across the cutoff"]
    run = run_frame(run_rows, id_type)
    qrels = qrels_frame(qrels_rows)
    idcg_2 = 3 + 2 / log2(3)
    idcg_3 = 3 + 2 / log2(3) + 1 / 2
    for engine in ("polars", "duckdb"):
        got = bounds_of(compute(engine, run, qrels, Evaluation(cutoffs=(1, 2, 3), tie_bounds=True)))
        assert got[("q", 1)][:2] == (pytest.approx(0 / 3), pytest.approx(2 / 3))  # b first, or a first
        assert got[("q", 2)][0] == pytest.approx((0 + 1 / log2(3)) / idcg_2)  # b, c
        assert got[("q", 2)][1] == pytest.approx((2 + 1 / log2(3)) / idcg_2)  # a, c
        assert got[("q", 3)][0] == pytest.approx((0 + 1 / log2(3) + 2 / 2) / idcg_3)  # b, c, a
        assert got[("q", 3)][1] == pytest.approx((2 + 1 / log2(3) + 0 / 2) / idcg_3)  # a, c, b
        # ranks 1-2 and 2-3 are tied (a, b, c); rank 3 (a tied doc) and 4 (d at 0.5) are not
        assert [got[("q", k)][2] for k in (1, 2, 3)] == [True, True, False]
        assert got[("q", None)][2] is None


def test_without_ties_the_bounds_equal_the_score() -> None:
    run_rows = [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)]
    qrels_rows = [("q", "a", 1), ("q", "c", 2)]
    run = run_frame(run_rows, pl.String)
    qrels = qrels_frame(qrels_rows)
    for engine in ("polars", "duckdb"):
        table = compute(engine, run, qrels, Evaluation(cutoffs=(1, 2), tie_bounds=True))
        for row in table.iter_rows(named=True):
            assert row["ndcg_min"] == pytest.approx(row["ndcg"], abs=TOLERANCE)
            assert row["ndcg_max"] == pytest.approx(row["ndcg"], abs=TOLERANCE)


def test_columns_only_when_asked() -> None:
    run_rows, qrels_rows, _, _ = CASES["ties across the cutoff"]
    run = run_frame(run_rows, pl.String)
    qrels = qrels_frame(qrels_rows)
    for engine in ("polars", "duckdb"):
        assert compute(engine, run, qrels, Evaluation(cutoffs=(1,))).columns == [
            "query_id",
            "k",
            "cg",
            "dcg",
            "idcg",
            "ndcg",
        ]


@pytest.mark.parametrize(
    "options",
    [
        {"ideal": "retrieved", "max_results": 3},
        {"ideal": "judged-cut-at-hits", "unjudged": "drop", "max_results": 3},
    ],
)
def test_refused_where_the_bounds_would_not_be_exact(options: dict) -> None:
    # which tied results max_results keeps would change the ideal too
    with pytest.raises(SpecError, match="tie_bounds cannot be combined with max_results"):
        Evaluation(tie_bounds=True, **options)
    Evaluation(tie_bounds=True, **{**options, "max_results": None})  # fine without the cut


@pytest.mark.parametrize("seed", range(8))
def test_summaries_count_the_tie_sensitive_queries(seed: int) -> None:
    run_rows, qrels_rows, evaluation = small_random_case(seed)
    run = run_frame(run_rows, pl.String)
    qrels = qrels_frame(qrels_rows)
    expected_bounds = reference_bounds(run_rows, qrels_rows, evaluation)
    by_polars = compute("polars", run, qrels, evaluation)
    polars_summary = summarize(by_polars.lazy()).collect()
    connection = duckdb_engine.connect()
    try:
        # sql/summary.sql reads per_query.sql's columns: the companion measures, null when off
        connection.register(
            "per_query", by_polars.with_columns(pl.lit(None, dtype=pl.Float64).alias(c) for c in COMPANION_MEASURES)
        )
        connection.execute(duckdb_engine.sql_file("summary.sql"))
        sql_summary = connection.table("summary").pl()
    finally:
        connection.close()
    for k in [None, *evaluation.cutoffs]:
        kept = [b for (_, key), b in expected_bounds.items() if key == k and b[0] is not None]
        sensitive = sum(1 for low, high, _ in kept if high - low > 1e-12)
        for summary in (polars_summary, sql_summary):
            row = summary.filter(pl.col("k").eq_missing(k)).to_dicts()[0]
            assert row["tie_sensitive_queries"] == (sensitive if kept else None)
            if kept:
                assert_close(row["ndcg_min"], sum(b[0] for b in kept) / len(kept), f"mean ndcg_min at {k}")
                assert_close(row["ndcg_max"], sum(b[1] for b in kept) / len(kept), f"mean ndcg_max at {k}")


@pytest.mark.local_engines("the command line in a subprocess")
def test_cli_writes_the_bounds(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    done = run_cli(
        "evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", "--k", "3,5",
        "--tie-bounds", "--engine", engine, "--out", out, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    per_query = pl.read_parquet(out / "per_query.parquet")
    assert {"ndcg_min", "ndcg_max", "ties_straddle_k"} <= set(per_query.columns)
    assert (per_query["ndcg_min"] <= per_query["ndcg"] + TOLERANCE).all()
    assert (per_query["ndcg"] <= per_query["ndcg_max"] + TOLERANCE).all()
    summary = pl.read_parquet(out / "summary.parquet")
    assert "tie_sensitive_queries" in summary.columns
    payload = json.loads(done.stdout)
    assert payload["conventions"]["tie_bounds"] is True
    # the printed count is the per-query table's own count of queries whose bounds differ
    at_3 = per_query.filter(pl.col("k") == 3)
    sensitive = int(((at_3["ndcg_max"] - at_3["ndcg_min"]) > 1e-12).sum())
    row = next(r for r in payload["summary"] if r["k"] == 3)
    assert row["tie_sensitive_queries"] == sensitive


def test_cli_refuses_the_inexact_combination() -> None:
    done = run_cli(
        "evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet",
        "--tie-bounds", "--ideal", "retrieved", "--max-results", "3",
    )  # fmt: skip
    assert done.returncode == 2
    assert "tie_bounds cannot be combined with max_results" in done.stderr
    assert "Traceback" not in done.stderr
