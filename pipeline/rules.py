"""The rules of validation, one set for every engine: plain Python over small statistics.

An engine measures each input (``pipeline/validate.py`` with Polars expressions,
``pipeline/engines/spark.py`` with Spark jobs) into a few numbers (:class:`InputStats`), the
types of its columns (:class:`ColumnType`) and, for the warnings, a count and the first ids
of each suspicious set (:class:`Tally`). The functions here decide from those alone what is
an error (:class:`~pipeline.errors.InvalidInput`, exit 3) and what is a warning, in the same
order and the same words on every engine. Only when a rule fails do they ask the engine for
an example (:class:`Probe`): the first offending row, or the first duplicated pair.

Errors, in the order they are checked: column types (ids must be strings or integers, scores
and labels numbers), then for the run and then the qrels: no rows, lines that do not parse,
nulls, NaN or infinite values; then fractional labels (unless allowed), documents listed
twice in the run (under ``duplicates = "error"``) and in the qrels.
(A label beyond a bound of the evaluation, :func:`label_bounds`, is refused after the fractional
ones: a gain that overflows a double, and under ERR a grade above its g_max.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Literal, Protocol

from pipeline.errors import InvalidInput
from pipeline.io.format import text_value
from pipeline.io.names import DOC, FILE, LABEL, LINE, LINE_NUMBER, PROVENANCE, QUERY, SCORE
from pipeline.io.read import Columns
from pipeline.registry import CONVENTION, MAX_ERR_GRADE, MAX_GAIN, Evaluation, InputChecks, number_text

ID_TYPES = "string or integer"
# How many ids a warning lists; the count is always complete.
WARNING_EXAMPLES = 5
# The warnings' codes, in the order they are reported.
WARNING_ORDER = (
    "queries_only_in_run",
    "queries_only_in_qrels",
    "queries_without_relevant",
    "negative_labels",
    "results_over_limit",
    "results_not_retrieved",
)
# Columns an engine adds for itself; an example row shows only the user's columns.
# ("arrival" is the Polars and DuckDB engines' input position, which Spark rows do not have.)
# ours, not the user's: the input order, and the weights as read (--doc-weight-col's column stays shown)
HIDDEN_COLUMNS = (*PROVENANCE, "arrival", "doc_weight")

Role = Literal["run", "qrels"]
# a double holds every integer up to 2^53 and every decimal of up to 15 significant digits
# exactly and apart; past both two scores may become one (``inexact``: an integer beyond 2^53
# with more than 15 significant digits, a decimal with more than 15), in every engine alike
EXACT_INTEGER = 2**53
EXACT_DIGITS = 15
TypeKind = Literal["string", "categorical", "integer", "float", "decimal", "other"]
# the labels beyond a bound of the evaluation (:func:`label_bounds`), each refused in its own words
LabelRule = Literal["over_gain", "over_err_grade"]
ConditionKind = Literal[
    "null", "value", "not_finite", "inexact", "fractional", "over_gain", "over_err_grade", "text", "unparsed"
]
# the measure whose g_max bounds the labels (:func:`label_bounds`)
ERR = "err"


def _empty_ideal_effect(evaluation: Evaluation) -> str:
    """What happens to a query whose IDCG is 0, as the registry says it (e.g. "score 0")."""
    return CONVENTION["empty_ideal"].choice(evaluation.empty_ideal).effect


@dataclass(frozen=True)
class ValidationWarning:
    """Something legal but suspicious in the inputs: what, how often, and the first few ids.

    ``code`` is stable (for manifests and scripts); ``message`` is for people, with what it
    means and the flag that changes it; ``brief`` the same in a few words, for the one line a
    warning takes on a terminal (:meth:`line`).
    """

    code: str
    message: str
    count: int
    examples: tuple[str, ...] = ()
    brief: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            key: list(value) if key == "examples" else value for key, value in asdict(self).items() if key != "brief"
        }

    def line(self) -> str:
        """The warning in one short line, its count last: ``queries only in q.parquet, skipped: 3``."""
        return f"{self.brief}: {self.count}" if self.brief else str(self)

    def __str__(self) -> str:
        shown = ", ".join(map(text_value, self.examples))
        more = ", ..." if self.count > len(self.examples) else ""
        return f"{self.message}: {self.count} ({shown}{more})" if shown else f"{self.message}: {self.count}"


def shared_warnings(found: Iterable[tuple[str, ValidationWarning]]) -> list[tuple[str, ValidationWarning]]:
    """The warnings of several systems scored together, each once with the names of every
    system that has it (``run, run_b``): the qrels' warnings, the same for each run, are one.

    >>> w = ValidationWarning("negative_labels", "judgments with a negative label", 2)
    >>> shared_warnings([("a", w), ("b", w)])
    [('a, b', ValidationWarning(code='negative_labels', message='judgments with a negative label', count=2, \
examples=(), brief=''))]
    """
    names: dict[ValidationWarning, list[str]] = {}
    for name, warning in found:
        names.setdefault(warning, []).append(name)
    return [(", ".join(dict.fromkeys(systems)), warning) for warning, systems in names.items()]


@dataclass(frozen=True)
class Policy:
    """What the user asked of validation: the flags and the evaluation's duplicate policy.

    ``run_duplicates`` is the evaluation's duplicate policy: repeated (query, doc) rows in the
    run are refused only under ``"error"``; in the qrels they always are. The evaluation's gain also decides
    which labels gain too much and which queries have no positive gain. ``require_rows=False``
    accepts an empty input (one bucket of a larger input may hold no rows)."""

    columns: Columns = field(default_factory=Columns)
    checks: InputChecks = field(default_factory=InputChecks)
    run_duplicates: str = "error"
    evaluation: Evaluation = field(default_factory=Evaluation)
    require_rows: bool = True


@dataclass(frozen=True)
class ColumnType:
    """A column's type as messages show it (Polars' name, whatever the engine), its kind, and
    a decimal's scale."""

    shown: str
    kind: TypeKind
    scale: int | None = None


