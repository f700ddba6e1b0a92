"""The worked examples of the project's seed notes (kept outside the repository), recomputed
from their formulas, on both engines.

Each expectation is written as the arithmetic that produces it. Where a seed prints a
different number, a comment says so: those are arithmetic slips in the seed.
"""

from __future__ import annotations

from functools import cache
from math import log2

import polars as pl
import pytest

from pipeline import Discount, Evaluation, Gain, per_query
from tests.helpers.batch import Batch, Case, through_api


def ranking(labels: list[float], k: int | None, **spec: object) -> Case:
    """One query whose documents are retrieved in the given label order."""
    docs = [f"d{i:02d}" for i in range(len(labels))]
    run = pl.LazyFrame({"query_id": "q", "doc_id": docs, "score": [float(len(docs) - i) for i in range(len(docs))]})
    qrels = pl.LazyFrame({"query_id": "q", "doc_id": docs, "relevance": labels})
    cutoffs = (k,) if k is not None else (1,)
    return Case(run, qrels, Evaluation(cutoffs=cutoffs, **spec))  # type: ignore[arg-type]


def measures_at(table: pl.DataFrame, k: int | None) -> dict[str, float]:
    row = table.filter(pl.col("k").eq_missing(k)).row(0, named=True)
    return {m: row[m] for m in ("cg", "dcg", "idcg", "ndcg")}


def ranked(labels: list[float], k: int | None, engine: str, **spec: object) -> dict[str, float]:
    """Score one query whose documents are retrieved in the given label order."""
    if engine == "spark":
        key = ranking_key(labels, k, spec)
        assert key in SCORED_ON_SPARK, f"add {key} to SCORED_ON_SPARK at the end of this module"
        return measures_at(scored_on_spark()[str(SCORED_ON_SPARK.index(key))], k)
    case = ranking(labels, k, **spec)
    # The seeds grade relevance with fractions (seed 000: A=.5, B=.9, ...), an explicit opt-in.
    table = per_query(case.run, case.qrels, evaluation=case.evaluation, engine=engine, allow_fractional_labels=True)
    return measures_at(table.collect(), k)


JK2 = {"discount": Discount("jk", log_base=2.0)}
EXP = {"gain": Gain("exponential")}


# seed 000: items A..E with fractional relevance A=.5 B=.9 C=.3 D=.6 E=.1
def test_seed_000_order_abcde(engine: str) -> None:
    got = ranked([0.5, 0.9, 0.3, 0.6, 0.1], None, engine)
    assert got["cg"] == pytest.approx(0.5 + 0.9 + 0.3 + 0.6 + 0.1)  # 2.4
    dcg = 0.5 / log2(2) + 0.9 / log2(3) + 0.3 / log2(4) + 0.6 / log2(5) + 0.1 / log2(6)
    assert got["dcg"] == pytest.approx(dcg)  # 1.5149; the seed's rounded terms sum to 1.52
    idcg = 0.9 / log2(2) + 0.6 / log2(3) + 0.5 / log2(4) + 0.3 / log2(5) + 0.1 / log2(6)  # order B D A C E
    assert got["idcg"] == pytest.approx(idcg)  # 1.6965; the seed prints 1.7
    assert got["ndcg"] == pytest.approx(dcg / idcg)


def test_seed_000_order_daecb(engine: str) -> None:
    got = ranked([0.6, 0.5, 0.1, 0.3, 0.9], None, engine)
    assert got["cg"] == pytest.approx(2.4)  # CG ignores order
    dcg = 0.6 / log2(2) + 0.5 / log2(3) + 0.1 / log2(4) + 0.3 / log2(5) + 0.9 / log2(6)
    assert got["dcg"] == pytest.approx(dcg)  # 1.4429, the seed's 1.44


# seed 001: q1 labels 2,3,1,2,1,0,1 and q2 labels 3,2,2,1,2,1,0,0,1, in retrieved order
Q1 = [2, 3, 1, 2, 1, 0, 1]
Q2 = [3, 2, 2, 1, 2, 1, 0, 0, 1]


def test_seed_001_cg(engine: str) -> None:
    assert ranked(Q1, None, engine)["cg"] == pytest.approx(2 + 3 + 1 + 2 + 1 + 0 + 1)  # 10
    assert ranked(Q2, None, engine)["cg"] == pytest.approx(3 + 2 + 2 + 1 + 2 + 1 + 0 + 0 + 1)  # 12


