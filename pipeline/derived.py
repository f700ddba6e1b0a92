"""The variables the registry derives from an evaluation, as SQL over the variables a user sets.

The engines bind them from Python (:class:`pipeline.registry.Evaluation`: the names of the
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
    CURVES,
    MEASURE_FAMILIES,
    MEASURES,
    PRIMARY_MEASURE,
    RETRIEVED,
    SIGNALS,
    measure_columns,
    signals_of,
    summary_variables,
)
from pipeline.registry.evaluation import WEIGHTED_AP_CURVE

# The derived variables, in the order they are set, and the Spark type of each.
DERIVED: dict[str, str] = {
    "signals": "ARRAY<STRING>",
    "count_retrieved": "BOOLEAN",
    "curves": "ARRAY<STRING>",
    "measure_columns": "ARRAY<STRING>",
    "sum_measures": "ARRAY<STRING>",
    "geometric_mean_measures": "ARRAY<STRING>",
}
# What they derive from: the variables a user sets (the measures, and the conventions under which
# a measure reads more counters).
READ = tuple(dict.fromkeys(["measures", *(c for m in MEASURES for c, _, _ in m.counters_under), "doc_weight_col"]))

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
        return _chosen([(_signal_read(s.name, read), exp.Literal.string(s.name)) for s in SIGNALS], _texts([]))
    if name == "count_retrieved":
        return _signal_read(RETRIEVED, read)
    if name == "curves":
        # map's weighted sums (TF-Ranking's AP) with the run's weights, as Evaluation.curves reads them
        weighted_map = exp.and_(
            exp.Not(this=exp.Is(this=read("doc_weight_col"), expression=exp.Null())),
            _any_asked(["map", "recall"], read),
        )
        return _chosen(
            [
                (
                    weighted_map
                    if curve == WEIGHTED_AP_CURVE
                    else _any_asked(list(dict.fromkeys(m.selected_by for m in MEASURES if m.curve == curve)), read),
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
