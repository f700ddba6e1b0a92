"""Inputs as the fronts give them -> frames read by Polars -> validated frames.

:class:`Inputs` is what one evaluation is asked to read: the run and the judgments (paths,
:class:`~pipeline.io.read.Source` objects or frames; no judgments means the run's own labels),
how to read them and how strictly to check them. The Polars and DuckDB engines share the
reading and the checks here (:func:`prepare`, then :func:`check`); the Spark engine reads and
measures with Spark and decides with the same rules (:mod:`pipeline.rules`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from pipeline.errors import InvalidInput, NdcgError, UsageError, first_line
from pipeline.expressions import ARRIVAL, RANK_COLUMN, first_copy
from pipeline.io import fs
from pipeline.io.identity import UNKNOWN, identify, refuse_changed
from pipeline.io.read import (
    DOC,
    LABEL,
    QUERY,
    SCORE,
    Columns,
    Source,
    has_glob_characters,
    missing_columns_message,
    scan_qrels,
    scan_run,
)
from pipeline.registry import Evaluation, InputChecks
from pipeline.validate import Checked, check_inputs, collect_input
from pipeline.weights import document_weights, inline_qrels_weights_message, trec_weights_message


@dataclass(frozen=True)
class Inputs:
    """The run and the judgments of one evaluation, and how to read and check them. Without
    judgments the run's names are the only names (:meth:`Columns.with_inline_labels`)."""

    run: Any
    qrels: Any | None = None
    columns: Columns = field(default_factory=Columns)
    run_format: str | None = None
    qrels_format: str | None = None
    checks: InputChecks = field(default_factory=InputChecks)

    def __post_init__(self) -> None:
        if self.qrels is None:
            object.__setattr__(self, "columns", self.columns.with_inline_labels())


@dataclass(frozen=True)
class Prepared:
    """Inputs read lazily with canonical columns and the run's ``arrival``, not yet checked."""

    run: pl.LazyFrame
    qrels: pl.LazyFrame
    run_name: str
    qrels_name: str
    run_source: Source | None
    qrels_source: Source | None
    inline: bool


@dataclass(frozen=True)
class Validated:
    """Inputs read by Polars and validated: what the Polars and DuckDB engines compute from."""

    prepared: Prepared
    checked: Checked
    columns: Columns = field(default_factory=Columns)

    @property
    def warnings(self) -> tuple[Any, ...]:
        return self.checked.warnings


def load(inputs: Inputs, evaluation: Evaluation) -> Validated:
    """Read and validate (one pass over each input for the checks)."""
    prepared = prepare(inputs.run, inputs.qrels, inputs.columns, inputs.run_format, inputs.qrels_format, evaluation)
    return Validated(prepared, check(prepared, inputs, evaluation), inputs.columns)


def prepare(
    run: Any,
    qrels: Any | None,
    columns: Columns,
    run_format: str | None,
    qrels_format: str | None,
    evaluation: Evaluation,
    *,
    text_in_memory: bool = True,
) -> Prepared:
    """The run gets its ``arrival`` column here, as it is read, so that both engines see the
    same input order (DuckDB keeps no row order of its own). A text input (TREC, CSV, TSV) is
    parsed once into memory (:func:`_parsed_once`) unless ``text_in_memory`` is false (out of
    core, where a memory limit holds)."""
    run_source = _source(run, run_format, columns.of("run"))
    qrels_source = _source(qrels, qrels_format, columns.of("qrels")) if qrels is not None else None
    inline = qrels is None

    run_name = run_source.path if run_source else "run"
    run_frame = _frame(run, run_source, role="run", with_labels=inline)
    if text_in_memory:
        run_frame = _parsed_once(run_frame, run_source, run_name)
    # a user column called "arrival" is not ours: the input order is where each row stands
    run_frame = (
        run_frame.drop(ARRIVAL, strict=False).with_row_index(ARRIVAL).with_columns(pl.col(ARRIVAL).cast(pl.Int64))
    )
    if evaluation.doc_weight_col is not None and evaluation.doc_weights_in == "run":
        if run_source is not None and run_source.format == "trec":
            raise InvalidInput(trec_weights_message(run_name))
        run_frame = document_weights(run_frame, evaluation.doc_weight_col, run_name, columns.of("run"))
    rank_type = run_frame.collect_schema().get(RANK_COLUMN)
    if evaluation.reads_input_rank and rank_type is not None and not rank_type.is_numeric():
        raise InvalidInput(f"{run_name}: column {RANK_COLUMN!r} has type {rank_type}; input-order ties need numbers")
    if inline:
        labelled = run_frame
        if evaluation.duplicates != "error":
            # the labels of the rows the duplicate policy keeps
            labelled = labelled.filter(first_copy(by_score=evaluation.duplicates == "max-score"))
        qrels_frame = labelled.select("query_id", "doc_id", LABEL)
        run_frame = run_frame.drop(LABEL)
        qrels_name = f"{run_name} (inline labels)"
    else:
        qrels_frame = _frame(qrels, qrels_source, role="qrels", with_labels=False)
        qrels_name = qrels_source.path if qrels_source else "qrels"
        if text_in_memory:
            qrels_frame = _parsed_once(qrels_frame, qrels_source, qrels_name)
    if evaluation.doc_weight_col is not None and evaluation.doc_weights_in == "qrels":
        # the judgments' weights, checked as read; each result takes its judgment's once the ids are
        # aligned (pipeline.weights.judged_weights, at the end of validation)
        if inline:
            raise InvalidInput(inline_qrels_weights_message(run_name))
        if qrels_source is not None and qrels_source.format == "trec":
            raise InvalidInput(trec_weights_message(qrels_name, "qrels"))
        qrels_frame = document_weights(
            qrels_frame, evaluation.doc_weight_col, qrels_name, columns.of("qrels"), role="qrels"
        )
    return Prepared(run_frame, qrels_frame, run_name, qrels_name, run_source, qrels_source, inline)


