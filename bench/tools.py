"""One benchmarked peer or floor per process: ``python bench/tools.py TOOL RUN_DIR QRELS_DIR OUT``.

Each peer reads the Parquet inputs itself (their loading counts), computes NDCG at the
benchmark's cutoffs and the whole ranking, writes its per-query values to
``OUT/values.parquet`` (query_id, k, ndcg) for the agreement check, and prints a JSON line
of in-process phase timings. Our CLI is not run through here: ``bench/run.py`` times the
``ndcg`` process itself (:func:`ours_command`). Polars is imported only by the tools that
use it, so that a floor's time is DuckDB's alone.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

CUTOFFS = (5, 10, 20, 100)
ROOT = Path(__file__).resolve().parent.parent


def parse_size(text: str) -> int:
    """Rows from a size such as 1M, 10M or 250K."""
    units = {"K": 1_000, "M": 1_000_000, "G": 1_000_000_000}
    text = text.strip().upper()
    return int(float(text[:-1]) * units[text[-1]]) if text[-1] in units else int(text)


def default_ndcg() -> Path:
    """This checkout's CLI: the ``ndcg`` next to the running Python."""
    return Path(sys.executable).parent / "ndcg"


def ours_command(
    engine: str,
    run: str,
    qrels: str,
    out: Path,
    extra: list[str],
    ndcg: Path | None = None,
    cutoffs: tuple[int, ...] = CUTOFFS,
) -> list[str]:
    """Our CLI end to end: Parquet in, ``per_query.parquet`` and ``summary.parquet`` out."""
    return [
        str(ndcg or default_ndcg()),
        "evaluate",
        "--run",
        run,
        "--qrels",
        qrels,
        *(("--k", ",".join(map(str, cutoffs))) if cutoffs else ()),
        "--out",
        str(out / "ndcg"),
        "--engine",
        engine,
        *extra,
    ]


def ours_values(out: Path) -> None:
    """``values.parquet`` from our output, after the timed run: NDCG at the benchmark's cutoffs
    and the whole ranking (``--measures all_trec`` adds trec_eval's cutoffs)."""
    import polars as pl

    table = pl.read_parquet(out / "ndcg" / "per_query.parquet")
    at_cutoffs = table.filter(pl.col("k").is_null() | pl.col("k").is_in(CUTOFFS))
    at_cutoffs.select("query_id", "k", "ndcg").write_parquet(out / "values.parquet")


