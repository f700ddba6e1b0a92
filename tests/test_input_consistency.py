"""An input that changes while the job reads it is refused, never scored from two versions.

The engines read an input by its name, more than once: validation reads it, then the engine
(DuckDB opens the Parquet files itself), then the job counts its rows and reads its groups for
the manifest. Each input is identified before the first read and after the last
(:mod:`pipeline.io.identity`), and a change is refused with exit 3, naming the file, before
anything is written. The changes are made deterministically, by a hook between validation and
the engine (or after the engine), as a writer replacing the file at that moment would.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import pipeline
from pipeline import Evaluation
from pipeline.cli import main
from pipeline.engines import DuckDBEngine, PolarsEngine
from pipeline.io.identity import ChangedWhileRead, changed_while_read, identify, refuse_changed
from pipeline.job import Job, run_job
from tests.helpers import S3Bucket

QRELS = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
# validated: a ranked first, the one relevant document, so NDCG 1 at every cutoff
RUN = pl.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
# the version written meanwhile: a repeated twice, which validation refuses (duplicates are an
# error by default) and which, scored unchecked, counts its gain twice: DCG 1 + 1/log2(3) over
# IDCG 1, NDCG 1.63
DUPLICATED = pl.DataFrame({"query_id": ["q1", "q1", "q1"], "doc_id": ["a", "a", "c"], "score": [3.0, 2.0, 1.0]})


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    RUN.write_parquet(run)
    QRELS.write_parquet(qrels)
    return run, qrels


def _replace_by_rename(path: Path) -> None:
    """A writer's atomic swap: another file renamed over the name (a new inode)."""
    staged = path.with_name(f".{path.name}.new")
    DUPLICATED.write_parquet(staged)
    os.replace(staged, path)


def _rewrite_in_place(path: Path) -> None:
    """The same inode written again, its modification time set back (``cp -p``, ``rsync -t``)."""
    status = path.stat()
    data = path.read_bytes()
    path.write_bytes(data[::-1])  # the same size, other bytes
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))


