"""Each convention option by hand, on both engines: expected values are visible arithmetic.

The conventions are defined in pipeline/registry/'s docstring; the engines' agreement with each
other and with tests/helpers/reference.py across all options is in tests/test_engines_agree.py.
"""

from __future__ import annotations

import json
import math
from math import log2
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import InvalidInput, UsageError, evaluate, make_evaluation, per_query
from pipeline.compare import convention_differences
from pipeline.compare_job import check_conventions
from pipeline.registry import CHOICES, PROFILES, Evaluation, Gain, SpecError
from tests.helpers import TOLERANCE, compute, run_cli
from tests.helpers.batch import Batch, Case, batch_name
from tests.helpers.cases import CASES, OPTION_CASES, run_frame
from tests.helpers.spark import per_query_on_spark

pytestmark = pytest.mark.local_engines("the command line in a subprocess; input-order ties and groups")


def frames(run: dict[str, list], qrels: dict[str, list]) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    return pl.LazyFrame(run), pl.LazyFrame(qrels)


def ndcg_rows(run: pl.LazyFrame, qrels: pl.LazyFrame, engine: str, **options: object) -> dict:
    """{(query_id, k): row} through the library's front (reading, validation, engine)."""
    table = per_query(run, qrels, engine=engine, **options).collect()  # type: ignore[arg-type]
    return {(row["query_id"], row["k"]): row for row in table.iter_rows(named=True)}


# ties


def test_input_order_ties_follow_arrival(engine: str) -> None:
    # a and b tie; a (label 0) arrives first, so b (label 2) is second
    run, qrels = frames(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [1.0, 1.0, 2.0]},
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [0, 2, 1]},
    )
    rows = ndcg_rows(run, qrels, engine, k=[2], ties="input-order")
    assert rows[("q", 2)]["dcg"] == pytest.approx(1 / log2(2) + 0 / log2(3))  # c, a
    swapped = pl.concat([run.slice(1, 1), run.slice(0, 1), run.slice(2, 1)])  # b arrives first now
    rows = ndcg_rows(swapped, qrels, engine, k=[2], ties="input-order")
    assert rows[("q", 2)]["dcg"] == pytest.approx(1 / log2(2) + 2 / log2(3))  # c, b
    # trec_eval's default puts b (doc_id "b" > "a") first whatever the order
    assert ndcg_rows(run, qrels, engine, k=[2])[("q", 2)]["dcg"] == pytest.approx(1 + 2 / log2(3))


def test_docid_asc_reverses_docid_desc_within_a_tie(engine: str) -> None:
    # c alone at rank 1 (label 1); a, b and 9 tie at 1.0 (labels 0, 2, 3), and strings compare by
    # bytes, "9" < "a" < "b": docid-asc (pyndeval's) ranks c, 9, a, b; docid-desc c, b, a, 9
    run, qrels = frames(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "9"], "score": [1.0, 1.0, 2.0, 1.0]},
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "9"], "relevance": [0, 2, 1, 3]},
    )
    idcg_at_2 = 3 / log2(2) + 2 / log2(3)
    ascending = ndcg_rows(run, qrels, engine, k=[2, 4], ties="docid-asc", tie_bounds=True)
    descending = ndcg_rows(run, qrels, engine, k=[2, 4], ties="docid-desc")
    assert ascending[("q", 2)]["ndcg"] == pytest.approx((1 / log2(2) + 3 / log2(3)) / idcg_at_2)
    assert descending[("q", 2)]["ndcg"] == pytest.approx((1 / log2(2) + 2 / log2(3)) / idcg_at_2)
    assert ascending[("q", 4)]["dcg"] == pytest.approx(1 + 3 / log2(3) + 0 / log2(4) + 2 / log2(5))
    assert descending[("q", 4)]["dcg"] == pytest.approx(1 + 2 / log2(3) + 0 / log2(4) + 3 / log2(5))
    # the tie bounds are the orders of the tie by gain: c, a (0) at worst, c, 9 (3) at best, which
    # docid-asc happens to be; the tie straddles k = 2
    assert ascending[("q", 2)]["ndcg_min"] == pytest.approx((1 / log2(2) + 0 / log2(3)) / idcg_at_2)
    assert ascending[("q", 2)]["ndcg_max"] == pytest.approx(ascending[("q", 2)]["ndcg"])
    assert ascending[("q", 2)]["ties_straddle_k"] is True


