"""Spark reads the files it is handed, literally, as the other engines do.

Spark expands every path as a Hadoop glob: a file ``run[1].parquet`` read ``run1.parquet``
beside it, and ``--partition 'dt=[1]'`` read ``dt=1``, both with exit 0 and another file's
numbers. A name holding ``:`` failed in Hadoop's checksum layer while the other engines read
it. Each case here has a decoy whose numbers differ, and the expected numbers are written out.
The cases share the test session's one SparkSession (Spark costs seconds a case).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import polars as pl
import pytest

import pipeline

pytestmark = pytest.mark.spark

QRELS = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, 0]})
# the relevant document first: NDCG@2 = 1
FIRST = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
# the relevant document second: NDCG@2 = (1/log2(3)) / 1
SECOND = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [1.0, 2.0]})
NDCG_FIRST, NDCG_SECOND = 1.0, 1 / math.log2(3)


def _ndcg_at_2(per_query: pl.DataFrame) -> float:
    return float(per_query.filter(pl.col("k") == 2)["ndcg"].item())


@pytest.mark.timeout(900)  # five Spark evaluations: 43 s quiet, past 300 s beside 8 CPU-bound processes
def test_names_with_glob_characters_and_colons_are_read_literally(
    tmp_path: Path, local_spark: object, spark_cli: Callable[..., CompletedProcess[str]]
) -> None:
    qrels = tmp_path / "qrels.parquet"
    QRELS.write_parquet(qrels)
    # a file named like a glob, beside the file the glob matches
    FIRST.write_parquet(tmp_path / "run[1].parquet")
    SECOND.write_parquet(tmp_path / "run1.parquet")
    # and names Hadoop's globs and paths treat specially
    FIRST.write_parquet(tmp_path / "run{a,b}.parquet")
    SECOND.write_parquet(tmp_path / "runa.parquet")
    FIRST.write_parquet(tmp_path / "run:1.parquet")
    for name in ("run[1].parquet", "run{a,b}.parquet", "run:1.parquet"):
        result = pipeline.evaluate(tmp_path / name, qrels, k=2, engine="spark")
        assert _ndcg_at_2(result.per_query) == pytest.approx(NDCG_FIRST, abs=1e-12), name

    # a hive partition whose value holds glob characters, beside the one the glob matches
    runs = tmp_path / "runs"
    (runs / "dt=[1]").mkdir(parents=True)
    (runs / "dt=1").mkdir()
    FIRST.write_parquet(runs / "dt=[1]" / "part-0.parquet")
    SECOND.write_parquet(runs / "dt=1" / "part-0.parquet")
    for partition, expected in (("dt=[1]", NDCG_FIRST), ("dt=1", NDCG_SECOND)):
        out = tmp_path / f"out-{partition.replace('[', '(').replace(']', ')')}"
        args = ("--run", runs, "--qrels", qrels, "--k", "2", "--partition", partition, "--out", out)
        result = spark_cli("evaluate", *args, "--engine", "spark")
        assert result.returncode == 0, result.stderr
        (written,) = list(out.glob("dt=*/per_query.parquet"))
        assert written.parent.name == partition
        assert _ndcg_at_2(pl.read_parquet(written, glob=False)) == pytest.approx(expected, abs=1e-12), partition
        manifest = json.loads((written.parent / "manifest.json").read_text())
        assert manifest["partition"] == {"dt": partition.removeprefix("dt=")}
