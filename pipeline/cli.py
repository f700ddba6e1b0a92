"""``ndcg``: a thin command line over the library. Flags -> one Evaluation -> library -> writers.

Heavy modules (polars, duckdb) are imported only when a command runs, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

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

    measure = evaluate.add_argument_group(
        "measure", "options left out take the --profile's choice, or trec_eval's without a profile"
    )
    measure.add_argument("--k", default="5,10,20", help="cutoffs, e.g. 5,10,20; the whole ranking is always added")
    measure.add_argument(
        "--profile", metavar="NAME", help="a peer tool's conventions (`ndcg profiles` lists them); flags override it"
    )
    measure.add_argument(
        "--gain", help="linear (label; default), exponential (2^label-1), binary (1 if relevant), or a map like 1=3,2=9"
    )
    measure.add_argument(
        "--discount", choices=("log2", "jk"), help="log2: 1/log2(rank+1) (default); jk: 1/max(1, log_b(rank))"
    )
    measure.add_argument("--log-base", type=float, help="base b of the jk discount (default 2)")
    measure.add_argument(
        "--ties",
        choices=("docid-desc", "input-order", "average"),
        help="tied scores: doc_id descending (default), input order or a 'rank' column, or averaged gains",
    )
    measure.add_argument(
        "--ideal",
        choices=("judged", "retrieved", "judged-cut-at-hits"),
        help="ideal ranking from every judged document (default), the retrieved ones, or judged cut at the hits",
    )
    measure.add_argument(
        "--empty-ideal",
        choices=("zero", "one", "skip", "nan"),
        help="NDCG of a query whose IDCG is 0: 0 (default), 1, left out of the means, or NaN",
    )
    measure.add_argument(
        "--unjudged", choices=("zero", "drop"), help="unjudged documents gain 0 (default) or are dropped (trec_eval -J)"
    )
    measure.add_argument(
        "--duplicates",
        choices=("error", "first", "max-score"),
        help="a document twice in one query of the run: an error (default), or keep the first or best-scored row",
    )
    measure.add_argument(
        "--relevance-threshold",
        type=float,
        help="labels >= this are relevant (trec_eval -l; default: label > 0); used by the binary gain",
    )
    measure.add_argument(
        "--all-queries",
        action=argparse.BooleanOptionalAction,
        help="qrels queries missing from the run score 0 (trec_eval -c)",
    )
    measure.add_argument(
        "--max-results", type=_positive_int, help="keep the N best-ranked results per query (trec_eval -M)"
    )

    run = evaluate.add_argument_group("execution")
    run.add_argument("--engine", default="polars", choices=("polars", "duckdb"), help="default: polars")
    run.add_argument("--threads", type=_positive_int, help="worker threads (DuckDB engine)")
    run.add_argument("--memory-limit", help="memory limit, e.g. 4GB (DuckDB engine)")

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

    profiles = commands.add_parser(
        "profiles",
        help="list the named conventions of peer tools",
        description="The --profile bundles: each peer tool's choices, and what a profile still cannot mimic.",
    )
    profiles.set_defaults(handler=_profiles)
    return parser


def _profiles(args: argparse.Namespace) -> int:
    from pipeline.spec import profiles_table

    sys.stdout.write(profiles_table())
    return 0


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _evaluate(args: argparse.Namespace) -> int:
    from pipeline.api import evaluate, make_evaluation
    from pipeline.errors import NothingToEvaluate
    from pipeline.io.format import summary_table, trec_lines
    from pipeline.io.read import Columns
    from pipeline.io.write import write_tables

    evaluation = make_evaluation(
        k=args.k,
        profile=args.profile,
        gain=args.gain,
        discount=args.discount,
        log_base=args.log_base,
        all_queries=args.all_queries,
        max_results=args.max_results,
        ties=args.ties,
        ideal=args.ideal,
        empty_ideal=args.empty_ideal,
        unjudged=args.unjudged,
        duplicates=args.duplicates,
        relevance_threshold=args.relevance_threshold,
    )
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
