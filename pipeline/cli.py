"""``ndcg``: a thin command line over the library. Flags -> one Evaluation -> library -> writers.

The flags are declared in :mod:`pipeline.cli_flags` (the measure flags generated from the
registry of :mod:`pipeline.registry`); here each command's handler reads them, calls the library
and prints. Heavy modules (polars, duckdb) are imported only when a command runs, so
``--help`` is fast.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pipeline.cli_flags import (
    COMPARE_CONVENTIONS,
    EXIT_CODES,
    build_parser,
    package_version,
    parse_args,
    subparser,
)
from pipeline.registry import CONVENTIONS, LABEL_BOUND_CONVENTIONS, MEASURE_SETS, max_threads, options_for

if TYPE_CHECKING:
    from pipeline.gate import Gate
    from pipeline.registry import Evaluation
    from pipeline.rules import ValidationWarning

__all__ = ["EXIT_CODES", "build_parser", "main", "max_threads", "package_version"]


def _profiles(args: argparse.Namespace) -> int:
    from pipeline.registry import profiles_table

    sys.stdout.write(profiles_table())
    return 0


def _options(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """The flags (or config keys) of :data:`pipeline.registry.OPTIONS` that ``command`` takes, by name:
    the library's keywords."""
    return {option.name: getattr(args, option.name) for option in options_for(command=command)}


def _log_warnings(warnings: Sequence[object], partition: object = None) -> None:
    """Each warning on stderr; a partition's prefixed with it (``dt=2026-11-21: ...``), so that
    the warnings of a multi-partition job say which partition they belong to."""
    where = f"{partition}: " if partition else ""
    for warning in warnings:
        logging.getLogger("ndcg").warning("%s%s", where, warning)


def _evaluation_from(args: argparse.Namespace) -> Evaluation:
    """The measure flags (or config keys) as one Evaluation: each convention by its name."""
    from pipeline.api import make_evaluation

    options = {c.name: getattr(args, c.name) for c in CONVENTIONS if c.name != "k"}
    return make_evaluation(k=args.k, profile=args.profile, **options)


def _sql(args: argparse.Namespace) -> int:
    from pipeline.transpile import sql_text

    if args.macros:  # the shipped file (`make generate` writes it); generating it again is 2 s of sqlglot
        from pipeline.sql_files import MACROS, sql_file

        sys.stdout.write(sql_file(MACROS))
        return 0

    sys.stdout.write(sql_text(_evaluation_from(args), dialect=args.dialect))
    return 0


