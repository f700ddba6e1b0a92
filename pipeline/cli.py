"""``ndcg``: a thin command line over the library. Flags -> one Evaluation -> library -> writers.

Heavy modules (polars, duckdb) are imported only when a command runs, so ``--help`` is fast.
"""

from __future__ import annotations

import argparse
import difflib
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipeline.spec import Evaluation

EXIT_CODES = """exit codes:
  0  done
  1  internal error, or out of memory (try --memory-limit / fewer --threads)
  2  usage error: bad flags or options, or no space left in TMPDIR for the buckets of --memory-limit
  3  invalid input data: missing, unreadable or malformed files, duplicates, nulls
  4  a requested partition does not exist
  5  nothing to evaluate: no query is in both the run and the qrels
"""


def package_version() -> str:
    """The installed distribution's version; in a checkout never installed, pyproject.toml's."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ndcg-pipeline")
    except PackageNotFoundError:
        import tomllib
        from pathlib import Path

        try:
            with (Path(__file__).resolve().parent.parent / "pyproject.toml").open("rb") as file:
                return f"{tomllib.load(file)['project']['version']} (not installed)"
        except (OSError, tomllib.TOMLDecodeError, KeyError):
            return "unknown (not installed)"


class _VersionAction(argparse.Action):
    """``--version``, with the version looked up only when asked for (it costs ``--help`` time)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"ndcg {package_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ndcg",
        description="Exact CG, DCG, IDCG and NDCG@k over Parquet, TREC and CSV inputs.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
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
    measure.add_argument(
        "--tie-bounds",
        action=argparse.BooleanOptionalAction,
        help="also the lowest and highest NDCG any order of tied scores gives (ndcg_min, ndcg_max), whether ties "
        "straddle each cutoff, and how many queries ties can change",
    )

    run = evaluate.add_argument_group("execution")
    run.add_argument("--engine", default="polars", choices=("polars", "duckdb", "spark"), help="default: polars")
    run.add_argument(
        "--threads", type=_thread_count, help="worker threads (DuckDB engine), at most 4 x the machine's CPUs"
    )
    run.add_argument(
        "--memory-limit",
        help="memory limit, e.g. 4GB: a larger run is split into buckets of queries that fit (written to TMPDIR "
        "first) and evaluated one bucket at a time (both engines); also DuckDB's memory_limit",
    )
    run.add_argument(
        "--spark-master",
        help="Spark master URL (spark engine); default: the session of spark-submit, else local[*]",
    )

    output = evaluate.add_argument_group("output")
    output.add_argument(
        "--out", help="directory for per_query and summary files (per partition: OUT/key=value/; spark: folders)"
    )
    output.add_argument(
        "--out-format", default="parquet", choices=("parquet", "csv", "jsonl", "trec"), help="file format of --out"
    )
    output.add_argument(
        "--output-format", default="table", choices=("table", "trec", "json"), help="what to print on stdout"
    )
    output.add_argument("--per-query", action="store_true", help="with --output-format trec: per-query lines too")
    output.add_argument("--digits", type=_digits, default=4, help="decimals printed, 0 to 20 (default 4)")
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
        help="evaluate only this hive partition (repeatable; other partitions are not read; all engines)",
    )
    job.add_argument(
        "--missing-qrels-partition",
        default="error",
        choices=("error", "whole"),
        help="a run partition whose folder is missing from judgments partitioned like the run: error "
        "(default, exit 3) or score it against all the judgments (whole)",
    )
    job.add_argument(
        "--group-by",
        help="columns of the run (or of --query-attributes) to summarise by, e.g. locale,model (not on spark)",
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

    _add_compare(commands)
    _add_report(commands)

    sql = commands.add_parser(
        "sql",
        help="print the SQL of an evaluation, for DuckDB or Spark",
        description="Print sql/per_query.sql and sql/summary.sql with the measure options bound, in DuckDB's "
        "or Spark's dialect (transpiled by sqlglot). The SQL reads views run (query_id, doc_id, score, "
        "arrival, input_rank: the input position and rank, null when unused) and qrels (query_id, doc_id, "
        "relevance) and defines the views per_query and summary.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sql.add_argument("--dialect", default="spark", choices=("spark", "duckdb"), help="default: spark")
    sql_measure = sql.add_argument_group("measure")
    for action in measure._group_actions:  # the very options of `evaluate`, shared as argparse's parents= does
        sql_measure._add_action(action)
    sql.set_defaults(handler=_sql)

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


def _digits(text: str) -> int:
    # checked when the flags are read, so that a bad value stops the job before anything is written
    if not text.strip().isdigit() or int(text) > 20:
        raise argparse.ArgumentTypeError(f"expected a whole number of decimals from 0 to 20, got {text!r}")
    return int(text)


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


def max_threads() -> int:
    """More worker threads than 4 per CPU only adds switching, and a number far beyond it makes
    DuckDB try to start them all (a hang, or a failed allocation): the bound of --threads."""
    import os

    return 4 * (os.cpu_count() or 1)


def _thread_count(text: str) -> int:
    count = _positive_int(text)
    if count > max_threads():
        raise argparse.ArgumentTypeError(
            f"at most {max_threads()} threads (4 x the {max_threads() // 4} CPUs of this machine), got {text}"
        )
    return count


def _resample_count(text: str) -> int:
    from pipeline.compare import MAX_RESAMPLES

    count = _positive_int(text)
    if count > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"at most {MAX_RESAMPLES:,}, got {text}")
    return count


def _evaluation_from(args: argparse.Namespace) -> Evaluation:
    from pipeline.api import make_evaluation

    return make_evaluation(
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
        tie_bounds=args.tie_bounds,
    )


def _sql(args: argparse.Namespace) -> int:
    from pipeline.engines.spark import sql_text

    sys.stdout.write(sql_text(_evaluation_from(args), dialect=args.dialect))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from pipeline.errors import UsageError
    from pipeline.io.format import summary_table, trec_lines
    from pipeline.io.partitions import parse_partition_filters
    from pipeline.io.write import check_out_folder
    from pipeline.job import Job, run_job

    if args.print_config:
        sys.stdout.write(json.dumps(_resolved_config(args), indent=2) + "\n")
        return 0
    if not args.run:
        raise UsageError("no run given: pass --run PATH or set `run` in the --config file")
    check_out_folder(args.out, [("run", args.run), ("qrels", args.qrels), ("query attributes", args.query_attributes)])
    inputs = _input_options(args)
    evaluation = _evaluation_from(args)
    if args.engine == "spark":
        return _evaluate_on_spark(args, evaluation)
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
        missing_qrels_partition=args.missing_qrels_partition,
        group_by=tuple(c.strip() for c in args.group_by.split(",") if c.strip()) if args.group_by else (),
        query_attributes=args.query_attributes,
        threads=args.threads,
        memory_limit=args.memory_limit,
        evaluate_options=inputs,
    )
    output_format = "json" if args.json else args.output_format
    units = run_job(job, on_unit=_progress(job), before_write=_stdout_check(output_format))
    for unit in units:
        _log_warnings(unit.result.warnings)
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


