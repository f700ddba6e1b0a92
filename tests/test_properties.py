"""Properties that hold for every input under the default conventions, checked on random and
pathological runs and qrels (Hypothesis, derandomized so every run tests the same cases):
both engines agree with each other and with the independent reference, 0 <= NDCG <= 1, an
ideal run scores 1, the reversed ideal run scores the minimum over all orderings, and the
order of input rows changes nothing."""

from __future__ import annotations

import itertools
import random

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline import Evaluation, per_query
from tests.helpers import TOLERANCE, as_table, assert_tables_close, reference

ENGINES = ("polars", "duckdb")
CUTOFFS = (1, 3, 10)
PROPERTY_SETTINGS = settings(
    derandomize=True,
    database=None,
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ids = st.text(alphabet="abcxyz0123456789-_ éöß文書🔎'\";", min_size=1, max_size=6)
scores = st.one_of(
    st.sampled_from([0.0, 1.0, -1.0]),  # ties
    st.floats(allow_nan=False, allow_infinity=False),  # huge, tiny and subnormal values
    st.floats(min_value=-1e-300, max_value=1e-300, allow_nan=False),
)
labels = st.integers(min_value=-2, max_value=4)


@st.composite
def runs_and_qrels(draw: st.DrawFn) -> tuple[list[tuple], list[tuple]]:
    """Up to 4 queries; each retrieves up to 12 documents, some judged, some not, and has
    judged documents the run never retrieved."""
    run, qrels = [], []
    for query in draw(st.lists(ids, min_size=1, max_size=4, unique=True)):
        docs = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
        run += [(query, doc, draw(scores)) for doc in docs]
        judged = [doc for doc in docs if draw(st.booleans())]
        missed = [d for d in draw(st.lists(ids, max_size=3, unique=True)) if d not in docs]
        qrels += [(query, doc, draw(labels)) for doc in judged + missed]
    if not qrels:
        qrels = [(run[0][0], run[0][1], draw(labels))]
    return run, qrels


def frames(run: list[tuple], qrels: list[tuple]) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    return (
        pl.LazyFrame(run, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row"),
        pl.LazyFrame(qrels, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row"),
    )


def both_engines(run: list[tuple], qrels: list[tuple], cutoffs: tuple[int, ...] = CUTOFFS) -> dict:
    """Per-query tables of both engines, after checking they agree; the Polars one is returned."""
    tables = {
        engine: as_table(
            per_query(*frames(run, qrels), evaluation=Evaluation(cutoffs=cutoffs), engine=engine).collect()  # type: ignore[arg-type]
        )
        for engine in ENGINES
    }
    assert_tables_close(tables["duckdb"], tables["polars"])
    return tables["polars"]


def assert_bounded(table: dict) -> None:
    for key, (_, _, _, ndcg) in table.items():
        assert 0.0 <= ndcg <= 1.0, (key, ndcg)


@pytest.mark.slow  # 25 examples on both engines: make test runs it, make test-fast does not
@PROPERTY_SETTINGS
@given(runs_and_qrels())
def test_engines_agree_with_each_other_and_the_reference_within_bounds(case: tuple[list, list]) -> None:
    run, qrels = case
    table = both_engines(run, qrels)
    assert_tables_close(table, reference.ndcg_table(run, qrels, list(CUTOFFS)))
    assert_bounded(table)


def copy_of(name: str, rows: list[tuple]) -> list[tuple]:
    """The rows with each query id prefixed ``name/``: a copy of the input beside another."""
    return [(f"{name}/{query}", *rest) for query, *rest in rows]


def own_rows(name: str, table: dict) -> dict:
    """The rows of the copy ``name`` of a table, under their own query ids."""
    prefix = f"{name}/"
    return {(query.removeprefix(prefix), k): row for (query, k), row in table.items() if query.startswith(prefix)}


@pytest.mark.slow  # 25 examples on both engines: make test runs it, make test-fast does not
@PROPERTY_SETTINGS
@given(runs_and_qrels(), st.randoms(use_true_random=False))
def test_shuffling_input_rows_changes_nothing(case: tuple[list, list], rng: random.Random) -> None:
    """The input as drawn and shuffled are one evaluation per engine, not two: each a copy of
    its own (query ids prefixed), the shuffled copy's rows in their shuffled order after the
    drawn ones. Every number of a query is its rows' alone, so each copy scores as it would
    alone, and the shuffled copy must score as the drawn one."""
    run, qrels = case
    shuffled_run, shuffled_qrels = run[:], qrels[:]
    rng.shuffle(shuffled_run)
    rng.shuffle(shuffled_qrels)
    table = both_engines(
        copy_of("drawn", run) + copy_of("shuffled", shuffled_run),
        copy_of("drawn", qrels) + copy_of("shuffled", shuffled_qrels),
    )
    drawn = own_rows("drawn", table)
    assert drawn and len(drawn) * 2 == len(table)
    assert_tables_close(own_rows("shuffled", table), drawn)


@st.composite
def judged_queries(draw: st.DrawFn, distinct: bool) -> list[tuple[str, list[int]]]:
    """Queries whose judged documents are all retrieved; with ``distinct``, labels differ."""
    size = st.integers(min_value=1, max_value=6)
    queries = []
    for query in draw(st.lists(ids, min_size=1, max_size=3, unique=True)):
        if distinct:
            labels_of_query = draw(st.lists(st.integers(-2, 9), min_size=1, max_size=draw(size), unique=True))
        else:
            labels_of_query = draw(st.lists(labels, min_size=1, max_size=draw(size)))
        queries.append((query, labels_of_query))
    return queries


def ranked_run(queries: list[tuple[str, list[int]]], *, ideal: bool) -> tuple[list[tuple], list[tuple]]:
    """A run listing each judged document with score = label (ideal) or -label (reversed)."""
    run, qrels = [], []
    for query, query_labels in queries:
        for i, label in enumerate(query_labels):
            doc = f"d{i}"
            run.append((query, doc, float(label if ideal else -label)))
            qrels.append((query, doc, label))
    return run, qrels


@pytest.mark.slow  # 25 examples on both engines: make test runs it, make test-fast does not
@PROPERTY_SETTINGS
@given(judged_queries(distinct=False))
def test_an_ideal_run_scores_one(queries: list[tuple[str, list[int]]]) -> None:
    table = both_engines(*ranked_run(queries, ideal=True))
    for (query, k), (_, dcg, idcg, ndcg) in table.items():
        labels_of_query = dict(queries)[query]
        if any(label > 0 for label in labels_of_query):
            assert ndcg == pytest.approx(1.0, abs=TOLERANCE), (query, k)
            assert dcg == pytest.approx(idcg, rel=1e-12)
        else:
            assert ndcg == 0.0  # convention 4: no relevant document, IDCG 0, NDCG 0


@pytest.mark.slow  # 25 examples on both engines: make test runs it, make test-fast does not
@PROPERTY_SETTINGS
@given(judged_queries(distinct=True))
def test_the_reversed_ideal_run_scores_the_minimum_over_all_orderings(queries: list[tuple[str, list[int]]]) -> None:
    """With distinct labels, ranking by label ascending puts the smallest gains under the
    largest discounts, so by the rearrangement inequality no ordering of the same documents
    has a smaller DCG@k, for every k. Checked against every permutation (n <= 6)."""
    table = both_engines(*ranked_run(queries, ideal=False))
    for query, query_labels in queries:
        gains = [reference.gain(label) for label in query_labels]
        for k in (None, *CUTOFFS):
            smallest = min(reference.dcg(list(order), k) for order in itertools.permutations(gains))
            assert table[(query, k)][1] == pytest.approx(smallest, abs=TOLERANCE), (query, k)
            assert all(
                table[(query, k)][1] <= reference.dcg(list(order), k) + TOLERANCE
                for order in itertools.permutations(gains)
            )


def pathological_cases() -> dict[str, tuple[list[tuple], list[tuple]]]:
    rng = random.Random(7)
    many = [("big", f"doc{i:05d}", rng.choice([0.0, 0.5, 1.0, rng.random()])) for i in range(3000)]
    return {
        "all ties": (
            [("q", d, 0.25) for d in "abcdefgh"],
            [("q", "b", 1), ("q", "g", 3), ("q", "z", 2)],
        ),
        "one document": ([("q", "only", 1.0)], [("q", "only", 2)]),
        "one unjudged document": ([("q", "only", 1.0)], [("q", "other", 2)]),
        "thousands of documents per query": (
            many,
            [("big", doc, rng.randint(-1, 3)) for _, doc, _ in rng.sample(many, 400)],
        ),
        "huge and tiny scores": (
            [
                ("q", "max", 1.7976931348623157e308),
                ("q", "min", -1.7976931348623157e308),
                ("q", "sub", 5e-324),
                ("q", "negsub", -5e-324),
                ("q", "zero", 0.0),
                ("q", "negzero", -0.0),
            ],
            [("q", "min", 3), ("q", "sub", 1), ("q", "negzero", 2), ("q", "zero", 1)],
        ),
        "unicode ids": (
            [("запрос", "文書-2", 1.0), ("запрос", "文書-1", 1.0), ("запрос", "é", 0.5), ("🔎", "ß", 1.0)],
            [("запрос", "文書-1", 2), ("запрос", "é", 1), ("🔎", "ß", 1), ("🔎", "ss", 3)],
        ),
    }


@pytest.mark.parametrize("name", list(pathological_cases()))
def test_pathological_inputs(name: str) -> None:
    run, qrels = pathological_cases()[name]
    table = both_engines(run, qrels, cutoffs=(1, 5, 1000))
    assert_tables_close(table, reference.ndcg_table(run, qrels, [1, 5, 1000]))
    assert_bounded(table)
