"""``--query-weights``: one weight per query in the summary's means (pipeline/weights.py,
pipeline/aggregate.py). Expected values come from scikit-learn's ``ndcg_score(...,
sample_weight=...)`` run here (its per-sample weight is a per-query weight) and from a small case
written out by hand; every refusal names the file, the column, the first row and the count."""

from __future__ import annotations

import csv
import io
import json
import math
import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import polars as pl
import pytest

from pipeline import api
from pipeline.errors import InvalidInput, UsageError
from pipeline.job import Job, run_job
from pipeline.registry import Evaluation, QueryWeights
from pipeline.weights import (
    check_weight_totals,
    check_weighted_values_representable,
    list_weights,
    list_weights_source,
    weigh,
)
from tests.helpers import run_cli, settle

TOLERANCE = 1e-9
LN3 = math.log2(3)


def _write(tmp_path: Path, name: str, frame: pl.DataFrame) -> str:
    path = tmp_path / name
    frame.write_csv(path) if name.endswith(".csv") else frame.write_parquet(path)
    return str(path)


def _summary_row(summary: pl.DataFrame, k: int | None) -> dict:
    rows = summary.filter(pl.col("k").is_null() if k is None else pl.col("k") == k)
    assert rows.height == 1, summary
    return rows.row(0, named=True)


# --- the small case, by hand -------------------------------------------------------------------
# q1: d1 (rel 1), d2 (rel 0), d3 (rel 2) ranked in that order; q2: d1 (0), d2 (1); q3: d1 (1).
HAND_RUN = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2", "q3"],
        "doc_id": ["d1", "d2", "d3", "d1", "d2", "d1"],
        "score": [3.0, 2.0, 1.0, 3.0, 2.0, 1.0],
    }
)
HAND_QRELS = pl.DataFrame(
    {
        "query_id": ["q1", "q1", "q1", "q2", "q2", "q3"],
        "doc_id": ["d1", "d2", "d3", "d1", "d2", "d1"],
        "relevance": [1, 0, 2, 0, 1, 1],
    }
)
HAND_WEIGHTS = pl.DataFrame({"query_id": ["q1", "q2", "q3"], "weight": [2.0, 1.0, 0.5]})


def test_a_small_case_s_weighted_means_written_out_by_hand(tmp_path: Path) -> None:
    """Linear gains, discount log2(rank + 1): q1's DCG is 1 + 2/log2(4) = 2 and its ideal
    2 + 1/log2(3); q2's 1/log2(3) over 1; q3's 1. AP: q1 (1 + 2/3)/2, q2 1/2, q3 1."""
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS)
    result = api.evaluate(HAND_RUN, HAND_QRELS, measures="ndcg,map,gm_map,num_rel_ret", query_weights=weights)
    row = _summary_row(result.summary, None)
    ndcg = {"q1": 2 / (2 + 1 / LN3), "q2": 1 / LN3, "q3": 1.0}
    ap = {"q1": (1 + 2 / 3) / 2, "q2": 0.5, "q3": 1.0}
    assert row["queries"] == 3  # a count, never weighted
    assert row["ndcg"] == pytest.approx((2 * ndcg["q1"] + 1 * ndcg["q2"] + 0.5 * ndcg["q3"]) / 3.5, abs=TOLERANCE)
    assert row["map"] == pytest.approx((2 * ap["q1"] + 1 * ap["q2"] + 0.5 * ap["q3"]) / 3.5, abs=TOLERANCE)
    # the geometric mean weighted alike: exp of the weighted mean of the logarithms
    gm = math.exp((2 * math.log(ap["q1"]) + 1 * math.log(ap["q2"]) + 0.5 * math.log(ap["q3"])) / 3.5)
    assert row["gm_map"] == pytest.approx(gm, abs=TOLERANCE)
    assert row["num_rel_ret"] == 2 + 1 + 1  # a sum stays the sum of the queries' counts
    # the weights that made it, and the same means on the duckdb engine
    assert dict(result.query_weights.iter_rows()) == {"q1": 2.0, "q2": 1.0, "q3": 0.5}
    duckdb = api.evaluate(
        HAND_RUN, HAND_QRELS, engine="duckdb", measures="ndcg,map,gm_map,num_rel_ret", query_weights=weights
    )
    for name in ("ndcg", "map", "gm_map", "num_rel_ret"):
        assert _summary_row(duckdb.summary, None)[name] == pytest.approx(row[name], abs=TOLERANCE)
    # weights all 1 give the unweighted means exactly
    ones = _write(tmp_path, "ones.parquet", HAND_WEIGHTS.with_columns(weight=pl.lit(1.0)))
    plain = api.evaluate(HAND_RUN, HAND_QRELS, measures="ndcg,map,gm_map")
    weighted_alike = api.evaluate(HAND_RUN, HAND_QRELS, measures="ndcg,map,gm_map", query_weights=ones)
    for name in ("ndcg", "map", "gm_map"):
        assert _summary_row(weighted_alike.summary, None)[name] == pytest.approx(
            _summary_row(plain.summary, None)[name], abs=TOLERANCE
        )


