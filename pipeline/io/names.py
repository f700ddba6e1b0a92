"""The canonical column names of the inputs, and the columns that say where a row of a text
file came from (kept so that errors can point at the line; validation drops them)."""

from __future__ import annotations

from typing import Literal

QUERY, DOC, SCORE, LABEL = "query_id", "doc_id", "score", "relevance"
# the qrels' intent (ndeval's subtopic, trec_eval's "iteration" field): a TREC qrels' second field,
# a Parquet or CSV qrels' column of this name when it has one
SUBTOPIC = "subtopic"

FILE, LINE_NUMBER, LINE = "_file", "_line_number", "_line"
PROVENANCE: tuple[str, ...] = (FILE, LINE_NUMBER, LINE)

# The Polars engine that collects the plans over these inputs (validation's checks and the
# Polars engine's per-query plan). Streaming measured faster and smaller than in-memory with
# the same bits (10M rows: the per-query plan 1.7 s against 2.7 s, the checks 0.9 s against
# 1.2 s). Named rather than left to "auto", which means in-memory before Polars 2 and follows
# the user's POLARS_ENGINE_AFFINITY.
COLLECT_ENGINE: Literal["streaming"] = "streaming"
