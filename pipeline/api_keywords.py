"""The keywords of the library's functions, generated from the registry: each convention of
:data:`pipeline.registry.CONVENTIONS` and each option of :data:`pipeline.registry.OPTIONS` a
function takes becomes a keyword-only parameter of its ``__signature__`` (what ``help()``,
``inspect.signature`` and a notebook's completion read) and a line of its docstring, and a row
of docs/python-api.md (``make generate``), so a new option is never missing from any of them.

The functions themselves take ``**options`` and refuse a keyword they do not know by its name,
with the closest known one (:func:`unknown_keywords`); the registry is the one list of what
they take.
"""

from __future__ import annotations

import difflib
import inspect
import re
import textwrap
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from pipeline.job import Job
from pipeline.registry import (
    CONVENTIONS,
    DEFAULT_CUTOFFS,
    LABEL_BOUND_CONVENTIONS,
    OPTION,
    Convention,
    Option,
    options_for,
)
from pipeline.units import OPTION_HOLDERS

Function = TypeVar("Function", bound=Callable[..., Any])
# the heading of the generated part of a docstring, also how a test finds it
SECTION = "Keywords (generated from pipeline.registry):"


@dataclass(frozen=True)
class Keyword:
    """One keyword of a function: its type and default as the signature shows them, the
    default in words (``linear``; for a convention, what leaving it out gives), its meaning."""

    name: str
    annotation: Any
    default: Any
    shown_default: str
    meaning: str

    def parameter(self) -> inspect.Parameter:
        return inspect.Parameter(
            self.name, inspect.Parameter.KEYWORD_ONLY, default=self.default, annotation=self.annotation
        )


def _literal(values: Sequence[str]) -> Any:
    return Literal[tuple(values)]


def _parsed_type(parse: Callable[[str], Any]) -> Any:
    """What a flag's reader returns: the value the keyword takes (a number for ``--log-base``)."""
    return typing.get_type_hints(parse)["return"]


def _union(*types: Any) -> Any:
    result = types[0]
    for kind in types[1:]:
        result = result | kind
    return result


def _convention_type(convention: Convention) -> Any:
    if convention.switch:
        return bool
    if convention.choices:
        return _union(_literal(convention.values), str) if convention.open else _literal(convention.values)
    if convention.parse is not None:
        parsed = _parsed_type(convention.parse)
        # a value read from text by the API as its flag reads it (measures="P,map") is also taken as text
        return _union(parsed, str) if convention.from_text is not None and parsed is not str else parsed
    return type(convention.default)


def keyword_text(text: str, also: Iterable[str] = ()) -> str:
    """A flag's help as a keyword's: ``--log-base`` becomes `` `log_base` `` where that is a
    keyword (of the registry, or ``also``)."""
    keywords = {*OPTION, *(c.name for c in CONVENTIONS), *also}

    def keyword(match: re.Match[str]) -> str:
        name = match.group(1).replace("-", "_")
        return f"`{name}`" if name in keywords else match.group(0)

    return re.sub(r"--([a-z](?:[a-z-]*[a-z])?)\b", keyword, text)


def _cutoffs_keyword() -> Keyword:
    # k takes what make_evaluation reads (pipeline.api._cutoffs), not a flag's text only
    default = ",".join(map(str, DEFAULT_CUTOFFS))
    return Keyword(
        "k",
        Iterable[int] | int | str | None,
        None,
        f"the cutoffs the measures name, else {default}",
        keyword_text(next(c for c in CONVENTIONS if c.name == "k").help)
        + "; 10, [5, 10] or '5,10' (the whole ranking is the row k=null)",
    )


def _profile_keyword() -> Keyword:
    return Keyword(
        "profile",
        str | None,
        None,
        "none",
        "a named bundle of conventions reproducing a peer tool (`ndcg profiles` lists them); "
        "the conventions given win over the profile's",
    )


def convention_keywords(leave_out: Iterable[str] = ()) -> list[Keyword]:
    """``k``, ``profile`` and every convention (but those left out), in the registry's order.
    Each defaults to None: the profile's choice, else the registry's default."""
    left_out = set(leave_out)
    found = [keyword for keyword in (_cutoffs_keyword(), _profile_keyword()) if keyword.name not in left_out]
    for c in CONVENTIONS:
        if c.name == "k" or c.name in left_out:
            continue
        default = c.flag_default if c.flag_default is not None else c.default
        shown = "none" if default is None else ",".join(default) if isinstance(default, tuple) else str(default)
        found.append(
            Keyword(c.name, _convention_type(c) | None, None, shown, keyword_text(c.flag_help).replace("\n", " "))
        )
    return found


