"""Staging folders never outlive the writers that made them, and a user's folder is never taken
for one.

A kill during the clean-up after the swap left a staging folder that no later run removed (its
manifest, which says it is ours, could go first), and ``--out`` on a mount point failed at the
swap and left its staging folder beside it. Kills are simulated in this process by an exception
raised at the chosen step (what is on disk is what a SIGKILL there would leave); a mount point by
renames that fail with ``EBUSY``/``EXDEV`` as the kernel's do.
"""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import pipeline.io.publish as publish
from pipeline.api import make_evaluation
from pipeline.io.manifest import MANIFEST, SUCCESS
from pipeline.job import Job, run_job
from tests.helpers import ROOT

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


class Killed(BaseException):
    """What a SIGKILL is to the code under test: nothing after it runs (no except, no finally
    that catches Exception)."""


def _evaluate(out: Path, k: int, run: Path = RUN, **options: Any) -> None:
    run_job(Job(run=str(run), qrels=str(QRELS), evaluation=make_evaluation(k=k), out=str(out), **options))


def _cutoffs(unit: Path) -> set[int]:
    assert (unit / SUCCESS).is_file()
    manifest = json.loads((unit / MANIFEST).read_text())
    for name in manifest["outputs"]:
        assert (unit / name).is_file()
    return {k for k in pl.read_parquet(unit / "summary.parquet")["k"].to_list() if k is not None}


def _staging(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith((".staging-", ".ndcg-staging-")))


def _kill_during_clean_up(monkeypatch: pytest.MonkeyPatch, after: int) -> list[str]:
    """Kill the writer after it cleaned ``after`` entries of the old unit swapped out."""
    original = publish._retire_entry
    cleaned: list[str] = []

    def retire_entry(entry: Path, twin: Path, ours: bool) -> None:
        if len(cleaned) == after:
            raise Killed
        cleaned.append(entry.name)
        original(entry, twin, ours)

    monkeypatch.setattr(publish, "_retire_entry", retire_entry)
    return cleaned


@pytest.mark.parametrize("after", [0, 1, 2, 3])
def test_a_kill_during_the_clean_up_is_finished_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int
) -> None:
    out = tmp_path / "out"
    _evaluate(out, 5)
    cleaned = _kill_during_clean_up(monkeypatch, after)
    with pytest.raises(Killed):
        _evaluate(out, 10)
    assert _cutoffs(out) == {10}  # swapped: the new unit is whole
    (leftover,) = _staging(tmp_path)
    # the manifest goes last: what is left is still recognisably ours
    assert MANIFEST not in cleaned and (tmp_path / leftover / MANIFEST).is_file()
    monkeypatch.undo()
    _evaluate(out, 20)
    assert _cutoffs(out) == {20}
    assert _staging(tmp_path) == [] and _staging(out) == []


def test_a_partitions_leftover_is_removed_by_a_run_of_another_partition(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs"
    for day in ("1", "2"):
        (runs / f"dt={day}").mkdir(parents=True)
        pl.read_parquet(RUN).write_parquet(runs / f"dt={day}" / "part-0.parquet")
    out = tmp_path / "out"
    _evaluate(out, 5, runs)
    _kill_during_clean_up(monkeypatch, 1)
    with pytest.raises(Killed):
        _evaluate(out, 10, runs, partition_filters={"dt": {"1"}})
    assert [name.split("-")[1] for name in _staging(out)] == ["dt=1"]
    monkeypatch.undo()
    _evaluate(out, 20, runs, partition_filters={"dt": {"2"}})
    assert _staging(out) == []
    assert _cutoffs(out / "dt=1") == {10} and _cutoffs(out / "dt=2") == {20}


def test_a_users_folder_named_like_a_staging_folder_is_never_touched(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _evaluate(out, 5)
    for name in (".staging-out-abcdefgh", ".staging-out-12345678"):
        mine = tmp_path / name
        mine.mkdir()
        (mine / "notes.txt").write_text("mine")
    # one that even holds a file called manifest.json, not one of ours
    (tmp_path / ".staging-out-12345678" / MANIFEST).write_text('{"mine": true}')
    _evaluate(out, 10)
    assert _cutoffs(out) == {10}
    assert (tmp_path / ".staging-out-abcdefgh" / "notes.txt").read_text() == "mine"
    assert (tmp_path / ".staging-out-12345678" / MANIFEST).read_text() == '{"mine": true}'
    assert not (out / "notes.txt").exists()


def test_an_empty_staging_folder_left_by_a_kill_is_removed(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _evaluate(out, 5)
    (tmp_path / ".staging-out-a1b2c3d4").mkdir()  # killed between making it and building in it
    _evaluate(out, 10)
    assert _staging(tmp_path) == []


def _refuse_renaming(monkeypatch: pytest.MonkeyPatch, target: Path, number: int) -> None:
    """Renames of ``target`` (and the exchange with it) fail as on a mount point."""
    rename = os.rename

    def refusing_rename(source: Any, destination: Any) -> None:
        if Path(source) == target or Path(destination) == target:
            raise OSError(number, os.strerror(number), str(target))
        rename(source, destination)

    def refusing_exchange(first: Path, second: Path) -> bool:
        if number == errno.EXDEV:
            return False  # as exchange_folders says across file systems: then two renames
        raise OSError(number, os.strerror(number), str(second))

    monkeypatch.setattr(publish.os, "rename", refusing_rename)
    monkeypatch.setattr(publish, "exchange_folders", refusing_exchange)


@pytest.mark.parametrize("number", [errno.EBUSY, errno.EXDEV])
def test_out_that_cannot_be_renamed_is_replaced_file_by_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, number: int
) -> None:
    out = tmp_path / "out"
    _evaluate(out, 5)
    (out / "notes.txt").write_text("mine")
    _refuse_renaming(monkeypatch, out, number)
    _evaluate(out, 10)
    assert _cutoffs(out) == {10}
    assert (out / "notes.txt").read_text() == "mine"
    assert _staging(tmp_path) == [] and _staging(out) == []
    assert "replaced one by one" in caplog.text


def test_out_on_a_mount_point_is_replaced_inside_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A mount point is seen before anything is staged beside it (on another file system)."""
    out = tmp_path / "out"
    _evaluate(out, 5)
    ismount = os.path.ismount
    monkeypatch.setattr(publish.os.path, "ismount", lambda path: Path(path) == out or ismount(path))
    staged_beside: list[str] = []
    mkdtemp = publish.tempfile.mkdtemp

    def recording_mkdtemp(*args: Any, **kwargs: Any) -> str:
        staged_beside.append(str(kwargs.get("dir")))
        return mkdtemp(*args, **kwargs)

    monkeypatch.setattr(publish.tempfile, "mkdtemp", recording_mkdtemp)
    _evaluate(out, 10)
    assert _cutoffs(out) == {10}
    assert staged_beside == [str(out)]
    assert _staging(tmp_path) == [] and _staging(out) == []


def test_a_failing_build_leaves_no_staging_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "out"
    _evaluate(out, 5)

    def failing_build(*args: Any, **kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out / "per_query.parquet"))

    monkeypatch.setattr(publish, "build_unit", failing_build)
    with pytest.raises(Exception, match="no space left"):
        _evaluate(out, 10)
    assert _cutoffs(out) == {5}
    assert _staging(tmp_path) == [] and _staging(out) == []
