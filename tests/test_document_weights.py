"""``--doc-weight-col``: per-document weights as TF-Ranking weighs them in its NDCG (each result's
gain times its weight in the DCG and in its ideal, sorted by weight x gain; a result weighing 0
masked out of the list) and in its mean (each list weighted by ``sum(w*g) / sum(g)``; a list
without gain by the mean of the others'). Expected values are TF-Ranking's own asserted ones,
copied with their inputs from its tests, and one case written out by hand; the weights' rules
are refused on every front in the same words."""

from __future__ import annotations

import math
import random
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import api
from pipeline.errors import InvalidInput, UsageError
from pipeline.registry import PROFILES, Evaluation
from pipeline.registry.base import SpecError
from tests.helpers import run_cli, selected

TOLERANCE = 1e-9
ROOT = Path(__file__).resolve().parent.parent


def log2p1(rank: float) -> float:
    return math.log2(rank + 1.0)


def _dcg(label: float, rank: int, weight: float = 1.0) -> float:
    """tensorflow_ranking/python/metrics_test.py's ``_dcg``: weight * (2^label - 1) / log2(rank + 1)."""
    return weight * (2.0**label - 1.0) / log2p1(rank)


# TF-Ranking's own cases, inputs and asserted values copied from
# github.com/tensorflow/ranking at 5b1d1338c1cb76507466d062e2d48bae57b17ac4 (None: no weights given, 1 each):
# (query, scores, labels, weights, {(measure, cutoff): expected, cutoff None: topn=None}, {measure: list weight})
TF_RANKING_CASES = [
    # metrics_impl_test.py NDCGMetricTest.test_ndcg_with_weights
    (
        "ndcg_with_weights",
        [1.0, 2.0, 3.0],
        [1.0, 2.0, 3.0],
        [4.0, 1.0, 1.0],
        {
            ("ndcg", None): ((2**3.0 - 1.0) / log2p1(1) + (2**2.0 - 1.0) / log2p1(2) + (2**1.0 - 1.0) / log2p1(3) * 4.0)
            / ((2**3.0 - 1.0) / log2p1(1) + (2**2.0 - 1.0) / log2p1(3) + (2**1.0 - 1.0) / log2p1(2) * 4.0)
        },
        {},
    ),
    # metrics_test.py test_make_normalized_discounted_cumulative_gain_fn, item-wise weights (m_weight, m_top)
    (
        "ndcg_item_wise",
        [1.0, 3.0, 2.0],
        [0.0, 0.0, 1.0],
        [1.0, 2.0, 3.0],
        {
            ("ndcg", None): (_dcg(0.0, 1, 2.0) + _dcg(1.0, 2, 3.0) + _dcg(0.0, 3, 1.0))
            / (_dcg(1.0, 1, 3.0) + _dcg(0.0, 2, 1.0) + _dcg(0.0, 3, 2.0)),
            ("ndcg", 1): _dcg(0.0, 1, 2.0) / _dcg(1.0, 1, 3.0),
        },
        {},
    ),
    # metrics_impl_test.py NDCGMetricTest.test_ndcg_weights_should_be_average_of_weighted_gain
    (
        "ndcg_weighted_gain",
        [1.0, 3.0, 2.0],
        [1.0, 0.0, 2.0],
        [3.0, 7.0, 9.0],
        {},
        {"ndcg": (1.0 * 3.0 + 3.0 * 9.0) / 4.0},
    ),
    # metrics_impl_test.py NDCGMetricTest.test_ndcg_with_all_zero_weights: NDCG 0, list weight 0
    (
        "ndcg_all_zero",
        [1.0, 2.0, 3.0],
        [1.0, 2.0, 3.0],
        [0.0, 0.0, 0.0],
        {("ndcg", None): 0.0},
        {"ndcg": 0.0, "P": 0.0},
    ),
    # metrics_impl_test.py NDCGMetricTest.test_ndcg_weights_should_be_1_when_no_rel_items (1 alone in its
    # batch; in a batch, the mean of the lists' with relevance: list_weight below)
    ("ndcg_no_rel", [1.0, 3.0, 2.0], [0.0, 0.0, 0.0], [2.0, 4.0, 4.0], {}, {}),
    # metrics_impl_test.py PrecisionMetricTest.test_precision_should_handle_topn (topn 1, 2 and 6)
    ("p_topn_1", [3.0, 2.0, 1.0], [1.0, 0.0, 1.0], None, {("P", 1): 1.0, ("P", 2): 1 / 2, ("P", 6): 2 / 3}, {}),
    ("p_topn_2", [3.0, 2.0, 1.0], [0.0, 1.0, 0.0], None, {("P", 1): 0.0, ("P", 2): 1 / 2, ("P", 6): 1 / 3}, {}),
    ("p_topn_3", [3.0, 2.0, 1.0], [0.0, 0.0, 1.0], None, {("P", 1): 0.0, ("P", 2): 0.0, ("P", 6): 1 / 3}, {}),
    # metrics_impl_test.py PrecisionMetricTest.test_precision_weights_should_be_avg_of_weights_of_rel_items and
    # MeanAveragePrecisionMetricTest.test_map_weights_should_be_avg_of_weights_of_rel_items (the same inputs); its
    # AP written out from MeanAveragePrecisionMetric._compute_impl: sum of P@i * w_i over the relevant ranks
    # (ranked: 7 at rank 1, not relevant; 29 at rank 2; 13 at rank 3) / sum of the relevant weights
    (
        "p_weights_avg",
        [1.0, 3.0, 2.0],
        [1.0, 0.0, 2.0],
        [13.0, 7.0, 29.0],
        {("map", None): (1 / 2 * 29.0 + 2 / 3 * 13.0) / (29.0 + 13.0), ("map", 2): (1 / 2 * 29.0) / (29.0 + 13.0)},
        {"P": (13.0 + 29.0) / 2.0, "map": (13.0 + 29.0) / 2.0},
    ),
    # metrics_impl_test.py MeanAveragePrecisionMetricTest.test_map_should_handle_topn (topn 1, 2 and 6)
    (
        "ap_topn_1",
        [3.0, 2.0, 1.0],
        [1.0, 0.0, 2.0],
        None,
        {("map", 1): 1 / 2, ("map", 2): 1 / 2, ("map", 6): (1 + 2 / 3) / 2},
        {},
    ),
    ("ap_topn_2", [3.0, 2.0, 1.0], [0.0, 1.0, 0.0], None, {("map", 1): 0.0, ("map", 2): 1 / 2, ("map", 6): 1 / 2}, {}),
    ("ap_topn_3", [3.0, 2.0, 1.0], [0.0, 0.0, 1.0], None, {("map", 1): 0.0, ("map", 2): 0.0, ("map", 6): 1 / 3}, {}),
    # metrics_impl_test.py MeanAveragePrecisionMetricTest.test_map_should_treat_graded_relevance_as_binary_relevance
    (
        "ap_graded",
        [3.0, 4.0, 1.0, 2.0],
        [0.0, 2.0, 1.0, 3.0],
        None,
        {("map", None): (1.0 + 2.0 / 3.0 + 3.0 / 4.0) / 3.0},
        {},
    ),
    # metrics_impl_test.py PrecisionMetricTest.test_precision_weights_should_ignore_topn
    ("p_weights_topn", [1.0, 3.0, 2.0], [1.0, 1.0, 0.0], [3.0, 7.0, 15.0], {("P", 1): 1.0}, {"P": (3.0 + 7.0) / 2.0}),
    # metrics_impl_test.py MRRMetricTest.test_mrr_should_be_single_value, test_mrr_should_be_0_when_no_rel_item_in_topn
    # and HitsMetricTest's same inputs (Hits of the whole list: at 6, past its 3 results)
    (
        "mrr_single",
        [1.0, 3.0, 2.0],
        [0.0, 0.0, 1.0],
        None,
        {("recip_rank", None): 1 / 2, ("recip_rank", 1): 0.0, ("success", 1): 0.0, ("success", 6): 1.0},
        {},
    ),
    # MRRMetricTest.test_mrr_should_handle_topn and HitsMetricTest.test_hits_should_handle_topn (topn 1, 2 and 6)
    *(
        (
            f"mrr_topn_{first}",
            [3.0, 2.0, 1.0],
            [1.0 if i == first else 0.0 for i in range(3)],
            None,
            {
                **{("recip_rank", k): (1 / (first + 1) if first < k else 0.0) for k in (1, 2, 6)},
                **{("success", k): (1.0 if first < k else 0.0) for k in (1, 2, 6)},
            },
            {},
        )
        for first in range(3)
    ),
    # MRRMetricTest.test_mrr_weights_should_be_average_weight_of_rel_items (and HitsMetricTest's): its two lists
    (
        "mrr_weights_1",
        [1.0, 3.0, 2.0],
        [1.0, 0.0, 0.0],
        [2.0, 5.0, 1.0],
        {("recip_rank", None): 1 / 3},
        {"recip_rank": 2.0},
    ),
    (
        "mrr_weights_2",
        [1.0, 2.0, 3.0],
        [0.0, 1.0, 1.0],
        [1.0, 2.0, 3.0],
        {("recip_rank", None): 1.0},
        {"recip_rank": (2.0 + 3.0) / 2.0, "success": (2.0 + 3.0) / 2.0},
    ),
    # RecallMetricTest.test_recall_should_ignore_masked_items (topn 3): the mask as a weight of 0; TF-Ranking's
    # recall divides by the list's relevant results (2), not the judged ones (3)
    (
        "recall_masked",
        [5.0, 4.0, 3.0, 2.0, 1.0],
        [0.0, 1.0, 1.0, 0.0, 1.0],
        [1.0, 0.0, 1.0, 1.0, 1.0],
        {("recall", 2): 1 / 2},
        {},
    ),
    # RecallMetricTest.test_recall_should_be_single_value_per_list (topn 2) and test_recall_should_handle_topn
    ("recall_list_1", [1.0, 3.0, 2.0], [1.0, 0.0, 1.0], None, {("recall", 2): 1 / 2, ("recall", None): 1.0}, {}),
    ("recall_list_2", [1.0, 3.0, 4.0], [0.0, 1.0, 1.0], None, {("recall", 2): 1.0}, {}),
    (
        "recall_topn",
        [1.0, 3.0, 2.0],
        [0.0, 0.0, 1.0],
        None,
        {("recall", 1): 0.0, ("recall", 2): 1.0, ("recall", 6): 1.0},
        {},
    ),
    # RecallMetricTest.test_recall_weights_should_be_avg_of_rel_items, ..._should_ignore_graded_relevance
    ("recall_weights", [1.0, 3.0, 2.0], [1.0, 1.0, 0.0], [3.0, 9.0, 2.0], {}, {"recall": (3.0 + 9.0) / 2.0}),
    ("recall_graded", [1.0, 3.0, 2.0], [4.0, 0.0, 2.0], [3.0, 9.0, 2.0], {}, {"recall": (3.0 + 2.0) / 2.0}),
    # MRRMetricTest.test_mrr_weights_should_be_regardless_of_topn (topn 2; a weight of 0 masks its result)
    ("mrr_weights_topn", [3.0, 2.0, 1.0], [1.0, 0.0, 1.0], [2.0, 0.0, 5.0], {}, {"recip_rank": (5.0 + 2.0) / 2.0}),
]


