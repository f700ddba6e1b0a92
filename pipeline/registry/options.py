"""The input, validation, execution and job options: how an evaluation reads and checks its inputs
and how it runs, declared once as the conventions are.

The flags of ``ndcg evaluate`` and ``ndcg validate`` (pipeline/cli_flags.py), their config keys
(pipeline/config.py reads them off the parser), the keywords of the API's functions
(pipeline/api.py) and the fields of the job (pipeline/job.py) are generated from :data:`OPTIONS`.
They decide what is read, what is refused or warned about and how the engines run; what a number
is, is the conventions'.
"""

from __future__ import annotations

import math
import numbers
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pipeline.registry.base import SpecError


@dataclass(frozen=True)
class OptionGroup:
    """Options taken together: the title of their flags in ``--help``, the commands that take
    them as flags (and config keys), the API functions that take them as keywords."""

    name: str
    commands: tuple[str, ...]
    functions: tuple[str, ...]


OPTION_GROUPS: dict[str, OptionGroup] = {
    group.name: group
    for group in (
        OptionGroup("inputs", ("evaluate", "validate"), ("per_query", "check", "evaluate")),
        OptionGroup("validation", ("evaluate", "validate", "compare"), ("per_query", "check", "evaluate")),
        OptionGroup("execution", ("evaluate",), ("evaluate",)),
        OptionGroup("query weights", ("evaluate", "validate"), ("check", "evaluate")),
        OptionGroup("batch job", ("evaluate",), ()),
    )
}


@dataclass(frozen=True)
class Option:
    """One option of how inputs are read and checked and how the job runs: its flag ``--name``
    (dashes), config key (the same) and API keyword ``name`` (underscores), all meaning the same.

    ``group`` names its :class:`OptionGroup`. ``field`` is where a job holds it: a field of
    :class:`pipeline.job.Job`, or ``holder.part`` for a part of one (``execution.threads``,
    ``checks.warn_results_over``, ``columns.query``). ``default`` is the value when it is not
    given, by any front; ``parse`` reads a flag's or config key's text (None: the text itself),
    ``choices`` are its only values, ``switch`` makes it a flag without a value. ``examples``
    are values of an option without choices, each as a flag's text and as the API's value: the
    reference shows the first, and the tests try each through every front.
    """

    name: str
    group: str
    field: str
    help: str
    default: Any = None
    parse: Callable[[str], Any] | None = None
    choices: tuple[str, ...] = ()
    switch: bool = False
    metavar: str | None = None
    examples: tuple[tuple[str, Any], ...] = ()

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def holder(self) -> str:
        """The job's field holding this option (``execution`` for ``execution.threads``)."""
        return self.field.split(".")[0]


def max_threads() -> int:
    """More worker threads than 4 per CPU only adds switching, and a number far beyond it makes
    DuckDB try to start them all (a hang, or a failed allocation): the bound of ``--threads``."""
    import os

    return 4 * (os.cpu_count() or 1)


def thread_count(text: str) -> int:
    """``--threads``' text: a positive integer, at most :func:`max_threads`."""
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"expected a positive integer, got {text!r}")
    if int(text) > max_threads():
        raise SpecError(
            f"at most {max_threads()} threads (4 x the {max_threads() // 4} CPUs of this machine), got {text}"
        )
    return int(text)


def results_limit(text: str) -> int | None:
    """``--warn-results-over``' text: a whole number >= 0, where 0 turns the warning off (None)."""
    if not text.strip().isdigit():
        raise SpecError(f"expected a whole number >= 0, got {text!r}")
    return int(text) or None


# The words of query_weight's refusals (sql/ndcg.sql's missing_query_weight rules are built from them)
WEIGHT_NOT_FINITE = "expected a finite number >= 0"
# a subnormal number keeps few digits: the weighted means would lose theirs
WEIGHT_SUBNORMAL = f"expected 0 or a finite number from {sys.float_info.min} up (a subnormal weight keeps few digits)"


