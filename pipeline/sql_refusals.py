"""What the SQL a user runs in their own DuckDB session refuses, in the command line's words.

The command line and the API validate with Polars (:mod:`pipeline.validate`) and the registry;
the table macros (``sql/generated/macros.sql``) and ``sql/ndcg.sql`` run in a user's session,
without Python, so the same rules are written here as one SQL query, generated from the same
registry and the same message templates (:data:`pipeline.rules.MESSAGES`, ``make generate``):

- the session: a ``default_collation`` that would make two text ids one;
- the parameters: a convention's value, the measures, the cutoffs, ``max_results``, the log
  base, the relevance threshold, RBP's persistence, the gain map, as the registry refuses them;
- the inputs, in the order :func:`pipeline.rules.check_types` and
  :func:`pipeline.rules.check_stats` check them: the columns' types, then for the run and then
  the qrels no rows, nulls, NaN or infinite values; then fractional labels, the labels beyond
  a bound of the evaluation (:func:`pipeline.rules.label_bounds`: a gain that overflows, a grade
  above ERR's g_max when ERR is asked), and documents listed twice.

The query is one row, one column ``refused``: a ``case`` whose first broken rule raises its
message through ``error()`` (null when nothing is broken), read by the result's ``where``
(``(select count(refused) from refusals) = 0``) so that no number is given without it. It reads
the views (CTEs, in the macros) ``run_given`` and ``qrels_given`` of ``sql/inputs.sql`` and
``sql/macro_inputs.sql``, the inputs as given (their own types and ``arrival``).

Two fronts, two spellings of a fix (:data:`pipeline.rules.FIXES`): the macros name their parameters
and the macro called; ``sql/ndcg.sql`` its variables (one unset is the registry's default).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from pipeline import sql_text_refusals as text_refusals
from pipeline import sql_weight_refusals as weight_refusals
from pipeline.io.csv_text import CSV_INTEGER, CSV_TRUTH_VALUE
from pipeline.registry import CONVENTIONS, DEFAULTS, GAIN_KINDS, MAX_ERR_GRADE, MAX_GAIN, MEASURES, Gain
from pipeline.registry.options import WEIGHT_NOT_FINITE, WEIGHT_SUBNORMAL
from pipeline.rules import ERR, EXACT_DIGITS, EXACT_INTEGER, FIXES, ID_TYPES, MESSAGES, Front
from pipeline.sql_words import CSV_NUMBER_TEXT, ID_SQL_TYPES, NUMBER_SQL_TYPES, UNSIGNED_ID_SQL_TYPES, Sql
from pipeline.sql_words import shown_type as _shown_type
from pipeline.sql_words import sql_repr as _repr
from pipeline.sql_words import sql_text as _text
from pipeline.sql_words import variable as _variable

# The collations under which text compares byte by byte, as the steps need (empty: DuckDB's).
BINARY_COLLATIONS = ("", "binary", "c", "posix")
# The options a macro cannot honour: they read the order rows arrive in, which query_table hides.
ARRIVAL_OPTIONS: dict[str, str] = {"duplicates": "first", "ties": "input-order"}
# The measure families a macro or the script takes (``measures``).
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(measure.selected_by for measure in MEASURES))


def _words(rule: str, front: Front, **fields: str) -> Sql:
    """The message of ``rule`` as a SQL concatenation: the template's text, and ``fields``
    (SQL expressions, or text shown as it is) in its places."""
    values: dict[str, str] = {**FIXES[front], **fields}
    parts = re.split(r"\{(\w+)\}", MESSAGES[rule])
    pieces = []
    for index, part in enumerate(parts):
        value = part if index % 2 == 0 else values[part]
        if isinstance(value, Sql):  # never null: error(null) raises nothing, and the refusal would pass unsaid
            pieces.append(f"coalesce(cast(({value}) as varchar), 'None')")
        elif value:
            pieces.append(_text(value))
    return Sql(" || ".join(pieces))


def _number(value: str) -> Sql:
    """A number as Python's repr of a float shows it (``1.0``, ``1e+308``, ``nan``)."""
    return Sql(f"cast(cast({value} as double) as varchar)")


def _level(value: str) -> Sql:
    """A level as :func:`pipeline.registry.base.number_text` writes it: ``1``, not ``1.0``."""
    return Sql(
        f"case when {value} = floor({value}) and abs({value}) < 1e15 then cast(cast({value} as bigint) as varchar) "
        f"else cast(cast({value} as double) as varchar) end"
    )


def _label_text(value: str) -> Sql:
    """A label as :func:`pipeline.registry.base.number_text` writes it: ``7``, not ``7.0``; a
    float's repr beyond 2^53."""
    return Sql(
        f"case when {value} = floor({value}) and abs({value}) < {EXACT_INTEGER} "
        f"then cast(cast({value} as bigint) as varchar) else cast(cast({value} as double) as varchar) end"
    )


