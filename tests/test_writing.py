"""Outputs under hostile conditions, through the real CLI: a user's files in --out, concurrent
jobs, kills between renames, injected values in the report, ids trec cannot carry, and output
errors that are the user's or the machine's (exit 2 or 3 with a message, never "internal error").
After every fault, each unit is whole (its manifest's outputs are its tables, with the manifest's
cutoffs), and every file of the user's is byte for byte as before.

Faults are injected in a child Python process that patches the writer before calling the CLI's
``main``: nothing in the package reads a test hook.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ROOT, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess (Spark's outputs: tests/test_spark.py)")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
USER_FILES = {
    "per_query.xlsx": b"PK\x03\x04 the user's spreadsheet",
    "summary.md": b"# my notes on the summary\n",
    "notes/todo.txt": b"look at q007\n",
}


def evaluate(out: Path, *flags: object, engine: str = "polars") -> subprocess.CompletedProcess[str]:
    return run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", out, "--engine", engine, *flags)


def put_user_files(folder: Path) -> None:
    for name, data in USER_FILES.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)


def snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def assert_user_files_intact(folder: Path) -> None:
    for name, data in USER_FILES.items():
        assert (folder / name).read_bytes() == data, name


def assert_whole_unit(folder: Path, cutoffs: set[int] | None = None) -> set[int]:
    """The manifest's outputs are the tables there, and tables and manifest hold the same cutoffs."""
    manifest = json.loads((folder / "manifest.json").read_text())
    assert sorted(manifest["outputs"]) == ["per_query.parquet", "summary.parquet"]
    assert (folder / "_SUCCESS").exists()
    ks = set(pl.read_parquet(folder / "per_query.parquet")["k"].drop_nulls().to_list())
    assert ks == set(pl.read_parquet(folder / "summary.parquet")["k"].drop_nulls().to_list())
    assert ks == set(manifest["options"]["cutoffs"]), (ks, manifest["options"]["cutoffs"])
    if cutoffs is not None:
        assert ks in ({c} for c in cutoffs), ks
    return ks


def no_leftovers(out: Path) -> None:
    around = [*out.parent.iterdir(), *(out.iterdir() if out.is_dir() else [])]
    assert not [p.name for p in around if ".staging" in p.name], around


