"""Seeded generator of realistic run + qrels Parquet files for benchmarks.

    python bench/generate.py --size 1M --layout shuffled --out bench/data/1M-shuffled

Q queries x 100 results each; scores rounded to 3 decimals (so ties occur: about one tied
pair per query); graded labels -1..4 on about 20% of the retrieved documents plus 2 judged
documents per query that the run never retrieved; about 3% of queries have no relevant
document. Files hold at most 5M rows each. The run's rows are laid out as one of:

- ``shuffled``: shuffled across the whole dataset, so every query's rows are spread over
  every file (a log written by many parallel workers). Written in two passes: each 5M-row
  chunk is generated, and its rows scattered to their places in one global permutation
  (temporary files, one per chunk and output file); each output file then gathers its rows
  and orders them by place. Memory: one chunk, one output file and the permutation (8 bytes
  a row: 800 MB at 100M rows).
- ``clustered``: each query's rows contiguous, the queries in random order over the whole
  dataset and each query's results in random order within it (a search log written per
  request).
- ``chunked``: the layout of the benchmarks before 2026-11-26: queries in order, rows
  shuffled only within each 5M-row chunk (one file each).

The qrels are written one file per chunk of queries, in the run's query order for
``clustered``, shuffled within the file otherwise.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

import numpy as np
import polars as pl
from tools import parse_size

RESULTS_PER_QUERY = 100
UNRETRIEVED_JUDGED_PER_QUERY = 2
SCORE_DECIMALS = 3
CHUNK_ROWS = 5_000_000
LAYOUTS = ("shuffled", "clustered", "chunked")
LABELS = np.array([-1, 0, 1, 2, 3, 4])
LABEL_WEIGHTS = np.array([0.02, 0.50, 0.25, 0.15, 0.06, 0.02])


def chunk(queries: np.ndarray, rng: np.random.Generator, layout: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The run and qrels of ``queries`` (query numbers, in the order written)."""
    query = np.repeat(queries, RESULTS_PER_QUERY)
    position = np.tile(np.arange(RESULTS_PER_QUERY), queries.size)
    if layout == "clustered":  # each query's results in random order (scores are i.i.d.)
        position = rng.permuted(position.reshape(queries.size, RESULTS_PER_QUERY), axis=1).ravel()
    # distinct within a query; shared across queries, as documents are in real logs
    doc = (query.astype(np.int64) * 1_000_003 + position * 9_973) % 50_000_000
    score = np.round(rng.normal(0.0, 1.0, size=query.size), SCORE_DECIMALS)
    run = pl.DataFrame({"query_id": query, "doc_id": doc, "score": score}).with_columns(
        pl.format("q{}", "query_id").alias("query_id"), pl.format("D{}", "doc_id").alias("doc_id")
    )
    judged = rng.random(query.size) < 0.2
    labels = rng.choice(LABELS, size=int(judged.sum()), p=LABEL_WEIGHTS)
    extra_query = np.repeat(queries, UNRETRIEVED_JUDGED_PER_QUERY)
    extra_doc = (
        50_000_000 + extra_query.astype(np.int64) * 10 + np.tile(np.arange(UNRETRIEVED_JUDGED_PER_QUERY), queries.size)
    )
    extra_labels = rng.choice(LABELS, size=extra_query.size, p=LABEL_WEIGHTS)
    qrels = pl.DataFrame(
        {
            "query_id": np.concatenate([query[judged], extra_query]),
            "doc_id": np.concatenate([doc[judged], extra_doc]),
            "relevance": np.concatenate([labels, extra_labels]).astype(np.int64),
        }
    )
    if layout == "clustered":  # each query's judgments together, in the run's query order
        slot = np.arange(queries.size)
        slots = np.concatenate(
            [np.repeat(slot, RESULTS_PER_QUERY)[judged], np.repeat(slot, UNRETRIEVED_JUDGED_PER_QUERY)]
        )
        qrels = qrels[np.argsort(slots, kind="stable")]
    else:
        qrels = qrels[rng.permutation(qrels.height)]
    no_relevant = (qrels["query_id"].to_numpy() % 33) == 0
    qrels = qrels.with_columns(
        pl.when(pl.Series(no_relevant)).then(pl.lit(0, dtype=pl.Int64)).otherwise("relevance").alias("relevance"),
        pl.format("q{}", "query_id").alias("query_id"),
        pl.format("D{}", "doc_id").alias("doc_id"),
    )
    if layout == "chunked":
        return run[rng.permutation(run.height)], qrels
    return run, qrels  # shuffled: the caller scatters the run's rows


def generate(rows: int, out: Path, seed: int = 42, layout: str = "shuffled", chunk_rows: int = CHUNK_ROWS) -> None:
    queries = max(1, rows // RESULTS_PER_QUERY)
    per_chunk = max(1, chunk_rows // RESULTS_PER_QUERY)
    total = queries * RESULTS_PER_QUERY
    for side in ("run", "qrels"):
        shutil.rmtree(out / side, ignore_errors=True)
        (out / side).mkdir(parents=True)
    rng = np.random.default_rng(seed)
    order = rng.permutation(queries) if layout == "clustered" else np.arange(queries)
    place = rng.permutation(total) if layout == "shuffled" else None  # row i goes to place[i]
    files = -(-total // (per_chunk * RESULTS_PER_QUERY))
    scatter = out / "scatter"
    for index, first in enumerate(range(0, queries, per_chunk)):
        run, qrels = chunk(order[first : first + per_chunk], rng, layout)
        qrels.write_parquet(out / "qrels" / f"part-{index:04d}.parquet")
        if place is None:
            run.write_parquet(out / "run" / f"part-{index:04d}.parquet")
            continue
        rows_place = place[first * RESULTS_PER_QUERY : first * RESULTS_PER_QUERY + run.height]
        target = rows_place // (per_chunk * RESULTS_PER_QUERY)
        run = run.with_columns(place=rows_place, target=target)
        for (file,), part in run.partition_by("target", as_dict=True, include_key=False).items():
            (scatter / f"{file:04d}").mkdir(parents=True, exist_ok=True)
            part.write_parquet(scatter / f"{file:04d}" / f"from-{index:04d}.parquet")
    if place is not None:
        for file in range(files):
            gathered = pl.read_parquet(scatter / f"{file:04d}" / "*.parquet").sort("place").drop("place")
            gathered.write_parquet(out / "run" / f"part-{file:04d}.parquet")
        shutil.rmtree(scatter)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1M", help="rows of the run: 1M, 10M, 100M, ...")
    parser.add_argument("--layout", choices=LAYOUTS, default="shuffled")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    generate(parse_size(args.size), args.out, args.seed, args.layout)


if __name__ == "__main__":
    main()