@dataclass(frozen=True)
class _Input:
    """One input as the rules read it: its role, view, value column, and how messages name it
    and its columns."""

    role: str
    view: str
    value: str
    name: Sql
    columns: dict[str, Sql]  # canonical column -> its name as the user's input has it
    # rows may come from text (the macros read TREC and CSV files): each keeps its file and line
    lines: bool = False

    def described(self, struct: str, stats: str = "measured") -> Sql:
        """``row {...}``, as :func:`pipeline.rules.describe_row` shows a row without a line (a CSV
        value of a column of integers as one, as the command line reads it); a TREC line as
        ``file:line: 'text'``, as it shows a row with one."""
        shown = {column: _repr(f"{struct}.{column}") for column in self.columns}
        if self.lines:
            integer = f"try_cast({struct}.ndcg_value_text as hugeint)"
            value = f"case when {stats}.not_integer_text = 0 and {integer} is not null then cast({integer} as varchar)"
            shown[self.value] = Sql(f"{value} else {shown[self.value]} end")
        fields = " || ', ' || ".join(f"{_repr(name)} || ': ' || ({shown[c]})" for c, name in self.columns.items())
        row = f"'row {{' || {fields} || '}}'"
        if not self.lines:
            return Sql(row)
        return Sql(
            f"case when {text_refusals.is_trec_row(struct)} then {text_refusals.line_place(struct)} else {row} end"
        )

    def row(self, condition: str) -> Sql:
        """The first row where ``condition`` holds, described (by :func:`_stats`, once for all)."""
        return Sql(f"{self.role}_stats.row_texts[{list(_conditions(self)).index(condition) + 1}]")

    def column(self, canonical: str) -> Sql:
        return Sql(f"{self.role}_stats.{canonical}_shown")


def _inputs(front: Front) -> tuple[_Input, _Input]:
    if front == "macro":
        names = {role: Sql(f"cast({_variable(role)} as varchar)") for role in ("run", "qrels")}

        def columns(role: str) -> dict[str, Sql]:
            value = "score" if role == "run" else "relevance"
            return {column: Sql(_text(column)) for column in ("query_id", "doc_id", value)}

    else:
        run_path, qrels_path = (f"cast({_variable(name)} as varchar)" for name in ("run_path", "qrels_path"))
        # each cast first: either variable may be a path and the other a list of them
        names = {"run": Sql(run_path), "qrels": Sql(f"coalesce({qrels_path}, {run_path})")}

        def columns(role: str) -> dict[str, Sql]:
            # as sql/inputs.sql picks them: an input's own name, else the shared one
            if role == "run":
                return {
                    "query_id": Sql(f"coalesce({_variable('run_query_col')}, {_variable('query_col')}, 'query_id')"),
                    "doc_id": Sql(f"coalesce({_variable('run_doc_col')}, {_variable('doc_col')}, 'doc_id')"),
                    "score": Sql(f"coalesce({_variable('score_col')}, 'score')"),
                }
            inline = f"{_variable('qrels_path')} is null"

            def own(name: str) -> str:
                return (
                    f"case when {inline} then {_variable(f'run_{name}_col')} else {_variable(f'qrels_{name}_col')} end"
                )

            label = f"case when not ({inline}) then {_variable('qrels_label_col')} end"
            return {
                "query_id": Sql(f"coalesce({own('query')}, {_variable('query_col')}, 'query_id')"),
                "doc_id": Sql(f"coalesce({own('doc')}, {_variable('doc_col')}, 'doc_id')"),
                "relevance": Sql(f"coalesce({label}, {_variable('label_col')}, 'relevance')"),
            }

    return (
        _Input("run", "run_given", "score", names["run"], columns("run"), lines=front == "macro"),
        _Input("qrels", "qrels_given", "relevance", names["qrels"], columns("qrels"), lines=front == "macro"),
    )


def _many_digits(value: str) -> str:
    digits = f"length(regexp_replace(replace(replace(cast({value} as varchar), '-', ''), '.', ''), '^0+|0+$', '', 'g'))"
    return f"{digits} > {EXACT_DIGITS}"


def _beyond_exact_integers(value: str) -> str:
    exact = f"cast({EXACT_INTEGER} as hugeint)"
    return (
        f"coalesce(try_cast({value} as hugeint) not between -{exact} and {exact}, "
        f"abs(try_cast({value} as double)) > {EXACT_INTEGER}.0)"
    )


# A CSV column whose every value is written as an integer is read by the command line as integers
# (its inference, pipeline.io.read), to which the inexact rule applies; the macros read text as
# doubles, so they apply it to such a column's texts. A column holding a value neither an integer
# nor a float there (+5, nan, 1_000) is text, refused as numbers stored as text where each value casts
_INTEGER_TEXT = _text(CSV_INTEGER)