def _option_type(option: Option) -> Any:
    if option.switch:
        return bool
    if option.choices:
        return _literal(option.choices)
    if option.parse is not None:
        return _parsed_type(option.parse)
    holder, _, part = option.field.partition(".")
    if part:  # a part of the job's columns, checks or execution: that holder's field's type
        return typing.get_type_hints(OPTION_HOLDERS[holder])[part]
    return typing.get_type_hints(Job)[holder]


def option_keywords(options: Iterable[Option]) -> list[Keyword]:
    """The input, validation and execution options given, with their registry defaults."""
    found = []
    for option in options:
        kind = _option_type(option)
        if option.default is None:
            kind = kind | None
        shown = "none" if option.default is None else str(option.default)
        found.append(Keyword(option.name, kind, option.default, shown, keyword_text(option.help)))
    return found


# the functions of pipeline.api whose keywords the registry makes, and what each takes
API_FUNCTIONS: tuple[str, ...] = ("make_evaluation", "per_query", "check", "evaluate")


def function_keywords(function: str) -> list[Keyword]:
    """The generated keywords of an API function: the conventions (``check``, which only checks,
    those that decide which labels are refused: :data:`~pipeline.registry.LABEL_BOUND_CONVENTIONS`)
    and the options :data:`pipeline.registry.OPTIONS` gives the function."""
    if function == "check":
        others = ["k", "profile", *(c.name for c in CONVENTIONS if c.name not in LABEL_BOUND_CONVENTIONS)]
        conventions = convention_keywords(leave_out=others)
    else:
        conventions = convention_keywords()
    return conventions + option_keywords(options_for(function=function))


def unknown_keywords(given: Iterable[str], known: Sequence[str]) -> str:
    """The unknown names, each with the closest known one as ``ndcg`` suggests a flag's:
    ``'gian' (did you mean 'gain'?)``."""
    named = []
    for name in given:
        close = difflib.get_close_matches(name, known, n=1)
        named.append(f"{name!r} (did you mean {close[0]!r}?)" if close else repr(name))
    return ", ".join(named)


def _type_text(annotation: Any) -> str:
    """``'linear' | 'exponential' | str | None``: a type as a reader writes it."""
    if annotation is type(None):
        return "None"
    if typing.get_origin(annotation) is Literal:
        return " | ".join(repr(value) for value in typing.get_args(annotation))
    if typing.get_origin(annotation) in (typing.Union, type(int | str)):
        return " | ".join(_type_text(part) for part in typing.get_args(annotation))
    if isinstance(annotation, type) and typing.get_origin(annotation) is None:
        return annotation.__name__  # Evaluation, not pipeline.registry.evaluation.Evaluation
    return inspect.formatannotation(annotation).replace("collections.abc.", "")


def keywords_section(keywords: Sequence[Keyword]) -> str:
    """The docstring's part listing the keywords: name, type, default and meaning, each."""
    lines = [SECTION, ""]
    for keyword in keywords:
        lines.append(f"    {keyword.name}: {_type_text(keyword.annotation)} (default: {keyword.shown_default})")
        lines += textwrap.wrap(keyword.meaning, 96, initial_indent=" " * 8, subsequent_indent=" " * 8)
    return "\n".join(lines)


def with_keywords(function: Function, keywords: Sequence[Keyword]) -> Function:
    """``function`` with ``keywords`` in its signature (after its own parameters, in place of
    its ``**options``) and in its docstring. The function still receives them in ``**options``."""
    own = inspect.signature(function, eval_str=True)
    parameters = [p for p in own.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
    parameters += [keyword.parameter() for keyword in keywords if keyword.name not in own.parameters]
    function.__signature__ = own.replace(parameters=parameters)  # type: ignore[attr-defined]
    doc = inspect.cleandoc(function.__doc__ or "")
    function.__doc__ = f"{doc}\n\n{keywords_section(keywords)}\n"
    return function


def keyword_names(function: Callable[..., Any]) -> tuple[str, ...]:
    """Every keyword ``function``'s signature shows."""
    return tuple(
        name
        for name, parameter in inspect.signature(function).parameters.items()
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY
    )


def keywords_table(rows: Sequence[tuple[Keyword, Sequence[str]]]) -> str:
    """The Markdown table of docs/python-api.md: each keyword, its type, default, the functions
    taking it and its meaning."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = ["| keyword | type | default | taken by | meaning |", "|---|---|---|---|---|"]
    for keyword, functions in rows:
        lines.append(
            f"| `{keyword.name}` | `{cell(_type_text(keyword.annotation))}` | {cell(keyword.shown_default)} | "
            f"{', '.join(functions)} | {cell(keyword.meaning)} |"
        )
    return "\n".join(lines) + "\n"
