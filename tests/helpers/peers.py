"""The peer libraries' side of the comparisons (pytrec_eval, LightGBM, XGBoost, Spark MLlib): seeded
random data, the same data as the peers' dicts, the peers' own NDCG, and the tolerance they are held to."""

from __future__ import annotations

import random
from collections import defaultdict

import numpy as np
import polars as pl
import pytest

CUTOFFS = (1, 3, 10, 50)  # 50 is beyond every list


PEER_TOLERANCE = 1e-9


def random_data(
    seed: int, *, labels: tuple[int, ...] = (-1, 0, 0, 1, 2, 3), distinct_scores: bool = False, min_docs: int = 1
) -> tuple[list[tuple], list[tuple]]:
    """Run rows (query, doc, score) in arrival order and qrels rows (query, doc, label)."""
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for q in range(12):
        docs = [f"d{d}" for d in range(rng.randint(max(2, min_docs), 25))]
        retrieved = rng.sample(docs, rng.randint(min_docs, len(docs)))
        scores = rng.sample(range(1000), len(retrieved)) if distinct_scores else None
        for i, doc in enumerate(retrieved):
            score = float(scores[i]) / 10 if scores else float(rng.randint(0, 4))  # few values: many ties
            run_rows.append((f"q{q}", doc, score))
        no_relevant = rng.random() < 0.15
        judged = [doc for doc in docs if rng.random() < 0.6]  # the rest are unjudged
        for doc in judged:
            label = rng.choice([lab for lab in labels if lab <= 0] if no_relevant else labels)
            qrels_rows.append((f"q{q}", doc, label))
        if judged and all(label < 0 for query, _, label in qrels_rows if query == f"q{q}"):
            # pytrec_eval-terrier 0.5.11 hangs on its next call after a query judged only
            # negative; our engines' handling of that case is in test_engines_agree.py
            qrels_rows.append((f"q{q}", docs[0] + "-judged", 0))
    for q in range(12, 14):  # queries judged but never retrieved
        qrels_rows.append((f"q{q}", "d0", 1))
    return run_rows, qrels_rows


def frames(run_rows: list[tuple], qrels_rows: list[tuple]) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    run = pl.LazyFrame(run_rows, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    qrels = pl.LazyFrame(
        qrels_rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}, orient="row"
    )
    return run, qrels


def as_dicts(run_rows: list[tuple], qrels_rows: list[tuple]) -> tuple[dict, dict]:
    run: dict = defaultdict(dict)
    for query, doc, score in run_rows:
        run[query][doc] = score
    qrels: dict = defaultdict(dict)
    for query, doc, label in qrels_rows:
        qrels[query][doc] = label
    return dict(run), dict(qrels)


def assert_same(actual: dict, expected: dict, tolerance: float = PEER_TOLERANCE) -> None:
    assert set(actual) == set(expected), f"rows differ: {sorted(set(actual) ^ set(expected), key=str)}"
    for key, value in expected.items():
        assert actual[key] == pytest.approx(value, abs=tolerance), f"{key}: ours {actual[key]}, peer {value}"


def lightgbm_ndcg(
    labels: list[int],
    scores: list[float],
    groups: list[int],
    cutoffs: tuple[int, ...],
    weights: list[float] | None = None,
) -> list[float]:
    """LightGBM's own ndcg@k of fixed scores, in arrival order: a zero-gradient objective keeps
    every tree at 0, so the validation set's predictions are its init_score. ``weights``: one
    per row (LightGBM weighs each query by the mean of its rows' weights)."""
    import lightgbm

    train = lightgbm.Dataset(
        np.array([[0.0], [1.0]]), np.array([0.0, 1.0]), group=[2], params={"min_data_in_bin": 1, "verbosity": -1}
    )
    valid = lightgbm.Dataset(
        np.zeros((len(labels), 1)),
        np.array(labels, dtype=float),
        group=groups,
        init_score=scores,
        weight=None if weights is None else np.array(weights, dtype=float),
        reference=train,
    )
    recorded: dict = {}
    params = {
        "metric": "ndcg",
        "eval_at": list(cutoffs),
        "objective": lambda predictions, _: (np.zeros_like(predictions), np.ones_like(predictions)),
        "min_data_in_leaf": 1,
        "verbosity": -1,
        "num_threads": 1,
    }
    lightgbm.train(
        params,
        train,
        num_boost_round=1,
        valid_sets=[valid],
        valid_names=["valid"],
        callbacks=[lightgbm.record_evaluation(recorded)],
    )
    return [recorded["valid"][f"ndcg@{k}"][0] for k in cutoffs]


