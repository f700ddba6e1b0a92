"""``ndcg evaluate --output-format ndeval``: the CSV ``ndeval`` 4.5 prints (the TREC Web Track's
diversity evaluation, the ndeval.c pyndeval bundles), byte for byte on the inputs it reads.

ndeval prints a header, then a line per topic of the run, by topic number (a topic of the run
without judgments a line of zeros), then ``runid,amean``: each column's sum over those lines
divided by the number of topics in both the run and the judgments. Its 21 columns are ERR-IA,
nERR-IA, alpha-DCG and alpha-nDCG at 5, 10 and 20, NRBP, nNRBP, MAP-IA, P-IA and strec at 5, 10
and 20, each with ``%.6f``. A judged topic without a relevant judgment has an nNRBP of 0/0, which
ndeval prints ``-nan`` (as glibc prints the NaN of 0.0/0.0 on x86-64), and so does the amean then;
the other formats give 0 there. The runid is the tag (6th field) of the run's first line.

Its numbers are ours under ``--profile ndeval`` at k = 5, 10 and 20: the format brings them, and
refuses, naming the flag, whatever would put another number under ndeval's header. Ties take
``--ties``: ``docid-asc`` (the profile's; pyndeval's order, and ndeval's own when the run's rank
field follows it) or ``docid-desc`` (ndeval's ``-traditional``). ndeval's default orders a run by
its rank field, which a TREC run is not read for (trec_eval ignores it): a run whose ranks follow
neither order has no ``--ties`` that gives ndeval's lines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.io.format import text_value
from pipeline.io.gdeval_format import refuse_flags, refuse_other_conventions
from pipeline.registry import Evaluation, profile_named

NDEVAL_PROFILE = "ndeval"
NDEVAL_CUTOFFS = (5, 10, 20)
NDEVAL_DIGITS = 6
# ndeval's columns: (header, the per-query column, at k or over the whole ranking)
_AT_K = (("ERR-IA", "ERR_IA"), ("nERR-IA", "nERR_IA"), ("alpha-DCG", "alpha_DCG"), ("alpha-nDCG", "alpha_nDCG"))
_WHOLE = (("NRBP", "NRBP"), ("nNRBP", "nNRBP"), ("MAP-IA", "AP_IA"))
_AT_K_AFTER = (("P-IA", "P_IA"), ("strec", "strec"))
COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    *((f"{name}@{k}", column, k) for name, column in _AT_K for k in NDEVAL_CUTOFFS),
    *((name, column, None) for name, column in _WHOLE),
    *((f"{name}@{k}", column, k) for name, column in _AT_K_AFTER for k in NDEVAL_CUTOFFS),
)
NDEVAL_MEASURES = ("ndcg", *dict.fromkeys(column for _, column, _ in COLUMNS))
# the tie orders ndeval has: pyndeval's (its own by a run's rank field that follows it), -traditional
_NDEVAL_TIES = ("docid-asc", "docid-desc")
_ELSEWHERE = "or use --output-format table|trec|json"
_NAN = "-nan"


def ndeval_defaults(
    *,
    profile: str | None,
    measures: Sequence[str] | None,
    k_given: bool,
    digits: int,
    group_by: str | None,
    skip_unchanged: bool,
    allow_fractional_labels: bool,
    as_json: bool,
) -> tuple[str, tuple[str, ...], str]:
    """The profile, measures and cutoffs ``--output-format ndeval`` evaluates, after refusing
    (exit 2) the flags that cannot go with it."""
    prefix = refuse_flags(
        NDEVAL_PROFILE,
        "ndeval",
        NDEVAL_DIGITS,
        profile=profile,
        digits=digits,
        group_by=group_by,
        skip_unchanged=skip_unchanged,
        allow_fractional_labels=allow_fractional_labels,
        as_json=as_json,
    )
    if measures or k_given:
        given = "--measures" if measures else "--k"
        raise UsageError(
            f"{prefix}: its 21 columns at k = 5, 10 and 20, which {given} would change: leave {given} out, {_ELSEWHERE}"
        )
    return NDEVAL_PROFILE, NDEVAL_MEASURES, ",".join(map(str, NDEVAL_CUTOFFS))


def check_ndeval_conventions(evaluation: Evaluation) -> None:
    """Refuse (exit 2, naming each flag) a convention other than the ndeval profile's, but for
    the tie orders ndeval has."""
    if evaluation.ties not in _NDEVAL_TIES:
        raise UsageError(
            f"--output-format ndeval prints ndeval's numbers, which orders tied scores by doc_id, ascending "
            f"or descending (-traditional), and --ties {evaluation.ties} is neither: use --ties "
            f"{' or '.join(_NDEVAL_TIES)}, {_ELSEWHERE}"
        )
    ndeval = profile_named(NDEVAL_PROFILE).evaluation(
        cutoffs=evaluation.cutoffs, measures=evaluation.measures, ties=evaluation.ties
    )
    refuse_other_conventions(evaluation, ndeval, NDEVAL_PROFILE, "ndeval", ())


def check_ndeval_labels(warnings: Sequence[object], qrels: str) -> None:
    """Refuse (exit 3) judgments with a negative label: ndeval reads a judgment as a natural
    number and refuses the file (the other formats count such a label as unjudged)."""
    for warning in warnings:
        if getattr(warning, "code", None) == "negative_labels":
            raise InvalidInput(
                f"{qrels}: {getattr(warning, 'count', 'some')} judgment(s) with a negative label, and ndeval reads "
                f"a judgment as a natural number (it refuses the file): remove them, {_ELSEWHERE}"
            )


def ndeval_lines(per_query: pl.DataFrame, run_topics: pl.Series, judged_topics: pl.Series, run_id: str) -> str:
    """ndeval's output from the per-query table (the topics in both inputs), the run's topics
    and the judgments' topics (ids of digits: :func:`~pipeline.io.gdeval_format.check_gdeval_ids`)."""
    values: dict[int, list[float]] = {}
    judged = {int(topic) for topic in judged_topics.cast(pl.String).to_list()}
    whole = per_query.filter(pl.col("k").is_null())
    without_relevant = {int(q) for q in whole.filter(pl.col("idcg") == 0)["query_id"].cast(pl.String).to_list()}
    as_text = per_query.with_columns(pl.col("query_id").cast(pl.String))
    by_query = {(int(row["query_id"]), row["k"]): row for row in as_text.iter_rows(named=True)}
    for topic in sorted({int(topic) for topic in run_topics.cast(pl.String).to_list()}):
        if topic not in judged:
            values[topic] = [0.0] * len(COLUMNS)
            continue
        row = []
        for _, column, k in COLUMNS:
            value = by_query[(topic, k)][column]
            row.append(math.nan if column == "nNRBP" and topic in without_relevant else float(value or 0.0))
        values[topic] = row
    runid = text_value(run_id)
    lines = ["runid,topic," + ",".join(header for header, _, _ in COLUMNS)]
    lines += [f"{runid},{topic}," + _numbers(row) for topic, row in values.items()]
    both = len(judged & set(values))
    totals = [sum(row[i] for row in values.values()) for i in range(len(COLUMNS))]
    lines.append(f"{runid},amean," + _numbers([total / both if both else math.nan for total in totals]))
    return "\n".join(lines) + "\n"


def _numbers(row: Sequence[float]) -> str:
    return ",".join(_NAN if math.isnan(value) else f"{value:.{NDEVAL_DIGITS}f}" for value in row)