@dataclass(frozen=True)
class Condition:
    """Which rows an example is wanted of: ``column`` is null, not null (``value``), not finite
    (NaN, ±inf), a fractional number, a label beyond a bound of the evaluation (``over_gain``,
    ``over_err_grade``: :func:`label_bounds`), text that is not a number; or (``unparsed``) a
    line of a text file that did not parse."""

    kind: ConditionKind
    column: str | None = None


class Probe(Protocol):
    """The lookups an engine answers when a rule fails (never otherwise)."""

    def first_row(self, condition: Condition) -> dict[str, object] | None:
        """The first row where ``condition`` holds, all its columns, or None."""

    def first_duplicate(self) -> tuple[object, ...] | None:
        """The smallest (query_id, doc_id) listed more than once, and how many times, then for
        judgments per subtopic the subtopic (the key is then (query_id, subtopic, doc_id)); None
        when there is none (the statistics' repeat count may have been a hash collision)."""


@dataclass(frozen=True)
class OverBound:
    """How many labels are beyond a :class:`LabelBound`, and the largest of them."""

    count: int
    largest: float | None = None


@dataclass(frozen=True)
class InputStats:
    """One input measured by an engine. ``repeats`` > 0 when some (query_id, doc_id) may be
    listed twice (0 proves none is); ``fractional`` is counted only when
    :func:`counts_fractional` asks for it, ``over_bound`` (the labels beyond each of
    :func:`label_bounds`, by rule) only for the qrels; ``negative`` values (for the qrels, the
    ``negative_labels`` warning) may be left 0 by an engine that tallies them with the other
    warnings."""

    rows: int
    nulls: Mapping[str, int]
    not_finite: int
    # scores a double cannot hold exactly (:data:`EXACT_INTEGER`, :data:`EXACT_DIGITS`)
    inexact: int = 0
    fractional: int = 0
    over_bound: Mapping[LabelRule, OverBound] = field(default_factory=dict)
    unparsed: int = 0
    repeats: int = 0
    negative: int = 0
    # nulls in the run's ``rank`` column, counted only when ties follow it (input-order)
    null_ranks: int = 0


@dataclass(frozen=True)
class Measured:
    """One input as the rules see it: its name in messages, its role, its columns' types,
    and the engine's lookups for examples."""

    name: str
    role: Role
    types: Mapping[str, ColumnType]
    probe: Probe

    @property
    def value_column(self) -> str:
        return SCORE if self.role == "run" else LABEL


