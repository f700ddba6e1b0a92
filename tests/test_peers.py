"""Proof against the peers: each profile reproduces the real tool, run here on seeded random
data with ties, graded and negative labels, unjudged and unretrieved documents, queries
without relevant documents and cutoffs beyond the list. The tools are test-only dependencies
(the ``peers`` extra of pyproject.toml, installed by ``make test``)."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import polars as pl
import pytest

from pipeline import per_query
from tests.helpers.peers import (
    CUTOFFS,
    PEER_TOLERANCE,
    as_dicts,
    assert_same,
    frames,
    lightgbm_ndcg,
    random_data,
    spark_mllib_mean,
    spark_mllib_means,
    spark_ndcg_per_query,
    spark_per_query,
    xgboost_ndcg,
)

pytestmark = pytest.mark.local_engines("the peers' profiles break ties by input order (refused on Spark)")


def ours(run_rows: list[tuple], qrels_rows: list[tuple], engine: str, **options: object) -> dict:
    """{(query_id, k): ndcg} from the library."""
    run, qrels = frames(run_rows, qrels_rows)
    table = per_query(run, qrels, engine=engine, k=CUTOFFS, **options).collect()  # type: ignore[arg-type]
    return {(row["query_id"], row["k"]): row["ndcg"] for row in table.iter_rows(named=True)}


# trec_eval through pytrec_eval


def pytrec_eval_table(run: dict, qrels: dict, **flags: object) -> dict:
    import pytrec_eval

    measures = {"ndcg", "ndcg_cut." + ",".join(map(str, CUTOFFS))}
    evaluated = pytrec_eval.RelevanceEvaluator(qrels, measures, **flags).evaluate(run)
    table = {}
    for query, values in evaluated.items():
        table[(query, None)] = values["ndcg"]
        for k in CUTOFFS:
            table[(query, k)] = values[f"ndcg_cut_{k}"]
    return table


@pytest.mark.parametrize("seed", range(4))
def test_trec_eval_profile_matches_pytrec_eval(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table(run, qrels)
    assert_same(ours(run_rows, qrels_rows, engine, profile="trec_eval"), expected)


@pytest.mark.parametrize("seed", range(4))
def test_all_queries_matches_pytrec_eval_with_empty_runs(engine: str, seed: int) -> None:
    # trec_eval -c scores a query missing from the run as if its ranking were empty
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table({**{query: {} for query in qrels}, **run}, qrels)
    assert_same(ours(run_rows, qrels_rows, engine, profile="trec_eval", all_queries=True), expected)


@pytest.mark.parametrize("seed", range(4))
def test_unjudged_drop_matches_judged_docs_only(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_table(run, qrels, judged_docs_only_flag=True)
    assert_same(ours(run_rows, qrels_rows, engine, profile="trec_eval", unjudged="drop"), expected)


# ir_measures


@pytest.mark.parametrize("seed", range(3))
def test_ir_measures_profile_matches_ir_measures(engine: str, seed: int) -> None:
    import ir_measures
    from ir_measures import nDCG

    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    measures = [nDCG, *(nDCG @ k for k in CUTOFFS)]
    expected = {
        (result.query_id, result.measure.params.get("cutoff")): result.value
        for result in ir_measures.iter_calc(measures, qrels, run)
    }
    assert any(query not in run for query, _ in expected)  # its zero-filled missing queries are in
    assert_same(ours(run_rows, qrels_rows, engine, profile="ir_measures"), expected)


# scikit-learn


def sklearn_table(run_rows: list[tuple], qrels_rows: list[tuple], *, ignore_ties: bool) -> dict:
    from sklearn.metrics import ndcg_score

    _, qrels = as_dicts(run_rows, qrels_rows)
    by_query: dict = defaultdict(list)
    for query, doc, score in run_rows:
        # ndcg_score refuses negative labels; our conventions give them gain 0, as unjudged
        by_query[query].append((max(qrels.get(query, {}).get(doc, 0), 0), score))
    table = {}
    for query, rows in by_query.items():
        if query not in qrels:
            continue  # not evaluated (no judgments)
        y_true = np.array([[label for label, _ in rows]], dtype=float)
        y_score = np.array([[score for _, score in rows]], dtype=float)
        for k in (None, *CUTOFFS):
            table[(query, k)] = float(ndcg_score(y_true, y_score, k=k, ignore_ties=ignore_ties))
    return table


@pytest.mark.parametrize("seed", range(4))
def test_sklearn_profile_matches_ndcg_score_with_ties(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed, min_docs=2)  # ndcg_score needs two documents
    expected = sklearn_table(run_rows, qrels_rows, ignore_ties=False)
    assert_same(ours(run_rows, qrels_rows, engine, profile="sklearn"), expected)


@pytest.mark.parametrize("seed", range(2))
def test_sklearn_profile_matches_ndcg_score_ignoring_ties(engine: str, seed: int) -> None:
    # ignore_ties=True orders ties with an unstable sort, so only untied scores are comparable
    run_rows, qrels_rows = random_data(seed, min_docs=2, distinct_scores=True)
    expected = sklearn_table(run_rows, qrels_rows, ignore_ties=True)
    assert_same(ours(run_rows, qrels_rows, engine, profile="sklearn"), expected)


# LightGBM


@pytest.mark.parametrize("seed", range(2))
def test_lightgbm_profile_matches_lightgbm(engine: str, seed: int) -> None:
    # LightGBM needs labels in 0..30; only retrieved rows exist for it (unjudged: label 0)
    run_rows, qrels_rows = random_data(seed, labels=(0, 0, 1, 2, 3, 4))
    _, qrels = as_dicts(run_rows, qrels_rows)
    evaluated = [row for row in run_rows if row[0] in qrels]
    by_query: dict = defaultdict(list)
    for query, doc, score in evaluated:
        by_query[query].append((qrels[query].get(doc, 0), score))
    table = ours(run_rows, qrels_rows, engine, profile="lightgbm")
    for query, rows in by_query.items():
        per_query_values = lightgbm_ndcg(
            [label for label, _ in rows], [score for _, score in rows], [len(rows)], CUTOFFS
        )
        for k, value in zip(CUTOFFS, per_query_values, strict=True):
            assert table[(query, k)] == pytest.approx(value, abs=PEER_TOLERANCE), (query, k)
    # and its mean over every query at once, rows grouped by query in arrival order
    ordered = sorted(evaluated, key=lambda row: row[0])
    groups = [len(by_query[query]) for query in sorted(by_query)]
    means = lightgbm_ndcg([qrels[q].get(d, 0) for q, d, _ in ordered], [s for _, _, s in ordered], groups, CUTOFFS)
    for k, mean in zip(CUTOFFS, means, strict=True):
        ours_mean = sum(table[(query, k)] for query in by_query) / len(by_query)
        assert ours_mean == pytest.approx(mean, abs=PEER_TOLERANCE)


# XGBoost


def well_apart_in_float32(scores: list[float]) -> bool:
    """XGBoost stores scores as float32; random scores that tie only there are not comparable."""
    rounded = np.array(scores, dtype=np.float32)
    return len(set(rounded.tolist())) == len(set(scores))


@pytest.mark.parametrize(("seed", "empty_ideal", "suffix"), [(1, "one", ""), (2, "one", ""), (3, "zero", "-")])
def test_xgboost_profile_matches_xgboost(engine: str, seed: int, empty_ideal: str, suffix: str) -> None:
    # XGBoost's exponential gain needs labels in 0..31; only retrieved rows exist for it (unjudged: label 0).
    # ndcg@k- scores a query without relevant documents 0, as --empty-ideal zero does.
    run_rows, qrels_rows = random_data(seed, labels=(0, 0, 1, 2, 3, 4))
    _, qrels = as_dicts(run_rows, qrels_rows)
    evaluated = sorted((row for row in run_rows if row[0] in qrels), key=lambda row: row[0])  # stable: arrival kept
    by_query: dict = defaultdict(list)
    for query, doc, score in evaluated:
        by_query[query].append((qrels[query].get(doc, 0), score))
    assert well_apart_in_float32([score for _, _, score in evaluated])
    metrics = tuple(f"ndcg@{k}{suffix}" for k in CUTOFFS)
    table = ours(run_rows, qrels_rows, engine, profile="xgboost", empty_ideal=empty_ideal)
    assert any(all(label == 0 for label, _ in rows) for rows in by_query.values())  # an IDCG = 0 query is in
    for query, rows in by_query.items():
        values = xgboost_ndcg([label for label, _ in rows], [score for _, score in rows], [len(rows)], metrics)
        for k, value in zip(CUTOFFS, values, strict=True):
            assert table[(query, k)] == pytest.approx(value, abs=PEER_TOLERANCE), (query, k)
    groups = [len(by_query[query]) for query in sorted(by_query)]
    means = xgboost_ndcg([qrels[q].get(d, 0) for q, d, _ in evaluated], [s for _, _, s in evaluated], groups, metrics)
    for k, mean in zip(CUTOFFS, means, strict=True):
        ours_mean = sum(table[(query, k)] for query in by_query) / len(by_query)
        assert ours_mean == pytest.approx(mean, abs=PEER_TOLERANCE)


# Spark MLlib


def spark_rankings(run_rows: list[tuple], qrels_rows: list[tuple]) -> dict[str, tuple[list[str], list[str]]]:
    """What a Spark user hands RankingMetrics for each query both files know: the predicted
    documents ordered by score, ties in arrival order (a stable sort), and the set of relevant
    documents (label > 0). Spark has no scores, so the caller's order is the ranking."""
    run, qrels = as_dicts(run_rows, qrels_rows)
    rankings = {}
    for query in run:
        if query not in qrels:
            continue  # not evaluated by us; Spark would score its empty label set 0
        arrived = [doc for q, doc, _ in run_rows if q == query]
        predicted = sorted(arrived, key=lambda doc: -run[query][doc])
        relevant = [doc for doc, label in qrels[query].items() if label > 0]
        rankings[query] = (predicted, relevant)
    return rankings


