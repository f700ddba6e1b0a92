"""The variables the registry derives from an evaluation, as SQL over the variables a user sets.

The engines bind them from Python (:class:`pipeline.registry.Evaluation`: the bounds of the
signals the asked measures' counters read, whether num_ret's count is read, the curves read, the
measure columns asked, the summary's aggregates). A user of the SQL without Python sets only the
measures and the conventions, so the same values are computed in SQL from those: by
``sql/generated/derived_variables.sql`` in the duckdb CLI (``sql/ndcg.sql`` reads it first), and
by the table macros from their parameters (:mod:`pipeline.macros`). Both are generated here from
the registry, on the syntax tree (``make generate``); tests check that the SQL gives the engines'
values for every choice.
"""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

from pipeline.registry import (
    COUNTERS,
    CURVES,
    MEASURE_FAMILIES,
    MEASURES,
    PRIMARY_MEASURE,
    RELEVANCE_LEVEL,
    RETRIEVED,
    SIGNALS,
    SIGNALS_DUCKDB_TYPE,
    SIGNALS_TYPE,
    Signal,
    measure_columns,
    signals_of,
    summary_variables,
)
from pipeline.transpile import written_in

# The derived variables, in the order they are set, and the Spark type of each.
DERIVED: dict[str, str] = {
    "signals": SIGNALS_TYPE,
    "count_retrieved": "BOOLEAN",
    "curves": "ARRAY<STRING>",
    "measure_columns": "ARRAY<STRING>",
    "sum_measures": "ARRAY<STRING>",
    "geometric_mean_measures": "ARRAY<STRING>",
}
# What they derive from: the variables a user sets (the measures, the threshold the signals'
# bounds follow, the conventions under which a measure reads more counters).
READ = tuple(dict.fromkeys(["measures", "relevance_threshold", *(c for m in MEASURES for c, _, _ in m.counters_under)]))

Reader = Callable[[str], exp.Expr]


def getvariable(name: str) -> exp.Expr:
    """How the duckdb CLI reads a variable: ``getvariable('name')``."""
    return exp.Anonymous(this="getvariable", expressions=[exp.Literal.string(name)])


def _texts(values: list[str] | tuple[str, ...]) -> exp.Expr:
    return exp.cast(exp.Array(expressions=[exp.Literal.string(v) for v in values]), "VARCHAR[]", dialect="duckdb")


def _any_asked(families: list[str], read: Reader) -> exp.Expr:
    """Whether ``measures`` names one of ``families`` (the NDCG family is always asked)."""
    if PRIMARY_MEASURE in families:
        return exp.true()
    if not families:
        return exp.false()
    found = exp.Anonymous(this="list_has_any", expressions=[read("measures"), _texts(families)])
    return exp.Coalesce(this=found, expressions=[exp.false()])


def _reading(reads: Callable[[tuple[str, ...]], bool], read: Reader) -> exp.Expr:
    """Whether a measure asked reads counters that ``reads`` holds for: one that always reads
    them, or one that reads them under a convention's value (its counters_under), asked with it."""
    always = list(dict.fromkeys(m.selected_by for m in MEASURES if reads(m.counters)))
    condition = _any_asked(always, read)
    for measure in MEASURES:
        for convention, value, counters in measure.counters_under:
            if reads(counters) and measure.selected_by not in always:
                chosen = exp.EQ(this=read(convention), expression=exp.Literal.string(value))
                under = exp.Coalesce(this=chosen, expressions=[exp.false()])
                condition = exp.or_(condition, exp.and_(_any_asked([measure.selected_by], read), under))
    return condition


def _signal_read(signal: str, read: Reader) -> exp.Expr:
    return _reading(lambda counters: signal in signals_of(counters), read)


def _bound(value: object, threshold: exp.Expr, closed_when_set: bool) -> tuple[exp.Expr, exp.Expr]:
    """A signal's bound as SQL (:meth:`pipeline.registry.Signal.bounds`): ``(value, closed)``."""
    if value == RELEVANCE_LEVEL:
        zero = exp.Literal.number(0.0)
        level = exp.func("greatest", exp.Coalesce(this=threshold, expressions=[zero]), zero.copy())
        is_set = exp.not_(threshold.is_(exp.null()))
        return exp.cast(level, "DOUBLE"), is_set if closed_when_set else exp.not_(is_set.copy())
    if value is None:
        return exp.cast(exp.null(), "DOUBLE"), exp.Boolean(this=closed_when_set)
    return exp.cast(exp.Literal.number(float(value)), "DOUBLE"), exp.Boolean(this=closed_when_set)  # type: ignore[arg-type]


