"""The canonical column names of the inputs, and the columns that say where a row of a text
file came from (kept so that errors can point at the line; validation drops them)."""

from __future__ import annotations

QUERY, DOC, SCORE, LABEL = "query_id", "doc_id", "score", "relevance"

FILE, LINE_NUMBER, LINE = "_file", "_line_number", "_line"
PROVENANCE: tuple[str, ...] = (FILE, LINE_NUMBER, LINE)
