"""Pieces of SQL text the refusals are written with (:mod:`pipeline.sql_refusals`,
:mod:`pipeline.sql_text_refusals`): registry text as a literal, a variable, a value as Python's
``repr`` shows it."""

from __future__ import annotations


class Sql(str):
    """A piece of SQL (an expression), as opposed to text a message shows as it is."""


def sql_text(value: str) -> str:
    """A SQL string literal of registry or template text (never a user's value)."""
    return "'" + value.replace("'", "''") + "'"


def variable(name: str) -> Sql:
    return Sql(f"getvariable({sql_text(name)})")


def sql_repr(value: str) -> Sql:
    """How Python's ``repr`` shows a value of any type: None, text quoted, Decimal('0.50'), a number as is."""
    text = f"cast({value} as varchar)"
    escaped = f"replace({text}, '\\', '\\\\')"
    return Sql(
        f"case when {value} is null then 'None' "
        f"when starts_with(typeof({value}), 'DECIMAL') then 'Decimal(''' || {text} || ''')' "
        f"when typeof({value}) <> 'VARCHAR' then {text} "
        f"when contains({text}, '''') and not contains({text}, '\"') then '\"' || {escaped} || '\"' "
        f"else '''' || replace({escaped}, '''', '\\''') || '''' end"
    )
