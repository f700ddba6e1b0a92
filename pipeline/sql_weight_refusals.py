"""What ``sql/ndcg.sql`` refuses of the run's per-document weights (the variable
``doc_weight_col``), in the words of the command line (:mod:`pipeline.weights`,
:meth:`pipeline.registry.Evaluation._check_document_weights`), the option spelled as the script
spells it: its variable, and ``SET VARIABLE`` for a fix.

The words are the Python functions' own, called with markers in place of each value and turned
into a SQL concatenation (:func:`_as_sql`), so that the two cannot drift apart. The table macros
refuse the variable whole (``sql/macro_inputs.sql``): they weigh no means.
"""

from __future__ import annotations

from collections.abc import Mapping

from pipeline.registry import DEFAULTS
from pipeline.registry.evaluation import (
    DOCUMENT_WEIGHT_CONVENTIONS,
    DOCUMENT_WEIGHT_SETS,
    DOCUMENT_WEIGHTED_MEASURES,
    convention_needed_message,
    ties_average_message,
    unweighted_measures_message,
)
from pipeline.registry.parameters import setting_text
from pipeline.sql_words import NUMBER_SQL_TYPES, Sql, shown_type
from pipeline.sql_words import sql_repr as _repr
from pipeline.sql_words import sql_text as _text
from pipeline.sql_words import variable as _variable
from pipeline.weights import (
    ALWAYS_READ_AS_ANOTHER,
    DOCUMENT_WEIGHT_PROBLEMS,
    bad_weights_message,
    missing_weight_column_message,
    read_as_another_message,
    weight_type_message,
)

COLUMN = _variable("doc_weight_col")
# What the rules read: the run's weights measured once (sql_refusals' from clause) and the type of
# the run_given view's weight column (the file's own, as sql/inputs.sql reads it).
WEIGHT_STATS = "run_weights"
WEIGHT_TYPE = (
    "(select duckdb_columns.data_type from duckdb_columns() where duckdb_columns.database_name = 'temp' "
    "and duckdb_columns.table_name = 'run_given' and duckdb_columns.column_name = 'doc_weight')"
)
# The SQL conditions of DOCUMENT_WEIGHT_PROBLEMS, in their order, over the weight as a double
PROBLEM_TESTS = ("w is null", "isnan(w)", "isinf(w)", "w < 0")


def _as_sql(text: str, values: Mapping[str, str]) -> Sql:
    """``text`` (a message built with the markers of ``values`` in place of its values, each as
    written: plain or as its ``repr``) as a SQL concatenation of its words and the SQL of each value."""
    pieces, rest = [], text
    while rest:
        found = [(rest.find(marker), marker) for marker in values if marker in rest]
        if not found:
            pieces.append(_text(rest))
            break
        at, marker = min(found)
        if at:
            pieces.append(_text(rest[:at]))
        pieces.append(f"({values[marker]})")
        rest = rest[at + len(marker) :]
    return Sql(" || ".join(pieces))


def _marker(name: str) -> str:
    return f"\u27e6{name}\u27e7"


def parameter_rules() -> list[tuple[str, Sql]]:
    """The measures and conventions doc_weight_col has no meaning with, as the Evaluation refuses
    them: a measure but ndcg (cg, dcg, idcg), P and map; ties average; a convention of
    DOCUMENT_WEIGHT_CONVENTIONS set otherwise; and, where the command line takes a default as
    TF-Ranking's (ideal, precision_denominator), a variable unset or set otherwise; then
    query_weights_path beside it (both weigh the means)."""
    given = f"{COLUMN} is not null"
    column, listed, shown = _marker("column"), _marker("unweighted"), _marker("value")
    weighted = list(DOCUMENT_WEIGHTED_MEASURES)
    unweighted = f"list_filter(getvariable('measure_columns'), c -> not list_contains({weighted!r}, c))"
    values = {column: _repr(COLUMN)}
    rules = [
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
            # the script takes no default as TF-Ranking's: unset, the variable is the default's
            broken = f"coalesce(cast({value} as varchar) <> {_text(str(needed))}, true)"
            got = f"coalesce(cast({value} as varchar), {_text(setting_text(name, DEFAULTS[name]))})"
            fix = f"; SET VARIABLE {name} = {needed!r}"
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


def input_rules(run_name: Sql, looked_for: Mapping[str, Sql]) -> list[tuple[str, Sql]]:
    """The run's weight column as the engines check it as they read the run
    (:func:`pipeline.weights.document_weights`): read as another column (``looked_for``: the
    names the run's ids and score are read by), not in the file, not numbers, then null, NaN,
    infinite or negative weights (how many, and the first read)."""
    given = f"{COLUMN} is not null"
    name, column = _marker("name"), _marker("column")
    values = {repr(column): _repr(COLUMN), name: run_name}
    found = _variable("run_columns_found")
    listed = f"coalesce(nullif(array_to_string(list_transform({found}, f -> {_repr('f')}), ', '), ''), 'none')"
    missing_words = missing_weight_column_message(name, column, [_marker("found")], front="script")
    number_types = repr(list(NUMBER_SQL_TYPES))
    # the ids and the score by the names the variables give them, and the input order
    read_as_another = ", ".join([*looked_for.values(), *map(_text, ALWAYS_READ_AS_ANOTHER)])
    rules = [
        (
            f"{given} and list_contains([{read_as_another}], {COLUMN})",
            _as_sql(read_as_another_message(name, column, front="script"), values),
        ),
        (
            f"{given} and not list_contains({found}, {COLUMN})",
            _as_sql(missing_words, {**values, repr(_marker("found")): listed}),
        ),
        (
            f"{given} and not (list_contains({number_types}, {WEIGHT_TYPE}) or {WEIGHT_TYPE} like 'DECIMAL%')",
            _as_sql(
                weight_type_message(name, column, _marker("type")), {**values, _marker("type"): shown_type(WEIGHT_TYPE)}
            ),
        ),
    ]
    first = {"query": _marker("query"), "doc": _marker("doc"), "weight": _marker("weight")}
    for index, (problem, _) in enumerate(DOCUMENT_WEIGHT_PROBLEMS, start=1):
        stats = f"{WEIGHT_STATS}.problem_{index}"
        words = bad_weights_message(name, column, problem, _marker("count"), first)  # type: ignore[arg-type]
        row_values = {
            **values,
            _marker("count"): f"cast({stats}_count as varchar)",
            repr(first["query"]): _repr(f"{stats}_first.query"),
            repr(first["doc"]): _repr(f"{stats}_first.doc"),
            first["weight"]: f"coalesce(cast({stats}_first.weight as varchar), 'None')",
        }
        rules.append((f"{given} and {stats}_count > 0", _as_sql(words, row_values)))
    return rules


def weight_stats() -> str:
    """The subquery ``run_weights`` the input rules read: each problem's count and first row in
    input order (its query and document as text, its weight), over the weights as doubles; no
    row is read without doc_weight_col."""
    columns = []
    for index, test in enumerate(PROBLEM_TESTS, start=1):
        columns.append(f"count(*) filter (where {test}) as problem_{index}_count")
        columns.append(
            f"arg_min({{'query': cast(query_id as varchar), 'doc': cast(doc_id as varchar), 'weight': w}}, arrival) "
            f"filter (where {test}) as problem_{index}_first"
        )
    return (
        f"(select {', '.join(columns)} from (select run_given.query_id, run_given.doc_id, run_given.arrival, "
        f"try_cast(run_given.doc_weight as double) as w from run_given where {COLUMN} is not null)) as {WEIGHT_STATS}"
    )
