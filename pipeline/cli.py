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
    _add_compare(commands)
    _add_report(commands)
    return parser


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
        gain=args.gain,
        discount=args.discount,
        log_base=args.log_base,
        all_queries=args.all_queries,
        max_results=args.max_results,
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
    tests.add_argument("--permutations", type=_positive_int, default=10_000, help="randomization test draws")
    tests.add_argument("--bootstrap", type=_positive_int, default=10_000, help="bootstrap resamples")
    tests.add_argument("--seed", type=int, default=0, help="seed of the randomization and bootstrap (default 0)")
    tests.add_argument("--correction", default="holm", choices=("holm", "bonferroni"), help="for >2 systems")

    output = compare.add_argument_group("output")
    output.add_argument("--out", help="directory for comparison.parquet, deltas.parquet and manifest.json")
    output.add_argument("--json", action="store_true", help="print the comparison as one JSON object")
    output.add_argument("--digits", type=int, default=4, help="decimals printed (default 4)")
    compare.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    from pipeline.compare import (
        Options,
        compare_systems,
        comparison_json,
        comparison_table,
        unpaired_queries,
        write_manifest,
    )
    from pipeline.errors import UsageError
    from pipeline.io.write import write_tables

    if args.run and (args.baseline or args.candidate):
        raise UsageError("give either --run (runs to evaluate) or --baseline/--candidate (evaluation outputs)")
    group_by = tuple(g.strip() for g in args.group_by.split(",") if g.strip()) if args.group_by else ()
    if args.run:
        tables, conventions = _evaluate_runs(args, group_by)
    else:
        tables, conventions = _read_outputs(args)
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
        write_tables(args.out, {"comparison": result.comparison, "deltas": result.deltas})
        write_manifest(
            args.out,
            {"command": "compare", "systems": list(tables), "conventions": conventions, "options": options.describe()},
        )
    if args.json:
        sys.stdout.write(json.dumps(comparison_json(result, unpaired, conventions)) + "\n")
    else:
        sys.stdout.write(comparison_table(result, unpaired, digits=args.digits))
    return 0


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
            "per-group bars, conventions and tie diagnostics. Needs the report extra: "
            "pip install 'ndcg-pipeline[report]'."
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
    from pipeline.errors import UsageError

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise UsageError(
            "ndcg report draws its figures with matplotlib, which is not installed; install it with: "
            "pip install 'ndcg-pipeline[report]'"
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
