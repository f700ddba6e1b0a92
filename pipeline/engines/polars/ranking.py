"""The ranking stage (``sql/ranking/``): the cutoffs, each judged document's label and gain, the
run ranked under the ties convention with the judgment of each rank, and the rankings whose
sums are taken (the ranking by score, the tie bounds' orders of ties, the ideal).

Each function is the twin of the step of its name; the label is carried once, as trec_eval
carries its judgment list, and the signals are read off it by the counters stage.
"""

from __future__ import annotations

import polars as pl

from pipeline.expressions import (
    DOC_WEIGHT,
    INPUT_RANK,
    first_copy,
    gain,
    rank_by_gain,
    rank_by_score,
    rank_ties_by_gain,
)
from pipeline.registry import Evaluation

QUERY, DOC, SCORE, LABEL, SUBTOPIC = "query_id", "doc_id", "score", "relevance", "subtopic"
# What the ranking carries of each document's judgment (null: the judgments do not list it)
JUDGMENT = "label"
# The ranking under the ties convention, then (with tie bounds) the same ties broken by gain
# ascending and descending: the lowest and highest NDCG an order of the ties can give.
ORDERINGS = ("retrieved", "worst", "best")
TIE_ORDERS = ("worst", "best")


def cutoffs(evaluation: Evaluation) -> pl.LazyFrame:
    """``k``: the cutoffs, and the whole ranking (k null)."""
    return pl.LazyFrame({"k": [None, *evaluation.cutoffs]}, schema={"k": pl.Int64})


def judgments(qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``query_id, doc_id, label, gain``: each judged document's label (as a float: the signals'
    bounds are compared with it) and gain. Judged per subtopic, a document's label is its
    largest over its subtopics (how ndeval counts a document relevant to the topic)."""
    return document_labels(qrels).select(
        QUERY,
        DOC,
        pl.col(LABEL).cast(pl.Float64).alias(JUDGMENT),
        gain(pl.col(LABEL), evaluation.gain, evaluation.relevance_threshold).alias("gain"),
    )


def document_labels(qrels: pl.LazyFrame) -> pl.LazyFrame:
    """``query_id, doc_id, relevance``, a row per judged document: judged per subtopic, its
    largest label over its subtopics, what the per-document measures read."""
    if SUBTOPIC not in qrels.collect_schema().names():
        return qrels
    return qrels.group_by(QUERY, DOC).agg(pl.col(LABEL).max())


def deduplicated(run_rows: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """The run's retrieved results, one row per (query, document): the duplicates policy's
    row, then under ``retrieved_scores`` positive only the rows scored above 0."""
    if evaluation.duplicates != "error":  # "error": validation has refused duplicates
        run_rows = run_rows.filter(first_copy(by_score=evaluation.duplicates == "max-score"))
    if evaluation.retrieved_scores == "positive":
        run_rows = run_rows.filter(pl.col(SCORE) > 0)
    if evaluation.doc_weight_col is not None:
        # TF-Ranking masks a result weighing 0: it leaves the list, and takes no rank
        run_rows = run_rows.filter(pl.col(DOC_WEIGHT) > 0)
    return run_rows


def orderings(
    by_score: pl.LazyFrame, deduplicated: pl.LazyFrame, judged: pl.LazyFrame, evaluation: Evaluation
) -> dict[str, pl.LazyFrame]:
    """``{ordering: ranking}``: the retrieved ranking (and with tie bounds the worst and best
    orders of its ties) with each rank's judgment, cut at max_results. ``by_score`` is
    ``ranked(deduplicated, evaluation, "retrieved")``, which the caller also counts for num_ret
    (without tie bounds the ranking returned may hold only its judged ranks)."""
    if evaluation.tie_bounds:
        ranking = ranked(_gained(deduplicated, judged), evaluation, "retrieved")
        return {
            "retrieved": retrieved(ranking, evaluation, "retrieved"),
            **tie_orders(deduplicated, judged, evaluation),
        }
    # ranked first and cut at max_results: the join with the judgments then carries fewer
    # columns and rows (measured 10% faster at 10M rows)
    ranking = by_score
    if _only_earning_ranks_read(evaluation):
        # an inner join with the judgments the later steps read: at 10M rows it carries a
        # tenth of the rows on (ranks are given before it, so dropping rows changes none)
        ranking = ranking.join(_earning(judged, evaluation), on=[QUERY, DOC], how="inner")
    else:
        ranking = _gained(ranking, judged)
    return {"retrieved": retrieved(ranking, evaluation, "retrieved")}


def counted_ranks(by_score: pl.LazyFrame, retrieved: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """The ranks num_ret counts (``retrieved_in_ranking``): those of the ranking by score, read
    before the join that keeps only the judged ranks when :func:`orderings` keeps only those,
    else of the evaluated ranking itself (after an unjudged drop, or with tie bounds)."""
    return by_score if _only_earning_ranks_read(evaluation) else retrieved


def tie_orders(deduplicated: pl.LazyFrame, judged: pl.LazyFrame, evaluation: Evaluation) -> dict[str, pl.LazyFrame]:
    """The worst and the best order of tied results (ties by gain ascending, descending), as
    evaluated rankings: the bounds break ties by gain, so gains are joined before ranking."""
    gained = _gained(deduplicated, judged)
    return {ordering: retrieved(ranked(gained, evaluation, ordering), evaluation, ordering) for ordering in TIE_ORDERS}


def _gained(run_rows: pl.LazyFrame, judged: pl.LazyFrame) -> pl.LazyFrame:
    """The run with each document's ``label`` (null: not judged) and ``gain`` (0: not judged)."""
    return run_rows.join(judged, on=[QUERY, DOC], how="left").with_columns(pl.col("gain").fill_null(0.0))


