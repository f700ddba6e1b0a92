"""UInt64 ids, up to 2**64 - 1, read, joined and scored alike on Polars, DuckDB and Spark.

Spark reads a Parquet UINT64 as Decimal(20, 0) (it has no unsigned integer) and refused it as
an id, where the other engines read it; it now reads it as the integer it is, from the files'
own types (a real DECIMAL(20, 0) id stays refused on every engine). The ids join as on the
other engines: a UInt64 with a UInt64 or a narrower unsigned integer as a number, with a signed
integer as text. Tied results are ordered by doc_id descending in string order, so the ids'
text decides the ranking, and the expected numbers are written out below. The files' names
hold a ':', which Spark reads too (tests/test_spark_paths.py), also where it reads their footers.
"""

from __future__ import annotations

import math
from pathlib import Path
from subprocess import CompletedProcess

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import pipeline
from tests.helpers import TOLERANCE, run_cli

MAX = 2**64 - 1  # the largest UInt64
ABOVE = 2**63 + 1  # above every Int64
# query MAX: three tied results; in doc_id's string order, descending: "9223372036854775809"
# (label 0), "3" (label 1), "18446744073709551615" (label 2); numbers would rank MAX first
TIED_DCG = 0 + 1 / math.log2(3) + 2 / math.log2(4)
# query 7: doc 1 (score 2, label 1), then doc 2 (score 1, label 2)
SEVEN_DCG = 1 + 2 / math.log2(3)
IDEAL = 2 + 1 / math.log2(3)  # labels 2 and 1, for both queries


def _write(path: Path, columns: dict[str, pa.Array]) -> Path:
    pq.write_table(pa.table(columns), path)
    return path


def _run(folder: Path) -> Path:
    return _write(
        folder / "run:uint64.parquet",  # a ':' too, which Hadoop's checksum layer once refused
        {
            "query_id": pa.array([MAX, MAX, MAX, 7, 7], pa.uint64()),
            "doc_id": pa.array([ABOVE, 3, MAX, 1, 2], pa.uint64()),
            "score": pa.array([1.0, 1.0, 1.0, 2.0, 1.0]),
        },
    )


def _qrels(folder: Path, ids: pa.DataType) -> Path:
    # a signed or narrower qrels cannot hold query MAX: it is then only in the run
    wide = ids == pa.uint64()
    queries = [MAX, MAX, MAX, 7, 7] if wide else [7, 7]
    docs = [ABOVE, 3, MAX, 1, 2] if wide else [1, 2]
    labels = [0, 1, 2, 1, 2] if wide else [1, 2]
    return _write(
        folder / "qrels:ids.parquet",
        {"query_id": pa.array(queries, ids), "doc_id": pa.array(docs, ids), "relevance": pa.array(labels, pa.int64())},
    )


def _evaluate(engine: str, request: pytest.FixtureRequest, *args: object) -> CompletedProcess[str]:
    """The command line; on Spark run in this process on the shared session (a subprocess
    would start a JVM of its own)."""
    if engine == "spark":
        return request.getfixturevalue("spark_cli")("evaluate", *args, "--engine", engine)  # type: ignore[no-any-return]
    return run_cli("evaluate", *args, "--engine", engine)


@pytest.mark.parametrize(
    ("qrels_ids", "query_type"),
    [
        (pa.uint64(), pl.UInt64),  # both UInt64: numbers
        (pa.uint32(), pl.UInt64),  # both unsigned: numbers, as UInt64
        (pa.int64(), pl.String),  # a UInt64 against a signed integer: text (no integer holds both)
    ],
    ids=["uint64", "uint32", "int64"],
)
def test_uint64_ids_above_2_63_score_alike_on_every_engine(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest, qrels_ids: pa.DataType, query_type: pl.DataType
) -> None:
    run, qrels = _run(tmp_path), _qrels(tmp_path, qrels_ids)
    done = _evaluate(
        engine, request, "--run", run, "--qrels", qrels, "--k", "3", "--out", tmp_path / "out", "--verbose"
    )
    assert done.returncode == 0, done.stderr
    table = pl.read_parquet(tmp_path / "out" / "per_query.parquet")
    assert table.schema["query_id"] == query_type
    at_3 = {str(row["query_id"]): row for row in table.filter(pl.col("k") == 3).iter_rows(named=True)}
    expected = {"7": SEVEN_DCG}
    if qrels_ids == pa.uint64():
        expected[str(MAX)] = TIED_DCG
    else:
        assert f"queries only in the run {run}, not evaluated: 1 ({MAX})" in done.stderr
    assert set(at_3) == set(expected)
    for query, dcg in expected.items():
        assert at_3[query]["dcg"] == pytest.approx(dcg, abs=TOLERANCE), query
        assert at_3[query]["idcg"] == pytest.approx(IDEAL, abs=TOLERANCE), query
        assert at_3[query]["ndcg"] == pytest.approx(dcg / IDEAL, abs=TOLERANCE), query


def test_a_decimal_id_is_refused_on_every_engine_but_spark_tells_it_from_uint64(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
) -> None:
    """Spark reads DECIMAL(20, 0) and UINT64 alike; the files' own types tell them apart."""
    run = _write(
        tmp_path / "decimal.parquet",
        {
            "query_id": pa.array([7, 7], pa.decimal128(20, 0)),
            "doc_id": pa.array([1, 2], pa.uint64()),
            "score": pa.array([2.0, 1.0]),
        },
    )
    done = _evaluate(engine, request, "--run", run, "--qrels", _qrels(tmp_path, pa.uint64()), "--k", "3")
    assert done.returncode == 3
    assert "column 'query_id' has type Decimal(precision=20, scale=0); ids must be string or integer" in done.stderr


def test_uint64_frames_score_alike_on_every_engine(engine: str) -> None:
    """Polars frames through the API: Spark's conversion from Arrow refuses unsigned integers;
    they are handed over as Decimal(20, 0) (UInt64) or Int64, marked unsigned."""
    ids = {"query_id": pl.UInt64, "doc_id": pl.UInt64}
    run = pl.DataFrame(
        {"query_id": [MAX, MAX, MAX, 7, 7], "doc_id": [ABOVE, 3, MAX, 1, 2], "score": [1.0, 1.0, 1.0, 2.0, 1.0]},
        schema_overrides=ids,
    )
    qrels = pl.DataFrame(
        {"query_id": [MAX, MAX, MAX, 7, 7], "doc_id": [ABOVE, 3, MAX, 1, 2], "relevance": [0, 1, 2, 1, 2]},
        schema_overrides={**ids, "relevance": pl.UInt8},
    )
    table = pipeline.evaluate(run, qrels, k=3, engine=engine).per_query  # type: ignore[arg-type]
    assert table.schema["query_id"] == pl.UInt64
    at_3 = {row["query_id"]: row for row in table.filter(pl.col("k") == 3).iter_rows(named=True)}
    assert set(at_3) == {MAX, 7}
    for query, dcg in ((MAX, TIED_DCG), (7, SEVEN_DCG)):
        assert at_3[query]["dcg"] == pytest.approx(dcg, abs=TOLERANCE), query
        assert at_3[query]["ndcg"] == pytest.approx(dcg / IDEAL, abs=TOLERANCE), query