SPARK_PER_QUERY_CUTOFFS = (3, 50)  # one Spark job per query and cutoff: a cutoff inside the lists and one beyond


@pytest.mark.spark
def test_spark_mllib_profile_matches_ranking_metrics(local_spark: object) -> None:
    run_rows, qrels_rows = random_data(1)  # seed 1 has queries with ties, with unjudged and negative labels
    rankings = spark_rankings(run_rows, qrels_rows)
    assert any(not relevant for _, relevant in rankings.values())  # and queries with an empty label set
    expected = spark_ndcg_per_query(local_spark, rankings, SPARK_PER_QUERY_CUTOFFS)
    spark_means = {k: spark_mllib_mean(local_spark, rankings, k) for k in CUTOFFS}
    for engine in ("polars", "duckdb"):
        table = ours(run_rows, qrels_rows, engine, profile="spark_mllib")
        assert_same({key: value for key, value in table.items() if key[1] in SPARK_PER_QUERY_CUTOFFS}, expected)
        for k in CUTOFFS:
            ours_mean = sum(table[(query, k)] for query in rankings) / len(rankings)
            assert ours_mean == pytest.approx(spark_means[k], abs=PEER_TOLERANCE), k


@pytest.mark.spark
def test_spark_mllib_profile_companions_match_ranking_metrics(local_spark: object) -> None:
    # MAP@k divides by min(k, R) in Spark (ap_denominator min-k-relevant), P@k by k, R@k by R
    run_rows, qrels_rows = random_data(1)
    rankings = spark_rankings(run_rows, qrels_rows)
    spark_means = spark_mllib_means(local_spark, rankings, CUTOFFS)
    spark_map_at_3 = spark_per_query(local_spark, rankings, "meanAveragePrecisionAtK", (3,))
    run, qrels = frames(run_rows, qrels_rows)
    for engine in ("polars", "duckdb"):
        table = per_query(run, qrels, engine=engine, k=CUTOFFS, measures="P,recall,map", profile="spark_mllib")
        rows = {(row["query_id"], row["k"]): row for row in table.collect().iter_rows(named=True)}
        assert {query for query, _ in rows} == set(rankings)
        for (measure, k), spark_mean in spark_means.items():
            ours_mean = sum(rows[(query, k)][measure] for query in rankings) / len(rankings)
            assert ours_mean == pytest.approx(spark_mean, abs=PEER_TOLERANCE), (engine, measure, k)
        assert_same({(query, 3): rows[(query, 3)]["map"] for query in rankings}, spark_map_at_3)
    # trec_eval's AP@3 (over R) differs on this data: queries with more than 3 relevant documents
    trec = per_query(run, qrels, k=[3], measures="map", profile="spark_mllib", ap_denominator="relevant").collect()
    trec_means = trec.filter(pl.col("k") == 3)["map"].mean()
    assert trec_means != pytest.approx(spark_means[("map", 3)], abs=1e-3)