def _stdout_check(output_format: str) -> Callable[[list], None]:
    """What stdout will print is checked before any output is written: trec lines cannot carry
    every query id."""

    def check(units: list) -> None:
        from pipeline.io.format import check_trec_ids

        if output_format == "trec":
            for unit in units:
                check_trec_ids(unit.result.per_query)

    return check


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
    return _parse(parser, argv)


def _parse(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parse_args``, but a mistyped flag is named by its command with the closest real flag
    (argparse reports it on the top-level usage, without a suggestion)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = _subparser(parser, args.command)
        flags = [flag for action in command._actions for flag in action.option_strings if flag.startswith("--")]
        first = unknown[0]
        close = difflib.get_close_matches(first.split("=", 1)[0], flags, n=1) if first.startswith("-") else []
        hint = f"; did you mean {close[0]}?" if close else f"; `ndcg {args.command} --help` lists the flags"
        command.error(f"unrecognized argument(s): {' '.join(unknown)}{hint}")
    return args


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


def _add_compare(commands: argparse._SubParsersAction) -> None:
    compare = commands.add_parser(
        "compare",
        help="paired comparison of systems: deltas, significance tests, per group",
        description=(
            "Compare systems query by query: means, differences, wins/ties/losses, a paired t-test, a paired "
            "randomization test and a bootstrap interval per cutoff (and group). Either two or more per-query "
            "outputs of `ndcg evaluate --out` (--baseline, --candidate), or two or more runs scored here (--run)."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    systems = compare.add_argument_group("systems (outputs of `ndcg evaluate --out`, or runs)")
    systems.add_argument("--baseline", help="an evaluation output directory (or its per_query.parquet)")
    systems.add_argument(
        "--candidate", action="append", default=[], help="another output directory; repeat for more systems"
    )
    systems.add_argument("--run", action="append", default=[], help="a run to evaluate; repeat (at least two)")
    systems.add_argument("--qrels", help="judgments for --run; omit to use each run's inline labels")
    systems.add_argument("--names", help="comma-separated names of the systems, in order (default: from the paths)")

    measure = compare.add_argument_group("measure (with --run)")
    measure.add_argument("--gain", default="linear", help="as for evaluate (default linear)")
    measure.add_argument("--discount", default="log2", choices=("log2", "jk"), help="as for evaluate")
    measure.add_argument("--log-base", type=float, default=2.0, help="base b of the jk discount (default 2)")
    measure.add_argument("--max-results", type=_positive_int, help="keep the N best-ranked results per query")
    measure.add_argument("--engine", default="polars", choices=("polars", "duckdb"), help="default: polars")

    tests = compare.add_argument_group("comparison")
    tests.add_argument(
        "--k", help="cutoffs to compare, e.g. 10 or 5,10,all ('all' = whole ranking); default: every shared cutoff"
    )
    tests.add_argument("--group-by", help="comma-separated group columns (e.g. locale): the same table per group")
    tests.add_argument(
        "--all-queries",
        action="store_true",
        help="a query one system lacks scores 0 for it (default: compare only common queries)",
    )
    tests.add_argument(
        "--permutations", type=_resample_count, default=10_000, help="randomization test draws (at most 1,000,000)"
    )
    tests.add_argument(
        "--bootstrap", type=_resample_count, default=10_000, help="bootstrap resamples (at most 1,000,000)"
    )
    tests.add_argument("--seed", type=int, default=0, help="seed of the randomization and bootstrap (default 0)")
    tests.add_argument("--correction", default="holm", choices=("holm", "bonferroni"), help="for >2 systems")
    tests.add_argument(
        "--allow-different-conventions",
        action="store_true",
        help="compare outputs evaluated with different conventions (gain, discount, ties, ...); refused without it",
    )

    output = compare.add_argument_group("output")
    output.add_argument("--out", help="directory for comparison.parquet, deltas.parquet and manifest.json")
    output.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    output.add_argument("--digits", type=_digits, default=4, help="decimals printed, 0 to 20 (default 4)")
    compare.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    from pipeline.compare import (
        Options,
        compare_systems,
        comparison_json,
        comparison_table,
        unpaired_queries,
    )
    from pipeline.errors import UsageError
    from pipeline.io.write import check_out_folder, write_tables

    if args.run and (args.baseline or args.candidate):
        raise UsageError("give either --run (runs to evaluate) or --baseline/--candidate (evaluation outputs)")
    inputs = [("baseline", args.baseline), *(("candidate", c) for c in args.candidate), ("qrels", args.qrels)]
    check_out_folder(args.out, [*inputs, *(("run", r) for r in args.run)])
    group_by = tuple(g.strip() for g in args.group_by.split(",") if g.strip()) if args.group_by else ()
    if args.run:
        tables, conventions = _evaluate_runs(args, group_by)
    else:
        tables, conventions = _read_outputs(args)
    differences = _check_conventions(conventions, args.allow_different_conventions)
    options = Options(
        cutoffs=_compare_cutoffs(args.k),
        group_by=group_by,
        all_queries=args.all_queries,
        permutations=args.permutations,
        bootstrap_samples=args.bootstrap,
        seed=args.seed,
        correction=args.correction,
    )
    result = compare_systems(tables, options)
    unpaired = unpaired_queries(result.deltas)
    if args.out:
        manifest = {"command": "compare", "systems": list(tables), "conventions": conventions}
        manifest["convention_differences"] = differences
        # tables and manifest as one unit: a kill never leaves new tables with an old manifest
        write_tables(
            args.out,
            {"comparison": result.comparison, "deltas": result.deltas},
            manifest={**manifest, "options": options.describe()},
        )
    if args.json:
        sys.stdout.write(json.dumps(comparison_json(result, unpaired, conventions)) + "\n")
    else:
        sys.stdout.write(comparison_table(result, unpaired, digits=args.digits))
    return 0


def _check_conventions(conventions: dict, allowed: bool) -> dict:
    """Outputs evaluated with different conventions are not comparable: refused (exit 2) unless
    allowed, then warned; a system with no conventions recorded cannot be checked: warned."""
    from pipeline.compare import convention_differences, describe_differences
    from pipeline.errors import UsageError

    differences, unknown = convention_differences(conventions)
    log = logging.getLogger("ndcg")
    if unknown:
        log.warning(
            "conventions not recorded for %s (no manifest.json with them beside the output): cannot check "
            "that the systems were evaluated alike",
            ", ".join(unknown),
        )
    if differences and not allowed:
        raise UsageError(
            f"the systems were evaluated with different conventions, so their NDCG are not comparable: "
            f"{describe_differences(differences)}; evaluate them alike, or pass --allow-different-conventions"
        )
    if differences:
        log.warning("comparing systems evaluated with different conventions: %s", describe_differences(differences))
    return differences


def _system_names(args: argparse.Namespace, paths: list[str]) -> list[str]:
    from pathlib import Path

    from pipeline.errors import UsageError

    if args.names:
        names = [n.strip() for n in args.names.split(",")]
        if len(names) != len(paths) or len(set(names)) != len(names) or not all(names):
            raise UsageError(f"--names needs {len(paths)} distinct names, got {args.names!r}")
        return names
    names = []
    for path in paths:
        resolved = Path(path)
        stem = resolved.parent.name if resolved.name == "per_query.parquet" else resolved.name.split(".")[0]
        names.append(stem or path)
    if len(set(names)) != len(names):
        names = list(paths)  # two outputs called the same: their whole paths tell them apart
    if len(set(names)) != len(names):
        raise UsageError(f"the same system is given twice: {', '.join(paths)}")
    return names


def _read_outputs(args: argparse.Namespace) -> tuple[dict, dict]:
    from pipeline.compare import read_conventions, read_per_query
    from pipeline.errors import UsageError

    if not args.baseline or not args.candidate:
        raise UsageError("give --baseline and at least one --candidate (or two or more --run)")
    paths = [args.baseline, *args.candidate]
    names = _system_names(args, paths)
    tables = {name: read_per_query(path) for name, path in zip(names, paths, strict=True)}
    conventions = {name: read_conventions(path) for name, path in zip(names, paths, strict=True)}
    return tables, conventions


def _evaluate_runs(args: argparse.Namespace, group_by: tuple[str, ...]) -> tuple[dict, dict]:
    from pipeline.api import evaluate, make_evaluation
    from pipeline.compare import attach_groups, query_groups
    from pipeline.errors import UsageError
    from pipeline.io.read import Source, scan_qrels, scan_run

    if len(args.run) < 2:
        raise UsageError("give at least two --run to compare (or --baseline and --candidate)")
    cutoffs = [k for k in _compare_cutoffs(args.k) or (5, 10, 20) if k is not None] or [10]
    evaluation = make_evaluation(
        k=cutoffs,
        gain=args.gain,
        discount=args.discount,
        log_base=args.log_base,
        all_queries=args.all_queries,
        max_results=args.max_results,
    )
    names = _system_names(args, args.run)
    tables = {
        name: evaluate(path, args.qrels, evaluation=evaluation, engine=args.engine).per_query
        for name, path in zip(names, args.run, strict=True)
    }
    if group_by:
        sources = {path: scan_run(Source.of(path)) for path in args.run}
        if args.qrels:
            sources[args.qrels] = scan_qrels(Source.of(args.qrels))
        groups = query_groups(sources, group_by)
        tables = {name: attach_groups(table, groups, name) for name, table in tables.items()}
    described = evaluation.describe()
    return tables, dict.fromkeys(names, described)


def _compare_cutoffs(text: str | None) -> tuple[int | None, ...] | None:
    from pipeline.errors import UsageError
    from pipeline.spec import SpecError, parse_cutoffs

    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    numbers = ",".join(p for p in parts if p.lower() != "all")
    try:
        cutoffs: tuple[int | None, ...] = parse_cutoffs(numbers) if numbers else ()
    except SpecError as error:
        raise UsageError(str(error)) from None
    return (*cutoffs, None) if any(p.lower() == "all" for p in parts) else cutoffs


def _add_report(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser(
        "report",
        help="one self-contained HTML report of evaluation and comparison outputs",
        description=(
            "Write one HTML file (no network needed to open it) from outputs of `ndcg evaluate --out` and "
            "`ndcg compare --out`: summary, NDCG@k by k, per-query distributions, per-query differences, "
            "per-group bars, conventions and tie diagnostics. Needs the report extra (from a checkout: "
            "pip install -e '.[report]')."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("outputs", nargs="+", help="evaluation output directories and/or a compare output directory")
    report.add_argument("--html", required=True, help="the HTML file to write")
    report.add_argument("--png", help="also write each figure as a PNG file into this directory")
    report.add_argument("--k", help="cutoff shown in the distribution and difference plots (default: smallest)")
    report.add_argument("--title", default="NDCG report", help="heading of the report")
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from pipeline.errors import UsageError, install_hint

    for flag, value in (("--html", args.html), ("--png", args.png)):
        if value is not None and not value.strip():
            raise UsageError(f"{flag} is empty: give a path")
    try:
        import jinja2  # noqa: F401
        import matplotlib  # noqa: F401
    except ImportError as missing:
        raise UsageError(
            f"ndcg report draws its figures with matplotlib and its page with Jinja2; {missing.name} is not "
            f"installed; install them with: {install_hint('report')}"
        ) from None
    from pipeline.report import build_report

    cutoff = _compare_cutoffs(args.k) if args.k else None
    if cutoff is not None and len(cutoff) != 1:
        raise UsageError(f"--k of report takes one cutoff (or 'all'), got {args.k!r}")
    written = build_report(
        args.outputs,
        html_path=args.html,
        png_dir=args.png,
        cutoff=cutoff[0] if cutoff else None,
        cutoff_given=cutoff is not None,
        title=args.title,
    )
    for path in written:
        print(f"wrote {path}")
    return 0


def _evaluate_on_spark(args: argparse.Namespace, evaluation: Evaluation) -> int:
    """The spark engine: Spark reads the inputs (only the requested partitions) and writes the
    outputs, laid out as the other engines lay them out; only the summaries (and the per-query
    rows for per-query trec lines) come back to this process."""
    import polars as pl

    from pipeline.engines import spark as spark_engine
    from pipeline.errors import NothingToEvaluate, UsageError
    from pipeline.io.format import check_trec_ids
    from pipeline.io.partitions import parse_partition_filters
    from pipeline.io.read import Columns

    if args.threads or args.memory_limit:
        raise UsageError("--threads and --memory-limit are for the duckdb engine; size Spark with spark-submit")
    unsupported = [
        flag for flag, given in (("--group-by", args.group_by), ("--query-attributes", args.query_attributes)) if given
    ]
    if unsupported:
        raise UsageError(
            f"{', '.join(unsupported)}: not supported by the spark engine; for one summary per day or "
            "locale, partition the logs by it (each partition is summarised on its own), or use --engine "
            "polars or duckdb"
        )
    if args.out and args.out_format != "parquet":
        raise UsageError(f"the spark engine writes Parquet only, not --out-format {args.out_format}")
    partition_filters = parse_partition_filters(args.partition or [])
    spark = spark_engine.session(args.spark_master)
    units = spark_engine.evaluate_units(
        args.run,
        args.qrels,
        evaluation=evaluation,
        partition_filters=partition_filters,
        missing_qrels_partition=args.missing_qrels_partition,
        columns=Columns(query=args.query_col, doc=args.doc_col, score=args.score_col, label=args.label_col),
        spark=spark,
        run_format=args.run_format,
        qrels_format=args.qrels_format,
        allow_fractional_labels=args.allow_fractional_labels,
        warn_results_over=args.warn_results_over or None,
    )
    units = [unit.cached() for unit in units]  # each per-query table computed once, for summary and files
    try:
        summaries = []
        for unit in units:  # every unit is computed before any is written
            summary = pl.from_arrow(unit.summary.toArrow())
            assert isinstance(summary, pl.DataFrame)
            if summary.height == 0:
                where = f" in partition {unit.partition}" if unit.partition else ""
                raise NothingToEvaluate(
                    f"no query is in both {args.run} and {args.qrels or 'its inline labels'}{where}"
                )
            summaries.append(summary)
            if ("json" if args.json else args.output_format) == "trec":  # checked before anything is written
                check_trec_ids(pl.from_arrow(unit.per_query.select("query_id").toArrow()))  # type: ignore[arg-type]
        if args.out:
            spark_engine.write_units(units, args.out)
        for unit in units:  # as the other engines log them: after the outputs, before stdout
            _log_warnings(unit.warnings)
        _print_spark_units(args, evaluation, units, summaries)
    finally:
        for unit in units:
            unit.unpersist()
    return 0


def _print_spark_units(args: argparse.Namespace, evaluation: Evaluation, units: list, summaries: list) -> None:
    """stdout as the other engines print it: one block per unit, headed by its partition."""
    import polars as pl

    from pipeline.io.format import summary_table, trec_lines

    output_format = "json" if args.json else args.output_format
    if output_format == "json":
        payload: dict[str, object] = {
            "conventions": evaluation.describe(),
            "engine": "spark",
            "units": [
                {"partition": unit.partition.as_dict() if unit.partition else None, "summary": summary.to_dicts()}
                for unit, summary in zip(units, summaries, strict=True)
            ],
        }
        if len(units) == 1:
            payload["summary"] = summaries[0].to_dicts()
        sys.stdout.write(json.dumps(payload, default=str) + "\n")
        return
    for unit, summary in zip(units, summaries, strict=True):
        label = f"# partition {unit.partition}\n" if unit.partition else ""
        if output_format == "trec":  # trec_eval's means come from the per-query rows
            rows = pl.from_arrow(unit.per_query.toArrow())
            assert isinstance(rows, pl.DataFrame)
            keys = list(unit.partition.as_dict()) if unit.partition else []
            sys.stdout.write(label + trec_lines(rows.drop(keys), per_query_lines=args.per_query, digits=args.digits))
        else:
            sys.stdout.write(label + summary_table(summary, evaluation.describe(), digits=args.digits))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = _parse(parser, argv)
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
