"""DuckDB table macros ``ndcg_per_query`` and ``ndcg_summary``, generated from the steps of ``sql/``.

``ndcg sql --macros`` prints them and the package ships them as ``sql/generated/macros.sql``;
once read into DuckDB (``.read ndcg_macros.sql``, or executed from Python) they run from any
folder::

    select * from ndcg_per_query('run.parquet', 'qrels.parquet', ks := [5, 10], gain := 'exponential')

There is no second copy of a formula here, and the steps appear once: both macros read a third,
``ndcg_per_query_table``, which gives a fourth, ``ndcg_per_query_steps``, the values derived from
the parameters (so that each derivation is written once, not at every place a step reads it).
That one is the transpiler's composition of the steps
(:func:`pipeline.transpile.composed_per_query`) with, on the syntax tree:

- the views of ``sql/macro_text_inputs.sql``, ``sql/macro_text_rows.sql``,
  ``sql/macro_found_columns.sql``, ``sql/macro_inputs.sql`` and ``sql/macro_qrels_inputs.sql`` as its
  first CTEs: the macro's arguments read by ``query_table`` (a table or view name, or a Parquet path, glob or list) or,
  TREC or CSV/TSV text, by ``read_text`` and parsed as the command line parses it
  (:func:`input_variables`: the format told by the name's ending or by ``run_format`` and
  ``qrels_format``);
- each ``getvariable('x')`` of a convention replaced by the macro parameter ``x``, whose default
  is the registry's (``ks`` defaults to ``[10]``);
- each ``getvariable('x')`` of a derived variable (:mod:`pipeline.derived`: the signals the
  measures' counters read, the curves, the columns asked) replaced by its parameter, which
  ``ndcg_per_query_table`` computes in SQL from the parameters (``ndcg_summary`` computes the
  registry's sum and geometric-mean measures so);
- the list weights of ``doc_weight_col`` (``sql/list_weights.sql``) as columns of the table, for
  ``ndcg_summary`` alone, which weighs its means by them (``sql/list_weighted_summary.sql``);
- a ``refusals`` CTE (:mod:`pipeline.sql_refusals`), read by the final select, that raises, in
  the command line's words and naming the macro called, what the command line refuses: a
  parameter the registry does not accept (and the options a macro cannot honour), a session
  setting that would change the numbers, and the inputs' types, nulls, non-finite values,
  fractional or overflowing labels and duplicates.

``ndcg_per_query`` keeps the columns asked for (no column NULL on every row); ``ndcg_summary``
is ``sql/summary.sql`` over the same table. Regenerate after a step changes: ``make generate``.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from pipeline.derived import DERIVED, derived
from pipeline.registry import CONVENTIONS, OPTION, Evaluation, measure_columns
from pipeline.sql_files import sql_file
from pipeline.sql_refusals import FAMILIES, refusals_query
from pipeline.sql_text_refusals import TEXT_FORMATS
from pipeline.transpile import _parse, _strip_comments, composed_per_query, literal, written_in

PER_QUERY_MACRO = "ndcg_per_query"
SUMMARY_MACRO = "ndcg_summary"
# what both read: the per-query table with every column of the steps' shape
TABLE_MACRO = "ndcg_per_query_table"
# what it reads: the steps, the values derived from the parameters given as arguments, so that
# each derivation is written once and not at every place a step reads it
STEPS_MACRO = "ndcg_per_query_steps"

# The macro's default cutoffs: one k, as the issue asks (`ndcg evaluate`'s are the registry's).
DEFAULT_KS = [10]
# Always computed whatever is asked (the registry's measures' note): the ndcg family.
ALWAYS = "ndcg"
FRACTIONAL_LABELS = "allow_fractional_labels"
# What query_table reads for an input whose argument is no name or path (refused): no rows.
NO_INPUT = "ndcg_no_input"


def parameters() -> list[tuple[str, exp.Expr]]:
    """``(name, default)`` of each named parameter: every variable of the registry's conventions
    but the derived ones, in the registry's order, its default the registry's."""
    defaults = Evaluation()
    named = []
    for convention in CONVENTIONS:
        for variable in convention.variables:
            if variable.name in DERIVED:
                continue
            value = DEFAULT_KS if variable.name == "ks" else variable.value(defaults)
            named.append((variable.name, literal(value, variable.spark_type)))
    # the one validation option that changes a verdict in SQL: the command line's --allow-fractional-labels
    named.append((FRACTIONAL_LABELS, literal(OPTION[FRACTIONAL_LABELS].default, "BOOLEAN")))
    # the command line's --run-format and --qrels-format
    named += [(f"{role}_format", literal(None, "STRING")) for role in ("run", "qrels")]
    return named


def _format_by_ending(argument: str, ending: str) -> str:
    # a path, a glob or, cast to text, a list ('[a.txt, b.txt]', "['a,b.txt']"): its last name's ending
    return f"regexp_matches(cast({argument} as varchar), '\\.{ending}''?\\]?$', 'i')"


def input_variables(role: str) -> dict[str, str]:
    """The values the input views read for ``role`` (``run`` or ``qrels``), as SQL over the
    macro's parameters, constant when DuckDB binds the call (so that ``query_table`` and
    ``read_text`` take them): ``<role>_read_as``, the format (``run_format``, else the name's
    ending: ``.txt`` TREC as the command line reads it, ``.csv``, ``.tsv``, anything else
    query_table's ``parquet``; ``none`` for an argument that is not text); ``<role>_paths``, the
    argument as a list; ``<role>_source``,
    what query_table reads; ``<role>_text_paths``, what read_text reads; ``<role>_table``, whether
    query_table reads the argument itself (a table, a view or Parquet)."""
    argument, asked = role, f"{role}_format"
    # one list of names whether the argument is a name or a list of them
    paths = (
        f"cast(if(typeof({argument}) = 'VARCHAR', cast([{argument}] as varchar), cast({argument} as varchar)) "
        "as varchar[])"
    )
    endings = " ".join(
        f"when {_format_by_ending(argument, ending)} then '{form}'"
        for ending, form in (("txt", "trec"), ("csv", "csv"), ("tsv", "tsv"))
    )
    read_as = (
        f"coalesce(lower({asked}), case when typeof({argument}) not in ('VARCHAR', 'VARCHAR[]') then 'none' "
        f"{endings} else 'parquet' end)"
    )
    text = f"list_contains({list(TEXT_FORMATS)!r}, {read_as})"
    return {
        f"{role}_paths": paths,
        f"{role}_read_as": read_as,
        f"{role}_source": (
            f"case when {read_as} = 'parquet' then {paths} when {text} then ['{role}_text_rows'] "
            f"else ['{NO_INPUT}'] end"
        ),
        f"{role}_text_paths": f"if({text}, {paths}, []::varchar[])",
        f"{role}_table": f"{read_as} = 'parquet'",
    }


INPUT_VARIABLES: dict[str, str] = {**input_variables("run"), **input_variables("qrels")}


def _text_list(values: list[str] | tuple[str, ...]) -> exp.Expr:
    return literal(list(values), "ARRAY<STRING>")


def _bind(
    tree: exp.Expr, parameter_names: set[str] | frozenset[str], inserted: list[exp.Expr], run_named: str
) -> exp.Expr:

    def parameter(name: str) -> exp.Expr:
        column = exp.column(name)
        inserted.append(column)
        return column

    def bind(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable"):
            return node
        name = node.expressions[0].name
        if name in parameter_names or name in ("run", "qrels"):
            return parameter(name)
        if name == RUN_PATH:
            named = sqlglot.parse_one(run_named, read="duckdb")
            inserted.extend(named.find_all(exp.Column))
            return named
        if name in INPUT_VARIABLES:
            computed = sqlglot.parse_one(INPUT_VARIABLES[name], read="duckdb")
            inserted.extend(computed.find_all(exp.Column))
            return computed
        if name in DERIVED:
            # the parameters it reads, as they stand in it (sqlglot's builders copy nodes)
            computed = derived(name, exp.column)
            inserted.extend(computed.find_all(exp.Column))
            return computed
        raise ValueError(f"the SQL reads variable {name!r}, which the macros have no parameter for")

    return tree.transform(bind)


def _check_no_column_named_as_a_parameter(tree: exp.Expr, names: set[str], inserted: list[exp.Expr]) -> None:
    """DuckDB replaces every unqualified column named as a parameter by the argument: a column
    of the SQL so named would silently read the argument instead."""
    ours = {id(node) for node in inserted}
    for column in tree.find_all(exp.Column):
        if not column.table and column.name in names and id(column) not in ours:
            raise ValueError(f"the SQL reads a column {column.name!r} unqualified, named as a macro parameter")


def _parameter(name: str) -> exp.Expr:
    """A macro parameter, written as the SQL files read a value (bound by :func:`_bind`)."""
    return exp.Anonymous(this="getvariable", expressions=[exp.Literal.string(name)])


def _error(message: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this="error", expressions=[message])


# The files whose views are the first CTEs of the macros, in order
INPUT_FILES = (
    "macro_text_inputs.sql",
    "macro_text_rows.sql",
    "macro_found_columns.sql",
    "macro_inputs.sql",
    "macro_qrels_inputs.sql",
    "aligned_inputs.sql",
)

# The macro a message names: the one the user called, which passes its name to the table macro
CALLER = "caller"
# The run as the list weights' messages name it (sql/ndcg.sql's variable), in a macro: the macro
# called, then the run given, as the refusals name them
RUN_PATH = "run_path"
RUN_NAMED_BY_CALLER = f"{CALLER} || ': ' || cast(run as varchar)"
# The list weights (sql/list_weights.sql), computed in the steps for ndcg_summary's means alone
# (ndcg_per_query weighs no mean), as columns of the per-query table: name in the table -> in the view
LIST_WEIGHT_COLUMNS = {
    "list_weight": "weight",
    "list_weight_relevant": "weight_relevant",
    "list_weight_listed": "weight_listed",
}


def _input_ctes() -> list[exp.CTE]:
    """The views of the macros' input files (text first, then the inputs as given, then aligned) as CTEs."""
    trees = [tree for name in INPUT_FILES for tree in _parse(name, sql_file(name))]
    return [
        exp.CTE(this=tree.expression, alias=exp.TableAlias(this=exp.to_identifier(tree.this.name))) for tree in trees
    ]


def _wanted(summary: bool) -> exp.Expr:
    """The names of the columns asked for, in SQL over the parameters."""
    keys = ["k", "queries"] if summary else ["query_id", "k"]
    parts: list[exp.Expr] = [_text_list([*keys, *measure_columns((ALWAYS,))])]
    for family in FAMILIES:
        if family == ALWAYS:
            continue
        parts.append(
            exp.Coalesce(
                this=exp.If(
                    this=exp.Anonymous(
                        this="list_contains", expressions=[_parameter("measures"), exp.Literal.string(family)]
                    ),
                    true=_text_list(measure_columns((family,))),
                ),
                expressions=[_text_list([])],
            )
        )
    bounds = ["ndcg_min", "ndcg_max", "tie_sensitive_queries" if summary else "ties_straddle_k"]
    parts.append(
        exp.Coalesce(this=exp.If(this=_parameter("tie_bounds"), true=_text_list(bounds)), expressions=[_text_list([])])
    )
    return exp.Anonymous(this="flatten", expressions=[exp.Array(expressions=parts)])


def _call(table: str, *arguments: exp.Expr) -> exp.Expr:
    return exp.Anonymous(this=table, expressions=list(arguments))


def steps_derived() -> list[str]:
    """The derived variables the steps read, in :data:`DERIVED`'s order: the positional
    parameters of ``ndcg_per_query_steps`` after ``run`` and ``qrels``."""
    read = {
        node.expressions[0].name
        for node in composed_per_query().find_all(exp.Anonymous)
        if node.name.lower() == "getvariable"
    }
    return [name for name in DERIVED if name in read]


def steps_query() -> exp.Expr:
    """The body of ``ndcg_per_query_steps``: the steps over the macro's inputs, refused (naming
    the macro the user called) where an argument or the run is not what the registry accepts."""
    per_query = _strip_comments(composed_per_query()).expression
    steps = per_query.args["with_"].expressions
    per_query.set("with_", None)
    # the list weights, for ndcg_summary alone: for ndcg_per_query their where folds to false
    weights = _view_query("list_weights.sql")
    summary_calls = exp.EQ(this=_parameter(CALLER), expression=exp.Literal.string(SUMMARY_MACRO))
    weights.set("where", exp.Where(this=exp.and_(summary_calls, weights.args["where"].this)))
    with_weights = (
        exp.select(
            exp.Column(this=exp.Star(), table=exp.to_identifier("per_query")),
            *(exp.column(column, "list_weights").as_(name) for name, column in LIST_WEIGHT_COLUMNS.items()),
        )
        .from_("per_query")
        .join("list_weights", on="per_query.query_id = list_weights.query_id", join_type="left")
    )
    with_weights.set(
        "with_",
        exp.With(
            expressions=[
                *steps,
                exp.CTE(this=per_query, alias=exp.TableAlias(this=exp.to_identifier("per_query"))),
                exp.CTE(this=weights, alias=exp.TableAlias(this=exp.to_identifier("list_weights"))),
            ]
        ),
    )
    checked = (
        exp.select(exp.Star())
        .from_(exp.Subquery(this=with_weights, alias=exp.TableAlias(this=exp.to_identifier("result"))))
        .where(
            exp.EQ(
                this=exp.Subquery(this=exp.select(exp.func("count", exp.column("refused"))).from_("refusals")),
                expression=exp.Literal.number(0),
            )
        )
    )
    # the inputs' CTEs are read by the refusals as well: at the top, with the refusals
    refused = exp.CTE(this=refusals_query("macro"), alias=exp.TableAlias(this=exp.to_identifier("refusals")))
    checked.set("with_", exp.With(expressions=[*_input_ctes(), refused]))
    return _bound(checked, derived_given=frozenset(steps_derived()), run_named=RUN_NAMED_BY_CALLER)


def table_query() -> exp.Expr:
    """The body of ``ndcg_per_query_table``: ``ndcg_per_query_steps`` with the values the registry
    derives from the parameters, computed in SQL (:mod:`pipeline.derived`), and every parameter
    passed on."""
    derived_values = [_parameter(name) for name in steps_derived()]
    named = [exp.PropertyEQ(this=exp.to_identifier(CALLER), expression=_parameter(CALLER))]
    named += [exp.PropertyEQ(this=exp.to_identifier(name), expression=_parameter(name)) for name, _ in parameters()]
    call = _call(STEPS_MACRO, _parameter("run"), _parameter("qrels"), *derived_values, *named)
    return _bound(exp.select(exp.Star()).from_(exp.Table(this=call)))


def _table_call(caller: str) -> exp.Expr:
    """``ndcg_per_query_table(run, qrels, caller := '<caller>', ks := ks, ...)``: every
    parameter passed on."""
    named = [exp.PropertyEQ(this=exp.to_identifier(CALLER), expression=exp.Literal.string(caller))]
    named += [exp.PropertyEQ(this=exp.to_identifier(name), expression=_parameter(name)) for name, _ in parameters()]
    return _call(TABLE_MACRO, _parameter("run"), _parameter("qrels"), *named)


def _columns_of(wanted: exp.Expr) -> exp.Expr:
    return exp.Columns(
        this=exp.Lambda(
            this=exp.Anonymous(this="list_contains", expressions=[wanted, exp.column("c")]),
            expressions=[exp.to_identifier("c")],
        )
    )


def macro_query(summary: bool) -> exp.Expr:
    """The body of ``ndcg_per_query`` (or, with ``summary``, of ``ndcg_summary``): the columns
    asked of ``ndcg_per_query_table`` (or of ``sql/summary.sql`` over it)."""
    macro = SUMMARY_MACRO if summary else PER_QUERY_MACRO
    table = exp.Table(this=_table_call(macro))
    if not summary:
        return _bound(exp.select(_columns_of(_wanted(summary))).from_(table))
    plain = _view_query("summary.sql")
    own = plain.args["with_"].expressions
    plain.set("with_", None)
    unweighted = exp.Is(this=_parameter("doc_weight_col"), expression=exp.Null())
    # the list weights the steps computed for this macro, one row a query
    weights = (
        exp.select(
            exp.column("query_id"), *(exp.column(name).as_(column) for name, column in LIST_WEIGHT_COLUMNS.items())
        )
        .distinct()
        .from_("per_query")
    )
    ctes = [("per_query", exp.select(exp.Star()).from_(table)), *((cte.alias, cte.this) for cte in own)]
    ctes += [("plain_summary", plain), ("list_weights", weights)]
    ctes += [("unrepresentable_weights", _view_query("list_weight_range.sql"))]
    ctes += [("list_weighted_summary", _view_query("list_weighted_summary.sql"))]
    result = exp.Union(
        this=exp.select(exp.Star()).from_("plain_summary").where(unweighted),
        expression=exp.select(exp.Star()).from_("list_weighted_summary"),
        distinct=False,
        by_name=True,
    )
    result.set(
        "with_",
        exp.With(
            expressions=[exp.CTE(this=body, alias=exp.TableAlias(this=exp.to_identifier(name))) for name, body in ctes]
        ),
    )
    checked = exp.select(_columns_of(_wanted(summary))).from_(
        exp.Subquery(this=result, alias=exp.TableAlias(this=exp.to_identifier("result")))
    )
    named = f"'{SUMMARY_MACRO}: ' || cast(run as varchar)"
    return _bound(checked.order_by(exp.Ordered(this=exp.column("k"), nulls_first=True)), run_named=named)


def _view_query(name: str) -> exp.Expr:
    """The query of the one view ``sql/<name>`` creates (a comment after its last statement is
    no statement)."""
    (view,) = (tree for tree in _parse(name, sql_file(name)) if isinstance(tree, exp.Create))
    return _strip_comments(view).expression


def _bound(query: exp.Expr, derived_given: frozenset[str] = frozenset(), run_named: str = "run") -> exp.Expr:
    """``query`` with the variables the SQL reads as the macro's parameters; the derived ones
    computed from them, but those of ``derived_given``, which are parameters too; ``run_path``
    (the list weights' messages) as ``run_named``."""
    names = {name for name, _ in parameters()} | {"run", "qrels", CALLER} | derived_given
    inserted: list[exp.Expr] = []
    bound = _bind(query, names, inserted, run_named)
    _check_no_column_named_as_a_parameter(bound, names, inserted)
    return bound


def macros_sql() -> str:
    """The text of ``sql/generated/macros.sql``: the table macro both others read, then both, each
    with a one-argument overload that says ``qrels`` is missing (DuckDB's own message lists the
    candidates but names no argument)."""
    named = ", ".join(f"{name} := {default.sql('duckdb')}" for name, default in parameters())

    def text(query: exp.Expr) -> str:
        return query.sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)

    given = ", ".join(steps_derived())
    parts = [
        "-- macros.sql: DuckDB table macros ndcg_per_query(run, qrels, ...) and ndcg_summary(run, qrels, ...).",
        "-- Generated by pipeline/macros.py from the steps of sql/ (make generate); do not edit. Read it into",
        "-- DuckDB (.read macros.sql), then e.g.",
        "--   select * from ndcg_per_query('run.parquet', 'qrels.parquet', ks := [5, 10], measures := ['ndcg', 'P']);",
        "-- run and qrels: a table or view name, or a Parquet path, glob or list. docs/sql.md lists the parameters.",
        f"-- Both read {TABLE_MACRO}, the per-query table with every column, which reads {STEPS_MACRO}, the",
        "-- steps given the values derived from the parameters; call the first two, not these.",
        "",
        f"create or replace macro {STEPS_MACRO}(run, qrels, {given}, {CALLER} := '{TABLE_MACRO}', {named}) as table (",
        f"{text(steps_query())}",
        ");",
        "",
        f"create or replace macro {TABLE_MACRO}(run, qrels, {CALLER} := '{TABLE_MACRO}', {named}) as table (",
        f"{text(table_query())}",
        ");",
        "",
    ]
    for macro, summary in ((PER_QUERY_MACRO, False), (SUMMARY_MACRO, True)):
        missing = _error(
            exp.Literal.string(f"{macro}: qrels is missing: call {macro}(run, qrels, ks := [...], ...)")
        ).sql("duckdb")
        parts.append(
            f"create or replace macro {macro}(run) as table (select {missing} as refused),\n"
            f"(run, qrels, {named}) as table (\n{text(macro_query(summary))}\n);\n"
        )
    return "\n".join(parts)