def test_seed_001_regular_dcg_is_jk_base_2(engine: str) -> None:
    # "Regular" DCG = rel_1 + sum_{i>=2} rel_i / log2(i): the J-K discount with b = 2.
    q1 = ranked(Q1, None, engine, **JK2)
    dcg1 = 2 + 3 / log2(2) + 1 / log2(3) + 2 / log2(4) + 1 / log2(5) + 0 / log2(6) + 1 / log2(7)
    idcg1 = 3 + 2 / log2(2) + 2 / log2(3) + 1 / log2(4) + 1 / log2(5) + 1 / log2(6) + 0 / log2(7)
    assert q1["dcg"] == pytest.approx(dcg1)  # 7.4178 (seed: 7.42)
    assert q1["idcg"] == pytest.approx(idcg1)  # 7.5795 (seed: 7.58)
    # The seed prints NDCG_1 = 7.42 / 7.58 = 0.989; that division is 0.979: a slip in the seed.
    assert q1["ndcg"] == pytest.approx(dcg1 / idcg1)
    assert q1["ndcg"] == pytest.approx(0.9787, abs=1e-4)

    q2 = ranked(Q2, None, engine, **JK2)
    dcg2 = 3 + 2 / log2(2) + 2 / log2(3) + 1 / log2(4) + 2 / log2(5) + 1 / log2(6) + 0 + 0 + 1 / log2(9)
    idcg2 = 3 + 2 / log2(2) + 2 / log2(3) + 2 / log2(4) + 1 / log2(5) + 1 / log2(6) + 1 / log2(7) + 0 + 0
    assert q2["dcg"] == pytest.approx(dcg2)  # 8.3257 (seed: 8.32, rounded down)
    assert q2["idcg"] == pytest.approx(idcg2)  # 8.4357 (seed: 8.43)
    assert q2["ndcg"] == pytest.approx(dcg2 / idcg2)  # 0.9870 (seed: 0.987)


def test_seed_001_alternative_exponential(engine: str) -> None:
    q1 = ranked(Q1, None, engine, **EXP)
    dcg1 = 3 / log2(2) + 7 / log2(3) + 1 / log2(4) + 3 / log2(5) + 1 / log2(6) + 0 / log2(7) + 1 / log2(8)
    idcg1 = 7 / log2(2) + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 1 / log2(6) + 1 / log2(7) + 0 / log2(8)
    assert q1["dcg"] == pytest.approx(dcg1)  # 9.9287 (seed: 9.93)
    assert q1["idcg"] == pytest.approx(idcg1)  # 11.5666 (seed: 11.57)
    assert q1["ndcg"] == pytest.approx(dcg1 / idcg1)  # 0.8584 (seed: 0.858)

    q2 = ranked(Q2, None, engine, **EXP)
    # The seed's last term is 2^1/log2(10); the formula gives (2^1 - 1)/log2(10). With the
    # formula DCG_2 is 12.6413, not the seed's 13.11.
    dcg2 = 7 / log2(2) + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 3 / log2(6) + 1 / log2(7) + 0 + 0 + 1 / log2(10)
    # Ideal labels 3,2,2,2,1,1,1,0,0: the seed prints IDCG_2 = 14.96, the formula gives 12.7612.
    idcg2 = 7 / log2(2) + 3 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6) + 1 / log2(7) + 1 / log2(8)
    assert q2["dcg"] == pytest.approx(dcg2)
    assert q2["idcg"] == pytest.approx(idcg2)
    # The seed divides the regular DCG (8.43) by its IDCG and prints 0.563; recomputed: 0.9906.
    assert q2["ndcg"] == pytest.approx(dcg2 / idcg2)
    assert q2["ndcg"] == pytest.approx(0.9906, abs=1e-4)


# seed 002: items with rel 1, 4, 2, 3, 5, 0 recommended in that order (formulas only)
def test_seed_002_linear_and_exponential(engine: str) -> None:
    labels = [1, 4, 2, 3, 5, 0]
    linear = ranked(labels, 6, engine)
    assert linear["cg"] == pytest.approx(1 + 4 + 2 + 3 + 5 + 0)  # 15
    dcg = 1 / log2(2) + 4 / log2(3) + 2 / log2(4) + 3 / log2(5) + 5 / log2(6) + 0 / log2(7)
    idcg = 5 / log2(2) + 4 / log2(3) + 3 / log2(4) + 2 / log2(5) + 1 / log2(6) + 0 / log2(7)
    assert linear["ndcg"] == pytest.approx(dcg / idcg)
    exponential = ranked(labels, 6, engine, **EXP)
    dcg_exp = 1 / log2(2) + 15 / log2(3) + 3 / log2(4) + 7 / log2(5) + 31 / log2(6) + 0 / log2(7)
    idcg_exp = 31 / log2(2) + 15 / log2(3) + 7 / log2(4) + 3 / log2(5) + 1 / log2(6) + 0 / log2(7)
    assert exponential["dcg"] == pytest.approx(dcg_exp)
    assert exponential["ndcg"] == pytest.approx(dcg_exp / idcg_exp)


