"""``ndcg evaluate --output-format gdeval``: the lines the TREC Web Track's ``gdeval.pl`` prints
(version 1.2a, the one ir_measures ships and runs), byte for byte on the inputs it reads.

gdeval prints CSV: ``runid,topic,ndcg@K,err@K``, then a line per topic that is in the run and has
a label above 0, by topic number, each value with ``%.5f``. Version 1.2a prints no ``amean`` line
(its comment: a topic called ``amean`` would make it ambiguous); the means are in the other
formats. Its numbers are ours under ``--profile gdeval`` with ERR's g_max 4, at one cutoff: the
format brings those conventions, and refuses, naming the flag, whatever would make a number under
gdeval's header one gdeval would not print (another profile or convention, several cutoffs, other
measures, groups, partitions, topic ids that are not numbers).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.io.format import convention_settings, text_value
from pipeline.registry import (
    CONVENTION,
    MEASURE_SETS,
    MEASURES,
    Evaluation,
    SpecError,
    measure_named,
    names_a_cutoff,
    profile_named,
    setting_text,
)

GDEVAL_PROFILE = "gdeval"
# gdeval's two measures, and what --measures holds when it is not given
GDEVAL_MEASURES = ("ndcg", "err")
# gdeval.pl's $MAX_JUDGMENT, and the number of decimals of its printf
GDEVAL_MAX_GRADE = 4
GDEVAL_DIGITS = 5
# conventions neither nDCG nor ERR reads: set or not, gdeval's lines are the same
_UNREAD = ("ap_denominator", "precision_denominator", "rbp_persistence")
# NDCG's sums: named in --measures, they would not be printed
_NDCG_SUMS = frozenset(m.name for m in MEASURES if m.selected_by == "ndcg" and m.name != "ndcg")
_ELSEWHERE = "or use --output-format table|trec|json"


def gdeval_defaults(
    *,
    profile: str | None,
    measures: Sequence[str] | None,
    digits: int,
    group_by: str | None,
    skip_unchanged: bool,
    allow_fractional_labels: bool,
    as_json: bool,
) -> tuple[str, tuple[str, ...]]:
    """The profile and measures ``--output-format gdeval`` evaluates (``--profile gdeval`` and
    nDCG and ERR when left out), after refusing (exit 2) the flags that cannot go with it."""
    prefix = refuse_flags(
        "gdeval",
        "gdeval.pl",
        GDEVAL_DIGITS,
        profile=profile,
        digits=digits,
        group_by=group_by,
        skip_unchanged=skip_unchanged,
        allow_fractional_labels=allow_fractional_labels,
        as_json=as_json,
    )
    if measures:
        lost = [name for name in measures if not _gdevals(name)]
        if lost:
            raise UsageError(
                f"{prefix}, its two measures nDCG@k and ERR@k, and --measures {', '.join(lost)} would be lost: "
                f"leave {'it' if len(lost) == 1 else 'them'} out, {_ELSEWHERE}"
            )
    return GDEVAL_PROFILE, _with_err(tuple(measures)) if measures else GDEVAL_MEASURES


def refuse_flags(
    output_format: str,
    tool: str,
    native_digits: int,
    *,
    profile: str | None,
    digits: int,
    group_by: str | None,
    skip_unchanged: bool,
    allow_fractional_labels: bool,
    as_json: bool,
) -> str:
    """Refuse (exit 2) the flags a peer tool's format (gdeval's, ndeval's) cannot go with: another
    profile than its own, other decimals, groups, --skip-unchanged, fractional labels, --json.
    Returns the words the format's other refusals begin with."""
    prefix = f"--output-format {output_format} prints what {tool} prints"
    if as_json:
        raise UsageError(f"--json is --output-format json; it cannot go with --output-format {output_format}")
    if profile not in (None, output_format):
        raise UsageError(
            f"{prefix}, under {output_format}'s conventions (--profile {output_format}), not those of --profile "
            f"{profile}: leave --profile out, {_ELSEWHERE}"
        )
    if digits not in (4, native_digits):  # 4: --digits left out
        raise UsageError(f"{prefix}, with its {native_digits} decimals: leave --digits {digits} out, {_ELSEWHERE}")
    if group_by:
        raise UsageError(f"{prefix}, which has no groups: leave --group-by out, {_ELSEWHERE}")
    if skip_unchanged:
        raise UsageError(
            f"{prefix}, from the evaluation, which --skip-unchanged leaves out when the outputs are current: "
            f"leave --skip-unchanged out, {_ELSEWHERE}"
        )
    if allow_fractional_labels:
        raise UsageError(
            f"{prefix}, which reads whole-number labels only (it refuses any other): leave "
            f"--allow-fractional-labels out, {_ELSEWHERE}"
        )
    return prefix


