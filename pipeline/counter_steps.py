"""The steps of the counters stage that name the registry's signals and counters, generated from
it (``make generate``): a signal or a counter is an entry of :mod:`pipeline.registry.counters`,
never a hand-written line of SQL.

- ``sql/counters/signals.sql``: at each rank of every ranking, and at each judged document,
  whether each signal asked holds for its label (a column per signal), its predicate written
  from the signal's range of labels (:attr:`~pipeline.registry.Signal.at_least`,
  :attr:`~pipeline.registry.Signal.below`; the relevance level follows ``relevance_threshold``);
- ``sql/counters/running_sums.sql``: in rank order, CG and DCG of each ranking and each rank
  counter asked (``found``, ``first_rank``, ``precision_sum`` of a signal), in one pass;
- ``sql/counters/counters.sql``: each evaluated query with its per-query counters (``in_qrels``
  of a signal: how many of its judged documents the signal holds for).

Each is the transpiler's parse of a skeleton here, its placeholder columns replaced by a column
per signal or counter on the syntax tree, and written in DuckDB's dialect under a header that
says it is generated. The Polars engine's twins build the same columns from the same registry.
"""

from __future__ import annotations

import textwrap

import sqlglot
from sqlglot import exp

from pipeline.registry import COUNTERS, RELEVANCE_LEVEL, SIGNALS, Signal
from pipeline.transpile import written_in

RANK_ACCUMULATIONS = ("found", "first_rank", "precision_sum")


def _signal(name: str) -> exp.Expr:
    """Whether ``measures`` asks for a counter of the signal (``signals`` names it)."""
    contains = exp.Anonymous(this="list_contains", expressions=[_variable("signals"), exp.Literal.string(name)])
    return exp.Coalesce(this=contains, expressions=[exp.false()])


def _variable(name: str) -> exp.Expr:
    return exp.Anonymous(this="getvariable", expressions=[exp.Literal.string(name)])


def _level(label: exp.Expr, at_or_above: bool) -> exp.Expr:
    """``label`` at or above the relevance level (``at_or_above``), or below it: ``label >=
    max(relevance_threshold, 0)``, or ``label > 0`` without a threshold."""
    threshold = _variable("relevance_threshold")
    unset = threshold.is_(exp.null())
    zero = exp.Literal.number(0)
    level = exp.func("greatest", threshold.copy(), zero.copy())
    if at_or_above:
        return exp.Case(ifs=[exp.If(this=unset, true=exp.GT(this=label.copy(), expression=zero))]).else_(
            exp.GTE(this=label.copy(), expression=level)
        )
    return exp.Case(ifs=[exp.If(this=unset, true=exp.LTE(this=label.copy(), expression=zero))]).else_(
        exp.LT(this=label.copy(), expression=level)
    )


def holds(signal: Signal, label: exp.Expr) -> exp.Expr:
    """Whether ``signal`` holds for ``label``, as SQL (never for a null label: not judged)."""
    conditions: list[exp.Expr] = [exp.not_(label.is_(exp.null()))]
    if signal.at_least == RELEVANCE_LEVEL:
        conditions.append(_level(label, at_or_above=True))
    elif signal.at_least is not None:
        conditions.append(exp.GTE(this=label.copy(), expression=exp.Literal.number(signal.at_least)))
    if signal.below == RELEVANCE_LEVEL:
        conditions.append(_level(label, at_or_above=False))
    elif signal.below is not None:
        conditions.append(exp.LT(this=label.copy(), expression=exp.Literal.number(signal.below)))
    return exp.and_(*conditions)


def _running(function: str, argument: exp.Expr, window: str = "running") -> exp.Expr:
    return exp.Window(this=exp.func(function, argument), alias=exp.to_identifier(window))


def _when_asked(signal: str, value: exp.Expr, name: str) -> exp.Expr:
    """``case when <signal asked> then value end as name``: a constant null otherwise, which the
    optimizer drops (no window is computed for a signal not asked)."""
    return exp.alias_(exp.Case(ifs=[exp.If(this=_signal(signal), true=value)]), name)


