"""Checks that run before any number is computed, with errors that name the file, the column,
the offending value and an example row.

All checks of one input are gathered into a few small aggregations and collected together;
example rows are fetched only when a check fails.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.io.read import DOC, FILE, LABEL, LINE, LINE_NUMBER, PROVENANCE, QUERY, SCORE

ID_TYPES = "string or integer"


@dataclass(frozen=True)
class Checked:
    """Validated inputs with canonical columns and aligned id types, still lazy."""

    run: pl.LazyFrame
    qrels: pl.LazyFrame


def check_inputs(
    run: pl.LazyFrame, qrels: pl.LazyFrame, *, run_name: str, qrels_name: str, run_duplicates: str = "error"
) -> Checked:
    """Validate run and qrels; return them with matching id types and no helper columns.

    ``run_duplicates`` is the evaluation's duplicate policy: repeated (query, doc) rows in the
    run are refused only under ``"error"``; in the qrels they always are.
    """
    run_schema = run.collect_schema()
    qrels_schema = qrels.collect_schema()
    _check_types(run_schema, run_name, {QUERY: "id", DOC: "id", SCORE: "number"})
    _check_types(qrels_schema, qrels_name, {QUERY: "id", DOC: "id", LABEL: "number"})

    run_stats, run_duplicate = _collect(
        run_name, [_stats(run, (QUERY, DOC, SCORE), finite=SCORE), _first_duplicate(run)]
    )
    qrels_stats, qrels_duplicate = _collect(
        qrels_name, [_stats(qrels, (QUERY, DOC, LABEL), finite=LABEL), _first_duplicate(qrels)]
    )
    for frame, stats, name, value_column in (
        (run, run_stats, run_name, SCORE),
        (qrels, qrels_stats, qrels_name, LABEL),
    ):
        if stats["rows"][0] == 0:
            raise InvalidInput(f"{name}: no rows to evaluate")
        _raise_on_unparsed(frame, stats, name)
        for column in (QUERY, DOC, value_column):
            if stats[f"null_{column}"][0]:
                raise InvalidInput(
                    f"{name}: column {column!r} has {stats[f'null_{column}'][0]} null value(s); "
                    f"first at {_example(frame, pl.col(column).is_null())}"
                )
        if stats["not_finite"][0]:
            raise InvalidInput(
                f"{name}: column {value_column!r} has {stats['not_finite'][0]} NaN or infinite value(s); "
                f"first at {_example(frame, ~pl.col(value_column).is_finite())}"
            )
    for duplicate, name, what in ((run_duplicate, run_name, "run"), (qrels_duplicate, qrels_name, "qrels")):
        if duplicate.height and (what == "qrels" or run_duplicates == "error"):
            query, doc, count = duplicate.row(0)
            raise InvalidInput(
                f"{name}: document {doc!r} is listed {count} times for query {query!r}; "
                f"each (query_id, doc_id) may appear once in the {what}"
                + (" (or keep one row with --duplicates first or max-score)" if what == "run" else "")
            )

    run, qrels = _align_ids(_drop_provenance(run), _drop_provenance(qrels), run_schema, qrels_schema)
    return Checked(run=run, qrels=qrels)


def _collect(name: str, frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """Collect one input's checks; a read failure here is the input's fault (exit 3)."""
    try:
        return pl.collect_all(frames)
    except (pl.exceptions.PolarsError, OSError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InvalidInput(f"{name}: cannot read: {message}") from None


def _check_types(schema: pl.Schema, name: str, expected: dict[str, str]) -> None:
    for column, kind in expected.items():
        dtype = schema[column]
        if kind == "id" and not (dtype == pl.String or dtype.is_integer() or dtype == pl.Categorical):
            raise InvalidInput(f"{name}: column {column!r} has type {dtype}; ids must be {ID_TYPES}")
        if kind == "number" and not dtype.is_numeric():
            raise InvalidInput(f"{name}: column {column!r} has type {dtype}; expected numbers")


def _stats(frame: pl.LazyFrame, columns: tuple[str, ...], *, finite: str) -> pl.LazyFrame:
    value = pl.col(finite).cast(pl.Float64)
    if LINE in frame.collect_schema().names():
        unparsed = (pl.col(LINE).is_not_null() & pl.any_horizontal(pl.col(c).is_null() for c in columns)).sum()
    else:
        unparsed = pl.lit(0)
    return frame.select(
        pl.len().alias("rows"),
        *[pl.col(c).is_null().sum().alias(f"null_{c}") for c in columns],
        (value.is_not_null() & ~value.is_finite()).sum().alias("not_finite"),
        unparsed.alias("unparsed"),
    )


def _first_duplicate(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.group_by(QUERY, DOC).agg(pl.len().alias("count")).filter(pl.col("count") > 1).sort(QUERY, DOC).head(1)


def _raise_on_unparsed(frame: pl.LazyFrame, stats: pl.DataFrame, name: str) -> None:
    if not stats["unparsed"][0]:
        return
    columns = [c for c in (QUERY, DOC, SCORE, LABEL) if c in frame.collect_schema().names()]
    bad = frame.filter(pl.any_horizontal(pl.col(c).is_null() for c in columns)).head(1).collect()
    expected = "qid Q0 docno rank score tag" if SCORE in columns else "qid iter docno rel"
    raise InvalidInput(
        f"{bad[FILE][0]}:{bad[LINE_NUMBER][0]}: cannot read line {bad[LINE][0]!r} "
        f"as '{expected}' ({stats['unparsed'][0]} such line(s) in {name})"
    )


def _example(frame: pl.LazyFrame, condition: pl.Expr) -> str:
    row = frame.filter(condition).head(1).collect()
    if LINE_NUMBER in row.columns:
        return f"line {row[LINE_NUMBER][0]}: {row[LINE][0]!r}"
    shown = {c: row[c][0] for c in row.columns if c not in PROVENANCE}
    return f"row {shown}"


def _drop_provenance(frame: pl.LazyFrame) -> pl.LazyFrame:
    names = frame.collect_schema().names()
    return frame.drop([c for c in PROVENANCE if c in names])


def _align_ids(
    run: pl.LazyFrame, qrels: pl.LazyFrame, run_schema: pl.Schema, qrels_schema: pl.Schema
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """Give both inputs one id type per column: Int64 if both are integers, else String."""
    casts = {}
    for column in (QUERY, DOC):
        left, right = run_schema[column], qrels_schema[column]
        if left == right and left != pl.Categorical:
            continue
        casts[column] = pl.Int64 if left.is_integer() and right.is_integer() else pl.String
    if not casts:
        return run, qrels
    cast = [pl.col(c).cast(t) for c, t in casts.items()]
    return run.with_columns(cast), qrels.with_columns(cast)
