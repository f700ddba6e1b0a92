"""Two engines, one meaning: Polars and DuckDB SQL agree within 1e-9 on every per-query row,
on an edge-case matrix and on seeded random data, and both agree with the independent
reference in tests/reference.py."""

from __future__ import annotations

import random
from math import log2

import polars as pl
import pytest

from pipeline import Discount, Evaluation, Gain
from tests import reference
from tests.conftest import as_table, assert_tables_close, compute, frames

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


def reference_table(run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation) -> dict:
    return reference.ndcg_table(
        run_rows,
        qrels_rows,
        list(evaluation.cutoffs),
        gain_kind=evaluation.gain.kind,
        levels=dict(evaluation.gain.levels),
        discount_kind=evaluation.discount.kind,
        base=evaluation.discount.log_base,
        all_queries=evaluation.all_queries,
        max_results=evaluation.max_results,
    )


@pytest.mark.parametrize("case", list(CASES))
def test_edge_case_matrix(case: str) -> None:
    run_rows, qrels_rows, options, id_type = CASES[case]
    evaluation = Evaluation(**options)
    run, qrels = frames(run_rows, qrels_rows, id_type)
    by_polars = as_table(compute("polars", run, qrels, evaluation))
    by_sql = as_table(compute("duckdb", run, qrels, evaluation))
    assert_tables_close(by_sql, by_polars)
    assert_tables_close(by_polars, reference_table(run_rows, qrels_rows, evaluation))


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


def random_case(seed: int) -> tuple[list[tuple], list[tuple], Evaluation]:
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for q in range(rng.randint(1, 25)):
        docs = [f"d{d}" for d in range(rng.randint(1, 40))]
        for doc in rng.sample(docs, rng.randint(1, len(docs))):
            run_rows.append((f"q{q}", doc, float(rng.randint(0, 8))))  # few distinct scores: many ties
        for doc in docs:
            if rng.random() < 0.5:
                qrels_rows.append((f"q{q}", doc, rng.choice([-1, 0, 0, 1, 2, 3, 4])))
    if not qrels_rows:
        qrels_rows.append(("q0", "d0", 1))
    rng.shuffle(run_rows)
    gain = rng.choice([Gain(), Gain("exponential"), Gain.parse("1=3,2=9,4=4.5"), Gain.parse("0=1,3=-1")])
    discount = rng.choice([Discount(), Discount("jk", 2.0), Discount("jk", 2.5)])
    evaluation = Evaluation(
        cutoffs=tuple(sorted(rng.sample([1, 2, 3, 5, 10, 20, 50], rng.randint(1, 4)))),
        gain=gain,
        discount=discount,
        all_queries=rng.random() < 0.5,
        max_results=rng.choice([None, None, 3, 15]),
    )
    return run_rows, qrels_rows, evaluation


@pytest.mark.parametrize("seed", range(40))
def test_random_data(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(seed)
    run, qrels = frames(run_rows, qrels_rows)
    by_polars = as_table(compute("polars", run, qrels, evaluation))
    by_sql = as_table(compute("duckdb", run, qrels, evaluation))
    assert_tables_close(by_sql, by_polars)
    assert_tables_close(by_polars, reference_table(run_rows, qrels_rows, evaluation))


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
