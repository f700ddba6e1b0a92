"""Fuzzing the command line with broken inputs: corrupted Parquet (seeded byte flips and
truncations of a valid file) and garbled TREC and CSV text. Every case must end in a clean
error (exit 3) and never a traceback; a flip that leaves a readable file may score (exit 0),
but then the output is complete and its numbers are those of the file's actual contents."""

from __future__ import annotations

import random
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
import pytest

from tests.helpers import ROOT, as_table, assert_tables_close, reference, run_cli

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
SEED = 20261121
VALID_RUN_TEXT = "q1 Q0 a 1 3.5 t\nq1 Q0 b 2 2.0 t\nq2 Q0 a 1 1.0 t\n"
VALID_QRELS_TEXT = "q1 0 a 1\nq1 0 b 0\nq2 0 a 2\n"


def corrupted_parquet(kind: str, index: int, original: bytes) -> bytes:
    rng = random.Random(f"{SEED}-{kind}-{index}")
    data = bytearray(original)
    if kind == "truncate":
        return bytes(data[: rng.randrange(0, len(data) - 1)])
    if kind == "footer":  # the metadata at the end: flips there break the schema or offsets
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data) - 200, len(data) - 8)] ^= 1 << rng.randrange(8)
        return bytes(data)
    for _ in range(rng.randint(1, 16)):  # anywhere, including data pages
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def garbled_text(kind: str, index: int) -> str:
    rng = random.Random(f"{SEED}-{kind}-{index}")
    base = VALID_RUN_TEXT if kind.startswith("trec") else "query_id,doc_id,score\nq1,a,3.5\nq1,b,2.0\nq2,a,1.0\n"
    chars = list(base)
    for _ in range(rng.randint(1, 6)):
        position = rng.randrange(len(chars))
        action = rng.choice(["delete", "insert", "replace"])
        junk = rng.choice(["\x00", "\ufffd", '"', ",", " ", "\n", "nan", "inf", "-", "é", "\t", "1e999", "x"])
        if action == "delete":
            del chars[position]
        elif action == "insert":
            chars.insert(position, junk)
        else:
            chars[position] = junk
    return "".join(chars)


def assert_clean(result_code: int, stderr: str, out: Path, allowed: set[int]) -> None:
    assert "Traceback" not in stderr, stderr
    assert result_code in allowed, (result_code, stderr)
    if result_code == 0:
        assert sorted(p.name for p in out.iterdir()) == [
            "_SUCCESS",
            "manifest.json",
            "per_query.parquet",
            "summary.parquet",
        ]
    else:
        assert stderr.startswith("ndcg: error:"), stderr
        assert not out.exists()


def independent_read(path: Path) -> list[tuple]:
    """The run's rows as pyarrow reads them, or DuckDB's reader when pyarrow refuses the
    Arrow schema kept in the metadata (a part Polars does not need)."""
    try:
        table = pq.read_table(path, columns=["query_id", "doc_id", "score"])
        return [(r["query_id"], r["doc_id"], r["score"]) for r in table.to_pylist()]
    except OSError:
        return duckdb.execute("select query_id, doc_id, score from read_parquet($1)", [str(path)]).fetchall()


PARQUET_CASES = [(kind, i) for kind in ("truncate", "footer", "anywhere") for i in range(4)]


@pytest.mark.parametrize(("kind", "index"), PARQUET_CASES, ids=[f"{k}-{i}" for k, i in PARQUET_CASES])
def test_corrupted_parquet(tmp_path: Path, kind: str, index: int) -> None:
    original = pl.read_parquet(RUN).head(200)
    clean = tmp_path / "clean.parquet"
    original.write_parquet(clean, compression="uncompressed" if index % 2 else "zstd")
    broken = tmp_path / "run.parquet"
    broken.write_bytes(corrupted_parquet(kind, index, clean.read_bytes()))
    engine = ("polars", "duckdb")[index % 2]
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", broken, "--qrels", QRELS, "--engine", engine, "--out", out, "--k", "5")
    # A truncated file cannot be read. A flip may land where it changes nothing we read
    # (statistics, key-value metadata) or change a value in a data page; the file is then
    # scored like any other, and the numbers must be those of what an independent reader
    # (pyarrow) finds in it, never something else.
    assert_clean(result.returncode, result.stderr, out, {3} if kind == "truncate" else {0, 3})
    if result.returncode == 0:
        rows = independent_read(broken)
        expected = reference.ndcg_table(rows, pl.read_parquet(QRELS).rows(), [5])
        assert_tables_close(as_table(pl.read_parquet(out / "per_query.parquet")), expected)


TEXT_CASES = [(kind, i) for kind in ("trec run", "trec qrels", "csv run") for i in range(4)]


@pytest.mark.parametrize(("kind", "index"), TEXT_CASES, ids=[f"{k}-{i}" for k, i in TEXT_CASES])
def test_garbled_text(tmp_path: Path, kind: str, index: int) -> None:
    text = garbled_text(kind, index)
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text(VALID_RUN_TEXT, encoding="utf-8")
    qrels.write_text(VALID_QRELS_TEXT, encoding="utf-8")
    if kind == "trec qrels":
        qrels.write_text(text.replace(" Q0 ", " 0 ").replace(" t\n", "\n"), encoding="utf-8")
    elif kind == "csv run":
        run = tmp_path / "run.csv"
        run.write_text(text, encoding="utf-8")
    else:
        run.write_text(text, encoding="utf-8")
    engine = ("polars", "duckdb")[index % 2]
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine, "--out", out, "--k", "2")
    # garbling may also leave valid lines (a changed score, id or label): exit 0 is then fine
    assert_clean(result.returncode, result.stderr, out, {0, 3, 5})


@pytest.mark.parametrize(
    "text",
    [
        # found by fuzzing: a joined line, ragged beyond the rows Polars infers the schema from
        "query_id,doc_id,score\nq1,a,3.5\nq1,b,2.0q2,a,1.0\n",
        "query_id,doc_id,score\nq1,a,3.5,extra\n",
        "query_id,doc_id\nq1,a\n",
        "",
        '"unterminated,quote\n',
    ],
)
def test_known_bad_csv(tmp_path: Path, text: str) -> None:
    run = tmp_path / "run.csv"
    run.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--out", out)
    assert_clean(result.returncode, result.stderr, out, {3})
    assert "run.csv" in result.stderr


def test_binary_garbage_as_every_format(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(random.Random(SEED).randbytes(4096))
    for run_format in ("parquet", "trec", "csv", "tsv"):
        out = tmp_path / f"out-{run_format}"
        result = run_cli("evaluate", "--run", garbage, "--run-format", run_format, "--qrels", QRELS, "--out", out)
        assert_clean(result.returncode, result.stderr, out, {3})
        assert "garbage.bin" in result.stderr