def _inexact_text(view: str) -> str:
    text = f"{view}.ndcg_value_text"
    return f"regexp_full_match({text}, {_INTEGER_TEXT}) and {_beyond_exact_integers(text)} and {_many_digits(text)}"


def _inexact(score: str) -> str:
    """True on a score a double cannot hold exactly, by the test of
    :func:`pipeline.validate.inexact_score`: a 64-bit (or wider) integer beyond 2^53 with more
    than 15 significant digits, a decimal with more than 15."""
    many_digits, beyond = _many_digits(score), _beyond_exact_integers(score)
    return (
        f"case when typeof({score}) in ('BIGINT', 'UBIGINT', 'HUGEINT', 'UHUGEINT') then {beyond} and {many_digits} "
        f"when starts_with(typeof({score}), 'DECIMAL') then {many_digits} else false end"
    )


def _conditions(given: _Input) -> dict[str, str]:
    """Each rule's test of a row of the input, by name."""
    value = f"try_cast({given.view}.{given.value} as double)"
    conditions = {
        "null_query_id": f"{given.view}.query_id is null",
        "null_doc_id": f"{given.view}.doc_id is null",
        f"null_{given.value}": f"{given.view}.{given.value} is null",
        "not_finite": f"not isfinite({value})",
        "text": f"{given.view}.{given.value} is not null and {value} is null",
    }
    if given.role == "run":
        conditions["inexact"] = _inexact(f"{given.view}.{given.value}")
    if given.role == "qrels":
        allowed = _variable("allow_fractional_labels")
        conditions["fractional"] = f"not coalesce({allowed}, false) and isfinite({value}) and {value} <> floor({value})"
        conditions["over_gain"] = (
            f"isfinite({value}) and {value} > {_largest_label()} and not list_contains({_levels()}, {value})"
        )
        # ERR's bound holds only when ERR is asked (an unset measures variable asks for none)
        conditions["over_err_grade"] = (
            f"coalesce(list_contains({_variable('measures')}, {_text(ERR)}), false) "
            f"and isfinite({value}) and {value} > {_err_max_grade()}"
        )
    if given.lines:
        conditions.update(text_refusals.line_conditions(given.view, given.role))
    return conditions


def _stats(given: _Input, front: Front) -> str:
    """Row and rule counts in one pass, each rule's first row in a second only when a rule is
    broken (DuckDB makes an aggregate's arguments for every row, filter or not: 0.5 s at 2M rows),
    then each first row described and each column's name shown once for every rule's message
    (written out in each, they were most of the time DuckDB took to bind the query)."""
    view, conditions = given.view, _conditions(given)
    kept = [*given.columns, *((*text_refusals.LINE_COLUMNS, "ndcg_value_text") if given.lines else ())]
    row = f"struct_pack({', '.join(f'{view}.{column}' for column in kept)})"
    first = (  # the first row read: in arrival order, and a text file's by its lines
        f"struct_pack({view}.arrival, {view}.ndcg_file, {view}.ndcg_line_number)" if given.lines else f"{view}.arrival"
    )
    counted = [f"count(*) filter (where {condition}) as {name}" for name, condition in conditions.items()]
    examples = [f"arg_min({row}, {first}) filter (where {test}) as {name}_row" for name, test in conditions.items()]
    firsts = list(conditions)  # the counts of the rules whose first rows are taken
    if given.role == "qrels":  # the largest label beyond ERR's bound, which its message names
        value = f"try_cast({view}.{given.value} as double)"
        examples.append(f"max({value}) filter (where {conditions['over_err_grade']}) as over_err_grade_largest")
    if given.lines:
        # a CSV value that is no number, shown as written (the command line reads such a column as text)
        as_written = row.replace(f"{view}.{given.value}", f"{view}.ndcg_value_text as {given.value}")
        text_value = text_refusals.value_text_condition(view, given.value)
        counted.append(f"count(*) filter (where {text_value}) as value_text")
        read_as_text = f"not regexp_full_match({view}.ndcg_value_text, {CSV_NUMBER_TEXT})"
        counted.append(f"count(*) filter (where {read_as_text}) as numbers_text")
        truth = f"regexp_full_match({view}.ndcg_value_text, {_text(CSV_TRUTH_VALUE)})"
        texts = f"count({view}.ndcg_value_text)"
        counted.append(f"{texts} > 0 and {texts} = count(*) filter (where {truth}) as truth_values")
        # a CSV column of empty fields alone is text there too (CSV rows have a header's field count)
        from_csv = f"count(*) filter (where {view}.ndcg_expected_fields is not null)"
        counted.append(f"{from_csv} > 0 and {texts} = 0 as empty_text_column")
        examples.append(f"arg_min({as_written}, {first}) filter (where {text_value}) as value_text_row")
        firsts.append("value_text")
        text = f"{view}.ndcg_value_text"
        not_integer = f"{text} is not null and not regexp_full_match({text}, {_INTEGER_TEXT})"
        # an integer beyond HUGEINT (Int128) makes a column of integers text to the command line
        beyond = f"regexp_full_match({text}, {_INTEGER_TEXT}) and try_cast({text} as hugeint) is null"
        counted.append(f"count(*) filter (where {not_integer}) as not_integer_text")
        counted.append(f"count(*) filter (where {beyond}) as beyond_hugeint_text")
        if given.role == "run":  # a CSV column of integers, as the command line reads it (_inexact_text)
            inexact = _inexact_text(view)
            integers = row.replace(f"{view}.{given.value}", f"try_cast({text} as hugeint) as {given.value}")
            counted.append(f"count(*) filter (where {inexact}) as inexact_text")
            examples.append(f"arg_min({integers}, {first}) filter (where {inexact}) as inexact_text_row")
            firsts.append("inexact_text")
    types = [f"any_value(typeof({view}.{column})) as {column}_type" for column in given.columns]
    shown = [f"{_repr(name)} as {column}_shown" for column, name in given.columns.items()]
    rows, counts = ", ".join(f"examples.{name}_row" for name in conditions), f"{given.role}_counts"
    return (
        f"{counts} as materialized (select count(*) as row_count, {', '.join([*counted, *types])} from {view}), "
        f"{given.role}_stats as (select measured.*, examples.*, "
        f"list_transform([{rows}], r -> {given.described('r')}) as row_texts, {', '.join(shown)} "
        f"from {counts} as measured, (select {', '.join(examples)} from {view} "
        f"where (select {' + '.join(firsts)} > 0 from {counts})) as examples)"
    )


