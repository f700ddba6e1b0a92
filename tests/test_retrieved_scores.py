"""The retrieved_scores convention: under ``positive`` a result scored 0 or below is not
retrieved (torchmetrics' precision, recall, MAP and MRR since 1.7.4). Expected values are the
ones torchmetrics' own tests assert, and arithmetic written out here.

torchmetrics' rule (Lightning-AI/torchmetrics, PR #3160, commit 393f62b6d, released in 1.7.4 and
every release since), in src/torchmetrics/functional/retrieval/precision.py, recall.py,
average_precision.py and reciprocal_rank.py::

    target = torch.where(preds > 0, target, torch.zeros_like(target))

before the top-k ranks are read: a result scored 0 or below is never counted relevant. Ranked
by score it comes after every positive score, so this equals removing it from the ranking: no
rank above it moves, and R (recall's ``target.sum()``, taken before the rule) keeps it.
"""

from __future__ import annotations

from math import log2

import polars as pl
import pytest

from pipeline import evaluate, per_query
from pipeline.registry import CONVENTION

MEASURES = "P,recall,map,recip_rank,num_ret,num_rel_ret"

# torchmetrics' tests test_{precision,recall,map,mrr}_all_zero_predictions_returns_zero
# (tests/unittests/retrieval/test_precision.py, test_recall.py, test_map.py, test_mrr.py at
# 393f62b6d): preds [0.0, 0.0, 0.0], target [1, 0, 1], one query; RetrievalPrecision(),
# RetrievalRecall(), RetrievalMAP() and RetrievalMRR() each assert 0.0.
TORCHMETRICS_ZEROS = [("zeros", "a", 0.0, 1), ("zeros", "b", 0.0, 0), ("zeros", "c", 0.0, 1)]
# m: a 0.9 (1), b 0.5 (0), e 0.2 (0), c 0.0 (2), d -0.3 (1); relevant a, c, d (R = 3)
MIXED = [("m", "a", 0.9, 1), ("m", "b", 0.5, 0), ("m", "c", 0.0, 2), ("m", "d", -0.3, 1), ("m", "e", 0.2, 0)]


def rows_of(results: list[tuple], engine: str, **options: object) -> dict:
    run = pl.LazyFrame([r[:3] for r in results], schema=["query_id", "doc_id", "score"], orient="row")
    qrels = pl.LazyFrame(
        [(r[0], r[1], r[3]) for r in results], schema=["query_id", "doc_id", "relevance"], orient="row"
    )
    table = per_query(run, qrels, engine=engine, measures=MEASURES, **options).collect()  # type: ignore[arg-type]
    return {(row["query_id"], row["k"]): row for row in table.iter_rows(named=True)}


def test_the_convention_is_registered_with_trec_eval_as_default() -> None:
    convention = CONVENTION["retrieved_scores"]
    assert convention.values == ("all", "positive") and convention.default == "all"
    assert convention.flag == "--retrieved-scores"


