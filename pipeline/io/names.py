"""The canonical column names of the inputs, and the columns that say where a row of a text
file came from (kept so that errors can point at the line; validation drops them)."""

from __future__ import annotations

QUERY, DOC, SCORE, LABEL = "query_id", "doc_id", "score", "relevance"
# the qrels' intent (ndeval's subtopic, trec_eval's "iteration" field): a TREC qrels' second field,
# a Parquet or CSV qrels' column of this name when it has one
SUBTOPIC = "subtopic"

FILE, LINE_NUMBER, LINE = "_file", "_line_number", "_line"
PROVENANCE: tuple[str, ...] = (FILE, LINE_NUMBER, LINE)