def _only_earning_ranks_read(evaluation: Evaluation) -> bool:
    """Whether nothing after the join reads a rank that earns nothing and has no judgment (a
    judged rank's signals are read when counters are asked): no renumbering without the
    unjudged, no tie groups' mean gain, no tie bounds, no Compat (its ranking's length).
    average_precision_score weighs every result through the ranks num_ret counts (the caller's). num_ret
    counts the ranking before this join (the caller's ``by_score``): keeping every rank for it
    carried all the run's rows through the join and on (all_trec, 2M rows: 1.2 s of the join
    alone)."""
    return (
        evaluation.unjudged != "drop"
        and evaluation.ideal != "judged-cut-at-hits"
        and evaluation.ties != "average"
        and not evaluation.tie_bounds
        and "compat_curve" not in evaluation.curves
    )


def _earning(judged: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """The judgments a ranking joins when only the earning ranks are read (ranked.sql's filter):
    those that gain something, and with signals asked every judged one."""
    return judged if evaluation.signals else judged.filter(pl.col("gain") != 0)


def ranked(frame: pl.LazyFrame, evaluation: Evaluation, ordering: str) -> pl.LazyFrame:
    """``query_id, doc_id, score, input_rank, position`` (and the label and gain when ``frame``
    has them): the ordering, cut at ``max_results``."""
    if ordering == "retrieved":
        position = rank_by_score(ties=evaluation.ties)
    else:
        position = rank_ties_by_gain(ties=evaluation.ties, best_first=ordering == "best")
    judged = [c for c in (JUDGMENT, "gain") if c in frame.collect_schema().names()]
    ranking = frame.select(QUERY, DOC, SCORE, INPUT_RANK, DOC_WEIGHT, *judged, position.alias("position"))
    if evaluation.max_results is not None:
        ranking = ranking.filter(pl.col("position") <= evaluation.max_results)
    return ranking


def retrieved(ranking: pl.LazyFrame, evaluation: Evaluation, ordering: str) -> pl.LazyFrame:
    """``query_id, doc_id, score, input_rank, rank, label, gain, credited_gain`` and, under
    ``doc_weight_col``, ``doc_weight``: the evaluated ranking.
    ``credited_gain`` is what the rank earns: the document's gain, or its tie group's mean
    gain under ``average`` (the tie bounds' orderings are orders of the ties: their own gains)."""
    if evaluation.unjudged == "drop":
        ranking = ranking.filter(pl.col(JUDGMENT) >= 0)
        rank = pl.col("position").rank("ordinal").over(QUERY).cast(pl.Int64)
    else:
        rank = pl.col("position")
    averaged = evaluation.ties == "average" and ordering == "retrieved"
    # a result's gain times its weight (--doc-weight-col; 1 without), as TF-Ranking's DCG weighs it
    # (ranked.sql weighs it as it joins the judgments)
    gained = pl.col("gain") * pl.col(DOC_WEIGHT) if evaluation.doc_weight_col is not None else pl.col("gain")
    credited = gained.mean().over(QUERY, SCORE) if averaged else gained
    return ranking.select(
        QUERY,
        DOC,
        SCORE,
        INPUT_RANK,
        rank.alias("rank"),
        JUDGMENT,
        gained.alias("gain"),
        credited.alias("credited_gain"),
        # the weights only where they weigh (doc_weight_col): a column less through the later steps
        *([DOC_WEIGHT] if evaluation.doc_weight_col is not None else []),
    )


def rankings(
    retrieved: dict[str, pl.LazyFrame], judged: pl.LazyFrame, evaluation: Evaluation
) -> dict[str, pl.LazyFrame]:
    """``{ranking: query_id, rank, credited_gain[, label]}``: the ranks that earn something of
    each ordering and of the ideal (``"ideal"``). A rank that earns 0 adds exactly 0 to every
    sum, and most ranks of a real run are unjudged; with signals asked, the judged ranks of
    the ranking by score are kept too, with their label."""
    kept = {}
    for ordering, ranking in retrieved.items():
        if ordering == "retrieved" and evaluation.signals:
            kept[ordering] = ranking.filter((pl.col("credited_gain") != 0) | pl.col(JUDGMENT).is_not_null()).select(
                QUERY, "rank", "credited_gain", JUDGMENT
            )
        else:
            kept[ordering] = ranking.filter(pl.col("credited_gain") != 0).select(QUERY, "rank", "credited_gain")
    kept["ideal"] = ideal(judged, retrieved["retrieved"], evaluation)
    return kept


def ideal(judged: pl.LazyFrame, retrieved: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """``query_id, rank, credited_gain``: the positive gains of the ideal source, best first."""
    source = retrieved if evaluation.ideal == "retrieved" else judged
    ideal = source.select(QUERY, "gain").filter(pl.col("gain") > 0).with_columns(rank=rank_by_gain())
    if evaluation.ideal == "judged-cut-at-hits":
        hits = retrieved.group_by(QUERY).agg(pl.len().alias("hits"))
        ideal = ideal.join(hits, on=QUERY, how="inner").filter(pl.col("rank") <= pl.col("hits"))
    return ideal.select(QUERY, "rank", pl.col("gain").alias("credited_gain"))