def _before_engine(monkeypatch: pytest.MonkeyPatch, engine: type, change: Callable[[], None]) -> list[int]:
    """Make ``change`` once, after validation and before ``engine`` computes; the calls counted."""
    original = engine.compute
    calls: list[int] = []

    def compute(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not calls:
            change()
        calls.append(1)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(engine, "compute", compute)
    return calls


@pytest.mark.parametrize("engine", [PolarsEngine, DuckDBEngine])
@pytest.mark.parametrize("change", [_replace_by_rename, _rewrite_in_place])
def test_a_file_changed_between_validation_and_the_engine_is_refused(
    files: tuple[Path, Path], engine: type, change: Callable[[Path], None], monkeypatch: pytest.MonkeyPatch
) -> None:
    run, qrels = files
    calls = _before_engine(monkeypatch, engine, lambda: change(run))
    with pytest.raises(ChangedWhileRead, match="changed while it was read") as raised:
        pipeline.evaluate(run, qrels, engine=engine.name)
    assert str(run) in str(raised.value) and "run again" in str(raised.value)
    assert calls == [1]  # the engine did compute: the check is after its last read


def test_the_command_line_exits_3_and_writes_nothing(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The reported case: the run replaced by a version with a duplicated document while the job
    ran scored NDCG 1.5 with exit 0. Now exit 3, the file named, no output folder."""
    run, qrels = files
    out = tmp_path / "out"
    _before_engine(monkeypatch, DuckDBEngine, lambda: _replace_by_rename(run))
    code = main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--engine", "duckdb", "--out", str(out)])
    stderr = capsys.readouterr().err
    assert code == 3, stderr
    assert str(run) in stderr and "changed while it was read" in stderr and "nothing was written" in stderr
    assert not out.exists()
    # run again, the version now in place is read whole, and its duplicate refused by validation
    monkeypatch.undo()
    assert main(["evaluate", "--run", str(run), "--qrels", str(qrels), "--engine", "duckdb", "--out", str(out)]) == 3
    assert "duplicate" in capsys.readouterr().err.lower()
    assert not out.exists()


def test_a_change_after_the_engine_read_the_groups_is_refused_by_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job reads the run again after the engine (its groups, its row count): it identifies
    its inputs once more after those reads."""
    import pipeline.job as job_module

    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    RUN.with_columns(topic=pl.lit("t")).write_parquet(run)
    QRELS.write_parquet(qrels)
    original = job_module.query_groups

    def query_groups(*args: Any, **kwargs: Any) -> pl.DataFrame:
        groups = original(*args, **kwargs)
        RUN.with_columns(topic=pl.lit("u")).write_parquet(run)
        return groups

    monkeypatch.setattr(job_module, "query_groups", query_groups)
    job = Job(run=str(run), qrels=str(qrels), evaluation=Evaluation(), group_by=("topic",), out=str(tmp_path / "o"))
    with pytest.raises(ChangedWhileRead, match="changed while it was read"):
        run_job(job)
    assert not (tmp_path / "o").exists()


def test_a_file_added_to_a_folder_while_it_is_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder, qrels = tmp_path / "runs", tmp_path / "qrels.parquet"
    folder.mkdir()
    RUN.write_parquet(folder / "part-0.parquet")
    QRELS.write_parquet(qrels)
    _before_engine(monkeypatch, PolarsEngine, lambda: DUPLICATED.write_parquet(folder / "part-1.parquet"))
    with pytest.raises(ChangedWhileRead, match=r"runs \(added .*part-1.parquet\): changed while it was read"):
        pipeline.evaluate(folder, qrels)


def test_an_unchanged_input_just_written_is_not_refused(files: tuple[Path, Path]) -> None:
    """A file written a moment before the run is identified as unsettled first and settled at
    the end: not a change (``settled`` says how old the file was, not what it holds)."""
    run, qrels = files
    RUN.write_parquet(run)  # now, so unsettled when first identified
    before = identify(str(run))
    assert before["files"][0]["settled"] is False
    settled = {**before, "files": [{**before["files"][0], "settled": True}]}
    assert changed_while_read(before, settled) == []
    refuse_changed({"run": before}, {"run": settled})
    result = pipeline.evaluate(run, qrels, k=3)
    assert result.per_query.filter(pl.col("k") == 3)["ndcg"].to_list() == pytest.approx([1.0])


def test_inputs_that_cannot_be_identified_are_not_checked(files: tuple[Path, Path]) -> None:
    """Frames have no identity to compare: never refused; a file gone by the end is."""
    run, qrels = files
    assert changed_while_read({"kind": "unknown"}, {"kind": "unknown"}) == []
    assert pipeline.evaluate(pl.read_parquet(run), pl.read_parquet(qrels), k=3).per_query.height == 2
    assert changed_while_read(identify(str(run)), {"kind": "unknown"}) == ["can no longer be read"]


@pytest.mark.timeout(120)
def test_an_object_rewritten_in_the_bucket_while_it_is_read_is_refused(
    files: tuple[Path, Path], tmp_path: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The reported torn read (queries scored from two versions of an object): the object's
    ETag is taken before the first read and after the last; a rewrite in between is refused."""
    run, qrels = files
    s3_bucket.put("run.parquet", run)
    s3_bucket.put("qrels.parquet", qrels)
    duplicated = tmp_path / "duplicated.parquet"
    DUPLICATED.write_parquet(duplicated)
    url = s3_bucket.url("run.parquet")
    _before_engine(monkeypatch, PolarsEngine, lambda: s3_bucket.put("run.parquet", duplicated))
    out = tmp_path / "out"
    job = Job(run=url, qrels=s3_bucket.url("qrels.parquet"), evaluation=Evaluation(), out=str(out))
    with pytest.raises(ChangedWhileRead, match=f"{url} .*etag.*changed while it was read"):
        run_job(job)
    assert not out.exists()
