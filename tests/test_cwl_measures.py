"""The C/W/L user-model measures (Moffat et al.; Azzopardi, Thomas and Moffat, SIGIR 2019) as
cwl_eval computes them, and so ir_measures, which runs cwl_eval for them: SDCG@k, NERR8@k, NERR9@k, INST, INSQ,
NERR10, NERR11 and BPM@k; and ir_measures' Compat (Clarke, Vtyurina and Smucker's compatibility).

Against independent sources: the arithmetic written out on a small input, and ir_measures with
cwl_eval run in the test on random data, one evaluation per convention set and engine (Polars and
DuckDB; the table macros and Spark once each)."""

from __future__ import annotations

import math
import random
import re
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline import evaluate
from pipeline.registry import Evaluation, SpecError
from pipeline.sql_files import MACROS, sql_file
from tests.helpers import ENGINES, TOLERANCE, compute, frames

ir_measures = pytest.importorskip("ir_measures")
pytest.importorskip("cwl")

# q: a (3), b (unjudged), c (0), d (4), e (1) by score; s: judged below 0 and at 0 only
HAND_RUN = [
    ("q", "a", 5.0),
    ("q", "b", 4.0),
    ("q", "c", 3.0),
    ("q", "d", 2.0),
    ("q", "e", 1.0),
    ("s", "m", 2.0),
    ("s", "n", 1.0),
]
HAND_QRELS = [("q", "a", 3), ("q", "c", 0), ("q", "d", 4), ("q", "e", 1), ("s", "m", -1), ("s", "n", 0)]
HAND_CUTOFFS = (1, 3, 5, 2000)


def _values(table: pl.DataFrame, measure: str) -> dict[tuple[object, int | None], float]:
    return {(row["query_id"], row["k"]): row[measure] for row in table.iter_rows(named=True)}


def _discounts(n: int) -> float:
    return sum(1 / math.log2(i + 1) for i in range(1, n + 1))


def test_sdcg_written_out() -> None:
    """SDCG@k = sum over i <= k of gain(i) / log2(i + 1), over the same sum with every gain 1;
    gain = (min(label, max_rel) - min_rel) / (max_rel - min_rel) above min_rel, else 0; past
    rank 1000 (cwl_eval's depth) nothing is read, so @2000 divides by 1000 ranks' discounts."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    # max_rel 3: a gains 1, b (unjudged) and c 0, d (4, capped) 1, e 1/3
    scale_0_3 = {
        1: 1.0,
        3: 1.0 / _discounts(3),
        5: (1.0 + 1 / math.log2(5) + (1 / 3) / math.log2(6)) / _discounts(5),
        2000: (1.0 + 1 / math.log2(5) + (1 / 3) / math.log2(6)) / _discounts(1000),
    }
    # min_rel 1, max_rel 3: a (3 - 1) / 2 = 1, d 1, e (1, at the bottom) 0
    scale_1_3 = {1: 1.0, 3: 1.0 / _discounts(3), 5: (1.0 + 1 / math.log2(5)) / _discounts(5)}
    scale_1_3[2000] = scale_1_3[5] * _discounts(5) / _discounts(1000)
    for engine in ENGINES:
        for evaluation, expected in (
            (Evaluation(cutoffs=HAND_CUTOFFS, measures=("SDCG(max_rel=3)@5",)), scale_0_3),
            (Evaluation(cutoffs=HAND_CUTOFFS, measures=("SDCG@5",), cwl_min_rel=1, cwl_max_rel=3), scale_1_3),
        ):
            got = _values(compute(engine, run, qrels, evaluation), "SDCG")
            for k, value in expected.items():
                assert got[("q", k)] == pytest.approx(value, abs=TOLERANCE), (engine, k)
                assert got[("s", k)] == 0.0
            assert got[("q", None)] is None  # SDCG is of a cutoff only


def test_nerr_written_out() -> None:
    """NERRx@k = sum over i <= K of P(i) * gain(i) / sum of P(i), K = min(k, 1000), P(i) the
    product of 1 - gain above i (NERR8), over i too (NERR9). Under the default scale (0 to 4):
    a 3/4, b (unjudged) and c 0, d 1, e 1/4; past d (gain 1) no rank is reached."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    nerr8 = {1: 0.75, 3: 0.75 / (1 + 0.25 + 0.25), 5: (0.75 + 0.25) / (1 + 0.25 * 3)}
    nerr8[2000] = nerr8[5]
    nerr9 = {1: 0.75, 3: 0.75 / (1 + 0.25 / 2 + 0.25 / 3), 5: (0.75 + 0.25 / 4) / (1 + 0.25 / 2 + 0.25 / 3 + 0.25 / 4)}
    nerr9[2000] = nerr9[5]
    evaluation = Evaluation(cutoffs=HAND_CUTOFFS, measures=("NERR8@5", "NERR9@5"))
    for engine in ENGINES:
        table = compute(engine, run, qrels, evaluation)
        for measure, expected in (("NERR8", nerr8), ("NERR9", nerr9)):
            got = _values(table, measure)
            for k, value in expected.items():
                assert got[("q", k)] == pytest.approx(value, abs=TOLERANCE), (engine, measure, k)
                assert got[("s", k)] == 0.0
            assert got[("q", None)] is None


