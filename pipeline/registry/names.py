"""The names a measure goes by: trec_eval's (``P_5``, ``map_cut_10``, its ``-m`` sets
``official`` and ``all_trec``, the order it prints lines in) and ir_measures' (``nDCG@10``,
``AP``), and the parser of ``--measures`` that reads them into families and cutoffs."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from pipeline.registry.base import DEFAULT_CUTOFFS, MAX_CUTOFF, SpecError
from pipeline.registry.measures import MEASURE_FAMILIES, MEASURES, PRIMARY_MEASURE, Measure
from pipeline.registry.parameters import (
    ParameterName,
    ir_measure,
    parameter_name,
    same_setting,
    setting_text,
    split_measures,
)

# trec_eval 10.0's measure table (measures.c's te_trec_measures, its prefs and avgjg measures
# aside): the order it prints a query's lines in, and its summary's. A name is a measure of
# trec_eval, whose lines are the name itself, ``<name>_<k>`` at a cutoff (P_5) or
# ``<name>_<parameter>`` (iprec_at_recall_0.10); runid (the run's name) and relstring (the
# labels of the top results) are lines of the trec output, not measures of the registry.
TREC_EVAL_ORDER: tuple[str, ...] = (
    "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
    "iprec_at_recall", "P", "relstring", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
    "binG", "G", "dcg", "ideal_dcg", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success",
    "set_P", "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "yaap", "rbp",
    "rbp_resid", "unj",
)  # fmt: skip
# The named sets --measures takes, trec_eval's nicknames (measures.c): the trec_eval measures
# each prints, at trec_eval's default cutoffs and parameters of each. official is what
# trec_eval prints when no -m is given.
TREC_EVAL_SETS: dict[str, tuple[str, ...]] = {
    "official": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P",
    ),
    "all_trec": (
        "runid", "num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
        "iprec_at_recall", "P", "relstring", "recall", "unj", "rbp", "rbp_resid", "infAP", "gm_bpref", "utility",
        "11pt_avg", "ndcg", "relative_P", "Rprec_mult", "success", "map_cut", "ndcg_cut", "ndcg_rel", "Rndcg",
        "binG", "G", "set_P", "set_recall", "set_relative_P", "set_map", "set_F", "num_nonrel_judged_ret",
    ),
}  # fmt: skip
MEASURE_SETS: dict[str, str] = {
    "all_trec": "every measure trec_eval's -m all_trec prints that the registry has, at trec_eval's cutoffs",
    "official": "trec_eval's default output (no -m): runid, num_q, num_ret, num_rel, num_rel_ret, map, gm_map, "
    "Rprec, bpref, recip_rank, iprec_at_recall, P at trec_eval's cutoffs",
}


# trec_eval's relstring (m_relstring.c) is not a measure but a line of the trec output per
# query: the labels of the top results, a character each. ``relstring`` takes trec_eval's
# default 10 results (and comes with all_trec), ``relstring_<n>`` the top n (its -mrelstring.n).
RELSTRING = "relstring"
RELSTRING_LENGTH = 10
_RELSTRING_NAME = re.compile(r"relstring(?:_(\d+))?")


def relstring_asked(measures: tuple[str, ...] | list[str]) -> tuple[str, int] | None:
    """``(line name, length)`` of the relstring ``measures`` ask for (``relstring_20``: 20
    results; ``relstring`` or a set that has it: 10), or None.

    >>> relstring_asked(("ndcg", "relstring_20")), relstring_asked(("all_trec",)), relstring_asked(("P",))
    (('relstring_20', 20), ('relstring', 10), None)
    """
    for name in measures:
        match = _RELSTRING_NAME.fullmatch(name)
        if match:
            return name, int(match.group(1)) if match.group(1) else RELSTRING_LENGTH
    if any(RELSTRING in TREC_EVAL_SETS[name] for name in measures if name in TREC_EVAL_SETS):
        return RELSTRING, RELSTRING_LENGTH
    return None


def trec_eval_measure(measure: Measure, k: int | None) -> str | None:
    """The trec_eval measure (a name of :data:`TREC_EVAL_ORDER`) whose line ``measure``
    prints at cutoff ``k`` (None: the whole ranking), or None when trec_eval has none.

    >>> from pipeline.registry.measures import MEASURE
    >>> trec_eval_measure(MEASURE["P"], 5), trec_eval_measure(MEASURE["map"], 10)
    ('P', 'map_cut')
    >>> trec_eval_measure(MEASURE["iprec_at_recall_0_10"], None), trec_eval_measure(MEASURE["gm_map"], None)
    ('iprec_at_recall', 'gm_map')
    """
    line = measure.trec_name(k)
    if line is None:
        return None
    template = measure.trec_eval if k is None else measure.trec_eval_cut
    base = template.removesuffix("_{k}") if template else line
    for name in (base, re.sub(r"_[0-9.]+$", "", base)):
        if name in TREC_EVAL_ORDER:
            return name
    return None


def in_trec_eval_sets(measure: Measure, k: int | None, sets: tuple[str, ...] | list[str]) -> bool:
    """Whether one of the named ``sets`` prints ``measure``'s line at ``k``, at trec_eval's
    default cutoffs of it.

    >>> from pipeline.registry.measures import MEASURE
    >>> in_trec_eval_sets(MEASURE["P"], 5, ("official",)), in_trec_eval_sets(MEASURE["map"], 5, ("official",))
    (True, False)
    """
    name = trec_eval_measure(measure, k)
    if name is None or (k is not None and k not in measure.trec_cutoffs):
        return False
    return any(name in TREC_EVAL_SETS[s] for s in sets)


def _measure_patterns() -> list[tuple[re.Pattern[str], str]]:
    """Every spelling of a measure: its own name, trec_eval's names (``map``, ``map_cut_10``,
    ``map_cut``) and ir_measures' (``AP``, ``AP@10``, ``R``), a cutoff as a group."""
    spellings: dict[str, str] = {m.selected_by: m.selected_by for m in MEASURES}
    spellings.update({m.name: m.selected_by for m in MEASURES})
    cut: dict[str, str] = {}
    for m in MEASURES:
        for whole, template in ((m.trec_eval, m.trec_eval_cut), (m.ir_measures, m.ir_measures_cut)):
            if whole:
                spellings[whole] = m.selected_by
            if template:
                cut[template] = m.selected_by
                spellings[template.replace("{k}", "").rstrip("_@")] = m.selected_by
    patterns = [(re.compile(re.escape(name)), family) for name, family in spellings.items()]
    patterns += [(re.compile(re.escape(t).replace(re.escape("{k}"), r"(\d+)")), f) for t, f in cut.items()]
    return patterns


