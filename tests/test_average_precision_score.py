"""scikit-learn's average precision of each query's ranking, ``average_precision_score``: each
distinct score one threshold (tied scores together, whatever their order), the run's document
weights as its ``sample_weight``.

Against independent sources: the arithmetic written out on small rankings, and scikit-learn's
``average_precision_score`` run here on random data (ties, unjudged results, labels below 0,
weights of 0), on Polars and DuckDB, the table macros and Spark once each."""

from __future__ import annotations

import random
import warnings

import duckdb
import numpy as np
import polars as pl
import pytest

from pipeline import evaluate
from pipeline.registry import Evaluation
from pipeline.sql_files import MACROS, sql_file
from tests.helpers import ENGINES, TOLERANCE, compute, frames

metrics = pytest.importorskip("sklearn.metrics")

# tie: a (rel) and b tied at 3, then c (rel); unjudged: a not judged above b (rel); beyond: z is
# relevant and never retrieved (scikit-learn sees the ranking alone); none: nothing relevant;
# graded: a labelled 1 above b labelled 2, read with a relevance threshold; below: a labelled -1;
# signed: a scored -0.0 and b 0.0, one score
HAND_RUN = [
    ("tie", "a", 3.0),
    ("tie", "b", 3.0),
    ("tie", "c", 1.0),
    ("unjudged", "a", 2.0),
    ("unjudged", "b", 1.0),
    ("beyond", "a", 2.0),
    ("beyond", "b", 1.0),
    ("none", "a", 1.0),
    ("graded", "a", 2.0),
    ("graded", "b", 1.0),
    ("below", "a", 2.0),
    ("below", "b", 1.0),
    ("signed", "a", -0.0),
    ("signed", "b", 0.0),
    ("signed", "c", -1.0),
]
HAND_QRELS = [
    ("tie", "a", 1),
    ("tie", "b", 0),
    ("tie", "c", 2),
    ("unjudged", "b", 1),
    ("beyond", "a", 1),
    ("beyond", "b", 0),
    ("beyond", "z", 3),
    ("none", "a", 0),
    ("graded", "a", 1),
    ("graded", "b", 2),
    ("below", "a", -1),
    ("below", "b", 1),
    ("signed", "a", 1),
    ("signed", "b", 0),
    ("signed", "c", 1),
]


def _whole(table: pl.DataFrame, measure: str = "average_precision_score") -> dict[object, float]:
    return {row["query_id"]: row[measure] for row in table.filter(pl.col("k").is_null()).iter_rows(named=True)}


