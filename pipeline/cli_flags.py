"""The flags of ``ndcg``: one argparse parser, its measure flags and its input, validation,
execution and job flags generated from the registry (:data:`pipeline.registry.CONVENTIONS`,
:data:`pipeline.registry.OPTIONS`), so the flags, the config keys (:mod:`pipeline.config` reads them
off the parser) and the API's options never disagree.

Only light modules are imported here: ``--help`` stays fast.
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from pipeline.cli_help import EXAMPLES, add_help_texts
from pipeline.engines import ENGINES
from pipeline.registry import (
    CONVENTIONS,
    LABEL_BOUND_CONVENTIONS,
    MEASURE_NAMES,
    OPTION,
    PRIMARY_MEASURE,
    Convention,
    Option,
    SpecError,
    options_for,
)

EXIT_CODES = """exit codes:
  0  done
  1  internal error, or out of memory (try --memory-limit / fewer --threads)
  2  usage error: bad flags or options, or no space left in TMPDIR for the buckets of --memory-limit
  3  invalid input data: missing, unreadable or malformed files, duplicates, nulls
  4  a requested partition does not exist
  5  nothing to evaluate: no query is in both the run and the qrels
  6  regression gate failed (compare --fail-if-worse): the candidate is worse than the baseline
     by more than the margin and significantly so, or (compare --fail-if-drop-over) by more than
     the drop allowed, or (compare --min-judged) the candidate's Judged@k is below the floor (the
     failing cutoff and group are printed)
