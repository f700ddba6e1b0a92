"""Seeded generator of realistic run + qrels Parquet files for benchmarks.

    python bench/generate.py --size 1M --out bench/data/1M

Q queries x 100 results each; scores rounded to 2 decimals (so ties occur); graded labels
-1..4 on about 20% of the retrieved documents plus judged documents the run never
retrieved; about 3% of queries have no relevant document; rows shuffled. Large sizes are
written in chunks of at most 5M rows (one Parquet file each), so memory stays flat.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import polars as pl
from tools import parse_size

RESULTS_PER_QUERY = 100
UNRETRIEVED_JUDGED_PER_QUERY = 5
CHUNK_ROWS = 5_000_000
LABELS = np.array([-1, 0, 1, 2, 3, 4])
LABEL_WEIGHTS = np.array([0.02, 0.50, 0.25, 0.15, 0.06, 0.02])


def chunk(first_query: int, queries: int, rng: np.random.Generator) -> tuple[pl.DataFrame, pl.DataFrame]:
    query = np.repeat(np.arange(first_query, first_query + queries), RESULTS_PER_QUERY)
    position = np.tile(np.arange(RESULTS_PER_QUERY), queries)
    # distinct within a query; shared across queries, as documents are in real logs
    doc = (query.astype(np.int64) * 1_000_003 + position * 9_973) % 50_000_000
    score = np.round(rng.normal(0.0, 1.0, size=query.size), 2)
    run = pl.DataFrame({"query_id": query, "doc_id": doc, "score": score}).with_columns(
        pl.format("q{}", "query_id").alias("query_id"), pl.format("D{}", "doc_id").alias("doc_id")
    )
    judged = rng.random(query.size) < 0.2
    labels = rng.choice(LABELS, size=int(judged.sum()), p=LABEL_WEIGHTS)
    extra_query = np.repeat(np.arange(first_query, first_query + queries), UNRETRIEVED_JUDGED_PER_QUERY)
    extra_doc = (
        50_000_000 + extra_query.astype(np.int64) * 10 + np.tile(np.arange(UNRETRIEVED_JUDGED_PER_QUERY), queries)
    )
    extra_labels = rng.choice(LABELS, size=extra_query.size, p=LABEL_WEIGHTS)
    qrels = pl.DataFrame(
        {
            "query_id": np.concatenate([query[judged], extra_query]),
            "doc_id": np.concatenate([doc[judged], extra_doc]),
            "relevance": np.concatenate([labels, extra_labels]).astype(np.int64),
        }
    )
    no_relevant = (qrels["query_id"].to_numpy() % 33) == 0
    qrels = qrels.with_columns(
        pl.when(pl.Series(no_relevant)).then(pl.lit(0, dtype=pl.Int64)).otherwise("relevance").alias("relevance"),
        pl.format("q{}", "query_id").alias("query_id"),
        pl.format("D{}", "doc_id").alias("doc_id"),
    )
    order = rng.permutation(run.height)
    return run[order], qrels


def generate(rows: int, out: Path, seed: int = 42) -> None:
    queries = max(1, rows // RESULTS_PER_QUERY)
    per_chunk = max(1, CHUNK_ROWS // RESULTS_PER_QUERY)
    (out / "run").mkdir(parents=True, exist_ok=True)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for index, first in enumerate(range(0, queries, per_chunk)):
        run, qrels = chunk(first, min(per_chunk, queries - first), rng)
        run.write_parquet(out / "run" / f"part-{index:04d}.parquet")
        qrels.write_parquet(out / "qrels" / f"part-{index:04d}.parquet")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1M", help="rows of the run: 1M, 10M, 100M, ...")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    generate(parse_size(args.size), args.out, args.seed)


if __name__ == "__main__":
    main()
