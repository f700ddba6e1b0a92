"""Inputs to LazyFrames with canonical column names, read lazily.

A run becomes ``query_id, doc_id, score`` (plus ``relevance`` when it carries inline labels);
qrels become ``query_id, doc_id, relevance``. Other columns of a Parquet or CSV input (hive
partition keys, group columns) are kept. Nothing here collects data.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import glob
import os
import shlex
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Literal

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.io import delta
from pipeline.io.csv_text import (
    check_rows,
    column_types,
    csv_text_problem,
    files_and_header,
    non_utf8_line,
)
from pipeline.io.fs import data_files
from pipeline.io.location import Location, is_local, local_path
from pipeline.io.names import DOC, LABEL, PROVENANCE, QUERY, SCORE, SUBTOPIC
from pipeline.io.objects import error_text, filesystem_for
from pipeline.io.objects import storage_options as store_options
from pipeline.io.partitions import check_partition_keys, is_partition_folder
from pipeline.io.trec import (
    QRELS_LINES,
    RUN_LINES,
    TrecLines,
    first_content_line,
    last_content_line,
    scan_lines,
    trec_fields,
)

Format = Literal["parquet", "trec", "csv", "tsv", "delta"]
FORMATS: tuple[str, ...] = ("parquet", "trec", "csv", "tsv", "delta")


# The flag that renames each canonical column in both inputs, for hints in error messages.
COLUMN_FLAGS = {QUERY: "--query-col", DOC: "--doc-col", SCORE: "--score-col", LABEL: "--label-col"}


def column_flags(role: str | None = None) -> dict[str, str]:
    """The flag that names each canonical column in the ``run`` alone or in the ``qrels`` alone
    (None: in both inputs), for messages about one input's columns: ``--run-query-col``,
    ``--qrels-label-col``; the score is the run's only (``--score-col``), and the label of inline
    labels the run's (``--label-col``)."""
    if role is None:
        return dict(COLUMN_FLAGS)
    own = {QUERY: f"--{role}-query-col", DOC: f"--{role}-doc-col"}
    return {**COLUMN_FLAGS, **own, **({LABEL: "--qrels-label-col"} if role == "qrels" else {})}


@dataclass(frozen=True)
class Columns:
    """The user's names for the canonical columns. ``query``, ``doc`` and ``label`` name them in
    both inputs (``score`` is the run's); ``run_query``, ``run_doc``, ``qrels_query``,
    ``qrels_doc`` and ``qrels_label`` name them in one input only, over the shared name (None:
    the shared name), so that a run with ``qid, docno, sim`` is read beside judgments with the
    canonical names. :meth:`of` gives one input's names."""

    query: str = QUERY
    doc: str = DOC
    score: str = SCORE
    label: str = LABEL
    run_query: str | None = None
    run_doc: str | None = None
    qrels_query: str | None = None
    qrels_doc: str | None = None
    qrels_label: str | None = None

    def of(self, role: str) -> Columns:
        """The names in the ``run`` or in the ``qrels``: the input's own where given, else the
        shared ones (no per-input names left in the result)."""
        if role == "run":
            return Columns(self.run_query or self.query, self.run_doc or self.doc, self.score, self.label)
        if role != "qrels":
            raise ValueError(f"role must be 'run' or 'qrels', got {role!r}")
        return Columns(
            self.qrels_query or self.query, self.qrels_doc or self.doc, self.score, self.qrels_label or self.label
        )

    def with_inline_labels(self) -> Columns:
        """The names when the run carries its own labels (no qrels): one input, so the run's
        names are the names. A name given for the qrels alone is refused: there are no qrels."""
        given = [
            column_flags("qrels")[canonical]
            for canonical, value in ((QUERY, self.qrels_query), (DOC, self.qrels_doc), (LABEL, self.qrels_label))
            if value is not None
        ]
        if given:
            raise UsageError(
                f"{', '.join(given)} name(s) a column of the judgments, and none are given (the run's inline "
                "labels are read): give --qrels, or name the run's columns with --query-col, --doc-col and "
                "--label-col (or --run-query-col, --run-doc-col)"
            )
        return self.of("run")

    def flag(self, canonical: str, role: str | None) -> str:
        """The flag that gave ``canonical``'s name in ``role``'s input: its own (``--run-query-col``)
        when given, else the flag of both inputs (``--query-col``)."""
        own = {
            ("run", QUERY): self.run_query,
            ("run", DOC): self.run_doc,
            ("qrels", QUERY): self.qrels_query,
            ("qrels", DOC): self.qrels_doc,
            ("qrels", LABEL): self.qrels_label,
        }.get((role or "", canonical))
        return column_flags(role)[canonical] if own is not None else COLUMN_FLAGS[canonical]