def check(prepared: Prepared, inputs: Inputs, evaluation: Evaluation, *, require_rows: bool = True) -> Checked:
    """Validate the prepared inputs; ``require_rows=False`` for one bucket of them, which may
    hold no rows."""
    return check_inputs(
        prepared.run,
        prepared.qrels,
        run_name=prepared.run_name,
        qrels_name=prepared.qrels_name,
        columns=inputs.columns,
        checks=inputs.checks,
        run_duplicates=evaluation.duplicates,
        require_rows=require_rows,
        evaluation=evaluation,
    )


@contextmanager
def unchanged_while_read(inputs: Inputs) -> Iterator[None]:
    """Refuse (:class:`~pipeline.io.identity.ChangedWhileRead`, exit 3) when an input given by
    path changed between the start of the block and its end: the engines read an input by its
    name, more than once (validation, then the engine's pass; DuckDB and Spark open the files
    themselves), so a file replaced in between would be validated in one version and scored in
    the other (see :mod:`pipeline.io.identity`). A reader's failure is reported as the change
    when there was one (Polars reading a replaced file with the former file's footer fails with
    "Invalid thrift")."""
    before = input_identities(inputs)
    names = {"run": _input_name(inputs.run), "qrels": _input_name(inputs.qrels)}
    try:
        yield
    except Exception:
        refuse_changed(before, input_identities(inputs), names)
        raise
    refuse_changed(before, input_identities(inputs), names)


def _input_name(value: Any) -> str | None:
    return value.path if isinstance(value, Source) else str(value) if isinstance(value, (str, Path)) else None


def input_identities(inputs: Inputs) -> dict[str, dict[str, Any]]:
    """The identity of the run and of the judgments (:func:`pipeline.io.identity.identify`);
    ``{"kind": "unknown"}`` for a frame, or for an input the reader will refuse in its own words."""

    def identity(value: Any, format: str | None) -> dict[str, Any]:
        if not isinstance(value, (str, Path, Source)):
            return dict(UNKNOWN)
        try:
            return identify(value if isinstance(value, Source) else Source.of(value, format, inputs.columns))
        except (NdcgError, OSError):
            return dict(UNKNOWN)

    return {"run": identity(inputs.run, inputs.run_format), "qrels": identity(inputs.qrels, inputs.qrels_format)}


def native_parquet(validated: Validated, evaluation: Evaluation) -> tuple[Source, Source | None] | None:
    """The Parquet sources an engine may read itself (DuckDB does), or None when it must be
    handed the frames: the input order is read, a name would be expanded as a pattern, a file
    is not Parquet, validation changed a column's type, or the run's weights are read
    (``--doc-weight-col``: checked and named ``doc_weight`` as Polars reads them)."""
    prepared, checked = validated.prepared, validated.checked
    run_source, qrels_source = prepared.run_source, prepared.qrels_source
    native = (
        not evaluation.reads_input_order
        and evaluation.doc_weight_col is None
        and run_source is not None
        and run_source.format == "parquet"
        and not _any_remote(run_source, qrels_source)
        and not _any_glob_characters(run_source, qrels_source)
        and (prepared.inline or (qrels_source is not None and qrels_source.format == "parquet"))
        and checked.run.collect_schema() == prepared.run.select(checked.run.collect_schema().names()).collect_schema()
        and checked.qrels.collect_schema()
        == prepared.qrels.select(checked.qrels.collect_schema().names()).collect_schema()
    )
    return (run_source, qrels_source) if native and run_source is not None else None


def _any_remote(*sources: Source | None) -> bool:
    """Whether any source is on an object store: DuckDB reads those through Polars' frames
    (its httpfs extension is not needed, nor installed)."""
    return any(not fs.is_local(source.path) for source in sources if source is not None)