@dataclass(frozen=True)
class Tally:
    """How many ids a warning concerns, and the first few (sorted as text)."""

    count: int
    examples: tuple[str, ...] = ()


# --- errors ---------------------------------------------------------------------------------

# The words of each error, one template per rule, rendered here with Python's values and by
# pipeline/sql_refusals.py with SQL expressions (the SQL a user runs in their own DuckDB session
# refuses in the same words). ``{fix}`` and its kin name the way to change an option on the path
# the user took: a flag here, a macro parameter or a variable in SQL (:data:`FIXES`).
MESSAGES: dict[str, str] = {
    "id_type": "{name}: column {column} has type {type}; ids must be " + ID_TYPES,
    "value_type": "{name}: column {column} has type {type}; expected numbers",
    "numbers_as_text": "{name}: column {column} holds numbers stored as text (type {type}); expected numbers",
    # a column with no value is typed text (an empty CSV field, a Parquet column written of nulls alone)
    "no_values": "{name}: column {column} is null in every row (type {type}); expected numbers",
    "text_values": "{name}: column {column} holds text such as {value} (type {type}); expected numbers; first at {row}",
    "empty": "{name}: no rows to evaluate (the input is empty)",
    "nulls": "{name}: column {column} has {count} null value(s); first at {row}",
    "not_finite": "{name}: column {column} has {count} NaN or infinite value(s), such as {value}; first at {row}",
    "inexact": (
        "{name}: column {column} has {count} score(s) a double cannot hold exactly (integers beyond 2^53, decimals "
        "beyond 15 significant digits), such as {value}; first at {row}. Every engine compares scores as doubles, "
        "as trec_eval reads them, so scores that differ only there would tie: shift or scale them into that range "
        "(subtract a base, divide)"
    ),
    "fractional": (
        "{name}: column {column} has {count} label(s) with a fractional part, such as {value}; first at {row}. "
        "Labels must be integers; pass {allow_fractional} to accept them"
    ),
    "over_gain": (
        "{name}: column {column} has {count} label(s) whose gain under {gain_option} {gain} ({formula}) exceeds "
        "the largest gain {max_gain}, such as {value}; first at {row}. Sums of such gains overflow a double (an "
        "infinite IDCG, a NaN NDCG); labels up to {largest_label} are accepted under this gain: map larger levels "
        "to smaller gains (e.g. {smaller_gains}) or use {linear_gain}"
    ),
    "over_err_grade": (
        "{name}: column {column} has {count} label(s) above ERR's largest grade g_max = {max_grade}, such as "
        "{value}; first at {row}. ERR stops a reader at a label g with the chance (2^g - 1) / 2^g_max, which "
        "passes 1 above g_max (gdeval refuses such a label); the largest label is {largest}: {raise_grade} with G "
        "at least that (up to {max_err_grade}), or leave ERR out of {measures}"
    ),
    "duplicate": (
        "{name}: document {doc} is listed {count} times for query {query}; each (query_id, doc_id) may appear "
        "once in the {role}{keep_one}"
    ),
    "duplicate_judgment": (
        "{name}: document {doc} is judged {count} times for query {query} under subtopic {subtopic}; each "
        "(query_id, subtopic, doc_id) may appear once in the qrels"
    ),
}
# How each front spells the fixes the messages name: the command line (with the API's keyword),
# the table macros' parameters, and the variables of sql/ndcg.sql.
Front = Literal["cli", "macro", "script"]
FIXES: dict[Front, dict[str, str]] = {
    "cli": {
        "allow_fractional": "--allow-fractional-labels (allow_fractional_labels=True)",
        "gain_option": "--gain",
        "smaller_gains": "--gain 1024=1e6",
        "linear_gain": "--gain linear",
        "keep_one": " (or keep one row with --duplicates first or max-score)",
        "raise_grade": "pass --err-max-grade G",
        "measures": "--measures",
    },
    "macro": {
        "allow_fractional": "allow_fractional_labels := true",
        "gain_option": "gain",
        "smaller_gains": "gain_map := map {1024: 1e6}",
        "linear_gain": "gain := 'linear'",
        "keep_one": " (or keep one row with duplicates := 'max-score')",
        "raise_grade": "pass err_max_grade := G",
        "measures": "measures := [...]",
    },
    "script": {
        "allow_fractional": "SET VARIABLE allow_fractional_labels = true",
        "gain_option": "gain",
        "smaller_gains": "SET VARIABLE gain_map = MAP {1024: 1e6}",
        "linear_gain": "SET VARIABLE gain = 'linear'",
        "keep_one": " (or keep one row with SET VARIABLE duplicates = 'first' or 'max-score')",
        "raise_grade": "run SET VARIABLE err_max_grade = G",
        "measures": "SET VARIABLE measures",
    },
}