def test_inst_and_insq_written_out() -> None:
    """Over the positions i = 1 to 1000 (a position past the ranking gains 0), INST and INSQ are
    the sum of P(i) * gain(i) over the sum of P(i), P(i) the product over j < i of
    ((j + a - 1) / (j + a))^2, a = 2T - G(j) (INST; G(j) the gain at or above j) or 2T (INSQ).
    T = 2 here; gains as above: a 3/4, d 1, e 1/4 at ranks 1, 4, 5."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    gains = {1: 0.75, 4: 1.0, 5: 0.25}
    target = 2.0

    def written_out(inst: bool) -> float:
        reach, gained, numerator, denominator = 1.0, 0.0, 0.0, 0.0
        for i in range(1, 1001):
            gain = gains.get(i, 0.0)
            gained += gain
            numerator += reach * gain
            denominator += reach
            a = 2 * target - (gained if inst else 0.0)
            reach *= ((i + a - 1) / (i + a)) ** 2
        return numerator / denominator

    # INSQ's P(i) telescopes to (2T / (i + 2T - 1))^2
    insq = (0.75 + (4 / 7) ** 2 + 0.25 * (4 / 8) ** 2) / sum((4 / (i + 3)) ** 2 for i in range(1, 1001))
    assert written_out(inst=False) == pytest.approx(insq, abs=1e-12)
    evaluation = Evaluation(cutoffs=(5,), measures=("INST(T=2)", "INSQ(T=2)"))
    for engine in ENGINES:
        table = compute(engine, run, qrels, evaluation)
        for measure, value in (("INST", written_out(inst=True)), ("INSQ", insq)):
            got = _values(table, measure)
            assert got[("q", None)] == pytest.approx(value, abs=TOLERANCE), (engine, measure)
            assert got[("s", None)] == 0.0
            assert got[("q", 5)] is None  # of the whole ranking only


def test_nerr10_nerr11_and_bpm_written_out() -> None:
    """NERR10 and NERR11 are INST's sum over the positions 1 to 1000 with P(i) the product over
    j < i of p * (1 - gain(j)) (NERR10) or ((j + 2T - 1) / (j + 2T))^2 * (1 - gain(j)) (NERR11);
    BPM@k is the gain of the first m = min(k, s, 1000) ranks over m, s the first rank whose gain
    at or above it reaches T. Gains as above: a 3/4, d 1, e 1/4 at ranks 1, 4, 5; past d (gain
    1) P is 0."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    p = 0.9  # ir_measures' NERR10 default, and ours
    nerr10 = (0.75 + p**3 * 0.25 * 1.0) / (1 + 0.25 * (p + p**2 + p**3))
    # T = 2: INSQ's P(i) = (4 / (i + 3))^2, times 1 - 3/4 from rank 2 on and 0 past rank 4
    nerr11 = (0.75 + (4 / 7) ** 2 * 0.25 * 1.0) / (1 + 0.25 * ((4 / 5) ** 2 + (4 / 6) ** 2 + (4 / 7) ** 2))
    # T = 1: the gain at or above rank 4 is 1.75, so s = 4; T = 2: 2.0 at rank 5, s = 5
    bpm_1 = {1: 0.75, 3: 0.75 / 3, 5: 1.75 / 4, 2000: 1.75 / 4}
    bpm_2 = {1: 0.75, 3: 0.75 / 3, 5: 2.0 / 5, 2000: 2.0 / 5}
    for engine in ENGINES:
        for measures, whole, bpm in (
            (("NERR10", "BPM@5"), ("NERR10", nerr10), bpm_1),
            (("NERR11(T=2)", "BPM(T=2)@5"), ("NERR11", nerr11), bpm_2),
        ):
            table = compute(engine, run, qrels, Evaluation(cutoffs=HAND_CUTOFFS, measures=measures))
            got = _values(table, whole[0])
            assert got[("q", None)] == pytest.approx(whole[1], abs=TOLERANCE), (engine, measures)
            assert got[("s", None)] == 0.0
            assert got[("q", 5)] is None  # of the whole ranking only
            got = _values(table, "BPM")
            for k, value in bpm.items():
                assert got[("q", k)] == pytest.approx(value, abs=TOLERANCE), (engine, measures, k)
                assert got[("s", k)] == 0.0
            assert got[("q", None)] is None  # of a cutoff only


