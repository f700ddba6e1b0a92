"""``ndcg``: a thin command line over the library. Flags -> one Evaluation -> library -> writers.

Heavy modules (polars, duckdb) are imported only when a command runs, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.spec import Evaluation

EXIT_CODES = """exit codes:
  0  done
  1  internal error (or out of memory: try --memory-limit / fewer --threads)
  2  usage error: bad flags or options
  3  invalid input data: missing, unreadable or malformed files, duplicates, nulls
  4  a requested partition does not exist
  5  nothing to evaluate: no query is in both the run and the qrels
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndcg",
        description="Exact CG, DCG, IDCG and NDCG@k over Parquet, TREC and CSV inputs.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    evaluate = commands.add_parser(
        "evaluate",
        help="score a run against judgments",
        description="Score a run against judgments (trec_eval's conventions unless told otherwise).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    inputs = evaluate.add_argument_group("inputs")
    inputs.add_argument("--run", required=True, help="run: Parquet file, directory or glob; TREC run; CSV")
    inputs.add_argument("--qrels", help="judgments; omit to use the run's own label column (inline labels)")
    inputs.add_argument("--run-format", choices=("parquet", "trec", "csv", "tsv"), help="default: from the extension")
    inputs.add_argument("--qrels-format", choices=("parquet", "trec", "csv", "tsv"), help="default: from the extension")
    inputs.add_argument("--query-col", default="query_id", help="query id column (default: query_id)")
    inputs.add_argument("--doc-col", default="doc_id", help="document id column (default: doc_id)")
    inputs.add_argument("--score-col", default="score", help="score column of the run (default: score)")
    inputs.add_argument("--label-col", default="relevance", help="label column (default: relevance)")

    measure = evaluate.add_argument_group("measure")
    measure.add_argument("--k", default="5,10,20", help="cutoffs, e.g. 5,10,20; the whole ranking is always added")
    measure.add_argument(
        "--gain", default="linear", help="linear (label), exponential (2^label-1), or a map like 1=3,2=9,4=4.5"
    )
    measure.add_argument(
        "--discount", default="log2", choices=("log2", "jk"), help="log2: 1/log2(rank+1); jk: 1/max(1, log_b(rank))"
    )
    measure.add_argument("--log-base", type=float, default=2.0, help="base b of the jk discount (default 2)")
    measure.add_argument(
        "--all-queries", action="store_true", help="qrels queries missing from the run score 0 (trec_eval -c)"
    )
    measure.add_argument(
        "--max-results", type=_positive_int, help="keep the N best-ranked results per query (trec_eval -M)"
    )

    run = evaluate.add_argument_group("execution")
    run.add_argument("--engine", default="polars", choices=("polars", "duckdb", "spark"), help="default: polars")
    run.add_argument("--threads", type=_positive_int, help="worker threads (DuckDB engine)")
    run.add_argument("--memory-limit", help="memory limit, e.g. 4GB (DuckDB engine)")
    run.add_argument(
        "--spark-master",
        help="Spark master URL (spark engine); default: the session of spark-submit, else local[*]",
    )

    output = evaluate.add_argument_group("output")
    output.add_argument("--out", help="directory for per_query and summary files")
    output.add_argument(
        "--out-format", default="parquet", choices=("parquet", "csv", "jsonl"), help="file format of --out"
    )
    output.add_argument(
        "--output-format", default="table", choices=("table", "trec", "json"), help="what to print on stdout"
    )
    output.add_argument("--per-query", action="store_true", help="with --output-format trec: per-query lines too")
    output.add_argument("--digits", type=int, default=4, help="decimals printed (default 4)")
    evaluate.set_defaults(handler=_evaluate)

    sql = commands.add_parser(
        "sql",
        help="print the SQL of an evaluation, for DuckDB or Spark",
        description="Print sql/per_query.sql and sql/summary.sql with the measure options bound, in DuckDB's "
        "or Spark's dialect (transpiled by sqlglot). The SQL reads views run (query_id, doc_id, score) and "
        "qrels (query_id, doc_id, relevance) and defines the views per_query and summary.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sql.add_argument("--dialect", default="spark", choices=("spark", "duckdb"), help="default: spark")
    sql_measure = sql.add_argument_group("measure")
    for action in measure._group_actions:  # the very options of `evaluate`, shared as argparse's parents= does
        sql_measure._add_action(action)
    sql.set_defaults(handler=_sql)
    return parser


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _evaluation_from(args: argparse.Namespace) -> Evaluation:
    from pipeline.api import make_evaluation

    return make_evaluation(
        k=args.k,
        gain=args.gain,
        discount=args.discount,
        log_base=args.log_base,
        all_queries=args.all_queries,
        max_results=args.max_results,
    )


def _sql(args: argparse.Namespace) -> int:
    from pipeline.engines.spark import sql_text

    sys.stdout.write(sql_text(_evaluation_from(args), dialect=args.dialect))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from pipeline.api import evaluate
    from pipeline.errors import NothingToEvaluate
    from pipeline.io.format import summary_table, trec_lines
    from pipeline.io.read import Columns
    from pipeline.io.write import write_tables

    evaluation = _evaluation_from(args)
    if args.engine == "spark":
        return _evaluate_on_spark(args, evaluation)
    result = evaluate(
        args.run,
        args.qrels,
        evaluation=evaluation,
        engine=args.engine,
        columns=Columns(query=args.query_col, doc=args.doc_col, score=args.score_col, label=args.label_col),
        run_format=args.run_format,
        qrels_format=args.qrels_format,
        threads=args.threads,
        memory_limit=args.memory_limit,
    )
    if result.per_query.height == 0:
        raise NothingToEvaluate(f"no query is in both {args.run} and {args.qrels or 'its inline labels'}")
    if args.out:
        write_tables(args.out, {"per_query": result.per_query, "summary": result.summary}, format=args.out_format)
    if args.output_format == "trec":
        sys.stdout.write(trec_lines(result.per_query, per_query_lines=args.per_query, digits=args.digits))
    elif args.output_format == "json":
        payload = {"conventions": evaluation.describe(), "engine": result.engine, "summary": result.summary.to_dicts()}
        sys.stdout.write(json.dumps(payload) + "\n")
    else:
        sys.stdout.write(summary_table(result.summary, evaluation.describe(), digits=args.digits))
    return 0


def _evaluate_on_spark(args: argparse.Namespace, evaluation: Evaluation) -> int:
    """The spark engine: Spark reads the inputs and writes the outputs; only the summary (and the
    per-query table for per-query trec lines) comes back to this process."""
    import polars as pl

    from pipeline.engines import spark as spark_engine
    from pipeline.errors import NothingToEvaluate, UsageError
    from pipeline.io.format import summary_table, trec_lines
    from pipeline.io.read import Columns

    if args.threads or args.memory_limit:
        raise UsageError("--threads and --memory-limit are for the duckdb engine; size Spark with spark-submit")
    if args.out and args.out_format != "parquet":
        raise UsageError(f"the spark engine writes Parquet only, not --out-format {args.out_format}")
    spark = spark_engine.session(args.spark_master)
    result = spark_engine.evaluate(
        args.run,
        args.qrels,
        evaluation=evaluation,
        columns=Columns(query=args.query_col, doc=args.doc_col, score=args.score_col, label=args.label_col),
        spark=spark,
        run_format=args.run_format,
        qrels_format=args.qrels_format,
    )
    per_query_table = result.per_query.persist()  # computed once for the summary and the files
    try:
        summary = pl.from_arrow(spark_engine.summarize(per_query_table).toArrow())
        assert isinstance(summary, pl.DataFrame)
        if summary.height == 0:
            raise NothingToEvaluate(f"no query is in both {args.run} and {args.qrels or 'its inline labels'}")
        if args.out:
            spark_engine.write(per_query_table, spark_engine.summarize(per_query_table), args.out)
        if args.output_format == "trec":  # trec_eval's means come from the per-query rows
            rows = pl.from_arrow(per_query_table.toArrow())
            assert isinstance(rows, pl.DataFrame)
            sys.stdout.write(trec_lines(rows, per_query_lines=args.per_query, digits=args.digits))
        elif args.output_format == "json":
            payload = {"conventions": evaluation.describe(), "engine": "spark", "summary": summary.to_dicts()}
            sys.stdout.write(json.dumps(payload) + "\n")
        else:
            sys.stdout.write(summary_table(summary, evaluation.describe(), digits=args.digits))
    finally:
        per_query_table.unpersist()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from pipeline.errors import NdcgError

    try:
        return int(args.handler(args))
    except NdcgError as error:
        print(f"ndcg: error: {error}", file=sys.stderr)
        return error.exit_code
    except MemoryError:
        print("ndcg: error: out of memory; try --memory-limit or fewer --threads", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ndcg: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