# --- scikit-learn's ndcg_score with sample_weight, on random data --------------------------------
def _random_lists(seed: int, queries: int = 40, docs: int = 8) -> tuple[pl.DataFrame, pl.DataFrame, np.ndarray]:
    """Every query ranks ``docs`` judged documents by distinct scores (sklearn's ties, averaged
    over, never arise), at least one relevant; weights from 0 to 5, some exactly 0."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=(queries, docs))
    labels[:, 0] = np.maximum(labels[:, 0], 1)
    scores = np.stack([rng.permutation(docs) + rng.random() for _ in range(queries)]).astype(float)
    weights = np.round(rng.uniform(0, 5, size=queries), 3)
    weights[::7] = 0.0
    ids = [f"q{i:03d}" for i in range(queries)]
    rows = {
        "query_id": [ids[q] for q in range(queries) for _ in range(docs)],
        "doc_id": [f"d{d}" for _ in range(queries) for d in range(docs)],
    }
    run = pl.DataFrame({**rows, "score": scores.ravel(), "relevance": labels.ravel()})
    table = pl.DataFrame({"query_id": ids, "weight": weights})
    return run, table, weights


def test_weighted_ndcg_equals_scikit_learn_s_sample_weight(tmp_path: Path) -> None:
    """sklearn's ndcg_score: linear gains (the label), discount 1/log2(rank + 1), the ideal of
    the same labels: trec_eval's defaults, with no ties to break."""
    from sklearn.metrics import ndcg_score

    run, table, weights = _random_lists(seed=50)
    labels = run["relevance"].to_numpy().reshape(len(weights), -1)
    scores = run["score"].to_numpy().reshape(len(weights), -1)
    path = _write(tmp_path, "weights.parquet", table)
    expected = {k: ndcg_score(labels, scores, k=k, sample_weight=weights) for k in (5, None)}
    # sklearn's own unweighted mean differs: the weights are read
    assert abs(expected[5] - ndcg_score(labels, scores, k=5)) > 1e-3
    # (the duckdb engine's weighted means: the hand case above, and sql/ndcg.sql below)
    result = api.evaluate(run.drop("relevance"), run.drop("score"), k=5, query_weights=path)
    for k, value in expected.items():
        assert _summary_row(result.summary, k)["ndcg"] == pytest.approx(value, abs=TOLERANCE), k


def test_groups_are_weighted_means_of_their_own_queries(tmp_path: Path) -> None:
    """Each group's mean is sklearn's weighted mean over that group's queries, the overall row
    over all of them; ``queries`` stays a count."""
    from sklearn.metrics import ndcg_score

    run, table, weights = _random_lists(seed=7, queries=24)
    locale = ["de" if i % 3 == 0 else "fr" for i in range(24)]
    run = run.with_columns(locale=pl.col("query_id").str.slice(1).cast(pl.Int64).map_elements(lambda i: locale[i]))
    run_path = _write(tmp_path, "run.parquet", run.drop("relevance"))
    qrels_path = _write(tmp_path, "qrels.parquet", run.select("query_id", "doc_id", "relevance"))
    # CSV weights with another column name, and an extra row for a query not evaluated
    extra = pl.DataFrame({"query_id": ["unused"], "w": [9.0]})
    weights_path = _write(tmp_path, "weights.csv", pl.concat([table.rename({"weight": "w"}), extra]))
    job = Job(
        run=run_path,
        qrels=qrels_path,
        evaluation=Evaluation(cutoffs=(5,)),
        group_by=("locale",),
        weights=QueryWeights(weights_path, "w"),
    )
    (unit,) = run_job(job)
    labels = run["relevance"].to_numpy().reshape(24, -1)
    scores = run["score"].to_numpy().reshape(24, -1)
    summary = unit.summary.filter(pl.col("k") == 5)
    for group in ("de", "fr"):
        chosen = np.array([value == group for value in locale])
        row = summary.filter(pl.col("locale") == group).row(0, named=True)
        expected = ndcg_score(labels[chosen], scores[chosen], k=5, sample_weight=weights[chosen])
        assert row["ndcg"] == pytest.approx(expected, abs=TOLERANCE) and row["queries"] == chosen.sum()
    overall = summary.filter(pl.col("overall")).row(0, named=True)
    assert overall["ndcg"] == pytest.approx(ndcg_score(labels, scores, k=5, sample_weight=weights), abs=TOLERANCE)
    # the manifest says what weighed the means, and identifies the file
    assert unit.manifest["options"]["query_weights"] == {
        "path": weights_path,
        "weight_column": "w",
        "missing_query_weight": None,
    }
    assert unit.manifest["inputs"]["query_weights"]["identity"]["files"]


# --- refusals ----------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def hand_per_query() -> pl.DataFrame:
    return api.evaluate(HAND_RUN, HAND_QRELS, k=1).per_query