def test_written_out() -> None:
    """AP = sum over the distinct scores t, highest first, of (R(t) - R(t')) * P(t): P(t) the
    relevant share of the results scored >= t, R(t) the share of the ranking's relevant ones."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    expected = {
        # t = 3: a, b (1 of 2 relevant), recall 1/2; t = 1: 2 of 3, recall 1
        "tie": 1 / 2 * 1 / 2 + 1 / 2 * 2 / 3,
        # t = 2: a, nothing relevant, recall 0; t = 1: 1 of 2, recall 1
        "unjudged": 1 * 1 / 2,
        "beyond": 1.0,
        "none": 0.0,
        "graded": 1 / 2 * 1 / 1 + 1 / 2 * 2 / 2,  # both relevant (label > 0)
        "below": 1 * 1 / 2,  # -1 counts as unjudged: not relevant, still in the ranking
        "signed": 1 / 2 * 1 / 2 + 1 / 2 * 2 / 3,  # -0.0 and 0.0 are one score, as tie's a and b
    }
    # relevance_threshold 2: only the labels of 2 are relevant (tie's c, graded's b)
    at_two = {query: 0.0 for query in expected} | {"tie": 1 * 1 / 3, "graded": 1 * 1 / 2}
    # map of tie: b (not relevant) first by doc_id desc, a first by doc_id asc; R = 2
    tie_map = {"docid-desc": (1 / 2 + 2 / 3) / 2, "docid-asc": (1 / 1 + 2 / 3) / 2}
    for engine in ENGINES:
        for ties, map_value in tie_map.items():  # map changes with the order of a and b, this does not
            evaluation = Evaluation(cutoffs=(1, 2), measures=("average_precision_score", "map"), ties=ties)
            table = compute(engine, run, qrels, evaluation)
            got = _whole(table)
            assert got.keys() == expected.keys()
            for query, value in expected.items():
                assert got[query] == pytest.approx(value, abs=TOLERANCE), (engine, ties, query)
            assert _whole(table, "map")["tie"] == pytest.approx(map_value, abs=TOLERANCE), (engine, ties)
            assert table.filter(pl.col("k").is_not_null())["average_precision_score"].is_null().all()
        threshold = Evaluation(measures=("average_precision_score",), relevance_threshold=2)
        got = _whole(compute(engine, run, qrels, threshold))
        for query, value in at_two.items():
            assert got[query] == pytest.approx(value, abs=TOLERANCE), (engine, "threshold 2", query)
        # a threshold of -1: every judged label (>= 0) is relevant, a label of -1 still unjudged, as map reads it
        below_zero = compute(
            engine, run, qrels, Evaluation(measures=("average_precision_score", "map"), relevance_threshold=-1)
        )
        got = _whole(below_zero)
        assert got["tie"] == pytest.approx(1.0, abs=TOLERANCE) and got["below"] == pytest.approx(1 / 2, abs=TOLERANCE)
        assert _whole(below_zero, "map")["below"] == pytest.approx(1 / 2, abs=TOLERANCE), engine


# scikit-learn's own asserted values (scikit-learn 1.9.1, sklearn/metrics/tests/test_ranking.py:
# test_precision_recall_curve_toydata's binary cases and test_average_precision_constant_values),
# each case a query: (y_true, y_score, the average_precision_score asserted)
SCIKIT_LEARN_CASES = [
    ([0, 1], [0, 1], 1.0),
    ([0, 1], [1, 0], 0.5),
    ([1, 0], [1, 1], 0.5),
    ([1, 0], [1, 0], 1.0),
    ([1, 0], [0.5, 0.5], 0.5),
    ([0, 0], [0.25, 0.75], 0.0),  # no positive class: it warns and gives 0
    ([1, 1], [0.25, 0.75], 1.0),
    ([1 if i % 4 == 0 else 0 for i in range(100)], [1.0] * 100, 0.25),  # a constant predictor: the positives' share
]


def test_scikit_learn_s_own_asserted_values() -> None:
    rows = [
        (f"case{case}", f"d{i:03d}", score, label)
        for case, (labels, scores, _) in enumerate(SCIKIT_LEARN_CASES)
        for i, (label, score) in enumerate(zip(labels, scores, strict=True))
    ]
    run, qrels = frames([row[:3] for row in rows], [(q, d, label) for q, d, _, label in rows])
    evaluation = Evaluation(measures=("average_precision_score",))
    for engine in ENGINES:
        got = _whole(compute(engine, run, qrels, evaluation))
        for case, (_, _, asserted) in enumerate(SCIKIT_LEARN_CASES):
            assert got[f"case{case}"] == pytest.approx(asserted, abs=TOLERANCE), (engine, case)


def test_weighted_written_out() -> None:
    """With doc_weight_col, a result counts its weight where it counted 1 (scikit-learn's
    sample_weight), and a result weighing 0 leaves the ranking; the mean is plain, over the
    queries with a result weighing above 0."""
    rows = [("w", "a", 3.0, 2.0), ("w", "b", 2.0, 1.0), ("w", "c", 1.0, 0.5)]
    rows += [("z", "a", 3.0, 0.0), ("z", "b", 2.0, 1.0), ("z", "c", 1.0, 2.0)]
    rows += [("gone", "a", 1.0, 0.0)]
    run = pl.LazyFrame(rows, schema=["query_id", "doc_id", "score", "w"], orient="row")
    qrels = pl.LazyFrame(
        [(q, d, 1 if d != "b" else 0) for q in ("w", "z", "gone") for d in "abc"],
        schema=["query_id", "doc_id", "relevance"],
        orient="row",
    )
    # w: t = 3 precision 2/2, recall 2/2.5; t = 1: precision 2.5/3.5, recall 1
    expected = {"w": 2 / 2.5 * 1 + 0.5 / 2.5 * (2.5 / 3.5), "z": 1 * 2 / 3, "gone": 0.0}
    for engine in ENGINES:
        result = evaluate(run, qrels, engine=engine, measures=("average_precision_score",), doc_weight_col="w")
        got = _whole(result.per_query)
        for query, value in expected.items():
            assert got[query] == pytest.approx(value, abs=TOLERANCE), (engine, query)
        mean = result.summary.filter(pl.col("k").is_null())["average_precision_score"].item()
        assert mean == pytest.approx((expected["w"] + expected["z"]) / 2, abs=TOLERANCE), engine


def _random_collection(seed: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Rankings of 1 to 14 results, scores 0 to 4 (many ties), weights in eighths (0 among
    them), labels -1 to 3 or unjudged, and judged documents the run never retrieved."""
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for q in range(80):
        docs = [f"d{d}" for d in range(rng.randint(1, 14))]
        for doc in docs:
            run_rows.append((f"q{q:02d}", doc, float(rng.randint(0, 4)), rng.choice([0, 1, 3, 4, 8, 13]) / 8))
            if rng.random() < 0.7:
                qrels_rows.append((f"q{q:02d}", doc, rng.randint(-1, 3)))
        qrels_rows.append((f"q{q:02d}", "never-retrieved", 2))
    run = pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score", "w"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "relevance"], orient="row")
    return run, qrels