def _any_glob_characters(*sources: Source | None) -> bool:
    """Whether any file of the sources has a name DuckDB would expand as a pattern; such
    inputs reach DuckDB as frames read by Polars, never as paths."""
    return any(has_glob_characters(path) for source in sources if source is not None for path in source.files())


def _source(value: Any, format: str | None, columns: Columns) -> Source | None:
    if isinstance(value, Source):
        return value
    if isinstance(value, (str, Path)):
        return Source.of(value, format, columns)
    if not isinstance(value, (pl.LazyFrame, pl.DataFrame)):
        raise UsageError(f"expected a path or a frame, got {type(value).__name__}")
    return None


# parsing text is most of what reading it costs, and validation reads an input several times
# (its statistics, its repeated pairs, its queries) before the engine's pass: 2M TREC lines
# cost 1.2 s a parse
TEXT_FORMATS = ("trec", "csv", "tsv")


def _parsed_once(frame: pl.LazyFrame, source: Source | None, name: str) -> pl.LazyFrame:
    """A text input's scan parsed once, held in memory, for every later reader (a Parquet or
    Delta input, which costs little to read again, stays a scan)."""
    if source is None or source.format not in TEXT_FORMATS:
        return frame
    [table] = collect_input(name, [frame])
    return table.lazy()


def _frame(value: Any, source: Source | None, *, role: str, with_labels: bool) -> pl.LazyFrame:
    if source is not None:
        return scan_run(source, with_labels=with_labels) if role == "run" else scan_qrels(source)
    frame = value.lazy() if isinstance(value, pl.DataFrame) else value
    assert isinstance(frame, pl.LazyFrame)
    wanted = [
        "query_id",
        "doc_id",
        *(["score"] if role == "run" else []),
        *([LABEL] if role == "qrels" or with_labels else []),
    ]
    found = frame.collect_schema().names()
    missing = {c: c for c in wanted if c not in found}
    if missing:
        raise InvalidInput(f"{role} frame: {missing_columns_message(missing, found, role=role)}")
    return frame


def frame_input(value: Any, role: str, columns: Columns | None) -> Any:
    """A frame given for ``run`` or ``qrels`` as a Polars LazyFrame with the canonical column
    names (``columns`` renames them, as it does for files); paths and None pass through.

    Polars frames are taken as they are; pyarrow tables and anything that exports an Arrow C
    stream (DuckDB relations, pandas >= 2.2 frames, ...) are imported through Arrow, which
    shares the buffers where the types allow; older pandas frames go through
    ``pl.from_pandas``."""
    if value is None or isinstance(value, (str, Path, Source)):
        return value
    frame = as_polars(value, role)
    names = (columns or Columns()).of(role)
    wanted = {QUERY: names.query, DOC: names.doc, SCORE: names.score, LABEL: names.label}
    if role == "qrels":
        del wanted[SCORE]
    found = frame.collect_schema().names()
    required = [QUERY, DOC, SCORE if role == "run" else LABEL]
    missing = {canonical: wanted[canonical] for canonical in required if wanted[canonical] not in found}
    if missing:
        raise InvalidInput(f"{role} frame: {missing_columns_message(missing, found, role=role)}")
    renames = {given: canonical for canonical, given in wanted.items() if given in found and given != canonical}
    if not renames:
        return frame
    # a column that already has a canonical name would shadow the renamed one
    shadowed = [canonical for canonical in renames.values() if canonical in found and canonical not in renames]
    return frame.drop(shadowed).rename(renames)


def as_polars(value: object, role: str) -> pl.LazyFrame:
    """A table given for ``role`` as a Polars LazyFrame: Polars frames as they are, pyarrow
    tables and Arrow C streams through Arrow, older pandas frames through ``pl.from_pandas``."""
    if isinstance(value, pl.LazyFrame):
        return value
    if isinstance(value, pl.DataFrame):
        return value.lazy()
    module = type(value).__module__.split(".")[0]
    try:
        if module == "pyarrow":
            converted = pl.from_arrow(value)
        elif hasattr(value, "__arrow_c_stream__"):
            converted = pl.DataFrame(_ArrowStream(value.__arrow_c_stream__()))
        elif module == "pandas":
            converted = pl.from_pandas(value)
        else:
            raise UsageError(
                f"{role}: expected a path, a Polars, pandas or DuckDB frame, or a pyarrow table; "
                f"got {type(value).__name__}"
            )
    except (pl.exceptions.PolarsError, TypeError, ValueError) as error:
        raise InvalidInput(f"{role}: cannot read this {type(value).__name__} as a table: {first_line(error)}") from None
    if not isinstance(converted, pl.DataFrame):
        raise UsageError(f"{role}: expected a table, got {type(value).__name__} holding one column")
    return converted.lazy()


class _ArrowStream:
    """An Arrow C stream capsule as the object ``pl.DataFrame`` reads. Only the capsule
    reaches Polars: holding a DuckDB relation itself left DuckDB's objects alive at exit."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.capsule
