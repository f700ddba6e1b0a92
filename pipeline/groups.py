"""``--group-by``: each query's group, the rule for queries without one, and the overall rows.

One rule for ``ndcg evaluate``, ``ndcg compare`` and ``ndcg report``:

- a query's group columns are read from the run, or from ``--query-attributes`` when given
  (:func:`scan_group_source`); a query may belong to one group per column only
  (:func:`query_groups`; across several runs, :func:`shared_query_groups`);
- an evaluated query without a row there (zero-filled by ``all_queries``, or absent from the
  attributes) joins the group whose value is null, with a warning (``queries_without_group``);
  when no evaluated query has a row, the ids cannot be the same ids, and that is an error
  (:func:`attach_groups`);
- a null group value is a group of its own: tables grouped by it hold a boolean column
  ``overall`` telling the rows over all queries (true; their group columns are null and mean
  nothing) from the rows of one group (false) (:func:`overall_rows`, :func:`group_rows`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.io.format import OVERALL_LABEL, WHOLE_RANKING
from pipeline.io.partitions import OUTPUT_COLUMNS
from pipeline.io.read import QUERY, Columns, Source, is_id_type, scan_attributes, scan_run
from pipeline.rules import ValidationWarning

# Marks the rows over all queries of a grouped summary (and of a grouped comparison).
OVERALL = "overall"
# How every table labels those rows in its group columns, and the whole-ranking cutoff in its k
# column: one word each, never the same (defined with the renderers, pipeline/io/format.py)
__all__ = ["OVERALL", "OVERALL_LABEL", "RESERVED_COLUMNS", "WHOLE_RANKING"]
# Columns of the per-query and summary tables (and the overall marker): a group column may not
# take one of these names, or it would overwrite or be mistaken for them. Defined with the
# partition keys' rule (io stands below this module), which refuses the same names.
RESERVED_COLUMNS = OUTPUT_COLUMNS


def parse_group_by(text: str | None) -> tuple[str, ...]:
    """``"locale, model"`` as ``("locale", "model")``; nothing for None or blanks."""
    return tuple(name.strip() for name in text.split(",") if name.strip()) if text else ()


def check_group_names(group_by: tuple[str, ...] | list[str], reserved: frozenset[str] = RESERVED_COLUMNS) -> None:
    """Group columns must be distinct and must not be named like a column of the outputs."""
    clashes = [g for g in group_by if g in reserved]
    if clashes:
        raise UsageError(
            f"cannot group by {', '.join(map(repr, clashes))}: the outputs have a column of that name "
            f"(reserved: {', '.join(sorted(reserved))}); rename the column first"
        )
    repeated = sorted({g for g in group_by if list(group_by).count(g) > 1})
    if repeated:
        raise UsageError(f"group columns repeat {', '.join(map(repr, repeated))}")


def scan_group_source(
    run: str | Source,
    *,
    query_attributes: str | None = None,
    run_format: str | None = None,
    columns: Columns | None = None,
) -> tuple[str, pl.LazyFrame]:
    """Where the queries' groups are read, and its rows: ``query_attributes`` when given (read
    by the run's reader, so its CSV and Parquet checks apply; its query column is named by
    ``--query-col``, the name shared by the inputs), else the run itself (under the run's names)."""
    columns = columns or Columns()
    if query_attributes:
        return query_attributes, scan_attributes(Source.of(query_attributes, None, Columns(query=columns.query)))
    if isinstance(run, Source):
        return run.path, scan_run(run)
    return run, scan_run(Source.of(run, run_format, columns.of("run")))


def query_groups(frame: pl.LazyFrame, source: str, group_by: Sequence[str]) -> pl.DataFrame:
    """``query_id`` and its group columns, one row per query, from one source; a query may
    belong to one group per column only."""
    found = frame.collect_schema().names()
    missing = [c for c in group_by if c not in found]
    if missing:
        raise InvalidInput(
            f"{source}: no group column(s) {', '.join(map(repr, missing))}; columns found: {', '.join(found)}"
        )
    pairs = frame.select(QUERY, *group_by).unique().collect()
    conflicts = pairs.filter(pl.len().over(QUERY) > 1).sort(QUERY, *group_by)
    if conflicts.height:
        query = conflicts[QUERY][0]
        values = conflicts.filter(pl.col(QUERY) == query).drop(QUERY).rows()
        raise InvalidInput(
            f"{source}: query {query!r} belongs to more than one group of {', '.join(group_by)}: "
            f"{', '.join(map(str, values[:5]))}; a query's group must be fixed"
        )
    return pairs


def shared_query_groups(sources: Mapping[str, pl.LazyFrame], group_by: Sequence[str]) -> pl.DataFrame:
    """Each query's groups over several sources (the runs of a comparison): read from each as
    :func:`query_groups` does, and a query must have the same groups in every source that has
    it. Query ids of different types are joined as text."""
    found = {name: query_groups(frame, name, group_by) for name, frame in sources.items()}
    for name, table in found.items():
        if not is_id_type(table.schema[QUERY]):
            raise InvalidInput(f"{name}: query ids of type {table.schema[QUERY]}; expected text or integers")
    types = {table.schema[QUERY] for table in found.values()}
    as_text = len(types) > 1 or pl.Categorical in types
    tagged = [
        table.with_columns(pl.col(QUERY).cast(pl.String) if as_text else pl.col(QUERY), pl.lit(name).alias("_source"))
        for name, table in found.items()
    ]
    stacked = pl.concat(tagged, how="vertical_relaxed")
    conflicts = stacked.unique([QUERY, *group_by]).filter(pl.len().over(QUERY) > 1).sort(QUERY, "_source")
    if conflicts.height:
        query = conflicts[QUERY][0]
        shown = [
            f"{row[:-1]} in {row[-1]}"
            for row in conflicts.filter(pl.col(QUERY) == query).select(*group_by, "_source").rows()
        ]
        raise InvalidInput(
            f"query {query!r} belongs to different groups of {', '.join(group_by)} in the runs: "
            f"{', '.join(shown[:5])}; a query's group must be the same in every run"
        )
    return stacked.drop("_source").unique(QUERY, maintain_order=True)


def attach_groups(
    per_query: pl.DataFrame, groups: pl.DataFrame, source: str, group_by: Sequence[str]
) -> tuple[pl.DataFrame, ValidationWarning | None]:
    """The per-query table with each query's group columns. Query ids of two types (integers
    in one, text in the other) are joined as text, as evaluation pairs run and qrels. A query
    without a row in ``source`` (zero-filled by all_queries, or absent from the attributes)
    joins the null group, with a warning; when no query has one, the ids cannot be the same
    ids and that is an error, not a table of null groups."""
    ours, theirs = per_query.schema[QUERY], groups.schema[QUERY]
    if not is_id_type(theirs):
        raise InvalidInput(
            f"{source}: query ids of type {theirs} cannot be joined to the evaluated query ids ({ours}); "
            "expected text or integers"
        )
    as_text = ours != theirs or pl.Categorical in (ours, theirs)
    key = (pl.col(QUERY).cast(pl.String) if as_text else pl.col(QUERY)).alias("_group_key")
    labelled = per_query.with_columns(key).join(
        groups.select(key, *group_by, pl.lit(True).alias("_grouped")), on="_group_key", how="left"
    )
    missing = labelled.filter(pl.col("_grouped").is_null()).get_column(QUERY).cast(pl.String).unique().sort()
    labelled = labelled.drop("_group_key", "_grouped")
    if missing.len() == 0:
        return labelled, None
    examples = tuple(missing.head(5).to_list())
    if missing.len() == per_query.get_column(QUERY).n_unique():
        found = groups.get_column(QUERY).head(3).to_list()
        raise InvalidInput(
            f"{source}: none of the {missing.len()} evaluated queries has a row here, so no query would get "
            f"a {', '.join(group_by)} value: evaluated query ids ({ours}) e.g. {', '.join(map(repr, examples[:3]))}; "
            f"query ids here ({theirs}) e.g. {', '.join(map(repr, found))}"
        )
    warning = ValidationWarning(
        "queries_without_group",
        f"evaluated queries without a row in {source}, summarised in the group whose {', '.join(group_by)} is null",
        missing.len(),
        examples,
        f"evaluated queries without a row in {source}: grouped under a null {', '.join(group_by)}",
    )
    return labelled, warning


def attach_shared_groups(
    tables: Mapping[str, pl.DataFrame],
    runs: Sequence[str],
    group_by: Sequence[str],
    *,
    query_attributes: str | None = None,
) -> tuple[dict[str, pl.DataFrame], list[tuple[str, ValidationWarning]]]:
    """The per-query tables of systems compared together (``{system: table}``, scored from
    ``runs``), each with its queries' groups, and the warnings of :func:`attach_groups` by
    system. The groups are read from ``query_attributes``, or else from every run
    (:func:`shared_query_groups`), so that a query has one group in every table and paired
    queries are in the same group, even one only some runs hold (zero-filled in the others)."""
    check_group_names(tuple(group_by))
    if query_attributes:
        source, rows = scan_group_source(runs[0], query_attributes=query_attributes)
        groups = query_groups(rows, source, group_by)
    else:
        sources = dict(scan_group_source(run) for run in runs)
        groups, source = shared_query_groups(sources, group_by), f"any run ({', '.join(runs)})"
    labelled, warnings = {}, []
    for name, table in tables.items():
        labelled[name], unlabelled = attach_groups(table, groups, source, group_by)
        if unlabelled is not None:
            warnings.append((name, unlabelled))
    return labelled, warnings


def overall_rows(table: pl.DataFrame, group_columns: Sequence[str]) -> pl.DataFrame:
    """The rows over all queries of a grouped summary or comparison: those its ``overall``
    column marks (a null group value is a group, not the overall row); outputs written before
    that column existed marked them by null group columns."""
    if OVERALL in table.columns:
        return table.filter(pl.col(OVERALL))
    return table.filter(pl.all_horizontal([pl.col(g).is_null() for g in group_columns] or [pl.lit(True)]))


def group_rows(table: pl.DataFrame, group_columns: Sequence[str]) -> pl.DataFrame:
    """The rows of one group each (the complement of :func:`overall_rows`)."""
    if OVERALL in table.columns:
        return table.filter(~pl.col(OVERALL))
    return table.filter(pl.all_horizontal([pl.col(g).is_not_null() for g in group_columns] or [pl.lit(False)]))