IDS = {"query_id": ["q1", "q2", "q3"]}
REFUSALS = [
    (
        {**IDS, "weight": [1.0, -2.0, 1.0]},
        r"1 row\(s\) with a negative weight in column 'weight', first row 2 \(query 'q2'",
    ),
    ({**IDS, "weight": [1.0, float("nan"), float("nan")]}, r"2 row\(s\) with a NaN weight .* first row 2"),
    ({**IDS, "weight": [1.0, 1.0, float("inf")]}, r"1 row\(s\) with an infinite weight .* first row 3"),
    ({**IDS, "weight": [None, 1.0, 1.0]}, r"1 row\(s\) with a null weight .* first row 1"),
    ({"query_id": ["q1", None, "q3"], "weight": [1.0, 1.0, 1.0]}, r"a null query id \(column 'query_id'\)"),
    (
        {"query_id": ["q1", "q2", "q1", "q3", "q3"], "weight": [1.0, 1.0, 2.0, 1.0, 1.0]},
        r"2 query\(ies\) weighted more than once, first 'q1' in rows 1, 3 \(weights 1.0, 2.0\); "
        "give each query one row",
    ),
    (
        {"query_id": ["q1", "q3"], "weight": [1.0, 1.0]},
        r"1 of the 3 evaluated queries have no weight, e.g. 'q2'; add a row for each, "
        "or give --missing-query-weight W",
    ),
    ({**IDS, "weight": [0.0, 0.0, 0.0]}, r"all 3 evaluated queries weigh 0, so their weighted mean is 0/0"),
    # Float64 keeps few digits below 2.2250738585072014e-308: weights of 5e-324 gave a mean of 1.0 for 0.8155
    (
        {**IDS, "weight": [1.0, 5e-324, 0.0]},
        r"1 row\(s\) with a subnormal weight \(above 0, below 2.2250738585072014e-308: .*scale every weight up\) "
        r".* first row 2 \(query 'q2', weight 5e-324\)",
    ),
    # their sum overflows: inf / inf, a mean of 0.0 printed with exit 0
    (
        {**IDS, "weight": [1e308, 1e308, 1.0]},
        r"the 3 evaluated queries weigh more together than Float64 holds \(their sum overflows\), so their "
        r"weighted mean is inf/inf; scale every weight down",
    ),
    (
        {**IDS, "wt": [1.0, 1.0, 1.0]},
        r"no weight column 'weight'; columns found: 'query_id', 'wt'; name it with --weight-col",
    ),
    ({**IDS, "weight": ["a", "b", "c"]}, r"weight column 'weight' holds String values; expected numbers"),
    (
        {"qid": IDS["query_id"], "weight": [1.0, 1.0, 1.0]},
        r"no column 'query_id' to join query weights on; columns found: 'qid', 'weight'",
    ),
]


@pytest.mark.parametrize(("rows", "message"), REFUSALS)
def test_each_bad_weights_table_is_refused_naming_its_rows(
    tmp_path: Path, hand_per_query: pl.DataFrame, rows: dict, message: str
) -> None:
    path = _write(tmp_path, "weights.parquet", pl.DataFrame(rows))
    with pytest.raises(InvalidInput, match=message) as refused:
        weigh(hand_per_query, QueryWeights(path))
    assert str(refused.value).startswith(path) and refused.value.exit_code == 3


def test_check_refuses_what_evaluate_refuses_before_it_evaluates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``check()`` (``ndcg validate``) reads the table by evaluate's rules and wants a weight for
    each query with results and judgments, in evaluate's words; evaluate reads the table before
    the engine runs, so that a bad table fails a long job at once. The checks neither can make
    before the per-query table exists, of the evaluated queries' total weight (0, or more than
    Float64 holds), are evaluate's."""
    for rows, message in REFUSALS:
        if "weigh 0" in message or "weigh more together" in message:
            continue
        path = _write(tmp_path, "weights.parquet", pl.DataFrame(rows))
        with pytest.raises(InvalidInput, match=message):
            api.check(HAND_RUN, HAND_QRELS, query_weights=path)
    short = _write(tmp_path, "short.parquet", HAND_WEIGHTS.head(2))
    assert api.check(HAND_RUN, HAND_QRELS, query_weights=short, missing_query_weight=1) == ()
    # q4 has results and no judgments: not evaluated by default, so it needs no weight
    extra = pl.concat([HAND_RUN, pl.DataFrame({"query_id": ["q4"], "doc_id": ["d1"], "score": [1.0]})])
    warned = api.check(extra, HAND_QRELS, query_weights=_write(tmp_path, "all.parquet", HAND_WEIGHTS))
    assert [warning.code for warning in warned] == ["queries_only_in_run"]

    def no_engine(*args: object) -> None:
        raise AssertionError("the engine ran before the weights were read")

    monkeypatch.setattr("pipeline.units._evaluate", no_engine)
    negative = _write(tmp_path, "negative.parquet", pl.DataFrame(REFUSALS[0][0]))
    with pytest.raises(InvalidInput, match=REFUSALS[0][1]):
        api.evaluate(HAND_RUN, HAND_QRELS, query_weights=negative)


def test_validate_takes_the_weights_flags_and_exits_3_in_evaluate_s_words(tmp_path: Path) -> None:
    run = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    short = _write(tmp_path, "short.parquet", HAND_WEIGHTS.head(2).rename({"weight": "w"}))
    flags = ("--run", run, "--qrels", qrels, "--query-weights", short, "--weight-col", "w")
    refused = run_cli("validate", *flags)
    said = "1 of the 3 evaluated queries have no weight, e.g. 'q3'"
    assert refused.returncode == 3 and f"invalid: {short}: {said}" in refused.stdout, refused.stdout
    assert said in run_cli("evaluate", *flags).stderr
    accepted = run_cli("validate", *flags, "--missing-query-weight", "0.5", "--json")
    assert accepted.returncode == 0 and json.loads(accepted.stdout)["valid"] is True, accepted.stdout


