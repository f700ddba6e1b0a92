"""Regenerate the sample in data/ (deterministic): python data/make_sample.py"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl

HERE = Path(__file__).resolve().parent
SEED = 20261123


def main() -> None:
    rng = random.Random(SEED)
    run_rows, qrels_rows = [], []
    for q in range(1, 41):
        query_id = f"q{q:03d}"
        locale = rng.choice(["en-US", "de-DE", "ja-JP"])
        docs = [f"d{q:03d}-{d:03d}" for d in range(rng.randint(8, 30))]
        retrieved = docs[: max(5, len(docs) - rng.randint(0, 5))]
        for doc in retrieved:
            # Scores rounded to one decimal so that ties occur, as they do in real logs.
            run_rows.append((query_id, doc, round(rng.uniform(0, 10), 1), locale))
        no_relevant = q % 13 == 0
        for doc in docs:
            if rng.random() < 0.6:
                label = 0 if no_relevant else rng.choices([-1, 0, 1, 2, 3], weights=[1, 10, 5, 3, 1])[0]
                qrels_rows.append((query_id, doc, label))
    for q in range(41, 44):  # judged queries the run never answered
        qrels_rows.append((f"q{q:03d}", f"d{q:03d}-000", 2))
    run = pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score", "locale"], orient="row")
    qrels = pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "relevance"], orient="row")
    run.sample(fraction=1.0, shuffle=True, seed=SEED).write_parquet(HERE / "run.parquet")
    qrels.write_parquet(HERE / "qrels.parquet")
    # The same run as nightly logs: hive-partitioned by day, judgments unpartitioned.
    days = run.with_columns(
        dt=pl.when(pl.col("query_id") <= "q020").then(pl.lit("2026-11-20")).otherwise(pl.lit("2026-11-21"))
    )
    for (day,), part in days.group_by("dt", maintain_order=True):
        folder = HERE / "runs" / f"dt={day}"
        folder.mkdir(parents=True, exist_ok=True)
        part.drop("dt").sort("query_id", "doc_id").write_parquet(folder / "part-0.parquet")
    print(f"run: {run.height} rows, qrels: {qrels.height} rows")


if __name__ == "__main__":
    main()