def _unknown_measures() -> str:
    return f"list_filter({_variable('measures')}, m -> m is null or not list_contains({list(FAMILIES)!r}, m))"


def _bad_ks() -> str:
    return f"list_filter({_variable('ks')}, k -> k is null or not isfinite(k) or k < 1 or k <> floor(k))"


def _duplicate(given: _Input, front: Front) -> str:
    """The smallest (query_id, doc_id) listed more than once, and how many times; in the qrels,
    (query_id, subtopic, doc_id), and its subtopic (null: the qrels judge no subtopic)."""
    asked = "true" if given.role == "qrels" else f"coalesce({_variable('duplicates')}, 'error') = 'error'"
    view = given.view
    subtopic = [f"{view}.subtopic"] if given.role == "qrels" else []
    packed = ", ".join(
        [f"query_id := {view}.query_id", f"doc_id := {view}.doc_id", *[f"subtopic := {c}" for c in subtopic]]
    )
    key = ", ".join([f"{view}.query_id", f"{view}.doc_id", *subtopic])
    order = ", ".join(f"{column} asc nulls last" for column in [f"{view}.query_id", f"{view}.doc_id", *subtopic])
    return (
        f"(select struct_pack({packed}, times := count(*)) "
        f"from {view} where {asked} group by {key} having count(*) > 1 order by {order} limit 1)"
    )


def _largest_label() -> str:
    """The largest label whose gain stays within MAX_GAIN under the gain asked
    (:attr:`pipeline.registry.Gain.largest_label`)."""
    cases = []
    for kind in GAIN_KINDS:
        largest = Gain(kind).largest_label
        bound = repr(largest) if math.isfinite(largest) else "cast('inf' as double)"
        cases.append(f"when {_text(kind)} then {bound}")
    return f"(case coalesce({_variable('gain')}, 'linear') {' '.join(cases)} end)"


def _err_max_grade() -> str:
    return f"coalesce({_variable('err_max_grade')}, {DEFAULTS['err_max_grade']})"


def _levels() -> str:
    return f"coalesce(map_keys({_variable('gain_map')}), []::double[])"


