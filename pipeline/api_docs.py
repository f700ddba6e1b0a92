"""The tables of docs/python-api.md between its ``keywords`` markers, made from the signatures the
registry gives the library's functions (:mod:`pipeline.api_keywords`), so that the page lists
every keyword they take (``make generate`` rewrites them; ``--check`` fails when they are stale)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pipeline import api
from pipeline.api_compare import compare_runs, comparison_keywords
from pipeline.api_keywords import API_FUNCTIONS, Keyword, function_keywords, keyword_names, keywords_table
from pipeline.registry.tables import with_table


def _functions() -> list[Callable[..., Any]]:
    return [getattr(api, name) for name in API_FUNCTIONS]


def evaluation_keywords_table() -> str:
    """Every keyword of make_evaluation, per_query, check and evaluate (their own and the
    registry's), once each, with the functions taking it."""
    rows: dict[str, tuple[Keyword, list[str]]] = {}
    # evaluate's order first (it takes every keyword the others do), each function's own first
    for function in sorted(_functions(), key=lambda function: function.__name__ != "evaluate"):
        own = inspect.signature(function).parameters
        generated = {keyword.name: keyword for keyword in function_keywords(function.__name__)}
        for name in keyword_names(function):
            keyword = generated.get(name) or _own_keyword(function, own[name])
            rows.setdefault(name, (keyword, []))[1].append(function.__name__)
    return keywords_table(
        [(keyword, [f"`{f}`" for f in API_FUNCTIONS if f in functions]) for keyword, functions in rows.values()]
    )


# the meaning of the keywords a function declares itself (the others are the registry's)
_OWN_MEANINGS = {
    "evaluation": "the conventions as one `Evaluation` (from `make_evaluation`), instead of them as keywords",
    "engine": "who computes: polars, duckdb or spark; all give the same numbers (tested to 1e-9)",
    "columns": "every column name at once, a `Columns` (instead of `query_col`, ... `qrels_label_col`)",
}


def _own_keyword(function: Callable[..., Any], parameter: inspect.Parameter) -> Keyword:
    default = parameter.default
    meaning = _OWN_MEANINGS.get(parameter.name)
    if meaning is None:
        raise KeyError(f"{function.__name__}() declares {parameter.name!r}: say what it means in _OWN_MEANINGS")
    return Keyword(parameter.name, parameter.annotation, default, "none" if default is None else str(default), meaning)


def comparison_keywords_table() -> str:
    """compare_runs' own keywords (those of ``ndcg compare``), and a line naming the ones it shares."""
    own = {keyword.name for keyword in comparison_keywords()}
    shared = [name for name in keyword_names(compare_runs) if name not in own and name not in ("gate", "engine")]
    table = keywords_table([(keyword, ["`compare_runs`"]) for keyword in comparison_keywords()])
    return (
        f"{table}\n`compare_runs` also takes `gate` (a `Gate`), `engine` and these keywords of the table above, "
        f"meaning the same: {', '.join(f'`{name}`' for name in shared)}.\n"
    )


def python_api_tables(text: str) -> str:
    """docs/python-api.md's ``text`` with its keyword tables made anew."""
    return with_table(
        with_table(text, "keywords", evaluation_keywords_table()), "compare keywords", comparison_keywords_table()
    )
