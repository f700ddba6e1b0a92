"""DuckDB table macros ``ndcg_per_query`` and ``ndcg_summary``, generated from the steps of ``sql/``.

``ndcg sql --macros`` prints them and the package ships them as ``sql/macros.sql``; once read
into DuckDB (``.read ndcg_macros.sql``, or executed from Python) they run from any folder::

    select * from ndcg_per_query('run.parquet', 'qrels.parquet', ks := [5, 10], gain := 'exponential')

There is no second copy of a formula here. The body of each macro is the transpiler's
composition of the steps (:func:`pipeline.transpile.composed_per_query`, and ``summary.sql``
over it), with, on the syntax tree:

- ``sql/macro_inputs.sql``'s views ``run`` and ``qrels`` as its first CTEs (``query_table`` of
  the macro's arguments: a table or view name, or a Parquet path, glob or list);
- each ``getvariable('x')`` of a convention replaced by the macro parameter ``x``, whose default
  is the registry's (``ks`` defaults to ``[10]``);
- the values the engines derive from the spec computed in SQL from ``measures``: the signals
  the measures' counters read, and the registry's sum and geometric-mean measures;
- a ``refusals`` CTE, read by the final select, that raises a message naming the argument for
  a value the registry does not accept, an unknown measure, a duplicate document under
  ``duplicates := 'error'``, and the options a macro cannot honour;
- the final select keeping only the columns asked for (no column NULL on every row).

Regenerate after a step changes: ``python -m pipeline.macros --write sql/macros.sql``.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from pipeline.registry import (
    CONVENTIONS,
    MEASURES,
    RETRIEVED,
    SIGNAL_NAMES,
    Evaluation,
    measure_columns,
    signals_of,
    summary_variables,
)
from pipeline.sql_files import generator_main, sql_file
from pipeline.transpile import _parse, _strip_comments, composed_per_query, literal, written_in

PER_QUERY_MACRO = "ndcg_per_query"
SUMMARY_MACRO = "ndcg_summary"

# The options whose meaning reads the order rows arrive in, which query_table does not expose.
ARRIVAL_OPTIONS: dict[str, str] = {"duplicates": "first", "ties": "input-order"}
# The macro's default cutoffs: one k, as the issue asks (`ndcg evaluate`'s are the registry's).
DEFAULT_KS = [10]
# Derived by the engines from the spec, so computed here in SQL (never a parameter).
DERIVED = ("signals",)
FAMILIES: tuple[str, ...] = tuple(dict.fromkeys(measure.selected_by for measure in MEASURES))
# Always computed whatever is asked (the registry's measures' note): the ndcg family.
ALWAYS = "ndcg"


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
    return named


def _text_list(values: list[str] | tuple[str, ...]) -> exp.Expr:
    return literal(list(values), "ARRAY<STRING>")


def _signals_of_measures() -> exp.Expr:
    """``measures`` (and the conventions that add counters to a measure: the registry's
    ``counters_under``) -> the signals their counters read, in the registry's order, as SQL."""
    readers = {
        signal: list(dict.fromkeys(m.selected_by for m in MEASURES if signal in signals_of(m.counters)))
        for signal in (*SIGNAL_NAMES, RETRIEVED)
    }
    # list_has_any(measures, <families reading s>), or a family that reads s under a
    # convention's value asked with that value; one case per signal
    items = []
    for signal, families in readers.items():
        reads: exp.Expr = exp.Anonymous(this="list_has_any", expressions=[exp.column("measures"), _text_list(families)])
        for m in MEASURES:
            for convention, value, counters in m.counters_under:
                if signal in signals_of(counters):
                    asked = exp.Anonymous(
                        this="list_contains", expressions=[exp.column("measures"), exp.Literal.string(m.selected_by)]
                    )
                    reads = exp.or_(
                        reads,
                        exp.and_(asked, exp.EQ(this=exp.column(convention), expression=exp.Literal.string(value))),
                    )
        items.append(exp.If(this=reads, true=_text_list([signal])))
    return exp.Anonymous(
        this="flatten",
        expressions=[exp.Array(expressions=[exp.Coalesce(this=item, expressions=[_text_list([])]) for item in items])],
    )