_MEASURE_PATTERNS = _measure_patterns()
# the same spellings whatever the case, for a name no spelling matches as written (ndcg@10,
# MAP): taken when every spelling it matches so names one family
_ANY_CASE_PATTERNS = [(re.compile(pattern.pattern, re.IGNORECASE), family) for pattern, family in _MEASURE_PATTERNS]
# what a near miss is compared with: the spellings, a cutoff shown as 10
_SPELLINGS = sorted({pattern.pattern.replace(r"(\d+)", "10").replace("\\", "") for pattern, _ in _MEASURE_PATTERNS})


def _with_parameters(name: str) -> bool:
    """Whether ``name`` is read by ir_measures' parser: it has parameters (``P(rel=2)@5``), or
    it is one of ir_measures' aliases that no spelling of ours matches in any case (``MRR``,
    ``MAP_IA``, ``Precision@5``, ``α_nDCG@10``), which is its measure's name as written."""
    if "(" in name:
        return True
    head = name.partition("@")[0].strip()
    found = ir_measure(head)
    return found is not None and found[0] != found[1].name and not _matched(_ANY_CASE_PATTERNS, name)


def _plain(name: str) -> str:
    """The name without parameters that selects the same measure (``P@5`` for ``P(rel=2)@5``)."""
    return parameter_name(name).plain if _with_parameters(name) else name