def _case_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    run, qrels = [], []
    for query, scores, labels, weights, _, _ in TF_RANKING_CASES:
        for i, (score, label) in enumerate(zip(scores, labels, strict=True)):
            run.append((query, f"d{i}", score, 1.0 if weights is None else weights[i]))
            qrels.append((query, f"d{i}", int(label)))
    return (
        pl.DataFrame(run, schema=["query_id", "doc_id", "score", "w"], orient="row"),
        pl.DataFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row"),
    )


def list_weights(relevance: Callable[[float], float]) -> dict[str, float]:
    """TF-Ranking's ``_per_example_weights_to_per_list_weights`` over the cases as one batch,
    written out from its source: sum(w * rel) / sum(rel); a list without relevance takes the
    mean of the others' (1 when none has any); a list whose weights sum to 0 weighs 0."""
    own, zero = {}, set()
    for query, _, labels, weights, _, _ in TF_RANKING_CASES:
        weights = weights or [1.0] * len(labels)
        rel = [relevance(label) if weight > 0 else 0.0 for label, weight in zip(labels, weights, strict=True)]
        if sum(weights) == 0:
            zero.add(query)
        own[query] = sum(w * r for w, r in zip(weights, rel, strict=True)) / sum(rel) if sum(rel) else None
    counted = [weight for query, weight in own.items() if weight is not None and query not in zero]
    average = sum(counted) / len(counted) if counted else 1.0
    return {q: 0.0 if q in zero else average if weight is None else weight for q, weight in own.items()}


TF_RANKING = PROFILES["tfranking"].evaluation(
    cutoffs=(1, 2, 6), measures=("ndcg", "P", "recall", "map", "recip_rank", "success"), doc_weight_col="w"
)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_tf_ranking_s_weighted_ndcg_p_ap_and_list_weights(engine: str) -> None:
    run, qrels = _case_frames()
    result = api.evaluate(run, qrels, evaluation=TF_RANKING, engine=engine)
    values = {(row["query_id"], row["k"]): row for row in result.per_query.iter_rows(named=True)}
    weights = {row["query_id"]: row for row in result.query_weights.iter_rows(named=True)}
    expected_weights = {
        "ndcg": list_weights(lambda label: 2.0**label - 1.0),
        **{m: list_weights(lambda label: label >= 1) for m in ("P", "recall", "map", "recip_rank", "success")},
    }
    for query, _, _, _, expected, asserted_weights in TF_RANKING_CASES:
        for (measure, k), value in expected.items():
            assert values[(query, k)][measure] == pytest.approx(value, abs=TOLERANCE), (query, measure, k)
        for measure, column in [("ndcg", "weight")] + [
            (m, f"weight_{m}") for m in ("P", "recall", "map", "recip_rank", "success")
        ]:
            assert weights[query][column] == pytest.approx(expected_weights[measure][query], abs=TOLERANCE)
            if measure in asserted_weights:
                assert weights[query][column] == pytest.approx(asserted_weights[measure], abs=TOLERANCE), query
    # the summary's means: sum(list weight * value) / sum(list weight), each measure by its own list weight
    for measure, k in (("ndcg", None), ("P", 2), ("recall", 2), ("map", None), ("recip_rank", 2), ("success", 1)):
        rows = result.per_query.filter(pl.col("k").is_null() if k is None else pl.col("k") == k)
        weighed = expected_weights[measure]
        mean = sum(weighed[q] * x for q, x in rows.select("query_id", measure).iter_rows()) / sum(weighed.values())
        summary = result.summary.filter(pl.col("k").is_null() if k is None else pl.col("k") == k)
        assert summary[measure][0] == pytest.approx(mean, abs=TOLERANCE), (measure, k)


def test_one_case_written_out_and_engines_agree_on_random_queries(tmp_path: Path) -> None:
    """Arithmetic for one query, then Polars and DuckDB over 300 random queries, one evaluation each."""
    # one query, linear gains: ranked c (label 2, weight 0.5), b (weight 0: masked, no rank), a (label 1, weight 2)
    run = pl.DataFrame(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 3.0], "w": [2.0, 0.0, 0.5]}
    )
    qrels = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 3, 2]})
    result = api.evaluate(run, qrels, ideal="retrieved", doc_weight_col="w", k=[1])
    row = result.per_query.filter(pl.col("k").is_null()).row(0, named=True)
    dcg = 0.5 * 2 / math.log2(2) + 2.0 * 1 / math.log2(3)  # c at rank 1, a at rank 2
    idcg = 2.0 * 1 / math.log2(2) + 0.5 * 2 / math.log2(3)  # by weight x gain: a (2), then c (1)
    assert row["dcg"] == pytest.approx(dcg, abs=TOLERANCE) and row["idcg"] == pytest.approx(idcg, abs=TOLERANCE)
    assert row["ndcg"] == pytest.approx(dcg / idcg, abs=TOLERANCE)
    assert result.query_weights["weight"][0] == pytest.approx((2.0 * 1 + 0.5 * 2) / 3, abs=TOLERANCE)

    rng = random.Random(50)
    rows, judged = [], []
    for q in range(300):
        for d in range(rng.randint(1, 12)):
            rows.append((f"q{q}", f"d{d}", float(rng.randint(0, 6)), rng.randint(0, 16) / 8))
            if rng.random() < 0.8:
                judged.append((f"q{q}", f"d{d}", rng.randint(0, 3)))
    run = pl.DataFrame(rows, schema=["query_id", "doc_id", "score", "w"], orient="row")
    qrels = pl.DataFrame(judged, schema=["query_id", "doc_id", "relevance"], orient="row")
    measures = ["ndcg", "P", "recall", "map", "recip_rank", "success", "average_precision_score"]
    options = {"doc_weight_col": "w", "gain": "exponential", "k": [1, 3, 10], "measures": measures}
    polars_result = api.evaluate(run, qrels, engine="polars", **options)
    duckdb_result = api.evaluate(run, qrels, engine="duckdb", **options)
    for table in ("per_query", "summary"):
        ours, theirs = getattr(polars_result, table), getattr(duckdb_result, table)
        assert ours.columns == theirs.columns and ours.height == theirs.height
        for column in (
            "cg",
            "dcg",
            "idcg",
            "ndcg",
            "P",
            "recall",
            "map",
            "recip_rank",
            "success",
            "average_precision_score",
        ):
            assert ((ours[column] - theirs[column]).abs() < TOLERANCE).all(), (table, column)
            assert ours[column].is_null().to_list() == theirs[column].is_null().to_list()


