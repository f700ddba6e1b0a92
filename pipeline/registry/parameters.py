"""ir_measures' parameters of a measure (``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``,
``AP(judged_only=True)``, ``RBP(p=0.8)``): read as ir_measures reads them and mapped onto the
conventions they mean, which hold for the whole evaluation.

A name is read as ir_measures' ``parse_measure`` reads it: a Python expression
``Name(key=value, ...)@at``, each value a literal (a number, a quoted text, ``True``/``False``
or a ``{label: gain}`` dict); ``@at`` is its cutoff (``recall`` for ``IPrec``). What each
parameter means is ir_measures' (``measures/*.py``: SUPPORTED_PARAMS) as its providers compute
it (``providers/pytrec_eval_provider.py`` runs trec_eval with ``-l rel`` and ``-J``; a ``gains``
map relabels the qrels before trec_eval's ndcg; ``dcg='exp-log2'`` runs gdeval's ndcg):

=====================  =====================================================================
``rel=r``              relevance_threshold r: a label >= r is relevant (trec_eval ``-l``);
                       ir_measures' default 1 is our default, label > 0, for its integer labels
``judged_only=True``   unjudged drop (trec_eval ``-J``); default False: unjudged zero
``dcg='log2'``         gain linear, discount log2 (trec_eval's ndcg)
``dcg='exp-log2'``     gain exponential, discount log2 (gdeval's ndcg)
``gains={1:1,2:3}``    a gain map 1=1,2=3 (a level not in it keeps its label as its gain)
``p=x``                rbp_persistence x (ir_measures' default 0.8, NERR10's 0.9; ours, trec_eval's, 0.9);
                       Compat's: compat_persistence x (default 0.95)
``min_rel=a``          cwl_min_rel a: the C/W/L measures' (SDCG, ...) lowest label (default 0)
``max_rel=b``          cwl_max_rel b: their highest label (ir_measures requires it; our default 4)
``T=t``                cwl_target t: INST's, INSQ's, NERR11's and BPM's target gain (default 1)
``cutoff=k``           the cutoff, as ``@k``
=====================  =====================================================================

This module knows ir_measures' measures and parameters; :mod:`pipeline.registry.names` asks it
what a name means and which conventions the names of one evaluation ask for.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.registry.base import MAX_CUTOFF, SpecError, number_text
from pipeline.registry.gain import Gain

# ast.parse reads the text of a name: a bound on its size keeps a long --measures cheap to refuse
_LONGEST_NAME = 1000


def split_measures(text: str) -> tuple[str, ...]:
    """The names of a ``--measures`` list: split at the commas outside parentheses, brackets,
    braces and quotes, so that a parameter's own commas stay in its name.

    >>> split_measures("nDCG(gains={0:0,1:1})@10, P@5,RR")
    ('nDCG(gains={0:0,1:1})@10', 'P@5', 'RR')
    """
    names: list[str] = []
    depth, quote, start = 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth < 0:
                raise SpecError(f"measures {text!r}: {char!r} closes nothing (at character {i + 1})")
        elif char == "," and depth == 0:
            names.append(text[start:i].strip())
            start = i + 1
    if quote or depth:
        what = f"the quote {quote}" if quote else "a parenthesis, bracket or brace"
        raise SpecError(f"measures {text!r}: {what} is never closed")
    return (*names, text[start:].strip())


@dataclass(frozen=True)
class Parameter:
    """One parameter of ir_measures: ``kind`` is the type ir_measures checks (``int``, ``bool``,
    ``float``, ``text``, ``dict``), ``convention`` the convention it sets (empty: the measure's
    own, as ``cutoff``), ``means`` what it is in our words (for messages and docs)."""

    name: str
    kind: str
    convention: str
    means: str


PARAMETERS: dict[str, Parameter] = {
    parameter.name: parameter
    for parameter in (
        Parameter("cutoff", "int", "", "the cutoff k, as @k"),
        Parameter("recall", "float", "", "the recall level, as @r"),
        Parameter("rel", "int", "relevance_threshold", "a label >= rel is relevant: --relevance-threshold"),
        Parameter("judged_only", "bool", "unjudged", "True drops unjudged results: --unjudged drop"),
        Parameter("dcg", "text", "gain", "'log2': --gain linear, 'exp-log2': --gain exponential (discount log2)"),
        Parameter("gains", "dict", "gain", "a gain map: {1:1,2:3} is --gain 1=1,2=3"),
        Parameter("p", "float", "rbp_persistence", "the persistence: --rbp-persistence"),
        Parameter("min_rel", "int", "cwl_min_rel", "the scale's lowest label: --cwl-min-rel"),
        Parameter("max_rel", "int", "cwl_max_rel", "the scale's highest label: --cwl-max-rel"),
        Parameter("T", "float", "cwl_target", "the target gain: --cwl-target"),
        Parameter("relative", "bool", "", "True is trec_eval's set_relative_P"),
        Parameter("normalize", "bool", "", "Compat over the ideal ranking's own; True only (ir_measures' default)"),
        Parameter("beta", "float", "", "F's beta; 1.0 only (set_F is F1); (n)NRBP's patience, 0.5 only (ndeval's)"),
        Parameter("alpha", "float", "", "the redundancy intolerance of alpha_(n)DCG and (n)NRBP; 0.5 only (ndeval's)"),
    )
}


@dataclass(frozen=True)
class IrMeasure:
    """One of ir_measures' measures the registry has: ``name`` is ir_measures' (``aliases`` its
    other names that --measures takes without parameters too: ``NDCG``, ``MAP``, ``NumRelRet``),
    ``parameters`` those it takes that we honour, ``refused`` those it takes that we cannot,
    with why; ``fixed`` the conventions ir_measures computes it under with no parameter to
    change them (ERR never drops unjudged results); ``refuse`` says why a set of parameters
    cannot be honoured (ir_measures has no provider computing it, or one whose number is not
    the measure's), or nothing."""

    name: str
    parameters: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    at: str = "cutoff"
    needs_at: bool = False
    refused: tuple[tuple[str, str], ...] = ()
    fixed: tuple[tuple[str, object], ...] = ()
    refuse: Callable[[dict[str, Any]], str] = lambda params: ""

    def plain(self, params: dict[str, Any]) -> str:
        """The name without parameters that selects the same measure (``P@5`` for
        ``P(rel=2)@5``; trec_eval's ``set_relative_P`` for ``SetP(relative=True)``)."""
        at = params.get(self.at)
        if self.name == "NumRet" and "rel" in params:
            return "NumRelRet"
        if self.name == "SetP" and params.get("relative"):
            return "set_relative_P"
        if at is None:
            return self.name
        return f"{self.name}@{at}" if self.at == "cutoff" else f"{self.name}@{float(at):g}"


def _ndcg_refuses(params: dict[str, Any]) -> str:
    if params.get("dcg") != "exp-log2":
        return ""
    if "gains" in params or params.get("judged_only"):
        return (
            "ir_measures computes nDCG with dcg='exp-log2' by gdeval, which takes neither gains nor judged_only "
            "(no provider of ir_measures computes them together)"
        )
    if "cutoff" not in params:
        return (
            "ir_measures computes nDCG with dcg='exp-log2' by gdeval, at a cutoff; over the whole ranking only ranx "
            "computes it, whose numbers are not checked against ours: give a cutoff (nDCG(dcg='exp-log2')@10), or "
            "use --gain exponential --measures ndcg"
        )
    return ""


def _rr_refuses(params: dict[str, Any]) -> str:
    if "cutoff" in params and params.get("judged_only"):
        return "ir_measures computes RR@k by its msmarco provider, which takes no judged_only"
    return ""


def _iprec_refuses(params: dict[str, Any]) -> str:
    if params.get("judged_only"):
        return (
            "with judged_only=True, trec_eval (which ir_measures runs for IPrec) scores NaN at a recall level no "
            "relevant result is needed for where -J leaves a query no result, and so a NaN mean; ours scores 0 "
            "there: --unjudged drop --measures iprec_at_recall gives it"
        )
    return ""


def _numrel_refuses(params: dict[str, Any]) -> str:
    if params.get("rel", 1) != 1:
        return "ir_measures computes NumRel with rel=1 only (pytrec_eval's num_rel ignores the relevance level)"
    return ""


def _set_f_refuses(params: dict[str, Any]) -> str:
    if params.get("beta", 1) != 1:
        return (
            f"beta={params['beta']!r}: the registry's set_F is F1 (beta 1; trec_eval's set_F.beta other than 1 is "
            "not computed here)"
        )
    return ""


def _ndeval_refuses(params: dict[str, Any]) -> str:
    """alpha and beta other than ndeval's 0.5, which the intent-aware measures are computed with."""
    for name in ("alpha", "beta"):
        if float(params.get(name, 0.5)) != 0.5:
            return f"{name}={params[name]!r}: the intent-aware measures are computed with ndeval's {name} 0.5 only"
    return ""


_JUDGED_TOO = (("unjudged", "zero"),)  # ir_measures computes it with every retrieved result kept
_PYNDEVAL = (("ties", "docid-asc"),)  # pyndeval sorts a query's results by score, then docno ascending
_RBP_REL = (
    "ir_measures computes RBP(rel=...) by cwl_eval, with binary relevance and the first 1000 results only; "
    "our rbp is trec_eval's graded RBP. For binary RBP use --gain binary --relevance-threshold REL --measures rbp"
)
IR_MEASURES: tuple[IrMeasure, ...] = (
    IrMeasure("nDCG", ("cutoff", "dcg", "gains", "judged_only"), ("NDCG",), refuse=_ndcg_refuses),
    IrMeasure("P", ("cutoff", "rel", "judged_only"), ("Precision",), needs_at=True),
    IrMeasure("R", ("cutoff", "rel", "judged_only"), ("Recall",), needs_at=True),
    IrMeasure("AP", ("cutoff", "rel", "judged_only"), ("MAP",)),
    IrMeasure("RR", ("cutoff", "rel", "judged_only"), ("MRR",), refuse=_rr_refuses),
    IrMeasure("Success", ("cutoff", "rel", "judged_only"), needs_at=True),
    IrMeasure("NumQ", ()),
    IrMeasure("NumRet", ("rel",), ("NumRelRet",), fixed=_JUDGED_TOO),
    IrMeasure("NumRel", ("rel",), refuse=_numrel_refuses),
    IrMeasure("SetP", ("rel", "relative", "judged_only"), ("SetRelP",)),
    IrMeasure("SetR", ("rel",), fixed=_JUDGED_TOO),
    IrMeasure("SetF", ("rel", "beta", "judged_only"), refuse=_set_f_refuses),
    IrMeasure("Judged", ("cutoff",), fixed=_JUDGED_TOO),
    IrMeasure("Rprec", ("rel", "judged_only"), ("RPrec",)),
    IrMeasure("IPrec", ("recall", "rel", "judged_only"), at="recall", needs_at=True, refuse=_iprec_refuses),
    IrMeasure("Bpref", ("rel",), ("BPref",), fixed=_JUDGED_TOO),
    IrMeasure("infAP", ("rel",), fixed=_JUDGED_TOO),
    IrMeasure(
        "RBP",
        ("p",),
        refused=(
            ("rel", _RBP_REL),
            ("cutoff", "ir_measures computes RBP over the whole ranking only (cwl_eval takes no cutoff)"),
        ),
        fixed=(*_JUDGED_TOO, ("gain", Gain("linear"))),
    ),
    IrMeasure("ERR", ("cutoff",), fixed=_JUDGED_TOO),
    # cwl_eval's C/W/L measures
    IrMeasure(
        "SDCG",
        ("cutoff", "dcg", "min_rel", "max_rel"),
        needs_at=True,
        fixed=_JUDGED_TOO,
        refuse=lambda params: "SDCG's dcg is 'log2' only (ir_measures')" if params.get("dcg", "log2") != "log2" else "",
    ),
    IrMeasure("NERR8", ("cutoff", "min_rel", "max_rel"), needs_at=True, fixed=_JUDGED_TOO),
    IrMeasure("NERR9", ("cutoff", "min_rel", "max_rel"), needs_at=True, fixed=_JUDGED_TOO),
    IrMeasure("INST", ("T", "min_rel", "max_rel"), fixed=_JUDGED_TOO),
    IrMeasure("INSQ", ("T", "min_rel", "max_rel"), fixed=_JUDGED_TOO),
    IrMeasure("NERR10", ("p", "min_rel", "max_rel"), fixed=_JUDGED_TOO),
    IrMeasure("NERR11", ("T", "min_rel", "max_rel"), fixed=_JUDGED_TOO),
    IrMeasure("BPM", ("cutoff", "T", "min_rel", "max_rel"), needs_at=True, fixed=_JUDGED_TOO),
    IrMeasure(
        "Compat",
        ("p", "normalize"),
        fixed=_JUDGED_TOO,
        refuse=lambda params: "" if params.get("normalize", True) else "Compat is computed normalised only",
    ),
    # ndeval's, through pyndeval, which ranks by score and then docno ascending
    IrMeasure("P_IA", ("cutoff", "rel", "judged_only"), needs_at=True, fixed=_PYNDEVAL),
    IrMeasure("StRecall", ("cutoff", "rel"), needs_at=True, fixed=(*_JUDGED_TOO, *_PYNDEVAL)),
    IrMeasure("ERR_IA", ("cutoff", "rel", "judged_only"), needs_at=True, fixed=_PYNDEVAL),
    IrMeasure("AP_IA", ("rel", "judged_only"), ("MAP_IA",), fixed=_PYNDEVAL),
    IrMeasure(
        "alpha_DCG",
        ("cutoff", "alpha", "rel", "judged_only"),
        ("α_DCG",),
        needs_at=True,
        refuse=_ndeval_refuses,
        fixed=_PYNDEVAL,
    ),
    IrMeasure("NRBP", ("alpha", "beta", "rel"), refuse=_ndeval_refuses, fixed=_PYNDEVAL),
    IrMeasure(
        "alpha_nDCG",
        ("cutoff", "alpha", "rel", "judged_only"),
        ("α_nDCG",),
        needs_at=True,
        refuse=_ndeval_refuses,
        fixed=_PYNDEVAL,
    ),
    IrMeasure("nERR_IA", ("cutoff", "rel", "judged_only"), needs_at=True, fixed=_PYNDEVAL),
    IrMeasure("nNRBP", ("alpha", "beta", "rel"), refuse=_ndeval_refuses, fixed=_PYNDEVAL),
)
# ir_measures' aliases are parameters already given (NumRelRet is NumRet(rel=1))
_ALIAS_PARAMETERS: dict[str, dict[str, Any]] = {"NumRelRet": {"rel": 1}, "SetRelP": {"relative": True}}
_BY_NAME: dict[str, tuple[str, IrMeasure]] = {
    name.lower(): (name, measure) for measure in IR_MEASURES for name in (measure.name, *measure.aliases)
}


@dataclass(frozen=True)
class ParameterName:
    """A name with ir_measures' parameters: ``label`` as the output prints it (the measure's
    name in ir_measures' case, the rest as written), ``measure`` and ``params`` as ir_measures
    reads them (an alias's own parameters included), ``given`` the parameters written."""

    label: str
    measure: IrMeasure
    params: dict[str, Any]
    given: frozenset[str]

    @property
    def plain(self) -> str:
        return self.measure.plain(self.params)

    def conventions(self) -> dict[str, tuple[object, bool]]:
        """``{convention: (value, written)}``: each convention the name holds its measure to,
        by a parameter written (True) or by ir_measures' default or fixed choice (False)."""
        held: dict[str, tuple[object, bool]] = {name: (value, False) for name, value in self.measure.fixed}
        params, given = self.params, self.given
        if "rel" in self.measure.parameters and self.measure.name != "NumRet":
            rel = params.get("rel")
            held["relevance_threshold"] = (None if rel is None else float(rel), "rel" in given)
        elif self.measure.name == "NumRet" and "rel" in params:
            held["relevance_threshold"] = (float(params["rel"]), "rel" in given)
        if "judged_only" in self.measure.parameters:
            held["unjudged"] = ("drop" if params.get("judged_only") else "zero", "judged_only" in given)
        if "p" in self.measure.parameters:
            # ir_measures' RBP defaults to 0.8, its NERR10 to 0.9, its Compat (RBO's p, not RBP's) to 0.95
            default, convention = {"NERR10": (0.9, ""), "Compat": (0.95, "compat_persistence")}.get(
                self.measure.name, (0.8, "")
            )
            held[convention or "rbp_persistence"] = (float(params.get("p", default)), "p" in given)
        if "max_rel" in self.measure.parameters:
            # ir_measures' min_rel defaults to 0, ours too; its max_rel has no default, ours 4
            held["cwl_min_rel"] = (float(params.get("min_rel", 0)), "min_rel" in given)
            if "max_rel" in params:
                held["cwl_max_rel"] = (float(params["max_rel"]), True)
        if "T" in self.measure.parameters:
            held["cwl_target"] = (float(params.get("T", 1.0)), "T" in given)
        if self.measure.name == "nDCG":
            kind = "exponential" if params.get("dcg") == "exp-log2" else "linear"
            levels = tuple(sorted((float(a), float(b)) for a, b in params.get("gains", {}).items()))
            held["gain"] = (Gain(kind, levels), bool({"dcg", "gains"} & given))  # type: ignore[arg-type]
            if "dcg" in given:
                held["discount"] = ("log2", True)
        if self.measure.name == "RR" and "cutoff" in params:
            # RR@k is its msmarco provider's, which sorts a query's results by score, then docno
            # ascending; RR without a cutoff is trec_eval's (docno descending)
            held["ties"] = ("docid-asc", False)
        return held


def same_setting(convention: str, first: object, second: object) -> bool:
    """Whether two values of a convention mean the same: a gain map's levels that keep their
    label (1=1) change nothing, and ir_measures' rel=1 is label > 0 for integer labels."""
    if convention == "relevance_threshold":
        return (1.0 if first is None else first) == (1.0 if second is None else second)
    if convention == "gain" and isinstance(first, Gain) and isinstance(second, Gain):
        return _kept(first) == _kept(second)
    return first == second


def setting_text(convention: str, value: object) -> str:
    """A value of a convention as messages write it (``2`` for relevance_threshold 2.0; ir_measures'
    default rel=1 for none).

    >>> setting_text("relevance_threshold", 2.0), setting_text("gain", Gain("exponential"))
    ('2', 'exponential')
    """
    if convention == "relevance_threshold" and value is None:
        return "1"
    return number_text(value) if isinstance(value, float) else str(value)


def _kept(gain: Gain) -> tuple[str, tuple[tuple[float, float], ...]]:
    return gain.kind, tuple(sorted((level, value) for level, value in gain.levels if level != value))


def ir_measure(name: str) -> tuple[str, IrMeasure] | None:
    """``(ir_measures' spelling, measure)`` of one of its names in any case, or None."""
    return _BY_NAME.get(name.lower())


def parameter_name(text: str) -> ParameterName:
    """Read a name with parameters as ir_measures reads it, each parameter checked.

    >>> named = parameter_name("p(rel=2)@5")
    >>> named.label, named.plain, named.conventions()["relevance_threshold"]
    ('P(rel=2)@5', 'P@5', (2.0, True))
    """
    text = text.strip()
    if len(text) > _LONGEST_NAME:
        raise SpecError(f"measure {text[:40]!r}...: longer than {_LONGEST_NAME} characters")
    try:
        tree = ast.parse(text, mode="eval").body
    except SyntaxError:
        raise SpecError(f"measure {text!r}: expected ir_measures' form Name(key=value, ...)@cutoff") from None
    at = None
    if isinstance(tree, ast.BinOp) and isinstance(tree.op, ast.MatMult):
        at, tree = _literal(text, "@", tree.right), tree.left
    if isinstance(tree, ast.Name):  # a name without parameters (P@5, AP)
        tree = ast.Call(func=tree, args=[], keywords=[])
    if not isinstance(tree, ast.Call) or not isinstance(tree.func, ast.Name) or tree.args:
        raise SpecError(f"measure {text!r}: expected ir_measures' form Name(key=value, ...)@cutoff, values named")
    head = tree.func.id
    found = ir_measure(head)
    if found is None:
        names = ", ".join(measure.name for measure in IR_MEASURES)
        raise SpecError(f"measure {text!r}: {head!r} is not one of ir_measures' measures we compute ({names})")
    spelling, measure = found
    written = head if head in (measure.name, *measure.aliases) else measure.name  # ndcg(...): nDCG(...)
    params: dict[str, Any] = dict(_ALIAS_PARAMETERS.get(spelling, {}))
    given: set[str] = set()
    for keyword in tree.keywords:
        key = keyword.arg
        if key is None:
            raise SpecError(f"measure {text!r}: expected key=value parameters, not **")
        if key in given:
            raise SpecError(f"measure {text!r}: parameter {key!r} given twice")
        params[key] = _literal(text, key, keyword.value)
        given.add(key)
    if at is not None:
        if measure.at in given:
            raise SpecError(f"measure {text!r}: its {measure.at} is given twice, in @ and as {measure.at}=")
        params[measure.at] = at
        given.add(measure.at)
    _check(text, measure, params, given)
    return ParameterName(f"{written}{text[len(head) :]}", measure, params, frozenset(given))


def _literal(text: str, key: str, node: ast.expr) -> object:
    """A parameter's value: a literal, as ir_measures' parser takes (a number, a quoted text,
    True/False, a dict of them); anything else is refused by name."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        value = None
    if isinstance(node, (ast.Constant, ast.Dict)) and value is not None:
        return value
    where = "its cutoff" if key == "@" else f"parameter {key!r}"
    raise SpecError(
        f"measure {text!r}: {where} must be a literal (a number, 'text', True or False, or a dict such as "
        f"{{0:0,1:1,2:3}}), got {ast.unparse(node)!r}"
    )


def _supported(measure: IrMeasure) -> str:
    def means(name: str) -> str:
        # Compat's p is its rank-biased overlap's, a convention of its own
        return (
            "the persistence: --compat-persistence"
            if (measure.name, name) == ("Compat", "p")
            else PARAMETERS[name].means
        )

    taken = ", ".join(f"{name} ({means(name)})" for name in measure.parameters)
    return f"{measure.name} takes {taken}" if taken else f"{measure.name} takes no parameter"


def _check(text: str, measure: IrMeasure, params: dict[str, Any], given: set[str]) -> None:
    refused = dict(measure.refused)
    for key in sorted(given):
        if key in refused:
            raise SpecError(
                f"measure {text!r}: parameter {key!r} is not supported here: {refused[key]}; {_supported(measure)}"
            )
        if key not in measure.parameters:
            raise SpecError(f"measure {text!r}: unknown parameter {key!r}; {_supported(measure)}")
        problem = _invalid(key, params[key])
        if problem:
            raise SpecError(f"measure {text!r}: parameter {key}={params[key]!r}: {problem}; {_supported(measure)}")
    if measure.needs_at and measure.at not in params:
        raise SpecError(f"measure {text!r}: ir_measures' {measure.name} needs a {measure.at} ({measure.name}@...)")
    why = measure.refuse(params)
    if why:
        raise SpecError(f"measure {text!r} is not supported: {why}; {_supported(measure)}")


def _invalid(key: str, value: object) -> str:
    """What is wrong with one parameter's value, as ir_measures checks it and as we can honour
    it; empty when nothing is."""
    kind = PARAMETERS[key].kind
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        return "expected a whole number"
    if kind == "bool" and not isinstance(value, bool):
        return "expected True or False"
    if kind == "float" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        return "expected a number"
    if key == "cutoff" and not 1 <= value <= MAX_CUTOFF:  # type: ignore[operator]
        return "a cutoff is a positive integer, at most 2**63 - 1"
    if key == "rel" and value < 1:  # type: ignore[operator]
        return "a relevance level is a positive whole number (trec_eval's, which ir_measures runs, takes no other)"
    if key in ("min_rel", "max_rel") and value < 0:  # type: ignore[operator]
        return "a label of the scale is at least 0 (cwl_eval reads a label below 0 as 0)"
    if key == "T" and not 0.5 < value < math.inf:  # type: ignore[operator]
        return "a target gain above 0.5 (at 0.5 or below cwl_eval's chance of going on can be 0)"
    if key == "p" and not 0 < value < 1:  # type: ignore[operator]
        return "a persistence is strictly between 0 and 1"
    if key == "dcg" and value not in ("log2", "exp-log2"):
        return "expected 'log2' (gain = label) or 'exp-log2' (gain = 2^label - 1)"
    if key == "gains":
        if not isinstance(value, dict) or not value:
            return "expected a dict of labels to gains, such as {0:0,1:1,2:3}"
        wrong = [f"{a!r}:{b!r}" for a, b in value.items() if not all(_whole(x) for x in (a, b))]
        if wrong:
            return f"ir_measures maps whole labels to whole gains (its qrels hold integers), got {', '.join(wrong)}"
        if not all(math.isfinite(float(x)) for pair in value.items() for x in pair):
            return "expected finite gains"
    return ""


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
