"""The companion measures against the peers themselves, on the seeded random data of
tests/test_peers.py (ties, graded and negative labels, unjudged and unretrieved documents,
queries without relevant documents, cutoffs beyond the list): pytrec_eval (trec_eval's code)
under the trec_eval profile, with -c, -J and -l, and ir_measures under its profile."""

from __future__ import annotations

import pytest

from pipeline import per_query
from tests.helpers.peers import CUTOFFS, as_dicts, assert_same, frames, random_data

pytestmark = pytest.mark.local_engines("many seeds against the peers (Spark equals Polars: test_measures.py)")

# trec_eval's measure (pytrec_eval's name) -> our column, and whether it has cutoffs
TREC_MEASURES = {"P": ("P", True), "recall": ("recall", True), "map_cut": ("map", True), "success": ("success", True)}
TREC_WHOLE = {"map": "map", "recip_rank": "recip_rank"}
MEASURES = "P,recall,map,recip_rank,success"


def ours(run_rows: list[tuple], qrels_rows: list[tuple], engine: str, **options: object) -> dict:
    """{(measure, query_id, k): value} of the companion measures from the library."""
    run, qrels = frames(run_rows, qrels_rows)
    table = per_query(run, qrels, engine=engine, k=CUTOFFS, measures=MEASURES, **options).collect()  # type: ignore[arg-type]
    values = {}
    for row in table.iter_rows(named=True):
        for name in ("P", "recall", "map", "recip_rank", "success"):
            if row[name] is not None:
                values[(name, row["query_id"], row["k"])] = row[name]
    return values


def pytrec_eval_table(run: dict, qrels: dict, **flags: object) -> dict:
    """{(our measure, query_id, k): value}: every measure trec_eval has at each cutoff, and map and
    recip_rank over the whole ranking."""
    import pytrec_eval

    cutoffs = ",".join(map(str, CUTOFFS))
    measures = {*(f"{name}.{cutoffs}" for name in TREC_MEASURES), *TREC_WHOLE}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, measures, **flags).evaluate(run)
    table = {}
    for query, values in evaluated.items():
        for name, (column, _) in TREC_MEASURES.items():
            for k in CUTOFFS:
                table[(column, query, k)] = values[f"{name}_{k}"]
        for name, column in TREC_WHOLE.items():
            table[(column, query, None)] = values[name]
    return table


def comparable(actual: dict, expected: dict) -> dict:
    """Our values at the rows the peer computes (we also give recall and success over the whole
    ranking and recip_rank at cutoffs, which trec_eval does not)."""
    return {key: value for key, value in actual.items() if key in expected}


@pytest.mark.parametrize("seed", range(4))
def test_trec_eval_profile_matches_pytrec_eval(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table(run, qrels)
    actual = ours(run_rows, qrels_rows, engine, profile="trec_eval")
    assert {query for _, query, _ in expected} == {query for _, query, _ in actual}
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_all_queries_matches_pytrec_eval_with_empty_runs(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table({**{query: {} for query in qrels}, **run}, qrels)
    actual = ours(run_rows, qrels_rows, engine, profile="trec_eval", all_queries=True)
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_unjudged_drop_matches_judged_docs_only(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table(run, qrels, judged_docs_only_flag=True)
    actual = ours(run_rows, qrels_rows, engine, profile="trec_eval", unjudged="drop")
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_relevance_threshold_matches_relevance_level(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table(run, qrels, relevance_level=2)
    actual = ours(run_rows, qrels_rows, engine, profile="trec_eval", relevance_threshold=2)
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_ir_measures_profile_matches_ir_measures(engine: str, seed: int) -> None:
    import ir_measures
    from ir_measures import AP, RR, P, R, Success

    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    names = {"P": "P", "R": "recall", "AP": "map", "RR": "recip_rank", "Success": "success"}
    measures = [AP, RR, *(m @ k for m in (P, R, AP, Success) for k in CUTOFFS)]
    expected = {
        (names[result.measure.NAME], result.query_id, result.measure.params.get("cutoff")): result.value
        for result in ir_measures.iter_calc(measures, qrels, run)
    }
    assert any(query not in run for _, query, _ in expected)  # its zero-filled missing queries are in
    actual = ours(run_rows, qrels_rows, engine, profile="ir_measures")
    assert {query for _, query, _ in expected} == {query for _, query, _ in actual}
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(2))
def test_reciprocal_rank_at_k_matches_ir_measures_without_ties(engine: str, seed: int) -> None:
    # ir_measures computes RR@k with another provider than pytrec_eval's (trec_eval has no
    # recip_rank at a cutoff), which breaks tied scores in another order: untied scores only
    import ir_measures
    from ir_measures import RR

    run_rows, qrels_rows = random_data(seed, distinct_scores=True)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = {
        ("recip_rank", result.query_id, result.measure.params.get("cutoff")): result.value
        for result in ir_measures.iter_calc([RR @ k for k in CUTOFFS], qrels, run)
    }
    actual = ours(run_rows, qrels_rows, engine, profile="ir_measures")
    assert_same(comparable(actual, expected), expected)
