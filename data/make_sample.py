"""Regenerate the sample in data/ (deterministic): python data/make_sample.py

Every file the README's and docs/'s commands read is made here, from one seed; data/README.md
says what each is."""

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
    write_companions(run, qrels)
    print(f"run: {run.height} rows, qrels: {qrels.height} rows")


def write_companions(run: pl.DataFrame, qrels: pl.DataFrame) -> None:
    """The files derived from the run and qrels above (their own random draws, so the run and
    qrels stay as they were): a second system, the sample as TREC text, a run carrying its own
    labels, and a table of query attributes."""
    rng = random.Random(SEED + 1)
    labels = dict(zip(zip(qrels["query_id"], qrels["doc_id"], strict=True), qrels["relevance"], strict=True))
    # System B: a model that learned something: a relevant document's score is raised by its
    # label, plus noise, so B is better than A on most queries (and worse on a few).
    ordered = run.sort("query_id", "doc_id")
    raised = [
        round(rng.uniform(0, 10) + 2.5 * max(labels.get(pair, 0), 0), 1)
        for pair in zip(ordered["query_id"], ordered["doc_id"], strict=True)
    ]
    run_b = ordered.with_columns(score=pl.Series(raised))
    run_b.write_parquet(HERE / "run_b.parquet")
    for day, part in (
        ("2026-11-20", run_b.filter(pl.col("query_id") <= "q020")),
        ("2026-11-21", run_b.filter(pl.col("query_id") > "q020")),
    ):
        folder = HERE / "runs_b" / f"dt={day}"
        folder.mkdir(parents=True, exist_ok=True)
        part.write_parquet(folder / "part-0.parquet")
    # TREC text: run lines `qid Q0 docno rank score tag`, ranked as trec_eval ranks (score
    # descending, ties by docno descending); qrels lines `qid iter docno rel`.
    trec = HERE / "trec"
    trec.mkdir(exist_ok=True)
    ranked = run.sort(["query_id", "score", "doc_id"], descending=[False, True, True]).with_columns(
        rank=pl.int_range(1, pl.len() + 1).over("query_id")
    )
    (trec / "run.txt").write_text(
        "".join(
            f"{query} Q0 {doc} {rank} {score:.1f} sample\n"
            for query, doc, rank, score in ranked.select("query_id", "doc_id", "rank", "score").iter_rows()
        )
    )
    (trec / "qrels.txt").write_text(
        "".join(f"{query} 0 {doc} {label}\n" for query, doc, label in qrels.sort("query_id", "doc_id").iter_rows())
    )
    # Inline labels: the run with each result's judgment (0 where it was not judged).
    run.join(qrels, on=["query_id", "doc_id"], how="left").with_columns(pl.col("relevance").fill_null(0)).sort(
        "query_id", "doc_id"
    ).write_parquet(HERE / "labelled.parquet")
    # Query attributes for --group-by: one row per judged query, its locale (empty for the
    # queries the run never answered) and a topic.
    queries = sorted(set(qrels["query_id"]))
    topics = [rng.choice(["shopping", "help", "news"]) for _ in queries]
    locales = dict(run.select("query_id", "locale").unique().iter_rows())
    pl.DataFrame({"query_id": queries, "locale": [locales.get(q) for q in queries], "topic": topics}).write_csv(
        HERE / "queries.csv"
    )


if __name__ == "__main__":
    main()
