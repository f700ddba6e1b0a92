"""The HTML of the report: fragments rendered by Jinja2 with autoescape (every value read from
an output reaches the page as text, never as markup), table cells, and the figures' record."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import jinja2
import polars as pl
from markupsafe import Markup

DIGITS = 4


@dataclass(frozen=True)
class Figure:
    slug: str
    caption: str
    png: bytes


_ENVIRONMENT = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)


@functools.cache
def template(text: str) -> jinja2.Template:
    return _ENVIRONMENT.from_string(text)


def fragment(text: str, **values: object) -> Markup:
    """A fragment rendered with every value escaped (fragments passed in are already Markup)."""
    return Markup(template(text).render(**values))


def k_text(k: object) -> str:
    """``all`` for the whole ranking; anything else as text (a hand-edited table may hold anything)."""
    return "all" if k is None else str(k)


def cell(column: str, value: object) -> Markup:
    """A table cell whose text is rounded for people and whose ``data-value`` keeps every digit,
    so that tests (and curious readers) can compare it with the Parquet outputs."""
    markup = (
        '<td data-column="{{ column }}"{% if data is not none %} data-value="{{ data }}"{% endif %}>{{ shown }}</td>'
    )
    if value is None:
        return fragment(markup, column=column, data=None, shown="-")
    if isinstance(value, float):
        if math.isnan(value):
            return fragment(markup, column=column, data="nan", shown="NaN")
        shown = f"{value:+.1%}" if column == "relative_change" else f"{value:.{DIGITS}f}"
        if column.startswith("p_") and 0 < value < 10**-DIGITS:
            shown = f"{value:.1e}"
        return fragment(markup, column=column, data=repr(value), shown=shown)
    return fragment(markup, column=column, data=value, shown=value)


def at_cutoff(k: int | None) -> pl.Expr:
    """The rows of cutoff ``k`` (the whole ranking's, whose k is null, for None)."""
    return pl.col("k").is_null() if k is None else pl.col("k") == k
