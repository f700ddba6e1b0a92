"""``ndcg``: a thin command line over the library. Flags -> one Evaluation -> library -> writers.

Heavy modules (polars, duckdb) are imported only when a command runs, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence

EXIT_CODES = """exit codes:
  0  done
  1  internal error, or out of memory (try --memory-limit / fewer --threads)
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
    _add_input_arguments(evaluate)

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
    run.add_argument("--engine", default="polars", choices=("polars", "duckdb"), help="default: polars")
    run.add_argument("--threads", type=_positive_int, help="worker threads (DuckDB engine)")
    run.add_argument(
        "--memory-limit",
        help="memory limit, e.g. 4GB: DuckDB's memory_limit; the Polars engine then runs streaming (in batches)",
    )

    output = evaluate.add_argument_group("output")
    output.add_argument("--out", help="directory for per_query and summary files")
    output.add_argument(
        "--out-format", default="parquet", choices=("parquet", "csv", "jsonl", "trec"), help="file format of --out"
    )
    output.add_argument(
        "--output-format", default="table", choices=("table", "trec", "json"), help="what to print on stdout"
    )
    output.add_argument("--per-query", action="store_true", help="with --output-format trec: per-query lines too")
    output.add_argument("--digits", type=int, default=4, help="decimals printed (default 4)")
    output.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object (= --output-format json)"
    )

    job = evaluate.add_argument_group("batch job")
    job.add_argument("--config", help="TOML file with the same keys as these flags; flags override it")
    job.add_argument("--print-config", action="store_true", help="print the resolved configuration and exit")
    job.add_argument(
        "--partition",
        action="append",
        metavar="KEY=VALUE",
        help="evaluate only this hive partition (repeatable; other partitions are not read)",
    )
    job.add_argument(
        "--group-by", help="columns of the run (or of --query-attributes) to summarise by, e.g. locale,model"
    )
    job.add_argument("--query-attributes", help="Parquet/CSV table of per-query attributes joined on the query id")
    job.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    job.add_argument("--log-format", default="text", choices=("text", "json"), help="json: one object per line")
    evaluate.set_defaults(handler=_evaluate)

    validate = commands.add_parser(
        "validate",
        help="check a run and judgments without scoring them",
        description="Run only the input checks and print a report: exit 0 when valid (warnings allowed), "
        "3 when invalid.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input_arguments(validate)
    validate.add_argument("--json", action="store_true", help="print the report as one JSON object")
    validate.set_defaults(handler=_validate)

    return parser


def _add_input_arguments(command: argparse.ArgumentParser) -> None:
    inputs = command.add_argument_group("inputs")
    inputs.add_argument("--run", help="run: Parquet file, directory (hive partitions too) or glob; TREC run; CSV")
    inputs.add_argument("--qrels", help="judgments; omit to use the run's own label column (inline labels)")
    inputs.add_argument("--run-format", choices=("parquet", "trec", "csv", "tsv"), help="default: from the extension")
    inputs.add_argument("--qrels-format", choices=("parquet", "trec", "csv", "tsv"), help="default: from the extension")
    inputs.add_argument("--query-col", default="query_id", help="query id column (default: query_id)")
    inputs.add_argument("--doc-col", default="doc_id", help="document id column (default: doc_id)")
    inputs.add_argument("--score-col", default="score", help="score column of the run (default: score)")
    inputs.add_argument("--label-col", default="relevance", help="label column (default: relevance)")

    checks = command.add_argument_group("validation")
    checks.add_argument(
        "--allow-fractional-labels",
        action="store_true",
        help="accept labels such as 0.5 (default: labels must be integers, a fractional label is an error)",
    )
    checks.add_argument(
        "--warn-results-over",
        type=_non_negative_int,
        default=1000,
        metavar="N",
        help="warn about queries with more than N results in the run (default 1000; 0 turns the warning off)",
    )


def _non_negative_int(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}")
    return int(text)


def _input_options(args: argparse.Namespace) -> dict[str, object]:
    """The input and validation flags as keywords of the library's functions."""
    from pipeline.io.read import Columns

    return {
        "columns": Columns(query=args.query_col, doc=args.doc_col, score=args.score_col, label=args.label_col),
        "run_format": args.run_format,
        "qrels_format": args.qrels_format,
        "allow_fractional_labels": args.allow_fractional_labels,
        "warn_results_over": args.warn_results_over or None,
    }


def _log_warnings(warnings: Sequence[object]) -> None:
    for warning in warnings:
        logging.getLogger("ndcg").warning("%s", warning)


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _evaluate(args: argparse.Namespace) -> int:
    from pipeline.api import make_evaluation
    from pipeline.errors import UsageError
    from pipeline.io.format import summary_table, trec_lines
    from pipeline.io.partitions import parse_partition_filters
    from pipeline.job import Job, run_job

    if args.print_config:
        sys.stdout.write(json.dumps(_resolved_config(args), indent=2) + "\n")
        return 0
    if not args.run:
        raise UsageError("no run given: pass --run PATH or set `run` in the --config file")
    inputs = _input_options(args)
    evaluation = make_evaluation(
        k=args.k,
        gain=args.gain,
        discount=args.discount,
        log_base=args.log_base,
        all_queries=args.all_queries,
        max_results=args.max_results,
    )
    job = Job(
        run=args.run,
        qrels=args.qrels,
        evaluation=evaluation,
        engine=args.engine,
        columns=inputs.pop("columns"),  # type: ignore[arg-type]
        run_format=inputs.pop("run_format"),  # type: ignore[arg-type]
        qrels_format=inputs.pop("qrels_format"),  # type: ignore[arg-type]
        out=args.out,
        out_format=args.out_format,
        partition_filters=parse_partition_filters(args.partition or []),
        group_by=tuple(c.strip() for c in args.group_by.split(",") if c.strip()) if args.group_by else (),
        query_attributes=args.query_attributes,
        threads=args.threads,
        memory_limit=args.memory_limit,
        evaluate_options=inputs,
    )
    units = run_job(job, on_unit=_progress(job))
    for unit in units:
        _log_warnings(unit.result.warnings)
    output_format = "json" if args.json else args.output_format
    for unit in units:
        label = f"# partition {unit.partition}\n" if unit.partition and output_format != "json" else ""
        if output_format == "trec":
            sys.stdout.write(
                label + trec_lines(unit.result.per_query, per_query_lines=args.per_query, digits=args.digits)
            )
        elif output_format == "table":
            sys.stdout.write(label + summary_table(unit.summary, evaluation.describe(), digits=args.digits))
    if output_format == "json":
        payload = {
            "conventions": evaluation.describe(),
            "engine": args.engine,
            "units": [
                {
                    "partition": unit.partition.as_dict() if unit.partition else None,
                    "summary": unit.summary.to_dicts(),
                    "queries": unit.manifest["queries"],
                }
                for unit in units
            ],
        }
        if len(units) == 1:
            payload["summary"] = units[0].summary.to_dicts()
        sys.stdout.write(json.dumps(payload, default=str) + "\n")
    return 0


def _progress(job: object) -> Callable[[object], None]:
    """Log each written unit; a progress line only when a person is watching stderr."""
    log = logging.getLogger("ndcg")
    written = 0

    def report(unit: object) -> None:
        nonlocal written
        written += 1
        partition = getattr(unit, "partition", None)
        log.info("wrote %s", f"partition {partition}" if partition else "outputs")
        if sys.stderr.isatty() and partition is not None:
            print(f"\r{written} partition(s) written", end="", file=sys.stderr, flush=True)

    return report


def _resolved_config(args: argparse.Namespace) -> dict[str, object]:
    hidden = {"handler", "command", "print_config", "config"}
    return {key: value for key, value in sorted(vars(args).items()) if key not in hidden}


def _configure_logging(level: str, format: str) -> None:
    """Logs and warnings go to stderr; configured here, never in the library."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter() if format == "json" else _TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"ndcg: {record.levelname.lower()}: {record.getMessage()}"


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return json.dumps(
            {
                "time": self.formatTime(record),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
            }
        )


def _apply_config(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Re-parse with the config file's values as defaults, so that flags override it."""
    from pipeline.config import load_config

    subparser = _subparser(parser, args.command)
    values = load_config(args.config, subparser)
    given = list(argv if argv is not None else sys.argv[1:])
    if "partition" in values and any(a == "--partition" or a.startswith("--partition=") for a in given):
        del values["partition"]  # --partition flags replace the file's list rather than add to it
    subparser.set_defaults(**values)
    return parser.parse_args(argv)


def _subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:  # argparse offers no public way to reach a subparser
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(name)


def _validate(args: argparse.Namespace) -> int:
    """Only the checks. An invalid input is part of the report (exit 3), not a crash."""
    from pipeline.api import check
    from pipeline.errors import InvalidInput, UsageError

    if not args.run:
        raise UsageError("no run given: pass --run PATH")

    error: InvalidInput | None = None
    warnings: tuple = ()
    try:
        warnings = check(args.run, args.qrels, **_input_options(args))  # type: ignore[arg-type]
    except InvalidInput as invalid:
        error = invalid
    if args.json:
        report = {
            "valid": error is None,
            "run": args.run,
            "qrels": args.qrels,
            "error": None if error is None else {"exit_code": error.exit_code, "message": str(error)},
            "warnings": [warning.as_dict() for warning in warnings],
        }
        sys.stdout.write(json.dumps(report) + "\n")
    else:
        lines = [f"run:   {args.run}", f"qrels: {args.qrels or '(inline labels of the run)'}"]
        lines.append("invalid: " + str(error) if error else "valid")
        lines += [f"warning: {warning}" for warning in warnings]
        sys.stdout.write("\n".join(lines) + "\n")
    if error is not None:
        if args.json:  # the text report already holds the message; JSON readers also get it on stderr
            print(f"ndcg: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from pipeline.errors import NdcgError

    try:
        if getattr(args, "config", None):
            args = _apply_config(parser, args, argv)
        _configure_logging(getattr(args, "log_level", "warning"), getattr(args, "log_format", "text"))
        return int(args.handler(args))
    except NdcgError as error:
        logging.getLogger("ndcg").debug("failed", exc_info=True)
        print(f"ndcg: error: {error}", file=sys.stderr)
        return error.exit_code
    except MemoryError:
        print("ndcg: error: out of memory; try --memory-limit or fewer --threads", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("ndcg: interrupted", file=sys.stderr)
        return 130
    except Exception as error:  # a bug of ours, not a user mistake: say so, keep the details for a report
        logging.getLogger("ndcg").debug("internal error", exc_info=True)
        print(
            f"ndcg: internal error: {type(error).__name__}: {error} (rerun with --log-level debug for the traceback)",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
