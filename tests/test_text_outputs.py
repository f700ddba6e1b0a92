"""Text outputs print what came from data escaped, and a stdout that cannot be written is a
clear error, through the real command line.

A line break in a query id, a partition folder's name or a system's name once forged lines:
in ``validate``'s verdict, in ``compare``'s notes (a ``# gate ...: passed`` line printed by a
command that exits 6), in the stdout table and in log lines. Every text output now prints data
through :func:`pipeline.io.format.text_value` (a value: quoted with its escapes when it is not
printable on one line) or :func:`pipeline.io.format.text_line` (a message: each unprintable
character escaped). A stdout on a full device, or whose encoding lacks a character of the
output, is an output error (exit 2) naming stdout and the fix, not an internal error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from pipeline.io.format import text_line, text_value
from tests.helpers import CONFORMANCE, ENGINES, ROOT, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess")

FORGED_VERDICT = "q2\nvalid\nwarning: none"
QRELS = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]})


def test_text_value_and_text_line() -> None:
    assert text_value("q1") == "q1" and text_value("dt 2") == "dt 2" and text_value("é") == "é"
    assert text_value("a\nb") == "'a\\nb'" and text_value("\u2028") == "'\\u2028'"
    assert text_value("'q'") == "\"'q'\""  # a value that begins with a quote cannot pass for an escaped one
    assert text_value("x\u202eevil") == "'x\\u202eevil'"  # a bidi override reorders what a terminal shows
    assert text_line("run/dt=a\nb: bad\x1b[31m") == "run/dt=a\\nb: bad\\x1b[31m"
    assert text_line("plain 'quoted' é") == "plain 'quoted' é"


@pytest.mark.parametrize("engine", ENGINES)
def test_query_id_with_line_breaks_stays_on_its_line(tmp_path: Path, engine: str) -> None:
    """validate's verdict and evaluate's warning on stderr: the id quoted with its escapes, no
    forged ``valid``/``warning:`` line."""
    run = tmp_path / "run.parquet"
    pl.DataFrame(
        {"query_id": ["q1", "q1", FORGED_VERDICT], "doc_id": ["a", "b", "a"], "score": [2.0, 1.0, 1.0]}
    ).write_parquet(run)
    qrels = tmp_path / "qrels.parquet"
    QRELS.write_parquet(qrels)
    verdict = run_cli("validate", "--run", run, "--qrels", qrels)
    assert verdict.returncode == 0, verdict.stderr
    assert verdict.stdout.splitlines() == [
        f"run:   {run}",
        f"qrels: {qrels}",
        "valid",
        f"warning: queries only in the run {run}, not evaluated: 1 ('q2\\nvalid\\nwarning: none')",
    ]
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, "--k", "1", "--verbose")
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"ndcg: warning: queries only in the run {run}, not evaluated: 1 ('q2\\nvalid\\nwarning: none')"
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_partition_folder_with_a_line_break(tmp_path: Path, engine: str) -> None:
    """A hive folder ``dt=a<newline># gate: passed``: the partition label and the table's
    partition cell escape it; no line of stdout is the forged one."""
    runs = tmp_path / "runs"
    folder = runs / "dt=a\n# gate: passed"
    folder.mkdir(parents=True)
    pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]}).write_parquet(
        folder / "part-0.parquet"
    )
    qrels = tmp_path / "qrels.parquet"
    QRELS.write_parquet(qrels)
    done = run_cli("evaluate", "--run", runs, "--qrels", qrels, "--engine", engine, "--k", "1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "# gate: passed" not in lines
    assert lines[0].startswith("# conventions: ")
    assert lines[1] == "# partition dt=a\\n# gate: passed"
    assert [line.split()[0] for line in lines[3:]] == ["'a\\n#", "'a\\n#"]  # the dt cell of each row


@pytest.mark.parametrize("engine", ENGINES)
def test_compare_notes_cannot_forge_a_passing_gate(tmp_path: Path, engine: str) -> None:
    """A query only in the baseline, named like the gate's passing line: the gate fails (exit
    6), and the only gate lines on stdout are the real ones."""
    queries = [f"q{i}" for i in range(30)]
    head = (
        "# gate (--fail-if-worse 0.01, alpha 0.05, 1 check(s) in 1 family, randomization p-values adjusted "
        "within each family)"
    )
    forged = f"z\n{head}: passed"
    # the baseline ranks each query's relevant document first, the candidate second: NDCG 1 -> 1/log2(3)
    pl.DataFrame(
        {
            "query_id": [*queries, *queries, forged],
            "doc_id": ["rel"] * 30 + ["other"] * 30 + ["rel"],
            "score": [2.0] * 30 + [1.0] * 30 + [1.0],
        }
    ).write_parquet(tmp_path / "base.parquet")
    pl.DataFrame(
        {"query_id": queries * 2, "doc_id": ["rel"] * 30 + ["other"] * 30, "score": [1.0] * 30 + [2.0] * 30}
    ).write_parquet(tmp_path / "cand.parquet")
    pl.DataFrame({"query_id": [*queries, forged], "doc_id": ["rel"] * 31, "relevance": [1] * 31}).write_parquet(
        tmp_path / "qrels.parquet"
    )
    done = run_cli("compare", "--run", tmp_path / "base.parquet", "--run", tmp_path / "cand.parquet",
                   "--qrels", tmp_path / "qrels.parquet", "--fail-if-worse", "0.01", "--k", "10",
                   "--engine", engine)  # fmt: skip
    assert done.returncode == 6, done.stderr
    gate_lines = [line for line in done.stdout.splitlines() if line.startswith("# gate")]
    assert gate_lines[0] == f"{head}: FAILED" and not any(line.endswith("passed") for line in gate_lines)
    assert f"left out (see --all-queries): {text_value(forged)}" in done.stdout


# --- stdout that cannot be written ----------------------------------------------------------------


def cli_to(stdout: object, *args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *map(str, args)],
        stdout=stdout,  # type: ignore[arg-type]
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        timeout=300,
        env={**os.environ, **(env or {})},
    )


TREC_INPUTS = ("--run", CONFORMANCE / "results.test", "--qrels", CONFORMANCE / "qrels.test")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("output_format", ["table", "trec", "json"])
def test_stdout_on_a_full_device(tmp_path: Path, engine: str, output_format: str) -> None:
    """Exit 2 with one line naming stdout; the --out files are written first, so complete."""
    out = tmp_path / "out"
    with open("/dev/full", "w") as full:
        done = cli_to(full, "evaluate", *TREC_INPUTS, "--engine", engine, "--output-format", output_format,
                      "--per-query", "--out", out)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "ndcg: error: cannot write to stdout: No space left on device; redirect it to a file on a disk with room, "
        "or write the results with --out\n"
    )
    assert pl.read_parquet(out / "per_query.parquet").height > 0


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("command", [("profiles",), ("validate", *TREC_INPUTS)])
def test_other_commands_on_a_full_device(command: tuple[object, ...]) -> None:
    with open("/dev/full", "w") as full:
        done = cli_to(full, *command)
    assert done.returncode == 2 and done.stderr.startswith("ndcg: error: cannot write to stdout: "), done.stderr


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("output_format", ["table", "trec"])
def test_stdout_whose_encoding_lacks_a_character(tmp_path: Path, engine: str, output_format: str) -> None:
    """PYTHONIOENCODING=ascii and an é in the output (a query id in trec lines, a partition
    folder's name in the table): exit 2 naming the encoding, the character and the fixes; the
    JSON output it suggests is ASCII and prints."""
    if output_format == "trec":
        (tmp_path / "run.txt").write_text("qé Q0 d1 1 2.0 tag\n", encoding="utf-8")
        run = tmp_path / "run.txt"
    else:
        run = tmp_path / "runs"
        (run / "dt=é").mkdir(parents=True)
        pl.DataFrame({"query_id": ["qé"], "doc_id": ["d1"], "score": [2.0]}).write_parquet(
            run / "dt=é" / "part-0.parquet"
        )
    (tmp_path / "qrels.txt").write_text("qé 0 d1 1\n", encoding="utf-8")
    inputs = ("--run", run, "--qrels", tmp_path / "qrels.txt", "--engine", engine)
    ascii_stdout = {"PYTHONIOENCODING": "ascii"}
    done = cli_to(subprocess.PIPE, "evaluate", *inputs, "--output-format", output_format, "--per-query",
                  env=ascii_stdout)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        "ndcg: error: cannot print to stdout: its encoding (ascii) has no character '\\xe9' (U+00E9) of the output; "
        "set PYTHONIOENCODING=utf-8 (or a UTF-8 locale such as LANG=C.UTF-8), print JSON (--json or "
        "--output-format json: ASCII with escapes), or write the results with --out\n"
    ), done.stderr
    as_json = cli_to(subprocess.PIPE, "evaluate", *inputs, "--json", env=ascii_stdout)
    assert as_json.returncode == 0, as_json.stderr


@pytest.mark.parametrize("engine", ENGINES)
def test_trec_files_leave_out_the_queries_empty_ideal_skip_leaves_out(tmp_path: Path, engine: str) -> None:
    """``--empty-ideal skip --out-format trec``: the sample's three queries without a relevant
    document (data/README.md) have no line in per_query.trec, as in the stdout's trec lines; the
    other 37 have one per measure and cutoff."""
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", ROOT / "data/run.parquet", "--qrels", ROOT / "data/qrels.parquet",
                     "--k", "5,10", "--empty-ideal", "skip", "--out-format", "trec", "--engine", engine,
                     "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = (out / "per_query.trec").read_text().splitlines()
    queries = {line.split("\t")[1] for line in lines}
    assert len(queries) == 37 and not queries & {"q013", "q026", "q039"}
    assert len(lines) == 37 * 3  # ndcg, ndcg_cut_5, ndcg_cut_10
    assert [line.split("\t")[0].strip() for line in (out / "summary.trec").read_text().splitlines()] == [
        "ndcg", "ndcg_cut_5", "ndcg_cut_10",
    ]  # fmt: skip


def test_log_level_debug_prints_the_traceback_of_an_internal_error(tmp_path: Path) -> None:
    """A bug of ours (here one injected in the writer, in a child process) is exit 1 naming
    itself; with --log-level debug its traceback follows, as the message promises, in text and
    in JSON logs."""
    code = (
        "import sys, pipeline.io.write as w\n"
        "def broken(*args, **kwargs): raise ZeroDivisionError('injected')\n"
        "w._write_text = broken\n"
        "from pipeline.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    flags = ["evaluate", "--run", ROOT / "data/run.parquet", "--qrels", ROOT / "data/qrels.parquet", "--out-format",
             "trec", "--out", tmp_path / "out"]  # fmt: skip

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-c", code, *map(str, flags), *extra]
        return subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=120)

    plain = run()
    assert plain.returncode == 1 and "ndcg: internal error: ZeroDivisionError: injected" in plain.stderr
    assert "Traceback" not in plain.stderr
    debug = run("--log-level", "debug")
    assert debug.returncode == 1 and "Traceback (most recent call last):" in debug.stderr, debug.stderr
    assert 'raise ZeroDivisionError("injected")' in debug.stderr or "ZeroDivisionError: injected" in debug.stderr
    as_json = run("--log-level", "debug", "--log-format", "json")
    records = [json.loads(line) for line in as_json.stderr.splitlines() if line.startswith("{")]
    assert any("Traceback (most recent call last):" in record.get("traceback", "") for record in records)