def _signal_struct(signal: Signal, read: Reader) -> exp.Expr:
    threshold = read("relevance_threshold")
    low, low_closed = _bound(signal.at_least, threshold, True)
    high, high_closed = _bound(signal.below, threshold, False)
    fields = {"name": exp.Literal.string(signal.name), "low": low, "low_closed": low_closed}
    fields |= {"high": high, "high_closed": high_closed}
    fields |= {"precision_sum": _reading(lambda counters: f"{signal.name}_precision_sum" in counters, read)}
    return exp.Struct(expressions=[exp.PropertyEQ(this=exp.to_identifier(k), expression=v) for k, v in fields.items()])


def _chosen(items: list[tuple[exp.Expr, exp.Expr]], empty: exp.Expr) -> exp.Expr:
    """``flatten([if(condition, [item], []), ...])``: the items whose condition holds, in order."""
    chosen = [
        exp.If(this=condition, true=exp.Array(expressions=[item]), false=empty.copy()) for condition, item in items
    ]
    return exp.Anonymous(this="flatten", expressions=[exp.Array(expressions=chosen)])


def derived(name: str, read: Reader = getvariable) -> exp.Expr:
    """The SQL of the derived variable ``name``, reading the variables it derives from with
    ``read`` (``getvariable`` in the duckdb CLI, a macro's parameter in the macros)."""
    if name == "signals":
        structs = _chosen(
            [(_signal_read(s.name, read), _signal_struct(s, read)) for s in SIGNALS],
            exp.cast(exp.Array(expressions=[]), SIGNALS_DUCKDB_TYPE, dialect="duckdb"),
        )
        # none asked: null, as the engines bind it (sql/counters/signals.sql then selects no row)
        listed = exp.cast(structs, SIGNALS_DUCKDB_TYPE, dialect="duckdb")
        return exp.Nullif(
            this=listed, expression=exp.cast(exp.Array(expressions=[]), SIGNALS_DUCKDB_TYPE, dialect="duckdb")
        )
    if name == "count_retrieved":
        return _signal_read(RETRIEVED, read)
    if name == "curves":
        return _chosen(
            [
                (
                    _any_asked(list(dict.fromkeys(m.selected_by for m in MEASURES if m.curve == curve)), read),
                    exp.Literal.string(curve),
                )
                for curve in CURVES
            ],
            _texts([]),
        )
    if name == "measure_columns":
        chosen = [
            exp.If(this=_any_asked([family], read), true=_texts(measure_columns((family,))), false=_texts([]))
            for family in MEASURE_FAMILIES
        ]
        return exp.Anonymous(this="flatten", expressions=[exp.Array(expressions=chosen)])
    if name in ("sum_measures", "geometric_mean_measures"):
        return _texts(summary_variables()[name])
    raise ValueError(f"{name!r} is not a derived variable; they are {', '.join(DERIVED)}")


def derived_variables_sql() -> str:
    """The text of ``sql/generated/derived_variables.sql``."""
    lines = [
        "-- derived_variables.sql: the variables the registry derives from the measures and conventions set.",
        "-- Generated by pipeline/derived.py from the registry (make generate); do not edit. sql/ndcg.sql",
        f"-- reads it first. Reads: {', '.join(READ)} (unset measures: NDCG alone).",
        f"-- Sets, from them, as the engines bind them: {', '.join(DERIVED)}.",
        "",
    ]
    for name in DERIVED:
        expression = derived(name).sql("duckdb", pretty=False, unsupported_level=sqlglot.ErrorLevel.RAISE)
        lines.append(f"SET VARIABLE {name} = {expression};")
    return "\n".join(lines) + "\n"