def load_pandas(run: str, qrels: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    import polars as pl

    return pl.read_parquet(f"{run}/*.parquet").to_pandas(), pl.read_parquet(f"{qrels}/*.parquet").to_pandas()


def nested_dicts(folder: str, value: str) -> dict[str, dict[str, float]]:
    """``{query_id: {doc_id: value}}`` as pytrec_eval wants it: Polars groups the rows by
    query, and each query's dict is built by ``dict(zip(...))`` in C (2-3x faster than a
    Python loop over the rows)."""
    import polars as pl

    grouped = pl.read_parquet(f"{folder}/*.parquet").group_by("query_id").agg("doc_id", value)
    return {
        query_id: dict(zip(docs, values, strict=True))
        for query_id, docs, values in zip(
            grouped["query_id"].to_list(), grouped["doc_id"].to_list(), grouped[value].to_list(), strict=True
        )
    }


def hand_polars_tool(run: str, qrels: str, out: Path) -> dict:
    """The lean hand-written baseline: trec_eval's NDCG in one lazy Polars query, no checks."""
    import polars as pl

    started = time.perf_counter()
    ranked = pl.scan_parquet(f"{run}/*.parquet")
    judged = pl.scan_parquet(f"{qrels}/*.parquet")
    relevant = judged.filter(pl.col("relevance") > 0)
    # the queries evaluated: in the run and in the judgments
    queries = judged.select("query_id").unique().join(ranked.select("query_id").unique(), on="query_id")

    def dcg(ranks: pl.LazyFrame) -> pl.LazyFrame:  # per query: DCG at each cutoff, and "all"
        term = pl.col("relevance") / (pl.col("rank") + 1).log(2)
        cut = [term.filter(pl.col("rank") <= k).sum().alias(str(k)) for k in CUTOFFS]
        return ranks.group_by("query_id").agg(*cut, term.sum().alias("all"))

    rank_keys = pl.struct("score", "doc_id").rank("ordinal", descending=True)  # score, then doc_id desc
    gained = ranked.with_columns(rank=rank_keys.over("query_id")).join(relevant, on=["query_id", "doc_id"])
    ideal = relevant.with_columns(rank=pl.col("relevance").rank("ordinal", descending=True).over("query_id"))
    names = [*map(str, CUTOFFS), "all"]
    values = (
        queries.join(dcg(gained), on="query_id", how="left")
        .join(dcg(ideal), on="query_id", how="left", suffix="_ideal")
        .select(
            "query_id",
            *[
                pl.when(pl.col(f"{n}_ideal") > 0)
                .then(pl.col(n).fill_null(0) / pl.col(f"{n}_ideal"))
                .otherwise(0.0)
                .alias(n)
                for n in names
            ],
        )
        .unpivot(index="query_id", variable_name="k", value_name="ndcg")
        .with_columns(pl.col("k").cast(pl.Int64, strict=False))  # "all" -> null: the whole ranking
        .collect(engine="streaming")
    )
    computed = time.perf_counter()
    values.write_parquet(out / "values.parquet")
    return {"compute_s": computed - started}


def pytrec_eval_tool(run: str, qrels: str, out: Path, every_measure: bool = False) -> dict:
    """pytrec_eval (trec_eval's C code) on dicts built from the same Parquet: NDCG at the
    bench's cutoffs, or (``every_measure``, issue 48) every measure it supports as well, the
    peer of our ``--measures all_trec``."""
    import pytrec_eval

    started = time.perf_counter()
    qrels_dict = nested_dicts(qrels, "relevance")
    run_dict = nested_dicts(run, "score")
    loaded = time.perf_counter()
    measures = {"ndcg", "ndcg_cut." + ",".join(map(str, CUTOFFS))}
    if every_measure:
        measures |= set(pytrec_eval.supported_measures)
    results = pytrec_eval.RelevanceEvaluator(qrels_dict, measures).evaluate(run_dict)
    computed = time.perf_counter()
    rows: list[tuple[str, int | None, float]] = [(q, None, v["ndcg"]) for q, v in results.items()]
    rows += [(q, k, v[f"ndcg_cut_{k}"]) for q, v in results.items() for k in CUTOFFS]
    write_values(rows, out)
    return {"load_s": loaded - started, "compute_s": computed - loaded}


def ir_measures_tool(run: str, qrels: str, out: Path) -> dict:
    import ir_measures
    from ir_measures import nDCG

    started = time.perf_counter()
    run_frame, qrels_frame = load_pandas(run, qrels)
    measures = [nDCG, *[nDCG @ k for k in CUTOFFS]]
    rows = [
        (m.query_id, getattr(m.measure, "params", {}).get("cutoff"), m.value)
        for m in ir_measures.iter_calc(measures, qrels_frame, run_frame)
    ]
    write_values(rows, out)
    return {"total_s": time.perf_counter() - started}


def ranx_tool(run: str, qrels: str, out: Path) -> dict:
    from ranx import Qrels, Run, evaluate

    started = time.perf_counter()
    run_frame, qrels_frame = load_pandas(run, qrels)
    for frame in (run_frame, qrels_frame):  # ranx wants object columns; pandas 3 reads str
        for column in ("query_id", "doc_id"):
            frame[column] = frame[column].astype(object)
    ranx_qrels = Qrels.from_df(
        qrels_frame[qrels_frame["relevance"] > 0], q_id_col="query_id", doc_id_col="doc_id", score_col="relevance"
    )
    ranx_run = Run.from_df(run_frame, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    loaded = time.perf_counter()
    metrics = ["ndcg", *[f"ndcg@{k}" for k in CUTOFFS]]
    evaluate(ranx_qrels, ranx_run, metrics, make_comparable=True)  # first call: numba compiles
    first = time.perf_counter()
    ranx_run = Run.from_df(run_frame, q_id_col="query_id", doc_id_col="doc_id", score_col="score")
    evaluate(ranx_qrels, ranx_run, metrics, make_comparable=True)
    warm = time.perf_counter()
    per_query = ranx_run.scores
    rows = [
        (q, None if m == "ndcg" else int(m.split("@")[1]), v)
        for m, values in per_query.items()
        for q, v in values.items()
    ]
    write_values(rows, out)
    return {"load_s": loaded - started, "first_call_s": first - loaded, "warm_call_s": warm - first}


def sklearn_tool(run: str, qrels: str, out: Path, sample_queries: int = 500) -> dict:
    import numpy as np
    import polars as pl
    from sklearn.metrics import ndcg_score

    started = time.perf_counter()
    run_frame = pl.read_parquet(f"{run}/*.parquet")
    qrels_frame = pl.read_parquet(f"{qrels}/*.parquet")
    queries = run_frame["query_id"].unique().sort()
    chosen = queries.sample(min(sample_queries, queries.len()), seed=0)
    joined = (
        run_frame.filter(pl.col("query_id").is_in(chosen.implode()))
        .join(qrels_frame, on=["query_id", "doc_id"], how="left")
        .with_columns(pl.col("relevance").fill_null(0).clip(lower_bound=0))
        .group_by("query_id")
        .agg("score", "relevance")
    )
    loaded = time.perf_counter()
    rows = []
    for query_id, scores, labels in joined.iter_rows():
        for k in CUTOFFS:
            rows.append((query_id, k, float(ndcg_score(np.asarray([labels]), np.asarray([scores]), k=k))))
    computed = time.perf_counter()
    write_values(rows, out)
    scale = queries.len() / chosen.len()
    return {
        "load_s": loaded - started,
        "compute_s": computed - loaded,
        "sampled_queries": chosen.len(),
        "extrapolated_s": (loaded - started) + (computed - loaded) * scale,
    }


def floor(name: str, run: str, out: Path) -> dict:
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET VARIABLE run_path = $1", [f"{run}/*.parquet"])
    connection.execute((ROOT / "bench" / "sql" / f"{name}.sql").read_text())
    return {}


def macros_tool(run: str, qrels: str, out: Path) -> dict:
    """The table macros (sql/generated/macros.sql) in a plain DuckDB session, as a user calls
    them: NDCG at the benchmark's cutoffs and the whole ranking, validation included."""
    import duckdb

    connection = duckdb.connect()
    started = time.perf_counter()
    connection.execute((ROOT / "sql" / "generated" / "macros.sql").read_text())
    defined = time.perf_counter()
    rows = connection.execute(
        "select query_id, k, ndcg from ndcg_per_query($1, $2, ks := $3)",
        [f"{run}/*.parquet", f"{qrels}/*.parquet", list(CUTOFFS)],
    ).fetchall()
    evaluated = time.perf_counter()
    write_values([(str(q), k, v) for q, k, v in rows], out)
    return {"define_s": defined - started, "evaluate_s": evaluated - defined}


def sql_refusals_tool(run: str, qrels: str, out: Path) -> dict:
    """What the SQL path's validation costs alone: sql/inputs.sql, then every rule of
    sql/generated/refusals.sql over the inputs, as sql/ndcg.sql runs them before any step."""
    import duckdb

    connection = duckdb.connect()
    connection.execute("SET VARIABLE run_path = $1", [f"{run}/*.parquet"])
    connection.execute("SET VARIABLE qrels_path = $1", [f"{qrels}/*.parquet"])
    connection.execute("SET VARIABLE ks = $1", [list(CUTOFFS)])
    for name in ("inputs.sql", "generated/refusals.sql"):
        connection.execute((ROOT / "sql" / name).read_text())
    started = time.perf_counter()
    refused = connection.execute("select count(refused) from refusals").fetchone()
    if refused is None or refused[0] != 0:
        raise SystemExit(f"the benchmark's inputs were refused: {refused}")
    return {"refusals_s": time.perf_counter() - started}


def write_trec(run: str, qrels: str, out: Path) -> dict:
    """The benchmark's data as TREC text, once: ``run.txt`` (``qid Q0 docno rank score tag``,
    single-spaced, the rank a query's row number) and ``qrels.txt`` (``qid 0 docno label``)."""
    import polars as pl

    ranked = pl.scan_parquet(f"{run}/*.parquet").with_columns(
        pl.int_range(1, pl.len() + 1).over("query_id").alias("rank")
    )
    ranked.select(
        pl.concat_str(
            [pl.col("query_id"), pl.lit("Q0"), pl.col("doc_id"), pl.col("rank"), pl.col("score"), pl.lit("bench")],
            separator=" ",
        )
    ).sink_csv(out / "run.txt", include_header=False, quote_style="never")
    judged = pl.scan_parquet(f"{qrels}/*.parquet")
    judged.select(
        pl.concat_str([pl.col("query_id"), pl.lit("0"), pl.col("doc_id"), pl.col("relevance")], separator=" ")
    ).sink_csv(out / "qrels.txt", include_header=False, quote_style="never")
    return {}


def write_values(rows: list[tuple], out: Path) -> None:
    import polars as pl

    pl.DataFrame(rows, schema={"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64}, orient="row").write_parquet(
        out / "values.parquet"
    )


def main() -> None:
    tool, run, qrels, out_text = sys.argv[1:]
    out = Path(out_text)
    out.mkdir(parents=True, exist_ok=True)
    if tool == "hand_polars":
        phases = hand_polars_tool(run, qrels, out)
    elif tool in ("pytrec_eval", "pytrec_eval-all_trec"):
        phases = pytrec_eval_tool(run, qrels, out, every_measure=tool.endswith("all_trec"))
    elif tool == "ir_measures":
        phases = ir_measures_tool(run, qrels, out)
    elif tool == "ranx":
        phases = ranx_tool(run, qrels, out)
    elif tool == "sklearn":
        phases = sklearn_tool(run, qrels, out)
    elif tool == "write_trec":
        phases = write_trec(run, qrels, out)
    elif tool == "ndcg-macros":
        phases = macros_tool(run, qrels, out)
    elif tool == "sql_refusals":
        phases = sql_refusals_tool(run, qrels, out)
    elif tool in ("floor_scan", "floor_sort"):
        phases = floor(tool, run, out)
    else:
        raise SystemExit(f"unknown tool {tool}")
    print(json.dumps(phases))


if __name__ == "__main__":
    main()