def test_a_missing_weight_takes_the_weight_named_and_a_zero_group_is_refused(
    tmp_path: Path, hand_per_query: pl.DataFrame
) -> None:
    path = _write(tmp_path, "weights.parquet", pl.DataFrame({"query_id": ["q1"], "weight": [2.0]}))
    found = weigh(hand_per_query, QueryWeights(path, missing=0.5))
    assert dict(found.iter_rows()) == {"q1": 2.0, "q2": 0.5, "q3": 0.5}
    locale = pl.when(pl.col("query_id") == "q1").then(pl.lit("de")).otherwise(pl.lit("fr"))
    grouped = hand_per_query.with_columns(locale=locale)
    zero_group = r"all 2 evaluated queries of group locale='fr' \(1 such group\(s\)\) weigh 0"
    with pytest.raises(InvalidInput, match=zero_group):
        weigh(grouped, QueryWeights(path, missing=0.0), group_by=("locale",))
    # CSV: an empty field is a null weight, its row counted without the header
    csv = tmp_path / "weights.csv"
    csv.write_text("query_id,weight\nq1,1\nq2,\nq3,1\n")
    null_row = r"weights.csv: 1 row\(s\) with a null weight in column 'weight', first row 2"
    with pytest.raises(InvalidInput, match=null_row):
        weigh(hand_per_query, QueryWeights(str(csv)))


def test_the_command_line_says_the_means_are_weighted_and_refuses_with_exit_3(tmp_path: Path) -> None:
    run = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS)
    shown = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "3", "--query-weights", weights)
    assert shown.returncode == 0, shown.stderr
    assert f"# query weights: {weights} (column weight): each mean is sum(w*x)/sum(w)" in shown.stdout
    as_json = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "3", "--query-weights", weights, "--json")
    payload = json.loads(as_json.stdout)
    assert payload["query_weights"] == {"path": weights, "weight_column": "weight", "missing_query_weight": None}
    ndcg = {"q1": 2 / (2 + 1 / LN3), "q2": 1 / LN3, "q3": 1.0}
    whole = next(row for row in payload["summary"] if row["k"] is None)
    assert whole["ndcg"] == pytest.approx((2 * ndcg["q1"] + ndcg["q2"] + 0.5 * ndcg["q3"]) / 3.5, abs=TOLERANCE)
    short = _write(tmp_path, "short.parquet", HAND_WEIGHTS.head(2))
    refused = run_cli("evaluate", "--run", run, "--qrels", qrels, "--query-weights", short)
    assert refused.returncode == 3 and "1 of the 3 evaluated queries have no weight, e.g. 'q3'" in refused.stderr
    assert "Traceback" not in refused.stderr
    # the config file's key and the flag that names the default weight
    config = tmp_path / "eval.toml"
    config.write_text(f'run = "{run}"\nqrels = "{qrels}"\nquery-weights = "{short}"\nmissing-query-weight = 1\n')
    configured = run_cli("evaluate", "--config", str(config), "--k", "3", "--json")
    assert configured.returncode == 0, configured.stderr
    assert json.loads(configured.stdout)["query_weights"]["missing_query_weight"] == 1.0
    gdeval = run_cli("evaluate", "--run", run, "--qrels", qrels, "--query-weights", weights, "--output-format=gdeval")
    assert gdeval.returncode == 2 and "cannot go with --query-weights" in gdeval.stderr


def test_the_report_refuses_weighted_outputs_rather_than_draw_them_unweighted(tmp_path: Path) -> None:
    # (compare and its gate weigh them: tests/test_compare_weights.py)
    run = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS)
    made = run_cli("evaluate", "--run", run, "--qrels", qrels, "--query-weights", weights, "--out", tmp_path / "base")
    assert made.returncode == 0, made.stderr
    # the report's per-query means and figures count every query alike: refused as well
    report = run_cli("report", tmp_path / "base", "--html", tmp_path / "report.html")
    assert report.returncode == 2 and "ndcg report does not weigh queries yet" in report.stderr
    assert not (tmp_path / "report.html").exists()