# The hand-written shape of each step; a placeholder column stands for a column per signal or
# counter (in a select) or for their names (in an exclude).
_SIGNALS_SKELETON = """
create or replace temp view signals as
with
labelled as (
    select 'ranking' as source, rankings.ranking, rankings.query_id, rankings.rank, rankings.credited_gain,
        rankings.discounted_gain, rankings.label
    from rankings
    union all
    select 'judgments' as source, cast(null as varchar) as ranking, judgments.query_id, cast(null as bigint) as rank,
        cast(null as double) as credited_gain, cast(null as double) as discounted_gain, judgments.label
    from judgments
    where array_length(getvariable('signals')) > 0
),
final as (
    select labelled.*, every_signal from labelled
)
select * from final
"""

_RUNNING_SUMS_SKELETON = """
create or replace temp view running_sums as
with
cumulative as (
    select
        s.ranking, s.query_id, s.rank, every_flag,
        lead(s.rank) over in_rank_order as next_rank,
        sum(s.credited_gain) over running as cg,
        sum(s.discounted_gain) over running as dcg,
        first_pass
    from signals as s
    where s.source = 'ranking'
    window
        in_rank_order as (partition by s.ranking, s.query_id order by s.rank asc),
        running as (partition by s.ranking, s.query_id order by s.rank asc rows unbounded preceding)
),
counted as (
    select c.*, second_pass
    from cumulative as c
    window running as (partition by c.ranking, c.query_id order by c.rank asc rows unbounded preceding)
),
final as (
    select counted.* exclude (every_flag) from counted
)
select * from final
"""

_COUNTERS_SKELETON = """
create or replace temp view counters as
with
in_qrels as (
    select s.query_id, judged_counts
    from signals as s
    where s.source = 'judgments'
    group by s.query_id
),
final as (
    select evaluated_queries.*, every_count
    from evaluated_queries
    left join in_qrels on evaluated_queries.query_id = in_qrels.query_id
)
select * from final
"""


def _filled(skeleton: str, columns: dict[str, list[exp.Expr]]) -> exp.Expr:
    """The skeleton's tree with each placeholder column replaced by its columns (in selects) or
    names (in an ``exclude``)."""
    tree = sqlglot.parse_one(skeleton, read="duckdb")
    for select in tree.find_all(exp.Select):
        items: list[exp.Expr] = []
        for item in select.expressions:
            placeholder = isinstance(item, exp.Column) and not item.table and item.name in columns
            items += columns[item.name] if placeholder else [item]
        select.set("expressions", items)
    for star in tree.find_all(exp.Star):
        excluded = star.args.get("except_") or []
        if any(column.name in columns for column in excluded):
            names = [named for column in excluded for named in columns.get(column.name, [column])]
            star.set("except_", [exp.column(column.alias_or_name) for column in names])
    return tree


def _text(name: str, purpose: str, tree: exp.Expr, variables: list[str], reads: str, creates: str) -> str:
    body = tree.sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    header = [
        f"-- {name}: {purpose}",
        "--",
        "-- Generated by pipeline/counter_steps.py (make generate) from the registry's signals and",
        "-- counters; do not edit: a signal or a counter the registry adds is a column here.",
        f"-- Reads: {reads}.",
        "--",
        *(
            ["-- Variables:", *(f"--   SET VARIABLE {line}" for line in variables)]
            if variables
            else ["-- Variables: none."]
        ),
        "--",
        *textwrap.wrap(f"Creates: {creates}", width=96, initial_indent="-- ", subsequent_indent="-- "),
        "",
    ]
    return "\n".join(header) + body + ";\n"