def _evaluate(args: argparse.Namespace) -> int:
    from pipeline.errors import UsageError
    from pipeline.io.format import (
        asked_rows,
        asked_table,
        conventions_header,
        document_weights_line,
        json_text,
        per_query_rows,
        per_query_table,
        spelling_note,
        summary_table,
        text_line,
        trec_lines,
        weights_line,
    )
    from pipeline.io.partitions import parse_partition_filters
    from pipeline.io.read import Source, trec_run_id
    from pipeline.io.write import check_out_folder
    from pipeline.job import Job, run_job
    from pipeline.registry import asked_values, named_lines, relstring_asked
    from pipeline.units import option_values

    weighing = "--query-weights" if args.query_weights else "--doc-weight-col" if args.doc_weight_col else None
    if args.output_format in ("gdeval", "ndeval") and weighing:
        raise UsageError(
            f"--output-format {args.output_format} prints {args.output_format}'s amean, the plain mean of its "
            f"lines; it cannot go with {weighing} (weighted means): print them with --output-format table, "
            "json or trec"
        )
    if args.output_format == "ndeval":
        # ndeval's numbers: its profile, its nine measures at its three cutoffs
        from pipeline.io.ndeval_format import ndeval_defaults

        args.profile, args.measures, args.k = ndeval_defaults(
            profile=args.profile,
            measures=args.measures,
            k_given=args.k is not None,
            digits=args.digits,
            group_by=args.group_by,
            skip_unchanged=args.skip_unchanged,
            allow_fractional_labels=args.allow_fractional_labels,
            as_json=args.json,
        )
    if args.output_format == "gdeval":
        # gdeval's numbers: its profile and its two measures, unless given (and then checked)
        from pipeline.io.gdeval_format import gdeval_cutoff, gdeval_defaults

        args.profile, args.measures = gdeval_defaults(
            profile=args.profile,
            measures=args.measures,
            digits=args.digits,
            group_by=args.group_by,
            skip_unchanged=args.skip_unchanged,
            allow_fractional_labels=args.allow_fractional_labels,
            as_json=args.json,
        )
    if args.print_config:
        sys.stdout.write(json.dumps(_resolved_config(args, _evaluation_from(args)), indent=2) + "\n")
        return 0
    if not args.run:
        raise UsageError("no run given: pass --run PATH or set `run` in the --config file")
    check_out_folder(args.out, [("run", args.run), ("qrels", args.qrels), ("query attributes", args.query_attributes)])
    evaluation = _evaluation_from(args)
    # gdeval's one k, its conventions checked before anything runs (and ndeval's)
    gdeval_k = (
        gdeval_cutoff(evaluation, k_given=args.k is not None, measures=args.measures)
        if args.output_format == "gdeval"
        else None
    )
    if args.output_format == "ndeval":
        from pipeline.io.ndeval_format import check_ndeval_conventions

        check_ndeval_conventions(evaluation)
    job = Job(
        run=args.run,
        qrels=args.qrels,
        evaluation=evaluation,
        engine=args.engine,
        out=args.out,
        out_format=args.out_format,
        partition_filters=parse_partition_filters(args.partition or []),
        group_by=tuple(c.strip() for c in args.group_by.split(",") if c.strip()) if args.group_by else (),
        query_attributes=args.query_attributes,
        **option_values(_options(args, "evaluate")),
    )
    output_format = "json" if args.json else args.output_format
    decisions: list[dict[str, object]] = []

    def decided(partition: object, skipped: bool, reason: str) -> None:
        where = f"partition {partition}" if partition else "the output"
        print(text_line(f"ndcg: {'skipped' if skipped else 'recomputing'} {where}: {reason}"), file=sys.stderr)
        decisions.append({"partition": str(partition) if partition else None, "skipped": skipped, "reason": reason})

    check = _stdout_check(output_format, str(job.run), str(job.qrels))
    ndeval_topics: list[Any] = []  # the run's and the judgments' topics, read and checked before writing
    if output_format == "ndeval":
        check = _with_ndeval_topics(check, job, evaluation, ndeval_topics)
    units = run_job(job, on_unit=_progress(job), before_write=check, on_decision=decided)
    skipped = [d for d in decisions if d["skipped"]]
    # the warnings before the answer, never between its lines (stderr and stdout share a terminal)
    for unit in units:
        _log_warnings(unit.result.warnings, unit.partition)
    if output_format == "table":
        for decision in skipped:
            label = f"partition {decision['partition']}" if decision["partition"] else "the output"
            sys.stdout.write(
                text_line(f"# {label}: skipped, unchanged (--skip-unchanged; its outputs are kept)") + "\n"
            )
        if units:
            sys.stdout.write(conventions_header(evaluation, args.profile, verbose=args.verbose) + "\n")
            weighted = weights_line(job.weights.describe()) or document_weights_line(evaluation)
            if weighted:
                sys.stdout.write(weighted + "\n")
    elif job.weights.path and units and output_format != "json":
        logging.getLogger("ndcg").warning(
            "the means printed are weighted by --query-weights %s (sums and query counts are not)", job.weights.path
        )
    note = spelling_note(args.measures, evaluation, args.profile)
    if note and units:
        # with the table, under its conventions line; with trec or JSON, where a person reads them
        if output_format == "table":
            sys.stdout.write(note + "\n")
        else:
            logging.getLogger("ndcg").warning(note.removeprefix("# "))
    if output_format == "trec" and job.group_by and units:
        logging.getLogger("ndcg").warning(
            "--output-format trec prints the lines over all queries only (trec_eval's format has no groups); "
            "each group's means are in --output-format table or json, and in --out's summary"
        )
    # trec_eval's named sets print its lines as it does, the run's name (runid) among them
    trec_sets = tuple(name for name in MEASURE_SETS if name in evaluation.measures)
    run_id = trec_run_id(Source.of(job.run, job.run_format)) if output_format == "trec" and trec_sets else None
    relstrings = _relstrings(job, evaluation, units) if output_format == "trec" and args.per_query else None
    one_by_one = [n for n in args.measures or () if n not in MEASURE_SETS and relstring_asked((n,)) is None]
    named, named_cuts = named_lines(one_by_one, k_given=args.k is not None), named_lines(one_by_one, k_given=False)
    # named one by one with their cutoffs (nDCG@10,P@5,AP): exactly those values, in that order
    asked = asked_values(args.measures, k_given=args.k is not None, cutoffs=evaluation.cutoffs)
    if gdeval_k is not None:
        from pipeline.io.gdeval_format import gdeval_lines, gdeval_run_id

        gdeval_id = gdeval_run_id(str(job.run), trec_run_id(Source.of(job.run, job.run_format)))
        for unit in units:  # one: a partitioned run is refused before
            sys.stdout.write(gdeval_lines(unit.result.per_query, gdeval_k, gdeval_id))
    if output_format == "ndeval" and units:
        from pipeline.io.gdeval_format import gdeval_run_id
        from pipeline.io.ndeval_format import ndeval_lines

        run_id = gdeval_run_id(str(job.run), trec_run_id(Source.of(job.run, job.run_format), first=True))
        sys.stdout.write(ndeval_lines(units[0].result.per_query, ndeval_topics[0], ndeval_topics[1], run_id))
    for unit in units:
        label = text_line(f"# partition {unit.partition}") + "\n" if unit.partition and output_format != "json" else ""
        if output_format == "trec":
            sys.stdout.write(
                label
                + trec_lines(
                    unit.result.per_query,
                    per_query_lines=args.per_query,
                    summary=unit.summary,
                    digits=args.digits,
                    trec_sets=trec_sets,
                    run_id=run_id,
                    relstrings=relstrings,
                    named=named,
                    named_cuts=named_cuts,
                )
            )
        elif output_format == "table":
            rows = per_query_table(unit.result.per_query, asked, digits=args.digits) + "\n" if args.per_query else ""
            summary = (
                summary_table(unit.summary, digits=args.digits)
                if asked is None
                else asked_table(unit.summary, asked, digits=args.digits)
            )
            sys.stdout.write(label + rows + summary)
    if output_format == "json":
        payload = {
            "conventions": evaluation.describe(),
            # only when given, as the manifest records it: JSON readers of unweighted outputs see no change
            **({"query_weights": job.weights.describe()} if job.weights.path else {}),
            "engine": args.engine,
            "units": [
                {
                    "partition": unit.partition.as_dict() if unit.partition else None,
                    "summary": unit.summary.to_dicts(),
                    **({"measures": asked_rows(unit.summary, asked)} if asked is not None else {}),
                    **({"per_query": per_query_rows(unit.result.per_query, asked)} if args.per_query else {}),
                    "queries": unit.manifest["queries"],
                }
                for unit in units
            ],
        }
        if len(units) == 1:
            payload["summary"] = units[0].summary.to_dicts()
            if asked is not None:
                payload["measures"] = asked_rows(units[0].summary, asked)
            if args.per_query:
                payload["per_query"] = per_query_rows(units[0].result.per_query, asked)
        if args.skip_unchanged:
            payload["skipped"] = skipped
        sys.stdout.write(json_text(payload) + "\n")
    return 0