def message(rule: str, **values: object) -> str:
    """The words of ``rule`` with Python's values, the command line's fixes."""
    return MESSAGES[rule].format(**{**FIXES["cli"], **values})


def display_names(columns: Columns, role: str | None = None) -> dict[str, str]:
    """How messages name each canonical column of ``role``'s input (None: names shared by both):
    the user's name, and the flag that renamed it when they differ."""
    names = columns.of(role) if role else columns
    given = {QUERY: names.query, DOC: names.doc, SCORE: names.score, LABEL: names.label}
    return {
        canonical: repr(name) if name == canonical else f"{name!r} ({columns.flag(canonical, role)})"
        for canonical, name in given.items()
    }


def check_types(measured: Measured, policy: Policy) -> None:
    """Ids must be strings or integers; scores and labels numbers (text is shown by value)."""
    names = display_names(policy.columns, measured.role)
    for column in (QUERY, DOC):
        found = measured.types[column]
        if found.kind not in ("string", "categorical", "integer"):
            raise InvalidInput(message("id_type", name=measured.name, column=names[column], type=found.shown))
    column = measured.value_column
    found = measured.types[column]
    if found.kind in ("integer", "float", "decimal"):
        return
    given = {"name": measured.name, "column": names[column], "type": found.shown}
    if found.kind != "string":
        raise InvalidInput(message("value_type", **given))
    row = measured.probe.first_row(Condition("text", column))
    if row is None:
        if measured.probe.first_row(Condition("value", column)) is None and measured.probe.first_row(
            Condition("null", column)
        ):
            raise InvalidInput(message("no_values", **given))
        raise InvalidInput(message("numbers_as_text", **given))
    shown = describe_row(row, policy.columns.of(measured.role))
    raise InvalidInput(message("text_values", **given, value=repr(row[column]), row=shown))


def counts_fractional(label_type: ColumnType, policy: Policy) -> bool:
    """Whether the engine must count fractional labels: not allowed, and a type that can hold
    one (floats, decimals of a scale above 0). Engines test decimals in their own arithmetic:
    a cast to a double would round ``12345678901234567.5`` to an integer."""
    if policy.checks.allow_fractional_labels:
        return False
    return label_type.kind == "float" or (label_type.kind == "decimal" and bool(label_type.scale))


@dataclass(frozen=True)
class LabelBound:
    """Labels an engine counts as ``rule``: finite, above ``largest_label``, and not one of
    ``exempt``. Negative labels are never beyond (they gain 0, and stop no reader of ERR)."""

    rule: LabelRule
    largest_label: float
    exempt: tuple[float, ...] = ()


def label_bounds(evaluation: Evaluation) -> tuple[LabelBound, ...]:
    """The bounds the evaluation puts on labels, in the order they are checked: the gain's (a
    label whose gain exceeds :data:`~pipeline.registry.MAX_GAIN` overflows the sums; the levels a
    gain map names are exempt, its values bounded when parsed), and, only when ERR is asked, its
    g_max (``err_max_grade``: a label above it would stop a reader with a chance above 1; gdeval
    refuses it). ERR reads labels, not gains: a gain map exempts none from its bound.

    >>> [bound.rule for bound in label_bounds(Evaluation())]
    ['over_gain']
    >>> label_bounds(Evaluation(measures=("ERR@10",), err_max_grade=3))[-1]
    LabelBound(rule='over_err_grade', largest_label=3.0, exempt=())
    """
    gain = evaluation.gain
    bounds = [LabelBound("over_gain", gain.largest_label, tuple(level for level, _ in gain.levels))]
    if ERR in evaluation.columns:
        bounds.append(LabelBound("over_err_grade", float(evaluation.err_max_grade)))
    return tuple(bounds)


