"""The Polars engine's one plan: asking more cutoffs never reads the inputs again.

Polars shares a subplan read by several branches (the ranking, read off at each cutoff) only
when the branches are the same plan; a no-op projection in one split it, and the run was
ranked again for each cutoff (``--measures P`` at trec_eval's 10 cutoffs cost 9x NDCG's CPU time
at 2M rows). Counted on the optimised plan's text, no data read.
"""

from __future__ import annotations

import polars as pl

from pipeline import make_evaluation
from pipeline.engines import polars as polars_engine
from pipeline.registry import MEASURES
from tests.helpers import ROOT

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def _reads(measures: str, cutoffs: list[int], of: str = RUN.name) -> int:
    """How often the optimised plan reads the file named `of` (the run by default)."""
    evaluation = make_evaluation(k=cutoffs, measures=measures)
    plan = polars_engine.per_query(pl.scan_parquet(RUN), pl.scan_parquet(QRELS), evaluation).explain()
    return plan.count(of)


def test_more_cutoffs_read_the_run_no_more_often_for_any_measure() -> None:
    families = sorted({measure.selected_by for measure in MEASURES})
    grown = {
        family: (one, seven)
        for family in [*families, "all_trec"]
        if (one := _reads(family, [10])) != (seven := _reads(family, [1, 5, 10, 15, 20, 30, 100]))
    }
    assert not grown, f"the run is read again per cutoff (reads at 1 cutoff, at 7): {grown}"


def test_every_measure_reads_the_run_as_often_as_ndcg_alone() -> None:
    # the counters, curves and sums each project their own columns of the ranking; without one
    # shared cache Polars ranked and joined the run again for each (all_trec read it 5 times)
    families = sorted({measure.selected_by for measure in MEASURES})
    ndcg_alone = _reads("ndcg", [10])
    more = {family: reads for family in [*families, "all_trec"] if (reads := _reads(family, [10])) != ndcg_alone}
    assert not more, f"reads of the run per measure set, against {ndcg_alone} for NDCG alone: {more}"


def test_num_ret_counts_every_rank_while_the_measures_carry_only_the_judged_ones() -> None:
    # all_trec kept every rank of the run through the join with the judgments for num_ret's
    # count alone (2M rows on through the plan, not 0.4M); the count reads the ranking before it
    from pipeline.engines.polars import ranking
    from pipeline.expressions import with_input_order

    evaluation = make_evaluation(k=[10], measures="all_trec")
    run = with_input_order(pl.LazyFrame({"query_id": ["q"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]}))
    judged = ranking.judgments(pl.LazyFrame({"query_id": ["q"], "doc_id": ["b"], "relevance": [1]}), evaluation)
    by_score = ranking.ranked(run, evaluation, "retrieved")
    retrieved = ranking.orderings(by_score, run, judged, evaluation)["retrieved"]
    assert retrieved.select("doc_id", "rank").collect().rows() == [("b", 2)]
    assert ranking.counted_ranks(by_score, retrieved, evaluation).collect().height == 3


def test_trec_eval_measures_read_the_qrels_as_often_as_ndcg_alone() -> None:
    # the counters, the curves and the ideal each read their own columns of the judgments: all
    # read the one cached table (all_trec read the qrels 8 times); the intent-aware measures
    # also read the qrels' subtopics, which the judgments do not carry
    ndcg_alone = _reads("ndcg", [10], of=QRELS.name)
    assert _reads("all_trec", [10], of=QRELS.name) == ndcg_alone


def test_the_gain_curve_joins_only_what_the_asked_families_read() -> None:
    # rbp read the ideal's running sums and NDCG at the ideal's boundaries, which only G, ndcg_rel
    # and Rndcg read (2M rows: rbp alone cost 1.59x NDCG alone's CPU time, 1.40x after)
    def plan(measures: str) -> str:
        evaluation = make_evaluation(k=[10], measures=measures)
        return polars_engine.per_query(pl.scan_parquet(RUN), pl.scan_parquet(QRELS), evaluation).explain().upper()

    as_of, ideal_cost = "ASOF", '"COST"'
    assert [(family, as_of in plan(family)) for family in ("rbp", "G", "ndcg_rel", "Rndcg")] == [
        ("rbp", False),
        ("G", False),
        ("ndcg_rel", False),
        ("Rndcg", True),
    ]
    assert [(family, ideal_cost in plan(family)) for family in ("rbp", "ndcg_rel", "G")] == [
        ("rbp", False),
        ("ndcg_rel", False),
        ("G", True),
    ]
