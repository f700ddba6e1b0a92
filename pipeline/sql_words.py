"""Pieces of SQL text the refusals are written with (:mod:`pipeline.sql_refusals`,
:mod:`pipeline.sql_text_refusals`): registry text as a literal, a variable, a value as Python's
``repr`` shows it."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pipeline.io.csv_text import CSV_FLOAT, CSV_INTEGER


class Sql(str):
    """A piece of SQL (an expression), as opposed to text a message shows as it is."""


def sql_text(value: str) -> str:
    """A SQL string literal of registry or template text (never a user's value)."""
    return "'" + value.replace("'", "''") + "'"


def as_sql(text: str, values: Mapping[str, str]) -> Sql:
    """``text`` (a message built with the markers of ``values`` in place of its values, each as
    written: plain or as its ``repr``) as a SQL concatenation of its words and the SQL of each value."""
    pieces, rest = [], text
    while rest:
        found = [(rest.find(token), token) for token in values if token in rest]
        if not found:
            pieces.append(sql_text(rest))
            break
        at, token = min(found)
        if at:
            pieces.append(sql_text(rest[:at]))
        pieces.append(f"({values[token]})")
        rest = rest[at + len(token) :]
    return Sql(" || ".join(pieces))


def marker(name: str) -> str:
    return f"\u27e6{name}\u27e7"


def variable(name: str) -> Sql:
    return Sql(f"getvariable({sql_text(name)})")


_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")


def sql_repr(value: str) -> Sql:
    """How Python's ``repr`` shows a value of any type: None, text quoted, Decimal('0.50'), a number as is.
    A string literal's is written here (DuckDB binds each copy of the expression, for every call)."""
    if _STRING_LITERAL.fullmatch(value):
        return Sql(sql_text(repr(value[1:-1].replace("''", "'"))))
    text = f"cast({value} as varchar)"
    escaped = f"replace({text}, '\\', '\\\\')"
    return Sql(
        f"case when {value} is null then 'None' "
        f"when starts_with(typeof({value}), 'DECIMAL') then 'Decimal(''' || {text} || ''')' "
        f"when typeof({value}) <> 'VARCHAR' then {text} "
        f"when contains({text}, '''') and not contains({text}, '\"') then '\"' || {escaped} || '\"' "
        f"else '''' || replace({escaped}, '''', '\\''') || '''' end"
    )


# A CSV value the command line's inference reads as a number (an integer or a float as Rust writes
# one), as a SQL literal: a column with another value is text to it
CSV_NUMBER_TEXT = sql_text(f"{CSV_INTEGER}|{CSV_FLOAT}")

# DuckDB's type names as the command line shows them (Polars' names); others as DuckDB names them.
SHOWN_TYPES = {
    "VARCHAR": "String",
    "BOOLEAN": "Boolean",
    "DOUBLE": "Float64",
    "FLOAT": "Float32",
    "DATE": "Date",
    "TIME": "Time",
    "BLOB": "Binary",
    "INTERVAL": "Duration",
}
ID_SQL_TYPES = ("VARCHAR", "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT")
UNSIGNED_ID_SQL_TYPES = ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT")
NUMBER_SQL_TYPES = (*ID_SQL_TYPES[1:], *UNSIGNED_ID_SQL_TYPES, "FLOAT", "DOUBLE")


def shown_type(type_name: str) -> Sql:
    """A DuckDB type name (SQL) as the command line shows it (Polars' name)."""
    cases = " ".join(
        f"when {type_name} = {sql_text(duck)} then {sql_text(shown)}" for duck, shown in SHOWN_TYPES.items()
    )
    return Sql(f"case {cases} else {type_name} end")