def test_input_order_reads_a_rank_column(engine: str) -> None:
    # the rank column orders the results, whatever the scores (a null rank is refused: see
    # tests/test_reading.py)
    run = pl.LazyFrame(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [9.0, 1.0, 5.0, 7.0], "rank": [2, 1, 4, 3]}
    )
    qrels = pl.LazyFrame({"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "relevance": [1, 2, 3, 0]})
    rows = ndcg_rows(run, qrels, engine, k=[4], ties="input-order")
    # order b (rank 1), a (2), d (3), c (4): gains 2, 1, 0, 3
    assert rows[("q", 4)]["dcg"] == pytest.approx(2 / log2(2) + 1 / log2(3) + 0 / log2(4) + 3 / log2(5))
    # other tie rules ignore the rank column: order a, d, c, b by score
    assert ndcg_rows(run, qrels, engine, k=[4])[("q", 4)]["dcg"] == pytest.approx(
        1 / log2(2) + 0 / log2(3) + 3 / log2(4) + 2 / log2(5)
    )


def test_average_ties_share_the_mean_gain_cut_at_k(engine: str) -> None:
    # a alone at rank 1 (label 1); b, c, d tie at ranks 2..4 with labels 3, 0, 2: mean 5/3
    run, qrels = frames(
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "score": [2.0, 1.0, 1.0, 1.0]},
        {"query_id": ["q"] * 4, "doc_id": ["a", "b", "c", "d"], "relevance": [1, 3, 0, 2]},
    )
    rows = ndcg_rows(run, qrels, engine, k=[1, 2, 3], ties="average")
    mean = (3 + 0 + 2) / 3
    assert rows[("q", 1)]["dcg"] == pytest.approx(1 / log2(2))
    assert rows[("q", 2)]["dcg"] == pytest.approx(1 / log2(2) + mean / log2(3))  # the group straddles k=2
    assert rows[("q", 3)]["dcg"] == pytest.approx(1 / log2(2) + mean * (1 / log2(3) + 1 / log2(4)))
    assert rows[("q", None)]["dcg"] == pytest.approx(1 + mean * (1 / log2(3) + 1 / log2(4) + 1 / log2(5)))
    assert rows[("q", 2)]["cg"] == pytest.approx(1 + mean)
    idcg_at_2 = 3 / log2(2) + 2 / log2(3)  # the ideal ranking has no ties to average
    assert rows[("q", 2)]["ndcg"] == pytest.approx((1 + mean / log2(3)) / idcg_at_2)


# ideal


def test_ideal_sources(engine: str) -> None:
    # retrieved: a (label 1), x (unjudged); judged but never retrieved: b (2), c (3)
    run, qrels = frames(
        {"query_id": ["q", "q"], "doc_id": ["a", "x"], "score": [2.0, 1.0]},
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 2, 3]},
    )
    judged = ndcg_rows(run, qrels, engine, k=[3])
    assert judged[("q", 3)]["idcg"] == pytest.approx(3 / log2(2) + 2 / log2(3) + 1 / log2(4))
    retrieved = ndcg_rows(run, qrels, engine, k=[3], ideal="retrieved")
    assert retrieved[("q", 3)]["idcg"] == pytest.approx(1 / log2(2))
    assert retrieved[("q", 3)]["ndcg"] == pytest.approx(1.0)
    at_hits = ndcg_rows(run, qrels, engine, k=[1, 3], ideal="judged-cut-at-hits")
    assert at_hits[("q", 3)]["idcg"] == pytest.approx(3 / log2(2) + 2 / log2(3))  # two hits
    assert at_hits[("q", 1)]["idcg"] == pytest.approx(3 / log2(2))  # k cuts first
    assert at_hits[("q", None)]["ndcg"] == pytest.approx(1 / (3 + 2 / log2(3)))


# empty ideal