def _with_err(measures: tuple[str, ...]) -> tuple[str, ...]:
    """``measures`` with ERR, which gdeval prints beside nDCG: at the cutoffs the names carry
    (``nDCG@10``: ``ERR@10``; its name alone would add the default cutoffs), else at ``--k``'s."""
    try:
        named = [measure_named(name) for name in measures]
    except SpecError:
        return measures  # the evaluation refuses the name, in its own words
    if any(family == "err" for family, _ in named):
        return measures
    cutoffs = sorted({k for _, k in named if k is not None})
    return (*measures, *(f"ERR@{k}" for k in cutoffs)) if cutoffs else (*measures, "err")


def _gdevals(name: str) -> bool:
    """Whether ``name`` of ``--measures`` names nDCG or ERR (a bad name: the evaluation says why)."""
    if name in MEASURE_SETS:
        return False
    try:
        family, _ = measure_named(name)
    except SpecError:  # the evaluation refuses the name, in its own words
        return True
    return family in GDEVAL_MEASURES and name.strip().lower() not in _NDCG_SUMS


def gdeval_cutoff(evaluation: Evaluation, *, k_given: bool, measures: Sequence[str]) -> int:
    """The one cutoff gdeval's lines are printed at, after refusing (exit 2) an evaluation whose
    numbers are not gdeval's: a convention other than the gdeval profile's (named by its flag),
    ERR's g_max other than gdeval's 4, or several cutoffs (``measures``: as given to
    ``--measures``, or implied)."""
    gdeval = profile_named(GDEVAL_PROFILE).evaluation(
        cutoffs=evaluation.cutoffs, measures=evaluation.measures, err_max_grade=GDEVAL_MAX_GRADE
    )
    refuse_other_conventions(evaluation, gdeval, "gdeval", "gdeval.pl", _UNREAD)
    if len(evaluation.cutoffs) != 1:
        if k_given:
            where = "--k and the cutoffs --measures names give"
        elif names_a_cutoff(tuple(measures)):
            where = "--measures names"
        else:
            where = "without --k, the default cutoffs are"
        raise UsageError(
            f"--output-format gdeval prints one cutoff, as gdeval.pl takes one k, and {where} "
            f"{len(evaluation.cutoffs)}: {','.join(map(str, evaluation.cutoffs))}; pass one (--k 20, or "
            "--measures nDCG@20,ERR@20)"
        )
    return evaluation.cutoffs[0]


def refuse_other_conventions(
    evaluation: Evaluation, reference: Evaluation, output_format: str, tool: str, unread: Sequence[str]
) -> None:
    """Refuse (exit 2, naming each flag) a convention of ``evaluation`` other than the format's
    profile's (``reference``), but for cutoffs, measures and the ``unread`` conventions."""
    ours, theirs = convention_settings(evaluation), convention_settings(reference)
    differing = [
        f"{CONVENTION[name].flag} {_text(name, value)} ({output_format}'s: {_text(name, theirs[name])})"
        for name, value in ours.items()
        if name not in ("k", "measures", *unread) and value != theirs[name]
    ]
    if differing:
        raise UsageError(
            f"--output-format {output_format} prints {tool}'s numbers, under its conventions (--profile "
            f"{output_format}), and {'this differs' if len(differing) == 1 else 'these differ'}: "
            f"{', '.join(differing)}; leave {'it' if len(differing) == 1 else 'them'} out, {_ELSEWHERE}"
        )