def _with_ndeval_topics(
    check: Callable[[list], None], job: Any, evaluation: Evaluation, topics: list[Any]
) -> Callable[[list], None]:
    """``check``, then the topics of the run and of the judgments, read again by Polars (their
    query ids only) into ``topics``, each id checked as a topic number: a topic of the run without
    judgments has a line of zeros in ndeval's output, and ndeval refuses an id that is not one."""

    def checked(units: list) -> None:
        import polars as pl

        from pipeline.inputs import prepare
        from pipeline.io.gdeval_format import check_gdeval_ids

        check(units)
        prepared = prepare(job.run, job.qrels, job.columns, job.run_format, job.qrels_format, evaluation)
        run_topics, judged_topics = pl.collect_all(
            [frame.select(pl.col("query_id").unique()) for frame in (prepared.run, prepared.qrels)]
        )
        check_gdeval_ids(run_topics, str(job.run), "ndeval")
        check_gdeval_ids(judged_topics, str(job.qrels), "ndeval")
        # ndeval matches a run's topic to the judgments' by number: 7 in one and 07 in the other
        # are one topic to it and two queries here
        both = pl.concat([frame.select(pl.col("query_id").cast(pl.String)) for frame in (run_topics, judged_topics)])
        check_gdeval_ids(both.unique(), str(job.run), "ndeval")
        topics[:] = [run_topics["query_id"], judged_topics["query_id"]]

    return checked