def spelled(name: str) -> str:
    """``name`` as the registry spells it (``nDCG@10`` for ``ndcg@10``): itself when a spelling
    matches it as written, else the one spelling that matches it in another case; a name with
    parameters as written, its measure's name in ir_measures' case.

    >>> spelled("ndcg@10"), spelled("MAP"), spelled("P_5"), spelled("ndcg(dcg='exp-log2')@10")
    ('nDCG@10', 'map', 'P_5', "nDCG(dcg='exp-log2')@10")
    """
    text = name.strip()
    if _with_parameters(text):
        return parameter_name(text).label
    if _matched(_MEASURE_PATTERNS, text):
        return text
    for pattern, _ in _ANY_CASE_PATTERNS:
        match = pattern.fullmatch(text)
        if match:
            template = re.sub(r"\\(.)", r"\1", pattern.pattern.replace(r"(\d+)", "{k}"))
            return template.replace("{k}", match.group(1)) if match.groups() else template
    return text


def _matched(patterns: list[tuple[re.Pattern[str], str]], name: str) -> set[tuple[str, int | None]]:
    found = set()
    for pattern, family in patterns:
        match = pattern.fullmatch(name)
        if match:
            found.add((family, int(match.group(1)) if match.groups() else None))
    return found


def measure_named(text: str) -> tuple[str, int | None]:
    """``(family, cutoff or None)`` of one measure as ``--measures`` takes it: a family's name
    (``ndcg``, ``P``, ``recall``, ``map``, ``recip_rank``, ``success``), trec_eval's name of
    one (``P_5``, ``map_cut_10``) or ir_measures' (``nDCG@10``, ``R@100``, ``AP``, ``RR``).

    >>> measure_named("AP@10"), measure_named("recip_rank"), measure_named("ndcg_cut_5")
    (('map', 10), ('recip_rank', None), ('ndcg', 5))

    Any case is taken where it names one measure (``ndcg@10``, ``MAP``); a near miss is named
    with the spelling meant.

    >>> measure_named("ndcg@10"), measure_named("MAP")
    (('ndcg', 10), ('map', None))

    A name with ir_measures' parameters is the measure its name without them is (the
    conventions they ask for are :func:`measure_conventions`'):

    >>> measure_named("P(rel=2)@5"), measure_named("nDCG(dcg='exp-log2')@10")
    (('P', 5), ('ndcg', 10))
    """
    name = text.strip() if isinstance(text, str) else text
    if isinstance(name, str) and _with_parameters(name):
        plain = parameter_name(name).plain
        try:
            return measure_named(plain)
        except SpecError as error:
            raise SpecError(f"measure {name!r} is {plain!r} with parameters: {error}") from None
    found = _matched(_MEASURE_PATTERNS, name) if isinstance(name, str) else set()
    if not found and isinstance(name, str):
        found = _matched(_ANY_CASE_PATTERNS, name)
        if len(found) > 1:
            meant = ", ".join(sorted(f"{family}@{k}" if k else family for family, k in found))
            raise SpecError(f"measure {name!r} names several measures in other cases ({meant}); write it as one does")
    if found:
        ((family, cutoff),) = found
        if cutoff is not None and not 1 <= cutoff <= MAX_CUTOFF:
            raise SpecError(f"measure {name!r}: its cutoff must be a positive integer, at most 2**63 - 1")
        return family, cutoff
    lowered = {spelling.lower(): spelling for spelling in _SPELLINGS}
    close = difflib.get_close_matches(str(name).lower(), list(lowered), n=1, cutoff=0.75)
    meant = f"did you mean {lowered[close[0]]!r}? " if close else ""
    raise SpecError(
        f"unknown measure {name!r}; {meant}expected {', '.join(MEASURE_FAMILIES)} (trec_eval's families), or a "
        "name of trec_eval (P_5, map_cut_10, ndcg_cut_10, success_1) or ir_measures (nDCG@10, P@5, R@100, AP, "
        "RR, Success@1, with its parameters: P(rel=2)@5, nDCG(dcg='exp-log2')@10)"
    )