"""

# The conventions that `ndcg compare --run` takes as `ndcg evaluate` does: all but --k and
# --all-queries, which compare reads as its own options (the cutoffs compared, the queries one
# system lacks scored 0) and passes on to the evaluation of the runs.
COMPARE_CONVENTIONS = tuple(c.name for c in CONVENTIONS if c.name not in ("k", "all_queries"))


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


class _Parser(argparse.ArgumentParser):
    """An argparse parser whose errors come first: ``ndcg evaluate: error: ...``, then one line
    saying where the flags are (argparse printed the whole usage block, up to 37 lines, first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\nusage: {self.prog} [flags]; `{self.prog} --help` lists them\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ndcg",
        description="Exact CG, DCG, IDCG and NDCG@k over Parquet, TREC and CSV inputs.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action=_VersionAction, help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    _add_evaluate(commands)
    validate = commands.add_parser(
        "validate",
        help="check a run and judgments without scoring them",
        description="Run only the input checks and print a report: exit 0 when valid (warnings allowed), "
        "3 when invalid.",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input_arguments(validate, "validate")
    bounds = validate.add_argument_group(
        "measure", "the conventions that decide which labels (and document weights) are refused, as evaluate takes them"
    )
    add_measure_flags(bounds, LABEL_BOUND_CONVENTIONS, profile=False)
    weights = validate.add_argument_group(
        "query weights",
        "the weights' table checked as evaluate checks it, with a weight for each query with results and judgments",
    )
    add_option_flags(weights, "query weights", "validate")
    validate.add_argument("--json", action="store_true", help="print the report as one JSON object")
    add_help_texts(validate, "--run RUN [--qrels QRELS] [flags]", EXAMPLES["validate"], EXIT_CODES)

    _add_compare(commands)
    _add_report(commands)
    _add_sql(commands)
    commands.add_parser(
        "profiles",
        help="list the named conventions of peer tools",
        description="The --profile bundles: each peer tool's choices, and what a profile still cannot mimic.",
    )
    # every command logs as evaluate does (compare --log-level error was "did you mean --log-base?")
    for name in ("validate", "compare", "report"):
        logging = commands.choices[name].add_argument_group("logging")
        logging.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
        logging.add_argument("--log-format", default="text", choices=("text", "json"), help="json: one object per line")
    return parser


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """``parse_args``, but a mistyped flag is named by its command with the closest real flag
    (argparse reports it on the top-level usage, without a suggestion)."""
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        command = subparser(parser, args.command)
        flags = [flag for action in command._actions for flag in action.option_strings if flag.startswith("--")]
        first = unknown[0]
        close = difflib.get_close_matches(first.split("=", 1)[0], flags, n=1) if first.startswith("-") else []
        hint = f"; did you mean {close[0]}?" if close else f"; `ndcg {args.command} --help` lists the flags"
        command.error(f"unrecognized argument(s): {' '.join(unknown)}{hint}")
    return args


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:  # argparse offers no public way to reach a subparser
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise KeyError(name)


def add_measure_flags(
    group: argparse._ArgumentGroup, names: Sequence[str] | None = None, *, profile: bool | None = None
) -> None:
    """A flag per convention of the registry (``names``: only those), with ``--profile`` after
    ``--k``'s place (``profile``: default with every convention). Their defaults are None: an
    option left out keeps the profile's choice, or the registry's default (``--k`` left out:
    the cutoffs ``--measures`` names, else the default ones)."""
    with_profile = names is None if profile is None else profile
    for convention in CONVENTIONS:
        if names is None or convention.name in names:
            _add_convention(group, convention)
        if with_profile and convention.name == "k":
            group.add_argument(
                "--profile",
                metavar="NAME",
                help="a peer tool's conventions (`ndcg profiles` lists them); flags override it",
            )


def _add_convention(group: argparse._ArgumentGroup, convention: Convention) -> None:
    options: dict[str, Any] = {"help": convention.flag_help, "default": None}
    if convention.switch:
        options["action"] = argparse.BooleanOptionalAction
    elif convention.parse is not None:
        options["type"] = _flag_type(convention.parse)
    if convention.choices and not convention.open:
        options["choices"] = convention.values
    if convention.metavar:
        options["metavar"] = convention.metavar
    group.add_argument(convention.flag, **options)


def _flag_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """The registry's parser as argparse's type: its message, not argparse's 'invalid value'."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except SpecError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = parse.__name__  # argparse names a ValueError's type by it ("invalid float value")
    return convert


def _add_evaluate(commands: argparse._SubParsersAction) -> None:
    evaluate = commands.add_parser(
        "evaluate",
        help="score a run against judgments",
        description="Score a run against judgments (trec_eval's conventions unless told otherwise).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _add_input_arguments(evaluate, "evaluate")

    measure = evaluate.add_argument_group(
        "measure", "options left out take the --profile's choice, or trec_eval's without a profile"
    )
    add_measure_flags(measure)
    _add_execution_and_output(evaluate)
    job = evaluate.add_argument_group("batch job")
    job.add_argument("--config", help="TOML file with the same keys as these flags; flags override it")
    job.add_argument("--print-config", action="store_true", help="print the resolved configuration and exit")
    job.add_argument(
        "--partition",
        action="append",
        metavar="KEY=VALUE",
        help="evaluate only this hive partition (repeatable; other partitions are not read; all engines)",
    )
    add_option_flags(job, "batch job", "evaluate")
    job.add_argument(
        "--group-by",
        help="columns of the run (or of --query-attributes) to summarise by, e.g. locale,model (not on spark)",
    )
    job.add_argument("--query-attributes", help="Parquet/CSV table of per-query attributes joined on the query id")
    add_option_flags(job, "query weights", "evaluate")
    job.add_argument("--log-level", default="warning", choices=("debug", "info", "warning", "error"))
    job.add_argument("--log-format", default="text", choices=("text", "json"), help="json: one object per line")
    add_help_texts(
        evaluate, "--run RUN [--qrels QRELS] [--k K] [--measures LIST] [flags]", EXAMPLES["evaluate"], EXIT_CODES
    )


def _add_execution_and_output(evaluate: argparse.ArgumentParser) -> None:
    run = evaluate.add_argument_group("execution")
    run.add_argument("--engine", default="polars", choices=tuple(ENGINES), help="default: polars")
    add_option_flags(run, "execution", "evaluate")

    output = evaluate.add_argument_group("output")
    output.add_argument(
        "--out", help="directory for per_query and summary files (per partition: OUT/key=value/; spark: folders)"
    )
    output.add_argument(
        "--out-format", default="parquet", choices=("parquet", "csv", "jsonl", "trec"), help="file format of --out"
    )
    output.add_argument(
        "--output-format",
        default="table",
        choices=("table", "trec", "json", "gdeval", "ndeval"),
        help="what to print on stdout (gdeval: gdeval.pl's CSV lines, under its conventions, at one k; ndeval: "
        "ndeval's CSV lines of its intent-aware measures at k 5, 10, 20)",
    )
    output.add_argument(
        "--per-query", action="store_true", help="each query's values too, above the summary (json: a per_query list)"
    )
    output.add_argument("--digits", type=_digits, default=4, help="decimals printed, 0 to 20 (default 4)")
    output.add_argument(
        "--json", action="store_true", help="print the summary as one JSON object (= --output-format json)"
    )
    output.add_argument(
        "--verbose",
        action="store_true",
        help="every convention in full above the table (as --json and manifest.json record them), not only "
        "what differs from the profile or trec_eval's defaults; and each warning in full, with its first ids",
    )


def _add_sql(commands: argparse._SubParsersAction) -> None:
    sql = commands.add_parser(
        "sql",
        help="print the SQL of an evaluation, for DuckDB or Spark",
        description="Print sql/measures/per_query.sql (with the steps before it) and sql/summary.sql with the "
        "measure options bound, in DuckDB's or Spark's dialect (transpiled by sqlglot). The SQL reads views "
        "run (query_id, doc_id, score, arrival, input_rank: the input position and rank, null when unused) "
        "and qrels (query_id, doc_id, relevance) and defines the views per_query and summary. With "
        "--doc-weight-col, run has doc_weight too (each result's weight) and the summary's means are weighted by "
        "TF-Ranking's list weights (views ndcg_judgments, list_weights and unrepresentable_weights before it).",
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sql.add_argument("--dialect", default="spark", choices=("spark", "duckdb"), help="default: spark")
    sql.add_argument(
        "--macros",
        action="store_true",
        help="print instead the DuckDB table macros ndcg_per_query(run, qrels, ...) and ndcg_summary(run, qrels, "
        "...), every convention a named parameter (the file sql/generated/macros.sql; .read it into duckdb)",
    )
    add_measure_flags(sql.add_argument_group("measure"))  # the very flags of `evaluate`
    add_help_texts(sql, "[--dialect duckdb|spark] [--macros] [measure flags]", EXAMPLES["sql"], EXIT_CODES)


def _add_input_arguments(command: argparse.ArgumentParser, name: str) -> None:
    inputs = command.add_argument_group("inputs")
    inputs.add_argument(
        "--run",
        help="run: Parquet file, directory (hive partitions too) or glob, local or s3:// gs:// az:// URL; "
        "a Delta table's folder; TREC run; CSV",
    )
    inputs.add_argument("--qrels", help="judgments; omit to use the run's own label column (inline labels)")
    add_option_flags(inputs, "inputs", name)
    add_option_flags(command.add_argument_group("validation"), "validation", name)


def add_option_flags(group: argparse._ArgumentGroup, group_name: str, command: str) -> None:
    """A flag per option of the registry's group ``group_name`` that ``command`` takes."""
    for option in options_for(command=command):
        if option.group == group_name:
            _add_option(group, option)


def _add_option(group: argparse._ArgumentGroup, option: Option) -> None:
    settings: dict[str, Any] = {"help": option.help, "default": option.default}
    if option.switch:
        settings["action"] = "store_true"
    elif option.parse is not None:
        settings["type"] = _flag_type(option.parse)
    if option.choices:
        settings["choices"] = option.choices
    if option.metavar:
        settings["metavar"] = option.metavar
    group.add_argument(option.flag, **settings)


def _digits(text: str) -> int:
    # checked when the flags are read, so that a bad value stops the job before anything is written
    if not text.strip().isdigit() or int(text) > 20:
        raise argparse.ArgumentTypeError(f"expected a whole number of decimals from 0 to 20, got {text!r}")
    return int(text)


def _positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def _resample_count(text: str) -> int:
    from pipeline.compare import MAX_RESAMPLES

    count = _positive_int(text)
    if count > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"at most {MAX_RESAMPLES:,}, got {text}")
    return count


def _margin(text: str) -> Any:
    from pipeline.errors import UsageError
    from pipeline.gate import Margin

    try:
        return Margin.parse(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--fail-if-worse: ")) from None


def _drop_limit(text: str) -> Any:
    from pipeline.errors import UsageError
    from pipeline.gate import DROP_FLAG, Margin

    try:
        return Margin.parse(text, DROP_FLAG)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix(f"{DROP_FLAG}: ")) from None


def _min_judged(text: str) -> float:
    from pipeline.errors import UsageError
    from pipeline.gate import parse_min_judged

    try:
        return parse_min_judged(text)
    except UsageError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--min-judged: ")) from None


def _alpha(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value < 1:  # NaN fails too
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (exclusive), e.g. 0.05, got {text!r}")
    return value


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
    systems.add_argument(
        "--baseline",
        help="the baseline (the system the gate holds the others to): an evaluation output directory (or its "
        "per_query.parquet)",
    )
    systems.add_argument(
        "--candidate",
        action="append",
        default=[],
        help="a candidate compared with the baseline: another output directory; repeat for more systems",
    )
    systems.add_argument(
        "--run",
        action="append",
        default=[],
        help="a run to evaluate, repeated: the first is the baseline, the next ones the candidates (--run old "
        "--run new gates new against old); at least two",
    )
    systems.add_argument("--qrels", help="judgments for --run; omit to use each run's inline labels")
    systems.add_argument("--names", help="comma-separated names of the systems, in order (default: from the paths)")
    systems.add_argument(
        "--partition",
        action="append",
        metavar="KEY=VALUE",
        help="with partitioned systems (OUT/dt=.../ folders, or hive-partitioned runs): compare only this "
        "partition (repeatable, as evaluate's --partition); default: every partition all systems have",
    )

    systems.add_argument(
        "--query-attributes",
        help="with --run and --group-by: Parquet/CSV table of per-query attributes joined on the query id "
        "(default: the groups of the runs)",
    )
    systems.add_argument(
        "--query-weights",
        metavar="PATH",
        help="Parquet/CSV table of one weight per query (query_id and --weight-col), as evaluate's: every mean is "
        "sum(w*x)/sum(w), the randomization test and the bootstrap are on the weighted mean difference, no t-test "
        "(docs/compare-and-gate.md#query-weights); default: the weights the outputs were evaluated with, if any",
    )
    _add_option(systems, OPTION["weight_col"])
    _add_option(systems, OPTION["missing_query_weight"])

    measure = compare.add_argument_group(
        "measure (with --run: as `ndcg evaluate`)",
        "options left out take the --profile's choice, or trec_eval's without a profile",
    )
    add_measure_flags(measure, COMPARE_CONVENTIONS, profile=True)
    measure.add_argument("--engine", default="polars", choices=tuple(ENGINES), help="default: polars")
    add_option_flags(compare.add_argument_group("validation"), "validation", "compare")

    tests = compare.add_argument_group("comparison")
    tests.add_argument(
        "--measure",
        default=PRIMARY_MEASURE,
        choices=MEASURE_NAMES,
        help="the per-query column compared (default ndcg), e.g. recip_rank: outputs evaluated with "
        "--measures recip_rank, or runs scored here with it",
    )
    tests.add_argument(
        "--k", help="cutoffs to compare, e.g. 10 or 5,10,all ('all' = whole ranking); default: every shared cutoff"
    )
    tests.add_argument("--group-by", help="comma-separated group columns (e.g. locale): the same table per group")
    tests.add_argument(
        "--all-queries",
        action="store_true",
        help="a query one system lacks scores 0 for it (default: compare only common queries); with --run, "
        "also evaluate's --all-queries",
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
    tests.add_argument(
        "--allow-different-judgments",
        action="store_true",
        help="compare outputs scored against different judgments (another qrels file or Delta version, a day "
        "judged again; as their manifest.json records them); refused without it",
    )

    _add_gate_flags(compare)

    output = compare.add_argument_group("output")
    output.add_argument("--out", help="directory for comparison.parquet, deltas.parquet and manifest.json")
    output.add_argument(
        "--output-format",
        default="table",
        choices=("table", "json", "markdown"),
        help="what to print on stdout: markdown is GitHub-flavoured, for a CI step summary (means, differences, "
        "p-values, the gate's verdict, the most regressed queries)",
    )
    output.add_argument(
        "--json", action="store_true", help="print the comparison as one JSON object (= --output-format json)"
    )
    output.add_argument("--digits", type=_digits, default=4, help="decimals printed, 0 to 20 (default 4)")
    output.add_argument("--verbose", action="store_true", help="each warning in full, with its first ids")
    add_help_texts(
        compare,
        "--run BASELINE --run CANDIDATE --qrels QRELS | --baseline DIR --candidate DIR [flags]",
        EXAMPLES["compare"],
        EXIT_CODES,
    )


def _add_gate_flags(compare: argparse.ArgumentParser) -> None:
    gate = compare.add_argument_group(
        "regression gate (exit 6 when the candidate got worse, or rests on too few judgments)",
        "fail when, at a gated cutoff, the candidate's mean is below the baseline's (the first system's)\n"
        "by more than MARGIN and the drop is significant at --alpha (randomization test, p-values\n"
        "adjusted by --correction within each family of gated rows: the overall rows, --gate-groups'\n"
        "rows, --gate-partitions' rows, each a family of its own held to --alpha, so a flag that gates\n"
        "more rows never lets a failure of the others pass); the failing cutoff, group, partition and\n"
        "family are printed and recorded in manifest.json. A gate that no data could fail (too few\n"
        "paired queries or --permutations to reach --alpha) is refused (exit 2), after the comparison\n"
        "is printed. --fail-if-drop-over DROP fails on the drop alone, without a test (it can fail on\n"
        "one query), and --min-judged F when the candidate's Judged@k in a gated row is below F; each\n"
        "alone or beside the others, whose failures they add to",
    )
    gate.add_argument(
        "--fail-if-worse",
        metavar="MARGIN",
        type=_margin,
        help="the drop allowed: absolute NDCG (0.01) or relative to the baseline's mean (2%%); exit 6 beyond it "
        "when the drop is significant at --alpha",
    )
    gate.add_argument(
        "--fail-if-drop-over",
        metavar="DROP",
        type=_drop_limit,
        help="the drop allowed without a significance test: absolute (0.02) or relative to the baseline's mean "
        "(2%%); exit 6 when the candidate's mean drops by more, whatever the p-value",
    )
    gate.add_argument(
        "--min-judged",
        metavar="F",
        type=_min_judged,
        help="the least judgment coverage allowed: the candidate's mean Judged@k (judged results in the top k / "
        "k) in each gated row, 0 to 1 (0.9) or a percentage (90%%); exit 6 below it. Outputs must hold Judged@k "
        "(evaluate --measures judged); runs scored here (--run) compute it",
    )
    gate.add_argument("--alpha", type=_alpha, help="significance level of the gate, between 0 and 1 (default 0.05)")
    gate.add_argument("--gate-k", help="cutoffs the gate checks, e.g. 10 or 5,all (default: every compared cutoff)")
    gate.add_argument(
        "--gate-groups", action="store_true", help="gate each --group-by group too (default: the overall rows only)"
    )
    gate.add_argument(
        "--gate-partitions",
        action="store_true",
        help="gate each partition too (default: the pooled rows over all paired partitions only)",
    )


def _add_report(commands: argparse._SubParsersAction) -> None:
    report = commands.add_parser(
        "report",
        help="one self-contained HTML report of evaluation and comparison outputs",
        description=(
            "Write one HTML file (no network needed to open it) from outputs of `ndcg evaluate --out` and "
            "`ndcg compare --out`: summary, NDCG@k by k, per-query distributions, per-query differences, "
            "per-group bars, conventions, tie bounds and judgment coverage. Needs the report extra (from a checkout: "
            "pip install -e '.[report]')."
        ),
        epilog=EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    report.add_argument("outputs", nargs="+", help="evaluation output directories and/or a compare output directory")
    report.add_argument("--html", required=True, help="the HTML file to write")
    report.add_argument("--png", help="also write each figure as a PNG file into this directory")
    report.add_argument(
        "--k",
        help="cutoff of the plots and per-k tables (default: the one most outputs have, 10 among equals)",
    )
    report.add_argument(
        "--names",
        help="comma-separated names of the evaluation outputs, in order (default: their folder names, made "
        "unique; a partitioned output's partitions are NAME/key=value)",
    )
    report.add_argument("--title", help="heading of the report (default: NDCG report, or the --measure's)")
    report.add_argument(
        "--measure",
        default=PRIMARY_MEASURE,
        choices=MEASURE_NAMES,
        help="the per-query column shown in place of NDCG (default ndcg), e.g. recip_rank",
    )
    report.add_argument(
        "--allow-different-conventions",
        action="store_true",
        help="report outputs evaluated with different conventions (gain, discount, ties, ...); refused without it",
    )
    add_help_texts(report, "OUTPUT [OUTPUT ...] --html FILE [flags]", EXAMPLES["report"], EXIT_CODES)