def _relstrings(job: Any, evaluation: Evaluation, units: list[Any]) -> tuple[str, dict[str, str]] | None:
    """trec_eval's relstring lines when ``--measures`` asks for them: ``(line name, {query:
    string})``, of the run as the evaluation ranks it (read again by Polars, whatever the
    engine: only the top results of each query are kept)."""
    import polars as pl

    from pipeline.engines.polars import relstrings
    from pipeline.errors import UsageError
    from pipeline.inputs import Inputs, prepare
    from pipeline.registry import relstring_asked

    asked = relstring_asked(evaluation.measures)
    if asked is None or not units:
        return None
    if any(unit.partition for unit in units):
        # a query id may stand in several partitions (one per system): its string would be ambiguous
        raise UsageError(f"{asked[0]} is printed for a run that is not partitioned; evaluate one partition's folder")
    inputs = Inputs(job.run, job.qrels, job.columns, job.run_format, job.qrels_format)
    prepared = prepare(inputs.run, inputs.qrels, inputs.columns, inputs.run_format, inputs.qrels_format, evaluation)
    ids = pl.col("query_id", "doc_id").cast(pl.String)
    table = relstrings(prepared.run.with_columns(ids), prepared.qrels.with_columns(ids), evaluation, asked[1])
    return asked[0], dict(table.collect().iter_rows())


def _stdout_check(output_format: str, run: str, qrels: str) -> Callable[[list], None]:
    """What stdout will print is checked before any output is written: trec lines cannot carry
    every query id, nor gdeval's (which also print one run's, not a partitioned run's)."""

    def check(units: list) -> None:
        from pipeline.io.format import check_trec_ids
        from pipeline.io.gdeval_format import check_gdeval_units

        if output_format == "trec":
            for unit in units:
                check_trec_ids(unit.result.per_query)
        elif output_format == "gdeval":
            check_gdeval_units(units, run)
        elif output_format == "ndeval":
            from pipeline.io.ndeval_format import check_ndeval_labels

            check_gdeval_units(units, run, "ndeval", "ndeval")
            for unit in units:
                check_ndeval_labels(unit.result.warnings, qrels)

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


def _resolved_config(args: argparse.Namespace, evaluation: Evaluation) -> dict[str, object]:
    """The flags and config keys as the job will take them: each convention left out holds the
    value it resolves to (the profile's choice, else the registry's default), not null."""
    from pipeline.io.format import convention_settings

    hidden = {"handler", "command", "print_config", "config"}
    given = {key: value for key, value in vars(args).items() if key not in hidden}
    resolved = convention_settings(evaluation)
    for name, value in resolved.items():
        if given.get(name) is None:
            given[name] = value
    return dict(sorted(given.items()))


def _configure_logging(level: str, format: str, *, verbose: bool = False) -> logging.Formatter:
    """Logs and warnings go to stderr; configured here, never in the library. A warning takes
    one short line unless ``verbose`` (and in full in JSON logs)."""
    handler = logging.StreamHandler(sys.stderr)
    formatter = _JsonFormatter() if format == "json" else _TextFormatter(verbose=verbose)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    return formatter


def _warnings_in(record: logging.LogRecord) -> list[ValidationWarning]:
    from pipeline.rules import ValidationWarning

    return [arg for arg in record.args if isinstance(arg, ValidationWarning)] if isinstance(record.args, tuple) else []


