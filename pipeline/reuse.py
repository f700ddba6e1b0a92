"""The reuse cache of ``--skip-unchanged``: which units of a job must be computed again.

A unit's ``manifest.json`` records what its outputs were computed from: the identity of each
input (:func:`pipeline.io.identity.identify`: local files, objects, a Delta table's version),
the options that change a number, the settings that change the files, and the code's version.
:func:`reuse_key` takes the same record of a unit about to be evaluated, before its inputs are
read; :func:`recompute_reason` compares the two and checks that the outputs are still the ones
written (their digests); :func:`units_to_recompute` is what the job asks. The job
(:mod:`pipeline.job`) writes the manifests; this module only reads them.
"""

from __future__ import annotations

import functools
import hashlib
import json
import platform
from collections.abc import Callable, Sequence
from dataclasses import asdict
from importlib import metadata
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import polars as pl

from pipeline.errors import NdcgError, UsageError, first_line
from pipeline.io import fs
from pipeline.io.identity import UNKNOWN, differences, identified, identify, judgments_digest, same, unsettled_paths
from pipeline.io.partitions import Partition
from pipeline.io.read import Columns, Source, scan_qrels, scan_run
from pipeline.io.write import MANIFEST, OUTPUT_DIGESTS, SUCCESS, OutputError, file_digest, plain_name
from pipeline.registry import Evaluation, InputChecks, QueryWeights

# the manifest's versions key for :func:`source_digest`
SOURCE = "ndcg-pipeline-source"


class Recipe(Protocol):
    """What a unit's outputs depend on besides its inputs' data: the fields of a job
    (:class:`pipeline.job.Job`) that this module reads."""

    @property
    def evaluation(self) -> Evaluation: ...
    @property
    def group_by(self) -> tuple[str, ...]: ...
    @property
    def checks(self) -> InputChecks: ...
    @property
    def columns(self) -> Columns: ...
    @property
    def run_format(self) -> str | None: ...
    @property
    def qrels_format(self) -> str | None: ...
    @property
    def out_format(self) -> str: ...
    @property
    def query_attributes(self) -> str | None: ...
    @property
    def weights(self) -> QueryWeights: ...


class Planned(Protocol):
    """A unit the job may evaluate: its partition (None: the whole output) and its
    :func:`reuse_key`."""

    @property
    def partition(self) -> Partition | None: ...
    @property
    def key(self) -> dict[str, Any]: ...


P = TypeVar("P", bound=Planned)


def units_to_recompute(
    out: str | None, planned: Sequence[P], on_decision: Callable[[Partition | None, bool, str], None] | None = None
) -> list[P]:
    """The units of ``planned`` whose outputs under ``out`` must be computed again (see
    :func:`recompute_reason`); ``on_decision(partition, skipped, reason)`` hears why each unit
    is skipped or recomputed. A unit that must be recomputed but whose folder holds no manifest
    of ours is refused before anything is evaluated."""
    if not out or not fs.is_local(out):
        raise UsageError("--skip-unchanged needs a local --out (the outputs whose manifest.json it reads)")
    chosen = []
    for unit in planned:
        reason = recompute_reason(Path(out), unit.partition, unit.key)
        if on_decision:
            on_decision(unit.partition, reason is None, reason or _unchanged_note(Path(out), unit.partition))
        if reason is not None:
            chosen.append(unit)
    return chosen


def options(job: Recipe) -> dict[str, Any]:
    """The options that change a number, as the manifest records them: the resolved conventions
    and cutoffs, the groups, the input checks."""
    weighted = job.weights.describe()
    return {
        **job.evaluation.describe(),
        "group_by": list(job.group_by),
        **asdict(job.checks),
        # only when given: outputs without weights keep the options they always recorded
        **({"query_weights": weighted} if weighted else {}),
    }