# the fields of Columns that name a column in one input only
PER_INPUT_COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(Columns) if f.name.startswith(("run_", "qrels_")))


@dataclass(frozen=True)
class Source:
    """One input: where it is, how it is stored, and what its columns are called."""

    path: str
    format: Format
    columns: Columns = Columns()
    # a Delta table's version to read (None: the current one) and the partition it is narrowed
    # to (``((key, value), ...)``, its columns then dropped; see pipeline.io.delta)
    version: int | None = None
    partition: tuple[tuple[str, str], ...] = ()

    @classmethod
    def of(
        cls, path: str | Path, format: str | None = None, columns: Columns | None = None, *, version: int | None = None
    ) -> Source:
        """A source by path: the format from ``format`` or the name (a folder holding
        ``_delta_log/`` is a Delta table, read at ``version``, by default its current one)."""
        path = str(path)
        chosen = format or detect_format(path)
        if chosen not in FORMATS:
            raise UsageError(f"unknown input format {chosen!r}; expected one of {', '.join(FORMATS)}")
        if version is not None and chosen != "delta":
            raise UsageError(f"{path}: a version is read from Delta tables only, and this is {chosen}")
        return cls(path=path, format=chosen, columns=columns or Columns(), version=version)  # type: ignore[arg-type]

    @property
    def location(self) -> Location:
        """Where the input is: local, an object store or Hadoop's, and whether a Delta table."""
        return Location.of(self.path, delta_table=self.format == "delta")

    def files(self) -> list[str]:
        """The data files this source names (see :mod:`pipeline.io.fs` for which files are
        data); an error naming the path when there are none.

        A path that exists is taken literally, even when its name holds glob characters
        (``[``, ``*``, ``?``); only a path that does not exist is read as a pattern."""
        if self.format == "delta":
            return delta.data_files(self)
        return data_files(self.path, self.format, filesystem_for(self.location))

    def is_pattern(self) -> bool:
        """True when the path is a glob pattern rather than an existing file or directory."""
        if self.location.is_object_store:
            return glob.has_magic(self.path) and filesystem_for(self.location).kind(self.path) == "missing"
        return not Path(self.path).exists() and glob.has_magic(self.path)


def table_source(path: str, version: str | int | None, flag: str, columns: Columns | None = None) -> Source | None:
    """The Delta table at ``path`` as a :class:`Source` at one resolved version (the current
    one, or ``version``), or None when ``path`` is not a Delta table (``version`` given for it
    is then a usage error)."""
    if not delta.is_table(path):
        if version is not None:
            raise UsageError(f"{flag}: {path} is not a Delta table (no {delta.DELTA_LOG}/ folder in it)")
        return None
    resolved = delta.resolve_version(path, None if version is None else delta.parse_version(version, flag))
    return Source(path=path, format="delta", columns=columns or Columns(), version=resolved)


def detect_format(path: str) -> str:
    """Guess the format from the name: Parquet for ``.parquet``/``.pq``, directories and
    globs of them; CSV for ``.csv``; TSV for ``.tsv``; TREC text for anything else. An
    object-store URL without one of these extensions is a Parquet dataset (a prefix), as on
    Spark."""
    suffix = Path(path.rstrip("/*")).suffix.lower()
    if suffix not in (".csv", ".tsv", ".txt") and delta.is_table(path):
        return "delta"
    if Location.of(path).is_object_store:
        return {".csv": "csv", ".tsv": "tsv", ".txt": "trec"}.get(suffix, "parquet")
    if suffix in (".parquet", ".pq") or Path(path).is_dir() or path.endswith((".parquet", ".pq")):
        return "parquet"
    if suffix == ".csv":
        return "csv"
    if suffix == ".tsv":
        return "tsv"
    return "trec"