def test_spark_s_weighted_summaries_equal_polars(tmp_path: Path, local_spark: object) -> None:
    """Query weights and TF-Ranking's document weights (their checks' words too) on Spark as on Polars."""
    from pipeline.engines import spark as spark_engine

    run, table, _ = _random_lists(seed=3, queries=12)
    run_path = _write(tmp_path, "run.parquet", run.drop("relevance"))
    qrels_path = _write(tmp_path, "qrels.parquet", run.select("query_id", "doc_id", "relevance"))
    path = _write(tmp_path, "weights.parquet", table)
    polars = api.evaluate(run_path, qrels_path, k=5, measures="ndcg,map,gm_map", query_weights=path).summary
    spark = api.evaluate(run_path, qrels_path, k=5, measures="ndcg,map,gm_map", engine="spark", query_weights=path)
    for k in (5, None):
        for name in ("ndcg", "map", "gm_map"):
            expected = _summary_row(polars, k)[name]
            assert _summary_row(spark.summary, k)[name] == pytest.approx(expected, abs=TOLERANCE), (k, name)
    # per-document weights: some 0 (the result leaves the list), tied scores, a query with none relevant
    rng = np.random.default_rng(4)
    weighted = run.with_columns(
        score=pl.col("score").floor() // 3,
        w=pl.Series(rng.integers(0, 9, run.height) / 4),
        relevance=pl.when(pl.col("query_id") == "q001").then(0).otherwise(pl.col("relevance")),
    )
    weighted_run = _write(tmp_path, "weighted.parquet", weighted.drop("relevance"))
    weighted_qrels = _write(tmp_path, "weighted_qrels.parquet", weighted.select("query_id", "doc_id", "relevance"))
    options = {
        "k": [3, 5],
        "measures": "ndcg,P,recall,map,recip_rank,success",
        "profile": "tfranking",
        "doc_weight_col": "w",
    }
    by_engine = {
        engine: api.evaluate(weighted_run, weighted_qrels, engine=engine, **options) for engine in ("polars", "spark")
    }
    ours, theirs = by_engine["polars"], by_engine["spark"]
    for name in ("per_query", "summary", "query_weights"):
        expected, found = (
            getattr(ours, name),
            getattr(theirs, name).sort(getattr(ours, name).columns[:2], nulls_last=False),
        )
        expected = expected.sort(expected.columns[:2], nulls_last=False)
        assert expected.columns == found.columns and expected.height == found.height, name
        for column in expected.columns:
            if expected.schema[column].is_float():
                assert ((expected[column] - found[column]).abs() < TOLERANCE).all(), (name, column)
                assert expected[column].is_null().to_list() == found[column].is_null().to_list(), (name, column)
            else:
                assert expected[column].to_list() == found[column].to_list(), (name, column)
    # Spark's own list weight sums: a label of -1 is not relevant under --relevance-threshold -1
    # (it was: weight_P (2 + 1) / 2 where TF-Ranking's sum(w x rel) / sum(rel) is 1 / 1); the run's
    # weight column named "relevance" (--doc-weight-col relevance) is no label
    lists = SimpleNamespace(
        run=local_spark.createDataFrame(  # type: ignore[attr-defined]
            [("q1", "a", 2.0, 2.0), ("q1", "b", 1.0, 1.0), ("q2", "a", 3.0, 3.0)],
            ["query_id", "doc_id", "doc_weight", "relevance"],
        ),
        qrels=local_spark.createDataFrame(  # type: ignore[attr-defined]
            [("q1", "a", -1), ("q1", "b", 1), ("q2", "a", 0)], ["query_id", "doc_id", "relevance"]
        ),
    )
    negative = api.make_evaluation(doc_weight_col="w", relevance_threshold=-1, measures="ndcg,P")
    sums = spark_engine.list_weight_sums(lists, negative).sort("query_id")  # type: ignore[arg-type]
    # q1: only b (label 1) is relevant, weight 1; q2: a (label 0 >= max(-1, 0)) is, weight 3
    assert sums.select("relevant", "weighted_relevant").rows() == [(1.0, 1.0), (1.0, 3.0)]
    # the lazy Spark API plans the same weighted summary in Spark
    lazy = spark_engine.evaluate(weighted_run, weighted_qrels, evaluation=api.make_evaluation(**options))
    planned = spark_engine._to_polars(lazy.summary)
    expected = ours.summary.sort("k", nulls_last=False)
    assert planned.columns == expected.columns and planned.height == expected.height
    for column in expected.columns:
        if expected.schema[column].is_float():
            assert ((expected[column] - planned[column]).abs() < TOLERANCE).all(), column
            assert expected[column].is_null().to_list() == planned[column].is_null().to_list(), column
        else:
            assert expected[column].to_list() == planned[column].to_list(), column
    # its summary's refusals, in the command line's words, on small tables (no statement planned again):
    # queries that all weigh 0, then weights whose products overflow (the words before the value)
    evaluation = api.make_evaluation(**options)
    table = pl.DataFrame(
        {"query_id": ["q1", "q2"], "k": [None, None], "ndcg": [1.0, 0.5], "cg": [1.0, math.inf], "idcg": [1.0, 1.0]},
        schema_overrides={"k": pl.Int64},
    )
    sums = {
        "results": [1, 1],
        "weighted_gain": [1.0, 2.0],
        "gain": [1.0, 1.0],
        "weighted_relevant": [1.0, 2.0],
        "relevant": [1.0, 1.0],
    }
    weightless = pl.DataFrame({"query_id": ["q1", "q2"], **sums, "results": [0, 0]})
    with pytest.raises(InvalidInput, match="all 2 evaluated queries weigh 0") as error:
        check_weight_totals(table, list_weights(table, weightless), list_weights_source("run.parquet", evaluation))
    overflown = pl.DataFrame({"query_id": ["q1", "q2"], **sums})
    with pytest.raises(InvalidInput, match="too large: weight x gain overflows Float64 in query 'q2'") as overflow:
        check_weighted_values_representable(table, list_weights(table, overflown), "w", "run.parquet")
    for sums_table, words in ((weightless, str(error.value)), (overflown, str(overflow.value).split(" (")[0])):
        planned = spark_engine.list_weighted_summary(
            local_spark.createDataFrame(table.to_arrow()),  # type: ignore[attr-defined]
            local_spark.createDataFrame(sums_table.to_arrow()),  # type: ignore[attr-defined]
            "run.parquet",
            evaluation,
        )
        with pytest.raises(Exception, match=re.escape(words)):
            planned.collect()
    # a bad weight in the same words
    bad = _write(tmp_path, "bad.parquet", weighted.drop("relevance").with_columns(w=pl.col("w") - 1))
    said = {}
    for engine in ("polars", "spark"):
        with pytest.raises(
            InvalidInput, match="row\\(s\\) with a negative weight in column 'w', first: query"
        ) as error:
            api.evaluate(bad, weighted_qrels, engine=engine, **options)
        said[engine] = str(error.value)
    assert said["spark"] == said["polars"]