def test_bpm_reaches_t_as_cwl_evals_running_sum_does() -> None:
    """BPM compares T with the gain at or above a rank added in rank order, as numpy's cumsum in
    cwl_eval adds it: here (labels 0 to 10, T = 18.4) the sum in rank order first reaches 18.4 at
    rank 35, while the same gains added in another order (a window's sum) first do at rank 36."""
    labels = [7, 5, 1, 6, 7, 3, 3, 5, 2, 6, 5, 10, 10, 1, 10, 6, 2, 5, 6, 5]
    labels += [8, 6, 3, 8, 8, 3, 1, 5, 1, 6, 7, 1, 9, 7, 6, 7, 10, 1, 8, 1]
    running, stop = 0.0, None
    for rank, label in enumerate(labels, start=1):
        running += label / 10
        if stop is None and running >= 18.4:
            stop = rank
    assert stop == 35
    assert math.fsum(label / 10 for label in labels[:35]) == pytest.approx(18.4, abs=1e-12)
    run_rows = [("long", f"d{i}", float(100 - i)) for i in range(len(labels))]
    qrels_rows = [("long", f"d{i}", label) for i, label in enumerate(labels)]
    name = "BPM(max_rel=10, T=18.4)@50"
    expected = sum(labels[:35]) / 10 / 35
    assert _peer(run_rows, qrels_rows, [name])[("long", name.replace(" ", ""))] == pytest.approx(expected, abs=1e-12)
    run, qrels = frames(run_rows, qrels_rows)
    for engine in ENGINES:
        got = _values(compute(engine, run, qrels, Evaluation(measures=(name,))), "BPM")
        assert got[("long", 50)] == pytest.approx(expected, abs=TOLERANCE), engine