def scan_run(source: Source, *, with_labels: bool = False) -> pl.LazyFrame:
    """The run as ``query_id, doc_id, score`` (and ``relevance`` when ``with_labels``)."""
    if source.format == "trec":
        if with_labels:
            raise UsageError(f"{source.path}: a TREC run carries no labels; give --qrels")
        return _scan_trec(source, RUN_LINES, (QUERY, DOC, SCORE), {SCORE: pl.Float64})
    wanted = {QUERY: source.columns.query, DOC: source.columns.doc, SCORE: source.columns.score}
    if with_labels:
        wanted[LABEL] = source.columns.label
    return _rename(source, _scan_table(source), wanted, role="run (inline labels)" if with_labels else "run")


def scan_qrels(source: Source) -> pl.LazyFrame:
    """The judgments as ``query_id, doc_id, relevance``, and ``subtopic`` (text) when they
    judge per subtopic: a TREC qrels' second field (ndeval's subtopic, trec_eval's iteration),
    a Parquet or CSV qrels' column ``subtopic`` when it has one."""
    if source.format == "trec":
        # Labels are read as floats so that a fractional label is reported by validation
        # (or accepted with --allow-fractional-labels) rather than failing to parse.
        lines = _scan_trec(source, QRELS_LINES, (QUERY, SUBTOPIC, DOC, LABEL), {LABEL: pl.Float64})
        return lines.select(QUERY, DOC, LABEL, SUBTOPIC, *PROVENANCE)
    wanted = {QUERY: source.columns.query, DOC: source.columns.doc, LABEL: source.columns.label}
    frame = _rename(source, _scan_table(source), wanted, role="qrels")
    if SUBTOPIC in frame.collect_schema().names() and SUBTOPIC not in wanted.values():
        # one type on every engine: an integer subtopic 3 is the text "3", as in a TREC file
        frame = frame.with_columns(pl.col(SUBTOPIC).cast(pl.String))
    return frame


def scan_attributes(source: Source, what: str = "query attributes") -> pl.LazyFrame:
    """Per-query attributes (``--query-attributes``, or ``what`` else: ``query weights``) with
    the query column as ``query_id``, read under the run's rules: Parquet schemas checked, CSV
    headers and rows checked (a ragged line or a repeated header name is named, never a column
    picked silently)."""
    if source.format == "trec":
        raise InvalidInput(f"{source.path}: {what} must be Parquet or CSV")
    frame = _scan_table(source)
    found = frame.collect_schema().names()
    if source.columns.query not in found:
        raise InvalidInput(
            f"{source.path}: no column {source.columns.query!r} to join {what} on; "
            f"columns found: {', '.join(map(repr, found)) or 'none'}{_separator_hint(found)}"
        )
    return frame.rename({source.columns.query: QUERY}) if source.columns.query != QUERY else frame


def _scan_table(source: Source) -> pl.LazyFrame:
    """Parquet or CSV files as one frame, read from the file list of :meth:`Source.files`
    (never the directory: Polars' own listing rules would differ from the other engines'); a
    Delta table through its log, at the source's version."""
    if source.format == "delta":
        return delta.scan(source)
    files = source.files()
    separator = "\t" if source.format == "tsv" else ","
    remote = storage_options(source.path)
    _refuse_remote_text(source)
    try:
        if source.format == "parquet":
            check_parquet_schemas(files)
            frame = pl.scan_parquet(
                files, hive_partitioning=False, missing_columns="raise", glob=False, storage_options=remote
            )
        else:
            files, header = files_and_header(source.path, files, separator)
            # an id is text, whatever it looks like: read as a number, 007 would be 7 and match
            # no "007" of the other input (a TREC file's, or Parquet text)
            ids = {name: pl.String for name in (source.columns.query, source.columns.doc) if name in header}
            read = functools.partial(pl.scan_csv, files, separator=separator, glob=False, new_columns=header)
            types = column_types(read(infer_schema_length=0), header, ids)
            # a quoted empty field ("") is as missing as an empty one, as the table macros read it
            # (Polars reads it as an empty text in a column of text, where an empty field is null)
            texts = [name for name, dtype in types.items() if dtype == pl.String]
            frame = read(schema=types).with_columns(
                pl.when(pl.col(name) != "").then(pl.col(name)).alias(name) for name in texts
            )
            wanted = [name for name in vars(source.columns).values() if name in header]
            frame = check_rows(source.path, source.format, files, frame, header, separator, wanted)
        names = frame.collect_schema().names()
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as error:
        where = non_utf8_line(files) if "utf-8" in str(error).lower() and source.format != "parquet" else None
        where = where or (csv_text_problem(files, separator) if source.format in ("csv", "tsv") else None)
        raise InvalidInput(where or f"{source.path}: cannot read as {source.format}: {error_text(error)}") from None
    check_partition_keys(files, names, dataset_root(source))
    return frame


