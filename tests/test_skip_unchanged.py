"""`ndcg evaluate --skip-unchanged`: a partition whose manifest.json records the same inputs (their
identity: files by size, modification and change times; objects by size, ETag and version id;
Delta tables by version), options and version is left alone; any other is recomputed, and the
job says which and why."""

from __future__ import annotations

import io
import json
import math
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import polars as pl
import pytest

from pipeline import Evaluation
from pipeline.io.identity import differences, identified, identify, same
from pipeline.io.partitions import Partition
from pipeline.job import Job
from pipeline.registry import InputChecks
from pipeline.reuse import recompute_reason, reuse_key, source_digest
from tests.helpers import ROOT, S3Bucket, settle
from tests.helpers import run_cli as run_in_this_process

RUNS, QRELS = ROOT / "data/runs", ROOT / "data/qrels.parquet"
DAYS = ("2026-11-20", "2026-11-21")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """A copy of the sample's two days of hive-partitioned logs, free to change."""
    root = tmp_path / "runs"
    for day in DAYS:
        (root / f"dt={day}").mkdir(parents=True)
        (root / f"dt={day}/part-0.parquet").write_bytes((RUNS / f"dt={day}/part-0.parquet").read_bytes())
    settle(root)  # named in config files too
    return root


def run_cli(*args: object, cwd: Path = ROOT) -> object:
    """The CLI, once the local inputs it is given are settled (the output folder is not an input)."""
    inputs = [cwd / str(arg) for flag, arg in zip(("", *args), args, strict=False) if flag != "--out"]
    settle(*(path for path in inputs if path != cwd and path.exists()))
    return run_in_this_process(*map(str, args), cwd=cwd)


def evaluate(logs: Path, out: Path, *flags: object, qrels: Path = QRELS) -> object:
    return run_cli("evaluate", "--run", logs, "--qrels", qrels, "--k", "5,10", "--out", out, "--skip-unchanged", *flags)


def stamps(out: Path) -> dict[str, int]:
    """The modification time of every output file: a skipped partition's stay as they were."""
    return {str(p.relative_to(out)): p.stat().st_mtime_ns for p in sorted(out.rglob("*")) if p.is_file()}