def parse_measures(text: str) -> tuple[str, ...]:
    """Read ``"ndcg,P,map"`` or ``"nDCG@10,P@5,RR"`` into the measures as given, each checked;
    a comma inside a name's parameters does not split it.

    >>> parse_measures("nDCG@10, P@5,RR")
    ('nDCG@10', 'P@5', 'RR')
    >>> parse_measures("nDCG(gains={0:0,1:1,2:3})@10,P(rel=2)@5")
    ('nDCG(gains={0:0,1:1,2:3})@10', 'P(rel=2)@5')
    """
    names = split_measures(text)
    for name in names:
        if name not in MEASURE_SETS and not _RELSTRING_NAME.fullmatch(name):
            measure_named(name)
    measure_conventions(names)
    return names


# ir_measures' spellings of our measures that are not also ours or trec_eval's (nDCG@10, P@5, AP,
# RR; not P, ndcg or map): a name in one is scored as ir_measures scores it only under its
# conventions, which its parameters, written or left to ir_measures' defaults, say
_IR_MEASURES_SPELLINGS = [
    re.compile(re.escape(template).replace(re.escape("{k}"), r"\d+"))
    for m in MEASURES
    for template in (m.ir_measures, m.ir_measures_cut)
    if template and template not in {m.name, m.trec_eval, m.trec_eval_cut, m.family}
]


def ir_measures_name(name: str) -> ParameterName | None:
    """``name`` as ir_measures reads it when it is in ir_measures' spelling (``nDCG@10``,
    ``P(rel=2)@5``), else None (``P_5``, ``ndcg``, ``map``, ``all_trec``).

    >>> ir_measures_name("ap").label, ir_measures_name("map") is None
    ('AP', True)
    """
    if not isinstance(name, str):
        return None
    if _with_parameters(name):
        return parameter_name(name)
    text = spelled(name)
    return parameter_name(text) if any(p.fullmatch(text) for p in _IR_MEASURES_SPELLINGS) else None


def measure_conventions(given: tuple[str, ...] | list[str]) -> dict[str, tuple[object, str]]:
    """``{convention: (value, name)}``: the conventions that ir_measures' parameters written in
    ``given`` ask for (``P(rel=2)@5``: relevance_threshold 2), each with the first name asking.

    >>> measure_conventions(("P(rel=2)@5", "nDCG(dcg='exp-log2')@10", "P_10"))["relevance_threshold"]
    (2.0, 'P(rel=2)@5')

    A convention holds for the whole evaluation, so two names holding it to different values
    are refused: a parameter written against another name's, or against ir_measures' default
    of it for another name in ir_measures' spelling (``nDCG@10`` is ``dcg='log2'``).

    >>> measure_conventions(("nDCG@10", "nDCG(dcg='exp-log2')@10"))
    Traceback (most recent call last):
    pipeline.registry.base.SpecError: measures nDCG@10 and nDCG(dcg='exp-log2')@10 ask for different \
conventions: gain linear (nDCG@10, by ir_measures' default) and gain exponential (nDCG(dcg='exp-log2')@10); \
a convention holds for the whole evaluation, so evaluate them in separate commands: --measures "nDCG@10", \
then --measures "nDCG(dcg='exp-log2')@10"
    """
    if isinstance(given, str) or not isinstance(given, (tuple, list)):
        return {}
    held = [(named.label, named.conventions()) for name in given if (named := ir_measures_name(name)) is not None]
    asked: dict[str, tuple[object, str]] = {}
    for label, conventions in held:
        for convention, (value, written) in conventions.items():
            if written and convention not in asked:
                asked[convention] = (value, label)
    for convention, (value, asker) in asked.items():
        for label, conventions in held:
            if convention in conventions and not same_setting(convention, conventions[convention][0], value):
                pair = [(asker, value, True), (label, *conventions[convention])]
                pair.sort(key=lambda named: [held_label for held_label, _ in held].index(named[0]))
                (first, *_), (second, *_) = pair
                by_default = ", by ir_measures' default"
                said = " and ".join(
                    f"{convention} {setting_text(convention, held_value)} ({name}{'' if written else by_default})"
                    for name, held_value, written in pair
                )
                raise SpecError(
                    f"measures {first} and {second} ask for different conventions: {said}; a convention holds for "
                    f'the whole evaluation, so evaluate them in separate commands: --measures "{first}", then '
                    f'--measures "{second}"'
                )
    return asked