def _bound_words(bound: LabelBound, over: OverBound, evaluation: Evaluation) -> dict[str, object]:
    """The fields of a bound's message beside those every rule's has."""
    if bound.rule == "over_gain":
        gain = evaluation.gain
        return {
            "gain": gain,
            "formula": gain.formula(),
            "max_gain": f"{MAX_GAIN:g}",
            "largest_label": f"{gain.largest_label:g}",
        }
    largest = over.largest if over.largest is not None else float("nan")
    return {"max_grade": evaluation.err_max_grade, "largest": number_text(largest), "max_err_grade": MAX_ERR_GRADE}


def check_stats(run: Measured, run_stats: InputStats, qrels: Measured, qrels_stats: InputStats, policy: Policy) -> None:
    """Raise :class:`InvalidInput` for the first rule the statistics break."""
    for measured, stats in ((run, run_stats), (qrels, qrels_stats)):
        name, value_column = measured.name, measured.value_column
        names, columns = display_names(policy.columns, measured.role), policy.columns.of(measured.role)
        if policy.require_rows and stats.rows == 0:
            raise InvalidInput(message("empty", name=name))
        if stats.unparsed:
            _raise_unparsed(measured, stats.unparsed)
        for column in (QUERY, DOC, value_column):
            if stats.nulls[column]:
                example = _example(measured, Condition("null", column), columns)
                raise InvalidInput(
                    message("nulls", name=name, column=names[column], count=stats.nulls[column], row=example)
                )
        if stats.null_ranks:
            # sorting a missing rank last would invent a position the input never gave
            raise InvalidInput(
                f"{name}: column 'rank' has {stats.null_ranks} null value(s), which input-order ties cannot place; "
                f"first at {_example(measured, Condition('null', 'rank'), columns)}"
            )
        for rule, count in (("not_finite", stats.not_finite), ("inexact", stats.inexact)):
            if count:
                row = _first(measured, Condition(rule, value_column))  # type: ignore[arg-type]
                raise InvalidInput(
                    message(
                        rule,
                        name=name,
                        column=names[value_column],
                        count=count,
                        value=row[value_column],
                        row=describe_row(row, columns),
                    )
                )
    names, columns = display_names(policy.columns, "qrels"), policy.columns.of("qrels")
    if qrels_stats.fractional:
        row = _first(qrels, Condition("fractional", LABEL))
        raise InvalidInput(
            message(
                "fractional",
                name=qrels.name,
                column=names[LABEL],
                count=qrels_stats.fractional,
                value=row[LABEL],
                row=describe_row(row, columns),
            )
        )
    for bound in label_bounds(policy.evaluation):
        over = qrels_stats.over_bound.get(bound.rule)
        if over is None or not over.count:
            continue
        row = _first(qrels, Condition(bound.rule, LABEL))
        raise InvalidInput(
            message(
                bound.rule,
                name=qrels.name,
                column=names[LABEL],
                count=over.count,
                value=row[LABEL],
                row=describe_row(row, columns),
                **_bound_words(bound, over, policy.evaluation),
            )
        )
    if policy.run_duplicates == "error":
        check_duplicates(run, run_stats.repeats)
    check_duplicates(qrels, qrels_stats.repeats)


def check_duplicates(measured: Measured, repeats: int) -> None:
    """Refuse an input that lists one document twice for a query (``repeats`` > 0 only says
    that it may; the probe's exact lookup decides)."""
    if not repeats:
        return
    duplicate = measured.probe.first_duplicate()
    if duplicate is None:
        return
    query, doc, count, *judged_under = duplicate
    given = {"name": measured.name, "doc": repr(doc), "count": count, "query": repr(query), "role": measured.role}
    if judged_under and judged_under[0] is not None:
        # a subtopic is text on every engine (an integer column's 1 is "1", as in a TREC file)
        raise InvalidInput(message("duplicate_judgment", **given, subtopic=repr(str(judged_under[0]))))
    raise InvalidInput(message("duplicate", **given, **({} if measured.role == "run" else {"keep_one": ""})))