def test_compat_written_out() -> None:
    """Compat = the sum over i <= D = max(n, |ideal|) of p^(i - 1) * O(i) / i over the same sum
    with O(i) = min(i, |ideal|), O(i) the documents in the top i of both the ranking and the ideal
    (the documents labelled above 0 by label, then the run's score, 0 when not retrieved).
    c: ranking x y z, ideal y (2) z (1, score 1) w (1, not retrieved: 0); n: ranking y (-1) x (-2),
    ideal w (not retrieved, read as 0, above y's -1) y, as ir_measures orders it."""
    run_rows = [("c", "x", 3.0), ("c", "y", 2.0), ("c", "z", 1.0), ("n", "y", -1.0), ("n", "x", -2.0)]
    run_rows += [("s", "m", 2.0), ("s", "n", 1.0)]
    qrels_rows = [("c", "x", 0), ("c", "y", 2), ("c", "z", 1), ("c", "w", 1), ("n", "y", 1), ("n", "w", 1)]
    qrels_rows += [("s", "m", -1), ("s", "n", 0)]
    p = 0.95  # ir_measures' default
    # c: O = 0, 1 ({y}), 2 ({y, z}); the ideal's own O = 1, 2, 3
    compat_c = (p / 2 + p**2 * 2 / 3) / (1 + p + p**2)
    # n: O = 0, 1 ({y}); the ideal's own 1, 2
    compat_n = (p / 2) / (1 + p)
    expected = {"c": compat_c, "n": compat_n, "s": 0.0}
    peer = _peer(run_rows, qrels_rows, ["Compat"])
    assert {query: peer[(query, "Compat")] for query in expected} == pytest.approx(expected, abs=1e-12)
    run, qrels = frames(run_rows, qrels_rows)
    for engine in ENGINES:
        got = _values(compute(engine, run, qrels, Evaluation(cutoffs=(2,), measures=("Compat",))), "Compat")
        for query, value in expected.items():
            assert got[(query, None)] == pytest.approx(value, abs=TOLERANCE), (engine, query)
            assert got[(query, 2)] is None  # of the whole ranking only


def _random_collection(seed: int) -> tuple[list[tuple], list[tuple]]:
    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for q in range(25):
        query = f"q{q}"
        docs = [f"d{d}" for d in range(rng.randint(0, 40))]
        scores = rng.sample(range(10_000), len(docs))  # distinct: no tie for the peers to break
        run_rows += [(query, doc, float(score)) for doc, score in zip(docs, scores, strict=True)]
        pool = docs + [f"u{d}" for d in range(rng.randint(1, 10))]
        qrels_rows += [(query, doc, rng.choice((-1, 0, 0, 1, 2, 3, 4))) for doc in pool if rng.random() < 0.7]
    return run_rows, qrels_rows


def _peer(run_rows: list[tuple], qrels_rows: list[tuple], names: list[str]) -> dict[tuple[str, str], float]:
    qrels = [ir_measures.Qrel(q, d, r) for q, d, r in qrels_rows]
    run = [ir_measures.ScoredDoc(q, d, s) for q, d, s in run_rows]
    measures = [ir_measures.parse_measure(name) for name in names]
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}


@pytest.mark.filterwarnings("ignore")
def test_the_measures_are_cwl_evals_on_random_data() -> None:
    """ir_measures with cwl_eval, run here, on random runs with labels -1 to 4 and unjudged
    results, under two scales; a query of the qrels the run lacks is cwl_eval's to skip."""
    run_rows, qrels_rows = _random_collection(50)
    run, qrels = frames(run_rows, qrels_rows)
    cutoffs = (1, 5, 10, 20)
    for parameters, target, persistence in (("max_rel=3", "", ""), ("min_rel=1, max_rel=4", ", T=2.5", ", p=0.7")):
        names = [f"{measure}({parameters})@{k}" for measure in ("SDCG", "NERR8", "NERR9") for k in cutoffs]
        names += [f"BPM({parameters}{target})@{k}" for k in cutoffs]
        names += [f"{measure}({parameters}{target})" for measure in ("INST", "INSQ", "NERR11")]
        names += [f"NERR10({parameters}{persistence})", f"Compat({persistence[2:]})"]
        expected = _peer(run_rows, qrels_rows, names)
        assert len(expected) > 400
        evaluation = Evaluation(measures=tuple(names))
        for engine in ENGINES:
            table = compute(engine, run, qrels, evaluation)
            for (query, name), value in expected.items():
                measure = name.partition("(")[0]
                k = int(name.rpartition("@")[2]) if "@" in name else None
                got = _values(table, measure)[(query, k)]
                assert got == pytest.approx(value, abs=TOLERANCE), (engine, name, query)