def query_weight(text: str) -> float:
    """``--missing-query-weight``' text: 0 or a finite number >= 0 that is not subnormal (a
    weight the queries may take)."""
    try:
        value = float(text)
    except ValueError:
        raise SpecError(f"expected a number >= 0, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise SpecError(f"{WEIGHT_NOT_FINITE}, got {text!r}")
    if 0 < value < sys.float_info.min:
        raise SpecError(f"{WEIGHT_SUBNORMAL}, got {text!r}")
    return value


thread_count.__name__ = results_limit.__name__ = "int"  # argparse names a ValueError's type by it
query_weight.__name__ = "float"

# the formats an input may be read as (pipeline/io/read.py reads them)
INPUT_FORMATS: tuple[str, ...] = ("parquet", "trec", "csv", "tsv", "delta")
_FORMAT_HELP = "default: from the extension (a Delta table: its log)"


def _one_input(column: str, role: str, shared_flag: str) -> str:
    return f"{column} column of the {role} only, over {shared_flag} (which names it in both inputs)"


OPTIONS: tuple[Option, ...] = (
    Option("run_format", "inputs", "run_format", _FORMAT_HELP, choices=INPUT_FORMATS),
    Option("qrels_format", "inputs", "qrels_format", _FORMAT_HELP, choices=INPUT_FORMATS),
    Option(
        "query_col",
        "inputs",
        "columns.query",
        "query id column (default: query_id)",
        "query_id",
        examples=(("qid", "qid"),),
    ),
    Option(
        "doc_col",
        "inputs",
        "columns.doc",
        "document id column (default: doc_id)",
        "doc_id",
        examples=(("docno", "docno"),),
    ),
    Option(
        "score_col",
        "inputs",
        "columns.score",
        "score column of the run (default: score)",
        "score",
        examples=(("sim", "sim"),),
    ),
    Option(
        "label_col",
        "inputs",
        "columns.label",
        "label column (default: relevance)",
        "relevance",
        examples=(("rel", "rel"),),
    ),
    # the same names in one input only, over the flags above (which name them in both)
    Option(
        "run_query_col",
        "inputs",
        "columns.run_query",
        _one_input("query id", "run", "--query-col"),
        examples=(("qid", "qid"),),
    ),
    Option(
        "run_doc_col",
        "inputs",
        "columns.run_doc",
        _one_input("document id", "run", "--doc-col"),
        examples=(("docno", "docno"),),
    ),
    Option(
        "qrels_query_col",
        "inputs",
        "columns.qrels_query",
        _one_input("query id", "judgments", "--query-col"),
        examples=(("topic", "topic"),),
    ),
    Option(
        "qrels_doc_col",
        "inputs",
        "columns.qrels_doc",
        _one_input("document id", "judgments", "--doc-col"),
        examples=(("docid", "docid"),),
    ),
    Option(
        "qrels_label_col",
        "inputs",
        "columns.qrels_label",
        _one_input("label", "judgments", "--label-col"),
        examples=(("judgment", "judgment"),),
    ),
    Option(
        "run_version",
        "inputs",
        "run_version",
        "a Delta table's version to read as the run: a number, or an ISO time such as 2026-11-21T00:00:00Z "
        "(the last version committed by then); default: its current version",
        metavar="N|TIME",
        examples=(("3", "3"), ("2026-11-21T00:00:00Z", "2026-11-21T00:00:00Z")),
    ),
    Option(
        "qrels_version",
        "inputs",
        "qrels_version",
        "the same for a Delta table of judgments",
        metavar="N|TIME",
        examples=(("0", "0"),),
    ),
    Option(
        "allow_fractional_labels",
        "validation",
        "checks.allow_fractional_labels",
        "accept labels such as 0.5 (default: labels must be integers, a fractional label is an error)",
        False,
        switch=True,
    ),
    Option(
        "warn_results_over",
        "validation",
        "checks.warn_results_over",
        "warn about queries with more than N results in the run (default 1000; 0 turns the warning off)",
        1000,
        parse=results_limit,
        metavar="N",
        examples=(("20", 20), ("0", None)),  # 0 turns the warning off
    ),
    Option(
        "threads",
        "execution",
        "execution.threads",
        "worker threads (DuckDB engine), at most 4 x the machine's CPUs",
        parse=thread_count,
        examples=(("2", 2),),
    ),
    Option(
        "memory_limit",
        "execution",
        "execution.memory_limit",
        "memory limit, e.g. 4GB: a larger run is split into buckets of queries that fit (written to TMPDIR "
        "first) and evaluated one bucket at a time (both engines); also DuckDB's memory_limit",
        examples=(("4GB", "4GB"),),
    ),
    Option(
        "spark_master",
        "execution",
        "execution.spark_master",
        "Spark master URL (spark engine); default: the session of spark-submit, else local[*]",
        examples=(("local[1]", "local[1]"),),
    ),
    Option(
        "query_weights",
        "query weights",
        "weights.path",
        "Parquet/CSV table of one weight per query, each mean of the summary then weighted; its columns named by "
        "--query-col and --weight-col, each mean, overall and per group, is sum(w*x)/sum(w) over the evaluated "
        "queries (docs/conventions.md#query-weights); default: every query weighs the same",
        metavar="PATH",
        examples=(("weights.parquet", "weights.parquet"),),
    ),
    Option(
        "weight_col",
        "query weights",
        "weights.column",
        "weight column of --query-weights (default: weight)",
        "weight",
        examples=(("w", "w"),),
    ),
    Option(
        "missing_query_weight",
        "query weights",
        "weights.missing",
        "the weight of an evaluated query without a row in --query-weights (default: none, such a query is an "
        "error, exit 3)",
        parse=query_weight,
        metavar="W",
        examples=(("1", 1.0), ("0", 0.0)),
    ),
    Option(
        "missing_qrels_partition",
        "batch job",
        "missing_qrels_partition",
        "a run partition whose folder is missing from judgments partitioned like the run: error "
        "(default, exit 3) or score it against all the judgments (whole)",
        "error",
        choices=("error", "whole"),
    ),
    Option(
        "skip_unchanged",
        "batch job",
        "skip_unchanged",
        "leave a partition's outputs in --out (local) alone when its manifest.json records the same inputs "
        "(files: size, modification and change times; objects: size, ETag, version id; Delta: version), "
        "options and version; recompute the others",
        False,
        switch=True,
    ),
)
OPTION: dict[str, Option] = {option.name: option for option in OPTIONS}


@dataclass(frozen=True)
class InputChecks:
    """How strictly the inputs are checked: the ``validation`` options of :data:`OPTIONS`, by their
    names, carried whole from the fronts to every engine's validators (the fields a job's
    ``checks`` holds; tests/test_options.py checks they are the group's options)."""

    allow_fractional_labels: bool = OPTION["allow_fractional_labels"].default
    warn_results_over: int | None = OPTION["warn_results_over"].default


@dataclass(frozen=True)
class QueryWeights:
    """One weight per query in the summary's means: the ``query weights`` options of
    :data:`OPTIONS` (the fields a job's ``weights`` holds). ``path`` None: every query weighs the
    same, as without weights; ``missing`` None: an evaluated query without a weight is an error."""

    path: str | None = OPTION["query_weights"].default
    column: str = OPTION["weight_col"].default
    missing: float | None = OPTION["missing_query_weight"].default

    def __post_init__(self) -> None:
        if self.path is not None:  # a pathlib.Path given to the API: recorded as its text
            object.__setattr__(self, "path", os.fspath(self.path))
        missing = self.missing
        if missing is not None:
            # as --missing-query-weight reads it (query_weight), given as a number to the API
            # any real number (NumPy's np.int64(2) too); an integer beyond Float64 is not finite
            if isinstance(missing, bool) or not isinstance(missing, numbers.Real):
                raise SpecError(f"missing_query_weight: expected a number >= 0, got {missing!r}")
            try:
                value = float(missing)
            except OverflowError:
                shown = format(Decimal(int(missing)), ".3g")  # float() cannot show it: it is too large for one
                raise SpecError(f"missing_query_weight: {WEIGHT_NOT_FINITE}, got {shown!r}") from None
            try:
                object.__setattr__(self, "missing", query_weight(repr(value)))
            except SpecError as error:
                raise SpecError(f"missing_query_weight: {error}") from None

    def describe(self) -> dict[str, Any] | None:
        """As the manifest, the JSON output and the comparison's checks record it (None without)."""
        if self.path is None:
            return None
        return {"path": self.path, "weight_column": self.column, "missing_query_weight": self.missing}


def options_for(*, command: str | None = None, function: str | None = None) -> tuple[Option, ...]:
    """The options a command takes as flags, or an API function as keywords."""
    return tuple(
        option
        for option in OPTIONS
        if (command is None or command in OPTION_GROUPS[option.group].commands)
        and (function is None or function in OPTION_GROUPS[option.group].functions)
    )


def option_fields(given: dict[str, Any], holders: dict[str, Callable[..., Any]]) -> dict[str, Any]:
    """The options in ``given`` (by name) as the fields that hold them: ``{"run_format": ...,
    "execution": holders["execution"](threads=..., ...)}``; a holder is built from the parts
    given (the others keep its defaults), and only when one is.

    >>> option_fields({"threads": 2, "run_format": "csv"}, {"execution": dict})
    {'run_format': 'csv', 'execution': {'threads': 2}}
    """
    fields: dict[str, Any] = {}
    parts: dict[str, dict[str, Any]] = {}
    for option in OPTIONS:
        if option.name in given:
            holder, _, part = option.field.partition(".")
            if part:
                parts.setdefault(holder, {})[part] = given[option.name]
            else:
                fields[holder] = given[option.name]
    return {**fields, **{holder: holders[holder](**values) for holder, values in parts.items()}}