def reuse_key(job: Recipe, run_path: str | Source, qrels_path: str | Source | None) -> dict[str, Any]:
    """What a unit's outputs depend on, as its manifest records it: the identity of each input
    (:func:`pipeline.io.identity.identify`: local files, objects, a Delta table's version), taken
    before the input is read, the options that change a number (:func:`options`), the settings
    that change the files (column names, input and output formats), and the tool's version. The
    engine and its execution options (threads, memory limit, Spark master) change no number (the
    engines agree to 1e-9, tested) and are not part of it."""

    def identity(given: str | Source | None, format: str | None, role: str = "run") -> dict[str, Any] | None:
        if given is None:
            return None
        if isinstance(given, Source):  # a Delta table (or a partition of it): its version
            source = given
        elif fs.is_local(given) or fs.is_object_store(given):
            source = Source.of(given, format, job.columns.of(role))
        else:  # read by Spark through Hadoop (s3a://, hdfs://): not identified, always recomputed
            return dict(UNKNOWN)
        try:
            return identify(source)
        except (NdcgError, OSError):  # the reader says what is wrong with it, in its own words
            return dict(UNKNOWN)

    return {
        "inputs": {
            "run": identity(run_path, job.run_format),
            "qrels": identity(qrels_path, job.qrels_format, "qrels"),
            "query_attributes": identity(job.query_attributes, None),
            "query_weights": identity(job.weights.path, None),
        },
        "options": options(job),
        "settings": {
            "columns": asdict(job.columns),
            "run_format": job.run_format,
            "qrels_format": job.qrels_format,
            "out_format": job.out_format,
        },
        "version": tool_versions()["ndcg-pipeline"],
        "source": source_digest(),
    }