def _input_rules(front: Front) -> list[tuple[str, Sql]]:
    """(condition, message) of each rule over the inputs, in the command line's order."""
    run, qrels = _inputs(front)
    rules: list[tuple[str, Sql]] = []
    for given in (run, qrels):
        if given.lines:
            rules += text_refusals.scan_rules(given.role, given.name)
        elif front == "script":  # the files' columns, as sql/input_columns.sql found them
            rules += text_refusals.script_column_rules(given.role, given.name, given.columns)
    rules += weight_refusals.input_rules(front, run.name, run.columns, qrels.name, qrels.columns)  # as read
    for given in (run, qrels):
        stats = f"{given.role}_stats"
        for column in ("query_id", "doc_id"):
            found = f"{stats}.{column}_type"
            type_ok = f"list_contains({list(ID_SQL_TYPES + UNSIGNED_ID_SQL_TYPES)!r}, {found})"
            rules.append(
                (
                    f"{found} is not null and not {type_ok}",
                    _words("id_type", front, name=given.name, column=given.column(column), type=_shown_type(found)),
                )
            )
        found = f"{stats}.{given.value}_type"
        number_ok = f"(list_contains({list(NUMBER_SQL_TYPES)!r}, {found}) or {found} like 'DECIMAL%')"
        shown = {"name": given.name, "column": given.column(given.value), "type": _shown_type(found)}
        if given.lines:  # a column of true and false is read as truth values, then text, then numbers
            rules.append((f"{stats}.truth_values", _words("value_type", front, **{**shown, "type": "Boolean"})))
            rules.append(
                (
                    f"{stats}.value_text > 0",
                    _words(
                        "text_values",
                        front,
                        **{**shown, "type": "String"},
                        value=_repr(f"{stats}.value_text_row.{given.value}"),
                        row=given.described(f"{stats}.value_text_row", stats),
                    ),
                )
            )
            rules.append((f"{stats}.empty_text_column", _words("no_values", front, **{**shown, "type": "String"})))
            as_text = f"{stats}.numbers_text > 0 or ({stats}.beyond_hugeint_text > 0 and {stats}.not_integer_text = 0)"
            rules.append((as_text, _words("numbers_as_text", front, **{**shown, "type": "String"})))
        rules.append(
            (
                f"{found} = 'VARCHAR' and {stats}.text > 0",
                _words(
                    "text_values",
                    front,
                    **shown,
                    value=_repr(f"{stats}.text_row.{given.value}"),
                    row=given.row("text"),
                ),
            )
        )
        no_values = f"{found} = 'VARCHAR' and {stats}.row_count > 0 and {stats}.null_{given.value} = {stats}.row_count"
        rules.append((no_values, _words("no_values", front, **shown)))
        rules.append((f"{found} = 'VARCHAR'", _words("numbers_as_text", front, **shown)))
        rules.append((f"{found} is not null and not {number_ok}", _words("value_type", front, **shown)))
    for given in (run, qrels):
        stats = f"{given.role}_stats"
        rules.append((f"{stats}.row_count = 0", _words("empty", front, name=given.name)))
        if given.lines:
            rules.append(text_refusals.unparsed_rule(given.role, given.name))
        for column in ("query_id", "doc_id", given.value):
            rules.append(
                (
                    f"{stats}.null_{column} > 0",
                    _words(
                        "nulls",
                        front,
                        name=given.name,
                        column=given.column(column),
                        count=Sql(f"{stats}.null_{column}"),
                        row=given.row(f"null_{column}"),
                    ),
                )
            )
        # the value as the command line shows it: a float's repr (nan, inf), an exact score as its digits
        shown_values = {"not_finite": _repr, "inexact": lambda value: Sql(f"cast({value} as varchar)")}
        for rule in ("not_finite", "inexact") if given.role == "run" else ("not_finite",):
            rules.append(
                (
                    f"{stats}.{rule} > 0",
                    _words(
                        rule,
                        front,
                        name=given.name,
                        column=given.column(given.value),
                        count=Sql(f"{stats}.{rule}"),
                        value=shown_values[rule](f"{stats}.{rule}_row.{given.value}"),
                        row=given.row(rule),
                    ),
                )
            )
        if given.lines and given.role == "run":
            rules.append(
                (
                    f"{stats}.inexact_text > 0 and {stats}.not_integer_text = 0",
                    _words(
                        "inexact",
                        front,
                        name=given.name,
                        column=given.column(given.value),
                        count=Sql(f"{stats}.inexact_text"),
                        value=Sql(f"cast({stats}.inexact_text_row.{given.value} as varchar)"),
                        row=given.described(f"{stats}.inexact_text_row", stats),
                    ),
                )
            )
    for rule in ("fractional", "over_gain", "over_err_grade"):
        extra: dict[str, str] = {}
        if rule == "over_err_grade":
            extra = {
                "max_grade": Sql(f"cast({_err_max_grade()} as varchar)"),
                "largest": _label_text("qrels_stats.over_err_grade_largest"),
                "max_err_grade": str(MAX_ERR_GRADE),
            }
        if rule == "over_gain":
            extra = {
                "gain": Sql(f"coalesce({_variable('gain')}, 'linear')"),
                "formula": Sql(
                    f"case coalesce({_variable('gain')}, 'linear') "
                    + " ".join(f"when {_text(k)} then {_text(Gain(k).formula())}" for k in GAIN_KINDS)
                    + " end"
                ),
                "max_gain": f"{MAX_GAIN:g}",
                "largest_label": Sql(
                    f"case coalesce({_variable('gain')}, 'linear') "
                    + " ".join(f"when {_text(k)} then {_text(format(Gain(k).largest_label, 'g'))}" for k in GAIN_KINDS)
                    + " end"
                ),
            }
        rules.append(
            (
                f"qrels_stats.{rule} > 0",
                _words(
                    rule,
                    front,
                    name=qrels.name,
                    column=qrels.column("relevance"),
                    count=Sql(f"qrels_stats.{rule}"),
                    value=Sql(f"cast(qrels_stats.{rule}_row.relevance as varchar)"),
                    row=qrels.row(rule),
                    **extra,
                ),
            )
        )
    for given in (run, qrels):
        duplicate = f"{given.role}_duplicate"
        fields = {"keep_one": ""} if given.role == "qrels" else {}
        if given.role == "qrels":
            rules.append(
                (
                    f"{duplicate}.subtopic is not null",
                    _words(
                        "duplicate_judgment",
                        front,
                        name=given.name,
                        doc=_repr(f"{duplicate}.doc_id"),
                        count=Sql(f"{duplicate}.times"),
                        query=_repr(f"{duplicate}.query_id"),
                        subtopic=_repr(f"{duplicate}.subtopic"),
                    ),
                )
            )
        rules.append(
            (
                f"{duplicate} is not null",
                _words(
                    "duplicate",
                    front,
                    name=given.name,
                    doc=_repr(f"{duplicate}.doc_id"),
                    count=Sql(f"{duplicate}.times"),
                    query=_repr(f"{duplicate}.query_id"),
                    role=given.role,
                    **fields,
                ),
            )
        )
    return rules + weight_refusals.judged_rules(front, run.name, qrels.name)


