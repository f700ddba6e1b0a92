"""The manifest's ``"inputs"``: what identifies the data each input was read from
(:mod:`pipeline.io.identity`), so that a later run can tell whether its inputs changed."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline.io.identity import identify, same
from pipeline.job import Job, run_job
from pipeline.registry import Evaluation
from tests.helpers import ROOT, S3Bucket, run_cli, settle

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def _file(path: Path) -> dict:
    status = path.stat()
    return {
        "path": str(path),
        "size": status.st_size,
        "mtime_ns": status.st_mtime_ns,
        "ctime_ns": status.st_ctime_ns,
        "device": status.st_dev,
        "inode": status.st_ino,
        "settled": True,  # written over 100 ms before it was identified
    }


def test_manifest_records_each_input_file_with_size_mtime_and_ctime(tmp_path: Path) -> None:
    attributes = tmp_path / "attributes.csv"
    queries = pl.read_parquet(RUN)["query_id"].unique().sort()
    pl.DataFrame({"query_id": queries, "team": ["a"] * len(queries)}).write_csv(attributes)
    settle(attributes)
    out = tmp_path / "out"
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--group-by", "team", "--query-attributes", attributes,
        "--out", out,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    inputs = json.loads((out / "manifest.json").read_text())["inputs"]
    assert inputs["run"]["identity"] == {"kind": "files", "files": [_file(RUN)]}
    assert inputs["qrels"]["identity"] == {"kind": "files", "files": [_file(QRELS)]}
    assert inputs["query_attributes"] == {
        "path": str(attributes),
        "format": "csv",
        "identity": {"kind": "files", "files": [_file(attributes)]},
    }


def test_a_partition_records_only_the_files_it_read(tmp_path: Path) -> None:
    run = pl.read_parquet(RUN)
    for day in ("2026-11-20", "2026-11-21"):
        (tmp_path / "runs" / f"dt={day}").mkdir(parents=True)
        run.head(50).write_parquet(tmp_path / "runs" / f"dt={day}" / "part-0.parquet")
        run.slice(50).write_parquet(tmp_path / "runs" / f"dt={day}" / "part-1.parquet")
    time.sleep(0.2)  # settled before they are identified (tests/test_skip_unchanged.py)
    job = Job(
        run=str(tmp_path / "runs"),
        qrels=str(QRELS),
        evaluation=Evaluation(cutoffs=(5,)),
        partition_filters={"dt": {"2026-11-21"}},
    )
    (unit,) = run_job(job)
    folder = tmp_path / "runs" / "dt=2026-11-21"
    assert unit.manifest["inputs"]["run"]["identity"] == {
        "kind": "files",
        "files": [_file(folder / "part-0.parquet"), _file(folder / "part-1.parquet")],
    }


def test_identity_changes_with_the_data_and_only_then(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "run.parquet"
    pl.read_parquet(RUN).write_parquet(path)
    monkeypatch.setattr("pipeline.io.identity.SETTLING_NS", 0)  # settled at once
    first = identify(str(path))
    assert same(first, identify(str(path)))
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))  # its times changed, its size not
    assert not same(first, identify(str(path)))
    assert not same({"kind": "unknown"}, {"kind": "unknown"})


def test_a_frame_has_no_identity() -> None:
    assert identify(pl.LazyFrame({"a": [1]})) == {"kind": "unknown"}


def test_missing_input_is_an_input_error(tmp_path: Path) -> None:
    from pipeline.errors import InvalidInput

    with pytest.raises(InvalidInput, match="no such file"):
        identify(str(tmp_path / "gone.parquet"))


def test_an_object_is_identified_by_etag_size_and_version_id(s3_bucket: S3Bucket) -> None:
    """On a versioned bucket of the tests' S3 server: rewriting an object with the same bytes keeps
    its ETag and size but not its version id, and the identity tells the two apart."""
    s3_bucket.client.put_bucket_versioning(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, VersioningConfiguration={"Status": "Enabled"}
    )
    s3_bucket.put("run.parquet", RUN)
    url = s3_bucket.url("run.parquet")
    first = identify(url)
    head = s3_bucket.client.head_object(Bucket=s3_bucket.name, Key="run.parquet")  # type: ignore[attr-defined]
    assert first == {
        "kind": "objects",
        "files": [
            {"path": url, "size": RUN.stat().st_size, "etag": head["ETag"].strip('"'), "version_id": head["VersionId"]}
        ],
    }
    assert same(first, identify(url))
    s3_bucket.put("run.parquet", RUN)  # the same bytes again: a new version
    second = identify(url)
    assert second["files"][0]["etag"] == first["files"][0]["etag"]
    assert not same(first, second)
