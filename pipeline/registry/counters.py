"""The per-rank signals and the counters the measures read.

A measure is a formula over counters (how many relevant results are at or above k, how many
documents the query has judged relevant, ...), and NDCG's sums. A counter counts one per-rank
signal in one way (an accumulation); the engines compute only the counters of the measures asked
for, generically from this registry.

A signal is data, as trec_eval's measures each read their predicate off its one per-rank form
(the judgment list in rank order): the ranking carries each rank's label once, and a signal is a
range of labels (:attr:`Signal.at_least`, :attr:`Signal.below`, :meth:`Signal.bounds`) that both
engines read from here: the Polars engine builds its predicate from it, and the SQL steps that
name the signals and their counters (sql/counters/signals.sql, running_sums.sql, counters.sql)
are generated from it (``make generate``). A new signal is an entry of :data:`SIGNALS` and its
counters entries of :data:`COUNTERS`; no hand-written step names one but the curves that read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pipeline.registry.base import SpecError

Accumulation = Literal["found", "precision_sum", "first_rank", "in_qrels", "in_ranking"]


# A bound of a signal's labels that follows relevance_threshold: labels at or above the
# threshold when it is set (and never below 0: a negative label is unjudged), above 0 when not.
RELEVANCE_LEVEL: Literal["relevance level"] = "relevance level"
Bound = float | Literal["relevance level"] | None


@dataclass(frozen=True)
class Signal:
    """A per-rank input the counters read: whether it holds for the document at a rank, from
    its label (never for a document the judgments do not list). It holds for the labels from
    ``at_least`` (included) up to ``below`` (excluded), either unbounded when None; either may be
    :data:`RELEVANCE_LEVEL`."""

    name: str
    holds: str
    at_least: Bound = None
    below: Bound = None

    def __post_init__(self) -> None:
        for bound in (self.at_least, self.below):
            if isinstance(bound, str) and bound != RELEVANCE_LEVEL:
                raise SpecError(f"signal {self.name!r}: a bound is a number, {RELEVANCE_LEVEL!r} or None")

    def bounds(self, relevance_threshold: float | None) -> dict[str, Any]:
        """The labels it holds for under a threshold, as the Polars engine's predicate reads
        them (:func:`pipeline.engines.polars.counters.holds`; the SQL's is written from
        ``at_least`` and ``below``, the threshold a variable): ``low`` and ``high`` (None:
        unbounded), each included when its ``_closed`` says so.

        >>> SIGNAL["relevant"].bounds(None)
        {'name': 'relevant', 'low': 0.0, 'low_closed': False, 'high': None, 'high_closed': False}
        >>> SIGNAL["nonrelevant"].bounds(2.0)["high"], SIGNAL["nonrelevant"].bounds(2.0)["high_closed"]
        (2.0, False)
        """
        # the relevance level: label >= max(threshold, 0), or label > 0 without a threshold
        level = 0.0 if relevance_threshold is None else max(float(relevance_threshold), 0.0)
        level_included = relevance_threshold is not None
        low, low_closed = (level, level_included) if self.at_least == RELEVANCE_LEVEL else (self.at_least, True)
        high, high_closed = (level, not level_included) if self.below == RELEVANCE_LEVEL else (self.below, False)
        return {
            "name": self.name,
            "low": None if low is None else float(low),
            "low_closed": low_closed,
            "high": None if high is None else float(high),
            "high_closed": high_closed,
        }

    def holds_for(self, label: float | None, relevance_threshold: float | None = None) -> bool:
        """Whether it holds for one label (None: not in the judgments); the reference the
        engines are tested against."""
        bounds = self.bounds(relevance_threshold)
        if label is None:
            return False
        low, high = bounds["low"], bounds["high"]
        above = low is None or label > low or (bounds["low_closed"] and label == low)
        below = high is None or label < high or (bounds["high_closed"] and label == high)
        return above and below


SIGNALS: tuple[Signal, ...] = (
    Signal(
        "relevant", "a judged label (>= 0) at or above relevance_threshold (> 0 when unset)", at_least=RELEVANCE_LEVEL
    ),
    Signal("judged", "a label >= 0 (a negative label counts as unjudged)", at_least=0.0),
    Signal("nonrelevant", "a judged label (>= 0) that is not relevant", at_least=0.0, below=RELEVANCE_LEVEL),
    # trec_eval's pool: a document of the qrels with a negative label was pooled but not judged
    # (its RELVALUE_UNJUDGED), one absent from them was never pooled (RELVALUE_NONPOOL); infAP
    # tells the two apart
    Signal("pooled", "the document is in the query's judgments, whatever its label (a negative one too)"),
)
SIGNAL: dict[str, Signal] = {signal.name: signal for signal in SIGNALS}
SIGNAL_NAMES: tuple[str, ...] = tuple(SIGNAL)

# How a counter accumulates its signal: each is computed for every signal asked for, in one
# running aggregate over the ranks where it holds, read off at each cutoff (k null: the whole
# ranking); in_qrels is per query, from the judgments, the same at every cutoff.
ACCUMULATIONS: dict[str, str] = {
    "found": "ranks at or above k where the signal holds",
    "precision_sum": "sum over those ranks i of (found at i) / i",
    "first_rank": "the first rank where the signal holds (null when none is at or above k)",
    "in_qrels": "documents of the query's judgments where the signal holds (at every k)",
    "in_ranking": "documents of the query's ranking by score (after max_results and unjudged drop)",
}
# The one count of the ranking itself, not of a signal of the judgments: how many documents
# were retrieved (trec_eval's num_ret). An unjudged rank is retrieved too: the SQL steps keep
# every rank of the ranking by score when it is asked, so only the measures that read it pay
# for it; the Polars engine counts the ranking before the join with the judgments instead.
RETRIEVED = "retrieved"


@dataclass(frozen=True)
class Counter:
    """One per-query, per-cutoff count: ``accumulation`` of the per-rank ``signal``. Its name
    is ``<signal>_<accumulation>`` (``relevant_found``): a column of both engines' counters
    (sql/counters/counters.sql, :mod:`pipeline.engines.polars.counters`)."""

    signal: str
    accumulation: Accumulation
    counts: str

    def __post_init__(self) -> None:
        if (self.signal == RETRIEVED) != (self.accumulation == "in_ranking"):
            raise SpecError(f"counter {self.name!r}: in_ranking is the count of the ranking ({RETRIEVED!r}) alone")
        if self.signal not in (*SIGNAL_NAMES, RETRIEVED):
            raise SpecError(f"counter {self.name!r}: unknown signal {self.signal!r}")
        if self.accumulation not in ACCUMULATIONS:
            raise SpecError(f"counter {self.name!r}: unknown accumulation {self.accumulation!r}")

    @property
    def name(self) -> str:
        return f"{self.signal}_{self.accumulation}"


COUNTERS: tuple[Counter, ...] = (
    Counter("relevant", "found", "relevant results at or above k"),
    Counter("relevant", "precision_sum", "the precision at each relevant rank i <= k, summed (AP's numerator)"),
    Counter("relevant", "first_rank", "the first relevant rank, if at or above k"),
    Counter("relevant", "in_qrels", "documents judged relevant for the query (R)"),
    Counter("judged", "found", "judged results (label >= 0) at or above k"),
    Counter("nonrelevant", "found", "judged nonrelevant results at or above k"),
    Counter("nonrelevant", "in_qrels", "documents judged nonrelevant for the query (N, bpref's)"),
    Counter(RETRIEVED, "in_ranking", "results retrieved for the query (n; min(k, n) at or above k)"),
    Counter("pooled", "found", "results in the judgments (any label, a negative one too) at or above k"),
)
COUNTER: dict[str, Counter] = {counter.name: counter for counter in COUNTERS}


def signals_of(counters: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """The per-rank signals those counters read, in the registry's order (what rides along in
    the ranking: none when only NDCG is asked for), then :data:`RETRIEVED` when the count of
    the ranking is read (every rank of the ranking by score is then kept)."""
    read = {COUNTER[name].signal for name in counters}
    return tuple(name for name in (*SIGNAL_NAMES, RETRIEVED) if name in read)
