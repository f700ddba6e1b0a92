"""Inputs and outputs on an object store (``s3://``), on the Polars and DuckDB engines, against a
real S3 server on 127.0.0.1 (the ``s3_bucket`` fixture of conftest.py): the same evaluation
from local files and from the bucket gives the same outputs, partitions are pruned, outputs are
published under a staging prefix with ``_SUCCESS`` last, and every failure to reach the store is
exit 3 naming the URL."""

from __future__ import annotations

import io
import json
import os
import time
from pathlib import Path

import polars as pl
import pytest

import pipeline
from pipeline.errors import InvalidInput
from pipeline.io import objects
from pipeline.io.write import OutputError
from pipeline.job import Job, run_job
from pipeline.registry import Evaluation
from tests.helpers import ROOT, S3Bucket, run_cli

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
DAYS = ("2026-11-19", "2026-11-20", "2026-11-21")


@pytest.fixture
def logs(tmp_path: Path, s3_bucket: S3Bucket) -> Path:
    """Three days of hive-partitioned logs, on disk and the same objects in the bucket (with the
    hidden files a Spark job leaves), judgments beside them."""
    run = pl.read_parquet(RUN)
    for offset, day in enumerate(DAYS):
        folder = tmp_path / "runs" / f"dt={day}"
        folder.mkdir(parents=True)
        run.with_columns(score=(pl.col("score") * (offset + 1)) % 7).write_parquet(folder / "part-0.parquet")
    (tmp_path / "runs" / "_SUCCESS").write_bytes(b"")
    (tmp_path / "runs" / f"dt={DAYS[0]}" / ".part-0.parquet.crc").write_bytes(b"crc")
    s3_bucket.put_tree("logs/runs", tmp_path / "runs")
    s3_bucket.put("logs/qrels/qrels.parquet", QRELS)
    return tmp_path


def _outputs(folder: Path) -> dict[str, pl.DataFrame]:
    return {path.relative_to(folder).as_posix(): pl.read_parquet(path) for path in sorted(folder.rglob("*.parquet"))}


def _bucket_outputs(bucket: S3Bucket, prefix: str) -> dict[str, pl.DataFrame]:
    return {
        key[len(prefix) + 1 :]: pl.read_parquet(io.BytesIO(bucket.get(key)))
        for key in bucket.keys(prefix)
        if key.endswith(".parquet")
    }


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_bucket_and_local_files_give_identical_outputs(logs: Path, s3_bucket: S3Bucket, engine: str) -> None:
    common = ["--k", "5,10", "--engine", engine, "--partition", f"dt={DAYS[1]}", "--partition", f"dt={DAYS[2]}"]
    local = run_cli("evaluate", "--run", logs / "runs", "--qrels", QRELS, "--out", logs / "out", *common)
    assert local.returncode == 0, local.stderr
    remote = run_cli(
        "evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("logs/qrels/"),
        "--out", s3_bucket.url("eval/out"), *common,
    )  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout
    expected, written = _outputs(logs / "out"), _bucket_outputs(s3_bucket, "eval/out")
    assert (
        sorted(written)
        == sorted(expected)
        == [f"dt={day}/{name}.parquet" for day in DAYS[1:] for name in ("per_query", "summary")]
    )
    for name, frame in expected.items():
        assert written[name].equals(frame), name
    assert sorted(s3_bucket.keys("eval/out/dt=2026-11-21/")) == [
        f"eval/out/dt=2026-11-21/{name}"
        for name in ("_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet")
    ]
    assert not [key for key in s3_bucket.keys("eval/") if "_ndcg_staging" in key]  # the staging prefix is gone