def test_lightgbm_s_row_weights_and_xgboost_s_group_weights_are_query_weights(tmp_path: Path) -> None:
    """LightGBM weighs each query by the mean of its rows' weights, XGBoost by its group's one
    weight: with that table as --query-weights, their own ndcg@k under their profiles. Weights
    in eighths, so that LightGBM's and XGBoost's float32 holds them (and the mean of eight) exactly."""
    from tests.helpers.peers import PEER_TOLERANCE, lightgbm_ndcg, xgboost_ndcg

    run, _, _ = _random_lists(seed=11, queries=16)
    rng = np.random.default_rng(11)
    row_weights = rng.integers(1, 25, size=run.height) / 8
    ids = run["query_id"].unique(maintain_order=True).to_list()
    means = (
        run.with_columns(weight=pl.Series(row_weights))
        .group_by("query_id", maintain_order=True)
        .agg(pl.col("weight").mean())
    )
    group_weights = rng.integers(1, 25, size=len(ids)) / 8
    labels, scores, groups = run["relevance"].to_list(), run["score"].to_list(), [8] * len(ids)
    lightgbm = lightgbm_ndcg(labels, scores, groups, (3,), weights=row_weights.tolist())[0]
    xgboost = xgboost_ndcg(labels, scores, groups, ("ndcg@3",), weights=group_weights.tolist())[0]
    for profile, table, expected in (
        ("lightgbm", means, lightgbm),
        ("xgboost", pl.DataFrame({"query_id": ids, "weight": group_weights}), xgboost),
    ):
        path = _write(tmp_path, f"{profile}.parquet", table)
        summary = api.evaluate(run.drop("relevance"), run.drop("score"), k=3, profile=profile, query_weights=path)
        assert _summary_row(summary.summary, 3)["ndcg"] == pytest.approx(expected, abs=PEER_TOLERANCE), profile
        plain = api.evaluate(run.drop("relevance"), run.drop("score"), k=3, profile=profile).summary
        assert abs(_summary_row(plain, 3)["ndcg"] - expected) > 1e-4  # the weights change the number


def test_the_sql_statement_of_the_conventions_page_gives_the_weighted_means(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The macros take no weights; the page's statement weighs their per-query table in SQL, and
    gives the job's weighted means (and refuses a query without a weight)."""
    import duckdb

    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "conventions.md").read_text(encoding="utf-8")
    section = page[page.index("## Query weights") :]
    statement = section[section.index("```sql\n") + 7 : section.index("```", section.index("```sql\n") + 7)]
    monkeypatch.chdir(root)
    connection = duckdb.connect()
    # the shipped file (tests/test_sql_macros.py holds it to the generator, which takes seconds)
    connection.execute((root / "sql" / "generated" / "macros.sql").read_text(encoding="utf-8"))
    rows = connection.execute(statement).fetchall()
    expected = api.evaluate(
        "docs/conventions/weights.run",
        "docs/conventions/weights.qrels",
        k=3,
        query_weights="docs/conventions/weights.csv",
    ).summary
    assert [row[0] for row in rows] == [None, 3]
    for k, queries, ndcg in rows:
        assert queries == 3 and ndcg == pytest.approx(_summary_row(expected, k)["ndcg"], abs=TOLERANCE)
    (tmp_path / "short.csv").write_text("query_id,weight\nq1,2\nq2,1\n")
    short = statement.replace("docs/conventions/weights.csv", str(tmp_path / "short.csv"))
    assert short != statement
    with pytest.raises(duckdb.Error, match="query q3 has no weight"):
        connection.execute(short).fetchall()
    connection.close()