def _parameter_rules(front: Front) -> list[tuple[str, Sql]]:
    """(condition, message) of each parameter the registry would refuse, in its words. A
    variable the script leaves unset is the registry's default; a macro's parameter is null
    only when given so."""

    def unset(name: str) -> str:
        return "false" if front == "macro" else f"{_variable(name)} is null"

    rules: list[tuple[str, Sql]] = []
    for convention in CONVENTIONS:
        if not convention.choices:
            continue
        name = convention.variables[0].name
        allowed = [
            value for value in convention.values if not (front == "macro" and ARRIVAL_OPTIONS.get(name) == value)
        ]
        value = _variable(name)
        extra = " (or a level map as gain_map := map {1: 3, 2: 9})" if name == "gain" and front == "macro" else ""
        extra = (
            " (or a level map as SET VARIABLE gain_map = MAP {1: 3, 2: 9})"
            if name == "gain" and front == "script"
            else extra
        )
        if front == "macro" and name in ARRIVAL_OPTIONS:
            extra += (
                f"; {ARRIVAL_OPTIONS[name]!r} reads the order rows arrive in, which a table macro does not see"
                " (ndcg evaluate honours it)"
            )
        rules.append(
            (
                f"not ({unset(name)}) and ({value} is null or not list_contains({allowed!r}, {value}))",
                Sql(
                    f"'unknown {name} ' || {_repr(value)} || {_text('; expected one of ' + ', '.join(allowed) + extra)}"
                ),
            )
        )
    measures = _variable("measures")
    unknown = _unknown_measures()
    rules.append(
        (
            f"not ({unset('measures')}) and {measures} is null",
            Sql(_text("measures must be a list of measure names, got null")),
        )
    )
    rules.append(
        (
            f"len({unknown}) > 0",
            Sql(
                f"'unknown measure ' || coalesce({_repr('looked_up.unknown_measure')}, 'null') || "
                f"{_text('; expected ' + ', '.join(FAMILIES) + ' (trec_eval' + chr(39) + 's families)')}"
            ),
        )
    )
    ks = _variable("ks")
    bad_k = _bad_ks()
    rules.append(
        (
            f"{ks} is null",
            Sql(
                _text(
                    "ks must be a list of positive integers, got null"
                    + (" (SET VARIABLE ks = [10])" if front == "script" else "")
                )
            ),
        )
    )
    rules.append((f"len({ks}) = 0", Sql(_text("at least one cutoff k is needed"))))
    rules.append(
        (f"len({bad_k}) > 0", Sql(f"'cutoff k must be a positive integer, got ' || {_repr('looked_up.bad_k')}"))
    )
    rules.append(
        (f"len(list_distinct({ks})) <> len({ks})", Sql(f"'cutoffs repeat a value: ' || cast({ks} as varchar)"))
    )
    max_results = _variable("max_results")
    rules.append(
        (
            f"{max_results} < 1 or {max_results} <> floor({max_results})",
            Sql(f"'max_results must be a positive integer, got ' || {_repr(max_results)}"),
        )
    )
    log_base = _variable("log_base")
    rules.append(
        (
            f"not ({unset('log_base')}) and ({log_base} is null or not isfinite({log_base}) or {log_base} <= 1)",
            Sql(f"'log base must be a finite number greater than 1, got ' || coalesce({_number(log_base)}, 'None')"),
        )
    )
    threshold = _variable("relevance_threshold")
    rules.append(
        (
            f"not isfinite({threshold})",
            Sql(f"'relevance_threshold must be a finite number, got ' || {_number(threshold)}"),
        )
    )
    for name in ("rbp_persistence", "compat_persistence"):
        persistence = _variable(name)
        rules.append(
            (
                f"not ({unset(name)}) and ({persistence} is null or not ({persistence} > 0 and {persistence} < 1))",
                Sql(
                    f"'{name} must be a number strictly between 0 and 1, got ' || "
                    f"coalesce({_number(persistence)}, 'None')"
                ),
            )
        )
    grade = _variable("err_max_grade")
    rules.append(
        (
            f"not ({unset('err_max_grade')}) "
            f"and ({grade} is null or not ({grade} >= 1 and {grade} <= {MAX_ERR_GRADE} and {grade} = floor({grade})))",
            Sql(
                f"'err_max_grade must be a positive integer up to {MAX_ERR_GRADE}, got ' || "
                f"coalesce(cast({grade} as varchar), 'None')"
            ),
        )
    )
    rules.extend(_cwl_scale_rules(unset))
    if front == "script":  # the macros take no query weights
        rules.extend(_missing_weight_rules())
    not_finite = f"list_filter({_levels()}, x -> not isfinite(x))"
    rules.append(
        (
            f"len({not_finite}) > 0",
            Sql(f"'gain map level ' || {_number(f'{not_finite}[1]')} || ' is not a finite number'"),
        )
    )
    entries = f"coalesce(map_entries({_variable('gain_map')}), [])"
    too_large = f"list_filter({entries}, x -> not (abs(x.value) <= {MAX_GAIN!r}))[1]"
    rules.append(
        (
            f"{too_large} is not null",
            Sql(
                f"'gain map value ' || {_number(f'{too_large}.value')} || "
                f"' (level ' || {_level(f'{too_large}.key')} || ') ' || "
                f"{_text(f'is beyond the largest gain {MAX_GAIN:g}: sums of such gains overflow a double')}"
            ),
        )
    )
    return rules


