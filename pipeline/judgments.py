"""Were two evaluation outputs scored against the same judgments? Read from what each output's
``manifest.json`` records of its qrels (``inputs.qrels``: :func:`pipeline.io.outputs.recorded_judgments`).

A difference between two systems is theirs only when both were scored against the same
judgments: another qrels file, another version of a Delta table, or a day judged again moves
every NDCG, and a comparison across them reads a re-judging as a regression or a win. So
``ndcg compare`` refuses outputs scored against different judgments (exit 2) unless
``--allow-different-judgments``, and ``ndcg report`` marks the partitions where they differ.

"The same judgments" are the same data read the same way. Two records that say how they were
read (``read_as``: the query, document and label columns) and say it differently are other
judgments, whatever the data: one file's ``relevance`` and its ``grade`` are two judgings. (The
options that change labels after reading, the relevance threshold and the gain, are conventions,
compared as such.) Then the data, by the strongest record both manifests hold:

- both record a content digest (``sha256``, written for local files): the same bytes, wherever
  the files were (a copy of the qrels is the same judgments, an edited file is not);
- both are a Delta table: the same table id and the same version (another version, or another
  table at the same path, is other judgments, even when a commit changed no label);
- both are objects of a store: the same size and ETag for each object (or, without ETags, the
  same path and version id);
- both are local files without a digest (manifests of an earlier version): the same files
  untouched (:func:`pipeline.io.identity.same`) are the same judgments; files of other sizes
  are other judgments; anything else cannot be told.

What cannot be told (an output without a manifest, a kind of input that is not identified,
local files against objects) is *unknown*: warned about, never refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pipeline.io.identity import same


@dataclass(frozen=True)
class Verdict:
    """Whether two records name the same judgments: ``same`` True, False, or None (cannot
    tell), and why, for people."""

    same: bool | None
    reason: str


def same_judgments(first: Mapping[str, Any] | None, second: Mapping[str, Any] | None) -> Verdict:
    """Compare two ``inputs.qrels`` records of evaluation manifests (see the module's text)."""
    if first is None or second is None:
        return Verdict(None, "no judgments recorded")
    read = first.get("read_as"), second.get("read_as")
    if isinstance(read[0], dict) and isinstance(read[1], dict) and read[0] != read[1]:
        differing = [
            f"{key.replace('_', ' ')} {read[0].get(key)!r} vs {read[1].get(key)!r}"
            for key in sorted(set(read[0]) | set(read[1]))
            if read[0].get(key) != read[1].get(key)
        ]
        return Verdict(False, f"read differently ({', '.join(differing)})")
    digests = first.get("sha256"), second.get("sha256")
    if all(isinstance(d, str) for d in digests):
        equal = digests[0] == digests[1]
        return Verdict(equal, "content digest " + ("equal" if equal else "differs"))
    one, other = _identity(first), _identity(second)
    kinds = one.get("kind"), other.get("kind")
    if kinds == ("delta", "delta"):
        return _same_table(one, other)
    if kinds == ("objects", "objects"):
        return _same_objects(one["files"], other["files"])
    if kinds == ("files", "files"):
        if same(one, other):
            return Verdict(True, "the same files, untouched")
        sizes = sorted(_size(r) for r in one["files"]), sorted(_size(r) for r in other["files"])
        if sizes[0] != sizes[1]:
            return Verdict(False, "files of other sizes")
        return Verdict(None, "local files recorded without a content digest (a manifest of an earlier version)")
    return Verdict(None, f"recorded as {kinds[0] or 'nothing'} and {kinds[1] or 'nothing'}")


def _identity(record: Mapping[str, Any]) -> dict[str, Any]:
    identity = record.get("identity")
    if not isinstance(identity, dict) or identity.get("kind") not in ("delta", "objects", "files"):
        return {"kind": None}
    if identity["kind"] != "delta" and not isinstance(identity.get("files"), list):
        return {"kind": None}
    return identity


def _size(record: object) -> int:
    return record.get("size", -1) if isinstance(record, dict) and isinstance(record.get("size"), int) else -1


def _same_table(one: Mapping[str, Any], other: Mapping[str, Any]) -> Verdict:
    ids, versions = (one.get("id"), other.get("id")), (one.get("version"), other.get("version"))
    if not all(isinstance(i, str) for i in ids) or not all(isinstance(v, int) for v in versions):
        return Verdict(None, "a Delta table recorded without its id or version")
    if ids[0] != ids[1]:
        return Verdict(False, f"another Delta table (id {ids[0]} vs {ids[1]})")
    if versions[0] != versions[1]:
        return Verdict(False, f"version {versions[0]} vs {versions[1]} of the Delta table")
    return Verdict(True, "the same Delta table and version")


def _same_objects(one: Sequence[Any], other: Sequence[Any]) -> Verdict:
    def keys(records: Sequence[Any], *fields: str) -> list[tuple[Any, ...]] | None:
        found = [tuple(r.get(f) for f in fields) for r in records if isinstance(r, dict)]
        if len(found) != len(records) or any(value in (None, "") for key in found for value in key):
            return None
        return sorted(found, key=repr)

    tagged = keys(one, "size", "etag"), keys(other, "size", "etag")
    if tagged[0] is not None and tagged[1] is not None:
        return Verdict(tagged[0] == tagged[1], "ETags " + ("equal" if tagged[0] == tagged[1] else "differ"))
    versioned = keys(one, "path", "version_id"), keys(other, "path", "version_id")
    if versioned[0] is not None and versioned[1] is not None:
        equal = versioned[0] == versioned[1]
        return Verdict(equal, "object versions " + ("equal" if equal else "differ"))
    return Verdict(None, "objects recorded without an ETag or version id")


def judgment_source(record: Mapping[str, Any] | None) -> str:
    """Where the judgments came from, for messages: ``qrels.parquet (sha256:1a2b3c4d5e6f)``,
    ``s3://b/qrels.parquet (ETag "9b2c...")``, ``/tables/qrels (Delta version 3)``."""
    if record is None:
        return "not recorded"
    path = str(record.get("path") or "?")
    identity = _identity(record)
    if isinstance(record.get("sha256"), str):
        return f"{path} ({str(record['sha256'])[:19]})"
    if identity.get("kind") == "delta":
        return f"{identity.get('table') or path} (Delta version {identity.get('version')})"
    files = identity.get("files") if identity.get("kind") in ("objects", "files") else None
    if isinstance(files, list) and len(files) == 1 and isinstance(files[0], dict):
        stamp = files[0].get("etag") or files[0].get("version_id")
        stamp_text = f"ETag {stamp}" if files[0].get("etag") else f"version {stamp}"
        return f"{path} ({stamp_text if stamp else str(files[0].get('size')) + ' bytes'})"
    if isinstance(files, list):
        return f"{path} ({len(files)} files)"
    return path


@dataclass(frozen=True)
class JudgmentCheck:
    """What :func:`check_judgments` found: the units (partition, or None) whose systems were
    scored against different judgments, and those where it cannot be told."""

    different: list[dict[str, Any]]
    unknown: list[dict[str, Any]]


def check_judgments(units: Mapping[str | None, Mapping[str, Mapping[str, Any] | None]]) -> JudgmentCheck:
    """Each unit (a partition, or None for an unpartitioned output) maps the systems (first the
    baseline) to their recorded judgments; every other system is compared with the baseline."""
    different: list[dict[str, Any]] = []
    unknown: list[dict[str, Any]] = []
    for partition, records in units.items():
        names = list(records)
        for other in names[1:]:
            verdict = same_judgments(records[names[0]], records[other])
            if verdict.same is True:
                continue
            entry = {
                "partition": partition,
                "systems": [names[0], other],
                "sources": {name: judgment_source(records[name]) for name in (names[0], other)},
                "reason": verdict.reason,
            }
            (different if verdict.same is False else unknown).append(entry)
    return JudgmentCheck(different, unknown)


def describe_judgment_differences(entries: Sequence[Mapping[str, Any]], most: int = 3) -> str:
    """``model_a: qrels_v1.parquet (sha256:...), model_c: qrels_v2.parquet (sha256:...): content
    digest differs (partition dt=2026-11-21)``; the first few, and how many in all."""
    shown = []
    for entry in entries[:most]:
        sources = ", ".join(f"{name}: {source}" for name, source in entry["sources"].items())
        where = f" (partition {entry['partition']})" if entry["partition"] else ""
        shown.append(f"{sources}: {entry['reason']}{where}")
    more = f"; ... ({len(entries)} in all)" if len(entries) > most else ""
    return "; ".join(shown) + more