def dataset_root(source: Source) -> str:
    """The folder a source's files are read below: the directory itself (or, for one partition
    of a hive layout such as ``runs/dt=1``, the layout's root, since the job adds its keys to the
    outputs), the fixed part of a glob, or a single file's own folder (below which nothing lies)."""
    if source.location.is_object_store:
        return _url_root(source)
    path = Path(source.path)
    if path.is_dir():
        while is_partition_folder(path.name) and path.parent != path:
            path = path.parent
        return str(path)
    if source.is_pattern():
        fixed = []
        for part in path.parts:
            if glob.has_magic(part):
                break
            fixed.append(part)
        return str(Path(*fixed)) if fixed else "."
    return str(path.parent)


def _refuse_remote_text(source: Source) -> None:
    if source.format not in ("parquet", "delta") and not source.location.is_local:
        raise UsageError(
            f"{source.path}: {source.format} text is read from local files only; on an object store, "
            "inputs are Parquet (files, prefixes, globs, hive-partitioned prefixes) or Delta tables"
        )


def _url_root(source: Source) -> str:
    """:func:`dataset_root` of an object-store URL, as text (``Path`` would fold ``s3://``)."""
    url = source.path.rstrip("/")
    filesystem = filesystem_for(source.location)
    if source.is_pattern():
        fixed = []
        for part in url.split("/"):
            if glob.has_magic(part):
                break
            fixed.append(part)
        return "/".join(fixed)
    if filesystem.kind(url) == "dir":
        while is_partition_folder(url.rsplit("/", 1)[-1]) and url.count("/") > 3:
            url = url.rsplit("/", 1)[0]
        return url
    return url.rsplit("/", 1)[0]


def storage_options(path: str) -> dict[str, str] | None:
    """Polars' ``storage_options`` for an input (None for local files)."""
    return store_options(path) if Location.of(path).is_object_store else None


def check_parquet_schemas(files: list[str]) -> None:
    """Refuse files of one dataset whose columns differ (naming the file, the column and both
    types), and zero-row files with null-typed columns (an empty frame written without its
    schema), rather than failing later with a message that names neither. Footers only."""
    first: tuple[str, dict[str, pl.DataType]] | None = None
    for path in files:
        try:
            # not read_parquet_schema, which expands [ * ? in a name that exists
            scan = pl.scan_parquet(path, glob=False, hive_partitioning=False, storage_options=storage_options(path))
            with _panic_message_held():
                schema = dict(scan.collect_schema())
        except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as error:
            said = (
                _not_parquet(path) or _unreadable_types(path) or f"{path}: cannot read as parquet: {error_text(error)}"
            )
            raise InvalidInput(said) from None
        untyped = [name for name, dtype in schema.items() if dtype == pl.Null]
        if untyped and scan.select(pl.len()).collect().item() == 0:
            raise InvalidInput(
                f"{path}: zero rows and column(s) {', '.join(map(repr, untyped))} of type null (a file written "
                "from an empty frame without its schema); remove it or write it with the dataset's types"
            )
        if first is None:
            first = (path, schema)
            continue
        _compare_schemas(first, (path, schema))


# fd 2 is the process's: one thread at a time points it elsewhere (a second would save the
# first's file as the stderr to put back)
_STDERR_LOCK = threading.Lock()