def test_the_scale_is_refused_in_one_rules_words(tmp_path: Path) -> None:
    """The scale must hold a label above 0 (ir_measures requires max_rel; ours defaults to 4, as
    err_max_grade does); the table macros refuse in the API's words and default alike."""
    assert Evaluation(measures=("SDCG@10",)).cwl_max_rel == 4.0
    with pytest.raises(SpecError, match=r"^cwl_max_rel must be above cwl_min_rel \(2\), got 2$"):
        Evaluation(measures=("SDCG@10",), cwl_min_rel=2, cwl_max_rel=2)
    with pytest.raises(SpecError, match=r"^cwl_min_rel must be a finite number at least 0, got -1.0$"):
        Evaluation(measures=("SDCG@10",), cwl_min_rel=-1.0, cwl_max_rel=2)
    with pytest.raises(SpecError, match="parameter 'judged_only'"):
        Evaluation(measures=("SDCG(max_rel=3, judged_only=True)@10",))
    with pytest.raises(SpecError, match="contradicts SDCG"):
        Evaluation(measures=("SDCG(max_rel=3)@10",), cwl_max_rel=2)
    # T, one rule for INST, INSQ, NERR11 and BPM; NERR10's p is the persistence, ir_measures' default 0.9
    target_refused = r"^cwl_target must be a finite number above 0.5, got 0.5$"
    with pytest.raises(SpecError, match=target_refused):
        Evaluation(measures=("BPM@10",), cwl_target=0.5)
    with pytest.raises(SpecError, match=r"parameter T=0.5: a target gain above 0.5"):
        Evaluation(measures=("BPM(T=0.5)@10",))
    assert Evaluation(measures=("NERR10",)).rbp_persistence == 0.9
    assert Evaluation(measures=("NERR10(p=0.8)", "NERR11(T=3)")).rbp_persistence == 0.8
    with pytest.raises(SpecError, match="contradicts NERR10"):
        Evaluation(measures=("NERR10(p=0.8)",), rbp_persistence=0.7)
    # Compat's p is RBO's, a persistence of its own (ir_measures' default 0.95), beside RBP's and NERR10's
    both = Evaluation(measures=("Compat", "NERR10(p=0.5)"))
    assert (both.compat_persistence, both.rbp_persistence) == (0.95, 0.5)
    persistence_refused = r"^compat_persistence must be a number strictly between 0 and 1, got 1.0$"
    with pytest.raises(SpecError, match=persistence_refused):
        Evaluation(measures=("Compat",), compat_persistence=1.0)
    with pytest.raises(SpecError, match="Compat is computed normalised only"):
        Evaluation(measures=("Compat(normalize=False)",))
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    run.collect().write_parquet(tmp_path / "run.parquet")
    qrels.collect().write_parquet(tmp_path / "qrels.parquet")
    inputs = {"run": str(tmp_path / "run.parquet"), "qrels": str(tmp_path / "qrels.parquet")}
    call = "select query_id, k, \"SDCG\" from ndcg_per_query($run, $qrels, measures := ['SDCG'], ks := [5]"
    connection = duckdb.connect()
    try:
        connection.execute(sql_file(MACROS))
        default = connection.execute(f"{call}) where k = 5 order by query_id", inputs).fetchall()
        with pytest.raises(duckdb.Error, match=re.escape("cwl_max_rel must be above cwl_min_rel (1), got 0.5")):
            connection.execute(f"{call}, cwl_min_rel := 1, cwl_max_rel := 0.5)", inputs).fetchall()
        with pytest.raises(duckdb.Error, match=target_refused[1:-1]):
            connection.execute(f"{call}, cwl_target := 0.5)", inputs).fetchall()
        with pytest.raises(duckdb.Error, match=persistence_refused[1:-1].replace("1.0", "1")):
            connection.execute(f"{call}, compat_persistence := 1.0)", inputs).fetchall()
        rows = connection.execute(f"{call}, cwl_max_rel := 3) where k = 5 order by query_id", inputs).fetchall()
    finally:
        connection.close()
    assert rows[0][2] == pytest.approx((1.0 + 1 / math.log2(5) + (1 / 3) / math.log2(6)) / _discounts(5), abs=TOLERANCE)
    assert rows[1][2] == 0.0
    # max_rel 4 (the default): a 3/4, d 1, e 1/4
    assert default[0][2] == pytest.approx(
        (0.75 + 1 / math.log2(5) + 0.25 / math.log2(6)) / _discounts(5), abs=TOLERANCE
    )