def _folded_id() -> str:
    """A table given to a macro may declare its id columns with a collation (``COLLATE
    NOCASE``), which the union of the two inputs passes on to both and under which 'A' joins
    'a'; ``typeof`` does not show it. Found by behaviour: an id equal, under the collation, to
    its lower-case or accent-free form while its bytes differ. (Files read by sql/ndcg.sql carry
    no collation; the session's is refused above.)"""
    # text ids only: an integer has no case (typeof folds to a constant, so such a scan is cut)
    ids = " union all ".join(
        f"select cast({view}.{column} as varchar) as v from {view} where typeof({view}.{column}) = 'VARCHAR'"
        for view in ("run_given", "qrels_given")
        for column in ("query_id", "doc_id")
    )
    folded = " or ".join(
        f"(ids.v = {fold}(ids.v) and encode(ids.v) <> encode({fold}(ids.v)))" for fold in ("lower", "strip_accents")
    )
    return f"(select ids.v from ({ids}) as ids where {folded} limit 1)"


def _folding_rules(front: Front) -> list[tuple[str, Sql]]:
    """The refusal of :func:`_folded_id`'s id, for the macros."""
    if front != "macro":
        return []
    return [
        (
            "looked_up.folded_id is not null",
            Sql(
                _text("the ids are compared under a collation that folds case or accents (a column declared ")
                + " || "
                + _text("COLLATE NOCASE or NOACCENT), under which ")
                + f" || {_repr('looked_up.folded_id')} || "
                + _text(
                    " and its lower-case or accent-free form would be one id; select the id columns with "
                    "COLLATE c (or declare them without a collation) before calling"
                )
            ),
        )
    ]