@contextlib.contextmanager
def _panic_message_held() -> Iterator[None]:
    """Standard error (fd 2) pointed at a temporary file while Polars reads a footer: a type it
    cannot read (DuckDB's INTERVAL) makes it panic in Rust, whose hook prints the panic on stderr
    before Python sees the error. After a panic, which the caller says in our words, the text is
    dropped; anything else is written on as it came."""
    with _STDERR_LOCK, tempfile.TemporaryFile() as held:
        if sys.stderr is not None:
            sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(held.fileno(), 2)
        panicked = False
        try:
            yield
        except pl.exceptions.PanicException:
            panicked = True
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            held.seek(0)
            text = held.read()
            if text and not panicked:
                os.write(2, text)


def _unreadable_types(path: str) -> str | None:
    """A local Parquet file's columns of INTERVAL type (DuckDB writes them), which Polars cannot
    read, read or not, in our words; None when it has none (or cannot be read: said otherwise)."""
    if not is_local(path):
        return None
    import pyarrow.lib
    import pyarrow.parquet

    try:
        schema = pyarrow.parquet.ParquetFile(local_path(path)).schema
    except (OSError, pyarrow.lib.ArrowException):
        return None
    intervals = [schema.column(i).path for i in range(len(schema)) if schema.column(i).converted_type == "INTERVAL"]
    if not intervals:
        return None
    return (
        f"{path}: column(s) {', '.join(map(repr, intervals))} of type INTERVAL, which Polars cannot read; "
        "write the file without them, or with them cast to a number (e.g. epoch(x) in DuckDB, seconds)"
    )


def _not_parquet(path: str) -> str | None:
    """A local file read as Parquet that is text (every Parquet file begins with ``PAR1``):
    its first line and the format it looks like, or None when it is not that."""
    if not Location.of(path).is_local:
        return None
    try:
        with open(local_path(path), "rb") as handle:
            start = handle.read(4096)
    except OSError:
        return None
    if start.startswith(b"PAR1"):
        return None
    try:
        first = next((line for line in start.decode("utf-8-sig").splitlines() if line.strip()), "")
    except UnicodeDecodeError:
        return None  # binary and not Parquet: the reader's own words
    fields = len(first.split())
    if fields >= 5:
        looks = "a TREC run (qid Q0 docno rank score tag): pass --run-format trec"
    elif fields == 4:
        looks = "TREC qrels (qid iter docno rel): pass --qrels-format trec"
    elif "\t" in first:
        looks = "tab-separated text: pass --run-format/--qrels-format tsv"
    elif "," in first:
        looks = "comma-separated text: pass --run-format/--qrels-format csv"
    else:
        return f"{path}: cannot read as parquet: not a Parquet file (they begin with PAR1) but text: {first[:120]!r}"
    return (
        f"{path}: cannot read as parquet: not a Parquet file (Parquet files begin with PAR1); its first line "
        f"{first[:120]!r} looks like {looks} (on the polars or duckdb engine; spark reads Parquet and Delta only)"
    )


def _compare_schemas(first: tuple[str, dict[str, pl.DataType]], other: tuple[str, dict[str, pl.DataType]]) -> None:
    (first_path, expected), (path, schema) = first, other
    rule = "; every file of one dataset must have the same columns and types"
    for name, dtype in schema.items():
        if name not in expected:
            raise InvalidInput(f"{path}: column {name!r} is not in {first_path}{rule}")
        if dtype != expected[name]:
            raise InvalidInput(f"{path}: column {name!r} is {dtype} here but {expected[name]} in {first_path}{rule}")
    missing = [name for name in expected if name not in schema]
    if missing:
        raise InvalidInput(f"{path}: no column {missing[0]!r}, which {first_path} has{rule}")


def _rename(source: Source, frame: pl.LazyFrame, wanted: dict[str, str], *, role: str) -> pl.LazyFrame:
    found = frame.collect_schema().names()
    missing = {canonical: given for canonical, given in wanted.items() if given not in found}
    if missing:
        header = source.format in ("csv", "tsv")
        raise InvalidInput(f"{source.path}: {missing_columns_message(missing, found, role=role, text_header=header)}")
    for given in wanted.values():
        # SQL names ignore case: DuckDB and Spark would read another column, or fail to bind
        twins = [name for name in found if name != given and name.lower() == given.lower()]
        if twins:
            raise InvalidInput(
                f"{source.path}: columns {given!r} and {twins[0]!r} differ only in case, which the SQL engines "
                "(DuckDB, Spark) cannot tell apart: rename one of them"
            )
    taken = set(wanted.values())
    clashes = [c for c in wanted if c in found and c not in taken]
    # A user column that happens to carry a canonical name would shadow the renamed one.
    kept = [pl.col(c) for c in found if c not in taken and c not in clashes]
    return frame.select([pl.col(given).alias(canonical) for canonical, given in wanted.items()] + kept)