class _TextFormatter(logging.Formatter):
    def __init__(self, *, verbose: bool = False) -> None:
        super().__init__()
        self.verbose = verbose
        self.shortened = False  # a warning was printed in its short line: say once where the rest is

    def format(self, record: logging.LogRecord) -> str:
        from pipeline.io.format import text_line

        message = record.getMessage()
        if not self.verbose and _warnings_in(record):
            from pipeline.rules import ValidationWarning

            self.shortened = True
            given = record.args if isinstance(record.args, tuple) else ()
            message = record.msg % tuple(arg.line() if isinstance(arg, ValidationWarning) else arg for arg in given)
        # a message naming an id or a path stays one line (a line break in it would forge others);
        # the traceback --log-level debug asks for follows it, as Python prints one
        line = text_line(f"ndcg: {record.levelname.lower()}: {message}")
        return f"{line}\n{self.formatException(record.exc_info).rstrip()}" if record.exc_info else line


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        warnings = _warnings_in(record)
        return json.dumps(
            {
                "time": self.formatTime(record),
                "level": record.levelname.lower(),
                "logger": record.name,
                "message": record.getMessage(),
                **({"warning": warnings[0].as_dict()} if warnings else {}),
                **({"traceback": self.formatException(record.exc_info)} if record.exc_info else {}),
            }
        )


def _apply_config(
    parser: argparse.ArgumentParser, args: argparse.Namespace, argv: Sequence[str] | None
) -> argparse.Namespace:
    """Re-parse with the config file's values as defaults, so that flags override it."""
    from pipeline.config import load_config

    command = subparser(parser, args.command)
    values = load_config(args.config, command)
    given = list(argv if argv is not None else sys.argv[1:])
    if "partition" in values and any(a == "--partition" or a.startswith("--partition=") for a in given):
        del values["partition"]  # --partition flags replace the file's list rather than add to it
    command.set_defaults(**values)
    return parse_args(parser, argv)


def _validate(args: argparse.Namespace) -> int:
    """Only the checks. An invalid input is part of the report (exit 3), not a crash."""
    from pipeline.api import check
    from pipeline.errors import InvalidInput, UsageError
    from pipeline.io.format import validation_report

    if not args.run:
        raise UsageError("no run given: pass --run PATH")

    error: InvalidInput | None = None
    warnings: tuple = ()
    try:
        bounds = {name: getattr(args, name) for name in LABEL_BOUND_CONVENTIONS}
        warnings = check(args.run, args.qrels, **_options(args, "validate"), **bounds)
    except InvalidInput as invalid:
        error = invalid
    sys.stdout.write(validation_report(args.run, args.qrels, error, warnings, as_json=args.json))
    if error is not None:
        if args.json:  # the text report already holds the message; JSON readers also get it on stderr
            print(f"ndcg: error: {error}", file=sys.stderr)
        return error.exit_code
    return 0


def _compare(args: argparse.Namespace) -> int:
    from pipeline.compare_job import Systems, compare_job
    from pipeline.errors import UsageError
    from pipeline.gate import GateCannotFail

    conventions = {name: getattr(args, name) for name in COMPARE_CONVENTIONS}
    if not args.run:
        given = [f"--{name.replace('_', '-')}" for name, value in conventions.items() if value is not None]
        given += ["--profile"] if args.profile is not None else []
        if given:
            raise UsageError(
                f"{', '.join(given)} score runs here (--run); evaluation outputs were scored with the "
                "conventions of their manifest.json"
            )
    if args.json and args.output_format not in ("table", "json"):
        raise UsageError(f"--json is --output-format json; it cannot go with --output-format {args.output_format}")
    output_format = "json" if args.json else args.output_format
    systems = Systems(
        baseline=args.baseline,
        candidates=args.candidate,
        runs=args.run,
        qrels=args.qrels,
        names=args.names,
        engine=args.engine,
        evaluation_options=conventions,
        profile=args.profile,
        query_attributes=args.query_attributes,
        input_options=_options(args, "compare"),
        query_weights=args.query_weights,
        weight_col=args.weight_col,
        missing_query_weight=args.missing_query_weight,
    )
    try:
        compared = compare_job(
            systems,
            k=args.k,
            group_by=args.group_by,
            all_queries=args.all_queries,
            permutations=args.permutations,
            bootstrap=args.bootstrap,
            seed=args.seed,
            correction=args.correction,
            allow_different_conventions=args.allow_different_conventions,
            allow_different_judgments=args.allow_different_judgments,
            out=args.out,
            gate=_gate_from(args),
            partition=args.partition or [],
            measure=args.measure,
        )
    except GateCannotFail as refused:
        # the comparison could be made, only its gate could not fail: shown, then the refusal (exit 2)
        if refused.compared is not None:
            _print_comparison(refused.compared, output_format, args.digits)
        raise
    _print_comparison(compared, output_format, args.digits)
    verdict = compared.gate
    if verdict is not None and not args.all_queries:
        _warn_ungated_queries(compared.unpaired)
    if verdict is not None and verdict.failed:
        from pipeline.errors import RegressionGateFailed

        failures = verdict.failure_texts()
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        raise RegressionGateFailed(f"regression gate failed: {failures[0]}{more}")
    return 0