def _scikit_learn(run: pl.DataFrame, qrels: pl.DataFrame, weighted: bool) -> dict[str, float]:
    """scikit-learn's average_precision_score of each query's ranking (its y_true: label > 0;
    0 where nothing relevant weighs above 0, where it warns and gives 0 too); a query all of
    whose results weigh 0 is none of scikit-learn's (it has no sample left)."""
    labelled = run.join(qrels, on=["query_id", "doc_id"], how="left").sort("query_id", "doc_id")
    values = {}
    for (query,), ranking in labelled.group_by("query_id", maintain_order=True):
        y_true = (ranking["relevance"].fill_null(0) > 0).to_numpy()
        weights = ranking["w"].to_numpy() if weighted else np.ones(ranking.height)
        if not weights.sum():
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # no positive sample: scikit-learn's 0, with a warning
            values[str(query)] = float(metrics.average_precision_score(y_true, ranking["score"], sample_weight=weights))
    return values


def _assert_equal(result_per_query: pl.DataFrame, expected: dict[str, float], label: str) -> None:
    got = {str(query): value for query, value in _whole(result_per_query).items() if query in expected}
    assert got.keys() == expected.keys(), label
    for query, value in expected.items():
        assert got[query] == pytest.approx(value, abs=TOLERANCE), (label, query)


def test_equals_scikit_learn_on_random_data() -> None:
    """Polars and DuckDB, weighted and not, per query and the mean; the table macros once."""
    run, qrels = _random_collection(61)
    measures = ("average_precision_score", "map")
    for weighted in (False, True):
        expected = _scikit_learn(run, qrels, weighted)
        assert len(expected) >= 70 and len(set(expected.values())) > 30
        options = {"doc_weight_col": "w"} if weighted else {}
        for engine in ENGINES:
            result = evaluate(run, qrels, engine=engine, measures=measures, **options)
            _assert_equal(result.per_query, expected, f"{engine}, weighted {weighted}")
            mean = result.summary.filter(pl.col("k").is_null())["average_precision_score"].item()
            assert mean == pytest.approx(float(np.mean(list(expected.values()))), abs=TOLERANCE), (engine, weighted)
    connection = duckdb.connect()
    try:
        connection.execute(sql_file(MACROS))
        connection.register("given_run", run.drop("w"))
        connection.register("given_qrels", qrels)
        rows = connection.sql(
            "select query_id, k, average_precision_score from ndcg_per_query('given_run', 'given_qrels', "
            "measures := ['average_precision_score'])"
        ).pl()
    finally:
        connection.close()
    _assert_equal(rows, _scikit_learn(run, qrels, weighted=False), "macros")


