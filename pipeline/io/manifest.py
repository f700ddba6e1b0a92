"""A unit of outputs and what of a folder is ours: the ``manifest.json`` this tool writes names
its ``generator`` and lists its ``"outputs"`` (with their digests), and only those files (with
``manifest.json`` and ``_SUCCESS``) are ever replaced or removed; anything else in a folder is
the user's. :func:`build_unit` writes a unit's files into a folder (a staging folder, local even
when the outputs go to an object store)."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from pipeline.io.output_errors import STAGING, guarded

MANIFEST = "manifest.json"
OUTPUT_DIGESTS = "output_digests"  # in a manifest: {output name: file_digest}
SUCCESS = "_SUCCESS"
BUILDING = ".ndcg-building"  # inside a staging folder until it is complete


def _version() -> str:
    try:
        return metadata.version("ndcg-pipeline")
    except metadata.PackageNotFoundError:
        return "unknown"


GENERATOR = f"ndcg-pipeline {_version()}"


@dataclass(frozen=True)
class Unit:
    """One folder of outputs: ``files`` maps each file name to a function writing it at a path.
    ``target`` is a local folder; under an object-store root, the folder relative to the root
    (``Path(".")`` for the root itself)."""

    target: Path
    files: Mapping[str, Callable[[Path], None]]
    manifest: Mapping[str, object] = field(default_factory=dict)
    success: bool = True  # write ``_SUCCESS`` last

    def names(self) -> set[str]:
        return {*self.files, MANIFEST, *([SUCCESS] if self.success else [])}


# What each command writes: a manifest without ``command`` (older ones) is told by its outputs.
KINDS = {"evaluate": {"per_query", "summary"}, "compare": {"comparison", "deltas"}}


def unit_kind(manifest: Mapping[str, object], files: Iterable[str]) -> str | None:
    """The command that writes (or wrote) a unit: its manifest's ``command``, else told by its files."""
    command = manifest.get("command")
    if isinstance(command, str) and command:
        return command
    stems = {name.split(".", 1)[0] for name in files if isinstance(name, str)}
    kinds = [kind for kind, names in KINDS.items() if names <= stems]
    return kinds[0] if len(kinds) == 1 else None


def owned_names(folder: Path) -> set[str]:
    """Names in ``folder`` that a previous run of this tool wrote, as its manifest records them."""
    manifest = our_manifest(folder / MANIFEST)
    if manifest is None:
        success = folder / SUCCESS
        # an empty marker carries nothing to lose (Spark and Hadoop write the same one)
        empty = success.is_file() and not success.is_symlink() and success.stat().st_size == 0
        return {SUCCESS} if empty else set()
    outputs = manifest.get("outputs")
    if not isinstance(outputs, list) and manifest.get("command") == "compare":
        outputs = ["comparison.parquet", "deltas.parquet"]  # written before manifests listed their outputs
    listed = {name for name in outputs or [] if isinstance(name, str) and plain_name(name)}
    return {MANIFEST, SUCCESS, *listed}


def plain_name(name: str) -> bool:
    """Whether a name a manifest lists is one of a folder's own files (not ``..``, a path or a staging folder)."""
    return name not in ("", ".", "..") and "/" not in name and "\\" not in name and not STAGING.fullmatch(name)


def our_manifest(path: Path) -> dict | None:
    if not path.is_file() or path.is_symlink():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    versions = data.get("versions")
    ours = (
        str(data.get("generator", "")).startswith("ndcg-pipeline")
        or (isinstance(versions, dict) and "ndcg-pipeline" in versions and isinstance(data.get("outputs"), list))
        or (data.get("command") == "compare" and "systems" in data)
    )
    return data if ours else None


def manifest_of(data: bytes) -> dict | None:
    """A manifest of ours from its bytes (see :func:`our_manifest`), or None."""
    with tempfile.TemporaryDirectory(prefix="ndcg-manifest-") as folder:
        path = Path(folder) / MANIFEST
        path.write_bytes(data)
        return our_manifest(path)


def build_unit(staging: Path, unit: Unit, flag: str) -> None:
    """The manifest first (it names every output, so leftovers are recognised), then the files,
    then the manifest again with their digests, ``_SUCCESS`` last; each fsynced.
    A failure names the file the user asked for, not the staged one."""
    kind = unit_kind(unit.manifest, unit.files)
    manifest = {
        **unit.manifest,
        **({"command": kind} if kind else {}),
        "outputs": list(unit.files),
        "generator": GENERATOR,
    }
    with guarded(flag, unit.target / MANIFEST):
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    for name, write in unit.files.items():
        with guarded(flag, unit.target / name):
            write(staging / name)
    # then what each output holds, so that a later run can tell them from edited or damaged ones
    # (``ndcg evaluate --skip-unchanged`` keeps only outputs that are still what was written)
    manifest[OUTPUT_DIGESTS] = {name: file_digest(staging / name) for name in unit.files}
    with guarded(flag, unit.target / MANIFEST):
        (staging / MANIFEST).write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    if unit.success:
        (staging / SUCCESS).write_bytes(b"")
    for name in unit.names():
        with open(staging / name, "rb") as handle:
            os.fsync(handle.fileno())


def file_digest(path: Path) -> str:
    """``sha256:<hex>`` of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"