def ir_measures_defaults(given: Sequence[str]) -> dict[str, object]:
    """The conventions the names in ir_measures' spelling hold their measures to by ir_measures'
    defaults, not by a parameter written (``RBP``: rbp_persistence 0.8), beside the profile
    ``ir_measures``: what ir_measures' own numbers of them are computed under.

    >>> ir_measures_defaults(("RBP", "P@5"))["rbp_persistence"]
    0.8
    """
    defaults: dict[str, object] = {}
    foreign = [named for name in given if (named := ir_measures_name(name)) is not None]
    for named in foreign:
        for convention, (value, written) in named.conventions().items():
            if not written and convention != "relevance_threshold":
                defaults.setdefault(convention, value)
    # every measure reads the ties: ir_measures' order is pyndeval's for its ndeval measures and
    # trec_eval's for the others, so with both kinds named no one order is ir_measures'
    if "ties" in defaults and not all("ties" in named.conventions() for named in foreign):
        del defaults["ties"]
    return defaults


def resolve_measures(given: tuple[str, ...] | list[str]) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The families ``given`` selects (the NDCG family always; in the registry's order) and
    the cutoffs their names carry (``P@5``: 5), which are evaluated as if given to ``k``.

    >>> resolve_measures(("RR", "P@5", "ndcg_cut_10"))
    (('ndcg', 'P', 'recip_rank'), (5, 10))
    """
    if isinstance(given, str) or not isinstance(given, (tuple, list)) or not given:
        raise SpecError(f"measures must be a non-empty list of measure names, got {given!r}")
    sets = tuple(name for name in MEASURE_SETS if name in given)
    strings = tuple(dict.fromkeys(text for text in given if isinstance(text, str) and _RELSTRING_NAME.fullmatch(text)))
    if len(strings) > 1:
        raise SpecError(f"one relstring at a time (trec_eval prints one), got {', '.join(strings)}")
    for text in strings:
        length = _RELSTRING_NAME.fullmatch(text).group(1)  # type: ignore[union-attr]
        if length is not None and not 1 <= int(length) <= MAX_CUTOFF:
            raise SpecError(f"measure {text!r}: its length must be a positive integer, at most 2**63 - 1")
    named = [measure_named(text) for text in given if text not in MEASURE_SETS and text not in strings]
    named += _set_members(sets)
    families = {PRIMARY_MEASURE, *(family for family, _ in named)}
    cutoffs = sorted({k for _, k in named if k is not None})
    # a set's name stays among the measures: trec lines then print each family at its own cutoffs
    # relstring is a line of the trec output, not a column: kept by name, as the sets are
    return (*(f for f in MEASURE_FAMILIES if f in families), *sets, *strings), tuple(cutoffs)


@functools.lru_cache(maxsize=16)
def _set_members(sets: tuple[str, ...]) -> tuple[tuple[str, int | None], ...]:
    """``(family, cutoff)`` of every measure the named sets hold, at trec_eval's cutoffs of it:
    the same for every evaluation asking those sets (each Evaluation resolves its measures)."""
    if not sets:
        return ()
    return tuple((m.selected_by, k) for m in MEASURES for k in (None, *m.trec_cutoffs) if in_trec_eval_sets(m, k, sets))


# trec_eval's and ir_measures' names of one measure over the whole ranking (map, AP, RR, ndcg,
# IPrec@0.1), each to the measure's column; a name not among them (P, recall, ndcg_cut, map_cut,
# success, Rprec_mult) names a family, as trec_eval's -m does.
_WHOLE_RANKING_NAMES: dict[str, str] = {
    name: m.name for m in MEASURES for name in (m.trec_eval, m.ir_measures) if name is not None
}
_CUT_TEMPLATES: dict[str, str] = {
    template: m.name for m in MEASURES for template in (m.trec_eval_cut, m.ir_measures_cut) if template is not None
}


def _cut_family(family: str) -> bool:
    """Whether a family has a measure at a cutoff (P, ndcg_cut), not only over the whole ranking."""
    return any(m.trec_eval_cut or m.ir_measures_cut for m in MEASURES if m.selected_by == family)


def names_a_cutoff(given: tuple[str, ...] | list[str]) -> bool:
    """Whether a name of ``--measures`` (not a set's) carries its own cutoff (``P@5``, ``ndcg_cut_10``).

    >>> names_a_cutoff(("nDCG@10", "AP")), names_a_cutoff(("P", "map", "all_trec"))
    (True, False)
    """
    return any(measure_named(name)[1] is not None for name in _one_by_one(given))


def _one_by_one(given: tuple[str, ...] | list[str]) -> list[str]:
    """The names of ``--measures`` that are measures: neither a set's nor relstring's (a line)."""
    return [name for name in given if name not in MEASURE_SETS and not _RELSTRING_NAME.fullmatch(name.strip())]


def measure_cutoffs(given: tuple[str, ...] | list[str]) -> tuple[int, ...]:
    """The cutoffs evaluated when ``--k`` is not given: those the names carry (``P@5``: 5; a
    set's: trec_eval's of each of its families), and the default cutoffs (``--k``'s) when no
    name carries one or a name asks for a family at its cutoffs (``P``, ``ndcg_cut``), as
    trec_eval's ``-m P`` does.

    >>> measure_cutoffs(("nDCG@10", "P@5", "R@100", "AP", "RR")), measure_cutoffs(("P", "nDCG@10"))
    ((5, 10, 100), (5, 10, 20))
    >>> measure_cutoffs(("ndcg",))
    (5, 10, 20)
    """
    _, named_cutoffs = resolve_measures(given)
    families_at_cutoffs = [
        name
        for name in _one_by_one(given)
        if spelled(_plain(name)) not in _WHOLE_RANKING_NAMES
        and measure_named(name)[1] is None
        and _cut_family(measure_named(name)[0])
    ]
    with_default = families_at_cutoffs or not names_a_cutoff(given)
    return tuple(sorted({*named_cutoffs, *(DEFAULT_CUTOFFS if with_default else ())}))


@dataclass(frozen=True)
class NamedLines:
    """The measures ``--measures`` names one by one, as trec lines print them when a name
    carries a cutoff and ``--k`` is not given: ``nDCG@10,P@5,R@100,AP,RR`` prints
    ``ndcg_cut_10``, ``P_5``, ``recall_100``, ``map`` and ``recip_rank``, nothing else.

    ``cells`` are ``(measure column, cutoff)`` pairs (None: the whole ranking): a name with a
    cutoff, a name of one measure over the whole ranking (``AP``, ``map``, ``RR``, ``ndcg``),
    and a set's (``all_trec``: each of its measures at trec_eval's cutoffs of it).
    ``every_cutoff`` are the columns of the families named without a cutoff (``P``,
    ``recall``, ``map_cut``, ``Rprec_mult``): at every cutoff evaluated and over the whole
    ranking, as trec_eval's ``-m P`` prints them.
    """

    cells: frozenset[tuple[str, int | None]]
    every_cutoff: frozenset[str]

    def shows(self, measure: str, k: int | None) -> bool:
        """Whether the line of ``measure`` at cutoff ``k`` (None: the whole ranking) is asked for."""
        return measure in self.every_cutoff or (measure, k) in self.cells


def named_lines(given: tuple[str, ...] | list[str] | None, *, k_given: bool) -> NamedLines | None:
    """The lines the names of ``--measures`` ask for (:class:`NamedLines`), or None when every
    measure is printed at every cutoff evaluated: ``--k`` was given, or no name carries a cutoff.

    >>> lines = named_lines(("nDCG@10", "AP"), k_given=False)
    >>> lines.shows("ndcg", 10), lines.shows("ndcg", None), lines.shows("map", None), lines.shows("map", 10)
    (True, False, True, False)
    >>> named_lines(("nDCG@10", "AP"), k_given=True) is None
    True
    """
    if not given or k_given or not names_a_cutoff(given):
        return None
    cells: set[tuple[str, int | None]] = set()
    every_cutoff: set[str] = set()
    for name in (*_one_by_one(given), *(name for name in given if name in MEASURE_SETS)):
        if name in MEASURE_SETS:
            cells.update(
                (m.name, k) for m in MEASURES if m.trec_eval or m.trec_eval_cut for k in (None, *m.trec_cutoffs)
            )
            continue
        family, cutoff = measure_named(name)
        text = spelled(_plain(name))
        if cutoff is not None:
            cut = next(column for template, column in _CUT_TEMPLATES.items() if _fills(template, text))
            cells.add((cut, cutoff))
        elif text in _WHOLE_RANKING_NAMES:
            cells.add((_WHOLE_RANKING_NAMES[text], None))
        else:
            every_cutoff.update(m.name for m in MEASURES if m.selected_by == family)
    return NamedLines(frozenset(cells), frozenset(every_cutoff))


def _fills(template: str, name: str) -> bool:
    """Whether ``name`` is ``template`` (``P@{k}``) with a number for ``{k}``."""
    return re.fullmatch(re.escape(template).replace(re.escape("{k}"), r"\d+"), name) is not None


@dataclass(frozen=True)
class AskedValue:
    """One value ``--measures`` asks for, as the table and JSON print it: ``label`` as the
    name was written (in the registry's spelling: ``nDCG@10`` for ``ndcg@10``; a family named
    without a cutoff, ``P``, at each cutoff under trec_eval's line name, ``P_5``), read from the
    summary's ``column`` at cutoff ``k`` (None: the whole ranking)."""

    label: str
    column: str
    k: int | None


def asked_values(
    given: tuple[str, ...] | list[str] | None, *, k_given: bool, cutoffs: tuple[int, ...]
) -> tuple[AskedValue, ...] | None:
    """The values ``--measures`` names one by one, in the order named, when it asks for exactly
    those (:func:`named_lines`: a name carries a cutoff and ``--k`` is not given, and no set is
    named); None when the whole grid of measures by cutoff is printed. ``cutoffs``: those
    evaluated, at which a family named without one (``P``) is printed.

    >>> [(v.label, v.column, v.k) for v in asked_values(("ndcg@10", "P@5", "AP"), k_given=False, cutoffs=(5, 10))]
    [('nDCG@10', 'ndcg', 10), ('P@5', 'P', 5), ('AP', 'map', None)]
    >>> [v.label for v in asked_values(("P", "nDCG@10"), k_given=False, cutoffs=(5, 10))]
    ['P_5', 'P_10', 'nDCG@10']
    >>> asked_values(("nDCG@10", "AP"), k_given=True, cutoffs=(10,)) is None
    True
    """
    if named_lines(given, k_given=k_given) is None or any(name in MEASURE_SETS for name in given or ()):
        return None
    asked: list[AskedValue] = []
    for name in _one_by_one(given or ()):
        family, cutoff = measure_named(name)
        text, label = spelled(_plain(name)), spelled(name)
        if cutoff is not None:
            column = next(column for template, column in _CUT_TEMPLATES.items() if _fills(template, text))
            asked.append(AskedValue(label, column, cutoff))
        elif text in _WHOLE_RANKING_NAMES:
            asked.append(AskedValue(label, _WHOLE_RANKING_NAMES[text], None))
        else:
            asked += [
                AskedValue(line, m.name, k)
                for m in MEASURES
                if m.selected_by == family
                for k in (None, *cutoffs)
                if (line := m.trec_name(k)) is not None
            ]
    return tuple(dict.fromkeys(asked))
