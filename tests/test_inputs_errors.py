"""Input errors that carry their fix, through the real command line: missing columns (the flags
and the library's ``columns=``, with the likely mapping), a CSV without its header row, run and
qrels swapped as Parquet, text read as Parquet, a symbolic link loop in a run folder, and a
TMPDIR without room for the buckets of ``--memory-limit``. Spark reads Parquet itself
(pipeline/engines/spark_inputs.py): its missing-columns message is checked to be the same."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from tests.helpers import CONFORMANCE, ENGINES, ROOT, limit_beyond_floor, run_cli

QRELS = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
RUN = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
TREC_NAMES = {"query_id": "qid", "doc_id": "docno", "score": "sim"}


def refused(*args: object, code: int = 3) -> str:
    done = run_cli(*args)
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    return done.stderr


def written(frame: pl.DataFrame, path: Path) -> Path:
    frame.write_parquet(path)
    return path


# --- missing columns ---------------------------------------------------------------------------

RENAMED_MESSAGE = (
    "missing column(s) 'query_id'; 'doc_id'; 'score'; columns found: 'qid', 'docno', 'sim'; "
    "to read 'qid' as query_id, 'docno' as doc_id, 'sim' as score: --run-query-col qid --run-doc-col docno "
    "--score-col sim (API: columns=Columns(run_query='qid', run_doc='docno', score='sim')); "
    "--query-col/--doc-col name the column in the run and the qrels alike"
)


@pytest.mark.parametrize("engine", ENGINES)
def test_renamed_columns_name_the_flags_and_the_mapping(tmp_path: Path, engine: str) -> None:
    """trec_eval's names (qid, docno, sim): the message says which flags (and which
    ``columns=`` of the library) read them, filled in; following it scores the run."""
    run = written(RUN.rename(TREC_NAMES), tmp_path / "run_renamed.parquet")
    qrels = written(QRELS.rename(TREC_NAMES, strict=False), tmp_path / "qrels.parquet")
    stderr = refused("evaluate", "--run", run, "--qrels", qrels, "--engine", engine)
    assert f"{run}: {RENAMED_MESSAGE}" in stderr
    flags = ("--query-col", "qid", "--doc-col", "docno", "--score-col", "sim")
    followed = run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, *flags, "--k", "1")
    assert followed.returncode == 0, followed.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_flags_that_fit_one_input_only_point_to_the_other_inputs_own_flags(tmp_path: Path, engine: str) -> None:
    """The shared column flags name the columns of run and qrels alike: qrels keeping the default
    names after --query-col qid are told the qrels' own flags, and following them scores the run."""
    run = written(RUN.rename(TREC_NAMES), tmp_path / "run_renamed.parquet")
    qrels = written(QRELS, tmp_path / "qrels.parquet")
    flags = ("--query-col", "qid", "--doc-col", "docno", "--score-col", "sim")
    stderr = refused("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, *flags)
    assert (
        f"{qrels}: missing column(s) 'qid'; 'docno'; columns found: 'query_id', 'doc_id', 'relevance'; "
        "to read 'query_id' as query_id, 'doc_id' as doc_id: --qrels-query-col query_id --qrels-doc-col doc_id "
        "(API: columns=Columns(qrels_query='query_id', qrels_doc='doc_id')); "
        "--query-col/--doc-col name the column in the run and the qrels alike"
    ) in stderr
    own = ("--qrels-query-col", "query_id", "--qrels-doc-col", "doc_id")
    followed = run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, *flags, *own, "--k", "1")
    assert followed.returncode == 0, followed.stderr


def test_the_library_gives_the_same_message(tmp_path: Path) -> None:
    """One message for both fronts: its ``columns=`` form is what the library takes."""
    from pipeline import Columns, check
    from pipeline.errors import InvalidInput

    run = written(RUN.rename(TREC_NAMES), tmp_path / "run_renamed.parquet")
    qrels = written(QRELS.rename(TREC_NAMES, strict=False), tmp_path / "qrels.parquet")
    with pytest.raises(InvalidInput) as raised:
        check(run, qrels)
    assert RENAMED_MESSAGE in str(raised.value)
    check(run, qrels, columns=Columns(query="qid", doc="docno", score="sim"))


@pytest.mark.spark
def test_spark_names_missing_columns_as_the_other_engines(
    local_spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = written(RUN.rename(TREC_NAMES), tmp_path / "run_renamed.parquet")
    qrels = written(QRELS, tmp_path / "qrels.parquet")
    for engine in ("spark", "polars"):
        assert main(["evaluate", "--engine", engine, "--run", str(run), "--qrels", str(qrels)]) == 3
        assert f"ndcg: error: {run}: {RENAMED_MESSAGE}\n" in capsys.readouterr().err
    # qrels given as the run: the same hint on both
    messages = []
    for engine in ("spark", "polars"):
        assert main(["evaluate", "--engine", engine, "--run", str(qrels), "--qrels", str(qrels)]) == 3
        messages.append(capsys.readouterr().err.splitlines()[-1])
    assert messages[0] == messages[1] and "this looks like qrels" in messages[0], messages


@pytest.mark.parametrize("engine", ENGINES)
def test_run_and_qrels_swapped_as_parquet(tmp_path: Path, engine: str) -> None:
    run, qrels = written(RUN, tmp_path / "run.parquet"), written(QRELS, tmp_path / "qrels.parquet")
    stderr = refused("evaluate", "--run", qrels, "--qrels", run, "--engine", engine)
    assert f"{qrels}: missing column(s) 'score'; columns found: 'query_id', 'doc_id', 'relevance'; " in stderr
    assert "this looks like qrels (a label column, no score): pass it as --qrels, and the run as --run" in stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_qrels_given_as_a_run_in_the_qrels_place(tmp_path: Path, engine: str) -> None:
    run = written(RUN, tmp_path / "run.parquet")
    stderr = refused("evaluate", "--run", run, "--qrels", run, "--engine", engine)
    assert "this looks like a run (a score column, no label): pass it as --run, and the judgments as --qrels" in stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_a_run_without_qrels_is_told_about_inline_labels(tmp_path: Path, engine: str) -> None:
    run = written(RUN, tmp_path / "run.parquet")
    stderr = refused("evaluate", "--run", run, "--engine", engine)
    assert "missing column(s) 'relevance'" in stderr
    assert "give the judgments with --qrels" in stderr and "--label-col" in stderr


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("suffix", "separator"), [("csv", ","), ("tsv", "\t")])
def test_csv_without_a_header_row_is_asked_about_it(tmp_path: Path, engine: str, suffix: str, separator: str) -> None:
    run = tmp_path / f"run.{suffix}"
    run.write_text(f"q1{separator}a{separator}2\nq1{separator}b{separator}1\n")
    qrels = written(QRELS, tmp_path / "qrels.parquet")
    stderr = refused("evaluate", "--run", run, "--qrels", qrels, "--engine", engine)
    assert (
        "columns found: 'q1', 'a', '2'; the first line looks like a row of data, not a header: no header row?" in stderr
    )