# The companion measures against the peers themselves, on the seeded random data of
# tests/test_peers.py (ties, graded and negative labels, unjudged and unretrieved documents,
# queries without relevant documents, cutoffs beyond the list): pytrec_eval (trec_eval's code)
# under the trec_eval profile, with -c, -J and -l, and ir_measures under its profile.


# trec_eval's measure (pytrec_eval's name) -> our column, and whether it has cutoffs
TREC_MEASURES = {"P": ("P", True), "recall": ("recall", True), "map_cut": ("map", True), "success": ("success", True)}
TREC_WHOLE = {"map": "map", "recip_rank": "recip_rank"}
MEASURES = "P,recall,map,recip_rank,success"


def ours_companions(run_rows: list[tuple], qrels_rows: list[tuple], engine: str, **options: object) -> dict:
    """{(measure, query_id, k): value} of the companion measures from the library."""
    run, qrels = frames(run_rows, qrels_rows)
    table = per_query(run, qrels, engine=engine, k=CUTOFFS, measures=MEASURES, **options).collect()  # type: ignore[arg-type]
    values = {}
    for row in table.iter_rows(named=True):
        for name in ("P", "recall", "map", "recip_rank", "success"):
            if row[name] is not None:
                values[(name, row["query_id"], row["k"])] = row[name]
    return values


