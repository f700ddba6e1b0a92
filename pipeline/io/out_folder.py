"""Where outputs may go, checked before anything runs (:func:`check_out_folder`): not an input
itself, not inside an input's folder or a glob's folder (the outputs would be read as part of it
next time), not a file."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable

from pipeline.io.location import is_object_store
from pipeline.io.output_errors import OutputError


def _read_from(role: str, path: str) -> list[tuple[str, str, bool]]:
    """What an input reads, for :func:`check_out_folder`: the path or folder, its name in a
    message, and whether files below that folder are read too. A glob lists from its literal
    leading folder (``runs/*.parquet``: ``runs``), and below it only through a ``**`` or a
    wildcard folder (``runs/*/x.parquet``); a path with a wildcard character that exists
    (a folder named ``runs[1]``, or any path below one) is read as itself, and only that is
    checked."""
    literal = (path, f"the {role}", True)
    if not glob.has_magic(path) or (not is_object_store(path) and os.path.exists(path)):
        return [literal]
    parts = path.split("/")
    first = next(i for i, part in enumerate(parts) if glob.has_magic(part))
    rest = parts[first:]
    folder = "/".join(parts[:first]) or ("/" if path.startswith("/") else ".")
    return [literal, (folder, f"the folder {folder} of the {role} glob {path}", len(rest) > 1 or "**" in rest[0])]


def _object_prefix(url: str) -> str:
    """An object URL as the store names its keys, to compare two of them: the scheme in lower
    case, and no empty or ``.`` part in the key (``s3://b//r/./o`` and ``S3://b/r/o`` are the
    prefix ``s3://b/r/o``, as the store writes them)."""
    scheme, rest = url.split("://", 1)
    parts = [part for part in rest.split("/") if part not in ("", ".")]
    return f"{scheme.lower()}://{'/'.join(parts)}"


def check_out_folder(out: str | None, inputs: Iterable[tuple[str, str | None]], flag: str = "--out") -> None:
    """Before anything runs: an ``--out`` that is empty, a file, an input itself or inside an
    input folder (or a glob's folder, where its outputs would match the glob next time) is
    refused (``inputs``: (role, path) pairs)."""
    if out is None:
        return
    if not out.strip():
        raise OutputError(f"{flag} is empty: give a folder for the outputs, or leave {flag} out to only print")
    read = [entry for role, path in inputs if path for entry in _read_from(role, path)]
    if is_object_store(out):
        target = _object_prefix(out)
        for path, name, below in read:
            if not is_object_store(path):
                continue
            source = _object_prefix(path)
            if target == source or (below and target.startswith(source + "/")):
                raise OutputError(
                    f"{flag} {out} is {name} or inside it: outputs there would be read as part of it; "
                    "choose a prefix outside it"
                )
        return
    resolved = os.path.realpath(out)
    for path, name, below in read:
        if not os.path.exists(path):
            continue
        source = os.path.realpath(path)
        if resolved == source:
            itself = "" if name.startswith("the folder ") else " itself"
            raise OutputError(f"{flag} {out} is {name}{itself}; choose another folder for the outputs")
        if below and os.path.isdir(source) and resolved.startswith(source.rstrip(os.sep) + os.sep):
            folder = name if name.startswith("the folder ") else f"{name} folder {path}"
            raise OutputError(
                f"{flag} {out} is inside {folder}: outputs there would be read as part of it; "
                "choose a folder outside it"
            )
    if os.path.exists(out) and not os.path.isdir(out):
        raise OutputError(f"{flag} {out} is a file, not a folder: give a folder for the outputs")
