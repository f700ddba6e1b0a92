"""The per-rank signals and the counters the measures read.

A measure is a formula over counters (how many relevant results are at or above k, how many
documents the query has judged relevant, ...), and NDCG's sums. A counter counts one per-rank
signal in one way (an accumulation); the engines compute only the counters of the measures asked
for, generically from this registry.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pipeline.registry.base import SpecError

Accumulation = Literal["found", "precision_sum", "first_rank", "in_qrels", "in_ranking"]


@dataclass(frozen=True)
class Signal:
    """A per-rank input the counters read: whether it holds for the document at a rank (from
    its judgment: false for a document the qrels do not judge)."""

    name: str
    holds: str


SIGNALS: tuple[Signal, ...] = (
    Signal("relevant", "a judged label (>= 0) at or above relevance_threshold (> 0 when unset)"),
    Signal("judged", "a label >= 0 (a negative label counts as unjudged)"),
    Signal("nonrelevant", "a judged label (>= 0) that is not relevant"),
    # trec_eval's pool: a document of the qrels with a negative label was pooled but not judged
    # (its RELVALUE_UNJUDGED), one absent from them was never pooled (RELVALUE_NONPOOL); infAP
    # tells the two apart
    Signal("pooled", "the document is in the query's judgments, whatever its label (a negative one too)"),
)
SIGNAL_NAMES: tuple[str, ...] = tuple(signal.name for signal in SIGNALS)

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
# were retrieved (trec_eval's num_ret). Asking for it keeps every rank of the ranking by score
# (an unjudged rank is retrieved too), so only the measures that read it pay for it.
RETRIEVED = "retrieved"


@dataclass(frozen=True)
class Counter:
    """One per-query, per-cutoff count: ``accumulation`` of the per-rank ``signal``. Its name
    is ``<signal>_<accumulation>`` (``relevant_found``): the column of Polars' counters, and
    in SQL the column ``<accumulation>`` of the counters row joined as ``<signal>``
    (``relevant.found``)."""

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