def child(code: str, *argv: object) -> subprocess.Popen[str]:
    """``code`` (patches) then the CLI with ``argv``, in a child Python process."""
    script = textwrap.dedent(code) + "\nimport sys\nfrom pipeline.cli import main\nsys.exit(main(sys.argv[1:]))\n"
    return subprocess.Popen(
        [sys.executable, "-c", script, *map(str, argv)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def evaluate_argv(out: Path, k: int) -> list[object]:
    return ["evaluate", "--run", RUN, "--qrels", QRELS, "--out", out, "--k", k, "--warn-results-over", "0"]


# --- data loss -----------------------------------------------------------------------------


def test_user_files_in_out_are_kept_across_reruns(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    put_user_files(out)
    for k in (5, 10):
        result = evaluate(out, "--k", k, engine=engine)
        assert result.returncode == 0, result.stderr
        assert_user_files_intact(out)
        assert_whole_unit(out, {k})
    result = evaluate(out, "--k", 10, "--out-format", "csv", engine=engine)
    assert result.returncode == 0, result.stderr
    assert_user_files_intact(out)
    names = {p.name for p in out.iterdir()}  # the previous Parquet outputs were ours: replaced
    assert names == {
        "per_query.xlsx",
        "summary.md",
        "notes",
        "per_query.csv",
        "summary.csv",
        "manifest.json",
        "_SUCCESS",
    }
    no_leftovers(out)


def test_a_users_file_in_the_way_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    put_user_files(out)
    (out / "summary.parquet").write_bytes(b"the user's own table")
    before = snapshot(out)
    result = evaluate(out)
    assert result.returncode == 2, result.stderr
    assert (
        "summary.parquet was not written by ndcg-pipeline" in result.stderr and "choose another --out" in result.stderr
    )
    assert snapshot(out) == before
    no_leftovers(out)


def test_report_refuses_to_write_over_an_input_or_a_users_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert evaluate(out).returncode == 0
    before = snapshot(out)
    result = run_cli("report", out, "--html", out / "per_query.parquet")
    assert result.returncode == 2 and "is an input of this report" in result.stderr, result.stderr
    assert snapshot(out) == before
    mine = tmp_path / "notes.html"
    mine.write_bytes(b"<html>my page</html>")
    result = run_cli("report", out, "--html", mine)
    assert result.returncode == 2 and "not written by ndcg-pipeline" in result.stderr, result.stderr
    assert mine.read_bytes() == b"<html>my page</html>"
    figures = tmp_path / "figures"
    figures.mkdir()
    (figures / "distribution.png").write_bytes(b"\x89PNG\r\n\x1a\n not ours")
    result = run_cli("report", out, "--html", tmp_path / "report.html", "--png", figures)
    assert result.returncode == 2 and "distribution.png" in result.stderr, result.stderr
    assert not (tmp_path / "report.html").exists()  # checked before anything is written
    (figures / "distribution.png").unlink()
    for _ in range(2):  # a report and its figures of ours are replaced by a rerun
        result = run_cli("report", out, "--html", tmp_path / "report.html", "--png", figures)
        assert result.returncode == 0, result.stderr
    assert '<meta name="generator" content="ndcg-pipeline' in (tmp_path / "report.html").read_text()


# --- injection -----------------------------------------------------------------------------


def test_report_escapes_values_of_hand_edited_outputs(tmp_path: Path) -> None:
    out = tmp_path / "<b>sys</b>"
    assert evaluate(out, "--k", 5).returncode == 0
    summary = pl.read_parquet(out / "summary.parquet")
    hostile = summary.with_columns(pl.col("k").cast(pl.String).fill_null("<script>alert(1)</script>"))
    hostile.write_parquet(out / "summary.parquet")
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["options"]["gain"] = '"><img src=x onerror=alert(2)>'
    (out / "manifest.json").write_text(json.dumps(manifest))
    html_path = tmp_path / "report.html"
    result = run_cli("report", out, "--html", html_path, "--k", "5")
    assert result.returncode == 0, result.stderr
    text = html_path.read_text()
    assert "<script" not in text and "<img src=x" not in text and "<b>sys" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text and "&lt;b&gt;sys&lt;/b&gt;" in text


@pytest.mark.parametrize("query", ["q 1", "q\t1", "q\n1", "q\u20281"])
def test_trec_output_refuses_ids_with_whitespace(tmp_path: Path, engine: str, query: str) -> None:
    run = pl.read_parquet(RUN).with_columns(pl.col("query_id").replace("q001", query))
    qrels = pl.read_parquet(QRELS).with_columns(pl.col("query_id").replace("q001", query))
    run.write_parquet(tmp_path / "run.parquet")
    qrels.write_parquet(tmp_path / "qrels.parquet")
    common = ["evaluate", "--run", tmp_path / "run.parquet", "--qrels", tmp_path / "qrels.parquet", "--engine", engine]
    for flags in (["--output-format", "trec", "--per-query"], ["--out-format", "trec"]):
        out = tmp_path / "out"
        result = run_cli(*common, "--out", out, *flags)
        assert result.returncode == 3, (flags, result.stderr)
        assert repr(query) in result.stderr and "trec_eval" in result.stderr
        assert not out.exists() and result.stdout == ""


# --- output errors -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--out", ""], "--out is empty"),
        (["--out", "FILE"], "is a file, not a folder"),
        (["--out", RUN], "is the run itself"),
        (["--out", "FOLDER/dt=1"], "inside the run folder"),
        (["--digits", "-1", "--out", "OUT"], "--digits"),
    ],
)
def test_output_errors_are_usage_errors(tmp_path: Path, flags: list, message: str) -> None:
    (tmp_path / "FILE").write_bytes(b"a file of the user's")
    (tmp_path / "FOLDER").mkdir()
    pl.read_parquet(RUN).write_parquet(tmp_path / "FOLDER" / "part.parquet")
    flags = [str(tmp_path / f) if f in ("FILE", "FOLDER/dt=1", "OUT") else f for f in flags]
    run = tmp_path / "FOLDER" if "FOLDER" in " ".join(map(str, flags)) else RUN
    before = snapshot(tmp_path)
    result = run_cli("evaluate", "--run", run, "--qrels", QRELS, *flags)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "internal error" not in result.stderr
    assert snapshot(tmp_path) == before and not (tmp_path / "OUT").exists()


@pytest.mark.parametrize(
    ("pattern", "out", "message"),
    [
        ("FOLDER/*.parquet", "FOLDER", "is the folder {FOLDER} of the run glob"),
        ("FOLDER/**/*.parquet", "FOLDER/out", "is inside the folder {FOLDER} of the run glob"),
        ("FOLDER/*/*.parquet", "FOLDER/dt=9", "is inside the folder {FOLDER} of the run glob"),
    ],
)
def test_out_where_the_run_glob_would_read_it_is_refused(tmp_path: Path, pattern: str, out: str, message: str) -> None:
    """Outputs written where the run's glob lists (its folder, or below it through ** or a
    wildcard folder) would be read as run data by the next run: refused before anything runs."""
    (tmp_path / "FOLDER").mkdir()
    pl.read_parquet(RUN).write_parquet(tmp_path / "FOLDER" / "part.parquet")
    before = snapshot(tmp_path)
    result = run_cli(
        "evaluate", "--run", tmp_path / pattern, "--qrels", QRELS, "--out", tmp_path / out
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    assert message.format(FOLDER=tmp_path / "FOLDER") in result.stderr, result.stderr
    assert snapshot(tmp_path) == before
    # a folder the glob does not reach below its own is fine
    beside = run_cli(
        "evaluate", "--run", tmp_path / "FOLDER/*.parquet", "--qrels", QRELS, "--out", tmp_path / "FOLDER/o"
    )
    assert beside.returncode == 0, beside.stderr


def test_a_run_folder_named_like_a_glob_is_still_a_folder(tmp_path: Path) -> None:
    """A folder named runs[1] is read as itself (it exists): --out inside it is refused."""
    folder = tmp_path / "runs[1]"
    folder.mkdir()
    pl.read_parquet(RUN).write_parquet(folder / "part.parquet")
    result = run_cli("evaluate", "--run", folder, "--qrels", QRELS, "--out", folder / "out")
    assert result.returncode == 2, result.stderr
    assert f"is inside the run folder {folder}" in result.stderr
    assert not (folder / "out").exists()


FAIL_WRITES = """
import polars as pl
def fail(self, *args, **kwargs):
    raise pl.exceptions.ComputeError("parquet: underlying IO error: {text} (os error {number})")
pl.DataFrame.write_parquet = fail
"""


@pytest.mark.parametrize(
    ("number", "text", "message"),
    [(28, "No space left on device", "no space left"), (30, "Read-only file system", "read-only file system")],
)
def test_full_or_read_only_disk_names_the_path_and_keeps_the_old_outputs(
    tmp_path: Path, number: int, text: str, message: str
) -> None:
    out = tmp_path / "out"
    assert evaluate(out).returncode == 0
    put_user_files(out)
    before = snapshot(out)
    process = child(FAIL_WRITES.format(number=number, text=text), *evaluate_argv(out, 10))
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2, stderr
    assert message in stderr and str(out / "per_query.parquet") in stderr and "internal error" not in stderr
    assert snapshot(out) == before
    no_leftovers(out)


def test_a_real_full_disk(tmp_path: Path) -> None:
    """A 64 KiB tmpfs (where this process may mount one): the real error of the file system."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root)")
    try:
        filler = disk / "notes.bin"  # the user's file fills the disk
        with open(filler, "wb", buffering=0) as stream:
            try:
                while True:
                    stream.write(b"x" * 1024)
            except OSError:
                pass
        before = snapshot(disk)
        result = evaluate(disk / "out")
        assert result.returncode == 2, result.stderr
        assert "no space left" in result.stderr and str(disk / "out") in result.stderr
        assert "internal error" not in result.stderr
        assert snapshot(disk) == before
    finally:
        subprocess.run(["umount", str(disk)], check=False)


# --- concurrent jobs and kills -------------------------------------------------------------

SLOW_SWAPS = """
import os, time
import pipeline.io.publish as write
exchange = write.exchange_folders
def slow_exchange(first, second):
    time.sleep(0.4)
    return exchange(first, second)
write.exchange_folders = slow_exchange
replace = os.replace
def slow_replace(*args, **kwargs):
    time.sleep(0.2)
    return replace(*args, **kwargs)
os.replace = slow_replace
"""


@pytest.mark.parametrize("with_user_files", [True, False])
def test_concurrent_jobs_leave_one_jobs_whole_output(tmp_path: Path, with_user_files: bool) -> None:
    out = tmp_path / "out"
    out.mkdir()
    if with_user_files:
        put_user_files(out)
    for _ in range(2):
        jobs = [child(SLOW_SWAPS, *evaluate_argv(out, k)) for k in (5, 10)]
        for job in jobs:
            _, stderr = job.communicate(timeout=120)
            assert job.returncode == 0, stderr
        assert_whole_unit(out, {5, 10})
        if with_user_files:
            assert_user_files_intact(out)
        no_leftovers(out)


def kill_at(point: str) -> str:
    """Patches that SIGKILL the child at ``point`` of the swap."""
    return f"""
import os, signal
import pipeline.io.publish as write
point = {point!r}
exchange, rename, retire = write.exchange_folders, os.rename, write.retire
def die():
    os.kill(os.getpid(), signal.SIGKILL)
def exchange_then(first, second):
    if point == "before-swap":
        die()
    if point.startswith("two-renames"):
        return False
    return exchange(first, second)
renames = []
def rename_then(source, target):
    renames.append(source)
    if point == "two-renames" and len(renames) == 2:
        die()  # the old unit is put aside, the new one not yet in place
    return rename(source, target)
def retire_then(old, new):
    if point == "after-swap":
        die()
    return retire(old, new)
write.exchange_folders, write.retire = exchange_then, retire_then
os.rename = rename_then
"""


@pytest.mark.parametrize("with_user_files", [True, False])
@pytest.mark.parametrize("point", ["before-swap", "after-swap", "two-renames"])
def test_kill_during_the_swap_loses_nothing(tmp_path: Path, point: str, with_user_files: bool) -> None:
    out = tmp_path / "out"
    assert evaluate(out, "--k", 5).returncode == 0
    if with_user_files:
        put_user_files(out)
    killed = child(kill_at(point), *evaluate_argv(out, 10))
    killed.communicate(timeout=120)
    assert killed.returncode == -9
    if point != "two-renames":  # the exchange is one step: the folder is whole, old or new
        assert_whole_unit(out, {5, 10})
        if with_user_files:
            assert_user_files_intact(out)
    # the next writer repairs what the killed one left: the unit back in place, leftovers gone
    result = evaluate(out, "--k", 20)
    assert result.returncode == 0, result.stderr
    assert_whole_unit(out, {20})
    if with_user_files:
        assert_user_files_intact(out)
    no_leftovers(out)


def test_kill_between_partition_units_leaves_each_unit_whole(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    for day in ("1", "2", "3"):
        (runs / f"dt={day}").mkdir(parents=True)
        pl.read_parquet(RUN).write_parquet(runs / f"dt={day}" / "part.parquet")
    out = tmp_path / "out"
    argv = ["evaluate", "--run", runs, "--qrels", QRELS, "--out", out, "--warn-results-over", "0"]
    assert run_cli(*argv, "--k", 5).returncode == 0
    put_user_files(out / "dt=2")
    killed = child(kill_at("after-swap"), *argv, "--k", 10)
    killed.communicate(timeout=120)
    assert killed.returncode == -9
    for folder in sorted(out.glob("dt=*")):
        assert_whole_unit(folder, {5, 10})
    assert_user_files_intact(out / "dt=2")
    assert run_cli(*argv, "--k", 10).returncode == 0
    for folder in sorted(out.glob("dt=*")):
        assert_whole_unit(folder, {10})
        assert not [p for p in folder.iterdir() if p.name.startswith(".")]
    assert_user_files_intact(out / "dt=2")
    assert not [p for p in out.iterdir() if ".staging" in p.name]


def test_compare_writes_tables_and_manifest_as_one_unit_and_keeps_user_files(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert evaluate(tmp_path / name).returncode == 0
    cmp = tmp_path / "cmp"
    cmp.mkdir()
    put_user_files(cmp)
    argv = ["compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--out", cmp]
    for _ in range(2):
        result = run_cli(*argv, "--permutations", 50, "--bootstrap", 50)
        assert result.returncode == 0, result.stderr
    manifest = json.loads((cmp / "manifest.json").read_text())
    assert sorted(manifest["outputs"]) == ["comparison.parquet", "deltas.parquet"]
    assert manifest["options"]["permutations"] == 50
    assert_user_files_intact(cmp)
    result = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--out", tmp_path / "a")
    assert result.returncode == 2 and "is the baseline itself" in result.stderr, result.stderr
    assert os.path.exists(tmp_path / "a" / "per_query.parquet")


# --- the adversarial pass on outputs and reports ---------------------------------------------


@pytest.fixture
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    """q1: a=3, b=2, c=1 judged a=2, c=1, d=1; q2: x=1 judged x=1."""
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "b", "c", "x"], "score": [3.0, 2.0, 1.0, 1.0]}
    ).write_parquet(run)
    pl.DataFrame(
        {"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "c", "d", "x"], "relevance": [2, 1, 1, 1]}
    ).write_parquet(qrels)
    return run, qrels


def tiny_evaluate(tiny: tuple[Path, Path], out: Path, *flags: object) -> subprocess.CompletedProcess[str]:
    return run_cli("evaluate", "--run", tiny[0], "--qrels", tiny[1], "--out", out, *flags)


def test_compare_refuses_an_evaluation_output_and_evaluate_a_comparison(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    for name in ("A", "B", "E"):
        assert tiny_evaluate(tiny, tmp_path / name).returncode == 0
    before = snapshot(tmp_path / "E")
    result = run_cli("compare", "--baseline", tmp_path / "A", "--candidate", tmp_path / "B", "--out", tmp_path / "E")
    assert result.returncode == 2, result.stderr
    assert "holds the output of ndcg evaluate" in result.stderr and "choose another --out" in result.stderr
    assert snapshot(tmp_path / "E") == before
    cmp = tmp_path / "C"
    assert run_cli("compare", "--baseline", tmp_path / "A", "--candidate", tmp_path / "B", "--out", cmp).returncode == 0
    before = snapshot(cmp)
    result = tiny_evaluate(tiny, cmp)
    assert result.returncode == 2 and "holds the output of ndcg compare" in result.stderr, result.stderr
    assert snapshot(cmp) == before
    # a manifest written before it recorded its command is told by its outputs
    manifest = json.loads((tmp_path / "E" / "manifest.json").read_text())
    del manifest["command"]
    (tmp_path / "E" / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(tmp_path / "E")
    result = run_cli("compare", "--baseline", tmp_path / "A", "--candidate", tmp_path / "B", "--out", tmp_path / "E")
    assert result.returncode == 2 and "holds the output of ndcg evaluate" in result.stderr, result.stderr
    assert snapshot(tmp_path / "E") == before
    no_leftovers(tmp_path / "E")


def test_out_folders_keep_their_mode_and_new_ones_follow_the_umask(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    kept = tmp_path / "kept"
    kept.mkdir()
    os.chmod(kept, 0o2775)
    assert tiny_evaluate(tiny, kept).returncode == 0
    assert oct(os.stat(kept).st_mode & 0o7777) == oct(0o2775)
    mask = os.umask(0o022)
    os.umask(mask)
    new = tmp_path / "new"
    assert tiny_evaluate(tiny, new).returncode == 0
    assert oct(os.stat(new).st_mode & 0o7777) == oct(0o777 & ~mask)
    assert run_cli("compare", "--baseline", kept, "--candidate", new, "--out", tmp_path / "cmp").returncode == 0
    assert oct(os.stat(tmp_path / "cmp").st_mode & 0o7777) == oct(0o777 & ~mask)


def test_a_query_named_all_is_refused_in_trec_output(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["all", "q2"], "doc_id": ["a", "x"], "score": [1.0, 1.0]}).write_parquet(run)
    pl.DataFrame({"query_id": ["all", "q2"], "doc_id": ["a", "x"], "relevance": [1, 1]}).write_parquet(qrels)
    printed = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "trec", "--per-query")
    assert printed.returncode == 3, printed.stderr
    assert "query id 'all'" in printed.stderr and printed.stdout == ""
    out = tmp_path / "out"
    written = run_cli("evaluate", "--run", run, "--qrels", qrels, "--out", out, "--out-format", "trec")
    assert written.returncode == 3 and "query id 'all'" in written.stderr, written.stderr
    assert not out.exists() or not any(out.iterdir())


def test_group_values_cannot_forge_markers_or_lines_in_stdout_tables(tmp_path: Path) -> None:
    run, qrels, attributes = tmp_path / "run.parquet", tmp_path / "qrels.parquet", tmp_path / "attributes.parquet"
    queries = ["q1", "q2", "q3", "q4"]
    pl.DataFrame({"query_id": queries, "doc_id": ["a"] * 4, "score": [1.0] * 4}).write_parquet(run)
    pl.DataFrame({"query_id": queries, "doc_id": ["a"] * 4, "relevance": [1] * 4}).write_parquet(qrels)
    pl.DataFrame({"query_id": queries, "g": ["x\nq9  forged", "overall", "(null)", "all"]}).write_parquet(attributes)
    flags = ["--query-attributes", attributes, "--group-by", "g"]
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, *flags, "--k", 1)
    assert result.returncode == 0, result.stderr
    cells = [line.split()[0] for line in result.stdout.splitlines()[2:]]
    assert "'x\\nq9  forged'" in result.stdout and "q9" not in cells
    assert {"'overall'", "'(null)'", "all", "overall"} <= set(cells), cells
    # one overall row per cutoff; "all" (the whole-ranking cutoff's word) is a plain group value here
    assert cells.count("overall") == cells.count("'overall'") == cells.count("all")
    for name in ("A", "B"):
        out = tmp_path / name
        assert run_cli("evaluate", "--run", run, "--qrels", qrels, *flags, "--k", 1, "--out", out).returncode == 0
    compared = run_cli(
        "compare", "--baseline", tmp_path / "A", "--candidate", tmp_path / "B", "--group-by", "g", "--k", 1
    )
    assert compared.returncode == 0, compared.stderr
    rows = compared.stdout.splitlines()[2:]
    assert all(row.split()[:2] == ["A", "B"] for row in rows), compared.stdout
    groups = [row.split()[2] for row in rows]
    assert groups.count("overall") == groups.count("'overall'") == groups.count("'(null)'") == groups.count("all") == 1


def test_report_refuses_a_cutoff_an_output_lacks(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    assert tiny_evaluate(tiny, tmp_path / "A", "--k", "1,3").returncode == 0
    page = tmp_path / "r.html"
    result = run_cli("report", tmp_path / "A", "--html", page, "--k", 99)
    assert result.returncode == 2, result.stderr
    assert "no rows for k=99" in result.stderr and "it has k=1, 3, all" in result.stderr, result.stderr
    assert not page.exists()


def test_report_refuses_outputs_of_different_conventions_unless_allowed(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    assert tiny_evaluate(tiny, tmp_path / "A").returncode == 0
    assert tiny_evaluate(tiny, tmp_path / "Bexp", "--gain", "exponential").returncode == 0
    page = tmp_path / "r.html"
    result = run_cli("report", tmp_path / "A", tmp_path / "Bexp", "--html", page)
    assert result.returncode == 2, result.stderr
    assert "different conventions" in result.stderr and "gain" in result.stderr
    assert "--allow-different-conventions" in result.stderr
    assert not page.exists()
    allowed = run_cli("report", tmp_path / "A", tmp_path / "Bexp", "--html", page, "--allow-different-conventions")
    assert allowed.returncode == 0, allowed.stderr
    assert page.exists() and "different conventions" in allowed.stderr


def test_report_page_and_figures_are_written_all_or_nothing(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    assert tiny_evaluate(tiny, tmp_path / "A").returncode == 0
    page, figures = tmp_path / "r.html", tmp_path / "figures"
    full_disk = """
    import errno, tempfile
    real = tempfile.mkstemp
    def mkstemp(*args, prefix="", **kwargs):
        if ".png" in prefix:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args, prefix=prefix, **kwargs)
    tempfile.mkstemp = mkstemp
    """
    failed = child(full_disk, "report", tmp_path / "A", "--html", page, "--png", figures)
    _, stderr = failed.communicate(timeout=120)
    assert failed.returncode == 2 and "no space left on the device" in stderr, stderr
    assert not page.exists()
    assert not [p for p in tmp_path.rglob("*") if p.suffix in (".png", ".html") or "staging" in p.name]


def _strict_json(text: str) -> object:
    def refuse(constant: str) -> object:
        raise AssertionError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_compare_json_is_strict_json(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    for name in ("A", "B"):
        assert tiny_evaluate(tiny, tmp_path / name).returncode == 0
    # identical systems: no spread, so the t statistic and its p-value have no value (null, not NaN)
    result = run_cli("compare", "--baseline", tmp_path / "A", "--candidate", tmp_path / "B", "--json")
    assert result.returncode == 0, result.stderr
    rows = _strict_json(result.stdout)["comparison"]  # type: ignore[index]
    assert rows and all(row["t_statistic"] is None for row in rows)


def test_evaluate_json_with_nan_ideal_is_strict_json(tmp_path: Path) -> None:
    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "x"], "score": [1.0, 1.0]}).write_parquet(run)
    pl.DataFrame({"query_id": ["q1", "q2"], "doc_id": ["a", "x"], "relevance": [1, 0]}).write_parquet(qrels)
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--empty-ideal", "nan", "--json")
    assert result.returncode == 0, result.stderr
    summary = _strict_json(result.stdout)["summary"]  # type: ignore[index]
    assert all(row["ndcg"] is None for row in summary)