def test_weights_refused_on_every_front(tmp_path: Path) -> None:
    """Bad weights (exit 3) and what weights do not weigh (exit 2): CLI, API, SQL (Spark: test_query_weights)."""
    run_path, qrels_path = tmp_path / "run.csv", tmp_path / "qrels.csv"
    pl.DataFrame(
        {
            "query_id": ["q"] * 4,
            "doc_id": ["a", "b", "c", "d"],
            "score": [4.0, 3.0, 2.0, 1.0],
            "w": [1.0, -1.0, 2.0, -3.0],
        }
    ).write_csv(run_path)
    pl.DataFrame({"query_id": ["q"] * 2, "doc_id": ["a", "b"], "relevance": [1, 0]}).write_csv(qrels_path)
    words = (
        f"{run_path}: 2 row(s) with a negative weight in column 'w', first: query 'q', document 'b', "
        "weight -1.0; a weight is a finite number >= 0, one per result: fix or remove those rows"
    )
    base = ["evaluate", "--run", run_path, "--qrels", qrels_path, "--ideal", "retrieved", "--doc-weight-col"]
    for engine in ("polars", "duckdb"):
        done = run_cli(*base, "w", "--engine", engine)
        assert done.returncode == 3 and words in done.stderr, done.stderr
    done = run_cli("validate", "--run", run_path, "--qrels", qrels_path, "--doc-weight-col", "w")
    assert done.returncode == 3 and words in done.stdout, done.stdout
    for call in (api.evaluate, api.check):
        with pytest.raises(
            InvalidInput, match="2 row\\(s\\) with a negative weight in column 'w', first: query 'q', document 'b'"
        ):
            call(str(run_path), str(qrels_path), doc_weight_col="w")
    for extra, said in (
        ([], "no weight column 'weight'; columns found: 'query_id', 'doc_id', 'score', 'w'"),
        (["--measures", "ndcg,P,map,bpref"], None),
    ):
        done = run_cli(*base, "weight" if not extra else "w", *extra)
        if said:
            assert done.returncode == 3 and said in done.stderr, done.stderr
        else:
            assert done.returncode == 2 and "bpref would not be weighted" in done.stderr, done.stderr
    # what --doc-weight-col sets where left out is refused when given otherwise, the default too
    # (the ideal and the denominator were taken over silently)
    for flag, value in (("--ideal", "judged-cut-at-hits"), ("--ideal", "judged"), ("--precision-denominator", "k")):
        done = run_cli(*base[:-3], "--doc-weight-col", "w", flag, value)
        assert done.returncode == 2 and f"{flag} {value} contradicts --doc-weight-col" in done.stderr, done.stderr
    with pytest.raises(UsageError, match="--ideal judged contradicts --doc-weight-col"):
        api.make_evaluation(doc_weight_col="w", ideal="judged")
    with pytest.raises(SpecError, match="ties average"):
        Evaluation(ideal="retrieved", ties="average", doc_weight_col="w")
    with pytest.raises(UsageError, match="--query-weights and --doc-weight-col both weigh the means"):
        api.evaluate(str(run_path), str(qrels_path), ideal="retrieved", doc_weight_col="w", query_weights=str(run_path))
    # what would take plain means of weighted per-query values: gdeval's and ndeval's amean, compare, report
    done = run_cli(*base, "w", "--output-format", "ndeval", "--profile", "ndeval")
    assert done.returncode == 2 and "it cannot go with --doc-weight-col" in done.stderr, done.stderr
    good = tmp_path / "good.csv"
    pl.read_csv(run_path).with_columns(pl.col("w").abs()).write_csv(good)
    out = tmp_path / "out"
    assert (
        run_cli("evaluate", "--run", good, "--qrels", qrels_path, "--doc-weight-col", "w", "--out", out).returncode == 0
    )
    # (ndcg compare weighs runs and outputs by their list weights: tests/test_compare_weights.py)
    refused = "evaluated with --doc-weight-col: ndcg {} does not weigh their queries by TF-Ranking's list weights"
    done = run_cli("report", out, "--html", tmp_path / "report.html")
    assert done.returncode == 2 and refused.format("report") in done.stderr, done.stderr
    # ndcg sql prints the weighted statements over the run view's doc_weight (test_ndcg_sql_prints_...), not the
    # qrels' join
    done = run_cli("sql", "--doc-weight-col", "w", "--doc-weights-in", "qrels", "--ideal", "retrieved")
    assert done.returncode == 2 and "doc_weights_in qrels is not read by ndcg sql" in done.stderr, done.stderr
    # (sql/ndcg.sql and the table macros weigh and refuse: the next tests)