@pytest.mark.parametrize(("empty_ideal", "expected"), [("zero", 0.0), ("one", 1.0), ("nan", math.nan), ("skip", None)])
def test_empty_ideal(engine: str, empty_ideal: str, expected: float | None) -> None:
    # q has a relevant document at rank 2: 1/log2(3); r has no relevant document at all
    run, qrels = frames(
        {"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "c"], "score": [2.0, 1.0, 1.0]},
        {"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "c"], "relevance": [0, 1, 0]},
    )
    result = evaluate(run, qrels, engine=engine, k=[5], empty_ideal=empty_ideal)  # type: ignore[arg-type]
    empty = result.per_query.filter(pl.col("query_id") == "r", pl.col("k") == 5)["ndcg"][0]
    if expected is None:
        assert empty is None
    elif math.isnan(expected):
        assert math.isnan(empty)
    else:
        assert empty == pytest.approx(expected)
    summary = result.summary.filter(pl.col("k") == 5).row(0, named=True)
    q_score = (1 / log2(3)) / 1
    if empty_ideal == "skip":
        assert summary["queries"] == 1  # r is left out of the count and of every mean
        assert summary["ndcg"] == pytest.approx(q_score)
        assert summary["idcg"] == pytest.approx(1.0)
    elif empty_ideal == "nan":
        assert summary["queries"] == 2 and math.isnan(summary["ndcg"])
    else:
        assert summary["queries"] == 2
        assert summary["ndcg"] == pytest.approx((q_score + expected) / 2)


# unjudged


def test_unjudged_drop_removes_unjudged_documents_after_max_results(engine: str) -> None:
    # x is unjudged, n is judged with a negative label (so unjudged too), a is relevant, z is not
    run, qrels = frames(
        {"query_id": ["q"] * 4, "doc_id": ["x", "n", "a", "z"], "score": [4.0, 3.0, 2.0, 1.0]},
        {"query_id": ["q"] * 3, "doc_id": ["n", "a", "z"], "relevance": [-1, 1, 0]},
    )
    kept = ndcg_rows(run, qrels, engine, k=[2])
    assert kept[("q", 2)]["dcg"] == pytest.approx(0 / log2(2) + 0 / log2(3))  # x, n
    dropped = ndcg_rows(run, qrels, engine, k=[2], unjudged="drop")
    assert dropped[("q", 2)]["dcg"] == pytest.approx(1 / log2(2) + 0 / log2(3))  # a, z
    # -M before -J: the best three are x, n and a; dropping x and n leaves a alone
    cut_first = ndcg_rows(run, qrels, engine, k=[2], unjudged="drop", max_results=3)
    assert cut_first[("q", 2)]["cg"] == pytest.approx(1.0)
    assert cut_first[("q", None)]["dcg"] == pytest.approx(1 / log2(2))
    cut_first = ndcg_rows(run, qrels, engine, k=[2], unjudged="drop", max_results=2)
    assert cut_first[("q", 2)]["dcg"] == pytest.approx(0.0)


# duplicates


def duplicated_run() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    # a is listed twice: first with 0.2, then with 0.9
    return frames(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "a"], "score": [0.2, 0.5, 0.9]},
        {"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [1, 0]},
    )


def test_duplicates_are_an_error_by_default(engine: str) -> None:
    run, qrels = duplicated_run()
    with pytest.raises(InvalidInput, match=r"'a' is listed 2 times for query 'q'.*--duplicates"):
        per_query(run, qrels, engine=engine, k=[1]).collect()


@pytest.mark.parametrize(("policy", "expected_dcg"), [("first", 0 + 1 / log2(3)), ("max-score", 1 / log2(2) + 0)])
def test_duplicate_policies(engine: str, policy: str, expected_dcg: float) -> None:
    # first keeps a at 0.2 (order b, a); max-score keeps a at 0.9 (order a, b)
    run, qrels = duplicated_run()
    assert ndcg_rows(run, qrels, engine, k=[2], duplicates=policy)[("q", 2)]["dcg"] == pytest.approx(expected_dcg)


def test_qrels_duplicates_stay_an_error(engine: str) -> None:
    run, _ = duplicated_run()
    qrels = pl.LazyFrame({"query_id": ["q", "q"], "doc_id": ["a", "a"], "relevance": [1, 2]})
    with pytest.raises(InvalidInput, match="listed 2 times"):
        per_query(run, qrels, engine=engine, k=[1], duplicates="first").collect()


def test_inline_labels_follow_the_duplicate_policy(engine: str) -> None:
    # a twice with labels 0 then 3: max-score keeps the second row, its score and its label
    run = pl.LazyFrame(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "a"], "score": [0.1, 0.5, 0.9], "relevance": [0, 1, 3]}
    )
    rows = ndcg_rows(run, None, engine, k=[2], duplicates="max-score")  # type: ignore[arg-type]
    assert rows[("q", 2)]["dcg"] == pytest.approx(3 / log2(2) + 1 / log2(3))
    rows = ndcg_rows(run, None, engine, k=[2], duplicates="first")  # type: ignore[arg-type]
    assert rows[("q", 2)]["dcg"] == pytest.approx(1 / log2(2) + 0 / log2(3))  # b, then a with label 0


# relevance threshold and the binary gain


def test_relevance_threshold_decides_the_binary_gain_only(engine: str) -> None:
    run, qrels = frames(
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]},
        {"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [1, 2, 3]},
    )
    binary = ndcg_rows(run, qrels, engine, k=[3], gain="binary")
    assert binary[("q", 3)]["dcg"] == pytest.approx(1 + 1 / log2(3) + 1 / log2(4))  # every label > 0
    at_two = ndcg_rows(run, qrels, engine, k=[3], gain="binary", relevance_threshold=2)
    assert at_two[("q", 3)]["dcg"] == pytest.approx(0 + 1 / log2(3) + 1 / log2(4))
    assert at_two[("q", 3)]["idcg"] == pytest.approx(1 + 1 / log2(3))
    linear = ndcg_rows(run, qrels, engine, k=[3], relevance_threshold=2)
    assert linear[("q", 3)]["dcg"] == pytest.approx(1 + 2 / log2(3) + 3 / log2(4))  # gains unchanged


# input order as read from files


def test_input_order_across_parquet_files(tmp_path: Path, engine: str) -> None:
    # a directory of two files: part-0 arrives before part-1; a and b tie
    runs = tmp_path / "run"
    runs.mkdir()
    pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0]}).write_parquet(runs / "part-0.parquet")
    pl.DataFrame({"query_id": ["q"], "doc_id": ["b"], "score": [1.0]}).write_parquet(runs / "part-1.parquet")
    qrels = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]}).write_parquet(qrels)
    rows = ndcg_rows(runs, qrels, engine, k=[1], ties="input-order")  # type: ignore[arg-type]
    assert rows[("q", 1)]["ndcg"] == pytest.approx(1.0)  # a arrived first
    assert ndcg_rows(runs, qrels, engine, k=[1])[("q", 1)]["ndcg"] == pytest.approx(0.0)  # type: ignore[arg-type]


def test_a_rank_column_that_is_not_a_number_is_refused(engine: str) -> None:
    run = pl.LazyFrame({"query_id": ["q"], "doc_id": ["a"], "score": [1.0], "rank": ["first"]})
    qrels = pl.LazyFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(InvalidInput, match="'rank' has type String"):
        per_query(run, qrels, engine=engine, k=[1], ties="input-order").collect()


# the spec and profiles


