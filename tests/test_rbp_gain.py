"""The rbp_gain convention: what rank-biased precision credits a rank with.

RBP = (1 - p) * sum over the ranks i of r(i) * p^(i-1) (Moffat and Zobel, ACM TOIS 27(1), 2008).

- ``scaled`` (default), trec_eval 10.0's m_rbp.c as it means to compute: r(i) = max(g(i), 0) /
  max(1, the query's largest judged gain), so RBP is in [0, 1].
- ``unscaled``: r(i) = max(g(i), 0), the gain itself (the label under --gain linear), so a graded
  query can score above 1. This is ranx's ``rbp`` (AmenRa/ranx at 2cae52f, ranx 0.3.21,
  ranx/metrics/rank_biased_precision.py lines 13-35: ``clean_qrels`` keeps the judgments with
  label >= rel_lvl (1 by default), ``weighted_hit_list[i] = qrels[j, 1]``, the raw label, and
  ``(1 - p) * sum(weighted_hit_list * p ** arange(n))``), and trectools' ``TrecEval.get_rbp`` with
  ``binary_topical_relevance=False`` (joaopalotti/trectools at 8a896de, trectools/trec_eval.py
  lines 786-819: the weight ``(1 - p) * p ** (rank - 1)`` times ``rel`` of the judgments with
  rel > 0; its default, binary, is our --gain binary).

Expected values are written out here, copied from ranx's own test suite, or computed by ranx
in the test.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from pipeline import per_query
from pipeline.registry import CONVENTION

P = 0.8
# query g: a 3, b -1 (a negative label: gains 0 and counts as unjudged), c unjudged, d 1; x 2
# is judged but not retrieved. Largest judged gain 3.
# query big: three documents labelled 4, every one retrieved (RBP unscaled passes 1).
# query one: a single relevant document labelled 1 at rank 2 (largest gain 1: nothing to scale).
RUN = [
    ("g", "a", 4.0),
    ("g", "b", 3.0),
    ("g", "c", 2.0),
    ("g", "d", 1.0),
    ("big", "a", 3.0),
    ("big", "b", 2.0),
    ("big", "c", 1.0),
    ("one", "a", 2.0),
    ("one", "b", 1.0),
]
QRELS = [
    ("g", "a", 3),
    ("g", "b", -1),
    ("g", "d", 1),
    ("g", "x", 2),
    ("big", "a", 4),
    ("big", "b", 4),
    ("big", "c", 4),
    ("one", "a", 0),
    ("one", "b", 1),
]
UNSCALED = {
    "g": (1 - P) * (3 + 1 * P**3),  # 0.7024
    "big": (1 - P) * (4 + 4 * P + 4 * P**2),  # 1.952
    "one": (1 - P) * (1 * P),  # 0.16
}
SCALED = {"g": UNSCALED["g"] / 3, "big": UNSCALED["big"] / 4, "one": UNSCALED["one"]}
# rbp_resid reads no gain: 1 - (1 - p) * (the weights of the judged ranks), b (-1) and c unjudged
RESIDUAL = {"g": 1 - (1 - P) * (1 + P**3), "big": 1 - (1 - P) * (1 + P + P**2), "one": 1 - (1 - P) * (1 + P)}

# ranx's tests/unit/ranx/metrics/rank_biased_precision_test.py (AmenRa/ranx at 2cae52f): q1 ranks
# d1 ... d20 in that order, d1, d2, d6, d11, d17 labelled 1; rank_biased_precision(qrels, run, p)
# rounded to 4 places asserts 0.7661 at p 0.5, 0.4526 at 0.8, 0.1881 at 0.95. Binary labels: the
# two choices agree.
RANX_RUN = [("q1", f"d{i}", float(21 - i)) for i in range(1, 21)]
RANX_QRELS = [("q1", f"d{i}", 1) for i in (1, 2, 6, 11, 17)]
RANX_ASSERTED = {0.5: 0.7661, 0.8: 0.4526, 0.95: 0.1881}


def frames(run: list[tuple], qrels: list[tuple]) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    return (
        pl.LazyFrame(run, schema=["query_id", "doc_id", "score"], orient="row"),
        pl.LazyFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row"),
    )


def whole_rows(run: list[tuple], qrels: list[tuple], engine: str, **options: object) -> dict[str, dict]:
    table = per_query(*frames(run, qrels), engine=engine, measures="rbp", k=[1], **options).collect()  # type: ignore[arg-type]
    return {row["query_id"]: row for row in table.filter(pl.col("k").is_null()).iter_rows(named=True)}


def test_the_convention_is_registered_with_trec_eval_as_default() -> None:
    convention = CONVENTION["rbp_gain"]
    assert convention.values == ("scaled", "unscaled") and convention.default == "scaled"
    assert convention.flag == "--rbp-gain"


def test_scaled_and_unscaled_gains_as_written_out(engine: str) -> None:
    for choice, expected in (("scaled", SCALED), ("unscaled", UNSCALED)):
        rows = whole_rows(RUN, QRELS, engine, rbp_persistence=P, rbp_gain=choice)
        for query, value in expected.items():
            assert rows[query]["rbp"] == pytest.approx(value, abs=1e-12), (choice, query)
            assert rows[query]["rbp_resid"] == pytest.approx(RESIDUAL[query], abs=1e-12), (choice, query)
    assert whole_rows(RUN, QRELS, engine, rbp_persistence=P)["big"]["rbp"] == pytest.approx(SCALED["big"], abs=1e-12)


@pytest.mark.local_engines("one Spark case proves the convention: the arithmetic test")
def test_tied_ranks_share_their_mean_gain(engine: str) -> None:
    # a (3) and b (0) tied at rank 1-2 under ties average: each earns 1.5
    run = [("t", "a", 1.0), ("t", "b", 1.0), ("t", "c", 0.5)]
    qrels = [("t", "a", 3), ("t", "b", 0), ("t", "c", 2)]
    unscaled = (1 - P) * (1.5 + 1.5 * P + 2 * P**2)
    for choice, expected in (("scaled", unscaled / 3), ("unscaled", unscaled)):
        rows = whole_rows(run, qrels, engine, rbp_persistence=P, rbp_gain=choice, ties="average")
        assert rows["t"]["rbp"] == pytest.approx(expected, abs=1e-12), choice


@pytest.mark.local_engines("one Spark case proves the convention: the arithmetic test")
def test_ranx_asserted_values(engine: str) -> None:
    for p, asserted in RANX_ASSERTED.items():
        for choice in ("scaled", "unscaled"):
            rbp = whole_rows(RANX_RUN, RANX_QRELS, engine, rbp_persistence=p, rbp_gain=choice)["q1"]["rbp"]
            assert round(rbp, 4) == asserted, (p, choice)
            assert rbp == pytest.approx((1 - p) * sum(p ** (i - 1) for i in (1, 2, 6, 11, 17)), abs=1e-12)


def test_ranx_computes_the_unscaled_gain() -> None:
    ranx = pytest.importorskip("ranx")
    # ranx reads a run's ties in its own order (a numpy argsort): the run here has none
    run: dict[str, dict[str, float]] = {}
    for query, doc, score in RUN:
        run.setdefault(query, {})[doc] = score
    qrels: dict[str, dict[str, int]] = {}
    for query, doc, label in QRELS:
        qrels.setdefault(query, {})[doc] = label
    try:
        scores = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), "rbp.8", return_mean=False, make_comparable=True)
    except Exception as error:  # ranx on this pandas or numba: say why, do not fail our tests
        pytest.skip(f"ranx could not evaluate here: {type(error).__name__}: {error}")
    by_query = dict(zip(ranx.Run(run).keys(), scores, strict=True))
    ours = whole_rows(RUN, QRELS, "polars", rbp_persistence=P, rbp_gain="unscaled")
    for query, value in UNSCALED.items():
        assert by_query[query] == pytest.approx(value, abs=1e-12), query
        assert ours[query]["rbp"] == pytest.approx(by_query[query], abs=1e-12), query


def test_trectools_computes_the_unscaled_gain(tmp_path: Path) -> None:
    trectools = pytest.importorskip("trectools", reason="trectools is not installed in this environment")
    folder = tmp_path
    (folder / "run").write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for i, (q, d, s) in enumerate(RUN, 1)))
    (folder / "qrels").write_text("".join(f"{q} 0 {d} {label}\n" for q, d, label in QRELS))
    evaluation = trectools.TrecEval(trectools.TrecRun(str(folder / "run")), trectools.TrecQrel(str(folder / "qrels")))
    per_query_rbp, _ = evaluation.get_rbp(p=P, per_query=True, binary_topical_relevance=False, average_ties=False)
    ours = whole_rows(RUN, QRELS, "polars", rbp_persistence=P, rbp_gain="unscaled")
    for query, value in UNSCALED.items():
        assert float(per_query_rbp.loc[query].iloc[0]) == pytest.approx(value, abs=1e-12), query
        assert ours[query]["rbp"] == pytest.approx(value, abs=1e-12), query