def _summary_of_ndcg_sql(script: list[str]) -> pl.DataFrame:
    """What ``script`` (its lines, ``.read sql/ndcg.sql`` last) prints in the duckdb CLI, as a table."""
    done = subprocess.run(
        [str(Path(sys.executable).parent / "duckdb"), "-csv"],
        input="\n".join(script) + "\n", cwd=ROOT, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
    return pl.read_csv(done.stdout.encode(), null_values=["NULL", ""])


def weighted_lists(seed: int, queries: int, results: int, top_score: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A run of random tied scores (0 to ``top_score``) and weights (0 to 2, by quarters) and its
    judgments (-1 to 3): every result of q03 weighs 0; q05 is not judged (evaluated, its list
    weight the mean of the others')."""
    rng = random.Random(seed)
    rows = [(f"q{q:02d}", f"d{d}") for q in range(queries) for d in range(results)]
    run = pl.DataFrame(
        {
            "query_id": [q for q, _ in rows],
            "doc_id": [d for _, d in rows],
            "score": [float(rng.randint(0, top_score)) for _ in rows],
            "w": [0.0 if q == "q03" else rng.randint(0, 8) / 4 for q, _ in rows],
        }
    )
    labels = [rng.randint(-1, 3) for _ in rows]
    qrels = pl.DataFrame({"query_id": [q for q, _ in rows], "doc_id": [d for _, d in rows], "relevance": labels})
    return run, qrels.filter(pl.col("query_id") != "q05")


# the macros' arguments for TF-Ranking's conventions (the command line's profile tfranking)
MACRO_TFRANKING = (
    "gain := 'exponential', ideal := 'retrieved', precision_denominator := 'min-k-retrieved', "
    "queries_without_judgments := 'evaluate', relevance_threshold := 1"
)


def test_the_table_macros_weigh_and_refuse_as_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ndcg_summary and ndcg_per_query with doc_weight_col: the polars engine's numbers (its
    list-weighted means) from Parquet and from CSV text, and each refusal in the command line's
    words, the option spelled as the macros' parameter."""
    monkeypatch.chdir(ROOT)
    run, qrels = weighted_lists(seed=29, queries=12, results=6, top_score=3)
    run.write_parquet(run_path := tmp_path / "run.parquet")
    qrels.write_parquet(qrels_path := tmp_path / "qrels.parquet")
    connection = duckdb.connect()
    connection.execute((ROOT / "sql/generated/macros.sql").read_text())
    measures = ["ndcg", "P", "map", "average_precision_score"]
    options = {"profile": "tfranking", "k": [2, 4], "measures": ",".join(measures), "doc_weight_col": "w"}
    arguments = f"ks := [2, 4], measures := {measures}, {MACRO_TFRANKING}, doc_weight_col := 'w'"

    def by_macro(macro: str, run: object, qrels: object, given: str = arguments) -> pl.DataFrame:
        return selected(connection, f"select * from {macro}('{run}', '{qrels}', {given})")

    expected = api.evaluate(str(run_path), str(qrels_path), **options)  # type: ignore[arg-type]
    for found, wanted in (
        (by_macro("ndcg_summary", run_path, qrels_path), expected.summary),
        (by_macro("ndcg_per_query", run_path, qrels_path), expected.per_query),
    ):
        assert found.columns == wanted.columns and found.height == wanted.height
        for column in found.columns[1:]:
            got, want = found[column].cast(pl.Float64), wanted[column].cast(pl.Float64)
            assert got.is_null().to_list() == want.is_null().to_list(), column
            assert ((got - want).abs().fill_null(0) < TOLERANCE).all(), column
    # CSV text, the documentation's example (docs/conventions.md): q1 (TF-Ranking's own
    # test_ndcg_with_weights) ranks c (gain 7), b (3), a (1, weight 4), its ideal c, a, b by weight x
    # gain; q2's y weighs 0 and leaves, z (gain 3) ranks 2nd; q3 has no relevance: NDCG 0, its list
    # weight the mean of the others' (14/11 for q1, 1 for q2)
    text = "docs/conventions/doc_weights.csv", "docs/conventions/doc_weights_qrels.csv"
    summary = by_macro("ndcg_summary", *text, f"ks := [2], {MACRO_TFRANKING}, doc_weight_col := 'weight'")
    q1, q2 = (7 + 3 / log2p1(2)) / (7 + 4 / log2p1(2)), (3 / log2p1(2)) / 3
    weights = [14 / 11, 1.0, (14 / 11 + 1.0) / 2]
    assert summary.filter(pl.col("k") == 2)["ndcg"][0] == pytest.approx(
        (weights[0] * q1 + weights[1] * q2 + 0.0) / sum(weights), abs=TOLERANCE
    )
    # the same under a session that raises on a division by zero (the list weights divided every
    # list's sums, the gainless' too), and with the weights under a name of the macros' own text
    # columns: it took the number of fields of each line (4) for every weight
    connection.execute("SET ieee_floating_point_ops = false")
    assert_frame_equal(
        by_macro("ndcg_summary", *text, f"ks := [2], {MACRO_TFRANKING}, doc_weight_col := 'weight'"), summary
    )
    connection.execute("RESET ieee_floating_point_ops")
    internal = tmp_path / "internal.csv"
    pl.read_csv(ROOT / text[0]).rename({"weight": "ndcg_fields"}).write_csv(internal)
    pl.read_csv(internal).write_parquet(internal_parquet := tmp_path / "internal.parquet")
    for run_given in (internal, internal_parquet):
        named = by_macro(
            "ndcg_summary", run_given, text[1], f"ks := [2], {MACRO_TFRANKING}, doc_weight_col := 'ndcg_fields'"
        )
        assert_frame_equal(named, summary)
    # a table's columns so named, not read, are no text's either (they failed to bind, weights or not)
    extra = run.with_columns(ndcg_line=pl.col("score").cast(pl.Int64), ndcg_weight_text=pl.lit(5))
    extra = extra.with_columns(NDCG_FIELDS=pl.lit("x"), ndcg_absent=pl.lit("a"))  # DuckDB's names know no case
    extra.write_parquet(extra_path := tmp_path / "extra.parquet")
    plain = api.evaluate(str(run_path), str(qrels_path), k=[2, 4]).summary
    assert_frame_equal(by_macro("ndcg_summary", extra_path, qrels_path, "ks := [2, 4]"), plain, check_dtypes=False)

    bad = tmp_path / "bad.csv"
    bad.write_text("query_id,doc_id,score,w,s\nq1,a,4,1,x\nq1,b,3,-1,x\nq1,c,2,2,x\nq1,d,1,-3,x\n")
    run.with_columns(w=pl.lit(0.0)).write_parquet(zero := tmp_path / "zero.parquet")
    cases = [(bad, "w"), (bad, "nope"), (bad, "s"), (bad, "score"), (zero, "w"), ("data/trec/run.txt", "w")]
    cases += [(bad, "query_id"), (bad, " ")]
    for run_given, column in cases:
        with pytest.raises((InvalidInput, UsageError)) as refused:
            api.evaluate(str(run_given), str(qrels_path), **{**options, "doc_weight_col": column})  # type: ignore[arg-type]
        said = str(refused.value).replace("name it with --doc-weight-col", "name it with doc_weight_col := '...'")
        said = said.replace("--doc-weight-col", "doc_weight_col")
        with pytest.raises(duckdb.Error) as macro:
            by_macro("ndcg_summary", run_given, qrels_path, arguments.replace("'w'", f"'{column}'"))
        assert str(macro.value) == f"Invalid Input Error: ndcg_summary: {said}"
    # a macro's parameter left at its default is not taken as TF-Ranking's, as sql/ndcg.sql's variable
    with pytest.raises(duckdb.Error) as macro:
        by_macro("ndcg_per_query", run_path, qrels_path, "doc_weight_col := 'w'")
    assert str(macro.value) == (
        "Invalid Input Error: ndcg_per_query: doc_weight_col 'w' needs ideal retrieved (TF-Ranking weighs the list "
        "it is given, as given), got ideal judged; ideal := 'retrieved'"
    )


@pytest.mark.subprocess
def test_ndcg_sql_weighs_and_refuses_as_the_command_line(tmp_path: Path) -> None:
    """sql/ndcg.sql with doc_weight_col, in the duckdb CLI: the summary of the polars engine (its
    list-weighted means), and each refusal in the command line's words, the option spelled as
    the script's variable; one CLI process reads every case in turn."""
    run, qrels = weighted_lists(seed=23, queries=24, results=7, top_score=4)
    run = run.with_columns(s=pl.lit("x"))
    paths = {name: tmp_path / f"{name}.parquet" for name in ("run", "qrels", "bad", "zero")}
    run.write_parquet(paths["run"])
    qrels.write_parquet(paths["qrels"])
    run.with_columns(w=pl.when(pl.col("doc_id") == "d3").then(-1.0).otherwise("w")).write_parquet(paths["bad"])
    run.with_columns(w=pl.lit(0.0)).write_parquet(paths["zero"])
    options = {"k": [3, 5], "measures": "ndcg,P,recall,map,recip_rank,success,average_precision_score"}
    options |= {"profile": "tfranking"}
    options |= {"doc_weight_col": "w"}
    tfranking = {"gain": "'exponential'", "ideal": "'retrieved'", "precision_denominator": "'min-k-retrieved'"}
    tfranking |= {
        "queries_without_judgments": "'evaluate'",
        "relevance_threshold": "1",
        "doc_weight_col": "'w'",
        "measures": "['ndcg', 'P', 'recall', 'map', 'recip_rank', 'success', 'average_precision_score']",
    }

    def words_of(call: Callable[[], object], script_option: str = "doc_weight_col") -> str:
        with pytest.raises((InvalidInput, UsageError)) as refused:
            call()
        said = str(refused.value).replace("name it with --doc-weight-col", "name it with SET VARIABLE doc_weight_col")
        return said.replace("--doc-weight-col", script_option)

    cases: list[tuple[str, dict[str, str], str | None]] = [("run", {}, None)]
    for column in ("w", "nope", "s", "score"):
        words = words_of(
            lambda c=column: api.evaluate(str(paths["bad"]), str(paths["qrels"]), **{**options, "doc_weight_col": c})
        )
        cases.append(("bad", {"doc_weight_col": f"'{column}'"}, words))
    cases.append(("zero", {}, words_of(lambda: api.evaluate(str(paths["zero"]), str(paths["qrels"]), **options))))
    for name, value, given in (
        ("tie_bounds", "true", True),
        ("ties", "'average'", "average"),
        ("measures", "['err']", "err"),
    ):
        words = words_of(
            lambda n=name, g=given: api.evaluate(str(paths["run"]), str(paths["qrels"]), **{**options, n: g})
        )
        cases.append(("run", {name: value}, words))
    unset_ideal = (
        "doc_weight_col 'w' needs ideal retrieved (TF-Ranking weighs the list it is given, as given), got ideal "
        "judged; SET VARIABLE ideal = 'retrieved'"
    )
    cases.append(("run", {"ideal": "NULL"}, unset_ideal))
    both = (
        "query_weights_path and doc_weight_col both weigh the means (the second by TF-Ranking's list weights): set "
        "one of them"
    )
    cases.append(("run", {"query_weights_path": f"'{paths['qrels']}'"}, both))
    # the refusals before any step, in one connection: the files sql/ndcg.sql reads first
    connection = duckdb.connect()
    first_files = ("input_columns.sql", "inputs.sql", "aligned_inputs.sql", "generated/derived_variables.sql")
    for path, changes, words in cases[1:]:
        if path == "zero":
            continue  # found as the means are taken, after the steps: in the CLI below
        settings = {"ks": "[3, 5]", "qrels_path": f"'{paths['qrels']}'", "run_path": f"'{paths[path]}'"}
        for name, value in {**settings, **tfranking, **changes}.items():
            connection.execute(f"RESET VARIABLE {name}" if value == "NULL" else f"SET VARIABLE {name} = {value}")
        for file in (*first_files, "generated/refusals.sql"):
            connection.execute((ROOT / "sql" / file).read_text())
        with pytest.raises(duckdb.Error) as refused:
            connection.execute("select count(refused) from refusals").fetchall()
        assert str(refused.value).removeprefix("Invalid Input Error: ") == words
        for name in changes:
            connection.execute(f"RESET VARIABLE {name}")
    # the means' 0/0, found as they are taken (sql/list_weights.sql), over the steps' views as the
    # zero run makes them: every result weighs 0, every evaluated query's ndcg counted
    connection.execute(f"SET VARIABLE run_path = '{paths['zero']}'")
    connection.execute("create or replace temp table per_query as select distinct query_id, 0.0 as ndcg from run")
    connection.execute(
        "create or replace temp view judgments as select query_id, doc_id, 1.0 as label, 1.0 as gain from qrels"
    )
    connection.execute((ROOT / "sql/list_weights.sql").read_text())
    with pytest.raises(duckdb.Error) as refused:
        connection.execute("select * from list_weights").fetchall()
    assert str(refused.value).removeprefix("Invalid Input Error: ") == next(w for p, _, w in cases if p == "zero")
    # weights whose products leave float64's normal numbers, judged as the engines judge them
    # (pipeline.weights.check_weighted_values_representable) over the same tables
    from pipeline.weights import check_weighted_values_representable

    tiny, huge = 5e-324, float("inf")
    for cg, idcg, weight in ((1.0, 2.0, huge), (huge, 2.0, 1.0), (1.0, tiny, 1.0), (1.0, 2.0, tiny)):
        per_query = pl.DataFrame(
            {"query_id": ["q1", "q2"], "k": [None, None], "cg": [1.0, cg], "dcg": [1.0, 1.0], "idcg": [2.0, idcg]},
            schema_overrides={"k": pl.Int64},
        ).with_columns(ndcg=pl.col("dcg") / pl.col("idcg"))
        weights = pl.DataFrame({"query_id": ["q1", "q2"], "weight": [1.0, weight], "weight_P": [1.0, weight]})
        with pytest.raises(InvalidInput) as judged:
            check_weighted_values_representable(per_query, weights, "w", str(paths["zero"]))
        connection.register("given_per_query", per_query)
        connection.register("given_weights", weights)
        connection.execute("create or replace temp table per_query as from given_per_query")
        connection.execute("drop view if exists list_weights")
        connection.execute(
            "create or replace temp view list_weights as select query_id, weight, weight_P as weight_relevant, "
            "1.0 as weight_listed from given_weights"
        )
        connection.execute((ROOT / "sql/list_weight_range.sql").read_text())
        connection.execute((ROOT / "sql/list_weighted_summary.sql").read_text())
        with pytest.raises(duckdb.Error) as refused:
            connection.execute("select * from list_weighted_summary").fetchall()
        assert str(refused.value).removeprefix("Invalid Input Error: ") == str(judged.value)
    # the weighed summary in the duckdb CLI
    script = ["SET VARIABLE ks = [3, 5];", f"SET VARIABLE qrels_path = '{paths['qrels']}';"]
    script += [f"SET VARIABLE {name} = {value};" for name, value in tfranking.items()]
    script += [f"SET VARIABLE run_path = '{paths['run']}';", ".read sql/ndcg.sql"]
    printed = _summary_of_ndcg_sql(script)
    expected = api.evaluate(str(paths["run"]), str(paths["qrels"]), **options).summary
    assert printed.columns == expected.columns and printed.height == expected.height
    for column in (
        "queries",
        "cg",
        "dcg",
        "idcg",
        "ndcg",
        "P",
        "map",
        "recip_rank",
        "success",
        "average_precision_score",
    ):
        found, wanted = printed[column].cast(pl.Float64), expected[column].cast(pl.Float64)
        assert found.is_null().to_list() == wanted.is_null().to_list(), column
        assert ((found - wanted).abs().fill_null(0) < TOLERANCE).all(), column


def test_a_run_s_weight_column_named_relevance_is_no_label() -> None:
    """With judgments of their own, a run's weight column named "relevance" took the labels' place
    when the list weights were summed: the documentation's example gave NDCG@2 0.4975 for 0.5337."""
    run = pl.read_csv(ROOT / "docs/conventions/doc_weights.csv")
    qrels = pl.read_csv(ROOT / "docs/conventions/doc_weights_qrels.csv")
    options = {"profile": "tfranking", "k": [2], "measures": "ndcg,P,map"}
    for engine in ("polars", "duckdb"):
        named = {
            column: api.evaluate(run.rename({"weight": column}), qrels, engine=engine, doc_weight_col=column, **options)
            for column in ("weight", "relevance")
        }
        assert_frame_equal(named["relevance"].summary, named["weight"].summary)
        assert_frame_equal(named["relevance"].query_weights, named["weight"].query_weights)
        # nor is a rank column of text an input order where none is read (DuckDB's reading cast it: 'zz' failed)
        ranked = api.evaluate(
            run.with_columns(rank=pl.lit("zz")), qrels, engine=engine, doc_weight_col="weight", **options
        )
        assert_frame_equal(ranked.summary, named["weight"].summary)


def test_a_weight_column_read_as_another_column(tmp_path: Path) -> None:
    """The weight column named like a column read for something else: the inline labels and the
    input ranks are still read (it weighed them, then was dropped: an internal error, and input
    order ties silently by arrival), the query, document and score columns are refused under the
    names the user gave them, and a missing column is reported with the file's names."""
    qrels = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    # tied scores: the input ranks put b first (label 0), arrival a (label 1)
    run = pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [1.0, 1.0], "rank": [2, 1]})
    for engine in ("polars", "duckdb"):
        ranked = api.evaluate(run, qrels, engine=engine, doc_weight_col="rank", ties="input-order", k=[1])
        row = ranked.per_query.filter(pl.col("k") == 1).row(0, named=True)
        assert row["dcg"] == 0.0 and row["idcg"] == pytest.approx(2.0 * 1.0, abs=TOLERANCE), (engine, row)
    # inline labels weighing themselves: a (label 2) at rank 1, b (label 1) at 2, linear gains
    labelled = pl.DataFrame(
        {"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0], "lab": [2.0, 1.0], "s": [0.0, 0.0]}
    )
    inline = api.evaluate(labelled, None, doc_weight_col="lab", label_col="lab", k=[2])
    row = inline.per_query.filter(pl.col("k").is_null()).row(0, named=True)
    assert row["dcg"] == pytest.approx(2.0 * 2.0 + 1.0 * 1.0 / math.log2(3), abs=TOLERANCE), row
    assert inline.query_weights["weight"][0] == pytest.approx((2.0 * 2.0 + 1.0 * 1.0) / 3.0, abs=TOLERANCE)
    path = tmp_path / "run.csv"
    labelled.rename({"score": "sim"}).write_csv(path)
    done = run_cli("evaluate", "--run", path, "--score-col", "sim", "--label-col", "lab", "--doc-weight-col", "sim")
    assert done.returncode == 3 and "--doc-weight-col names 'sim', a column read as another" in done.stderr, done.stderr
    done = run_cli(
        "evaluate", "--run", path, "--score-col", "sim", "--label-col", "lab", "--doc-weight-col", "relevance"
    )
    said = "no weight column 'relevance'; columns found: 'query_id', 'doc_id', 'sim', 'lab', 's'"
    assert done.returncode == 3 and said in done.stderr, done.stderr


def test_weights_whose_products_leave_float64_are_refused() -> None:
    """A weight so large that weight x gain (or a sum of them) overflows gave NaN NDCG and means
    (exit 0), and a subnormal one (5e-324) an NDCG of 0.667 for 0.860: both refused, naming the
    column and the query; weights near either end of the normal range are computed."""
    qrels = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 2, 0]})

    def run(weight: float) -> pl.DataFrame:
        return pl.DataFrame(
            {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0], "w": [weight] * 3}
        )

    expected = (1.0 + 2.0 / math.log2(3)) / (2.0 + 1.0 / math.log2(3))  # a (1) then b (2); ideal b, a
    for engine in ("polars", "duckdb"):
        for weight in (1e300, 1e-300):
            result = api.evaluate(run(weight), qrels, engine=engine, doc_weight_col="w", measures=["ndcg"])
            assert result.per_query["ndcg"][0] == pytest.approx(expected, rel=1e-12), (engine, weight)
        too_large = "column 'w' are too large: weight x gain overflows Float64 in query 'q'"
        with pytest.raises(InvalidInput, match=too_large):
            api.evaluate(run(1e308), qrels, engine=engine, doc_weight_col="w", measures=["ndcg", "map"])
        too_small = "column 'w' are too small: weight x gain is a subnormal number, which keeps few digits in query 'q'"
        with pytest.raises(InvalidInput, match=too_small):
            api.evaluate(run(5e-324), qrels, engine=engine, doc_weight_col="w", measures=["ndcg"])