def test_skip_unchanged_recomputes_when_the_weights_change(tmp_path: Path) -> None:
    run = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS)
    out = tmp_path / "out"
    job = Job(run=run, qrels=qrels, evaluation=Evaluation(cutoffs=(3,)), out=str(out), weights=QueryWeights(weights))
    decisions: list[tuple[bool, str]] = []

    def decided(_partition: object, skipped: bool, reason: str) -> None:
        decisions.append((skipped, reason))

    settle(tmp_path)  # inputs changed just before they are read are recomputed next time
    run_job(job)
    assert run_job(replace(job, skip_unchanged=True), on_decision=decided) == [] and decisions[-1][0], decisions
    _write(tmp_path, "weights.parquet", HAND_WEIGHTS.with_columns(weight=pl.lit(1.0)))
    settle(tmp_path)
    (unit,) = run_job(replace(job, skip_unchanged=True), on_decision=decided)
    assert not decisions[-1][0] and "query_weights" in decisions[-1][1], decisions[-1]
    # all weights 1 now: the plain mean of the three NDCG
    expected = (2 / (2 + 1 / LN3) + 1 / LN3 + 1.0) / 3
    assert _summary_row(unit.summary, 3)["ndcg"] == pytest.approx(expected, abs=TOLERANCE)
    # no weights at all is another option: recomputed too
    run_job(replace(job, skip_unchanged=True, weights=QueryWeights()), on_decision=decided)
    assert not decisions[-1][0] and "options changed: query_weights" in decisions[-1][1], decisions[-1]


def _ndcg_sql(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """sql/ndcg.sql in the duckdb CLI from the repository root, with ``SET VARIABLE`` settings."""
    root = Path(__file__).resolve().parent.parent
    commands = [argument for setting in settings for argument in ("-cmd", f"SET VARIABLE {setting}")]
    duckdb_cli = Path(sys.executable).parent / "duckdb"
    return subprocess.run(
        [str(duckdb_cli), "-csv", *commands, "-c", ".read sql/ndcg.sql"],
        capture_output=True,
        text=True,
        cwd=root,
        timeout=120,
    )


def test_ndcg_sql_weighs_its_summary_as_the_job_does(tmp_path: Path) -> None:
    """``SET VARIABLE query_weights_path`` before ``.read sql/ndcg.sql``: every column of the job's
    weighted summary (tie bounds, a sum and a geometric mean among them); its refusals are the
    next test's."""
    run, table, _ = _random_lists(seed=5, queries=20)
    run_path = _write(tmp_path, "run.parquet", run.drop("relevance"))
    qrels_path = _write(tmp_path, "qrels.parquet", run.select("query_id", "doc_id", "relevance"))
    weights = _write(tmp_path, "weights.csv", table)
    measures = "ndcg,map,gm_map,num_rel_ret,P"
    expected = api.evaluate(
        run_path, qrels_path, k=[3, 5], measures=measures, tie_bounds=True, query_weights=weights
    ).summary
    settings = [
        f"run_path = '{run_path}'",
        f"qrels_path = '{qrels_path}'",
        "ks = [3, 5]",
        f"measures = {measures.split(',')}",
        "tie_bounds = true",
        f"query_weights_path = '{weights}'",
    ]
    printed = _ndcg_sql(tmp_path, *settings)
    assert printed.returncode == 0, printed.stderr
    rows = list(csv.DictReader(io.StringIO(printed.stdout)))
    assert len(rows) == expected.height == 3
    for row in rows:
        k = None if row["k"] == "NULL" else int(row["k"])
        ours = _summary_row(expected, k)
        assert set(row) == set(ours), set(row) ^ set(ours)
        for column, value in ours.items():
            if value is not None:
                assert float(row[column]) == pytest.approx(value, abs=TOLERANCE), (k, column)


@pytest.mark.parametrize(("rows", "message"), REFUSALS)
def test_the_sql_rules_refuse_each_bad_table_in_the_command_line_s_words(
    tmp_path: Path, hand_per_query: pl.DataFrame, rows: dict, message: str
) -> None:
    """sql/query_weights.sql and sql/query_weight_rules.sql over the same per-query table refuse
    what pipeline/weights.py refuses, in its words (the fix in SQL's terms: a variable, a view)."""
    import duckdb

    root = Path(__file__).resolve().parent.parent
    path = _write(tmp_path, "weights.parquet", pl.DataFrame(rows))
    with pytest.raises(InvalidInput) as refused:
        weigh(hand_per_query, QueryWeights(path))
    words = (
        str(refused.value)
        .replace("give --missing-query-weight W", "SET VARIABLE missing_query_weight = W")
        .replace("name it with --weight-col", "name it weight in a view")
    )
    connection = duckdb.connect()
    connection.register("per_query_frame", hand_per_query.to_arrow())
    connection.execute("create table per_query as from per_query_frame")
    connection.execute("set variable query_weights_path = ?", [path])
    for name in ("query_weights.sql", "query_weight_rules.sql"):
        connection.execute((root / "sql" / name).read_text(encoding="utf-8"))
    with pytest.raises(duckdb.Error) as sql_refused:
        connection.execute("from query_weights").fetchall()
    assert words in str(sql_refused.value)
    connection.close()


def test_a_missing_query_weight_is_refused_alike_by_the_api_and_sql_ndcg_sql(tmp_path: Path) -> None:
    """The weight of a query without a row: negative, infinite or subnormal (its products lose
    their digits) is refused by the API (it was taken, exit 0) and by sql/ndcg.sql's rules (it
    was taken too), in one set of words; 0 and a normal number are taken."""
    import duckdb

    root = Path(__file__).resolve().parent.parent
    run_path = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels_path = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS.head(2))
    connection = duckdb.connect()
    settings = {"ks": "[1]", "run_path": f"'{run_path}'", "qrels_path": f"'{qrels_path}'"}
    settings["query_weights_path"] = f"'{weights}'"
    files = ("input_columns.sql", "inputs.sql", "aligned_inputs.sql", "generated/derived_variables.sql")
    for given, words in (
        (-1.0, "missing_query_weight: expected a finite number >= 0, got '-1.0'"),
        (float("inf"), "missing_query_weight: expected a finite number >= 0, got 'inf'"),
        (
            1e-320,
            "missing_query_weight: expected 0 or a finite number from 2.2250738585072014e-308 up (a subnormal "
            "weight keeps few digits), got '1e-320'",
        ),
        (0.0, None),
        (2.5e-300, None),
    ):
        for name, value in {**settings, "missing_query_weight": f"'{given!r}'::double"}.items():
            connection.execute(f"SET VARIABLE {name} = {value}")
        for file in (*files, "generated/refusals.sql"):
            connection.execute((root / "sql" / file).read_text())
        if words is None:
            assert api.evaluate(run_path, qrels_path, query_weights=weights, missing_query_weight=given).summary.height
            assert connection.execute("select count(refused) from refusals").fetchall() == [(0,)]
            continue
        with pytest.raises(UsageError) as refused:
            api.evaluate(run_path, qrels_path, query_weights=weights, missing_query_weight=given)
        assert str(refused.value) == words
        with pytest.raises(duckdb.Error) as sql_refused:
            connection.execute("select count(refused) from refusals").fetchall()
        assert str(sql_refused.value).removeprefix("Invalid Input Error: ") == words
    connection.close()