def refusals_query(front: Front) -> exp.Select:
    """The query ``refusals`` of one front: one row, ``refused`` (null, or the first broken
    rule's error), over ``run_given`` and ``qrels_given``."""
    run, qrels = _inputs(front)
    collation = "lower(current_setting('default_collation'))"
    text_ids = " or ".join(
        f"{role}_stats.{column}_type = 'VARCHAR'" for role in ("run", "qrels") for column in ("query_id", "doc_id")
    )
    session = (
        f"not list_contains({list(BINARY_COLLATIONS)!r}, {collation}) and ({text_ids})",
        Sql(
            f"'the session''s default_collation is ' || {_repr(collation)} || "
            + _text(
                ", under which two text ids that differ in case or accents would be one; "
                "run RESET default_collation (or SET default_collation = '') before evaluating"
            )
        ),
    )
    arguments = text_refusals.argument_rules() if front == "macro" else []
    weights = weight_refusals.parameter_rules(front)
    rules = [*_parameter_rules(front), *weights, *arguments, session, *_folding_rules(front), *_input_rules(front)]
    prefix = f"{_variable('caller')} || ': ' || " if front == "macro" else ""
    cases = "\n".join(f"when {condition} then error({prefix}{words})" for condition, words in rules)
    text = (
        f"with {_stats(run, front)}, {_stats(qrels, front)} "
        f"select case\n{cases}\nend as refused "
        f"from run_stats, qrels_stats, "
        f"(select {_duplicate(run, front)} as run_duplicate, {_duplicate(qrels, front)} as qrels_duplicate, "
        f"{_unknown_measures()}[1] as unknown_measure, {_bad_ks()}[1] as bad_k"
        f"{', ' + _folded_id() + ' as folded_id' if front == 'macro' else ''}) as looked_up"
        + f", {weight_refusals.weight_stats(front)}"
        + (
            f", {text_refusals.columns_looked_up('run')}, {text_refusals.columns_looked_up('qrels')}"
            if front == "macro"
            else ""
        )
    )
    return sqlglot.parse_one(text, read="duckdb", into=exp.Select)


def refusals_sql() -> str:
    """The text of ``sql/generated/refusals.sql``: the view ``refusals`` of ``sql/ndcg.sql``."""
    from pipeline.transpile import written_in

    query = refusals_query("script").sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    header = [
        "-- refusals.sql: what sql/ndcg.sql refuses, in the command line's words (one row, column refused).",
        "-- Generated by pipeline/sql_refusals.py from the registry and pipeline/rules.py's messages",
        "-- (make generate); do not edit. Reads: views run_given and qrels_given (sql/inputs.sql) and the",
        "-- variables of the steps; sql/ndcg.sql's summary and sql/export.sql read it before any number.",
        "",
    ]
    return "\n".join(header) + f"create or replace temp view refusals as\n{query};\n"


__all__ = ["ARRIVAL_OPTIONS", "FAMILIES", "ID_TYPES", "refusals_query", "refusals_sql"]


def _cwl_scale_rules(unset: Callable[[str], str]) -> list[tuple[str, Sql]]:
    """The C/W/L measures' label scale, as :class:`~pipeline.registry.Evaluation` refuses it:
    cwl_min_rel and cwl_max_rel finite, cwl_min_rel at least 0, cwl_max_rel above it."""
    low, high = _variable("cwl_min_rel"), _variable("cwl_max_rel")
    bottom = f"coalesce({low}, {DEFAULTS['cwl_min_rel']})"
    top = f"coalesce({high}, {DEFAULTS['cwl_max_rel']})"
    target = _variable("cwl_target")
    rules = [
        (
            f"not ({unset('cwl_min_rel')}) and ({low} is null or not isfinite({low}) or {low} < 0)",
            Sql(f"'cwl_min_rel must be a finite number at least 0, got ' || coalesce({_number(low)}, 'None')"),
        ),
        (
            f"not ({unset('cwl_max_rel')}) and ({high} is null or not isfinite({high}))",
            Sql(f"'cwl_max_rel must be a finite number at least 0, got ' || coalesce({_number(high)}, 'None')"),
        ),
        (
            f"isfinite({top}) and {top} <= {bottom}",
            Sql(f"'cwl_max_rel must be above cwl_min_rel (' || {_level(bottom)} || '), got ' || {_level(top)}"),
        ),
        (
            f"not ({unset('cwl_target')}) and ({target} is null or not isfinite({target}) or {target} <= 0.5)",
            Sql(f"'cwl_target must be a finite number above 0.5, got ' || coalesce({_number(target)}, 'None')"),
        ),
    ]
    return rules


def _missing_weight_rules() -> list[tuple[str, Sql]]:
    """``missing_query_weight`` as :class:`pipeline.registry.QueryWeights` reads it (0 or a finite
    number >= 0 that is not subnormal), in its words."""
    weight = _variable("missing_query_weight")
    given = f"{_text(chr(39))} || {_number(weight)} || {_text(chr(39))}"  # quoted, as Python's repr of the text
    return [
        (
            f"not isfinite({weight}) or {weight} < 0",
            Sql(f"{_text(f'missing_query_weight: {WEIGHT_NOT_FINITE}, got ')} || {given}"),
        ),
        (
            f"{weight} > 0 and {weight} < {sys.float_info.min!r}",
            Sql(f"{_text(f'missing_query_weight: {WEIGHT_SUBNORMAL}, got ')} || {given}"),
        ),
    ]
