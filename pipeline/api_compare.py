"""``ndcg compare --run A --run B`` as one call of the library: :func:`compare_runs` scores each
run as :func:`pipeline.api.evaluate` does and compares them (:func:`pipeline.compare_job.compare_job`),
gated when given a :class:`~pipeline.gate.Gate`.

Its keywords are generated as :func:`~pipeline.api.evaluate`'s are (:mod:`pipeline.api_keywords`):
the conventions and the validation options from the registry, the comparison's own from
:func:`~pipeline.compare_job.compare_job`'s signature with the help of their ``ndcg compare`` flags,
so the function takes what the command takes, by the same names.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pipeline.api import EngineName
from pipeline.api_keywords import (
    Keyword,
    convention_keywords,
    option_keywords,
    unknown_keywords,
    with_keywords,
)
from pipeline.cli_flags import build_parser, subparser
from pipeline.compare_job import Compared, Systems, compare_job
from pipeline.errors import UsageError
from pipeline.gate import Gate
from pipeline.groups import WHOLE_RANKING
from pipeline.registry import OPTION, SpecError, options_for
from pipeline.registry.options import query_weight

# compare's own k and all_queries stand for evaluate's (compare_job passes them on to the runs' scoring)
_OWN = ("k", "all_queries")
# a flag's choices are the keyword's type when they are few (correction), its text when many (measure)
_CHOICES_SHOWN = 6
# runs scored here share their conventions and their judgments: nothing different to allow
_NOT_FOR_RUNS = ("systems", "gate", "allow_different_conventions", "allow_different_judgments")


def comparison_keywords() -> list[Keyword]:
    """compare_job's keywords, typed and defaulted as it declares them, each meaning what its
    ``ndcg compare`` flag's help says; ``k``, ``group_by`` and ``partition`` also take lists."""
    actions = {action.dest: action for action in subparser(build_parser(), "compare")._actions}
    wider: dict[str, tuple[Any, str]] = {
        "k": (
            str | int | Sequence[int | None] | None,
            f"; a list too, None in it for the whole ranking ([10, None] is '10,{WHOLE_RANKING}')",
        ),
        "group_by": (str | Sequence[str] | None, "; a list of names too"),
        "partition": (str | Sequence[str], "; one KEY=VALUE or a list of them"),
    }
    parameters = {
        name: parameter
        for name, parameter in inspect.signature(compare_job, eval_str=True).parameters.items()
        if name not in _NOT_FOR_RUNS
    }

    def meaning(name: str) -> str:
        action = actions.get(name)
        return (action.help or "") if action else ""

    found = []
    for name, parameter in parameters.items():
        annotation, more = wider.get(name, (parameter.annotation, ""))
        choices = getattr(actions.get(name), "choices", None)
        if annotation is str and choices and len(choices) <= _CHOICES_SHOWN:
            annotation = Literal[tuple(choices)]
        default = parameter.default
        shown = "none" if default is None or default == () else str(default)
        found.append(Keyword(name, annotation, default, shown, meaning(name).replace("%%", "%") + more))
    # the groups of the runs scored here (Systems.query_attributes)
    found.append(Keyword("query_attributes", str | Path | None, None, "none", meaning("query_attributes")))
    # the weights of the means and tests (Systems.query_weights, weight_col, missing_query_weight)
    found.append(Keyword("query_weights", str | Path | None, None, "none", meaning("query_weights")))
    found.append(Keyword("weight_col", str, OPTION["weight_col"].default, "weight", meaning("weight_col")))
    found.append(Keyword("missing_query_weight", float | None, None, "none", meaning("missing_query_weight")))
    return found


def _keywords() -> list[Keyword]:
    """compare_runs' keywords: the comparison's, then the conventions, then the validation options."""
    return [
        *comparison_keywords(),
        *convention_keywords(leave_out=_OWN),
        *option_keywords(options_for(command="compare")),
    ]