def test_the_spec_refuses_unknown_choices() -> None:
    for name, allowed in CHOICES.items():
        with pytest.raises(SpecError, match=f"unknown {name} 'sideways'; expected one of {', '.join(allowed)}"):
            Evaluation(**{name: "sideways"})  # type: ignore[arg-type]
    with pytest.raises(SpecError, match="relevance_threshold"):
        Evaluation(relevance_threshold=math.inf)


def test_profiles_set_choices_and_explicit_options_win() -> None:
    lightgbm = make_evaluation(k=[3], profile="lightgbm")
    assert (lightgbm.gain, lightgbm.ties, lightgbm.ideal, lightgbm.empty_ideal) == (
        Gain("exponential"),
        "input-order",
        "retrieved",
        "one",
    )
    overridden = make_evaluation(k=[3], profile="lightgbm", gain="linear", empty_ideal="zero")
    assert (overridden.gain, overridden.empty_ideal, overridden.ties) == (Gain("linear"), "zero", "input-order")
    assert make_evaluation(profile="trec_eval") == make_evaluation()
    assert make_evaluation(profile="ir_measures").all_queries
    assert not make_evaluation(profile="ir_measures", all_queries=False).all_queries
    with pytest.raises(UsageError, match="unknown profile 'ranx'; expected one of trec_eval, ir_measures"):
        make_evaluation(profile="ranx")


# torchmetrics is not installed here (it needs torch); the expected values are its arithmetic as
# Lightning-AI/torchmetrics computes it at v1.9.0-28-gdab033394 (src/torchmetrics/functional/
# retrieval/): ndcg.py is sklearn's ndcg_score translated (a tie group of preds shares its mean
# target, the discount 1 / log2(rank + 1) is 0 past top_k, the ideal is the targets passed sorted
# descending); precision.py, recall.py and reciprocal_rank.py first zero the target where preds <= 0
# (torch.where(preds > 0, target, 0)), precision divides by top_k, recall by the unfiltered
# target.sum(); retrieval/base.py's compute scores a query whose target sums to 0 as 0
# (empty_target_action="neg") and averages every query passed.
TORCHMETRICS_RUN = [
    # t: b and c tie at 0.5; m: c and d scored 0 and below; z: nothing relevant; u: not judged
    *[("t", "a", 0.9, 1), ("t", "b", 0.5, 2), ("t", "c", 0.5, 0), ("t", "d", 0.2, 3)],
    *[("m", "a", 0.9, 1), ("m", "b", 0.5, 0), ("m", "c", 0.0, 1), ("m", "d", -0.3, 1)],
    *[("z", "a", 0.4, 0), ("z", "b", 0.3, 0), ("u", "x", 0.7, None)],
]


def test_the_torchmetrics_profile_computes_torchmetrics_arithmetic(engine: str) -> None:
    run = pl.LazyFrame([r[:3] for r in TORCHMETRICS_RUN], schema=["query_id", "doc_id", "score"], orient="row")
    qrels = pl.LazyFrame(
        [(r[0], r[1], r[3]) for r in TORCHMETRICS_RUN if r[3] is not None],
        schema=["query_id", "doc_id", "relevance"],
        orient="row",
    )
    measures = "ndcg,P,recall,recip_rank"
    table = per_query(run, qrels, engine=engine, k=[2, 3], measures=measures, profile="torchmetrics").collect()
    rows = {(row["query_id"], row["k"]): row for row in table.iter_rows(named=True)}
    # t, nDCG: groups a (1), b and c (mean (2 + 0) / 2 = 1), d (3); the ideal 3, 2, 1, 0
    d = [1 / log2(i + 1) for i in range(1, 5)]
    assert rows[("t", 2)]["ndcg"] == pytest.approx((1 * d[0] + 1 * d[1]) / (3 * d[0] + 2 * d[1]))
    assert rows[("t", 3)]["ndcg"] == pytest.approx((1 * d[0] + 1 * (d[1] + d[2])) / (3 * d[0] + 2 * d[1] + d[2]))
    assert rows[("t", None)]["ndcg"] == pytest.approx((d[0] + (d[1] + d[2]) + 3 * d[3]) / (3 * d[0] + 2 * d[1] + d[2]))
    # t, at 3 (the tie inside the top 3: topk's order among b and c changes nothing): a, b relevant
    assert (rows[("t", 3)]["P"], rows[("t", 3)]["recall"], rows[("t", 3)]["recip_rank"]) == pytest.approx(
        (2 / 3, 2 / 3, 1)
    )
    # m, at 2: c and d zeroed; top 2 a (1), b (0); recall over the unfiltered target's 3
    assert (rows[("m", 2)]["P"], rows[("m", 2)]["recall"], rows[("m", 2)]["recip_rank"]) == pytest.approx(
        (1 / 2, 1 / 3, 1)
    )
    # z (no relevant target) and u (every target 0) score 0 and are averaged in
    for query in ("z", "u"):
        assert [rows[(query, 2)][m] for m in ("ndcg", "P", "recall", "recip_rank")] == [0, 0, 0, 0]
    assert table.filter(pl.col("k") == 2)["query_id"].n_unique() == 4
    # torchmetrics' nDCG keeps m's c and d (ranks 3 and 4, the ideal 1, 1, 1), which the profile
    # removes (named in its differences); --retrieved-scores all gives its number
    every = per_query(
        run, qrels, engine=engine, measures="ndcg", profile="torchmetrics", retrieved_scores="all"
    ).collect()
    (m_ndcg,) = every.filter(pl.col("query_id") == "m", pl.col("k").is_null())["ndcg"]
    assert m_ndcg == pytest.approx((d[0] + d[2] + d[3]) / (d[0] + d[1] + d[2]))
    assert rows[("m", None)]["ndcg"] == pytest.approx(1.0)  # a, b alone: the ideal is a's 1