def test_a_kept_duckdb_connection_forgets_the_weights(tmp_path: Path) -> None:
    """The DuckDB engine keeps its connection between evaluations, and reads Parquet inputs itself
    with sql/inputs.sql, which reads the variable doc_weight_col: an evaluation with weights left it
    set, and the next one without them, on a file without that column, failed to bind (internal error)."""
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0], "w": [1.0, 2.0]}).write_parquet(
        run
    )
    pl.DataFrame({"query_id": ["q"], "doc_id": ["b"], "relevance": [1]}).write_parquet(qrels)
    weighed = api.evaluate(str(run), str(qrels), engine="duckdb", doc_weight_col="w", k=[2])
    plain = tmp_path / "plain.parquet"
    pl.read_parquet(run).drop("w").write_parquet(plain)
    unweighed = api.evaluate(str(plain), str(qrels), engine="duckdb", k=[2])
    # b (label 1) at rank 2: weighed 2 / log2(3) over its ideal 2; plain 1 / log2(3) over 1
    for result in (weighed, unweighed):
        assert result.per_query["ndcg"][0] == pytest.approx(1 / math.log2(3), abs=TOLERANCE)
    assert weighed.per_query["dcg"][0] == pytest.approx(2 / math.log2(3), abs=TOLERANCE)


