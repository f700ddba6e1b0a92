"""The library's front: inputs (paths or frames) + options -> validated inputs -> an engine.

>>> import polars as pl
>>> from pipeline import per_query
>>> run = pl.LazyFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
>>> qrels = pl.LazyFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [0, 1]})
>>> per_query(run, qrels, k=[1]).collect()["ndcg"].round(4).to_list()
[0.6309, 0.0]
"""

from __future__ import annotations

import errno
import logging
import math
import re
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal

import polars as pl

from pipeline.aggregate import summarize
from pipeline.engines import polars as polars_engine
from pipeline.errors import InvalidInput, OutOfMemory, UsageError
from pipeline.expressions import ARRIVAL, RANK_COLUMN, first_copy
from pipeline.io.read import (
    COLLECT_ENGINE,
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
from pipeline.spec import (
    CONVENTION,
    CONVENTIONS,
    Convention,
    Evaluation,
    Profile,
    SpecError,
    parse_cutoffs,
    profile_named,
)
from pipeline.validate import (
    DEFAULT_WARN_RESULTS_OVER,
    WARNING_EXAMPLES,
    WARNING_ORDER,
    Checked,
    ValidationWarning,
    align_ids,
    check_inputs,
    id_casts,
)

log = logging.getLogger(__name__)

# A path, or a table: Polars frames, pyarrow tables, pandas frames, DuckDB relations and
# anything else that exports an Arrow C stream.
Input = str | Path | Source | pl.LazyFrame | pl.DataFrame | Any
Engine = Literal["polars", "duckdb", "spark"]
ENGINES: tuple[str, ...] = ("polars", "duckdb", "spark")


@dataclass(frozen=True)
class Result:
    """What one evaluation produced, with the spec that produced it."""

    per_query: pl.DataFrame
    summary: pl.DataFrame
    evaluation: Evaluation
    engine: str
    warnings: tuple[ValidationWarning, ...] = ()


def make_evaluation(
    *, k: Iterable[int] | str = CONVENTION["k"].default, profile: str | None = None, **options: Any
) -> Evaluation:
    """An :class:`Evaluation` from plain values, as the CLI and the keyword API give them.

    ``options`` are the conventions of :data:`pipeline.spec.CONVENTIONS` by name (``gain``,
    ``discount``, ``log_base``, ``ties``, ``ideal``, ...); each means what its flag means.
    ``profile`` names a bundle of conventions (:data:`pipeline.spec.PROFILES`); every option
    left out or None keeps the profile's choice, or the default without a profile.

    >>> make_evaluation(k=[3], profile="lightgbm", empty_ideal="zero").describe()["empty_ideal"]
    'zero'
    >>> str(make_evaluation(discount="jk", log_base=3).discount)
    'jk(base=3)'
    """
    unknown = sorted(set(options) - set(CONVENTION))
    if unknown:
        raise UsageError(
            f"unknown option(s) {', '.join(map(repr, unknown))}; options are {', '.join(_EVALUATION_OPTIONS)}"
        )
    try:
        chosen = profile_named(profile) if profile is not None else Profile("default", "defaults", ())
        settings = dict(chosen.settings)
        for convention in CONVENTIONS:  # in the registry's order: a field before its parts
            value = options.get(convention.name)
            if value is not None:
                _set(settings, convention, value)
        return chosen.evaluation(cutoffs=_cutoffs(k), **settings)
    except SpecError as error:
        raise UsageError(str(error)) from None


def _set(settings: dict[str, object], convention: Convention, value: object) -> None:
    """One option into the settings of an Evaluation: a text read as its flag reads it (a gain
    map), a part of a field (``log_base`` of ``discount``) set on the profile's or default one."""
    if isinstance(value, str) and convention.from_text is not None:
        value = convention.from_text(value)
    attribute, _, part = convention.field.partition(".")
    if part and not is_dataclass(value):
        value = replace(settings.get(attribute, _DEFAULT_EVALUATION_FIELDS[attribute]), **{part: value})  # type: ignore[type-var]
    settings[attribute] = value


_DEFAULT_EVALUATION_FIELDS = {name: field.default for name, field in Evaluation.__dataclass_fields__.items()}
# the keyword options of the front functions, as make_evaluation names them
_EVALUATION_OPTIONS: tuple[str, ...] = ("k", "profile", *(c.name for c in CONVENTIONS if c.name != "k"))


def _cutoffs(k: object) -> tuple[int, ...]:
    """``k`` as the user may give it: ``10``, ``[5, 10]`` or ``"5,10"``."""
    if isinstance(k, str):
        return parse_cutoffs(k)
    if isinstance(k, int) and not isinstance(k, bool):
        return (k,)
    if isinstance(k, Iterable):
        return tuple(k)  # each value is checked by Evaluation
    raise SpecError(f"k must be an integer, a list of integers or a text such as '5,10', got {k!r}")


def _options(function: str, options: dict[str, object]) -> Evaluation:
    """The evaluation of a front function's keyword options, refusing an option by its name."""
    unknown = sorted(set(options) - set(_EVALUATION_OPTIONS))
    if unknown:
        raise UsageError(
            f"{function}() got unknown option(s) {', '.join(map(repr, unknown))}; "
            f"options are {', '.join(_EVALUATION_OPTIONS)} (or evaluation=Evaluation(...))"
        )
    return make_evaluation(**options)  # type: ignore[arg-type]


def per_query(
    run: Input,
    qrels: Input | None = None,
    *,
    evaluation: Evaluation | None = None,
    engine: Engine = "polars",
    columns: Columns | None = None,
    run_format: str | None = None,
    qrels_format: str | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = DEFAULT_WARN_RESULTS_OVER,
    **options: object,
) -> pl.LazyFrame:
    """The per-query table ``query_id, k, cg, dcg, idcg, ndcg`` as a LazyFrame.

    ``run`` and ``qrels`` are paths (Parquet file, directory or glob; TREC; CSV) or Polars
    frames with the canonical columns. Without ``qrels`` the run's label column is used as
    inline labels. ``options`` are those of :func:`make_evaluation` (``k``, ``gain``, ...).
    Inputs are validated before anything is computed (see :func:`check`); warnings are
    dropped here, :func:`evaluate` returns them.
    """
    evaluation = evaluation or _options("per_query", options)
    _check_engine(engine)
    if engine == "spark":
        checks = (allow_fractional_labels, warn_results_over)
        return _spark(run, qrels, evaluation, columns, run_format, qrels_format, *checks).per_query.lazy()
    run, qrels = _frame_input(run, "run", columns), _frame_input(qrels, "qrels", columns)
    checked, parquet = _load(
        run,
        qrels,
        columns,
        run_format,
        qrels_format,
        allow_fractional_labels,
        warn_results_over,
        evaluation=evaluation,
    )
    if engine == "polars":
        return _polars_plan(checked, evaluation)
    return _duckdb(checked.run, checked.qrels, parquet, evaluation, columns)[0].lazy()


def check(
    run: Input,
    qrels: Input | None = None,
    *,
    columns: Columns | None = None,
    run_format: str | None = None,
    qrels_format: str | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = DEFAULT_WARN_RESULTS_OVER,
) -> tuple[ValidationWarning, ...]:
    """Run only the checks: raise :class:`~pipeline.errors.InvalidInput` on the first error,
    return the warnings (queries only on one side, no relevant document, negative labels,
    queries with more than ``warn_results_over`` results)."""
    run, qrels = _frame_input(run, "run", columns), _frame_input(qrels, "qrels", columns)
    checked, _ = _load(run, qrels, columns, run_format, qrels_format, allow_fractional_labels, warn_results_over)
    return checked.warnings


def evaluate(
    run: Input,
    qrels: Input | None = None,
    *,
    evaluation: Evaluation | None = None,
    engine: Engine = "polars",
    columns: Columns | None = None,
    run_format: str | None = None,
    qrels_format: str | None = None,
    threads: int | None = None,
    memory_limit: str | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = DEFAULT_WARN_RESULTS_OVER,
    **options: object,
) -> Result:
    """Per-query table and summary, computed once by the chosen engine, with the warnings of
    validation.

    ``threads`` is DuckDB's. ``memory_limit`` (e.g. ``"4GB"``) bounds both engines: when the
    run has more rows than fit (about :data:`BYTES_PER_RUN_ROW` bytes each), its queries are
    split by a hash of their id into buckets that are validated and evaluated one after the
    other, each within the limit (DuckDB also gets it as its ``memory_limit``). The buckets
    are written once, in a temporary folder of ``TMPDIR``, about the inputs' size. The
    per-query rows, summary and warnings are the same as in one pass.
    """
    _check_engine(engine)
    evaluation = evaluation or _options("evaluate", options)
    if engine == "spark":
        checks = (allow_fractional_labels, warn_results_over)
        return _spark(run, qrels, evaluation, columns, run_format, qrels_format, *checks)
    run, qrels = _frame_input(run, "run", columns), _frame_input(qrels, "qrels", columns)
    if memory_limit is not None and not _MEMORY_LIMIT.match(memory_limit):
        raise UsageError(f"cannot read memory limit {memory_limit!r}; expected a size such as 500MB, 4GB or 2GiB")
    columns = columns or Columns()
    prepared = _prepare(run, qrels, columns, run_format, qrels_format, evaluation)
    buckets = _buckets(prepared, memory_limit) if memory_limit is not None else 1
    if memory_limit is not None and buckets > 1:
        return _evaluate_in_buckets(
            prepared,
            buckets,
            evaluation,
            engine,
            columns,
            allow_fractional_labels,
            warn_results_over,
            threads=threads,
            memory_limit=memory_limit,
        )
    checked = _check(prepared, columns, allow_fractional_labels, warn_results_over, evaluation)
    per_query_table, summary = _computed(
        prepared, checked, evaluation, engine, columns, threads=threads, memory_limit=memory_limit
    )
    return Result(
        per_query=per_query_table,
        summary=summary,
        evaluation=evaluation,
        engine=engine,
        warnings=checked.warnings,
    )


def _computed(
    prepared: _Prepared,
    checked: Checked,
    evaluation: Evaluation,
    engine: str,
    columns: Columns,
    *,
    threads: int | None,
    memory_limit: str | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The per-query table and summary of validated inputs, by the chosen engine. DuckDB reads
    Parquet inputs itself where it may (``_native_parquet``)."""
    if engine == "polars":
        # One collect of the plan; the summary is a small aggregate of its result. (collect_all
        # over both plans measured 3.5x slower: the shared subplan was not reused.)
        per_query_table = _collect_per_query(checked, evaluation)
        return per_query_table, summarize(per_query_table.lazy()).collect()
    return _duckdb(
        checked.run,
        checked.qrels,
        _native_parquet(prepared, checked, evaluation),
        evaluation,
        columns,
        threads=threads,
        memory_limit=memory_limit,
    )


def _summary_of(per_query_table: pl.DataFrame, engine: str) -> pl.DataFrame:
    """The summary the engine gives in one pass (each adds in its own way; the bits differ in
    the last place between Polars' sums and DuckDB's window sums)."""
    if engine == "duckdb":
        from pipeline.engines import duckdb as duckdb_engine

        return duckdb_engine.summarize(per_query_table)
    return summarize(per_query_table.lazy()).collect()


def _polars_plan(checked: Checked, evaluation: Evaluation) -> pl.LazyFrame:
    """The Polars engine's plan, given the distinct query ids validation counted."""
    return polars_engine.per_query(
        checked.run, checked.qrels, evaluation, run_queries=checked.run_queries, judged_queries=checked.qrels_queries
    )


def _collect_per_query(checked: Checked, evaluation: Evaluation) -> pl.DataFrame:
    try:
        return _polars_plan(checked, evaluation).collect(engine=COLLECT_ENGINE)
    except MemoryError:
        raise OutOfMemory(_OUT_OF_MEMORY.format(engine="Polars", detail="")) from None


# What the Polars engine holds per run row while it evaluates (measured: about 160 bytes at
# 10M rows of short string ids), with room to spare: the memory limit over this is the
# number of run rows one bucket may have.
BYTES_PER_RUN_ROW = 300


def _buckets(prepared: _Prepared, memory_limit: str) -> int:
    """How many buckets of queries to evaluate one after the other so that each fits in
    ``memory_limit``; never more than the run has rows (a bucket holds at least one query).
    Counting a Parquet run's rows reads only its footers."""
    limit = _size_in_bytes(memory_limit)
    if limit <= 0:
        raise UsageError(f"memory limit {memory_limit!r} leaves no memory; give a size above 0, such as 500MB or 4GB")
    rows = prepared.run.select(pl.len()).collect().item()
    return max(1, min(rows, math.ceil(rows * BYTES_PER_RUN_ROW / limit)))


def _bucket_of(buckets: int) -> pl.Expr:
    """Each row's bucket, from its query id. The ids of both inputs must have one type first
    (:func:`pipeline.validate.id_casts`): the hash of ``7`` as an integer is not that of
    ``"7"`` as text, and a query whose run and judgments fell in different buckets would be
    lost from both."""
    return pl.col("query_id").hash(seed=0) % buckets


def _evaluate_in_buckets(
    prepared: _Prepared,
    buckets: int,
    evaluation: Evaluation,
    engine: str,
    columns: Columns,
    allow_fractional_labels: bool,
    warn_results_over: int | None,
    *,
    threads: int | None,
    memory_limit: str,
) -> Result:
    """Out of core: the queries split by a hash of their id into ``buckets`` parts, each
    validated and evaluated alone, so that only one part is in memory at a time. Every check
    and every number is per query (duplicates, nulls, ranks, sums), so the parts give the same
    per-query rows and warnings as one pass; the summary is taken over all of them, in query
    order as always, so the bits are the same too."""
    log.info("evaluating in %d buckets of queries to stay within %s", buckets, memory_limit)
    tables: list[pl.DataFrame] = []
    warnings: list[tuple[ValidationWarning, ...]] = []
    if prepared.run.select(pl.len()).collect().item() == 0:
        raise InvalidInput(f"{prepared.run_name}: no rows to evaluate (the input is empty)")
    if prepared.qrels.select(pl.len()).collect().item() == 0:
        raise InvalidInput(f"{prepared.qrels_name}: no rows to evaluate (the input is empty)")
    with _scratch_folder() as folder:
        for part in _split_into_buckets(prepared, buckets, Path(folder)):
            checked = _check(part, columns, allow_fractional_labels, warn_results_over, evaluation, require_rows=False)
            warnings.append(checked.warnings)
            # the bucket's files have the canonical column names
            table, _ = _computed(
                part, checked, evaluation, engine, Columns(), threads=threads, memory_limit=memory_limit
            )
            tables.append(table)
    per_query_table = pl.concat(tables).sort(["query_id", "k"], nulls_last=False)
    return Result(
        per_query=per_query_table,
        summary=_summary_of(per_query_table, engine),
        evaluation=evaluation,
        engine=engine,
        warnings=merge_warnings(warnings),
    )


def _split_into_buckets(prepared: _Prepared, buckets: int, folder: Path) -> list[_Prepared]:
    """Each input read once and written to ``folder`` as one Parquet file per bucket, then
    each bucket's inputs. Filtering the inputs for each bucket instead read all of them four
    times per bucket (validation, then evaluation): 100M rows in 10 buckets took 233 s.

    The ids are aligned (validation's rule) before they are hashed, so a query's run rows and
    judgments share a bucket whatever types the two inputs give its id. Only the buckets that
    hold rows of either input are returned: an empty bucket has no query to check or score."""
    casts = id_casts(prepared.run.collect_schema(), prepared.qrels.collect_schema())
    prepared = replace(prepared, run=align_ids(prepared.run, casts), qrels=align_ids(prepared.qrels, casts))
    schemas, filled = {}, set()
    for role, frame, name in (("run", prepared.run, prepared.run_name), ("qrels", prepared.qrels, prepared.qrels_name)):
        schemas[role] = frame.collect_schema()
        split = pl.PartitionBy(folder / role, key=_bucket_of(buckets).alias("bucket"), include_key=False)
        try:
            frame.sink_parquet(split, mkdir=True)
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as error:
            if _no_space_left(error):
                raise _no_space_error(folder, error) from None
            raise InvalidInput(f"{name}: cannot read: {_first_line(error)}") from None
        written = {entry.name for entry in (folder / role).iterdir()}
        if not written or not written <= {f"bucket={bucket}" for bucket in range(buckets)}:
            # a bucket not found would be read as empty: refuse rather than drop its queries
            raise RuntimeError(f"unexpected layout of the split {role} in {folder / role}: {sorted(written)}")
        filled |= {int(entry.removeprefix("bucket=")) for entry in written}

    def bucket_input(role: str, bucket: int) -> tuple[pl.LazyFrame, Source | None]:
        files = folder / role / f"bucket={bucket}"
        if not files.is_dir():  # no query of this input fell in the bucket
            return pl.LazyFrame(schema=schemas[role]), None
        return pl.scan_parquet(files / "*.parquet", hive_partitioning=False), Source.of(files, "parquet")

    parts = []
    for bucket in sorted(filled):
        (run, run_source), (qrels, qrels_source) = bucket_input("run", bucket), bucket_input("qrels", bucket)
        parts.append(
            replace(prepared, run=run, qrels=qrels, run_source=run_source, qrels_source=qrels_source, inline=False)
        )
    return parts


@contextmanager
def _scratch_folder() -> Iterator[str]:
    """A folder of TMPDIR for the buckets, removed with everything in it when the evaluation
    ends, failed or not (a disk that filled up mid-split included)."""
    try:
        scratch = tempfile.TemporaryDirectory(prefix="ndcg-buckets-")
    except OSError as error:
        if _no_space_left(error):
            raise _no_space_error(Path(tempfile.gettempdir()), error) from None
        raise UsageError(
            f"cannot create a folder for the buckets in TMPDIR ({tempfile.gettempdir()}): {error}"
        ) from None
    with scratch as folder:
        yield folder


def _no_space_left(error: BaseException) -> bool:
    return (isinstance(error, OSError) and error.errno == errno.ENOSPC) or "no space left" in str(error).lower()


def _no_space_error(folder: Path, error: BaseException) -> UsageError:
    """A full disk is the machine's setting, not our bug: exit 2, naming where and what to do."""
    return UsageError(
        f"no space left in TMPDIR ({folder}) to split the inputs into buckets for --memory-limit "
        f"({_first_line(error)}); the partial bucket files were removed. Point TMPDIR at a disk with "
        "about the inputs' size free"
    )


def merge_warnings(parts: list[tuple[ValidationWarning, ...]]) -> tuple[ValidationWarning, ...]:
    """The warnings of several parts of one input as one pass would give them: counts added,
    the first ids (sorted) of all parts, in the order the checks report them."""
    merged: dict[str, ValidationWarning] = {}
    for warnings in parts:
        for warning in warnings:
            seen = merged.get(warning.code)
            if seen is None:
                merged[warning.code] = warning
                continue
            examples = tuple(sorted({*seen.examples, *warning.examples})[:WARNING_EXAMPLES])
            merged[warning.code] = replace(seen, count=seen.count + warning.count, examples=examples)
    return tuple(sorted(merged.values(), key=lambda w: WARNING_ORDER.index(w.code)))


def _size_in_bytes(memory_limit: str) -> int:
    match = _MEMORY_LIMIT.match(memory_limit)
    assert match is not None  # checked by evaluate()
    number = float(match.group(1))
    unit = match.group(2).lower()
    scale = {"b": 1, "bytes": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12}
    binary = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
    return int(number * {**scale, **binary}[unit])


# DuckDB's size syntax; checked here too so that the Polars engine does not ignore a typo.
_MEMORY_LIMIT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(b|bytes|[kmgt]i?b)\s*$", re.IGNORECASE)

_OUT_OF_MEMORY = (
    "out of memory in the {engine} engine{detail}; nothing was written. Give it more room with "
    "--memory-limit (e.g. --memory-limit 8GB), use fewer --threads, or evaluate fewer partitions at once"
)


@dataclass(frozen=True)
class _Prepared:
    """Inputs read lazily with canonical columns and the run's ``arrival``, not yet checked."""

    run: pl.LazyFrame
    qrels: pl.LazyFrame
    run_name: str
    qrels_name: str
    run_source: Source | None
    qrels_source: Source | None
    inline: bool


def _prepare(
    run: Input,
    qrels: Input | None,
    columns: Columns,
    run_format: str | None,
    qrels_format: str | None,
    evaluation: Evaluation,
) -> _Prepared:
    """The run gets its ``arrival`` column here, as it is read, so that both engines see the
    same input order (DuckDB keeps no row order of its own)."""
    run_source = _source(run, run_format, columns)
    qrels_source = _source(qrels, qrels_format, columns) if qrels is not None else None
    inline = qrels is None

    run_frame = _frame(run, run_source, role="run", with_labels=inline)
    run_name = run_source.path if run_source else "run"
    # a user column called "arrival" is not ours: the input order is where each row stands
    run_frame = (
        run_frame.drop(ARRIVAL, strict=False).with_row_index(ARRIVAL).with_columns(pl.col(ARRIVAL).cast(pl.Int64))
    )
    rank_type = run_frame.collect_schema().get(RANK_COLUMN)
    if evaluation.ties == "input-order" and rank_type is not None and not rank_type.is_numeric():
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
        assert qrels is not None
        qrels_frame = _frame(qrels, qrels_source, role="qrels", with_labels=False)
        qrels_name = qrels_source.path if qrels_source else "qrels"
    return _Prepared(run_frame, qrels_frame, run_name, qrels_name, run_source, qrels_source, inline)


def _check(
    prepared: _Prepared,
    columns: Columns,
    allow_fractional_labels: bool,
    warn_results_over: int | None,
    evaluation: Evaluation,
    *,
    require_rows: bool = True,
) -> Checked:
    """Validate the prepared inputs; ``require_rows=False`` for one bucket of them, which may
    hold no rows."""
    return check_inputs(
        prepared.run,
        prepared.qrels,
        run_name=prepared.run_name,
        qrels_name=prepared.qrels_name,
        columns=columns,
        allow_fractional_labels=allow_fractional_labels,
        warn_results_over=warn_results_over,
        run_duplicates=evaluation.duplicates,
        require_rows=require_rows,
        evaluation=evaluation,
    )


def _native_parquet(
    prepared: _Prepared, checked: Checked, evaluation: Evaluation
) -> tuple[Source, Source | None] | None:
    """The Parquet sources the DuckDB engine may read itself, or None when it must be handed
    the frames."""
    run_source, qrels_source = prepared.run_source, prepared.qrels_source
    native = (
        not evaluation.reads_input_order
        and run_source is not None
        and not _any_glob_characters(run_source, qrels_source)
        and run_source.format == "parquet"
        and (prepared.inline or (qrels_source is not None and qrels_source.format == "parquet"))
        and checked.run.collect_schema() == prepared.run.select(checked.run.collect_schema().names()).collect_schema()
        and checked.qrels.collect_schema()
        == prepared.qrels.select(checked.qrels.collect_schema().names()).collect_schema()
    )
    return (run_source, qrels_source) if native and run_source is not None else None


def _load(
    run: Input,
    qrels: Input | None,
    columns: Columns | None,
    run_format: str | None,
    qrels_format: str | None,
    allow_fractional_labels: bool,
    warn_results_over: int | None,
    *,
    evaluation: Evaluation | None = None,
) -> tuple[Checked, tuple[Source, Source | None] | None]:
    """Read and validate. The second value names the Parquet sources the DuckDB engine may
    read itself, or is None when it must be handed the frames."""
    evaluation = evaluation or Evaluation()
    columns = columns or Columns()
    prepared = _prepare(run, qrels, columns, run_format, qrels_format, evaluation)
    checked = _check(prepared, columns, allow_fractional_labels, warn_results_over, evaluation)
    return checked, _native_parquet(prepared, checked, evaluation)


def _any_glob_characters(*sources: Source | None) -> bool:
    """Whether any file of the sources has a name DuckDB would expand as a pattern; such
    inputs reach DuckDB as frames read by Polars, never as paths."""
    return any(has_glob_characters(path) for source in sources if source is not None for path in source.files())


def _check_engine(engine: object) -> None:
    if engine not in ENGINES:
        raise UsageError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")


def _frame_input(value: Any, role: str, columns: Columns | None) -> Any:
    """A frame given for ``run`` or ``qrels`` as a Polars LazyFrame with the canonical column
    names (``columns`` renames them, as it does for files); paths and None pass through.

    Polars frames are taken as they are; pyarrow tables and anything that exports an Arrow C
    stream (DuckDB relations, pandas >= 2.2 frames, ...) are imported through Arrow, which
    shares the buffers where the types allow; older pandas frames go through
    ``pl.from_pandas``."""
    if value is None or isinstance(value, (str, Path, Source)):
        return value
    frame = _as_polars(value, role)
    names = columns or Columns()
    wanted = {QUERY: names.query, DOC: names.doc, SCORE: names.score, LABEL: names.label}
    if role == "qrels":
        del wanted[SCORE]
    found = frame.collect_schema().names()
    required = [QUERY, DOC, SCORE if role == "run" else LABEL]
    missing = {canonical: wanted[canonical] for canonical in required if wanted[canonical] not in found}
    if missing:
        raise InvalidInput(f"{role} frame: {missing_columns_message(missing, found)}")
    renames = {given: canonical for canonical, given in wanted.items() if given in found and given != canonical}
    if not renames:
        return frame
    # a column that already has a canonical name would shadow the renamed one
    shadowed = [canonical for canonical in renames.values() if canonical in found and canonical not in renames]
    return frame.drop(shadowed).rename(renames)


def _as_polars(value: object, role: str) -> pl.LazyFrame:
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
        raise InvalidInput(
            f"{role}: cannot read this {type(value).__name__} as a table: {_first_line(error)}"
        ) from None
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


def _source(value: Input, format: str | None, columns: Columns) -> Source | None:
    if isinstance(value, Source):
        return value
    if isinstance(value, (str, Path)):
        return Source.of(value, format, columns)
    if not isinstance(value, (pl.LazyFrame, pl.DataFrame)):
        raise UsageError(f"expected a path or a frame, got {type(value).__name__}")
    return None


def _frame(value: Input, source: Source | None, *, role: str, with_labels: bool) -> pl.LazyFrame:
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
        raise InvalidInput(f"{role} frame: {missing_columns_message(missing, found)}")
    return frame


def _duckdb(
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    parquet: tuple[Source, Source | None] | None,
    evaluation: Evaluation,
    columns: Columns | None,
    *,
    threads: int | None = None,
    memory_limit: str | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    import duckdb  # only when asked for: it costs a Polars-only run a tenth of a second

    from pipeline.engines import duckdb as duckdb_engine

    try:
        connection = duckdb_engine.connect(threads=threads, memory_limit=memory_limit)
    except duckdb.Error as error:
        given = {"--threads": threads, "--memory-limit": memory_limit}
        flags = " ".join(f"{flag} {value!r}" for flag, value in given.items() if value is not None)
        raise UsageError(f"DuckDB refused {flags}: {_first_line(error)}") from None
    try:
        if parquet is not None:
            run_source, qrels_source = parquet
            names = columns or Columns()
            duckdb_engine.read_parquet_inputs(
                connection,
                run_source.files(),
                qrels_source.files() if qrels_source else None,
                {"query_col": names.query, "doc_col": names.doc, "score_col": names.score, "label_col": names.label},
            )
        else:
            duckdb_engine.register_inputs(connection, run, qrels)
        return duckdb_engine.evaluate(connection, evaluation)
    except duckdb.OutOfMemoryException as error:
        limit = f" (memory limit {memory_limit})" if memory_limit else ""
        raise OutOfMemory(_OUT_OF_MEMORY.format(engine="DuckDB", detail=f"{limit}: {_first_line(error)}")) from None
    except MemoryError:
        raise OutOfMemory(_OUT_OF_MEMORY.format(engine="DuckDB", detail=" (reading the inputs)")) from None
    except (
        duckdb.IOException,
        duckdb.InvalidInputException,
        duckdb.ConversionException,
        pl.exceptions.PolarsError,
        OSError,
    ) as error:
        # Inputs passed validation in Polars; DuckDB reading them differently is still the
        # input's fault (e.g. a file replaced or corrupted between the two reads).
        raise InvalidInput(f"DuckDB cannot read the inputs: {_first_line(error)}") from None
    finally:
        connection.close()


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def _spark(
    run: object,
    qrels: object | None,
    evaluation: Evaluation,
    columns: Columns | None,
    run_format: str | None,
    qrels_format: str | None,
    allow_fractional_labels: bool,
    warn_results_over: int | None,
) -> Result:
    """The spark engine over Parquet paths or Spark DataFrames, its results brought back as
    Polars frames, validated as on the other engines (with their warnings). For results that
    stay in Spark, use :func:`pipeline.engines.spark.evaluate`."""
    from pipeline.engines import spark as spark_engine

    for value in (run, qrels):
        if isinstance(value, (pl.LazyFrame, pl.DataFrame, Source)):
            raise UsageError("the spark engine takes Parquet paths or Spark DataFrames, not Polars frames")
    result = spark_engine.evaluate(
        run,  # type: ignore[arg-type]
        qrels,  # type: ignore[arg-type]
        evaluation=evaluation,
        columns=columns,
        run_format=run_format,
        qrels_format=qrels_format,
        allow_fractional_labels=allow_fractional_labels,
        warn_results_over=warn_results_over,
    )
    per_query_table = pl.from_arrow(result.per_query.toArrow())
    summary = pl.from_arrow(result.summary.toArrow())
    assert isinstance(per_query_table, pl.DataFrame) and isinstance(summary, pl.DataFrame)
    return Result(
        per_query=per_query_table, summary=summary, evaluation=evaluation, engine="spark", warnings=result.warnings
    )