def recorded_inputs(
    job: Recipe,
    run_path: str | Source,
    qrels_path: str | Source | None,
    key: dict[str, Any],
    *,
    rows: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """The manifest's ``inputs``: where each input is, how many rows it has (``rows``, as
    validation counted them, else counted here), and the identity :func:`reuse_key` took of it
    before it was read."""
    identities = key["inputs"]
    run_rows, qrels_rows = rows if rows is not None else (None, None)
    return {
        "run": _describe_input(job, run_path, "run", identities["run"], run_rows),
        "qrels": _judgments_record(job, qrels_path, identities["qrels"], qrels_rows) if qrels_path else None,
        "query_attributes": _describe_attributes(job.query_attributes, identities["query_attributes"]),
        "query_weights": _describe_attributes(job.weights.path, identities["query_weights"]),
    }


def _judgments_record(
    job: Recipe, given: str | Source, identity: dict[str, Any] | None, rows: int | None = None
) -> dict[str, Any]:
    """The judgments as :func:`_describe_input` describes them, the columns they were read
    from (``read_as``), and a digest of their content when they are local files
    (:func:`pipeline.io.identity.judgments_digest`), by which ``ndcg compare`` tells outputs
    scored against the same judgments."""
    record = _describe_input(job, given, "qrels", identity, rows)
    columns = job.columns.of("qrels")
    # the same file read with another label (or id) column is other judgments; the options that
    # change labels after reading (threshold, gain) are conventions, compared as such
    record["read_as"] = {"query_column": columns.query, "doc_column": columns.doc, "label_column": columns.label}
    digest = judgments_digest(identity)
    return {**record, "sha256": digest} if digest else record


def _plain_json(value: object) -> object:
    """As JSON gives it back (tuples as lists, map keys as text), so a key compares equal to
    the one read from a manifest."""
    return json.loads(json.dumps(value, default=str))


def recompute_reason(out: Path, partition: Partition | None, key: dict[str, Any]) -> str | None:
    """Why the unit's outputs under ``out`` must be computed again, or None when its
    ``manifest.json`` (one of ours, with every output it lists as it was written, and ``_SUCCESS``) records
    the same inputs (:func:`pipeline.io.identity.same`), options, settings and version as ``key``."""
    folder = out / partition.relative() if partition else out
    path = folder / MANIFEST
    if not path.is_file():
        return f"no {MANIFEST} in {folder}" if folder.is_dir() else "never written"
    try:
        recorded = json.loads(path.read_text(encoding="utf-8"))
        problem = None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        recorded, problem = None, f"is unreadable ({type(error).__name__}: {first_line(error)})"
    versions = recorded.get("versions") if isinstance(recorded, dict) else None
    outputs = recorded.get("outputs") if isinstance(recorded, dict) else None
    if problem is None and (not isinstance(versions, dict) or not isinstance(outputs, list)):
        problem = "is not a manifest of ndcg evaluate"
    if problem is not None or not isinstance(recorded, dict) or not isinstance(versions, dict):
        # the unit must be recomputed, but without a manifest of ours its files cannot be told from
        # the user's, and only files of ours are ever replaced: said now, before anything is evaluated
        raise OutputError(
            f"{path} {problem or 'is not ours'}: the outputs of {folder} must be recomputed, but without a "
            "readable manifest of ours they cannot be told from files of yours, and none is replaced; restore "
            "the manifest, or move the folder away, and rerun"
        )
    listed = [*(outputs or []), SUCCESS]
    # a manifest of ours names files of its own folder only: nothing elsewhere is looked at, nor kept
    foreign = [name for name in listed if isinstance(name, str) and not plain_name(name)]
    if foreign:
        return f"{MANIFEST} lists output(s) outside {folder}: {', '.join(foreign)}"
    missing = [name for name in listed if not isinstance(name, str) or not (folder / name).is_file()]
    if missing:
        return f"output(s) missing: {', '.join(map(str, missing))}"
    if versions.get("ndcg-pipeline") != key["version"]:
        return f"ndcg-pipeline version changed: {versions.get('ndcg-pipeline')} -> {key['version']}"
    if versions.get(SOURCE) != key["source"]:
        # a checkout or an editable install: the code changes without the version
        return f"ndcg-pipeline's code changed ({SOURCE} {versions.get(SOURCE)} -> {key['source']})"
    for part in ("options", "settings"):
        old, new = recorded.get(part), _plain_json(key[part])
        if old != new:
            old_map = old if isinstance(old, dict) else {}
            new_map = new if isinstance(new, dict) else {}
            changed = [n for n in sorted({*old_map, *new_map}) if old_map.get(n) != new_map.get(n)] or ["all"]
            return f"{part} changed: {', '.join(changed)}"
    raw_inputs = recorded.get("inputs")
    inputs: dict[str, Any] = raw_inputs if isinstance(raw_inputs, dict) else {}
    for role in ("run", "qrels", "query_attributes", "query_weights"):
        new = key["inputs"][role]
        entry = inputs.get(role)
        if new is None or entry is None:
            if new is not None or entry is not None:
                return f"{role} changed: {'none before' if entry is None else 'none now'}"
            continue
        if not identified(new):
            fresh = unsettled_paths(new)
            if fresh:  # identified once it settles: on the next run
                shown = ", ".join(fresh[:3]) + (f", ... ({len(fresh)} in all)" if len(fresh) > 3 else "")
                return f"{role} changed: {shown} changed just now (within a clock tick of this run)"
            return f"the {role} cannot be identified ({new.get('kind', 'unknown')}): always recomputed"
        if not same(entry.get("identity") if isinstance(entry, dict) else None, new):
            changes = differences(entry.get("identity") if isinstance(entry, dict) else None, new)
            shown = "; ".join(changes[:3]) + (f"; ... ({len(changes)} in all)" if len(changes) > 3 else "")
            return f"{role} changed: {shown}"
    # last: it reads the outputs, the other checks only the manifest and the inputs' stamps
    return _changed_outputs(folder, [name for name in listed if name != SUCCESS], recorded.get(OUTPUT_DIGESTS))


def _changed_outputs(folder: Path, names: list[str], digests: object) -> str | None:
    """Why outputs are no longer what the manifest says was written (edited, truncated, replaced
    by another tool), or None: such outputs are recomputed, never kept."""
    if not isinstance(digests, dict):
        return f"outputs not verifiable: {MANIFEST} records no {OUTPUT_DIGESTS} (written by an earlier version)"
    changed = []
    for name in names:
        path = folder / name
        if path.is_symlink():  # this tool writes files, never links: replaced since
            changed.append(f"{name} (a symbolic link now)")
            continue
        try:
            digest = file_digest(path)
        except OSError as error:  # unreadable (permissions) or gone meanwhile: it cannot vouch for itself
            changed.append(f"{name} ({error.strerror or type(error).__name__})")
            continue
        if digests.get(name) != digest:
            changed.append(name)
    return f"output(s) changed since written: {', '.join(changed)}" if changed else None


def _unchanged_note(out: Path, partition: Partition | None) -> str:
    folder = out / partition.relative() if partition else out
    try:
        finished = json.loads((folder / MANIFEST).read_text(encoding="utf-8")).get("finished_at")
    except (OSError, ValueError, AttributeError):
        finished = None
    return f"unchanged: same inputs, options and version as its outputs of {finished or 'earlier'}"


def _describe_input(
    job: Recipe, given: str | Source, role: str, identity: dict[str, Any] | None, rows: int | None = None
) -> dict[str, Any]:
    """Where an input is, how many rows it has (``rows``, else counted: reading a text file
    again costs a parse), and what identifies the data read (as :func:`reuse_key` took it,
    before reading: :func:`pipeline.io.identity.identify`)."""
    if isinstance(given, Source):  # a Delta table (or a partition of it)
        frame = scan_run(given) if role == "run" else scan_qrels(given)
        rows = int(frame.select(pl.len()).collect().item()) if rows is None else rows
        return {"path": given.path, "format": given.format, "rows": rows, "identity": identity}
    path = given
    if not (fs.is_local(path) or fs.is_object_store(path)):  # read by Spark through Hadoop: no footer read here
        format = job.run_format if role == "run" else job.qrels_format
        return {"path": path, "format": format, "rows": None, "identity": identity}
    source = Source.of(path, job.run_format if role == "run" else job.qrels_format, job.columns.of(role))
    if rows is None:
        frame = scan_run(source) if role == "run" else scan_qrels(source)
        rows = int(frame.select(pl.len()).collect().item())
    return {"path": path, "format": source.format, "rows": rows, "identity": identity}


def _describe_attributes(path: str | None, identity: dict[str, Any] | None) -> dict[str, Any] | None:
    if path is None:
        return None
    source = Source.of(path)
    return {"path": path, "format": source.format, "identity": identity}


@functools.cache
def source_digest() -> str:
    """A digest of the code that computes the numbers (the package's Python files and its SQL
    steps): in a checkout or an editable install the code changes without the version, and
    ``--skip-unchanged`` must not keep outputs the former code computed."""
    from pipeline.sql_files import SQL_DIR

    digest = hashlib.sha256()
    package = Path(__file__).resolve().parent
    files: list[tuple[str, Traversable]] = [
        (f"pipeline/{p.relative_to(package).as_posix()}", p) for p in sorted(package.rglob("*.py"))
    ]
    files += [(f"sql/{entry.name}", entry) for entry in sorted(SQL_DIR.iterdir(), key=lambda e: e.name)]
    for name, entry in files:
        if name.endswith((".py", ".sql")) and entry.is_file():
            digest.update(name.encode() + b"\0" + entry.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def tool_versions() -> dict[str, str]:
    """The manifest's ``versions``: Python's, ours and our engines' libraries', and
    :func:`source_digest` under :data:`SOURCE`."""
    found = {"python": platform.python_version()}
    for package in ("ndcg-pipeline", "polars", "duckdb", "pyarrow"):
        try:
            found[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            found[package] = "not installed"
    found[SOURCE] = source_digest()
    return found