@pytest.mark.parametrize("engine", ENGINES)
def test_trec_text_read_as_parquet_says_so(tmp_path: Path, engine: str) -> None:
    """No raw ``PAR1`` error: the file's first line and the format it looks like."""
    run = tmp_path / "run.parquet"
    shutil.copy(CONFORMANCE / "results.test", run)
    for args in (("--run", run), ("--run", CONFORMANCE / "results.test", "--run-format", "parquet")):
        stderr = refused("evaluate", *args, "--qrels", CONFORMANCE / "qrels.test", "--engine", engine)
        assert (
            "cannot read as parquet: not a Parquet file (Parquet files begin with PAR1); "
            "its first line '301\\tQ0\\tFR940202-2-00150" in stderr
        )
        assert "looks like a TREC run (qid Q0 docno rank score tag): pass --run-format trec" in stderr
        assert "PAR1 or PARE" not in stderr


# --- symbolic link loops -----------------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("link", "target"), [("loop", "."), ("dt=1/dt=2", "..")])
def test_a_symbolic_link_loop_is_named(tmp_path: Path, engine: str, link: str, target: str) -> None:
    """``loop -> .`` beside a partition folder, ``dt=1/dt=2 -> ..`` inside one: named as the
    loop they are, with the link's target, by evaluate (stderr) and validate (its verdict)."""
    runs = tmp_path / "runs"
    (runs / "dt=1").mkdir(parents=True)
    RUN.write_parquet(runs / "dt=1" / "part-0.parquet")
    (runs / link).symlink_to(target)
    qrels = written(QRELS, tmp_path / "qrels.parquet")
    where = "this folder itself" if target == "." else f"{runs}, a folder above it"
    expected = f"{runs / link}: a symbolic link loop: it points to {target!r}, which is {where}"
    stderr = refused("evaluate", "--run", runs, "--qrels", qrels, "--engine", engine)
    assert expected in stderr and "half-migrated" not in stderr, stderr
    verdict = run_cli("validate", "--run", runs, "--qrels", qrels)
    assert verdict.returncode == 3 and f"invalid: {expected}" in verdict.stdout, verdict.stdout


# --- TMPDIR without room for the buckets ------------------------------------------------------


def _can_mount_tmpfs() -> bool:
    if not sys.platform.startswith("linux") or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=16k tmpfs /mnt && umount /mnt"], capture_output=True
    )
    return probe.returncode == 0


@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare and a tmpfs mount in a user namespace")
@pytest.mark.parametrize("engine", ENGINES)
def test_full_tmpdir_names_the_folder_and_the_room_needed(tmp_path: Path, engine: str) -> None:
    """TMPDIR on a 64 KB tmpfs: exit 2, naming the folder, the room the buckets need (the
    inputs' size on disk, computed here from the files) and both fixes."""
    rows = 20_000
    run = written(
        pl.DataFrame(
            {
                "query_id": [f"q{i // 10}" for i in range(rows)],
                "doc_id": [f"document-{i}" for i in range(rows)],
                "score": [float(i % 10) for i in range(rows)],
            }
        ),
        tmp_path / "run.parquet",
    )
    qrels = written(
        pl.DataFrame(
            {
                "query_id": [f"q{i}" for i in range(rows // 10)],
                "doc_id": [f"document-{10 * i}" for i in range(rows // 10)],
                "relevance": [1] * (rows // 10),
            }
        ),
        tmp_path / "qrels.parquet",
    )
    needed = (run.stat().st_size + qrels.stat().st_size) / 1e6
    small = tmp_path / "small"
    small.mkdir()
    command = (
        f'mount -t tmpfs -o size=64k tmpfs "{small}" && cd "{ROOT}" && '
        f'TMPDIR="{small}" "{sys.executable}" -m pipeline evaluate --run "{run}" --qrels "{qrels}" '
        f'--engine {engine} --memory-limit {limit_beyond_floor(engine, 300_000)}; echo "rc=$?"'
    )
    done = subprocess.run(["unshare", "-rm", "sh", "-c", command], capture_output=True, text=True, timeout=300)
    assert "rc=2" in done.stdout, done.stdout + done.stderr
    assert f"no space left in TMPDIR ({small}, " in done.stderr, done.stderr
    assert f"the buckets need up to about {needed:.1f} MB (the inputs' size)" in done.stderr, done.stderr
    assert "Point TMPDIR at a folder with that much room" in done.stderr
    assert "raise --memory-limit" in done.stderr and "cannot read" not in done.stderr
