"""Publishing units under an object-store prefix (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``),
which has no atomic rename and no lock: see :func:`publish_objects`."""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pipeline.errors import InvalidInput
from pipeline.io.manifest import MANIFEST, SUCCESS, Unit, build_unit, manifest_of, plain_name, unit_kind
from pipeline.io.objects import ObjectStore, object_store
from pipeline.io.output_errors import OutputError

OBJECT_STAGING = "_ndcg_staging-"  # a hidden prefix (readers skip names starting with _)


# A staging prefix older than this is a killed writer's (publishing takes seconds): removed by the
# next writer. A younger one may be another job's, still uploading, and is left alone.
STALE_STAGING_SECONDS = 3600


def publish_objects(
    root: str, units: Sequence[Unit], *, flag: str, on_written: Callable[[Unit], None] | None
) -> list[Path]:
    """Units under an object-store prefix, which has no atomic rename: every unit is checked, then
    every file of every unit is built locally and uploaded under ``ROOT/_ndcg_staging-<id>/``;
    only then each unit is published: its ``_SUCCESS`` removed, the tables copied into place
    (server-side), outputs of ours no longer written removed, ``manifest.json`` and last
    ``_SUCCESS`` written. A reader that waits for ``_SUCCESS`` never sees a half-written unit; a
    failed or killed job leaves the unit without ``_SUCCESS`` (and, when killed, a hidden staging
    prefix, removed by a writer an hour later). The user's objects under the prefix are never touched, and one of theirs
    holding a name the unit writes is refused before anything is written. Concurrent writers are
    not serialized (no lock on a bucket)."""

    root = root.rstrip("/")
    store = object_store(root)
    if not store.listable:
        raise OutputError(f"{flag} {root}: outputs are written to s3://, gs://, az:// or abfs[s]:// prefixes")
    try:
        return _publish_to(store, root, units, flag=flag, on_written=on_written)
    except InvalidInput as error:  # reading what is there failed: the output cannot be written there
        raise OutputError(f"cannot write {flag} {root}: {error}; choose another {flag}") from None


def _publish_to(
    store: ObjectStore, root: str, units: Sequence[Unit], *, flag: str, on_written: Callable[[Unit], None] | None
) -> list[Path]:
    if store.kind(store.prefix) == "missing":
        raise OutputError(f"{flag} {root}: no such bucket {store.bucket!r}; create it, or choose another {flag}")
    targets = [root if unit.target == Path(".") else f"{root}/{unit.target.as_posix()}" for unit in units]
    for unit, target in zip(units, targets, strict=True):
        if unit.target.is_absolute() or ".." in unit.target.parts:
            raise OutputError(f"{unit.target}: a unit under {flag} {root} is named by a folder relative to it")
        _check_object_unit(store, unit, target, flag)
    now = int(time.time())
    for entry, kind in store.entries(root) if store.kind(root) == "dir" else []:
        stamp = entry.removeprefix(OBJECT_STAGING).split("-", 1)[0]
        stale = stamp.isdigit() and now - int(stamp) > STALE_STAGING_SECONDS
        if entry.startswith(OBJECT_STAGING) and kind == "dir" and stale:
            store.delete_prefix(f"{root}/{entry}")  # left by a killed writer
    staging = f"{root}/{OBJECT_STAGING}{now}-{os.urandom(6).hex()}"
    try:
        with tempfile.TemporaryDirectory(prefix="ndcg-out-") as local:
            built = []
            for index, (unit, target) in enumerate(zip(units, targets, strict=True)):
                folder = Path(local) / str(index)
                folder.mkdir()
                build_unit(folder, unit, flag)
                prefix = f"{staging}/{index}"
                for name in unit.files:
                    store.write_bytes(f"{prefix}/{name}", (folder / name).read_bytes())
                built.append((unit, target, prefix, (folder / MANIFEST).read_bytes()))
            for unit, target, prefix, manifest in built:
                owned = _owned_objects(store, target)
                store.delete(f"{target}/{SUCCESS}")
                for name in unit.files:
                    store.copy(f"{prefix}/{name}", f"{target}/{name}")
                for name in sorted(owned - unit.names()):
                    store.delete(f"{target}/{name}")
                store.write_bytes(f"{target}/{MANIFEST}", manifest)
                if unit.success:
                    store.write_bytes(f"{target}/{SUCCESS}", b"")
                if on_written:
                    on_written(unit)
    finally:
        with contextlib.suppress(Exception):
            store.delete_prefix(staging)
    return [Path(target) for target in targets]


def _owned_objects(store: ObjectStore, target: str) -> set[str]:
    """Names under ``target`` a manifest of ours lists (see :func:`pipeline.io.manifest.owned_names`)."""
    data = store.read_bytes(f"{target}/{MANIFEST}")
    manifest = manifest_of(data) if data is not None else None
    if manifest is None:
        success = store.read_bytes(f"{target}/{SUCCESS}")
        return {SUCCESS} if success == b"" else set()
    outputs = manifest.get("outputs")
    listed = {name for name in outputs or [] if isinstance(name, str) and plain_name(name)}
    return {MANIFEST, SUCCESS, *listed}


def _check_object_unit(store: ObjectStore, unit: Unit, target: str, flag: str) -> None:
    if store.kind(target) == "file":
        raise OutputError(f"{target} is an object, not a prefix: choose another {flag}")
    if store.kind(target) != "dir":
        return
    data = store.read_bytes(f"{target}/{MANIFEST}")
    old = manifest_of(data) if data is not None else None
    if old is not None:
        outputs = old.get("outputs")
        was = unit_kind(old, outputs if isinstance(outputs, list) else [])
        new = unit_kind(unit.manifest, unit.files)
        if was is not None and new is not None and was != new:
            raise OutputError(
                f"{target} holds the output of ndcg {was}; ndcg {new} does not replace it: choose another {flag}"
            )
    owned = _owned_objects(store, target)
    present = {name for name, _ in store.entries(target)}
    for name in sorted(unit.names()):
        if name in present and name not in owned:
            raise OutputError(
                f"{target}/{name} was not written by ndcg-pipeline (no manifest.json of ours lists it) and is left "
                f"as it is: move it away or choose another {flag}"
            )
