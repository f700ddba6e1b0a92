"""What ``sql/ndcg.sql`` and the table macros refuse of the run's per-document weights (the
variable or parameter ``doc_weight_col``), in the words of the command line (:mod:`pipeline.weights`,
:meth:`pipeline.registry.Evaluation._check_document_weights`), the option spelled as each front
spells it: the script's variable and ``SET VARIABLE`` for a fix, the macros' parameter and ``:=``.

The words are the Python functions' own, called with markers in place of each value and turned
into a SQL concatenation (:func:`pipeline.sql_words.as_sql`), so that the two cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.registry import DEFAULTS
from pipeline.registry.evaluation import (
    DOCUMENT_WEIGHT_CONVENTIONS,
    DOCUMENT_WEIGHT_SETS,
    DOCUMENT_WEIGHTED_MEASURES,
    QRELS_WEIGHTS_WITHOUT_COLUMN,
    UNJUDGED_WEIGHT_WITHOUT_QRELS_WEIGHTS,
    blank_weight_column_message,
    convention_needed_message,
    ties_average_message,
    unjudged_weight_message,
    unweighted_measures_message,
)
from pipeline.registry.parameters import setting_text
from pipeline.rules import Front
from pipeline.sql_words import CSV_NUMBER_TEXT, NUMBER_SQL_TYPES, Sql, shown_type
from pipeline.sql_words import as_sql as _as_sql
from pipeline.sql_words import marker as _marker
from pipeline.sql_words import sql_repr as _repr
from pipeline.sql_words import sql_text as _text
from pipeline.sql_words import variable as _variable
from pipeline.weights import (
    ALWAYS_READ_AS_ANOTHER,
    DOCUMENT_WEIGHT_PROBLEMS,
    bad_weights_message,
    disagreeing_weights_message,
    inline_qrels_weights_message,
    missing_weight_column_message,
    read_as_another_message,
    trec_weights_message,
    unweighted_results_message,
    weight_type_message,
)

COLUMN = _variable("doc_weight_col")
# the weights are the qrels' (doc_weights_in 'qrels'), else the run's (unset: the default, the run)
FROM_QRELS = f"coalesce({_variable('doc_weights_in')} = 'qrels', false)"
# Python's whitespace (str.isspace, what str.strip removes), written out: finding it by testing every
# character takes 0.05 s (tests/test_document_weights.py finds it so)
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
# as a regular expression's class: a name of it alone names no column
WHITESPACE_CLASS = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]"

# What the rules read: the run's weights measured once (sql_refusals' from clause) and the type of
# the run_given view's weight column (the file's own, as sql/inputs.sql reads it; in the macros, a
# table's own or, CSV text, as the command line types the column: String unless every value written
# is a number, Float64 otherwise).
WEIGHT_STATS = "run_weights"
WEIGHT_TYPE = {
    "script": (
        "(select duckdb_columns.data_type from duckdb_columns() where duckdb_columns.database_name = 'temp' "
        f"and duckdb_columns.table_name = if({FROM_QRELS}, 'qrels_given', 'run_given') "
        "and duckdb_columns.column_name = 'doc_weight')"
    ),
    "macro": f"{WEIGHT_STATS}.weight_type",
}
# The column's name as Python's repr shows it, written once in the rules' from clause (DuckDB binds
# each copy of an expression: one in each message made the macros a tenth longer)
COLUMN_SHOWN = f"{WEIGHT_STATS}.column_shown"
# The columns the weighted input was found to have: sql/input_columns.sql's variables, the macros' run_columns
# and qrels_columns
FOUND = {
    "script": f"if({FROM_QRELS}, {_variable('qrels_columns_found')}, {_variable('run_columns_found')})",
    "macro": f"if({FROM_QRELS}, qrels_columns.found, run_columns.found)",
}
# The SQL conditions of DOCUMENT_WEIGHT_PROBLEMS, in their order, over the weight as a double
PROBLEM_TESTS = ("w is null", "isnan(w)", "isinf(w)", "w < 0")


def parameter_rules(front: Front) -> list[tuple[str, Sql]]:
    """The measures and conventions doc_weight_col has no meaning with, as the Evaluation refuses
    them: a measure but ndcg (cg, dcg, idcg), P and map; ties average; a convention of
    DOCUMENT_WEIGHT_CONVENTIONS set otherwise; and, where the command line takes a default as
    TF-Ranking's (ideal, precision_denominator), a variable unset or a parameter left at its
    default, or either set otherwise; then (the script's) query_weights_path beside it (both weigh
    the means)."""
    given = f"{COLUMN} is not null"
    column, listed, shown = _marker("column"), _marker("unweighted"), _marker("value")
    weighted = list(DOCUMENT_WEIGHTED_MEASURES)
    unweighted = f"list_filter(getvariable('measure_columns'), c -> not list_contains({weighted!r}, c))"
    values = {column: COLUMN_SHOWN}
    unjudged, source = _variable("unjudged_weight"), _variable("doc_weights_in")
    rules = [
        # where the weights are read from, in the Evaluation's order
        (
            f"{unjudged} is not null and not ({unjudged} >= 0 and isfinite({unjudged}))",  # NaN >= 0 in DuckDB
            _as_sql(unjudged_weight_message(shown), {shown: f"cast({unjudged} as varchar)"}),
        ),
        (
            f"{unjudged} is not null and coalesce(cast({source} as varchar), 'run') <> 'qrels'",
            Sql(_text(UNJUDGED_WEIGHT_WITHOUT_QRELS_WEIGHTS)),
        ),
        (f"{source} = 'qrels' and {COLUMN} is null", Sql(_text(QRELS_WEIGHTS_WITHOUT_COLUMN))),
        (
            f"{given} and regexp_full_match(cast({COLUMN} as varchar), {_text(WHITESPACE_CLASS + '*')})",
            _as_sql(blank_weight_column_message(column), values),
        ),
        (
            f"{given} and len({unweighted}) > 0",
            _as_sql(
                unweighted_measures_message(column, listed), {**values, listed: f"array_to_string({unweighted}, ', ')"}
            ),
        ),
        (f"{given} and {_variable('ties')} = 'average'", _as_sql(ties_average_message(column), values)),
    ]
    for name in {**DOCUMENT_WEIGHT_SETS, **DOCUMENT_WEIGHT_CONVENTIONS}:  # ideal once
        needed, value, fix = {**DOCUMENT_WEIGHT_CONVENTIONS, **DOCUMENT_WEIGHT_SETS}[name], _variable(name), ""
        if name in DOCUMENT_WEIGHT_SETS:
            # SQL takes no default as TF-Ranking's: an unset variable, a parameter left, is the default's
            broken = f"coalesce(cast({value} as varchar) <> {_text(str(needed))}, true)"
            got = f"coalesce(cast({value} as varchar), {_text(setting_text(name, DEFAULTS[name]))})"
            fix = f"; SET VARIABLE {name} = {needed!r}" if front == "script" else f"; {name} := {needed!r}"
        elif isinstance(needed, bool):
            broken = f"{value} is not null and {value} is distinct from {str(needed).lower()}"
            got = f"case when {value} then 'True' else 'False' end"
        elif needed is None:
            broken, got = f"{value} is not null", f"cast({value} as varchar)"
        else:
            broken = f"{value} is not null and cast({value} as varchar) <> {_text(str(needed))}"
            got = f"cast({value} as varchar)"
        words = convention_needed_message(column, name, shown) + fix
        rules.append((f"{given} and {broken}", _as_sql(words, {**values, shown: got})))
    if front == "macro":  # the macros take no query weights
        return rules
    rules.append(
        (
            f"{given} and {_variable('query_weights_path')} is not null",
            Sql(
                _text(
                    "query_weights_path and doc_weight_col both weigh the means (the second by TF-Ranking's list "
                    "weights): set one of them"
                )
            ),
        )
    )
    return rules


def input_rules(
    front: Front, run_name: Sql, looked_for: Mapping[str, Sql], qrels_name: Sql, qrels_looked_for: Mapping[str, Sql]
) -> list[tuple[str, Sql]]:
    """The weight column as the engines check it as they read the run, or the qrels under
    doc_weights_in 'qrels' (:func:`pipeline.weights.document_weights`): a TREC input (the
    macros'), read as another column (``looked_for``: the names the input's ids and score or
    label are read by), not in the file, not numbers, then null, NaN, infinite or negative weights
    (how many, and the first read); with the qrels' weights, inline labels, then a document whose
    rows give differing weights and a result the qrels do not judge without unjudged_weight
    (:func:`pipeline.weights.judged_weights`)."""
    given = f"{COLUMN} is not null"
    name, column = _marker("name"), _marker("column")
    weighted_name = Sql(f"if({FROM_QRELS}, {qrels_name}, {run_name})")
    values = {repr(column): COLUMN_SHOWN, name: weighted_name}
    found, weight_type = FOUND[front], WEIGHT_TYPE[front]
    listed = f"coalesce(nullif(array_to_string(list_transform({found}, f -> {_repr('f')}), ', '), ''), 'none')"
    missing_words = missing_weight_column_message(name, column, [_marker("found")], front=front)
    number_types = repr(list(NUMBER_SQL_TYPES))
    # the ids and the score (the label) by the names the variables give them, and the input order
    # and by the names they are read under (pipeline.weights.read_as_another)
    run_names = [*looked_for.values(), *map(_text, ("query_id", "doc_id", "score", *ALWAYS_READ_AS_ANOTHER))]
    qrels_names = [
        *qrels_looked_for.values(),
        *map(_text, ("query_id", "doc_id", "relevance", "subtopic", *ALWAYS_READ_AS_ANOTHER)),
    ]
    read_as_another = f"if({FROM_QRELS}, [{', '.join(qrels_names)}], [{', '.join(run_names)}])"
    inline = f"{_variable('qrels')} is null" if front == "macro" else f"{_variable('qrels_path')} is null"
    trec = [
        (
            f"{given} and not {FROM_QRELS} and {_variable('run_read_as')} = 'trec'",
            _as_sql(trec_weights_message(name), {name: run_name}),
        ),
        (
            f"{given} and {FROM_QRELS} and {_variable('qrels_read_as')} = 'trec'",
            _as_sql(trec_weights_message(name, "qrels"), {name: qrels_name}),
        ),
    ]
    rules = [
        (f"{given} and {FROM_QRELS} and {inline}", _as_sql(inline_qrels_weights_message(name), {name: run_name})),
        *(trec if front == "macro" else []),
        (
            f"{given} and list_contains({read_as_another}, {COLUMN})",
            _as_sql(read_as_another_message(name, column, front=front), values),
        ),
        (
            f"{given} and not list_contains({found}, {COLUMN})",
            _as_sql(missing_words, {**values, repr(_marker("found")): listed}),
        ),
        (
            f"{given} and not (list_contains({number_types}, {weight_type}) or {weight_type} like 'DECIMAL%')",
            _as_sql(
                weight_type_message(name, column, _marker("type")), {**values, _marker("type"): shown_type(weight_type)}
            ),
        ),
    ]
    first = {"query": _marker("query"), "doc": _marker("doc"), "weight": _marker("weight")}
    for index, (problem, _) in enumerate(DOCUMENT_WEIGHT_PROBLEMS, start=1):
        stats = f"{WEIGHT_STATS}.problem_{index}"
        by_role = {
            role: bad_weights_message(name, column, problem, _marker("count"), first, role)  # type: ignore[arg-type]
            for role in ("run", "qrels")
        }
        row_values = {
            **values,
            _marker("count"): f"cast({stats}_count as varchar)",
            repr(first["query"]): f"{stats}_query_shown",
            repr(first["doc"]): f"{stats}_doc_shown",
            first["weight"]: f"coalesce(cast({stats}_first.weight as varchar), 'None')",
        }
        said = f"if({FROM_QRELS}, {_as_sql(by_role['qrels'], row_values)}, {_as_sql(by_role['run'], row_values)})"
        rules.append((f"{given} and {stats}_count > 0", Sql(said)))
    return rules


def judged_rules(front: Front, run_name: Sql, qrels_name: Sql) -> list[tuple[str, Sql]]:
    """With the qrels' weights: a document whose rows give differing weights, and a result the
    qrels do not judge without unjudged_weight (:func:`pipeline.weights.judged_weights`); after
    every other rule over the inputs, as the engines join the weights once the inputs are valid."""
    given = f"{COLUMN} is not null"
    name, column = _marker("name"), _marker("column")
    values = {repr(column): COLUMN_SHOWN}
    first = {"query": _marker("query"), "doc": _marker("doc")}
    rules: list[tuple[str, Sql]] = []
    count, low, high = _marker("count"), _marker("low"), _marker("high")
    differing = f"{WEIGHT_STATS}.differing"
    words = disagreeing_weights_message(name, column, count, {**first, "low": low, "high": high})  # type: ignore[arg-type]
    differing_values = {
        **values,
        name: qrels_name,
        count: f"cast({differing}_count as varchar)",
        repr(first["query"]): f"{_repr(f'{differing}_first.query')}",
        repr(first["doc"]): f"{_repr(f'{differing}_first.doc')}",
        low: f"cast({differing}_first.low as varchar)",
        high: f"cast({differing}_first.high as varchar)",
    }
    rules.append((f"{given} and {differing}_count > 0", _as_sql(words, differing_values)))
    unjudged = f"{WEIGHT_STATS}.unjudged"
    words = unweighted_results_message(name, _marker("qrels"), column, count, first, front)  # type: ignore[arg-type]
    unjudged_values = {
        **values,
        name: run_name,
        _marker("qrels"): qrels_name,
        count: f"cast({unjudged}_count as varchar)",
        repr(first["query"]): f"{_repr(f'{unjudged}_first.query')}",
        repr(first["doc"]): f"{_repr(f'{unjudged}_first.doc')}",
    }
    rules.append((f"{given} and {unjudged}_count > 0", _as_sql(words, unjudged_values)))
    return rules


def weight_stats(front: Front) -> str:
    """The subquery ``run_weights`` the input rules read: each problem's count and first row in
    input order (its query and document as text, its weight), over the weights as doubles; no
    row is read without doc_weight_col. In the macros, the first by file and line of text (a
    table's order is not seen), and the column's type."""
    first, columns = "arrival", []
    if front == "macro":
        first = "struct_pack(arrival, ndcg_file, ndcg_line_number)"
        # CSV text: a value written as no number, or none written at all, makes the column text
        as_text = (
            f"count(ndcg_weight_text) filter (where not regexp_full_match(ndcg_weight_text, {CSV_NUMBER_TEXT})) > 0"
        )
        as_text += " or (count(ndcg_file) > 0 and count(ndcg_weight_text) = 0)"
        columns.append(f"case when {as_text} then 'VARCHAR' else any_value(weight_type) end as weight_type")
    for index, test in enumerate(PROBLEM_TESTS, start=1):
        columns.append(f"count(*) filter (where {test}) as problem_{index}_count")
        columns.append(
            f"arg_min({{'query': cast(query_id as varchar), 'doc': cast(doc_id as varchar), 'weight': w}}, {first}) "
            f"filter (where {test}) as problem_{index}_first"
        )

    def read(view: str) -> str:
        columns = [f"{view}.query_id", f"{view}.doc_id", f"{view}.arrival"]
        if front == "macro":
            columns += [f"{view}.ndcg_file", f"{view}.ndcg_line_number", f"{view}.ndcg_weight_text"]
            columns += [f"typeof({view}.doc_weight) as weight_type"]
        return ", ".join([*columns, f"try_cast({view}.doc_weight as double) as w"])

    shown = [f"{_repr(COLUMN)} as column_shown"]
    for index in range(1, len(PROBLEM_TESTS) + 1):
        first_row = f"measured.problem_{index}_first"
        shown += [f"{_repr(f'{first_row}.query')} as problem_{index}_query_shown"]
        shown += [f"{_repr(f'{first_row}.doc')} as problem_{index}_doc_shown"]
    # the weighted input's rows: the run's, or the qrels' under doc_weights_in 'qrels'
    weights = (
        f"(select {read('run_given')} from run_given where {COLUMN} is not null and not {FROM_QRELS} "
        f"union all by name select {read('qrels_given')} from qrels_given where {COLUMN} is not null and {FROM_QRELS})"
    )
    measured = f"(select {', '.join(columns)} from {weights})"
    return (
        f"(select measured.*, {', '.join(shown)}, judged_stats.* from {measured} as measured, "
        f"{_judged_stats()} as judged_stats) as {WEIGHT_STATS}"
    )


def _judged_stats() -> str:
    """The qrels' weights against the run (doc_weights_in 'qrels'), ids as text (as
    sql/aligned_inputs.sql joins them, and each engine orders the first): the documents whose rows
    give differing weights, and the results no row judges (without unjudged_weight); each how
    many, and the first by its ids."""
    ids = "cast(query_id as varchar) as query, cast(doc_id as varchar) as doc"
    judged = (
        f"(select {ids}, min(try_cast(doc_weight as double)) as low, max(try_cast(doc_weight as double)) as high "
        f"from qrels_given where {COLUMN} is not null and {FROM_QRELS} group by all)"
    )
    listed = f"(select {ids} from run_given where {COLUMN} is not null and {FROM_QRELS})"
    unweighted = (
        f"(select listed.query, listed.doc from {listed} as listed anti join {judged} as judged "
        "on listed.query = judged.query and listed.doc = judged.doc "
        f"where {_variable('unjudged_weight')} is null)"
    )
    return (
        "(select differing_count, differing_first, unjudged_count, unjudged_first from "
        "(select count(*) as differing_count, arg_min({'query': query, 'doc': doc, 'low': low, 'high': high}, "
        f"(query, doc)) as differing_first from {judged} where low <> high), "
        "(select count(*) as unjudged_count, arg_min({'query': query, 'doc': doc}, (query, doc)) as unjudged_first "
        f"from {unweighted}))"
    )