def test_a_missing_query_weight_given_to_the_api_as_any_real_number(tmp_path: Path) -> None:
    """NumPy's integers are numbers (np.int64(1) was refused as "expected a number"); an integer
    too large for Float64 is refused in the words of an infinite one (it was a traceback,
    OverflowError)."""
    weights = _write(tmp_path, "weights.parquet", HAND_WEIGHTS.head(1))  # q1 weighs 2, q2 and q3 the missing 1
    result = api.evaluate(HAND_RUN, HAND_QRELS, query_weights=weights, missing_query_weight=np.int64(1))
    ndcg = {"q1": 2 / (2 + 1 / LN3), "q2": 1 / LN3, "q3": 1.0}
    expected = (2 * ndcg["q1"] + ndcg["q2"] + ndcg["q3"]) / 4
    assert _summary_row(result.summary, None)["ndcg"] == pytest.approx(expected, abs=TOLERANCE)
    with pytest.raises(UsageError) as refused:
        api.evaluate(HAND_RUN, HAND_QRELS, query_weights=weights, missing_query_weight=10**400)
    assert str(refused.value) == "missing_query_weight: expected a finite number >= 0, got '1.00e+400'"


def test_weights_near_float64_s_largest_give_the_written_out_means(tmp_path: Path) -> None:
    """Weights of 1e308, 5e307 and 2.5e307 (2 : 1 : 0.5, their sum 1.75e308 held by Float64)
    weigh the means as 2, 1 and 0.5 do, on both engines and sql/ndcg.sql: w x cg overflowed
    (1e308 x 3), a mean cg of inf printed with exit 0."""
    huge = _write(tmp_path, "huge.csv", HAND_WEIGHTS.with_columns(pl.col("weight") * 5e307))
    ndcg = {"q1": 2 / (2 + 1 / LN3), "q2": 1 / LN3, "q3": 1.0}
    ap = {"q1": (1 + 2 / 3) / 2, "q2": 0.5, "q3": 1.0}
    expected = {
        "cg": (2 * 3 + 1 * 1 + 0.5 * 1) / 3.5,  # q1: 1 + 0 + 2, q2: 1, q3: 1
        "ndcg": (2 * ndcg["q1"] + 1 * ndcg["q2"] + 0.5 * ndcg["q3"]) / 3.5,
        "gm_map": math.exp((2 * math.log(ap["q1"]) + 1 * math.log(ap["q2"]) + 0.5 * math.log(ap["q3"])) / 3.5),
    }
    for engine in ("polars", "duckdb"):
        row = _summary_row(
            api.evaluate(HAND_RUN, HAND_QRELS, engine=engine, measures="gm_map", query_weights=huge).summary, None
        )
        for name, value in expected.items():
            assert row[name] == pytest.approx(value, abs=TOLERANCE), (engine, name)
    run_path = _write(tmp_path, "run.parquet", HAND_RUN)
    qrels_path = _write(tmp_path, "qrels.parquet", HAND_QRELS)
    settings = [f"run_path = '{run_path}'", f"qrels_path = '{qrels_path}'", "ks = [1]", "measures = ['gm_map']"]
    printed = _ndcg_sql(tmp_path, *settings, f"query_weights_path = '{huge}'")
    assert printed.returncode == 0, printed.stderr
    whole = next(row for row in csv.DictReader(io.StringIO(printed.stdout)) if row["k"] == "NULL")
    for name, value in expected.items():
        assert float(whole[name]) == pytest.approx(value, abs=TOLERANCE), ("sql/ndcg.sql", name)
