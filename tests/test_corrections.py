"""Issue "Corrections to the core and reliability issues": each point, on both engines."""

from __future__ import annotations

import re
import subprocess
from math import log2
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, Gain, per_query
from pipeline.sql_files import VARIABLES
from tests import reference
from tests.conftest import CONFORMANCE, ROOT, as_table, assert_tables_close, run_cli

# 1. Gain maps follow trec_eval: mapped levels get the map, unmapped keep their value, negative
#    labels gain 0 whatever the map says, the ideal ranking uses only positive gains.


def test_gain_map_on_graded_labels_by_hand(engine: str) -> None:
    # retrieved order: labels 4, 3, 0, 2, -1, 1; judged but not retrieved: 2
    labels = {"a": 4, "b": 3, "c": 0, "d": 2, "e": -1, "f": 1, "g": 2}
    run = pl.LazyFrame({"query_id": "q", "doc_id": list("abcdef"), "score": [6.0, 5.0, 4.0, 3.0, 2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": "q", "doc_id": list(labels), "relevance": list(labels.values())})
    gain = Gain.parse("1=3,2=9,4=4.5,-1=50")
    row = per_query(run, qrels, evaluation=Evaluation(cutoffs=(3,), gain=gain), engine=engine).collect()
    whole = row.filter(pl.col("k").is_null()).row(0, named=True)
    # gains by rank: 4 -> 4.5, 3 -> 3 (unmapped: its own value), 0 -> 0, 2 -> 9, -1 -> 0, 1 -> 3
    dcg = 4.5 / log2(2) + 3 / log2(3) + 0 / log2(4) + 9 / log2(5) + 0 / log2(6) + 3 / log2(7)
    # ideal gains, positive only: 9 (d), 9 (g), 4.5, 3 (b), 3 (f)
    idcg = 9 / log2(2) + 9 / log2(3) + 4.5 / log2(4) + 3 / log2(5) + 3 / log2(6)
    assert whole["dcg"] == pytest.approx(dcg)
    assert whole["idcg"] == pytest.approx(idcg)
    assert whole["ndcg"] == pytest.approx(dcg / idcg)
    at3 = row.filter(pl.col("k") == 3).row(0, named=True)
    assert at3["ndcg"] == pytest.approx((4.5 + 3 / log2(3)) / (9 + 9 / log2(3) + 4.5 / log2(4)))


def test_gain_map_level_zero_and_negative_gains(engine: str) -> None:
    run = pl.LazyFrame({"query_id": "q", "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": "q", "doc_id": ["a", "b", "c", "z"], "relevance": [0, 1, 2, 0]})
    gain = Gain.parse("0=1,2=-1")
    row = per_query(run, qrels, evaluation=Evaluation(cutoffs=(1,), gain=gain), engine=engine).collect()
    whole = row.filter(pl.col("k").is_null()).row(0, named=True)
    dcg = 1 / log2(2) + 1 / log2(3) + -1 / log2(4)  # label 0 -> 1, 1 -> 1 (unmapped), 2 -> -1
    idcg = 1 / log2(2) + 1 / log2(3) + 1 / log2(4)  # a, z (label 0 -> 1), b (1); never c (-1)
    assert whole["dcg"] == pytest.approx(dcg)
    assert whole["idcg"] == pytest.approx(idcg)


@pytest.mark.parametrize("gain", ["1=3,2=9,4=4.5", "2=9", "0=1,1=2,3=0.5"])
def test_gain_map_on_rel_level_against_reference(engine: str, gain: str) -> None:
    # qrels.rel_level has graded labels 0..4, so a map changes NDCG here (unlike qrels.test).
    run_rows = [
        (q, d, float(s))
        for q, _, d, _, s, _ in (line.split() for line in (CONFORMANCE / "results.test").read_text().splitlines())
    ]
    qrels_rows = [
        (q, d, int(label))
        for q, _, d, label in (line.split() for line in (CONFORMANCE / "qrels.rel_level").read_text().splitlines())
    ]
    spec = Gain.parse(gain)
    table = per_query(
        CONFORMANCE / "results.test",
        CONFORMANCE / "qrels.rel_level",
        evaluation=Evaluation(cutoffs=(10, 100), gain=spec),
        engine=engine,
    ).collect()
    expected = reference.ndcg_table(run_rows, qrels_rows, [10, 100], levels=dict(spec.levels))
    assert_tables_close(as_table(table), expected)
    unmapped = per_query(
        CONFORMANCE / "results.test",
        CONFORMANCE / "qrels.rel_level",
        evaluation=Evaluation(cutoffs=(10, 100)),
        engine=engine,
    ).collect()
    assert (table["ndcg"] - unmapped["ndcg"]).abs().max() > 1e-3  # the map really changes the numbers


# 2. --max-results keeps the N best-ranked results after ordering, not the first N rows.


def test_max_results_keeps_best_ranked(tmp_path: Path, engine: str) -> None:
    run = tmp_path / "run.txt"
    # file order puts the worst results first
    run.write_text("q Q0 worst 1 0.1 t\nq Q0 bad 2 0.2 t\nq Q0 best 3 0.9 t\nq Q0 good 4 0.8 t\n")
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q 0 best 1\nq 0 good 1\nq 0 worst 1\n")
    result = run_cli(
        "evaluate",
        "--run",
        run,
        "--qrels",
        qrels,
        "--k",
        "2",
        "--max-results",
        "2",
        "--output-format",
        "trec",
        "--per-query",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    lines = dict(((m.strip(), q), float(v)) for m, q, v in (line.split("\t") for line in result.stdout.splitlines()))
    # kept: best (1), good (1); ideal over all three judged: 1, 1, 1
    assert lines[("ndcg_cut_2", "q")] == pytest.approx(1.0, abs=1e-4)
    assert lines[("ndcg", "q")] == pytest.approx((1 + 1 / log2(3)) / (1 + 1 / log2(3) + 1 / log2(4)), abs=1e-4)


# 3. Under a gain map the whole-ranking line is still called `ndcg`.


def test_trec_output_names_under_gain_map(engine: str) -> None:
    result = run_cli(
        "evaluate",
        "--run",
        CONFORMANCE / "results.test",
        "--qrels",
        CONFORMANCE / "qrels.test",
        "--gain",
        "1=3,2=9,4=4.5",
        "--k",
        "10",
        "--output-format",
        "trec",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    measures = [line.split("\t")[0].strip() for line in result.stdout.splitlines()]
    assert measures == ["ndcg", "ndcg_cut_10"]


# 4. Unreadable inputs are invalid input: exit 3, naming the path; bad flags stay exit 2.


def unreadable_inputs(tmp_path: Path) -> dict[str, tuple[str, list[str]]]:
    (tmp_path / "empty_dir").mkdir()
    (tmp_path / "not.parquet").write_text("query_id,doc_id,score\nq,d,1\n")
    good = pl.DataFrame({"query_id": ["q"], "doc_id": ["d"], "score": [1.0]})
    good.write_parquet(tmp_path / "good.parquet")
    data = (tmp_path / "good.parquet").read_bytes()
    (tmp_path / "truncated.parquet").write_bytes(data[: len(data) // 2])
    (tmp_path / "bad.csv").write_text('query_id,doc_id,score\nq,d,"unterminated\n')
    (tmp_path / "bad_score.csv").write_text("query_id,doc_id,score\nq,d,high\n")
    (tmp_path / "bad.trec").write_text("q Q0 d 1 0.5 tag\nthis line is short\n")
    (tmp_path / "bad_score.trec").write_text("q Q0 d 1 high tag\n")
    return {
        "missing path": (str(tmp_path / "nope.parquet"), ["no such file"]),
        "directory without parquet": (str(tmp_path / "empty_dir"), ["directory holds no Parquet files"]),
        "glob matching nothing": (str(tmp_path / "*.nothing.parquet"), ["nothing matches this pattern"]),
        "not parquet": (str(tmp_path / "not.parquet"), ["cannot read"]),
        "truncated parquet": (str(tmp_path / "truncated.parquet"), ["cannot read"]),
        "csv that does not parse": (str(tmp_path / "bad.csv"), ["bad.csv"]),
        "csv score that is text": (str(tmp_path / "bad_score.csv"), ["score"]),
        "trec line that does not parse": (str(tmp_path / "bad.trec"), [":2:", "this line is short"]),
        "trec score that is text": (str(tmp_path / "bad_score.trec"), [":1:", "high"]),
    }


@pytest.mark.parametrize(
    "case",
    [
        "missing path",
        "directory without parquet",
        "glob matching nothing",
        "not parquet",
        "truncated parquet",
        "csv that does not parse",
        "csv score that is text",
        "trec line that does not parse",
        "trec score that is text",
    ],
)
def test_unreadable_run_exits_3(tmp_path: Path, engine: str, case: str) -> None:
    path, words = unreadable_inputs(tmp_path)[case]
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", path, "--qrels", CONFORMANCE / "qrels.test", "--engine", engine, "--out", out)
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    message = result.stderr
    assert str(Path(path).name.replace("*", "")) in message or path in message
    for word in words:
        assert word in message, message
    assert not out.exists()


def test_unreadable_qrels_exits_3(tmp_path: Path, engine: str) -> None:
    result = run_cli(
        "evaluate", "--run", CONFORMANCE / "results.test", "--qrels", tmp_path / "missing.txt", "--engine", engine
    )
    assert result.returncode == 3
    assert "missing.txt" in result.stderr and "no such file" in result.stderr


@pytest.mark.parametrize(
    "flags",
    [
        ["--k", "0"],
        ["--k", "five"],
        ["--k", "5,-1"],
        ["--gain", "1:3"],
        ["--gain", "squared"],
        ["--max-results", "0"],
        ["--engine", "spark2"],
        ["--log-base", "1", "--discount", "jk"],
    ],
)
def test_bad_flags_exit_2(flags: list[str]) -> None:
    result = run_cli("evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", *flags)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "error" in result.stderr


# 5. The SQL files' variables are a public interface: stable names, documented in each header
#    with SET VARIABLE lines that run when pasted into the duckdb CLI from the repository root.

SQL_FILES = sorted((ROOT / "sql").glob("*.sql"))


def header(path: Path) -> str:
    lines = path.read_text().splitlines()
    return "\n".join(line for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("--"))])


@pytest.mark.parametrize("path", SQL_FILES, ids=lambda p: p.name)
def test_sql_variables_are_the_public_ones_and_documented(path: Path) -> None:
    used = set(re.findall(r"getvariable\('([a-z_]+)'\)", path.read_text()))
    assert used <= set(VARIABLES), f"{path.name} uses undeclared variables {used - set(VARIABLES)}"
    text = header(path)
    for name in used:
        assert name in text, f"{path.name}: variable {name} is not documented in the header"


def duckdb_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(Path(__import__("sys").executable).parent / "duckdb"), *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def test_documented_set_variable_lines_run_in_the_duckdb_cli(tmp_path: Path) -> None:
    """Paste every SET VARIABLE line of every header into the CLI, then read the files."""
    lines = []
    for path in SQL_FILES:
        for line in header(path).splitlines():
            match = re.search(r"(SET VARIABLE .*?;)", line)
            if match:
                lines.append(match.group(1))
    names = {re.match(r"SET VARIABLE (\w+)", line).group(1) for line in lines}  # type: ignore[union-attr]
    assert {
        "run_path",
        "qrels_path",
        "ks",
        "gain",
        "gain_map",
        "discount",
        "log_base",
        "all_queries",
        "max_results",
        "out_path",
    } <= names
    out = tmp_path / "sql"
    out.mkdir()
    script = tmp_path / "script.sql"
    pasted = [line for line in lines if not line.startswith("SET VARIABLE out_path")]
    script.write_text(
        "\n".join([*pasted, f"SET VARIABLE out_path = '{out}';", ".read sql/ndcg.sql", ".read sql/export.sql", ""])
    )
    result = duckdb_cli("-bail", "-c", f".read {script}")
    assert result.returncode == 0 and "Error" not in result.stderr + result.stdout, result.stderr + result.stdout
    assert (out / "per_query.parquet").exists() and (out / "summary.parquet").exists()


def test_duckdb_cli_matches_the_polars_engine(tmp_path: Path) -> None:
    out = tmp_path / "sql"
    out.mkdir()
    result = duckdb_cli(
        "-cmd",
        "SET VARIABLE run_path = 'data/run.parquet'",
        "-cmd",
        "SET VARIABLE qrels_path = 'data/qrels.parquet'",
        "-cmd",
        "SET VARIABLE ks = [1, 5, 10]",
        "-cmd",
        "SET VARIABLE gain_map = MAP {1: 3, 2: 9};",
        "-cmd",
        "SET VARIABLE all_queries = true",
        "-cmd",
        "SET VARIABLE max_results = 12",
        "-cmd",
        f"SET VARIABLE out_path = '{out}'",
        "-cmd",
        ".read sql/ndcg.sql",
        "-c",
        ".read sql/export.sql",
    )
    assert result.returncode == 0, result.stderr
    by_cli = pl.read_parquet(out / "per_query.parquet")
    by_polars = per_query(
        ROOT / "data/run.parquet",
        ROOT / "data/qrels.parquet",
        evaluation=Evaluation(cutoffs=(1, 5, 10), gain=Gain.parse("1=3,2=9"), all_queries=True, max_results=12),
    ).collect()
    assert_tables_close(as_table(by_cli), as_table(by_polars))