def has_glob_characters(path: str) -> bool:
    """True when DuckDB would read ``path`` as a pattern (it expands * ? [ ] even in the
    name of a file that exists)."""
    return glob.has_magic(path)


def missing_columns_message(
    missing: dict[str, str], found: list[str], *, role: str | None = None, text_header: bool = False
) -> str:
    """``missing column(s) 'score' ...; columns found: ...`` and how to fix it, for the command
    line and the library alike: the flags that name the columns (and the library's
    ``columns=``) with the likely mapping when the found names suggest one, a header row that
    looks like data (``text_header``: a CSV or TSV file), a run given as qrels or qrels as a
    run (``role``: ``run``, ``run (inline labels)`` or ``qrels``).

    ``missing`` maps canonical names to the names that were looked for; ``role`` (``run``,
    ``qrels``) makes the flags those of that input alone (:func:`column_flags`)."""
    parts = []
    for given in missing.values():
        close = difflib.get_close_matches(given, found, n=1, cutoff=0.6) or [
            f for f in found if f.casefold() == given.casefold()
        ]
        parts.append(f"{given!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    listed = ", ".join(repr(f) for f in found) or "none"
    message = f"missing column(s) {'; '.join(parts)}; columns found: {listed}"
    return message + (
        _separator_hint(found)
        or _headerless_hint(found, text_header)
        or _swapped_hint(missing, found, role)
        or _naming_hint(missing, found, role)
    )


# Names other tools give the canonical columns (trec_eval's qid/docno/sim, ir_datasets',
# pyterrier's, spreadsheets'), to suggest the mapping when a file uses them.
_COLUMN_ALIASES = {
    QUERY: ("qid", "query", "queryid", "query_id", "topic", "topic_id", "topicid", "q_id"),
    DOC: ("docno", "docid", "doc_id", "doc", "document", "document_id", "pid", "passage_id", "did"),
    SCORE: ("sim", "similarity", "score", "scores", "rank_score", "retrieval_score"),
    LABEL: ("rel", "relevance", "label", "labels", "judgment", "judgement", "grade", "qrel", "rating", "gain"),
}


def _guess_columns(missing: dict[str, str], found: list[str]) -> dict[str, str]:
    """The found column each missing canonical one most likely is: the same name in another
    case, a name other tools use for it, or a close spelling; each found column used once."""
    guesses: dict[str, str] = {}
    for canonical, given in missing.items():
        free = [name for name in found if name not in guesses.values() and name not in missing.values()]
        folded = {name.casefold(): name for name in free}
        candidates = [given.casefold(), *_COLUMN_ALIASES[canonical]]
        match = next((folded[name] for name in candidates if name in folded), None)
        close = difflib.get_close_matches(given, free, n=1, cutoff=0.6)
        if match or close:
            guesses[canonical] = match or close[0]
    return guesses


def _naming_hint(missing: dict[str, str], found: list[str], role: str | None) -> str:
    """The flags and the library's ``columns=`` that name the columns of this input (``role``:
    its own flags, ``--run-query-col``; without a role the flags of both inputs), filled in
    when every missing column has a likely match among the found ones."""
    side = None if role is None else "qrels" if role == "qrels" else "run"
    flags_of = column_flags(side)
    api_of = {c: flag.removeprefix("--").removesuffix("-col").replace("-", "_") for c, flag in flags_of.items()}
    shared = [COLUMN_FLAGS[c] for c in missing if c != SCORE]
    # with qrels beside the run, a flag of both inputs is the other way to name the column
    alike = ""
    if side and shared and "inline" not in str(role):
        alike = f"; {'/'.join(shared)} name{'s' if len(shared) == 1 else ''} the column in the run and the qrels alike"
    guesses = _guess_columns(missing, found)
    if found and len(guesses) == len(missing):
        flags = " ".join(f"{flags_of[c]} {shlex.quote(name)}" for c, name in guesses.items())
        fields = ", ".join(f"{api_of[c]}={name!r}" for c, name in guesses.items())
        taken = ", ".join(f"{name!r} as {c}" for c, name in guesses.items())
        return f"; to read {taken}: {flags} (API: columns=Columns({fields})){alike}"
    flags = "/".join(flags_of[c] for c in missing)
    fields = ", ".join(f"{api_of[c]}=..." for c in missing)
    return f"; name the columns with {flags} (API: columns=Columns({fields})){alike}"


def _headerless_hint(found: list[str], text_header: bool) -> str:
    """A CSV or TSV file whose first line is data: a name that is a number (a score or a label)
    is not a header a writer would choose."""
    if not text_header or not any(_is_number(name) for name in found):
        return ""
    return (
        "; the first line looks like a row of data, not a header: no header row? CSV and TSV input needs one "
        "naming the columns (such as query_id,doc_id,score for a run, query_id,doc_id,relevance for qrels); "
        "add it"
    )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _swapped_hint(missing: dict[str, str], found: list[str], role: str | None) -> str:
    """A run given as qrels, or qrels as a run: the file has the other input's value column
    (by its canonical name or a common one) and not its own."""
    folded = {name.casefold() for name in found}
    has_score = any(name in folded for name in _COLUMN_ALIASES[SCORE])
    has_label = any(name in folded for name in _COLUMN_ALIASES[LABEL])
    if role == "run" and SCORE in missing and has_label and not has_score:
        return "; this looks like qrels (a label column, no score): pass it as --qrels, and the run as --run"
    if role == "qrels" and LABEL in missing and has_score and not has_label:
        return "; this looks like a run (a score column, no label): pass it as --run, and the judgments as --qrels"
    if role == "run (inline labels)" and list(missing) == [LABEL] and not has_label:
        return (
            "; without --qrels the labels are read from the run itself: give the judgments with --qrels "
            "(API: qrels=...), or name the run's label column with --label-col (API: columns=Columns(label=...))"
        )
    return ""


def _separator_hint(found: list[str]) -> str:
    """A header read as one field that holds a separator was split on the wrong one."""
    if len(found) != 1:
        return ""
    for separator, name, advice in _SEPARATORS:
        if separator in found[0]:
            return f" (one field holding {name}: the file looks {advice})"
    return ""


_SEPARATORS = (
    (";", "';'", "separated by semicolons; csv input must be comma-separated: convert it"),
    ("\t", "tabs", "tab-separated: pass --run-format/--qrels-format tsv"),
    (",", "commas", "comma-separated: pass --run-format/--qrels-format csv"),
)


def _scan_trec(
    source: Source, lines_of: TrecLines, names: tuple[str, ...], casts: dict[str, type[pl.DataType]]
) -> pl.LazyFrame:
    """A local TREC input's files as columns (:func:`pipeline.io.trec.scan_lines`)."""
    _refuse_remote_text(source)
    files = source.files()
    check_partition_keys(files, [], dataset_root(source))
    return scan_lines(files, lines_of, names, casts)


def trec_run_id(source: Source, *, first: bool = False) -> str | None:
    """trec_eval's ``runid`` of a run: the tag (6th field) of the last content line of a local
    TREC text run, the one trec_eval keeps (get_trec_results.c), read from the file's end; None
    for another format, a file that is not local, or a last line without a tag. Of several files, the last
    one's. ``first``: the first content line's, of the first file (ndeval keeps that one)."""
    if source.format != "trec" or not source.location.is_local:
        return None
    files = [local_path(path) for path in source.files()]
    if first:
        line = first_content_line(files[0]) if files else None
    else:
        line = last_content_line(files[-1]) if files else None
    fields = trec_fields(line) if line else []
    return fields[5] if len(fields) >= 6 else None


def is_id_type(dtype: pl.DataType) -> bool:
    """Whether validation accepts ``dtype`` for an id column: text (String, Categorical) or an
    integer of any width, signed or not."""
    return dtype == pl.String or dtype == pl.Categorical or dtype.is_integer()