def _text(name: str, value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return "none" if value is None else setting_text(name, value)


def check_gdeval_ids(per_query: pl.DataFrame, run: str, tool: str = "gdeval.pl") -> None:
    """Refuse (exit 3, naming the id) a query id the lines of ``tool`` cannot carry: gdeval.pl (and
    ndeval) read a topic id as a number (digits only) and compare topics as numbers, so an id that
    is not one has no line of theirs, and two ids of one number (``7``, ``07``) would be merged."""
    ids = per_query.get_column("query_id").unique()
    if ids.dtype.is_integer():
        negative = ids.filter(ids < 0)
        if negative.len():
            _not_a_topic(run, str(negative.min()), tool)
        return
    text = ids.cast(pl.String)
    bad = text.filter(text.is_null() | ~text.str.contains(r"^[0-9]+$"))
    if bad.len():
        _not_a_topic(run, bad.sort(nulls_last=False)[0], tool)
    by_number: dict[int, str] = {}
    for query in text.sort().to_list():
        number = int(query)
        if number in by_number:
            raise InvalidInput(
                f"{run}: query ids {by_number[number]!r} and {query!r} are the same number, and "
                f"{tool}, which compares topic ids as numbers, would merge them: rename one, "
                f"{_ELSEWHERE}"
            )
        by_number[number] = query


def _not_a_topic(run: str, query: str | None, tool: str) -> None:
    raise InvalidInput(
        f"{run}: query id {query!r} is not a topic number (digits only), and {tool} reads no "
        f"other (it refuses the run, and orders its lines by number): number the queries, {_ELSEWHERE}"
    )


def check_gdeval_units(
    units: Sequence[object], run: str, output_format: str = "gdeval", tool: str = "gdeval.pl"
) -> None:
    """Refuse what the lines of ``tool`` cannot print, before any output is written: a
    partitioned run's several evaluations (exit 2; it reads one run) and query ids that are not
    topic numbers (exit 3)."""
    if any(getattr(unit, "partition", None) for unit in units):
        raise UsageError(
            f"--output-format {output_format} prints what {tool} prints for one run, and this run is partitioned: "
            f"evaluate one partition's folder, {_ELSEWHERE}"
        )
    for unit in units:
        check_gdeval_ids(unit.result.per_query, run, tool)  # type: ignore[attr-defined]


def gdeval_run_id(run: str, tag: str | None) -> str:
    """gdeval's runid: the tag (6th field) of the run's last line, as gdeval.pl keeps it (``tag``:
    :func:`pipeline.io.read.trec_run_id`); for a run without one (Parquet, CSV, a run on an
    object store), the run's file or folder name up to its first dot (``runs/bm25.parquet``:
    ``bm25``), as ``ndcg compare`` names a system."""
    if tag:
        return tag
    name = PurePosixPath(run.rstrip("/").replace("\\", "/")).name
    return name.split(".")[0] or name or run


def gdeval_lines(per_query: pl.DataFrame, k: int, run_id: str) -> str:
    """gdeval.pl's output: its header, then ``runid,topic,ndcg,err`` of each query evaluated at
    ``k`` whose nDCG is not null (under the gdeval profile: in the run, with a label above 0), by
    topic number, values as its ``printf "%.5f"`` (Python's and C's ``f`` format both round the
    double's exact value to nearest, ties to even)."""
    rows = per_query.filter((pl.col("k") == k) & pl.col("ndcg").is_not_null()).select("query_id", "ndcg", "err")
    runid = text_value(run_id)
    lines = [f"runid,topic,ndcg@{k},err@{k}"]
    for query, ndcg, err in sorted(rows.iter_rows(), key=lambda row: int(row[0])):
        lines.append(f"{runid},{query},{ndcg:.{GDEVAL_DIGITS}f},{err:.{GDEVAL_DIGITS}f}")
    return "\n".join(lines) + "\n"