def test_the_tfranking_profile_takes_a_label_of_1_or_more_as_relevant(engine: str) -> None:
    """TF-Ranking's PrecisionMetric (and its recall, MAP, MRR, Hits) "converts graded relevance to
    binary relevance by setting y_i = 1 if y_i >= 1" (its docstring): a fractional label of 0.5
    counts in the gains, not as relevant."""
    run = pl.LazyFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "relevance": [0.5, 2.0, 0.0]})
    options = {"k": [2], "measures": "ndcg,P,recip_rank", "allow_fractional_labels": True, "engine": engine}
    row = ndcg_rows(run, qrels, profile="tfranking", **options)[("q", 2)]
    # a (0.5) is not relevant, b (2) is: P@2 = 1 / min(2, 3), the first relevant at rank 2
    assert (row["P"], row["recip_rank"]) == pytest.approx((1 / 2, 1 / 2))
    # the gains keep a's label: 2^0.5 - 1 at rank 1, 2^2 - 1 at rank 2; the ideal b, a
    dcg, ideal = (2**0.5 - 1) + 3 / log2(3), 3 + (2**0.5 - 1) / log2(3)
    assert row["ndcg"] == pytest.approx(dcg / ideal)
    # an explicit threshold wins over the profile's
    row = ndcg_rows(run, qrels, profile="tfranking", relevance_threshold=0.5, **options)[("q", 2)]
    assert (row["P"], row["recip_rank"]) == pytest.approx((1, 1))


def test_describe_names_every_choice() -> None:
    described = make_evaluation(profile="sklearn", unjudged="drop", duplicates="first").describe()
    assert described["ties"] == "score desc, tied gains averaged"
    assert described["ideal"] == "the retrieved documents with positive gain"
    assert (described["unjudged"], described["duplicates"], described["empty_ideal"]) == (
        "dropped from the ranking",
        "first",
        "zero",
    )


# the command line


def test_cli_flags_and_profiles(tmp_path: Path) -> None:
    run = tmp_path / "run.parquet"
    qrels = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "c"], "score": [1.0, 1.0, 1.0]}).write_parquet(run)
    pl.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "b", "c"], "relevance": [1, 0, 0]}).write_parquet(qrels)
    common = ("evaluate", "--run", run, "--qrels", qrels, "--k", "1", "--output-format", "json")
    # lightgbm: a (label 1) arrived first, so rank 1 is relevant; r has no relevant document: 1
    result = run_cli(*common, "--profile", "lightgbm")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert payload["conventions"]["empty_ideal"] == "one"
    assert [row["ndcg"] for row in payload["summary"]] == pytest.approx([1.0, 1.0])
    # the same with r skipped and the trec_eval order (b before a): q scores 1/log2(3) whole, 0 at 1
    result = run_cli(*common, "--profile", "lightgbm", "--ties", "docid-desc", "--empty-ideal", "skip")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert [row["queries"] for row in summary] == [1, 1]
    assert [row["ndcg"] for row in summary] == pytest.approx([1 / log2(3), 0.0])
    bad = run_cli(*common, "--profile", "nobody")
    assert bad.returncode == 2 and "unknown profile 'nobody'" in bad.stderr
    bad = run_cli(*common, "--ties", "random")
    assert bad.returncode == 2


def test_cli_prints_the_profiles_table() -> None:
    result = run_cli("profiles")
    assert result.returncode == 0, result.stderr
    for name in PROFILES:
        assert f"| {name} " in result.stdout
    assert "judged-cut-at-hits" in result.stdout


def test_cli_choices_are_the_spec_choices() -> None:
    from pipeline.cli import build_parser

    evaluate_parser = build_parser()._subparsers._group_actions[0].choices["evaluate"]  # type: ignore[union-attr]
    by_flag = {action.dest: action.choices for action in evaluate_parser._actions}
    for name, allowed in CHOICES.items():
        assert tuple(by_flag[name]) == allowed


# --max-results keeps the N best-ranked results after ordering, not the first N rows.