# seed 003: D1..D4 rated 3, 2, 3, 0
def test_seed_003(engine: str) -> None:
    got = ranked([3, 2, 3, 0], 4, engine)
    assert got["cg"] == pytest.approx(3 + 2 + 3 + 0)  # 8
    dcg = 3 / log2(2) + 2 / log2(3) + 3 / log2(4) + 0 / log2(5)
    assert got["dcg"] == pytest.approx(dcg)  # 5.7619 (seed: 5.762)
    idcg = 3 / log2(2) + 3 / log2(3) + 2 / log2(4) + 0 / log2(5)  # ideal order D1 D3 D2 D4
    # The seed prints IDCG = 5.898 and NDCG = 0.976; the formula gives 5.8928 and 0.9778.
    assert got["idcg"] == pytest.approx(idcg)
    assert got["ndcg"] == pytest.approx(dcg / idcg)
    assert got["ndcg"] == pytest.approx(0.9778, abs=1e-4)


# seed 004: several small lists
def test_seed_004_cg(engine: str) -> None:
    assert ranked([3, 2, 0, 1], 2, engine)["cg"] == pytest.approx(3 + 2)
    assert ranked([3, 2, 0, 1], 4, engine)["cg"] == pytest.approx(3 + 2 + 0 + 1)


def test_seed_004_dcg_at_4(engine: str) -> None:
    got = ranked([3, 2, 3, 0], 4, engine)
    assert got["dcg"] == pytest.approx(3 / log2(2) + 2 / log2(3) + 3 / log2(4) + 0 / log2(5))  # 5.762


def test_seed_004_ndcg_at_5(engine: str) -> None:
    got = ranked([3, 2, 3, 0, 1], 5, engine)
    dcg = 3 / log2(2) + 2 / log2(3) + 3 / log2(4) + 0 / log2(5) + 1 / log2(6)  # 6.149
    idcg = 3 / log2(2) + 3 / log2(3) + 2 / log2(4) + 1 / log2(5) + 0 / log2(6)  # 6.324
    assert got["dcg"] == pytest.approx(dcg)
    assert got["idcg"] == pytest.approx(idcg)
    assert got["ndcg"] == pytest.approx(dcg / idcg)  # 0.972
    assert got["ndcg"] == pytest.approx(0.9724, abs=1e-4)


@pytest.mark.parametrize(
    ("k", "dcg", "idcg"),
    [
        (
            5,
            3 / log2(2) + 2 / log2(3) + 1 / log2(4) + 0 / log2(5) + 2 / log2(6),
            3 + 2 / log2(3) + 2 / log2(4) + 1 / log2(5),
        ),
        (3, 3 / log2(2) + 2 / log2(3) + 1 / log2(4), 3 / log2(2) + 2 / log2(3) + 2 / log2(4)),
    ],
)
def test_seed_004_movies(engine: str, k: int, dcg: float, idcg: float) -> None:
    # Movies A..E rated 3, 2, 1, 0, 2: NDCG@5 = 5.536 / 5.693 = 0.972, NDCG@3 = 4.762 / 5.262 = 0.905
    got = ranked([3, 2, 1, 0, 2], k, engine)
    assert got["dcg"] == pytest.approx(dcg)
    assert got["idcg"] == pytest.approx(idcg)
    assert got["ndcg"] == pytest.approx(dcg / idcg)
    assert got["ndcg"] == pytest.approx({5: 0.9724, 3: 0.9050}[k], abs=1e-4)


# Every ranking the tests above score. On Spark, the rankings that share a convention are
# scored in one job, when a test first asks for one of them (tests/helpers/batch.py): a Spark
# job of a few rows costs its round trips, not its rows.
def ranking_key(labels: list[float], k: int | None, spec: dict) -> tuple:
    return (tuple(labels), k, tuple(sorted(spec.items())))


SCORED_ON_SPARK = [
    ranking_key(labels, k, spec)
    for labels, k, spec in (
        ([0.5, 0.9, 0.3, 0.6, 0.1], None, {}),
        ([0.6, 0.5, 0.1, 0.3, 0.9], None, {}),
        (Q1, None, {}),
        (Q2, None, {}),
        (Q1, None, JK2),
        (Q2, None, JK2),
        (Q1, None, EXP),
        (Q2, None, EXP),
        ([1, 4, 2, 3, 5, 0], 6, {}),
        ([1, 4, 2, 3, 5, 0], 6, EXP),
        ([3, 2, 3, 0], 4, {}),
        ([3, 2, 0, 1], 2, {}),
        ([3, 2, 0, 1], 4, {}),
        ([3, 2, 3, 0, 1], 5, {}),
        ([3, 2, 1, 0, 2], 5, {}),
        ([3, 2, 1, 0, 2], 3, {}),
    )
]


@cache
def scored_on_spark() -> Batch:
    cases = {str(i): ranking(list(labels), k, **dict(spec)) for i, (labels, k, spec) in enumerate(SCORED_ON_SPARK)}
    return Batch(cases, through_api("spark", allow_fractional_labels=True))