def describe_row(row: Mapping[str, object], columns: Columns | None = None) -> str:
    """An example row: its file line when it came from a text file, else its columns, named
    as the user's file names them (``columns``: the renaming flags' names)."""
    if LINE_NUMBER in row:
        return f"{row[FILE]}:{row[LINE_NUMBER]}: {row[LINE]!r}"
    given = columns or Columns()
    names = {QUERY: given.query, DOC: given.doc, SCORE: given.score, LABEL: given.label}
    shown = {names.get(column, column): value for column, value in row.items() if column not in HIDDEN_COLUMNS}
    return f"row {shown}"


def _first(measured: Measured, condition: Condition) -> Mapping[str, object]:
    row = measured.probe.first_row(condition)
    if row is None:  # the statistics counted such a row; reading again found none
        raise InvalidInput(f"{measured.name}: changed while it was being read ({condition.kind} values came and went)")
    return row


def _example(measured: Measured, condition: Condition, columns: Columns) -> str:
    return describe_row(_first(measured, condition), columns)


def _raise_unparsed(measured: Measured, count: int) -> None:
    row = _first(measured, Condition("unparsed"))
    expected = "qid Q0 docno rank score tag" if measured.role == "run" else "qid iter docno rel"
    raise InvalidInput(
        f"{row[FILE]}:{row[LINE_NUMBER]}: cannot read line {row[LINE]!r} "
        f"as '{expected}' ({count} such line(s) in {measured.name})"
    )


# --- warnings -------------------------------------------------------------------------------


def warnings(
    tallies: Mapping[str, Tally], *, run_name: str, qrels_name: str, policy: Policy
) -> tuple[ValidationWarning, ...]:
    """The warnings of the tallies an engine counted (codes of :data:`WARNING_ORDER`; a
    missing or empty tally is no warning), in that order. ``queries_without_relevant`` counts
    the queries of the qrels without a judgment that gains more than 0 under the evaluation
    (its gain map, kind and relevance threshold)."""
    evaluation = policy.evaluation
    messages = {
        "queries_only_in_run": (
            f"queries only in the run {run_name}, not evaluated"
            if evaluation.queries_without_judgments == "skip"
            else f"queries only in the run {run_name}, evaluated with every document unjudged "
            f"(--queries-without-judgments evaluate); their IDCG is 0, so they {_empty_ideal_effect(evaluation)}"
        ),
        "queries_only_in_qrels": f"queries only in the qrels {qrels_name}, skipped (or scored 0 with --all-queries)",
        "queries_without_relevant": (
            f"queries without any relevant document (no judged document gains more than 0 under gain "
            f"{evaluation.gain}) in {qrels_name}; their IDCG is 0, so they {_empty_ideal_effect(evaluation)}"
        ),
        "negative_labels": f"judgments with a negative label in {qrels_name}, counted as unjudged",
        "results_over_limit": (
            f"queries with more than {policy.checks.warn_results_over} results in {run_name} "
            "(--max-results keeps the best N; --warn-results-over changes this limit)"
        ),
        "results_not_retrieved": (
            f"queries with results scored 0 or below in {run_name}, left out of their rankings as not retrieved "
            "(--retrieved-scores positive; --retrieved-scores all ranks them)"
        ),
    }
    briefs = {
        "queries_only_in_run": (
            f"queries only in {run_name}, not evaluated"
            if evaluation.queries_without_judgments == "skip"
            else f"queries only in {run_name}, evaluated with every document unjudged"
        ),
        "queries_only_in_qrels": f"queries only in {qrels_name}, skipped",
        "queries_without_relevant": f"queries without a relevant judgment in {qrels_name} (they "
        f"{_empty_ideal_effect(evaluation)})",
        "negative_labels": f"negative labels in {qrels_name}, counted as unjudged",
        "results_over_limit": f"queries with more than {policy.checks.warn_results_over} results in {run_name}",
        "results_not_retrieved": f"queries with results scored 0 or below in {run_name}, not retrieved",
    }
    found = []
    for code in WARNING_ORDER:
        tally = tallies.get(code)
        if tally is None or not tally.count:
            continue
        if code == "results_over_limit" and policy.checks.warn_results_over is None:
            continue
        examples = tuple(sorted(tally.examples)[:WARNING_EXAMPLES])
        found.append(ValidationWarning(code, messages[code], tally.count, examples, briefs[code]))
    return tuple(found)