def test_max_results_keeps_best_ranked(tmp_path: Path, engine: str) -> None:
    run = tmp_path / "run.txt"
    # file order puts the worst results first
    run.write_text("q Q0 worst 1 0.1 t\nq Q0 bad 2 0.2 t\nq Q0 best 3 0.9 t\nq Q0 good 4 0.8 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 best 1\nq 0 good 1\nq 0 worst 1\n")
    result = run_cli(
        "evaluate",
        "--run",
        run,
        "--qrels",
        qrels,
        "--k",
        "2",
        "--max-results",
        "2",
        "--output-format",
        "trec",
        "--per-query",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(((m.strip(), q), float(v)) for m, q, v in (line.split("\t") for line in result.stdout.splitlines()))
    # kept: best (1), good (1); ideal over all three judged: 1, 1, 1
    assert lines[("ndcg_cut_2", "q")] == pytest.approx(1.0, abs=1e-4)
    assert lines[("ndcg", "q")] == pytest.approx((1 + 1 / log2(3)) / (1 + 1 / log2(3) + 1 / log2(4)), abs=1e-4)


# the peers' denominators and their queries without judgments (ap_denominator,
# precision_denominator, queries_without_judgments): arithmetic written out, defaults unchanged

# q: a, b, c, d ranked in that order; a and c relevant, e and f relevant but never retrieved
# (R = 4); r judges its one document nonrelevant (R = 0)
PEER_RUN = {"query_id": ["q"] * 4 + ["r"], "doc_id": ["a", "b", "c", "d", "x"], "score": [4.0, 3.0, 2.0, 1.0, 1.0]}
PEER_QRELS = {
    "query_id": ["q"] * 5 + ["r"],
    "doc_id": ["a", "b", "c", "e", "f", "x"],
    "relevance": [1, 0, 1, 1, 1, 0],
}
COMPANIONS = "P,recall,map,gm_map,recip_rank,success"


@pytest.mark.parametrize("ap_denominator", ["relevant", "min-k-relevant"])
def test_ap_denominator(engine: str, ap_denominator: str) -> None:
    rows = ndcg_rows(
        *frames(PEER_RUN, PEER_QRELS), engine, k=[2, 3, 10], measures=COMPANIONS, ap_denominator=ap_denominator
    )
    # precision at the relevant ranks: a at 1 (1/1), c at 3 (2/3)
    precision_sums = {2: 1.0, 3: 1 + 2 / 3, 10: 1 + 2 / 3, None: 1 + 2 / 3}
    by_r = {2: 4, 3: 4, 10: 4, None: 4}  # R, at every k
    by_min_k_r = {2: 2, 3: 3, 10: 4, None: 4}  # min(k, R); the whole ranking R
    divisors = by_r if ap_denominator == "relevant" else by_min_k_r
    for k, precision_sum in precision_sums.items():
        assert rows[("q", k)]["map"] == pytest.approx(precision_sum / divisors[k]), k
        assert rows[("q", k)]["gm_map"] == pytest.approx(precision_sum / divisors[k]), k  # its per-query value
        assert rows[("r", k)]["map"] == 0.0  # R = 0: min(k, 0) = 0, scored 0 under both
        assert rows[("q", k)]["recall"] == pytest.approx({2: 1 / 4}.get(k, 2 / 4))  # not AP's: unchanged
        assert rows[("q", k)]["P"] == (None if k is None else pytest.approx({2: 1 / 2, 3: 2 / 3, 10: 2 / 10}[k]))


@pytest.mark.parametrize("precision_denominator", ["k", "min-k-retrieved"])
def test_precision_denominator(engine: str, precision_denominator: str) -> None:
    # m is judged but not retrieved (all_queries scores it): nothing retrieved, P 0 under both
    qrels = {key: [*values, value] for (key, values), value in zip(PEER_QRELS.items(), ["m", "y", 1], strict=True)}
    rows = ndcg_rows(
        *frames(PEER_RUN, qrels),
        engine,
        k=[2, 10],
        measures=COMPANIONS,
        all_queries=True,
        precision_denominator=precision_denominator,
    )
    # q retrieves 4 documents, 2 relevant (a at 1, c at 3)
    if precision_denominator == "k":
        assert rows[("q", 2)]["P"] == pytest.approx(1 / 2) and rows[("q", 10)]["P"] == pytest.approx(2 / 10)
    else:
        assert rows[("q", 2)]["P"] == pytest.approx(1 / min(2, 4))
        assert rows[("q", 10)]["P"] == pytest.approx(2 / min(10, 4))
    assert rows[("q", None)]["P"] is None  # P has no whole-ranking value under either
    assert rows[("r", 10)]["P"] == 0.0 and rows[("m", 2)]["P"] == 0.0 and rows[("m", 10)]["P"] == 0.0
    assert rows[("q", 10)]["map"] == pytest.approx((1 + 2 / 3) / 4)  # not P's: unchanged


def test_queries_without_judgments_evaluate(engine: str) -> None:
    # "orphan" is in the run only: skipped by default, evaluated with every document unjudged
    run = {key: [*values, value] for (key, values), value in zip(PEER_RUN.items(), ["orphan", "z", 5.0], strict=True)}
    skipped = evaluate(*frames(run, PEER_QRELS), engine=engine, k=[2], measures=COMPANIONS)
    assert "orphan" not in skipped.per_query["query_id"].to_list()
    assert [w.message for w in skipped.warnings if w.code == "queries_only_in_run"] == [
        "queries only in the run run, not evaluated"
    ]
    evaluated = evaluate(
        *frames(run, PEER_QRELS), engine=engine, k=[2], measures=COMPANIONS, queries_without_judgments="evaluate"
    )
    orphan = evaluated.per_query.filter(pl.col("query_id") == "orphan")
    assert orphan["k"].to_list() == [None, 2]
    for name in ("cg", "dcg", "idcg", "ndcg", "recall", "map", "gm_map", "recip_rank", "success"):
        assert orphan[name].to_list() == [0.0, 0.0], name
    assert orphan["P"].to_list() == [None, 0.0]
    (warning,) = [w for w in evaluated.warnings if w.code == "queries_only_in_run"]
    assert "evaluated with every document unjudged" in warning.message and "score 0" in warning.message
    # the summary counts it: q's NDCG@2 is 1/(1 + 1/log2(3)) (a at 1, ideal 1, 1), r's 0, orphan's 0
    at_2 = evaluated.summary.filter(pl.col("k") == 2).row(0, named=True)
    assert at_2["queries"] == 3
    assert at_2["ndcg"] == pytest.approx((1 / (1 + 1 / log2(3)) + 0 + 0) / 3)
    assert at_2["P"] == pytest.approx((1 / 2 + 0 + 0) / 3)


@pytest.mark.parametrize(
    ("options", "expected_queries", "expected_orphan_ndcg"),
    [
        # empty_ideal decides the NDCG of every query whose IDCG is 0, one without judgments too
        ({"empty_ideal": "one"}, {"q", "r", "orphan"}, 1.0),
        ({"empty_ideal": "skip"}, {"q", "orphan"}, None),  # r and orphan: null, out of every mean
        # all_queries adds the qrels' queries missing from the run: both sides, every query
        ({"all_queries": True}, {"q", "r", "orphan", "m"}, 0.0),
    ],
)
def test_queries_without_judgments_meet_the_other_conventions(
    engine: str, options: dict, expected_queries: set, expected_orphan_ndcg: float | None
) -> None:
    run = {key: [*values, value] for (key, values), value in zip(PEER_RUN.items(), ["orphan", "z", 5.0], strict=True)}
    qrels = {key: [*values, value] for (key, values), value in zip(PEER_QRELS.items(), ["m", "y", 1], strict=True)}
    result = evaluate(
        *frames(run, qrels), engine=engine, k=[2], measures="P", queries_without_judgments="evaluate", **options
    )
    assert set(result.per_query["query_id"]) == expected_queries | (
        {"r"} if options.get("empty_ideal") == "skip" else set()
    )
    orphan = result.per_query.filter(pl.col("query_id") == "orphan", pl.col("k") == 2)
    assert orphan["ndcg"][0] == expected_orphan_ndcg and orphan["P"][0] == 0.0
    summary = result.summary.filter(pl.col("k") == 2).row(0, named=True)
    assert summary["queries"] == len(expected_queries) - (1 if options.get("empty_ideal") == "skip" else 0)


@pytest.mark.slow  # seconds: left out of make test-fast
def test_the_peer_conventions_relate_to_the_defaults_on_the_edge_case_matrix() -> None:
    # On every case of tests/helpers/cases.py, both engines: P under min-k-retrieved is P@k
    # scaled by k / min(k, n), AP under min-k-relevant is AP scaled by R / min(k, R) (the
    # definitions), and queries_without_judgments adds rows, never changes one.
    measures = "P,map,gm_map,num_ret,num_rel,recall"
    peers = {"ap_denominator": "min-k-relevant", "precision_denominator": "min-k-retrieved"}
    variants = {"default": {}, "peers": peers, "evaluate": {**peers, "queries_without_judgments": "evaluate"}}
    matrix = {}
    for case, (run_rows, qrels_rows, options, id_type) in {**CASES, **OPTION_CASES}.items():
        if len({(row[0], row[1]) for row in run_rows}) < len(run_rows) and "duplicates" not in options:
            options = {**options, "duplicates": "max-score"}
        run = run_frame(run_rows, id_type)
        qrels = pl.LazyFrame(
            qrels_rows, schema={"query_id": id_type, "doc_id": id_type, "relevance": pl.Float64}, orient="row"
        )
        for name, extra in variants.items():
            evaluation = Evaluation(measures=tuple(measures.split(",")), **options, **extra)  # type: ignore[arg-type]
            matrix[batch_name(f"{case}:{name}")] = Case(run, qrels, evaluation)
    # DuckDB's side in one evaluation per convention set (tests/helpers/batch.py)
    by_duckdb = Batch(matrix, lambda run, qrels, evaluation: compute("duckdb", run, qrels, evaluation))  # type: ignore[arg-type]
    for case in {**CASES, **OPTION_CASES}:
        tables = {}
        for name in variants:
            alone = matrix[batch_name(f"{case}:{name}")]
            by_polars = compute("polars", alone.run, alone.qrels, alone.evaluation)  # type: ignore[arg-type]
            by_sql = by_duckdb[batch_name(f"{case}:{name}")]
            assert_frame_equal(by_sql, by_polars, rel_tol=0, abs_tol=TOLERANCE)
            tables[name] = {(row["query_id"], row["k"]): row for row in by_polars.iter_rows(named=True)}
        default, peer, evaluated = tables["default"], tables["peers"], tables["evaluate"]
        assert set(default) == set(peer) and set(default) <= set(evaluated), case
        for key, row in default.items():
            k, n, relevant = key[1], row["num_ret"], row["num_rel"]
            if k is not None and n:
                assert peer[key]["P"] == pytest.approx(row["P"] * k / min(k, n)), (case, key)
            elif k is not None:
                assert peer[key]["P"] == 0.0, (case, key)
            if relevant:
                divisor = relevant if k is None else min(k, relevant)
                for name in ("map", "gm_map"):
                    assert peer[key][name] == pytest.approx(row[name] * relevant / divisor), (case, key, name)
            for name in ("ndcg", "P", "map", "gm_map", "recall", "num_ret"):
                assert evaluated[key][name] == (
                    None if peer[key][name] is None else pytest.approx(peer[key][name], nan_ok=True)
                ), (case, key, name)
        for key in set(evaluated) - set(default):
            assert all(evaluated[key][name] == 0.0 for name in ("map", "recall", "num_rel")), (case, key)


def test_the_peer_conventions_as_flags_and_in_the_conventions_header(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame(PEER_RUN).write_parquet(run)
    pl.DataFrame(PEER_QRELS).write_parquet(qrels)
    common = ("evaluate", "--run", run, "--qrels", qrels, "--k", "10", "--measures", "P,map")
    result = run_cli(
        *common,
        "--ap-denominator",
        "min-k-relevant",
        "--precision-denominator",
        "min-k-retrieved",
        "--queries-without-judgments",
        "evaluate",
        "--output-format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert {key: payload["conventions"][key] for key in ("ap_denominator", "precision_denominator")} == {
        "ap_denominator": "min(k, relevant judged)",
        "precision_denominator": "min(k, retrieved)",
    }
    assert payload["conventions"]["queries_without_judgments"] == "evaluated with every document unjudged"
    at_10 = next(row for row in payload["summary"] if row["k"] == 10)
    assert at_10["P"] == pytest.approx((2 / 4 + 0 / 1) / 2) and at_10["map"] == pytest.approx(((1 + 2 / 3) / 4 + 0) / 2)
    # the header names what differs from the profile (here: nothing of these) or from trec_eval's
    text = run_cli(*common, "--profile", "elasticsearch")
    assert text.returncode == 0, text.stderr
    assert "denominator" not in text.stdout.splitlines()[0] and "profile elasticsearch" in text.stdout
    assert make_evaluation(profile="elasticsearch").precision_denominator == "min-k-retrieved"
    assert make_evaluation(profile="elasticsearch").queries_without_judgments == "evaluate"
    assert make_evaluation(profile="spark_mllib").ap_denominator == "min-k-relevant"
    assert make_evaluation(profile="recbole").ap_denominator == "min-k-relevant"
    header = run_cli(*common, "--ap-denominator", "min-k-relevant")
    assert "ap_denominator=min-k-relevant" in header.stdout.splitlines()[0]
    assert make_evaluation() == Evaluation(
        ap_denominator="relevant", precision_denominator="k", queries_without_judgments="skip"
    )


@pytest.mark.parametrize(
    "convention",
    [
        ("ap_denominator", "min-k-relevant"),
        ("precision_denominator", "min-k-retrieved"),
        ("queries_without_judgments", "evaluate"),
    ],
)
def test_compare_refuses_outputs_that_differ_in_a_peer_convention(convention: tuple[str, str]) -> None:
    name, value = convention
    ours, theirs = Evaluation().describe(), Evaluation(**{name: value}).describe()  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=f"different conventions.*{name}: a="):
        check_conventions({"a": ours, "b": theirs}, allowed=False)
    # an output written before the convention existed was evaluated by its default
    older = {key: described for key, described in ours.items() if key != name}
    assert convention_differences({"a": ours, "b": older}) == ({}, [])
    assert name in convention_differences({"a": theirs, "b": older})[0]


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_spark_agrees_on_the_edge_case_matrix_under_the_peer_conventions(local_spark: object) -> None:
    # every case of tests/helpers/cases.py in one input (its queries renamed by case), so
    # Spark plans the transpiled SQL once; with all_queries, queries only in the run and only
    # in the qrels are both evaluated; ties docid-asc (docid-desc is tests/test_spark.py's)
    run_rows, qrels_rows = [], []
    for number, (case_run, case_qrels, _, _) in enumerate({**CASES, **OPTION_CASES}.values()):
        run_rows += [(f"{number}:{row[0]}", str(row[1]), float(row[2])) for row in case_run]
        qrels_rows += [(f"{number}:{row[0]}", str(row[1]), float(row[2])) for row in case_qrels]
    run = pl.LazyFrame(run_rows, schema={"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64}, orient="row")
    qrels = pl.LazyFrame(
        qrels_rows, schema={"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Float64}, orient="row"
    )
    spark = local_spark
    evaluation = Evaluation(
        cutoffs=(1, 2, 3, 5, 10),
        measures=("ndcg", "P", "recall", "map", "gm_map", "recip_rank", "success", "num_ret", "num_rel"),
        duplicates="max-score",
        all_queries=True,
        ap_denominator="min-k-relevant",
        precision_denominator="min-k-retrieved",
        queries_without_judgments="evaluate",
        ties="docid-asc",
    )
    by_polars = compute("polars", run, qrels, evaluation)
    _, by_spark = per_query_on_spark(spark, run, qrels, evaluation)  # type: ignore[arg-type]
    assert_frame_equal(by_spark.sort("query_id", "k"), by_polars, rel_tol=0, abs_tol=TOLERANCE)
    assert by_polars.filter(pl.col("num_rel") == 0)["query_id"].n_unique() >= 2  # queries without judgments
    assert by_polars.filter(pl.col("num_ret") == 0)["query_id"].n_unique() >= 2  # queries without results
