"""The checks of bench/run.py's values, after every timed run: a tool's NDCG against ours, and
two per-query tables of many measures against each other (all_trec's, a family's)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import polars as pl

TOLERANCE = 1e-9


def rows_apart(joined: pl.DataFrame, columns: list[str], suffix: str) -> dict[str, int]:
    """Of each column, the rows of ``joined`` where it and its ``<column><suffix>`` twin differ by
    more than :data:`TOLERANCE`, or one side is null or NaN and the other is not (the columns
    that differ, with their counts). Compared as numbers: an engine may write a count as a decimal."""
    import polars as pl

    differ: dict[str, int] = {}
    for column in columns:
        left, right = pl.col(column).cast(pl.Float64), pl.col(f"{column}{suffix}").cast(pl.Float64)
        apart = (
            ((left - right).abs() > TOLERANCE) | (left.is_null() != right.is_null()) | (left.is_nan() != right.is_nan())
        )
        rows = joined.filter(apart).height
        if rows:
            differ[column] = rows
    return differ


def agreement(tool: str, out_root: Path, reference: Path | None, tolerance: float = TOLERANCE) -> dict:
    """How the tool's per-query values compare with ours: the rows equal within
    :data:`TOLERANCE`, and of the others, those inside our bounds over orders of ties."""
    import polars as pl  # only after every timed process has run (run.py's top)

    values = out_root / tool / "values.parquet"
    if not values.exists():
        return {"text": "-"}
    ours = pl.read_parquet(reference or out_root / "ndcg-polars" / "values.parquet")
    bounds = ["ndcg_min", "ndcg_max"] if "ndcg_min" in ours.columns else []
    theirs = pl.read_parquet(values)
    joined = theirs.join(
        ours.select("query_id", "k", pl.col("ndcg").alias("ours"), *bounds),
        on=["query_id", "k"],
        how="left",
        nulls_equal=True,
    )
    differ = joined.filter(((pl.col("ndcg") - pl.col("ours")).abs() > tolerance) | pl.col("ours").is_null())
    counts = {"rows": theirs.height, "rows_differ": differ.height}
    if differ.height == 0:
        return {**counts, "text": f"yes ({theirs.height} rows)"}
    text = f"no: {differ.height} of {theirs.height} rows differ"
    if bounds:
        within = differ.filter(
            pl.col("ndcg").is_between(pl.col("ndcg_min") - TOLERANCE, pl.col("ndcg_max") + TOLERANCE)
        ).height
        counts["rows_differ_within_tie_bounds"] = within
        text += (
            ", all within our bounds over orders of tied results"
            if within == differ.height
            else f", {within} of them within our bounds over orders of tied results"
        )
    return {**counts, "text": text}


def all_trec_engines_agreement(out_root: Path, tools: tuple[str, ...]) -> dict:
    """Whether two ``--measures all_trec`` per-query tables agree (the two engines', or an
    ``--also-ndcg`` CLI's against ours): every measure column, every (query, k) row, within
    :data:`TOLERANCE` (a value on one side only counts as a difference). Types are compared as
    numbers: an engine may write a count as a decimal."""
    import polars as pl  # only after every timed process has run (run.py's top)

    polars_table, duckdb_table = (out_root / tool / "ndcg" / "per_query.parquet" for tool in tools)
    if not (polars_table.exists() and duckdb_table.exists()):
        return {}
    left, right = pl.read_parquet(polars_table), pl.read_parquet(duckdb_table)
    keys = ["query_id", "k"]
    if set(left.columns) != set(right.columns):
        only = sorted(set(left.columns) ^ set(right.columns))
        return {"text": f"no: the columns differ ({', '.join(only)})", "columns_differ": only}
    measures = [column for column in left.columns if column not in keys]
    joined = left.join(right, on=keys, how="full", nulls_equal=True, suffix="_duckdb", coalesce=True)
    differ = rows_apart(joined, measures, "_duckdb")
    types = sorted(column for column in measures if left.schema[column] != right.schema[column])
    counts = {"rows": joined.height, "measures": len(measures), "columns_differ": differ, "types_differ": types}
    text = (
        f"yes ({len(measures)} measures x {joined.height} rows)"
        if not differ
        else "no: " + ", ".join(f"{column} in {rows} rows" for column, rows in differ.items())
    )
    if types:
        text += f"; types differ in {', '.join(types)} (compared as numbers)"
    return {**counts, "text": text}