def xgboost_ndcg(
    labels: list[int],
    scores: list[float],
    groups: list[int],
    metrics: tuple[str, ...],
    weights: list[float] | None = None,
) -> list[float]:
    """XGBoost's own evaluation of fixed scores, in arrival order: with zero boosting rounds the
    predictions are the base_margin, so eval prints the metric of the scores themselves.
    ``weights``: one per query group (XGBoost's ranking weights are per group)."""
    import xgboost

    data = xgboost.DMatrix(np.zeros((len(labels), 1)), label=np.array(labels, dtype=float), base_margin=scores)
    data.set_group(groups)
    if weights is not None:
        data.set_weight(np.array(weights, dtype=float))
    booster = xgboost.train(
        {"objective": "rank:ndcg", "eval_metric": list(metrics), "nthread": 1}, data, num_boost_round=0
    )
    printed = booster.eval(data, name="data")  # "[0]\tdata-ndcg@3:0.90494950584609712\t..."
    values = dict(field.removeprefix("data-").split(":") for field in printed.split("\t")[1:])
    return [float(values[metric]) for metric in metrics]


def _spark_rankings_frame(spark: object, rankings: dict) -> object:
    """The rankings as pyspark.ml's RankingEvaluator reads them (cached): one row per query,
    doc ids become doubles, as it requires."""
    from pyspark.sql import types as spark_types

    numbers: dict[str, float] = {}
    for predicted, relevant in rankings.values():
        for doc in (*predicted, *relevant):
            numbers.setdefault(doc, float(len(numbers)))
    schema = spark_types.StructType(
        [
            spark_types.StructField("query_id", spark_types.StringType()),
            spark_types.StructField("prediction", spark_types.ArrayType(spark_types.DoubleType())),
            spark_types.StructField("label", spark_types.ArrayType(spark_types.DoubleType())),
        ]
    )
    rows = [
        (query, [numbers[d] for d in predicted], [numbers[d] for d in relevant])
        for query, (predicted, relevant) in rankings.items()
    ]
    return spark.createDataFrame(rows, schema).cache()  # type: ignore[attr-defined]


def spark_per_query(spark: object, rankings: dict, metric: str, cutoffs: tuple[int, ...]) -> dict:
    """{(query, k): metric at k} (``ndcgAtK``, ``meanAveragePrecisionAtK``) from pyspark.ml's
    RankingEvaluator (the DataFrame front of mllib's RankingMetrics), one query at a time."""
    from pyspark.ml.evaluation import RankingEvaluator

    frame = _spark_rankings_frame(spark, rankings)
    table = {}
    for query in rankings:
        one_query = frame.where(frame.query_id == query)  # type: ignore[attr-defined]
        for k in cutoffs:
            evaluator = RankingEvaluator(metricName=metric, k=k, predictionCol="prediction", labelCol="label")
            table[(query, k)] = evaluator.evaluate(one_query)
    frame.unpersist()  # type: ignore[attr-defined]
    return table


def spark_ndcg_per_query(spark: object, rankings: dict, cutoffs: tuple[int, ...]) -> dict:
    """{(query, k): ndcgAt(k)} from pyspark.ml's RankingEvaluator, one query at a time."""
    return spark_per_query(spark, rankings, "ndcgAtK", cutoffs)


def spark_mllib_mean(spark: object, rankings: dict, k: int) -> float:
    """pyspark.mllib RankingMetrics(rdd).ndcgAt(k) over every query: Spark's own mean. Its
    schema is inferred from the first row, so a query with relevant documents goes first."""
    from pyspark.mllib.evaluation import RankingMetrics

    rows = sorted(rankings.values(), key=lambda ranking: not ranking[1])
    return float(RankingMetrics(spark.sparkContext.parallelize(rows)).ndcgAt(k))  # type: ignore[attr-defined]


def spark_mllib_means(spark: object, rankings: dict, cutoffs: tuple[int, ...]) -> dict[tuple[str, int], float]:
    """{(metric, k): Spark's mean}: pyspark.mllib RankingMetrics' meanAveragePrecisionAt(k),
    precisionAt(k) and recallAt(k) over every query, one RankingMetrics for all of them."""
    from pyspark.mllib.evaluation import RankingMetrics

    rows = sorted(rankings.values(), key=lambda ranking: not ranking[1])  # schema from a non-empty row
    metrics = RankingMetrics(spark.sparkContext.parallelize(rows).cache())  # type: ignore[attr-defined]
    means = {}
    for k in cutoffs:
        means[("map", k)] = float(metrics.meanAveragePrecisionAt(k))
        means[("P", k)] = float(metrics.precisionAt(k))
        means[("recall", k)] = float(metrics.recallAt(k))
    return means