# sql/counters/counters.sql: the one step that lists the registry's counters, as columns. Made
# from this skeleton, each placeholder column replaced by the counters of its kind.
_COUNTERS_SKELETON = """
create or replace temp view counters as
with
at_cutoffs as (
    select s.query_id, s.k, rank_counters
    from sums_at_cutoffs as s
    where s.signal is not null and getvariable('signals') is not null
    group by s.query_id, s.k
),
in_qrels as (
    select s.query_id, judgments_counters
    from signals as s
    where s.source = 'judgments'
    group by s.query_id
),
final as (
    select evaluated_queries.query_id, cutoffs.k, every_counter
    from evaluated_queries
    cross join cutoffs
    left join at_cutoffs
        on evaluated_queries.query_id = at_cutoffs.query_id and cutoffs.k is not distinct from at_cutoffs.k
    left join in_qrels on evaluated_queries.query_id = in_qrels.query_id
)
select * from final
"""
# how each accumulation of a signal's rows at a cutoff becomes its counter (one row per signal)
_AT_CUTOFFS = {"found": "max", "precision_sum": "max", "first_rank": "max"}


def _filtered(function: str, argument: exp.Expr, signal: str) -> exp.Expr:
    """``function(argument) filter (where s.signal = '<signal>')``."""
    condition = exp.EQ(this=exp.column("signal", "s"), expression=exp.Literal.string(signal))
    return exp.Filter(this=exp.func(function, argument), expression=exp.Where(this=condition))


def counters_sql() -> str:
    """The text of ``sql/counters/counters.sql``: every evaluated query at each cutoff with the
    registry's counters (:data:`pipeline.registry.COUNTERS`) as columns, read off the signals'
    rows (found, first_rank, precision_sum at the cutoff; in_qrels of the judgments) and the
    evaluated queries (retrieved_in_ranking)."""
    tree = sqlglot.parse_one(_COUNTERS_SKELETON, read="duckdb")
    columns: dict[str, list[exp.Expr]] = {"rank_counters": [], "judgments_counters": [], "every_counter": []}
    for counter in COUNTERS:
        name = counter.name
        if counter.accumulation in _AT_CUTOFFS:
            aggregate = _filtered(
                _AT_CUTOFFS[counter.accumulation], exp.column(counter.accumulation, "s"), counter.signal
            )
            columns["rank_counters"].append(exp.alias_(aggregate, name))
            columns["every_counter"].append(exp.column(name, "at_cutoffs"))
        elif counter.accumulation == "in_qrels":
            columns["judgments_counters"].append(exp.alias_(_filtered("count", exp.Star(), counter.signal), name))
            # a query no judgment of the signal holds for: 0, as in the Polars engine
            count = exp.Coalesce(this=exp.column(name, "in_qrels"), expressions=[exp.Literal.number(0)])
            columns["every_counter"].append(exp.alias_(count, name))
        else:  # the count of the ranking itself
            columns["every_counter"].append(exp.column(name, "evaluated_queries"))
    for select in tree.find_all(exp.Select):
        items: list[exp.Expr] = []
        for item in select.expressions:
            placeholder = isinstance(item, exp.Column) and not item.table and item.name in columns
            items += columns[item.name] if placeholder else [item]
        select.set("expressions", items)
    body = tree.sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    header = [
        "-- counters.sql: every evaluated query at each cutoff, with the registry's counters as columns.",
        "-- Generated by pipeline/derived.py from the registry's COUNTERS (make generate); do not edit: a",
        "-- counter the registry adds is a column here. Reads: views evaluated_queries, cutoffs,",
        "-- sums_at_cutoffs and signals (sql/counters/).",
        "--",
        "-- Variables:",
        "--   SET VARIABLE signals = [{'name': 'relevant', 'low': 0.0, 'low_closed': false, 'high': NULL,"
        " 'high_closed': false}];",
        "--",
        "-- Creates: view counters (query_id, k, then each counter <signal>_<accumulation>): found,",
        "-- first_rank and precision_sum of a signal at k (null where no rank at or above k holds it,",
        "-- or signals is unset), in_qrels of a signal (how many of the query's judged documents it",
        "-- holds for, the same at every k; 0 for none), retrieved_in_ranking",
        "-- (sql/counters/evaluated_queries.sql).",
        "",
    ]
    return "\n".join(header) + body + ";\n"