def test_weights_far_from_one() -> None:
    """Weights of 1e-200 or 1e200 (each query one scale) give scikit-learn's values: the
    precision at a threshold is a ratio of weights, and the product of two weights underflowed to
    0 (1e-200) or overflowed to inf (1e200) in the SQL's sum, where the precision came last."""
    run, qrels = _random_collection(63)
    scale = pl.when(pl.col("query_id").str.slice(1).cast(pl.Int64) % 2 == 0).then(1e-200).otherwise(1e200)
    run = run.with_columns(pl.col("w") * scale)
    expected = _scikit_learn(run, qrels, weighted=True)
    for engine in ENGINES:
        result = evaluate(run, qrels, engine=engine, measures=("average_precision_score",), doc_weight_col="w")
        _assert_equal(result.per_query, expected, engine)
        mean = result.summary.filter(pl.col("k").is_null())["average_precision_score"].item()
        assert mean == pytest.approx(float(np.mean(list(expected.values()))), abs=TOLERANCE), engine


def test_weights_whose_sum_overflows_written_out() -> None:
    """Results whose weights sum beyond Float64 (3 x 1e308, 3 x 6e307): the precision at a
    threshold is a ratio of weights, which the weights over their ranking's largest keep (all 1
    here). scikit-learn's own sums overflow (it gives 0.0), and so did ours: 0.0, NaN in SQL."""
    rows = [("late", "a", 3.0, 1e308), ("late", "b", 2.0, 1e308), ("late", "c", 1.0, 1e308)]
    rows += [("tie", "a", 1.0, 6e307), ("tie", "b", 1.0, 6e307), ("tie", "c", 1.0, 6e307), ("tie", "d", 0.0, 6e307)]
    run = pl.LazyFrame(rows, schema=["query_id", "doc_id", "score", "w"], orient="row")
    judged = [("late", "c", 1), ("tie", "a", 1), ("tie", "b", 1)]
    qrels = pl.LazyFrame(judged, schema=["query_id", "doc_id", "relevance"], orient="row")
    # late: c relevant at the third threshold, precision 1/3; tie: t = 1 holds a, b (relevant) and
    # c, precision 2/3 and recall 1 (the list weights, 1e308 and 6e307, sum below Float64's largest)
    expected = {"late": 1 / 3, "tie": 2 / 3}
    for engine in ENGINES:
        result = evaluate(run, qrels, engine=engine, measures=("average_precision_score",), doc_weight_col="w")
        got = _whole(result.per_query)
        for query, value in expected.items():
            assert got[query] == pytest.approx(value, abs=TOLERANCE), (engine, query)


@pytest.mark.timeout(900)
def test_on_spark(local_spark: object) -> None:
    """Spark runs the same SQL, transpiled: weighted, per query and the mean."""
    run, qrels = _random_collection(62)
    expected = _scikit_learn(run, qrels, weighted=True)
    result = evaluate(run, qrels, engine="spark", measures=("average_precision_score",), doc_weight_col="w")
    _assert_equal(result.per_query, expected, "spark")
    mean = result.summary.filter(pl.col("k").is_null())["average_precision_score"].item()
    assert mean == pytest.approx(float(np.mean(list(expected.values()))), abs=TOLERANCE)