# 90 s at load 3-6, past the default 300 s once at load 12: planning nine curve families' SQL
@pytest.mark.timeout(900)
def test_the_measures_on_spark(tmp_path: Path, local_spark: object) -> None:
    """Spark runs the same SQL, transpiled (the positions as Spark's sequence, the products of
    NERR's chances gathered and multiplied, INST's as a sum of logarithms, BPM's running gain
    near T gathered and added in rank order)."""
    run_rows, qrels_rows = _random_collection(51)
    run, qrels = frames(run_rows, qrels_rows)
    names = [f"{m}(max_rel=3)@{k}" for m in ("SDCG", "NERR8", "NERR9") for k in (1, 5, 20)]
    names += [f"BPM(max_rel=3, T=1.5)@{k}" for k in (1, 5, 20)]
    names += [f"{m}(max_rel=3, T=1.5)" for m in ("INST", "INSQ", "NERR11")]
    evaluation = Evaluation(measures=(*names, "NERR10(max_rel=3, p=0.8)", "Compat(p=0.9)"))
    want = compute("polars", run, qrels, evaluation)
    table = evaluate(run, qrels, evaluation=evaluation, engine="spark").per_query
    for measure in ("SDCG", "NERR8", "NERR9", "INST", "INSQ", "NERR10", "NERR11", "BPM", "Compat"):
        expected, got = _values(want, measure), _values(table, measure)
        assert set(got) == set(expected)
        for key, value in expected.items():
            assert got[key] == pytest.approx(value, abs=TOLERANCE), (measure, key)


def _long_and_short_collection() -> tuple[list[tuple], list[tuple]]:
    """Rankings of one result (a full gain that stops NERR's reader, a partial one), of 900 to 1005
    results (random labels, all relevant, one relevant result at rank 950, gains at 1000 and past
    it), and sparse ones: cwl_eval's 1000 positions end inside some and far past others."""
    rng = random.Random(52)
    rankings = {
        "one_full": [4],
        "one_partial": [2],
        "zero_then_gain": [0, None, 3],
        "long": [rng.choice((None, 0, 0, 0, 1, 2, 3, 4)) for _ in range(1005)],
        "dense": [1] * 920,
        "late": [None] * 949 + [3],
        "at_the_depth": [None] * 999 + [2, 4, 4],
        "sparse": [rng.choice((None,) * 30 + (1, 2, 3)) for _ in range(960)],
    }
    run_rows, qrels_rows = [], []
    for query, labels in rankings.items():
        for rank, label in enumerate(labels, start=1):
            run_rows.append((query, f"d{rank}", float(10_000 - rank)))
            if label is not None:
                qrels_rows.append((query, f"d{rank}", label))
    return run_rows, qrels_rows


@pytest.mark.filterwarnings("ignore")
def test_the_measures_past_a_rankings_end_are_cwl_evals() -> None:
    """INST, INSQ, NERR10 and NERR11 sum their reader's chances over the positions past a
    ranking's end in closed form, not position by position: ir_measures with cwl_eval, run here, on
    rankings of one result and of 900 and more, with a target T near its floor 0.5, far above it
    and huge (INST's sum between two gains, a difference of trigamma values about 1 / T apart, lost
    its digits to cancellation there: 1e-6 off at T = 1e10), and a persistence near 1 and far below."""
    run_rows, qrels_rows = _long_and_short_collection()
    run, qrels = frames(run_rows, qrels_rows)
    for target, persistence in ((0.51, 0.99), (40.0, 0.5), (1e10, 0.9999)):
        names = [f"{measure}(max_rel=4, T={target})" for measure in ("INST", "INSQ", "NERR11")]
        names.append(f"NERR10(max_rel=4, p={persistence})")
        expected = _peer(run_rows, qrels_rows, names)
        assert len(expected) == 32
        evaluation = Evaluation(measures=tuple(names))
        for engine in ENGINES:
            table = compute(engine, run, qrels, evaluation)
            for (query, name), value in expected.items():
                got = _values(table, name.partition("(")[0])[(query, None)]
                assert got == pytest.approx(value, rel=1e-12, abs=1e-15), (engine, name, query)