def signals_sql() -> str:
    """The text of ``sql/counters/signals.sql``."""
    label = exp.column("label", "labelled")
    flags = [
        exp.alias_(exp.Coalesce(this=exp.and_(_signal(s.name), holds(s, label)), expressions=[exp.false()]), s.name)
        for s in SIGNALS
    ]
    tree = _filled(_SIGNALS_SKELETON, {"every_signal": flags})
    return _text(
        "signals.sql",
        "each rank of every ranking and each judged document, with whether each signal holds.",
        tree,
        ["signals = ['relevant'];           -- the signals asked (the others are false)", "relevance_threshold = 1;"],
        "views rankings (sql/ranking/rankings.sql) and judgments (sql/ranking/judgments.sql)",
        "view signals (source, ranking, query_id, rank, credited_gain, discounted_gain, label, then a boolean "
        "column per signal of the registry): source 'ranking', a row of rankings, or 'judgments', a judged "
        "document (with signals asked); a signal holds where the label lies in its range (the relevance level: "
        "label >= max(relevance_threshold, 0), or > 0 without a threshold), never for a null label (not judged).",
    )


def running_sums_sql() -> str:
    """The text of ``sql/counters/running_sums.sql``."""
    first: list[exp.Expr] = []
    second: list[exp.Expr] = []
    rank = exp.column("rank", "s")
    for counter in COUNTERS:
        name, signal = counter.name, counter.signal
        if counter.accumulation == "found":
            found = _running("sum", exp.cast(exp.column(signal, "s"), "BIGINT"))
            first.append(_when_asked(signal, found, name))
        elif counter.accumulation == "first_rank":
            at = exp.Case(ifs=[exp.If(this=exp.column(signal, "s"), true=rank.copy())])
            first.append(_when_asked(signal, _running("min", at), name))
        elif counter.accumulation == "precision_sum":
            if f"{signal}_found" not in {c.name for c in COUNTERS}:
                raise ValueError(f"counter {name}: a precision sum reads {signal}_found, which the registry lacks")
            found_here = exp.Div(
                this=exp.cast(exp.column(f"{signal}_found", "c"), "DOUBLE"), expression=exp.column("rank", "c")
            )
            term = exp.Case(ifs=[exp.If(this=exp.column(signal, "c"), true=found_here)]).else_(exp.Literal.number(0.0))
            second.append(_when_asked(signal, _running("sum", term), name))
    tree = _filled(
        _RUNNING_SUMS_SKELETON,
        {
            "every_flag": [exp.column(s.name, "s") for s in SIGNALS],
            "first_pass": first,
            "second_pass": second,
        },
    )
    return _text(
        "running_sums.sql",
        "in rank order, CG, DCG and the rank counters asked, of each ranking.",
        tree,
        ["signals = ['relevant'];           -- the signals asked (the counters of the others are null)"],
        "view signals (sql/counters/signals.sql)",
        "view running_sums (ranking, query_id, rank, next_rank, cg, dcg, then each rank counter of the registry, "
        "<signal>_<found|first_rank|precision_sum>): at each kept rank, the sums of the ranks up to it in rank "
        "order (the same bits on every run); found, the ranks where the signal holds; first_rank, the first of "
        "them; precision_sum, found_i / i summed over them. next_rank says up to which cutoff they hold.",
    )


def counters_sql() -> str:
    """The text of ``sql/counters/counters.sql``."""
    counts: list[exp.Expr] = []
    totals: list[exp.Expr] = []
    for counter in COUNTERS:
        if counter.accumulation == "in_qrels":
            counts.append(
                exp.alias_(exp.func("sum", exp.cast(exp.column(counter.signal, "s"), "BIGINT")), counter.name)
            )
            # a query no judgment of the signal holds for: 0, as in the Polars engine
            total = exp.Coalesce(this=exp.column(counter.name, "in_qrels"), expressions=[exp.Literal.number(0)])
            totals.append(exp.alias_(total, counter.name))
    tree = _filled(_COUNTERS_SKELETON, {"judged_counts": counts, "every_count": totals})
    return _text(
        "counters.sql",
        "each evaluated query with its per-query counters.",
        tree,
        [],
        "views evaluated_queries (sql/counters/evaluated_queries.sql) and signals (sql/counters/signals.sql)",
        "view counters (query_id, retrieved_in_ranking, then each per-query counter of the registry, "
        "<signal>_in_qrels: how many of the query's judged documents the signal holds for, 0 for none).",
    )