def test_tiny_weights_weigh_the_means_as_their_ratios(tmp_path: Path) -> None:
    """Weights of 1e-200: cg and its list weight are both about 1e-200, and their product, which
    the weighted mean summed, underflowed to 0: a mean cg of 0.0 printed (Polars and DuckDB alike,
    exit 0). The means are those of the weights x 1e200, x 1e-200; compared relatively, as an
    absolute tolerance of 1e-9 cannot tell 0 from 1e-200."""
    tiny = 1e-200
    # q: c (label 2, weight 0.5) above a (label 1, weight 2): cg 0.5*2 + 2*1 = 3, list weight
    # (2*1 + 0.5*2) / 3 = 1; r: a alone relevant (label 1, weight 4): cg 4, list weight 4
    run = pl.DataFrame(
        {
            "query_id": ["q", "q", "r", "r"],
            "doc_id": ["a", "c", "a", "b"],
            "score": [1.0, 3.0, 2.0, 1.0],
            "w": [2.0 * tiny, 0.5 * tiny, 4.0 * tiny, 3.0 * tiny],
        }
    )
    qrels = pl.DataFrame({"query_id": ["q", "q", "r", "r"], "doc_id": ["a", "c", "a", "b"], "relevance": [1, 2, 1, 0]})
    cg = (1 * 3 + 4 * 4) / (1 + 4) * tiny
    for engine in ("polars", "duckdb"):
        summary = api.evaluate(run, qrels, engine=engine, ideal="retrieved", doc_weight_col="w", k=[1]).summary
        assert summary.filter(pl.col("k").is_null())["cg"].item() == pytest.approx(cg, rel=1e-12, abs=0), engine
    paths = {name: tmp_path / f"{name}.parquet" for name in ("run", "qrels")}
    run.write_parquet(paths["run"])
    qrels.write_parquet(paths["qrels"])
    script = [f"SET VARIABLE {name}_path = '{path}';" for name, path in paths.items()]
    script += ["SET VARIABLE ks = [1];", "SET VARIABLE ideal = 'retrieved';", "SET VARIABLE doc_weight_col = 'w';"]
    script += ["SET VARIABLE precision_denominator = 'min-k-retrieved';", ".read sql/ndcg.sql"]
    printed = _summary_of_ndcg_sql(script)
    assert printed.filter(pl.col("k").is_null())["cg"].item() == pytest.approx(cg, rel=1e-12, abs=0)


def test_the_whitespace_a_blank_weight_column_name_is_made_of_is_python_s() -> None:
    """The SQL fronts refuse a doc_weight_col of whitespace alone as the command line does
    (``not column.strip()``): with Python's whitespace, written out where the SQL rule is made."""
    from pipeline.sql_weight_refusals import PYTHON_WHITESPACE

    assert set(PYTHON_WHITESPACE) == {c for c in map(chr, range(0x110000)) if c.isspace()}


# --- weights read from the qrels (doc_weights_in qrels) ---------------------------------------------


def qrels_weighted(seed: int) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(run without weights, qrels with a weight per judged document in ``w``, the run with each
    result's weight joined in: its judgment's, null where not judged): weighted_lists' queries,
    q04 judged per subtopic (two rows a document, the same weight)."""
    run, qrels = weighted_lists(seed, queries=9, results=7, top_score=3)
    rng = random.Random(seed)
    weights = qrels.select("query_id", "doc_id").with_columns(
        w=pl.Series([0.0 if q == "q03" else rng.randint(0, 8) / 4 for q in qrels["query_id"]])
    )
    judged = qrels.join(weights, on=["query_id", "doc_id"]).filter(pl.col("doc_id") != "d2")  # d2: unjudged
    per_subtopic = judged.with_columns(subtopic=pl.lit(1)).vstack(
        judged.filter(pl.col("query_id") == "q04").with_columns(subtopic=pl.lit(2), relevance=pl.lit(0, pl.Int64))
    )
    joined = run.drop("w").join(judged.select("query_id", "doc_id", "w"), on=["query_id", "doc_id"], how="left")
    return run.drop("w"), per_subtopic, joined


def test_weights_read_from_the_qrels_are_each_result_s_judgment_s(tmp_path: Path) -> None:
    """doc_weights_in qrels: TF-Ranking's own case with its weights in the qrels, written out; then
    on random lists (ties, per-subtopic judgments, unjudged results weighing unjudged_weight) the
    same numbers as the run's weights joined in, on both engines and from files."""
    run = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, 2.0, 3.0]})
    qrels = pl.DataFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 2, 3], "w": [4.0, 1, 1]})
    result = api.evaluate(run, qrels, profile="tfranking", doc_weight_col="w", doc_weights_in="qrels", k=[3])
    # TF-Ranking's test_ndcg_with_weights (exponential gains): c (7), b (3), a (4 x 1) ranked; the ideal
    # by weight x gain: c (7), a (4), b (3)
    expected = (7 + 3 / math.log2(3) + 4 * 1 / 2) / (7 + 4 / math.log2(3) + 3 / 2)
    assert result.per_query.filter(pl.col("k") == 3)["ndcg"].item() == pytest.approx(expected, abs=TOLERANCE)

    run, qrels, joined = qrels_weighted(seed=8)
    options = {
        "profile": "tfranking",
        "doc_weight_col": "w",
        "k": [2, 5],
        "measures": ["ndcg", "P", "recall", "map", "recip_rank", "success", "average_precision_score"],
    }
    # a document judged per subtopic has its largest label (ndeval's), and one weight
    labels = qrels.group_by("query_id", "doc_id").agg(pl.col("relevance").max())
    expected = api.evaluate(joined.with_columns(pl.col("w").fill_null(0.75)), labels, **options)
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.csv"
    run.write_parquet(run_path)
    qrels.write_csv(qrels_path)
    for engine, inputs in (("polars", (run, qrels)), ("duckdb", (run, qrels)), ("polars", (run_path, qrels_path))):
        found = api.evaluate(*inputs, engine=engine, doc_weights_in="qrels", unjudged_weight=0.75, **options)
        for name in ("per_query", "summary", "query_weights"):
            ours, theirs = getattr(expected, name), getattr(found, name)
            assert ours.columns == theirs.columns and ours.height == theirs.height, (engine, name)
            for column in ours.columns:
                if ours.schema[column].is_float():
                    assert ((ours[column] - theirs[column]).abs() < TOLERANCE).all(), (engine, name, column)
                    assert ours[column].is_null().to_list() == theirs[column].is_null().to_list()
                else:
                    assert ours[column].to_list() == theirs[column].to_list(), (engine, name, column)
    # unjudged_weight 0: the unjudged results leave the lists, as a run weighing them 0
    zero = api.evaluate(joined.with_columns(pl.col("w").fill_null(0.0)), labels, **options)
    found = api.evaluate(run, qrels, doc_weights_in="qrels", unjudged_weight=0, **options)
    assert ((zero.summary["ndcg"] - found.summary["ndcg"]).abs() < TOLERANCE).all()


