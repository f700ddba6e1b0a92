"""No surprises from names, and resource limits: paths and column names with spaces, quotes,
semicolons, unicode, glob characters and SQL keywords work on both engines; running out of
memory is a clear error with no partial output."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import evaluate
from tests.helpers import ROOT, as_table, assert_tables_close, reference, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess, with CSV files and --threads")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
# A folder name that would break any SQL or glob built by pasting text.
HOSTILE = 'it\'s "q"; DROP TABLE run; -- [1] ö 文書 select'
# Without glob characters, the DuckDB engine reads the Parquet files itself (sql/inputs.sql);
# with them, Polars reads them and hands DuckDB the frames (DuckDB would expand the pattern).
HOSTILE_NAMES = [HOSTILE, HOSTILE.replace(" [1]", "")]


def expected(k: int = 10) -> dict:
    run = pl.read_parquet(RUN).select("query_id", "doc_id", "score").rows()
    qrels = pl.read_parquet(QRELS).rows()
    return reference.ndcg_table(run, qrels, [k])


def ndcg_cli(engine: str, out: Path, *args: object, read: bool = True) -> pl.DataFrame | None:
    result = run_cli("evaluate", *args, "--k", "10", "--out", out, "--engine", engine, "--warn-results-over", "0")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return pl.read_parquet(out / "per_query.parquet", glob=False) if read else None


@pytest.mark.parametrize("hostile", HOSTILE_NAMES, ids=["glob characters", "no glob characters"])
def test_hive_directory_with_hostile_names(tmp_path: Path, engine: str, hostile: str) -> None:
    root = tmp_path / hostile / "runs"
    run = pl.read_parquet(RUN)
    for (locale,), part in run.group_by("locale"):
        folder = root / f"market=x'{locale}; --"
        folder.mkdir(parents=True)
        part.drop("locale").write_parquet(folder / "part 0; 'ö'.parquet")
    qrels = tmp_path / hostile / "qrels; 'judgments' (v1).parquet"
    pl.read_parquet(QRELS).write_parquet(qrels)
    out = tmp_path / hostile / "out"
    ndcg_cli(engine, out, "--run", root, "--qrels", qrels, read=False)
    # a hive directory is written partition by partition, each folder carrying its key
    parts = [pl.read_parquet(folder / "per_query.parquet", glob=False) for folder in sorted(out.iterdir())]
    assert {part["market"][0] for part in parts} == {f"x'{locale}; --" for locale in ("en-US", "de-DE", "ja-JP")}
    assert_tables_close(as_table(pl.concat(parts).drop("market")), expected())


def test_parquet_file_whose_name_looks_like_a_glob(tmp_path: Path, engine: str) -> None:
    folder = tmp_path / "d*r?"
    folder.mkdir()
    run = folder / "run[1].parquet"
    pl.read_parquet(RUN).write_parquet(run)
    # a file the pattern reading of that name would pick instead
    pl.read_parquet(RUN).head(5).write_parquet(folder / "run1.parquet")
    table = ndcg_cli(engine, tmp_path / "out", "--run", run, "--qrels", QRELS)
    assert_tables_close(as_table(table), expected())


def test_trec_and_csv_files_with_hostile_names(tmp_path: Path, engine: str) -> None:
    folder = tmp_path / HOSTILE
    folder.mkdir()
    run_rows = pl.read_parquet(RUN).select("query_id", "doc_id", "score")
    run_text = folder / "run 'a'; rm -rf [x].txt"
    run_text.write_text(
        "".join(f"{q} Q0 {d} {i} {s!r} tag\n" for i, (q, d, s) in enumerate(run_rows.iter_rows(), start=1)),
        encoding="utf-8",
    )
    qrels_text = folder / 'qrels "b"; select 1.txt'
    qrels_text.write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, d, r in pl.read_parquet(QRELS).iter_rows()), encoding="utf-8"
    )
    table = ndcg_cli(engine, folder / "out1", "--run", run_text, "--qrels", qrels_text)
    assert_tables_close(as_table(table), expected())

    run_csv = folder / "run; 'ö'.csv"
    run_rows.write_csv(run_csv)
    table = ndcg_cli(engine, folder / "out2", "--run", run_csv, "--qrels", qrels_text)
    assert_tables_close(as_table(table), expected())


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_hostile_column_names(tmp_path: Path, engine: str, suffix: str) -> None:
    names = {"query_id": "from", "doc_id": 'doc "id"; --', "score": "naïve 'score'; DROP TABLE run"}
    run = pl.read_parquet(RUN).select("query_id", "doc_id", "score").rename(names)
    qrels = pl.read_parquet(QRELS).rename({"query_id": "from", "doc_id": 'doc "id"; --', "relevance": "select *"})
    run_path, qrels_path = tmp_path / f"run{suffix}", tmp_path / f"qrels{suffix}"
    for frame, path in ((run, run_path), (qrels, qrels_path)):
        frame.write_parquet(path) if suffix == ".parquet" else frame.write_csv(path)
    table = ndcg_cli(
        engine,
        tmp_path / "out",
        "--run",
        run_path,
        "--qrels",
        qrels_path,
        "--query-col",
        "from",
        "--doc-col",
        'doc "id"; --',
        "--score-col",
        "naïve 'score'; DROP TABLE run",
        "--label-col",
        "select *",
    )
    assert_tables_close(as_table(table), expected())


def test_hostile_ids_are_just_values(engine: str) -> None:
    ids = ["'; DROP TABLE run; --", '"q"', "文書", "select", "a b", ""]
    run = pl.LazyFrame({"query_id": ids, "doc_id": ids, "score": [float(i) for i in range(len(ids))]})
    qrels = pl.LazyFrame({"query_id": ids, "doc_id": ids[::-1], "relevance": [1] * len(ids)})
    result = evaluate(run, qrels, k=[1], engine=engine)
    expected_table = reference.ndcg_table(run.collect().rows(), qrels.collect().rows(), [1])
    assert_tables_close(as_table(result.per_query), expected_table)


# Resource limits.


def moderately_sized_inputs(folder: Path) -> tuple[Path, Path]:
    """300,000 results over 3,000 queries: small on disk, far beyond a 1MB memory limit."""
    rows = pl.select(i=pl.int_range(300_000, dtype=pl.Int64))
    run = rows.select(
        query_id=(pl.col("i") // 100).cast(pl.String),
        doc_id=pl.format("d{}", pl.col("i") % 100),
        score=(pl.col("i") * 7919 % 1000).cast(pl.Float64),
    )
    qrels = run.select("query_id", "doc_id", relevance=(pl.col("score") % 4).cast(pl.Int64))
    run.write_parquet(folder / "run.parquet")
    qrels.write_parquet(folder / "qrels.parquet")
    return folder / "run.parquet", folder / "qrels.parquet"


def test_duckdb_out_of_memory_says_so_and_writes_nothing(tmp_path: Path) -> None:
    run, qrels = moderately_sized_inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "summary.parquet").write_bytes(b"earlier output")
    result = run_cli(
        "evaluate", "--run", run, "--qrels", qrels, "--engine", "duckdb", "--memory-limit", "1MB", "--out", out
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert "out of memory" in result.stderr and "--memory-limit" in result.stderr and "1MB" in result.stderr
    assert result.stdout == ""
    assert [p.name for p in out.iterdir()] == ["summary.parquet"]
    assert (out / "summary.parquet").read_bytes() == b"earlier output"


def test_polars_memory_limit_gives_the_same_numbers() -> None:
    # Polars has no hard cap (an allocation failure aborts its native code, so a tiny limit
    # cannot be tested there); with a limit it evaluates buckets of queries one at a time.
    run = pl.read_parquet(RUN).select("query_id", "doc_id", "score")
    qrels = pl.read_parquet(QRELS)
    limited = evaluate(RUN, QRELS, k=[10], engine="polars", memory_limit="1MB")
    assert_tables_close(as_table(limited.per_query), reference.ndcg_table(run.rows(), qrels.rows(), [10]))


def test_memory_limit_and_threads_on_duckdb_give_the_same_numbers() -> None:
    limited = evaluate(RUN, QRELS, k=[10], engine="duckdb", memory_limit="256MB", threads=1)
    assert_tables_close(as_table(limited.per_query), expected())