def test_partition_pruning_opens_no_other_partition(logs: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put(f"logs/runs/dt={DAYS[0]}/part-0.parquet", b"PAR1 not parquet PAR1")
    s3_bucket.put("logs/runs/dt=2026-11-22/part-0.parquet", b"garbage")
    result = run_cli(
        "evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("logs/qrels"),
        "--partition", f"dt={DAYS[1]}", "--k", "10", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert [unit["partition"] for unit in json.loads(result.stdout)["units"]] == [{"dt": DAYS[1]}]
    missing = run_cli(
        "evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("logs/qrels"),
        "--partition", "dt=2030-01-01",
    )  # fmt: skip
    assert missing.returncode == 4, missing.stderr
    assert "dt=2030-01-01 does not exist" in missing.stderr


def test_glob_and_single_object_read_like_local_files(logs: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put("flat/run.parquet", RUN)
    s3_bucket.put("flat/qrels.parquet", QRELS)
    local = pipeline.evaluate(RUN, QRELS, k=[5, 10])
    remote = pipeline.evaluate(s3_bucket.url("flat/run.parquet"), s3_bucket.url("flat/qrels.parquet"), k=[5, 10])
    assert remote.per_query.equals(local.per_query) and remote.summary.equals(local.summary)
    duckdb = pipeline.evaluate(
        s3_bucket.url("flat/r*.parquet"), s3_bucket.url("flat/qrels.parquet"), k=[5, 10], engine="duckdb"
    )
    assert duckdb.per_query.equals(pipeline.evaluate(RUN, QRELS, k=[5, 10], engine="duckdb").per_query)
    pattern = "runs/dt=*-21/part-?.parquet"  # one of the three days, listed level by level
    local_days = pipeline.evaluate(str(logs / pattern), QRELS, k=[5])
    remote_days = pipeline.evaluate(s3_bucket.url(f"logs/{pattern}"), s3_bucket.url("logs/qrels"), k=[5])
    assert remote_days.per_query.equals(local_days.per_query) and remote_days.summary.equals(local_days.summary)
    nothing = run_cli(
        "evaluate", "--run", s3_bucket.url("flat/x*.parquet"), "--qrels", s3_bucket.url("flat/qrels.parquet")
    )
    assert nothing.returncode == 3 and "nothing matches" in nothing.stderr


def test_out_where_a_glob_of_the_bucket_lists_is_refused(logs: Path, s3_bucket: S3Bucket) -> None:
    """An --out prefix a run glob would list from (its prefix, or below it through a wildcard
    folder), or the run's prefix spelled with a // or a ./, is refused before anything is
    written: the next run would read the outputs."""
    before = s3_bucket.keys()
    for pattern, out in (("logs/runs/dt=*/*.parquet", "logs/runs/out"), ("logs/runs/*.parquet", "logs/runs")):
        result = run_cli(
            "evaluate", "--run", s3_bucket.url(pattern), "--qrels", s3_bucket.url("logs/qrels"),
            "--out", s3_bucket.url(out),
        )  # fmt: skip
        assert result.returncode == 2, result.stderr
        assert f"of the run glob {s3_bucket.url(pattern)} or inside it" in result.stderr
    # the same prefix spelled otherwise (the store drops empty and . parts; the scheme's case)
    for out in (
        f"s3://{s3_bucket.name}//logs/runs/o",
        f"S3://{s3_bucket.name}/logs/runs/o",
        f"{s3_bucket.url()}/./logs/runs//",
    ):
        result = run_cli(
            "evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("logs/qrels"), "--out", out
        )
        assert result.returncode == 2, (out, result.stderr)
        assert f"--out {out} is the run or inside it" in result.stderr
    assert s3_bucket.keys() == before


def test_manifest_identifies_objects_by_etag_and_size(logs: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put("flat/run.parquet", RUN)
    (unit,) = run_job(
        Job(run=s3_bucket.url("flat/run.parquet"), qrels=s3_bucket.url("logs/qrels"), evaluation=Evaluation())
    )
    identity = unit.manifest["inputs"]["run"]["identity"]
    head = s3_bucket.client.head_object(Bucket=s3_bucket.name, Key="flat/run.parquet")  # type: ignore[attr-defined]
    assert identity == {
        "kind": "objects",
        "files": [
            {
                "path": s3_bucket.url("flat/run.parquet"),
                "size": RUN.stat().st_size,
                "etag": head["ETag"].strip('"'),
                "version_id": None,
            }
        ],
    }
    assert unit.manifest["inputs"]["qrels"]["identity"]["files"][0]["path"] == s3_bucket.url("logs/qrels/qrels.parquet")


def test_hidden_objects_are_skipped_and_stray_ones_refused(logs: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put("spark/part-0.parquet", RUN)
    for hidden in ("_SUCCESS", ".part-0.parquet.crc", "_temporary/0/part-9.parquet"):
        s3_bucket.put(f"spark/{hidden}", b"not data")
    ok = run_cli("evaluate", "--run", s3_bucket.url("spark"), "--qrels", s3_bucket.url("logs/qrels"), "--json")
    assert ok.returncode == 0, ok.stderr
    s3_bucket.put("spark/notes.txt", b"hello")
    stray = run_cli("evaluate", "--run", s3_bucket.url("spark"), "--qrels", s3_bucket.url("logs/qrels"))
    assert stray.returncode == 3
    assert f"{s3_bucket.url('spark/notes.txt')}: not a Parquet data file name" in stray.stderr


def test_out_keeps_the_users_objects_and_replaces_only_ours(logs: Path, s3_bucket: S3Bucket) -> None:
    arguments = ["evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("logs/qrels")]
    s3_bucket.put("eval/README.txt", b"mine")
    first = run_cli(*arguments, "--partition", f"dt={DAYS[2]}", "--out", s3_bucket.url("eval"), "--out-format", "csv")
    assert first.returncode == 0, first.stderr
    again = run_cli(*arguments, "--partition", f"dt={DAYS[2]}", "--out", s3_bucket.url("eval"))
    assert again.returncode == 0, again.stderr
    assert s3_bucket.keys("eval/") == [
        "eval/README.txt",
        *[
            f"eval/dt={DAYS[2]}/{name}"
            for name in ("_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet")
        ],
    ]  # the CSV files of the first run were ours: replaced; the user's file is kept
    assert s3_bucket.get("eval/README.txt") == b"mine"
    s3_bucket.put(f"theirs/dt={DAYS[2]}/summary.parquet", b"someone else's")
    refused = run_cli(*arguments, "--partition", f"dt={DAYS[2]}", "--out", s3_bucket.url("theirs"))
    assert refused.returncode == 2
    assert "not written by ndcg-pipeline" in refused.stderr
    assert s3_bucket.keys("theirs/") == [f"theirs/dt={DAYS[2]}/summary.parquet"]  # nothing written
    assert s3_bucket.get(f"theirs/dt={DAYS[2]}/summary.parquet") == b"someone else's"
    inside = run_cli(*arguments, "--out", s3_bucket.url("logs/runs/out"))
    assert inside.returncode == 2 and "inside it" in inside.stderr


@pytest.mark.slow  # three jobs publishing to the store
def test_a_failed_publish_leaves_no_success_marker(
    logs: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = s3_bucket.url("eval")
    job = Job(run=s3_bucket.url("flat.parquet"), qrels=s3_bucket.url("logs/qrels"), evaluation=Evaluation(), out=out)
    s3_bucket.put("flat.parquet", RUN)
    run_job(job)
    assert "eval/_SUCCESS" in s3_bucket.keys("eval/")
    calls = []

    def failing_copy(self: objects.ObjectStore, source: str, target: str) -> None:
        calls.append(target)
        if len(calls) == 2:
            raise OutputError(f"cannot write {target}: the store went away")
        original(self, source, target)

    original = objects.ObjectStore.copy
    monkeypatch.setattr(objects.ObjectStore, "copy", failing_copy)
    with pytest.raises(OutputError):
        run_job(job)
    keys = s3_bucket.keys("eval/")
    assert "eval/_SUCCESS" not in keys  # a reader waiting for _SUCCESS does not read the half-published unit
    monkeypatch.setattr(objects.ObjectStore, "copy", original)
    # staging prefixes of killed writers: an old one is removed, a young one may be a live job's
    young = f"eval/_ndcg_staging-{int(time.time())}-aaaaaaaaaaaa/per_query.parquet"
    s3_bucket.put("eval/_ndcg_staging-1000000000-bbbbbbbbbbbb/per_query.parquet", b"killed")
    s3_bucket.put(young, b"uploading")
    run_job(job)  # the next run publishes the unit whole
    assert s3_bucket.keys("eval/") == sorted(
        [young, *[f"eval/{n}" for n in ("_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet")]]
    )


def test_unreachable_or_refused_store_is_exit_3_naming_the_url(
    logs: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = os.environ["AWS_SECRET_ACCESS_KEY"]
    qrels = s3_bucket.url("logs/qrels")
    cases = {
        "s3://no-such-bucket-here/runs": "no such bucket",
        s3_bucket.url("logs/missing.parquet"): "no such object or prefix",
    }
    for url, expected in cases.items():
        result = run_cli("evaluate", "--run", url, "--qrels", qrels)
        assert result.returncode == 3, result.stderr
        assert result.stderr.startswith(f"ndcg: error: {url}: {expected}"), result.stderr
        assert "Traceback" not in result.stderr
    no_bucket = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", "s3://no-such-bucket-here/out")
    assert no_bucket.returncode == 2 and "--out s3://no-such-bucket-here/out: no such bucket" in no_bucket.stderr
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
    refused = run_cli("evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", qrels)
    assert refused.returncode == 3, refused.stderr
    assert f"{s3_bucket.url('logs/runs')}: access denied" in refused.stderr
    assert "wrong-secret-value" not in refused.stderr and secret not in refused.stderr
    cannot_write = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", s3_bucket.url("out"))
    assert cannot_write.returncode == 2, cannot_write.stderr
    assert f"cannot write --out {s3_bucket.url('out')}: " in cannot_write.stderr
    assert "access denied" in cannot_write.stderr
    assert "wrong-secret-value" not in cannot_write.stderr and "Traceback" not in cannot_write.stderr
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on the discard port
    unreachable = run_cli("evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", qrels)
    assert unreachable.returncode == 3, unreachable.stderr
    assert f"{s3_bucket.url('logs/runs')}: the endpoint cannot be reached" in unreachable.stderr
    assert "Traceback" not in unreachable.stderr


def test_text_formats_on_a_store_are_refused_with_what_to_do(s3_bucket: S3Bucket) -> None:
    s3_bucket.put("run.txt", b"q1 Q0 d1 1 1.0 tag\n")
    result = run_cli("evaluate", "--run", s3_bucket.url("run.txt"), "--qrels", s3_bucket.url("run.txt"))
    assert result.returncode == 2 and "read from local files only" in result.stderr


def test_api_reads_the_bucket_as_the_cli_does(logs: Path, s3_bucket: S3Bucket) -> None:
    table = pipeline.per_query(s3_bucket.url(f"logs/runs/dt={DAYS[0]}"), s3_bucket.url("logs/qrels"), k=[10]).collect()
    local = pipeline.per_query(logs / "runs" / f"dt={DAYS[0]}", QRELS, k=[10]).collect()
    assert table.equals(local)
    with pytest.raises(InvalidInput, match="no such object or prefix"):
        pipeline.evaluate(s3_bucket.url("nothing/here"), s3_bucket.url("logs/qrels"))


def test_query_attributes_and_memory_limit_from_the_bucket(logs: Path, s3_bucket: S3Bucket, tmp_path: Path) -> None:
    queries = pl.read_parquet(RUN)["query_id"].unique().sort()
    attributes = tmp_path / "attributes.parquet"
    pl.DataFrame({"query_id": queries, "team": [f"t{i % 3}" for i in range(len(queries))]}).write_parquet(attributes)
    s3_bucket.put("attributes.parquet", attributes)
    s3_bucket.put("flat/run.parquet", RUN)
    common = ["--k", "5", "--group-by", "team", "--memory-limit", "50KB", "--json"]
    local = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--query-attributes", attributes, *common)
    remote = run_cli(
        "evaluate", "--run", s3_bucket.url("flat/run.parquet"), "--qrels", s3_bucket.url("logs/qrels"),
        "--query-attributes", s3_bucket.url("attributes.parquet"), *common,
    )  # fmt: skip
    assert local.returncode == 0 and remote.returncode == 0, remote.stderr
    assert json.loads(remote.stdout)["summary"] == json.loads(local.stdout)["summary"]


def test_compare_writes_its_output_to_the_bucket(logs: Path, s3_bucket: S3Bucket) -> None:
    s3_bucket.put("flat/run.parquet", RUN)
    s3_bucket.put("flat/day.parquet", logs / "runs" / f"dt={DAYS[1]}" / "part-0.parquet")
    result = run_cli(
        "compare", "--run", s3_bucket.url("flat/run.parquet"), "--run", s3_bucket.url("flat/day.parquet"),
        "--qrels", s3_bucket.url("logs/qrels"), "--k", "5", "--permutations", "50", "--bootstrap", "50",
        "--out", s3_bucket.url("cmp"),
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert s3_bucket.keys("cmp/") == ["cmp/comparison.parquet", "cmp/deltas.parquet", "cmp/manifest.json"]
    assert not Path("s3:").exists()


def test_unlistable_urls_say_what_works(tmp_path: Path) -> None:
    """hf:// files go to Polars one by one; nothing there is listed or written (no network needed)."""
    glob = run_cli("evaluate", "--run", "hf://datasets/someone/logs/*.parquet", "--qrels", QRELS)
    assert glob.returncode == 2 and "cannot be listed here: name each file" in glob.stderr
    out = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", "hf://datasets/someone/out")
    assert out.returncode == 2 and "outputs are written to s3://" in out.stderr
    assert not (tmp_path / "hf:").exists() and not Path("hf:").exists()


HOSTILE_KEYS = ("sp ace/run 1.parquet", "uni/ränk ü.parquet", "pct/run%201.parquet", "brk/run[1].parquet",
                "hash/run#1.parquet", "q/run?.parquet", "semi/run;drop.parquet")  # fmt: skip


@pytest.mark.slow  # every hostile key, as an object and as a prefix, on both engines: 28 reads of the store
def test_keys_with_spaces_unicode_and_url_characters_are_read_literally(logs: Path, s3_bucket: S3Bucket) -> None:
    expected = {engine: pipeline.evaluate(RUN, QRELS, k=[5], engine=engine).summary for engine in ("polars", "duckdb")}
    for key in HOSTILE_KEYS:
        s3_bucket.put(f"names/{key}", RUN)
        for given in (f"names/{key}", f"names/{key.split('/')[0]}"):  # the object, and its prefix
            for engine, summary in expected.items():
                result = pipeline.evaluate(s3_bucket.url(given), s3_bucket.url("logs/qrels"), k=[5], engine=engine)
                assert result.summary.equals(summary), (key, engine)


def test_judgments_partitioned_like_the_run_in_the_bucket(logs: Path, s3_bucket: S3Bucket) -> None:
    for day in DAYS[1:]:
        s3_bucket.put(f"daily-qrels/dt={day}/part-0.parquet", QRELS)
    arguments = ["evaluate", "--run", s3_bucket.url("logs/runs"), "--qrels", s3_bucket.url("daily-qrels"), "--json"]
    chosen = run_cli(*arguments, "--partition", f"dt={DAYS[2]}")
    assert chosen.returncode == 0, chosen.stderr
    missing = run_cli(*arguments)
    assert missing.returncode == 3
    assert f"{s3_bucket.url('daily-qrels')}/dt={DAYS[0]}: no such folder" in missing.stderr