def test_weights_read_from_the_qrels_are_refused_as_the_run_s(tmp_path: Path) -> None:
    """Each engine, the command line and ndcg validate refuse in one set of words: a result the qrels do
    not judge (without unjudged_weight), a document whose subtopic rows disagree, the qrels' bad weights
    and columns, TREC qrels, inline labels; the options without what they need; the SQL fronts say they
    do not read them yet."""
    run, qrels, _ = qrels_weighted(seed=9)
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    run.write_parquet(run_path)
    qrels.write_parquet(qrels_path)
    base = ["--run", run_path, "--qrels", qrels_path, "--profile", "tfranking", "--doc-weight-col", "w"]
    count = run.join(qrels, on=["query_id", "doc_id"], how="anti").height  # d2 of each query, and q05's
    unjudged = (
        f"{run_path}: {count} result(s) that {qrels_path} does not judge, so without a weight in its column 'w' "
        "(doc_weights_in qrels), first: query 'q00', document 'd2'; judge them there, or weigh each such result "
        "with --unjudged-weight W (0: they leave the lists)"
    )
    for engine in ("polars", "duckdb"):
        done = run_cli("evaluate", *base, "--doc-weights-in", "qrels", "--engine", engine)
        assert done.returncode == 3 and unjudged in done.stderr, done.stderr
    done = run_cli("validate", *base[:4], "--doc-weight-col", "w", "--doc-weights-in", "qrels")
    assert done.returncode == 3 and unjudged in done.stdout, done.stdout

    def refused(qrels_frame: pl.DataFrame, words: str, **options: object) -> None:
        for engine in ("polars", "duckdb"):
            with pytest.raises(InvalidInput) as raised:
                api.evaluate(run, qrels_frame, engine=engine, profile="tfranking", doc_weight_col="w",
                             doc_weights_in="qrels", unjudged_weight=1, **options)  # fmt: skip
            assert str(raised.value) == words, engine

    differing = qrels.with_columns(
        w=pl.when((pl.col("subtopic") == 2) & (pl.col("doc_id") == "d4")).then(9.0).otherwise(pl.col("w"))
    )
    first = differing.filter(pl.col("query_id") == "q04", pl.col("doc_id") == "d4")["w"].sort().to_list()
    refused(
        differing,
        f"qrels: 1 judged document(s) with differing weights in column 'w', first: query 'q04', document 'd4', "
        f"weights {first[0]} and {first[1]}; a document weighs one weight, the same in every row that judges it "
        "(one per subtopic): make them agree",
    )
    negative = qrels.with_columns(w=pl.when(pl.col("doc_id") == "d1").then(-1.0).otherwise(pl.col("w")))
    count = negative.filter(pl.col("w") < 0).height
    refused(
        negative,
        f"qrels: {count} row(s) with a negative weight in column 'w', first: query 'q00', document 'd1', weight "
        "-1.0; a weight is a finite number >= 0, one per judged document: fix or remove those rows",
    )
    refused(qrels.drop("w"), "qrels: no weight column 'w'; columns found: 'query_id', 'doc_id', 'relevance', "
            "'subtopic'; name it with --doc-weight-col")  # fmt: skip
    refused(qrels.with_columns(w=pl.lit("heavy")), "qrels: weight column 'w' holds String values; expected numbers "
            "(a weight is a finite number >= 0)")  # fmt: skip
    # the label and the subtopic are read as such, and so is a column of the qrels named as the label is read
    # (the file's own "relevance" beside --qrels-label-col rel), and the input order's name; a qrels column
    # named as the run's score is a column like any other
    renamed = qrels.rename({"relevance": "rel"}).with_columns(relevance=pl.col("w"))
    for qrels_frame, column, names in (
        (qrels, "relevance", {}),
        (qrels, "subtopic", {}),
        (qrels.with_columns(arrival=pl.col("w")), "arrival", {}),
        (renamed, "relevance", {"qrels_label_col": "rel"}),
    ):
        with pytest.raises(InvalidInput, match=f"--doc-weight-col names '{column}', a column read as another"):
            api.evaluate(run, qrels_frame, profile="tfranking", doc_weight_col=column, doc_weights_in="qrels",
                         unjudged_weight=1, **names)  # fmt: skip
    plain = api.evaluate(run, qrels, profile="tfranking", doc_weight_col="w", doc_weights_in="qrels", unjudged_weight=1)
    for column in ("score",):
        found = api.evaluate(
            run.rename({"score": "sim"}), qrels.rename({"w": column}), profile="tfranking", doc_weight_col=column,
            doc_weights_in="qrels", unjudged_weight=1, score_col="sim",
        )  # fmt: skip
        assert ((found.summary["ndcg"] - plain.summary["ndcg"]).abs() < TOLERANCE).all(), column
    # the queries all weighing 0 (0/0) names where the weights come from
    with pytest.raises(InvalidInput, match="the list weights of --doc-weight-col 'w', read from the qrels\\): all"):
        api.evaluate(run, qrels.with_columns(w=pl.lit(0.0)), profile="tfranking", doc_weight_col="w",
                     doc_weights_in="qrels", unjudged_weight=0)  # fmt: skip
    trec = tmp_path / "qrels.txt"
    trec.write_text("q00 0 d0 1\n")
    with pytest.raises(InvalidInput, match="a TREC qrels has no weight column; give the weights in a Parquet or CSV"):
        api.evaluate(run, str(trec), profile="tfranking", doc_weight_col="w", doc_weights_in="qrels")
    inline = run.with_columns(relevance=pl.lit(1), w=pl.lit(1.0))
    with pytest.raises(InvalidInput, match="doc_weights_in qrels reads the weights from the qrels, and the labels"):
        api.evaluate(inline, None, profile="tfranking", doc_weight_col="w", doc_weights_in="qrels")
    for options, words in (
        ({"doc_weights_in": "qrels"}, "doc_weights_in qrels reads the weights of doc_weight_col's column of the qrels"),
        ({"doc_weight_col": "w", "unjudged_weight": 1}, "unjudged_weight weighs the results the qrels do not judge"),
        ({"doc_weight_col": "w", "doc_weights_in": "qrels", "unjudged_weight": math.inf}, "got inf"),
    ):
        with pytest.raises(UsageError, match=words):
            api.make_evaluation(profile="tfranking", **options)
    done = run_cli("evaluate", *base[:4], "--unjudged-weight", "-1")
    assert done.returncode == 2 and "unjudged_weight must be a finite number >= 0, got -1.0" in done.stderr


@pytest.mark.subprocess
def test_the_sql_fronts_read_the_qrels_weights_as_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The table macros (Parquet and CSV text) and sql/ndcg.sql with doc_weights_in 'qrels': the
    polars engine's numbers, and its refusals in its words (the option spelled as each front's)."""
    monkeypatch.chdir(ROOT)
    run, qrels, _ = qrels_weighted(seed=11)
    paths = {name: tmp_path / f"{name}.parquet" for name in ("run", "qrels", "differing", "negative")}
    run.write_parquet(paths["run"])
    qrels.write_parquet(paths["qrels"])
    qrels.write_csv(qrels_csv := tmp_path / "qrels.csv")
    qrels.with_columns(w=pl.when(pl.col("subtopic") == 2).then(9.0).otherwise("w")).write_parquet(paths["differing"])
    negative = qrels.with_columns(w=pl.when(pl.col("doc_id") == "d4").then(-1.0).otherwise("w"))
    negative.write_parquet(paths["negative"])
    negative.write_csv(negative_csv := tmp_path / "negative.csv")
    options = {"profile": "tfranking", "k": [2, 4], "measures": "ndcg,P,map", "doc_weight_col": "w"}
    options |= {"doc_weights_in": "qrels", "unjudged_weight": 0.5}
    settings = {"ks": "[2, 4]", "measures": "['ndcg', 'P', 'map']", "gain": "'exponential'", "ideal": "'retrieved'"}
    settings |= {"precision_denominator": "'min-k-retrieved'", "queries_without_judgments": "'evaluate'"}
    settings |= {"relevance_threshold": "1", "doc_weight_col": "'w'", "doc_weights_in": "'qrels'"}
    settings |= {"unjudged_weight": "0.5"}
    expected = api.evaluate(str(paths["run"]), str(paths["qrels"]), **options)  # type: ignore[arg-type]
    macros = duckdb.connect()
    macros.execute((ROOT / "sql/generated/macros.sql").read_text())

    def arguments(changes: dict[str, str]) -> str:
        return ", ".join(f"{name} := {value}" for name, value in {**settings, **changes}.items() if value != "NULL")

    def close(found: pl.DataFrame, wanted: pl.DataFrame) -> None:
        assert found.columns == wanted.columns and found.height == wanted.height
        for column in found.columns[1:]:
            got, want = found[column].cast(pl.Float64), wanted[column].cast(pl.Float64)
            assert got.is_null().to_list() == want.is_null().to_list(), column
            assert ((got - want).abs().fill_null(0) < TOLERANCE).all(), column

    for qrels_given in (paths["qrels"], qrels_csv):
        for macro, wanted in (("ndcg_summary", expected.summary), ("ndcg_per_query", expected.per_query)):
            close(
                selected(macros, f"select * from {macro}('{paths['run']}', '{qrels_given}', {arguments({})})"), wanted
            )
    script = [f"SET VARIABLE {name} = {value};" for name, value in settings.items()]
    script += [f"SET VARIABLE qrels_path = '{paths['qrels']}';", f"SET VARIABLE run_path = '{paths['run']}';"]
    close(_summary_of_ndcg_sql([*script, ".read sql/ndcg.sql"]), expected.summary)

    def words_of(qrels_given: object, changes: dict[str, object]) -> str:
        with pytest.raises((InvalidInput, UsageError)) as refused:
            api.evaluate(str(paths["run"]), qrels_given, **{**options, **changes})  # type: ignore[arg-type]
        return str(refused.value)

    cases: list[tuple[object, dict[str, object], dict[str, str]]] = [
        (paths["qrels"], {"unjudged_weight": None}, {"unjudged_weight": "NULL"}),
        (paths["differing"], {}, {}),
        (paths["negative"], {}, {}),
        (paths["qrels"], {"doc_weight_col": "nope"}, {"doc_weight_col": "'nope'"}),
        (paths["qrels"], {"doc_weight_col": "relevance"}, {"doc_weight_col": "'relevance'"}),
    ]
    script_connection = duckdb.connect()
    first_files = ("input_columns.sql", "inputs.sql", "aligned_inputs.sql", "generated/derived_variables.sql")
    for qrels_given, changes, variables in cases:
        words = words_of(str(qrels_given), changes)
        # the macros' first bad row is by file and line: of text (a table shows no order)
        as_text = negative_csv if qrels_given == paths["negative"] else qrels_given
        with pytest.raises(duckdb.Error) as macro:
            macros.execute(
                f"select * from ndcg_summary('{paths['run']}', '{as_text}', {arguments(variables)})"
            ).fetchall()
        said = words.replace("name it with --doc-weight-col", "name it with doc_weight_col := '...'")
        said = said.replace("--doc-weight-col", "doc_weight_col").replace(str(paths["negative"]), str(negative_csv))
        said = said.replace("--unjudged-weight W", "unjudged_weight := W")
        assert str(macro.value) == f"Invalid Input Error: ndcg_summary: {said}"
        for name, value in {**settings, **variables, "run_path": f"'{paths['run']}'"}.items():
            script_connection.execute(f"RESET VARIABLE {name}" if value == "NULL" else f"SET VARIABLE {name} = {value}")
        script_connection.execute(f"SET VARIABLE qrels_path = '{qrels_given}'")
        for file in (*first_files, "generated/refusals.sql"):
            script_connection.execute((ROOT / "sql" / file).read_text())
        with pytest.raises(duckdb.Error) as refused:
            script_connection.execute("select count(refused) from refusals").fetchall()
        said = words.replace("name it with --doc-weight-col", "name it with SET VARIABLE doc_weight_col")
        said = said.replace("--doc-weight-col", "doc_weight_col")
        said = said.replace("--unjudged-weight W", "SET VARIABLE unjudged_weight = W")
        assert str(refused.value).removeprefix("Invalid Input Error: ") == said
    # inline labels (the script's qrels_path unset), and TREC qrels (the macros read text)
    inline = run.with_columns(relevance=pl.lit(1), w=pl.lit(1.0))
    inline.write_parquet(inline_path := tmp_path / "inline.parquet")
    with pytest.raises(InvalidInput) as raised:
        api.evaluate(str(inline_path), None, **options)  # type: ignore[arg-type]
    script_connection.execute(f"SET VARIABLE run_path = '{inline_path}'")
    script_connection.execute("RESET VARIABLE qrels_path")
    for file in (*first_files, "generated/refusals.sql"):
        script_connection.execute((ROOT / "sql" / file).read_text())
    with pytest.raises(duckdb.Error) as refused:
        script_connection.execute("select count(refused) from refusals").fetchall()
    assert str(refused.value).removeprefix("Invalid Input Error: ") == str(raised.value)
    # the weights are joined once the inputs are valid: a run listing a document twice is that error first
    twice = tmp_path / "twice.parquet"
    pl.concat([run, run.head(1)]).write_parquet(twice)
    with pytest.raises(InvalidInput) as raised:
        api.evaluate(str(twice), str(paths["qrels"]), **{**options, "unjudged_weight": None})  # type: ignore[arg-type]
    assert "listed 2 times" in str(raised.value)
    without = arguments({"unjudged_weight": "NULL"})
    with pytest.raises(duckdb.Error) as macro:
        macros.execute(f"select * from ndcg_summary('{twice}', '{paths['qrels']}', {without})").fetchall()
    # (the fix spelled as the macros' parameter: duplicates := 'max-score')
    assert (
        str(macro.value).partition(" with ")[0]
        == f"Invalid Input Error: ndcg_summary: {raised.value}".partition(" with ")[0]
    )
    # a NaN weight for the results the qrels do not judge (NaN >= 0 holds in DuckDB)
    with pytest.raises(UsageError) as raised:
        api.evaluate(str(paths["run"]), str(paths["qrels"]), **{**options, "unjudged_weight": math.nan})  # type: ignore[arg-type]
    nan = arguments({"unjudged_weight": "'nan'::double"})
    with pytest.raises(duckdb.Error) as macro:
        macros.execute(f"select * from ndcg_summary('{paths['run']}', '{paths['qrels']}', {nan})").fetchall()
    assert str(macro.value) == f"Invalid Input Error: ndcg_summary: {raised.value}"
    trec = tmp_path / "qrels.txt"
    trec.write_text("q00 0 d0 1\n")
    with pytest.raises(duckdb.Error) as macro:
        macros.execute(f"select * from ndcg_summary('{paths['run']}', '{trec}', {arguments({})})").fetchall()
    assert str(macro.value) == f"Invalid Input Error: ndcg_summary: {words_of(str(trec), {})}"


@pytest.mark.timeout(900)
def test_weights_read_from_the_qrels_on_spark(tmp_path: Path, local_spark: object) -> None:
    """Spark joins the qrels' weights as the other engines do, and refuses in their words."""
    run, qrels, _ = qrels_weighted(seed=10)
    run_path, qrels_path = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    run.write_parquet(run_path)
    qrels.write_parquet(qrels_path)
    options = {"profile": "tfranking", "doc_weight_col": "w", "doc_weights_in": "qrels", "k": [3], "measures": "ndcg,P"}
    expected = api.evaluate(run_path, qrels_path, unjudged_weight=0.5, **options)
    found = api.evaluate(run_path, qrels_path, unjudged_weight=0.5, engine="spark", **options)
    for name in ("per_query", "summary"):
        ours, theirs = getattr(expected, name), getattr(found, name).sort(getattr(expected, name).columns[:2])
        ours = ours.sort(ours.columns[:2])
        for column in ("cg", "dcg", "idcg", "ndcg", "P"):
            assert ((ours[column] - theirs[column]).abs() < TOLERANCE).all(), (name, column)
    differing = tmp_path / "differing.parquet"
    qrels.with_columns(w=pl.when(pl.col("subtopic") == 2).then(9.0).otherwise(pl.col("w"))).write_parquet(differing)
    for qrels_file, unjudged in ((qrels_path, None), (differing, 1.0)):
        with pytest.raises(InvalidInput) as polars_words:
            api.evaluate(run_path, qrels_file, unjudged_weight=unjudged, **options)
        with pytest.raises(InvalidInput) as spark_words:
            api.evaluate(run_path, qrels_file, unjudged_weight=unjudged, engine="spark", **options)
        assert str(spark_words.value) == str(polars_words.value)
        assert ("does not judge" if unjudged is None else "differing weights") in str(spark_words.value)