def pytrec_eval_companions(run: dict, qrels: dict, **flags: object) -> dict:
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
def test_companion_measures_trec_eval_profile_match_pytrec_eval(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_companions(run, qrels)
    actual = ours_companions(run_rows, qrels_rows, engine, profile="trec_eval")
    assert {query for _, query, _ in expected} == {query for _, query, _ in actual}
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_companion_measures_all_queries_match_pytrec_eval_with_empty_runs(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_companions({**{query: {} for query in qrels}, **run}, qrels)
    actual = ours_companions(run_rows, qrels_rows, engine, profile="trec_eval", all_queries=True)
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_companion_measures_unjudged_drop_match_judged_docs_only(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_companions(run, qrels, judged_docs_only_flag=True)
    actual = ours_companions(run_rows, qrels_rows, engine, profile="trec_eval", unjudged="drop")
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_relevance_threshold_matches_relevance_level(engine: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    run, qrels = as_dicts(run_rows, qrels_rows)
    expected = pytrec_eval_companions(run, qrels, relevance_level=2)
    actual = ours_companions(run_rows, qrels_rows, engine, profile="trec_eval", relevance_threshold=2)
    assert_same(comparable(actual, expected), expected)


@pytest.mark.parametrize("seed", range(3))
def test_companion_measures_ir_measures_profile_match_ir_measures(engine: str, seed: int) -> None:
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
    actual = ours_companions(run_rows, qrels_rows, engine, profile="ir_measures")
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
    actual = ours_companions(run_rows, qrels_rows, engine, profile="ir_measures")
    assert_same(comparable(actual, expected), expected)