def _print_comparison(compared: Any, output_format: str, digits: int) -> None:
    """The comparison on stdout in ``output_format``, with the gate's verdict when there is one."""
    from pipeline.compare import comparison_json, comparison_table
    from pipeline.io.format import json_text

    verdict = compared.gate
    if output_format == "json":
        payload = comparison_json(compared.result, compared.unpaired, compared.conventions)
        payload["judgments"] = compared.judgments
        if verdict is not None:
            payload["gate"] = verdict.describe()
        sys.stdout.write(json_text(payload) + "\n")
    elif output_format == "markdown":
        from pipeline.compare_markdown import comparison_markdown

        text = comparison_markdown(
            compared.result, compared.unpaired, measure=compared.measure, gate=verdict, digits=digits
        )
        sys.stdout.write(text)
    else:
        sys.stdout.write(comparison_table(compared.result, compared.unpaired, digits=digits))
        if verdict is not None:
            sys.stdout.write("\n".join(verdict.lines()) + "\n")


def _warn_ungated_queries(unpaired: object) -> None:
    """Queries the baseline has and the candidate lacks are left out of the statistics, so of the
    gate too: a candidate that lost queries is not judged on them unless --all-queries scores them
    0. Said on stderr, so that a passing gate is not read as covering them."""
    import polars as pl

    if not isinstance(unpaired, pl.DataFrame) or unpaired.height == 0:
        return
    first = unpaired.get_column("baseline")[0]
    lost = unpaired.filter((pl.col("baseline") == first) & (pl.col("side") == "baseline"))
    for row in lost.iter_rows(named=True):
        logging.getLogger("ndcg").warning(
            "gate: %d quer%s only in %s (not in %s) are not gated; --all-queries scores them 0 for %s",
            len(row["queries"]),
            "y" if len(row["queries"]) == 1 else "ies",
            row["baseline"],
            row["candidate"],
            row["candidate"],
        )


def _gate_from(args: argparse.Namespace) -> Gate | None:
    """``--fail-if-worse``, ``--fail-if-drop-over`` and ``--min-judged`` and their companions as a
    Gate (None without any of them, where giving a companion alone is a mistake said as such)."""
    from pipeline.compare_job import compare_cutoffs
    from pipeline.errors import UsageError
    from pipeline.gate import Gate

    if args.fail_if_worse is None and args.fail_if_drop_over is None and args.min_judged is None:
        given = [
            flag
            for flag, value in (
                ("--alpha", args.alpha),
                ("--gate-k", args.gate_k),
                ("--gate-groups", args.gate_groups),
                ("--gate-partitions", args.gate_partitions),
            )
            if value not in (None, False)
        ]
        if given:
            verb = "apply" if len(given) > 1 else "applies"
            raise UsageError(
                f"{', '.join(given)} only {verb} with --fail-if-worse MARGIN, --fail-if-drop-over DROP or "
                "--min-judged F"
            )
        return None
    if args.fail_if_worse is None and args.alpha is not None:
        raise UsageError(
            "--alpha only applies with --fail-if-worse MARGIN (--fail-if-drop-over and the floor of --min-judged "
            "are no tests)"
        )
    if args.gate_groups and not args.group_by:
        raise UsageError("--gate-groups needs --group-by (the groups to gate)")
    if args.gate_k is not None and not args.gate_k.strip():
        raise UsageError("--gate-k is empty: give cutoffs such as 10 or 5,all")
    return Gate(
        args.fail_if_worse,
        alpha=0.05 if args.alpha is None else args.alpha,
        cutoffs=compare_cutoffs(args.gate_k),
        groups=args.gate_groups,
        partitions=args.gate_partitions,
        min_judged=args.min_judged,
        max_drop=args.fail_if_drop_over,
    )


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
    from pipeline.compare_job import compare_cutoffs
    from pipeline.report import build_report

    cutoff = compare_cutoffs(args.k) if args.k else None
    if cutoff is not None and len(cutoff) != 1:
        raise UsageError(f"--k of report takes one cutoff (or 'all'), got {args.k!r}")
    written = build_report(
        args.outputs,
        html_path=args.html,
        png_dir=args.png,
        cutoff=cutoff[0] if cutoff else None,
        cutoff_given=cutoff is not None,
        title=args.title if args.title is not None else f"{args.measure} report".replace("ndcg", "NDCG", 1),
        allow_different_conventions=args.allow_different_conventions,
        names=[n.strip() for n in args.names.split(",")] if args.names else None,
        measure=args.measure,
    )
    from pipeline.io.format import text_line

    for path in written:
        print(text_line(f"wrote {path}"))
    return 0


_HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "evaluate": _evaluate,
    "validate": _validate,
    "compare": _compare,
    "report": _report,
    "sql": _sql,
    "profiles": _profiles,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parse_args(parser, argv)
    from pipeline.errors import NdcgError
    from pipeline.io.format import text_line

    stdout = sys.stdout
    sys.stdout = _GuardedStdout(stdout)
    try:
        if getattr(args, "config", None):
            args = _apply_config(parser, args, argv)
        formatter = _configure_logging(
            getattr(args, "log_level", "warning"),
            getattr(args, "log_format", "text"),
            verbose=getattr(args, "verbose", False),
        )
        hint = _WarningsHint(formatter, flag_exists=hasattr(args, "verbose"))
        sys.stdout.before_first_write = hint
        code = int(_HANDLERS[args.command](args))
        sys.stdout.flush()  # a full device shows only when the buffer is written
        hint()
        return code
    except NdcgError as error:
        logging.getLogger("ndcg").debug("failed", exc_info=True)
        print(text_line(f"ndcg: error: {error}"), file=sys.stderr)
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
            text_line(f"ndcg: internal error: {type(error).__name__}: {error}")
            + " (rerun with --log-level debug for the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        sys.stdout = stdout


class _WarningsHint:
    """The line after the warnings saying where their details are, once, when a warning was
    shortened: called before the first line of the answer (so it never comes between its lines)
    and at the end (a command that printed nothing)."""

    def __init__(self, formatter: logging.Formatter, *, flag_exists: bool) -> None:
        self._formatter, self._flag_exists, self._said = formatter, flag_exists, False

    def __call__(self) -> None:
        if self._flag_exists and getattr(self._formatter, "shortened", False) and not self._said:
            self._said = True
            print("ndcg: --verbose prints each warning in full: its first ids and what changes it", file=sys.stderr)


class _GuardedStdout:
    """stdout for the length of a command: a failure to write to it (a full device, a closed
    pipe, a character its encoding lacks) is an OutputError naming stdout and the fix, not an
    internal error. After one, what is still buffered is dropped, so that Python's own flush at
    exit does not fail again with a traceback."""

    def __init__(self, stream: object) -> None:
        self._stream = stream
        self.before_first_write: Callable[[], None] | None = None

    def write(self, text: str) -> int:
        if self.before_first_write is not None:
            before, self.before_first_write = self.before_first_write, None
            before()
        try:
            return int(self._stream.write(text))  # type: ignore[attr-defined]
        except (OSError, UnicodeEncodeError) as error:
            raise self._failed(error) from None

    def flush(self) -> None:
        try:
            self._stream.flush()  # type: ignore[attr-defined]
        except OSError as error:
            raise self._failed(error) from None

    def _failed(self, error: BaseException) -> Exception:
        from pipeline.errors import stdout_failure

        failure = stdout_failure(error, getattr(self._stream, "encoding", None))
        if isinstance(error, OSError):
            _drop_buffered_output(self._stream)
        return failure

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _drop_buffered_output(stream: object) -> None:
    """Point stdout's descriptor at /dev/null: the bytes left in its buffer go nowhere instead
    of failing again when Python flushes at exit."""
    import os

    try:
        fileno = stream.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
