"""trec_eval's relstring (m_relstring.c): not a measure but a line of the trec output per query,
computed by one Polars function whatever the engine (it reads only the top results)."""

from __future__ import annotations

import polars as pl

from pipeline.engines.polars.ranking import DOC, LABEL, QUERY, deduplicated, document_labels, ranked
from pipeline.expressions import with_input_order
from pipeline.registry import Evaluation


def relstrings(run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation, length: int) -> pl.LazyFrame:
    """``query_id, relstring``: trec_eval's relstring (m_relstring.c) of each query of the run,
    the labels of the top ``length`` results of its ranking by score as the evaluation ranks
    them (duplicates, ties, max_results, unjudged), a character each: the label when it is a
    whole number 0 to 9, ``>`` above 9, ``.`` below 0 (in the judgments, not judged: trec_eval's
    pool), ``-`` absent from the judgments, ``<`` any other label (a fraction). Not a measure:
    a line of the trec output, so one engine serves all (it reads only the top ``length``)."""
    ranking = ranked(deduplicated(with_input_order(run), evaluation), evaluation, "retrieved")
    labelled = ranking.join(document_labels(qrels).select(QUERY, DOC, LABEL), on=[QUERY, DOC], how="left")
    rank = pl.col("position")
    if evaluation.unjudged == "drop":
        labelled = labelled.filter(pl.col(LABEL) >= 0)
        rank = rank.rank("ordinal").over(QUERY)
    label = pl.col(LABEL)
    character = (
        pl.when(label.is_null())
        .then(pl.lit("-"))
        .when(label < 0)
        .then(pl.lit("."))
        .when(label > 9)
        .then(pl.lit(">"))
        .when(label == label.floor())
        .then(label.cast(pl.Int64).cast(pl.String))
        .otherwise(pl.lit("<"))
    )
    top = labelled.with_columns(rank.alias("rank")).filter(pl.col("rank") <= length)
    return top.group_by(QUERY).agg(character.sort_by("rank").str.join("").alias("relstring"))