def _cutoffs_text(k: object) -> str | None:
    """``k`` as compare's ``--k`` reads it: ``10``, ``[10, None]`` -> ``"10,all"``."""
    if k is None or isinstance(k, str):
        return k
    if isinstance(k, int) and not isinstance(k, bool):
        return str(k)
    if isinstance(k, Iterable):
        return ",".join(WHOLE_RANKING if cutoff is None else str(cutoff) for cutoff in k)
    raise UsageError(
        f"k must be a cutoff, a list of cutoffs (None: the whole ranking) or a text such as '10,all', got {k!r}"
    )


def _missing_weight(given: object) -> float | None:
    """``missing_query_weight`` as ``--missing-query-weight`` reads it: a finite number >= 0."""
    if given is None:
        return None
    if isinstance(given, bool) or not isinstance(given, int | float | str):
        raise UsageError(f"missing_query_weight: expected a number >= 0, got {given!r}")
    try:
        return query_weight(str(given))
    except SpecError as error:
        raise UsageError(f"missing_query_weight: {error}") from None


def compare_runs(
    runs: Sequence[str | Path] | Mapping[str, str | Path],
    qrels: str | Path | None = None,
    *,
    gate: Gate | None = None,
    engine: EngineName = "polars",
    **options: Any,
) -> Compared:
    """Score each run against ``qrels`` (None: each run's own label column) and compare them
    query by query: ``ndcg compare --run A --run B``. The first run is the baseline, the others
    candidates; ``runs`` as a mapping names them (``{"prod": ..., "new": ...}``), else they are
    named by their files. Returns the :class:`~pipeline.compare_job.Compared`: ``.result.comparison``
    (one row per pair, cutoff and group), ``.result.deltas`` (one per query), ``.unpaired``.

    ``gate`` (:class:`~pipeline.gate.Gate`: ``Gate(Margin.parse("2%"), alpha=0.05)``, what
    ``--fail-if-worse 2%`` gates) adds the verdict, ``.gate``: ``.gate.failed``, ``.gate.lines()``
    (what the command prints), ``.gate.failures``. A failed gate is returned, not raised: the
    command line exits 6 on it, a script decides for itself.
    """
    unknown = sorted(set(options) - set(_TAKEN))
    if unknown:
        raise UsageError(
            f"compare_runs() got unknown option(s) {unknown_keywords(unknown, _TAKEN)}; options are {', '.join(_TAKEN)}"
        )
    if isinstance(runs, str | Path):
        raise UsageError("compare_runs() takes two or more runs: a list of paths, or a mapping of names to paths")
    names = None
    if isinstance(runs, Mapping):
        if any("," in str(name) for name in runs):
            raise UsageError(f"a system's name may not hold a comma, got {', '.join(map(repr, runs))}")
        names = ",".join(map(str, runs))
        runs = list(runs.values())
    conventions = {c.name: options.pop(c.name) for c in _CONVENTIONS if c.name in options and c.name != "profile"}
    profile = options.pop("profile", None)
    checks = {o.name: options.pop(o.name) for o in options_for(command="compare") if o.name in options}
    query_attributes = options.pop("query_attributes", None)
    query_weights = options.pop("query_weights", None)
    weight_col = options.pop("weight_col", OPTION["weight_col"].default)
    missing_query_weight = options.pop("missing_query_weight", None)
    systems = Systems(
        runs=[str(run) for run in runs],
        qrels=None if qrels is None else str(qrels),
        names=names,
        engine=engine,
        evaluation_options=conventions,
        profile=profile,
        query_attributes=None if query_attributes is None else str(query_attributes),
        input_options=checks,
        query_weights=None if query_weights is None else str(query_weights),
        weight_col=weight_col,
        missing_query_weight=_missing_weight(missing_query_weight),
    )
    if "k" in options:
        options["k"] = _cutoffs_text(options["k"])
    if options.get("group_by") is not None and not isinstance(options["group_by"], str):
        options["group_by"] = ",".join(options["group_by"])
    if "partition" in options:
        given = options["partition"]
        options["partition"] = [given] if isinstance(given, str) else list(given or ())
    return compare_job(systems, gate=gate, **options)


_CONVENTIONS = convention_keywords(leave_out=_OWN)
with_keywords(compare_runs, _keywords())
_TAKEN: tuple[str, ...] = tuple(
    name
    for name, parameter in inspect.signature(compare_runs).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name not in ("gate", "engine")
)