def _bind(tree: exp.Expr, parameter_names: set[str], inserted: list[exp.Expr]) -> exp.Expr:
    summary_values = summary_variables()

    def bind(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable"):
            return node
        name = node.expressions[0].name
        if name in parameter_names or name in ("run", "qrels"):
            column = exp.column(name)
            inserted.append(column)
            return column
        if name == "signals":
            derived = _signals_of_measures()
            inserted.extend(derived.find_all(exp.Column))
            return derived
        if name in summary_values:
            return literal(summary_values[name], "ARRAY<STRING>")
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


def _concat(*parts: exp.Expr | str) -> exp.Expr:
    nodes = [exp.Literal.string(p) if isinstance(p, str) else p for p in parts]
    result = nodes[0]
    for node in nodes[1:]:
        result = exp.DPipe(this=result, expression=node, safe=True)
    return result


def _shown(name: str) -> exp.Expr:
    """The argument as written in a message: quoted text, or null."""
    return exp.Coalesce(
        this=_concat("'", exp.cast(_parameter(name), "VARCHAR"), "'"), expressions=[exp.Literal.string("null")]
    )


def _refusal(macro: str, condition: exp.Expr, *message: exp.Expr | str) -> exp.Select:
    return exp.select(exp.alias_(_error(_concat(f"{macro}: ", *message)), "refused")).where(condition)


def _refusals(macro: str) -> list[exp.Select]:
    """One select per rule, each raising its message where its condition holds."""
    refusals = []
    for convention in CONVENTIONS:
        (variable, *_) = convention.variables
        if not convention.choices:
            continue
        name = variable.name
        allowed = [value for value in convention.values if ARRIVAL_OPTIONS.get(name) != value]
        condition = exp.or_(
            _parameter(name).is_(exp.null()),
            exp.not_(exp.Anonymous(this="list_contains", expressions=[_text_list(allowed), _parameter(name)])),
        )
        extra = " (or a level map as gain_map := map {1: 3, 2: 9})" if name == "gain" else ""
        arrival = (
            f"; {ARRIVAL_OPTIONS[name]!r} reads the order rows arrive in, which a table macro does not see"
            " (ndcg evaluate honours it)"
            if name in ARRIVAL_OPTIONS
            else ""
        )
        refusals.append(
            _refusal(
                macro, condition, f"{name} must be one of {', '.join(allowed)}{extra}; got ", _shown(name), arrival
            )
        )
    unknown = exp.Anonymous(
        this="list_filter",
        expressions=[
            _parameter("measures"),
            exp.Lambda(
                this=exp.not_(exp.Anonymous(this="list_contains", expressions=[_text_list(FAMILIES), exp.column("m")])),
                expressions=[exp.to_identifier("m")],
            ),
        ],
    )
    refusals.append(
        _refusal(
            macro,
            exp.or_(_parameter("measures").is_(exp.null()), exp.func("len", unknown.copy()) > exp.Literal.number(0)),
            f"measures must name measures among {', '.join(FAMILIES)}; got unknown ",
            exp.cast(unknown, "VARCHAR"),
        )
    )
    bad_ks = exp.Anonymous(
        this="list_filter",
        expressions=[
            _parameter("ks"),
            exp.Lambda(
                this=exp.or_(exp.column("k").is_(exp.null()), exp.column("k") < exp.Literal.number(1)),
                expressions=[exp.to_identifier("k")],
            ),
        ],
    )
    refusals.append(
        _refusal(
            macro,
            exp.or_(_parameter("ks").is_(exp.null()), exp.func("len", bad_ks.copy()) > exp.Literal.number(0)),
            "ks must be positive integers; got ",
            exp.cast(_parameter("ks"), "VARCHAR"),
        )
    )
    refusals.append(
        _refusal(
            macro,
            _parameter("max_results") < exp.Literal.number(1),
            "max_results must be a positive integer or null; got ",
            _shown("max_results"),
        )
    )
    persistence = _parameter("rbp_persistence")
    refusals.append(
        _refusal(
            macro,
            exp.or_(
                persistence.is_(exp.null()),
                exp.or_(persistence <= exp.Literal.number(0), persistence >= exp.Literal.number(1)),
            ),
            "rbp_persistence must be strictly between 0 and 1; got ",
            _shown("rbp_persistence"),
        )
    )
    duplicate = sqlglot.parse_one(
        "select run.query_id, run.doc_id from run group by run.query_id, run.doc_id having count(*) > 1 limit 1",
        read="duckdb",
        into=exp.Select,
    ).subquery("duplicate")
    refusals.append(
        exp.select(
            exp.alias_(
                _error(
                    _concat(
                        f"{macro}: the run has document ",
                        exp.cast(exp.column("doc_id", "duplicate"), "VARCHAR"),
                        " more than once in query ",
                        exp.cast(exp.column("query_id", "duplicate"), "VARCHAR"),
                        " (duplicates := 'max-score' keeps its best-scored row)",
                    )
                ),
                "refused",
            )
        )
        .from_(duplicate)
        .where(_parameter("duplicates").eq(exp.Literal.string("error")))
    )
    return refusals


def _input_ctes() -> list[exp.CTE]:
    ctes = []
    for tree in _parse("macro_inputs.sql", sql_file("macro_inputs.sql")):
        ctes.append(exp.CTE(this=tree.expression, alias=exp.TableAlias(this=exp.to_identifier(tree.this.name))))
    return ctes


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


def macro_query(summary: bool) -> exp.Expr:
    """The body of ``ndcg_per_query`` (or, with ``summary``, of ``ndcg_summary``)."""
    macro = SUMMARY_MACRO if summary else PER_QUERY_MACRO
    per_query = _strip_comments(composed_per_query()).expression
    steps = per_query.args["with_"].expressions
    per_query.set("with_", exp.With(expressions=[*_input_ctes(), *steps]))
    if summary:
        (summary_tree,) = _parse("summary.sql", sql_file("summary.sql"))
        result = _strip_comments(summary_tree).expression
        own = result.args["with_"].expressions
        per_query_cte = exp.CTE(this=per_query, alias=exp.TableAlias(this=exp.to_identifier("per_query")))
        result.set("with_", exp.With(expressions=[per_query_cte, *own]))
    else:
        result = per_query
    refusals = _refusals(macro)
    union: exp.Expr = refusals[0]
    for select in refusals[1:]:
        union = exp.union(union, select, distinct=False)
    checked = (
        exp.select(
            exp.Columns(
                this=exp.Lambda(
                    this=exp.Anonymous(this="list_contains", expressions=[_wanted(summary), exp.column("c")]),
                    expressions=[exp.to_identifier("c")],
                )
            )
        )
        .from_(exp.Subquery(this=result, alias=exp.TableAlias(this=exp.to_identifier("result"))))
        .with_("refusals", union)
        .where(
            exp.EQ(
                this=exp.Subquery(this=exp.select(exp.func("count", exp.column("refused"))).from_("refusals")),
                expression=exp.Literal.number(0),
            )
        )
    )
    # the inputs' CTEs are read by the refusals as well: lift the steps' chain to the top
    inner_with = per_query.args["with_"]
    inputs = inner_with.expressions[:2]
    inner_with.set("expressions", inner_with.expressions[2:])
    checked.set("with_", exp.With(expressions=[*inputs, *checked.args["with_"].expressions]))
    if summary:
        checked = checked.order_by(exp.Ordered(this=exp.column("k"), nulls_first=True))
    names = {name for name, _ in parameters()} | {"run", "qrels"}
    inserted: list[exp.Expr] = []
    bound = _bind(checked, names, inserted)
    _check_no_column_named_as_a_parameter(bound, names, inserted)
    return bound


def macros_sql() -> str:
    """The text of ``sql/macros.sql``: both macros, each with a one-argument overload that says
    ``qrels`` is missing (DuckDB's own message lists the candidates but names no argument)."""
    named = ", ".join(f"{name} := {default.sql('duckdb')}" for name, default in parameters())
    parts = [
        "-- macros.sql: DuckDB table macros ndcg_per_query(run, qrels, ...) and ndcg_summary(run, qrels, ...).",
        "-- Generated by pipeline/macros.py from the steps of sql/ (python -m pipeline.macros --write",
        "-- sql/macros.sql); do not edit. Read it into DuckDB (.read macros.sql), then e.g.",
        "--   select * from ndcg_per_query('run.parquet', 'qrels.parquet', ks := [5, 10], measures := ['ndcg', 'P']);",
        "-- run and qrels: a table or view name, or a Parquet path, glob or list. docs/sql.md lists the parameters.",
        "",
    ]
    for macro, summary in ((PER_QUERY_MACRO, False), (SUMMARY_MACRO, True)):
        missing = _error(
            exp.Literal.string(f"{macro}: qrels is missing: call {macro}(run, qrels, ks := [...], ...)")
        ).sql("duckdb")
        body = macro_query(summary).sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
        parts.append(
            f"create or replace macro {macro}(run) as table (select {missing} as refused),\n"
            f"(run, qrels, {named}) as table (\n{body}\n);\n"
        )
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    return generator_main("python -m pipeline.macros", __doc__.splitlines()[0], macros_sql, argv)


if __name__ == "__main__":
    raise SystemExit(main())
