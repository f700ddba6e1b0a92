"""Reruns write identical bytes: ``ndcg evaluate --measures all_trec`` twice, each in its own
process, gives the same per-query and summary files and the same manifest (its two timestamps
aside), on every local engine. Float addition is not associative, so this holds only because
every sum runs in rank order and every mean in query order; before that, G, Rndcg, ndcg_rel,
rbp, rbp_resid, bpref, infAP and binG differed in their last bits in up to 2,000 of 44,000 rows
of data of this size."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import run_cli_process

pytestmark = pytest.mark.local_engines("the command line in a subprocess (Spark: the same SQL, tests/test_spark.py)")


def write_inputs(folder: Path) -> tuple[Path, Path]:
    """4,000 queries of 100 results, scores tied in runs of about two, a third judged -1..3:
    enough rows that parallel work splits every query's rows differently from run to run."""
    rng = random.Random(51)
    queries, depth = 4000, 100
    run = pl.DataFrame(
        {
            "query_id": [f"q{q}" for q in range(queries) for _ in range(depth)],
            "doc_id": [f"d{d}" for _ in range(queries) for d in range(depth)],
            "score": [float(rng.randrange(50)) for _ in range(queries * depth)],
        }
    )
    judged = [(f"q{q}", f"d{d}") for q in range(queries) for d in range(depth) if rng.random() < 0.3]
    qrels = pl.DataFrame(
        {
            "query_id": [q for q, _ in judged],
            "doc_id": [d for _, d in judged],
            "relevance": [rng.randrange(-1, 4) for _ in judged],
        }
    )
    run.write_parquet(folder / "run.parquet")
    qrels.write_parquet(folder / "qrels.parquet")
    return folder / "run.parquet", folder / "qrels.parquet"


def outputs(out: Path) -> dict[str, object]:
    files: dict[str, object] = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "manifest.json"}
    manifest = json.loads((out / "manifest.json").read_text())
    for stamp in ("started_at", "finished_at"):
        manifest.pop(stamp)
    files["manifest.json"] = manifest
    return files


@pytest.mark.timeout(300)
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_all_trec_twice_writes_identical_files(tmp_path: Path, engine: str) -> None:
    run, qrels = write_inputs(tmp_path)
    written = []
    for attempt in ("first", "second"):
        out = tmp_path / attempt
        result = run_cli_process(
            "evaluate", "--run", run, "--qrels", qrels, "--measures", "all_trec", "--engine", engine, "--out", out
        )
        assert result.returncode == 0, result.stderr
        written.append(outputs(out))
    first, second = written
    assert set(first) == {"_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet"}
    per_query = pl.read_parquet(tmp_path / "first" / "per_query.parquet")
    assert per_query.height == 4000 * 11 and {"G", "Rndcg", "rbp", "infap"} <= set(per_query.columns)
    for name in first:
        assert first[name] == second[name], f"{name} differs between two runs on {engine}"


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_document_weighted_ap_twice_gives_the_same_bits(engine: str) -> None:
    """TF-Ranking's weighted AP (map under --doc-weight-col) and scikit-learn's
    average_precision_score sum weights that are not dyadic, across tied scores, and so do the
    list weights of the means: each sum in a fixed order. Summed per cutoff and per score in
    whatever order the rows sat, about 3,600 and 340 of these 3,000 rankings changed in their last
    bits from one run to the next on Polars, and a few on DuckDB; the list weights of about 1,400
    queries, and so the means, on both."""
    from pipeline import api

    rng = random.Random(52)
    queries, depth = 3000, 20
    rows = [(f"q{q}", f"d{d}") for q in range(queries) for d in range(depth)]
    run = pl.DataFrame(
        {
            "query_id": [q for q, _ in rows],
            "doc_id": [d for _, d in rows],
            "score": [float(rng.randrange(8)) for _ in rows],  # ties of about 2.5 results
            "w": [rng.choice([0.0, 0.1, 0.3, 0.7, 1.9]) for _ in rows],
        }
    )
    qrels = run.select("query_id", "doc_id").with_columns(relevance=pl.Series([rng.randrange(4) for _ in rows]))
    options = {"doc_weight_col": "w", "measures": ["ndcg", "map", "average_precision_score"], "k": [5]}
    first, second = (api.evaluate(run, qrels, engine=engine, **options) for _ in range(2))
    checked = {"per_query": ["map", "average_precision_score"], "summary": ["ndcg", "map"]}
    checked["query_weights"] = ["weight", "weight_map"]
    for table, columns in checked.items():
        key = [c for c in ("query_id", "k") if c in getattr(first, table).columns]
        ours, again = (getattr(result, table).sort(key, nulls_last=False) for result in (first, second))
        for column in columns:
            differing = (ours[column] != again[column]).sum()
            assert differing == 0, f"{table} {column}: {differing} rows differ between two runs on {engine}"