def _printed_weighted_sql(dialect: str, options: list[str]) -> str:
    done = run_cli("sql", "--dialect", dialect, "--profile", "tfranking", "--doc-weight-col", "w", *options)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _weighted_run_view(run: pl.DataFrame) -> pl.DataFrame:
    """The run view the printed statements read: each result's weight as doc_weight, no input order."""
    return run.rename({"w": "doc_weight"}).with_columns(
        arrival=pl.lit(None, dtype=pl.Int64), input_rank=pl.lit(None, dtype=pl.Float64)
    )


def _assert_summaries_close(found: pl.DataFrame, expected: pl.DataFrame) -> None:
    found, expected = found.sort("k", nulls_last=False), expected.sort("k", nulls_last=False)
    assert found.columns == expected.columns and found.height == expected.height
    for column in expected.columns:
        got, want = found[column].cast(pl.Float64), expected[column].cast(pl.Float64)
        assert got.is_null().to_list() == want.is_null().to_list(), column
        assert ((got - want).abs().fill_null(0) < TOLERANCE).all(), column


PRINTED_OPTIONS = ["--k", "2,4", "--measures", "ndcg,P,recall,map,recip_rank,success,average_precision_score"]


def test_ndcg_sql_prints_the_list_weighted_summary() -> None:
    """ndcg sql --doc-weight-col: the per-query statement and, in summary.sql's place, the list
    weights and the weighted means, run in DuckDB over a run view with doc_weight: the engines'
    summary (TF-Ranking's list-weighted means); the queries all weighing 0 refused in its words."""
    run, qrels = weighted_lists(seed=31, queries=10, results=6, top_score=3)
    expected = api.evaluate(run, qrels, profile="tfranking", doc_weight_col="w", k=[2, 4], measures=PRINTED_OPTIONS[3])
    text = _printed_weighted_sql("duckdb", PRINTED_OPTIONS)
    connection = duckdb.connect()
    connection.register("run", _weighted_run_view(run))
    # the user's judgments in a table of that common name, read by their qrels view: the printed
    # judgments view of the steps is named as ours (it was judgments: the qrels view then read itself)
    connection.register("given_qrels", qrels)
    connection.execute("create table judgments as from given_qrels; create view qrels as from judgments")
    connection.execute(text)
    summary = connection.table("summary").pl()
    assert summary["k"].to_list() == [None, 2, 4]  # in summary.sql's order
    _assert_summaries_close(summary, expected.summary)
    connection.register("run", _weighted_run_view(run.with_columns(w=pl.lit(0.0))))
    connection.execute(text)
    with pytest.raises(duckdb.Error, match="run \\(the list weights of doc_weight_col 'w'\\): all 10 evaluated"):
        connection.table("summary").fetchall()


@pytest.mark.timeout(900)
def test_ndcg_sql_prints_a_list_weighted_summary_spark_runs(local_spark: object) -> None:
    """The same statements printed for Spark, run over Spark views: the engines' summary."""
    from tests.helpers.spark_frames import to_polars, to_spark

    run, qrels = weighted_lists(seed=32, queries=8, results=5, top_score=3)
    options = ["--k", "2,4", "--measures", "ndcg,P"]  # fewer measures than in DuckDB: Spark analyses each
    expected = api.evaluate(run, qrels, profile="tfranking", doc_weight_col="w", k=[2, 4], measures="ndcg,P")
    notebook = local_spark.newSession()  # type: ignore[attr-defined]
    to_spark(notebook, _weighted_run_view(run).lazy()).createOrReplaceTempView("run")
    to_spark(notebook, qrels.lazy()).createOrReplaceTempView("qrels")
    import sqlglot

    statements = [s for s in sqlglot.parse(_printed_weighted_sql("spark", options), read="spark") if s]
    notebook.sql(statements[0].sql("spark"))
    # per_query computed once and kept, as docs/spark.md says to: Spark analyses a view's SQL again at each
    # reference, and the list weights' views read it six times over (the whole plan ran out of heap)
    notebook.table("per_query").localCheckpoint().createOrReplaceTempView("per_query")
    for statement in statements[1:]:
        notebook.sql(statement.sql("spark"))
    _assert_summaries_close(to_polars(notebook.table("summary")), expected.summary)