def test_positive_scores_only_as_torchmetrics(engine: str) -> None:
    results = TORCHMETRICS_ZEROS + MIXED
    positive = rows_of(results, engine, k=[2, 3, 5], retrieved_scores="positive")
    every = rows_of(results, engine, k=[2, 3, 5], retrieved_scores="all")

    # torchmetrics' asserted values: every score is 0, so nothing is retrieved and P, recall,
    # AP and RR are 0; the query is still evaluated (torchmetrics averages its 0 in), with an
    # empty ranking, and its NDCG is an empty ranking's: DCG 0 over a positive IDCG
    for k in (3, None):
        row = positive[("zeros", k)]
        assert (row["recall"], row["map"], row["recip_rank"], row["num_ret"]) == (0.0, 0.0, 0.0, 0)
        assert row["ndcg"] == 0.0 and row["idcg"] == pytest.approx(1 + 1 / log2(3))
    assert positive[("zeros", 3)]["P"] == 0.0  # RetrievalPrecision's top_k is the list's 3
    # by default every result counts: c, b, a (doc_id descending among the tied 0.0)
    assert every[("zeros", 3)]["P"] == pytest.approx(2 / 3)
    assert every[("zeros", None)]["map"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert every[("zeros", None)]["recip_rank"] == 1.0

    # m under positive: a, b, e retrieved (c at 0.0 and d at -0.3 are not); R = 3 all the same
    m = {k: positive[("m", k)] for k in (2, 5, None)}
    assert m[None]["num_ret"] == 3 and m[None]["num_rel_ret"] == 1
    assert m[2]["P"] == pytest.approx(1 / 2) and m[5]["P"] == pytest.approx(1 / 5)  # torchmetrics: 1 / top_k
    assert m[5]["recall"] == pytest.approx(1 / 3)  # torchmetrics: 1 / target.sum()
    assert m[None]["recip_rank"] == 1.0  # torchmetrics: a at rank 1
    # trec_eval's AP (ap_denominator relevant): precision 1/1 at a, over R = 3 (torchmetrics'
    # own AP divides by the relevant results it retrieved, 1: not a convention here)
    assert m[None]["map"] == pytest.approx(1 / 3)
    ideal = 2 + 1 / log2(3) + 1 / log2(4)  # c (2), a (1), d (1): judged, retrieved or not
    assert m[5]["dcg"] == pytest.approx(1.0) and m[5]["ndcg"] == pytest.approx(1 / ideal)

    # m under all: a, b, e, c, d
    m = {k: every[("m", k)] for k in (5, None)}
    assert m[None]["num_ret"] == 5 and m[5]["P"] == pytest.approx(3 / 5) and m[5]["recall"] == 1.0
    assert m[None]["map"] == pytest.approx((1 / 1 + 2 / 4 + 3 / 5) / 3)
    assert m[5]["dcg"] == pytest.approx(1 + 2 / log2(5) + 1 / log2(6))


@pytest.mark.local_engines("input-order ties and first duplicates: refused on Spark")
def test_results_are_removed_after_duplicates_and_before_ranking(engine: str) -> None:
    # the rank column puts d (scored -1) first: removed before ranking and max_results, so the
    # two kept are a and b, and both are relevant
    run = pl.LazyFrame(
        {"query_id": ["q"] * 4, "doc_id": ["d", "a", "b", "c"], "score": [-1.0, 0.3, 0.2, 0.1], "rank": [1, 2, 3, 4]}
    )
    qrels = pl.LazyFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "relevance": [1, 1, 0, 1]})
    options = {"k": [2], "measures": MEASURES, "ties": "input-order", "max_results": 2}
    table = per_query(run, qrels, engine=engine, retrieved_scores="positive", **options).collect()  # type: ignore[arg-type]
    row = table.filter(pl.col("k") == 2).row(0, named=True)
    assert (row["P"], row["num_ret"], row["recall"]) == (1.0, 2, pytest.approx(2 / 3))
    # without the convention the rank column's d and a are the two kept
    table = per_query(run, qrels, engine=engine, **options).collect()  # type: ignore[arg-type]
    assert table.filter(pl.col("k") == 2)["P"].item() == 1.0
    assert table.filter(pl.col("k").is_null())["num_ret"].item() == 2
    assert table.filter(pl.col("k").is_null())["recall"].item() == pytest.approx(2 / 3)  # d, a of a, b, d

    # a document listed twice: the duplicates policy picks its row, then its score decides
    run = pl.LazyFrame({"query_id": ["q"] * 3, "doc_id": ["a", "a", "b"], "score": [-1.0, 0.7, 0.5]})
    qrels = pl.LazyFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]})
    for duplicates, retrieved in (("first", 1), ("max-score", 2)):
        table = per_query(
            run, qrels, engine=engine, k=[1], measures=MEASURES, duplicates=duplicates, retrieved_scores="positive"
        ).collect()
        whole = table.filter(pl.col("k").is_null()).row(0, named=True)
        assert whole["num_ret"] == retrieved, duplicates
        assert whole["recip_rank"] == (0.0 if duplicates == "first" else 1.0), duplicates
        # the warning counts the copy kept: under first, a's -1 is left out; under max-score, its 0.7 ranks
        warnings = evaluate(
            run, qrels, engine=engine, k=[1], duplicates=duplicates, retrieved_scores="positive"
        ).warnings
        assert [w.code for w in warnings] == (["results_not_retrieved"] if duplicates == "first" else []), duplicates