def test_only_the_changed_day_is_recomputed(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = evaluate(logs, out)
    assert first.returncode == 0, first.stderr
    assert "recomputing partition dt=2026-11-20: never written" in first.stderr
    before = stamps(out)
    # a second night with nothing new: both skipped, no file touched
    second = evaluate(logs, out)
    assert second.returncode == 0, second.stderr
    for day in DAYS:
        assert f"skipped partition dt={day}: unchanged: same inputs, options and version" in second.stderr
        assert f"# partition dt={day}: skipped, unchanged" in second.stdout
    assert stamps(out) == before
    # day 21's logs are rewritten (its first query's scores negated): only day 21 is recomputed
    day21 = logs / "dt=2026-11-21/part-0.parquet"
    changed = pl.read_parquet(day21)
    first_query = changed["query_id"][0]
    changed = changed.with_columns(
        pl.when(pl.col("query_id") == first_query).then(-pl.col("score")).otherwise(pl.col("score")).alias("score")
    )
    changed.write_parquet(day21)
    third = evaluate(logs, out)
    assert third.returncode == 0, third.stderr
    assert "skipped partition dt=2026-11-20" in third.stderr
    assert f"recomputing partition dt=2026-11-21: run changed: changed {day21}" in third.stderr
    after = stamps(out)
    assert {k: v for k, v in after.items() if "2026-11-20" in k} == {
        k: v for k, v in before.items() if "2026-11-20" in k
    }
    assert after["dt=2026-11-21/per_query.parquet"] != before["dt=2026-11-21/per_query.parquet"]
    # and the recomputed day holds the numbers of a plain evaluation of the new logs
    plain = run_cli(
        "evaluate", "--run", logs / "dt=2026-11-21", "--qrels", QRELS, "--k", "5,10", "--out", tmp_path / "p"
    )
    assert plain.returncode == 0, plain.stderr
    recomputed = pl.read_parquet(out / "dt=2026-11-21/per_query.parquet").drop("dt")
    assert recomputed.equals(pl.read_parquet(tmp_path / "p/per_query.parquet"))
    manifest = json.loads((out / "dt=2026-11-21/manifest.json").read_text())
    assert manifest["inputs"]["run"]["identity"] == identify(str(day21))


def test_the_identity_is_recorded_in_the_manifest(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("evaluate", "--run", logs, "--qrels", QRELS, "--out", out).returncode == 0  # without the flag too
    manifest = json.loads((out / "dt=2026-11-20/manifest.json").read_text())
    assert manifest["inputs"]["run"]["identity"]["kind"] == "files"
    [record] = manifest["inputs"]["run"]["identity"]["files"]
    status = os.stat(logs / "dt=2026-11-20/part-0.parquet")
    assert record == {
        "path": str(logs / "dt=2026-11-20/part-0.parquet"),
        "size": status.st_size,
        "mtime_ns": status.st_mtime_ns,
        "ctime_ns": status.st_ctime_ns,
        "device": status.st_dev,
        "inode": status.st_ino,
        "settled": True,  # settled before the CLI identified it (see settle)
    }
    assert manifest["inputs"]["qrels"]["identity"] == identify(str(QRELS))
    assert manifest["settings"]["out_format"] == "parquet"
    # a run without the flag recomputes everything, as always
    again = run_cli("evaluate", "--run", logs, "--qrels", QRELS, "--out", out)
    assert again.returncode == 0 and "skipped partition" not in again.stderr


def test_same_size_and_restored_mtime_is_still_a_change(logs: Path, tmp_path: Path) -> None:
    """A judgment rewritten in place with the same size and its modification time set back: the
    status-change time, which no user can set, still tells it changed."""
    qrels = tmp_path / "qrels.txt"
    lines = [f"{r['query_id']} 0 {r['doc_id']} {r['relevance']}" for r in pl.read_parquet(QRELS).iter_rows(named=True)]
    qrels.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out"
    assert evaluate(logs, out, qrels=qrels).returncode == 0
    status = os.stat(qrels)
    text = qrels.read_text()
    label = next(line for line in text.splitlines() if line.endswith(" 1"))
    tampered = text.replace(label, label[:-1] + "2", 1)  # one label 1 -> 2: same size
    assert len(tampered) == len(text)
    qrels.write_text(tampered)
    os.utime(qrels, ns=(status.st_atime_ns, status.st_mtime_ns))
    assert os.stat(qrels).st_size == status.st_size and os.stat(qrels).st_mtime_ns == status.st_mtime_ns
    result = evaluate(logs, out, qrels=qrels)
    assert result.returncode == 0, result.stderr
    assert "skipped partition" not in result.stderr
    assert result.stderr.count("qrels changed: changed") == 2 and "status changed " in result.stderr
    assert "ctime_ns" not in result.stderr  # the stamps in words and dates, not nanoseconds


def test_another_file_with_the_same_size_and_times_is_a_change(tmp_path: Path, monkeypatch) -> None:
    """File times tick every few milliseconds: two data sets written by one script carry the
    same times, and a relative path names the other one from another directory. The device and
    inode tell the files apart (the times are pinned here, as one clock tick would make them)."""
    for name, labels in (("a", [1, 2]), ("b", [2, 1])):  # one label swapped: the same size
        (tmp_path / name).mkdir()
        pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d2"], "relevance": labels}).write_parquet(
            tmp_path / name / "qrels.parquet"
        )
    real_stat = os.stat

    def one_tick(path: object, *args: object, **kwargs: object) -> object:
        status = real_stat(path, *args, **kwargs)  # type: ignore[arg-type]
        fields = {name: getattr(status, name) for name in ("st_size", "st_dev", "st_ino")}
        return type("Status", (), {**fields, "st_mtime_ns": 1, "st_ctime_ns": 1})()

    monkeypatch.setattr("pipeline.io.identity.os", SimpleNamespace(stat=one_tick, PathLike=os.PathLike))
    monkeypatch.chdir(tmp_path / "a")
    first = identify("qrels.parquet")
    monkeypatch.chdir(tmp_path / "b")
    second = identify("qrels.parquet")
    assert first["files"][0]["size"] == second["files"][0]["size"]
    assert not same(first, second)
    assert differences(first, second) == [
        f"changed qrels.parquet (inode {first['files'][0]['inode']} -> {second['files'][0]['inode']})"
    ]


def test_a_relative_run_from_another_directory_is_recomputed(tmp_path: Path) -> None:
    """The same relative --run and --qrels from two directories, one --out: the second
    directory's data is evaluated, never the first one's outputs kept."""
    for name, labels in (("a", [1, 2]), ("b", [2, 1])):
        (tmp_path / name / "runs").mkdir(parents=True)
        pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["d1", "d2", "d3"], "score": [3.0, 2.0, 1.0]}).write_parquet(
            tmp_path / name / "runs/part-0.parquet"
        )
        pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["d1", "d3"], "relevance": labels}).write_parquet(
            tmp_path / name / "qrels.parquet"
        )
    out = tmp_path / "out"
    for name in ("a", "b"):
        result = run_cli(
            "evaluate", "--run", "runs", "--qrels", "qrels.parquet", "--out", out, "--skip-unchanged",
            cwd=tmp_path / name,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert "recomputing the output" in result.stderr
    ndcg = pl.read_parquet(out / "per_query.parquet").filter(pl.col("k").is_null())["ndcg"].item()
    assert ndcg == pytest.approx((2 + 1 / 2) / (2 + 1 / math.log2(3)))


@pytest.mark.parametrize(
    ("flags", "reason"),
    [
        (("--k", "10"), "options changed: cutoffs"),
        (("--gain", "exponential"), "options changed: gain"),
        (("--out-format", "csv"), "settings changed: out_format"),
    ],
)
def test_other_options_recompute(logs: Path, tmp_path: Path, flags: tuple[str, ...], reason: str) -> None:
    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    result = evaluate(logs, out, *flags)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count(reason) == 2 and "skipped partition" not in result.stderr


def test_the_engine_is_no_change(logs: Path, tmp_path: Path) -> None:
    # the engines agree to 1e-9 (tested): the outputs of one are current for the other
    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    result = evaluate(logs, out, "--engine", "duckdb")
    assert result.returncode == 0 and result.stderr.count("skipped partition") == 2


def test_missing_outputs_and_new_partitions(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    (out / "dt=2026-11-20/per_query.parquet").unlink()
    (logs / "dt=2026-11-22").mkdir()
    (logs / "dt=2026-11-22/part-0.parquet").write_bytes((logs / "dt=2026-11-21/part-0.parquet").read_bytes())
    result = evaluate(logs, out)
    assert result.returncode == 0, result.stderr
    assert "recomputing partition dt=2026-11-20: output(s) missing: per_query.parquet" in result.stderr
    assert "skipped partition dt=2026-11-21" in result.stderr
    assert "recomputing partition dt=2026-11-22: never written" in result.stderr
    assert (out / "dt=2026-11-20/per_query.parquet").exists() and (out / "dt=2026-11-22/_SUCCESS").exists()
    # a partition folder removed whole is recomputed
    for path in (out / "dt=2026-11-21").iterdir():
        path.unlink()
    (out / "dt=2026-11-21").rmdir()
    again = evaluate(logs, out)
    assert again.returncode == 0 and "recomputing partition dt=2026-11-21: never written" in again.stderr


@pytest.mark.parametrize("manifest", ["{not json", "[1, 2]", "", '{"outputs": ["per_query.parquet"]}'])
def test_a_corrupt_manifest_is_refused_before_anything_runs(logs: Path, tmp_path: Path, manifest: str) -> None:
    """A manifest that is not readable JSON of ours: the partition must be recomputed, but its
    files can no longer be told from the user's, and only files of ours are ever replaced: exit 2
    naming it, before anything is evaluated, every output as it was."""
    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    (out / "dt=2026-11-20/manifest.json").write_text(manifest)
    (logs / "dt=2026-11-21/part-0.parquet").touch()  # day 21 would be recomputed
    before = {path: path.read_bytes() for path in out.rglob("*") if path.is_file()}
    result = evaluate(logs, out)
    assert result.returncode == 2, result.stderr
    assert "dt=2026-11-20/manifest.json" in result.stderr and "must be recomputed" in result.stderr
    assert "Traceback" not in result.stderr
    assert {path: path.read_bytes() for path in out.rglob("*") if path.is_file()} == before
    # once the folder is moved away, the rerun recomputes it
    (out / "dt=2026-11-20").rename(tmp_path / "kept")
    assert evaluate(logs, out).returncode == 0 and (out / "dt=2026-11-20/_SUCCESS").exists()


def test_manifest_removed_but_outputs_left_is_refused_by_the_writer(logs: Path, tmp_path: Path) -> None:
    # without our manifest the remaining files are the user's as far as anyone can tell: kept, exit 2
    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    (out / "dt=2026-11-20/manifest.json").unlink()
    result = evaluate(logs, out)
    assert result.returncode == 2
    assert "recomputing partition dt=2026-11-20: no manifest.json in" in result.stderr
    assert "was not written by ndcg-pipeline" in result.stderr
    assert (out / "dt=2026-11-20/per_query.parquet").exists()


def test_config_key_and_usage_errors(logs: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    config = tmp_path / "eval.toml"
    config.write_text(f'run = "{logs}"\nqrels = "{QRELS}"\nout = "{out}"\nskip-unchanged = true\n')
    assert run_cli("evaluate", "--config", config).returncode == 0
    again = run_cli("evaluate", "--config", config)
    assert again.returncode == 0 and again.stderr.count("skipped partition") == 2
    no_out = run_cli("evaluate", "--run", logs, "--qrels", QRELS, "--skip-unchanged")
    assert no_out.returncode == 2 and "--skip-unchanged needs a local --out" in no_out.stderr
    # --json lists what was skipped
    payload = json.loads(run_cli("evaluate", "--config", config, "--json").stdout)
    assert [s["partition"] for s in payload["skipped"]] == [f"dt={d}" for d in DAYS] and payload["units"] == []


def test_unpartitioned_output_and_the_library(tmp_path: Path) -> None:
    run = tmp_path / "run.parquet"
    run.write_bytes((ROOT / "data/run.parquet").read_bytes())
    out = tmp_path / "out"
    flags = ("--skip-unchanged", "--k", "10")
    assert run_cli("evaluate", "--run", run, "--qrels", QRELS, "--out", out, *flags).returncode == 0
    result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--out", out, *flags)
    assert result.returncode == 0 and "skipped the output: unchanged" in result.stderr
    # the pieces: the key of a unit, and why it would be recomputed
    checks = InputChecks(allow_fractional_labels=False, warn_results_over=1000)  # the CLI's defaults
    job = Job(run=str(run), qrels=str(QRELS), evaluation=Evaluation(cutoffs=(10,)), out=str(out), checks=checks)
    key = reuse_key(job, str(run), str(QRELS))
    assert recompute_reason(out, None, key) is None
    assert recompute_reason(out, None, {**key, "version": "9.9.9"}) == (
        f"ndcg-pipeline version changed: {key['version']} -> 9.9.9"
    )
    # a checkout or an editable install: the code changes under the same version number
    assert key["source"] == source_digest()
    assert json.loads((out / "manifest.json").read_text())["versions"]["ndcg-pipeline-source"] == key["source"]
    assert recompute_reason(out, None, {**key, "source": "0123456789abcdef"}) == (
        f"ndcg-pipeline's code changed (ndcg-pipeline-source {key['source']} -> 0123456789abcdef)"
    )
    assert recompute_reason(out, Partition((("dt", "x"),)), key) == "never written"


def test_a_change_of_the_code_under_the_same_version_recomputes(tmp_path: Path) -> None:
    """The digest covers every Python file of the package and every SQL step: one byte of either
    is another digest (computed on a copy of the package, so the real one is untouched)."""
    from pipeline import reuse

    copy = tmp_path / "pkg"
    shutil.copytree(Path(reuse.__file__).parent, copy / "pipeline")
    shutil.copytree(ROOT / "sql", copy / "sql")
    script = (
        "import sys; sys.path.insert(0, sys.argv[1]); import pipeline.reuse as j; "
        "assert j.__file__.startswith(sys.argv[1]), j.__file__; print(j.source_digest())"
    )

    def digest() -> str:
        import subprocess
        import sys

        done = subprocess.run([sys.executable, "-c", script, str(copy)], capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    first = digest()
    assert first == source_digest()
    step = next((copy / "sql").glob("*.sql"))
    step.write_text(step.read_text() + "\n-- a comment\n")
    second = digest()
    assert second != first
    (copy / "pipeline/aggregate.py").write_text((copy / "pipeline/aggregate.py").read_text() + "\n")
    assert digest() not in (first, second)


def test_identity_helpers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.txt"
    path.write_text("x")
    monkeypatch.setattr("pipeline.io.identity.SETTLING_NS", 0)  # settled at once (tested below)
    first = identify(str(path))
    [record] = first["files"]
    assert identified(first) and same(first, first)
    assert not identified({"kind": "unknown"}) and not identified(identify(pl.LazyFrame({"a": [1]})))
    assert differences(first, first) == []
    assert differences(None, first) == ["no identity recorded"]
    assert differences({"kind": "unknown"}, first) == ["not identified before (unknown)"]
    assert differences({"kind": "files", "files": []}, first) == [f"added {path}"]
    assert differences(first, {"kind": "files", "files": []}) == [f"removed {path}"]
    grown = {"kind": "files", "files": [{**record, "size": 2}]}
    assert differences(first, grown) == [f"changed {path} (size 1 byte -> 2 bytes)"]
    table = {"kind": "delta", "table": "t", "id": "a1", "version": 3}
    assert same(table, dict(table)) and differences(table, {**table, "version": 4}) == ["table t version 3 -> 4"]
    assert differences(table, {**table, "id": "b2"}) == ["table t is another table (id a1 -> b2)"]
    assert not identified({"kind": "delta", "table": "t", "version": 3})  # recorded before the id was
    assert differences(first, table) == ["was files, now delta"]
    # an object is unchanged by its ETag or version id; with neither it is never the same
    blind = {"kind": "objects", "files": [{"path": "s3://b/k", "size": 1, "etag": None, "version_id": None}]}
    assert not identified(blind) and not same(blind, dict(blind))


def test_an_edited_output_is_recomputed_not_kept(logs: Path, tmp_path: Path) -> None:
    """The manifest records the sha256 of each output as written; an output edited since (by hand,
    by another tool, or damaged) no longer matches, and its unit is recomputed, never kept."""
    import hashlib

    out = tmp_path / "out"
    assert evaluate(logs, out).returncode == 0
    day = out / f"dt={DAYS[0]}"
    manifest = json.loads((day / "manifest.json").read_text())
    assert manifest["output_digests"] == {
        name: "sha256:" + hashlib.sha256((day / name).read_bytes()).hexdigest() for name in manifest["outputs"]
    }
    written = pl.read_parquet(day / "per_query.parquet")
    written.with_columns(pl.col("ndcg") * 0 + 1).write_parquet(day / "per_query.parquet")  # every query "perfect"
    result = evaluate(logs, out)
    assert result.returncode == 0, result.stderr
    assert f"recomputing partition dt={DAYS[0]}: output(s) changed since written: per_query.parquet" in result.stderr
    assert f"skipped partition dt={DAYS[1]}: unchanged" in result.stderr
    assert pl.read_parquet(day / "per_query.parquet").equals(written)
    # a manifest without digests (an earlier version's) cannot vouch for its outputs
    manifest = json.loads((day / "manifest.json").read_text())
    del manifest["output_digests"]
    (day / "manifest.json").write_text(json.dumps(manifest))
    result = evaluate(logs, out)
    assert result.returncode == 0, result.stderr
    assert "outputs not verifiable: manifest.json records no output_digests (written by an earlier version)" in (
        result.stderr
    )
    assert f"skipped partition dt={DAYS[1]}: unchanged" in result.stderr


def evaluated_once(tmp_path: Path) -> tuple[Path, Path, Job]:
    """A copy of the sample run evaluated by the CLI at k=10 into ``tmp_path/out``, and the job
    that would evaluate it again from the library (with the CLI's default checks)."""
    run = tmp_path / "run.parquet"
    run.write_bytes((ROOT / "data/run.parquet").read_bytes())
    out = tmp_path / "out"
    assert run_cli("evaluate", "--run", run, "--qrels", QRELS, "--out", out, "--k", "10").returncode == 0
    checks = InputChecks(allow_fractional_labels=False, warn_results_over=1000)  # the CLI's defaults
    job = Job(run=str(run), qrels=str(QRELS), evaluation=Evaluation(cutoffs=(10,)), out=str(out), checks=checks)
    return run, out, job


def test_outputs_that_cannot_vouch_for_themselves_are_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An output replaced by a link (even to the same bytes), one that cannot be read, or a manifest
    naming files outside its folder: the unit is recomputed, with a reason, never an internal error,
    and nothing outside the folder is read."""
    from pipeline import reuse

    run, out, job = evaluated_once(tmp_path)
    key = reuse_key(job, str(run), str(QRELS))
    assert recompute_reason(out, None, key) is None
    manifest_text = (out / "manifest.json").read_text()
    # the manifest names a file beside the folder and one by absolute path, with their true digests
    outside = tmp_path / "outside.txt"
    outside.write_text("not an output")
    manifest = json.loads(manifest_text)
    foreign = [str(Path("..") / "outside.txt"), str(outside)]  # the parent folder, and an absolute path
    manifest["outputs"] += foreign
    manifest["output_digests"].update({name: reuse.file_digest(outside) for name in foreign})
    (out / "manifest.json").write_text(json.dumps(manifest))
    read: list[Path] = []
    monkeypatch.setattr(reuse, "file_digest", lambda path: read.append(path) or "sha256:x")
    assert recompute_reason(out, None, key) == f"manifest.json lists output(s) outside {out}: {', '.join(foreign)}"
    assert read == []
    monkeypatch.undo()
    (out / "manifest.json").write_text(manifest_text)
    # an output replaced by a link to a copy of itself
    summary = out / "summary.parquet"
    copy = tmp_path / "summary-copy.parquet"
    copy.write_bytes(summary.read_bytes())
    summary.unlink()
    summary.symlink_to(copy)
    assert recompute_reason(out, None, key) == (
        "output(s) changed since written: summary.parquet (a symbolic link now)"
    )
    summary.unlink()
    summary.write_bytes(copy.read_bytes())
    assert recompute_reason(out, None, key) is None

    # an output that cannot be read (as root, permissions do not stop a read: the error is simulated)
    def unreadable(path: Path) -> str:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(reuse, "file_digest", unreadable)
    assert recompute_reason(out, None, key) == (
        "output(s) changed since written: per_query.parquet (Permission denied), summary.parquet (Permission denied)"
    )


def test_an_input_changed_just_now_is_said_so(tmp_path: Path) -> None:
    """A file changed within a clock tick of the run is recomputed, with that reason: not "cannot be
    identified: always recomputed", since the next run identifies it."""
    run, out, job = evaluated_once(tmp_path)
    assert recompute_reason(out, None, reuse_key(job, str(run), str(QRELS))) is None
    run.write_bytes(run.read_bytes())
    reason = recompute_reason(out, None, reuse_key(job, str(run), str(QRELS)))
    if identify(str(run))["files"][0]["settled"]:  # (a machine stalled for 100 ms after the write)
        assert reason is not None and reason.startswith(f"run changed: changed {run}")
    else:
        assert reason == f"run changed: {run} changed just now (within a clock tick of this run)"
    settle(run)
    assert recompute_reason(out, None, reuse_key(job, str(run), str(QRELS))).startswith(f"run changed: changed {run}")


def test_a_file_changed_just_before_it_is_read_is_recomputed_next_time(logs: Path, tmp_path: Path) -> None:
    """A rewrite in place, same size, in the clock tick after the job identified the file leaves
    its size and times as recorded: so a file changed within 100 ms of being identified is
    recorded unsettled, and its unit is recomputed on the next run, whatever its stamps say."""
    qrels = tmp_path / "qrels.parquet"
    qrels.write_bytes(QRELS.read_bytes())
    out = tmp_path / "out"
    assert evaluate(logs, out, qrels=qrels).returncode == 0
    manifest = json.loads((out / "dt=2026-11-20/manifest.json").read_text())
    # settled before the CLI identified it (see settle)
    assert [r["settled"] for r in manifest["inputs"]["qrels"]["identity"]["files"]] == [True]
    # as if the job had identified the judgments within a tick of their last write, and a
    # same-size rewrite had followed in that tick (so that no stamp moved)
    for day in DAYS:
        path = out / f"dt={day}/manifest.json"
        manifest = json.loads(path.read_text())
        for record in manifest["inputs"]["qrels"]["identity"]["files"]:
            record["settled"] = False
        path.write_text(json.dumps(manifest))
    result = evaluate(logs, out, qrels=qrels)
    assert result.returncode == 0, result.stderr
    assert "skipped partition" not in result.stderr
    assert result.stderr.count(f"qrels changed: {qrels} had changed just before it was read last time") == 2
    # recomputed, with the file settled now: the next run skips both days
    again = evaluate(logs, out, qrels=qrels)
    assert again.returncode == 0 and again.stderr.count("skipped partition") == 2, again.stderr


def test_settled_means_older_than_a_few_clock_ticks(tmp_path: Path) -> None:
    from pipeline.io.identity import SETTLING_NS, SETTLING_WHOLE_SECONDS_NS, _settled

    second = 1_000_000_000
    now = 1_800_000_000 * second + 123_456_789
    assert _settled(now - SETTLING_NS, now - SETTLING_NS, now)
    assert not _settled(now - SETTLING_NS + 1, now - 5 * second, now)  # written within 100 ms
    assert not _settled(now - 5 * second, now + second, now)  # a modification time in the future
    # whole-second stamps (ext3, FAT, some network file systems): a rewrite within the same
    # second (FAT: two seconds) keeps them, so 2.1 s must pass
    stamp = (now // second - 1) * second  # 1.12 s ago
    assert now - stamp < SETTLING_WHOLE_SECONDS_NS and not _settled(stamp, stamp, now)
    assert _settled(stamp - 2 * second, stamp - 2 * second, now)  # 3.12 s ago
    # a file just written is unsettled: never the same as itself, and the reason says why
    path = tmp_path / "a.txt"
    path.write_text("x")
    fresh = identify(str(path))
    if not fresh["files"][0]["settled"]:  # (a machine stalled for 100 ms after the write settles it)
        assert not identified(fresh) and not same(fresh, fresh)
        assert differences(fresh, fresh) == [
            f"{path} had changed just before it was read last time: "
            "a change in the same clock tick would not show in its times"
        ]
    # a record from before the field existed is recomputed once
    old = {"kind": "files", "files": [{k: v for k, v in fresh["files"][0].items() if k != "settled"}]}
    assert not identified(old)
    assert differences(old, fresh) == ["identity recorded by an earlier version (without settled stamps)"]


def _negate_first_query(data: bytes) -> bytes:
    frame = pl.read_parquet(io.BytesIO(data))
    first = frame["query_id"][0]
    frame = frame.with_columns(
        pl.when(pl.col("query_id") == first).then(-pl.col("score")).otherwise(pl.col("score")).alias("score")
    )
    buffer = io.BytesIO()
    frame.write_parquet(buffer)
    return buffer.getvalue()


def test_objects_unchanged_are_skipped_and_rewritten_ones_recomputed(
    logs: Path, tmp_path: Path, s3_bucket: S3Bucket
) -> None:
    """Hive-partitioned logs in a versioned bucket of the tests' S3 server: an unchanged day is
    skipped by its objects' size, ETag and version id; a day whose object was rewritten (other
    bytes: a new ETag; the same bytes: a new version id) is recomputed."""
    s3_bucket.client.put_bucket_versioning(  # type: ignore[attr-defined]
        Bucket=s3_bucket.name, VersioningConfiguration={"Status": "Enabled"}
    )
    s3_bucket.put_tree("runs", logs)
    s3_bucket.put("qrels.parquet", QRELS)
    out = tmp_path / "out"
    flags = ("--run", s3_bucket.url("runs"), "--qrels", s3_bucket.url("qrels.parquet"), "--k", "5,10")
    first = run_cli("evaluate", *flags, "--out", out, "--skip-unchanged")
    assert first.returncode == 0, first.stderr
    assert first.stderr.count("never written") == 2
    manifest = json.loads((out / "dt=2026-11-21/manifest.json").read_text())
    assert manifest["inputs"]["run"]["identity"]["kind"] == "objects"
    before = stamps(out)
    second = run_cli("evaluate", *flags, "--out", out, "--skip-unchanged")
    assert second.returncode == 0, second.stderr
    assert second.stderr.count("skipped partition") == 2 and stamps(out) == before
    # day 21's object rewritten with other bytes: only day 21 is recomputed, from the new bytes
    key21 = "runs/dt=2026-11-21/part-0.parquet"
    s3_bucket.put(key21, _negate_first_query(s3_bucket.get(key21)))
    third = run_cli("evaluate", *flags, "--out", out, "--skip-unchanged")
    assert third.returncode == 0, third.stderr
    assert "skipped partition dt=2026-11-20" in third.stderr
    assert f"recomputing partition dt=2026-11-21: run changed: changed {s3_bucket.url(key21)} (etag " in third.stderr
    after = stamps(out)
    assert {k: v for k, v in after.items() if "2026-11-20" in k} == {
        k: v for k, v in before.items() if "2026-11-20" in k
    }
    plain = tmp_path / "day21.parquet"
    plain.write_bytes(s3_bucket.get(key21))
    expected = run_cli("evaluate", "--run", plain, "--qrels", QRELS, "--k", "5,10", "--out", tmp_path / "p")
    assert expected.returncode == 0, expected.stderr
    recomputed = pl.read_parquet(out / "dt=2026-11-21/per_query.parquet").drop("dt")
    assert recomputed.equals(pl.read_parquet(tmp_path / "p/per_query.parquet"))
    # day 20's object rewritten with the same bytes: the same ETag, a new version id: recomputed
    key20 = "runs/dt=2026-11-20/part-0.parquet"
    s3_bucket.put(key20, s3_bucket.get(key20))
    fourth = run_cli("evaluate", *flags, "--out", out, "--skip-unchanged")
    assert fourth.returncode == 0, fourth.stderr
    assert "skipped partition dt=2026-11-21" in fourth.stderr
    assert f"recomputing partition dt=2026-11-20: run changed: changed {s3_bucket.url(key20)} (version_id " in (
        fourth.stderr
    )


def test_a_delta_table_is_unchanged_while_its_version_is(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake", reason="the Delta tests need the deltalake package")
    table = tmp_path / "table"
    run = pl.read_parquet(ROOT / "data/run.parquet")
    deltalake.write_deltalake(str(table), run.to_arrow())
    out = tmp_path / "out"
    flags = ("--run", table, "--qrels", QRELS, "--k", "10", "--out", out, "--skip-unchanged")
    first = run_cli("evaluate", *flags)
    assert first.returncode == 0 and "recomputing the output: never written" in first.stderr, first.stderr
    second = run_cli("evaluate", *flags)
    assert second.returncode == 0 and "skipped the output: unchanged" in second.stderr, second.stderr
    deltalake.write_deltalake(str(table), run.head(100).to_arrow(), mode="overwrite")  # version 1
    third = run_cli("evaluate", *flags)
    assert third.returncode == 0, third.stderr
    assert f"recomputing the output: run changed: table {table} version 0 -> 1" in third.stderr
    assert json.loads((out / "manifest.json").read_text())["inputs"]["run"]["identity"] == {
        "kind": "delta",
        "table": str(table),
        "id": deltalake.DeltaTable(str(table)).metadata().id,
        "version": 1,
    }
    # the table deleted and written again: version 0 again, but another table (its log's id)
    recreated = run_cli("evaluate", *flags)
    assert recreated.returncode == 0 and "skipped the output" in recreated.stderr, recreated.stderr
    shutil.rmtree(table)
    deltalake.write_deltalake(str(table), run.with_columns(-pl.col("score")).to_arrow())
    deltalake.write_deltalake(str(table), run.head(100).with_columns(-pl.col("score")).to_arrow(), mode="overwrite")
    again = run_cli("evaluate", *flags)
    assert again.returncode == 0, again.stderr
    assert f"recomputing the output: run changed: table {table} is another table (id " in again.stderr
    plain = run_cli("evaluate", "--run", table, "--qrels", QRELS, "--k", "10", "--out", tmp_path / "plain")
    assert plain.returncode == 0, plain.stderr
    assert pl.read_parquet(out / "per_query.parquet").equals(pl.read_parquet(tmp_path / "plain/per_query.parquet"))
