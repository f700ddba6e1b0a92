"""The TREC Web Track's measures as gdeval.pl computes them: ERR@k (expected reciprocal rank,
Chapelle et al. 2009; ir_measures' ``ERR@k`` runs gdeval) and gdeval's nDCG@k (gains
2^label - 1, the ``gdeval`` profile).

Against independent sources: the arithmetic written out on a small input; gdeval's and
ir_measures' outputs on a fixed input (tests/data/gdeval/, their provenance in its README), which
need no perl; gdeval itself through ir_measures on random data where perl is installed; and
tests/helpers/reference.py's ERR on the engines' edge-case matrix under every convention option,
one evaluation per convention set and engine, Polars and DuckDB agreeing to 1e-9 (the macros
are held to the Polars engine on the same matrix in tests/test_sql_macros.py, every family
asked)."""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
from functools import cache
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline import evaluate
from pipeline.cli import main
from pipeline.errors import InvalidInput
from pipeline.registry import MEASURE, PROFILES, Discount, Evaluation, Gain, SpecError
from pipeline.sql_files import MACROS, sql_file
from tests.helpers import ENGINES, TOLERANCE, compute, frames
from tests.helpers.batch import Batch, Case
from tests.helpers.cases import CASES, OPTION_CASES, OPTION_VALUES, run_frame
from tests.helpers.reference import err_table

GDEVAL = Path(__file__).parent / "data" / "gdeval"
# gdeval prints 5 decimals, and ir_measures' means are of those: half a unit of the last
PRINTED = 5e-6 + 1e-12
GDEVAL_CUTOFFS = (1, 5, 10, 20)


def _err(table: pl.DataFrame) -> dict[tuple[object, int | None], float]:
    return {(row["query_id"], row["k"]): row["err"] for row in table.iter_rows(named=True)}


# --- the arithmetic, written out ------------------------------------------------------------------
# q: a (3), b (unjudged), c (0), d (4), e (1) by score; r: x and y tied, y (2) before x (1) by
# doc_id descending, and x first in arrival; s: judged below 0 only.
HAND_RUN = [
    ("q", "a", 5.0),
    ("q", "b", 4.0),
    ("q", "c", 3.0),
    ("q", "d", 2.0),
    ("q", "e", 1.0),
    ("r", "x", 1.0),
    ("r", "y", 1.0),
    ("s", "m", 1.0),
]
HAND_QRELS = [("q", "a", 3), ("q", "c", 0), ("q", "d", 4), ("q", "e", 1), ("r", "x", 1), ("r", "y", 2), ("s", "m", -1)]


def _hand_expected(g_max: int, y_first: bool) -> dict[tuple[str, int | None], float]:
    def stop(label: int) -> float:
        return (2**label - 1) / 2**g_max

    a, d, e = stop(3), stop(4), stop(1)
    q4 = a + (1 - a) * d / 4  # b unjudged and c labelled 0 stop no reader
    q5 = q4 + (1 - a) * (1 - d) * e / 5
    first, second = (stop(2), stop(1)) if y_first else (stop(1), stop(2))
    r1, r2 = first, first + (1 - first) * second / 2
    return {
        ("q", None): q5,
        ("q", 1): a,
        ("q", 2): a,
        ("q", 4): q4,
        ("r", None): r2,
        ("r", 1): r1,
        ("r", 2): r2,
        ("r", 4): r2,
        ("s", None): 0.0,
        ("s", 1): 0.0,
        ("s", 2): 0.0,
        ("s", 4): 0.0,
    }


def test_err_written_out(engine: str) -> None:
    """gdeval's g_max 4 (R = 7/16, 15/16, 1/16 for labels 3, 4, 1), another g_max, and ties
    under average ordered by doc_id descending, as under docid-desc."""
    run, qrels = frames(HAND_RUN, HAND_QRELS)
    for options, expected in (
        ({}, _hand_expected(4, y_first=True)),
        ({"err_max_grade": 5, "ties": "average"}, _hand_expected(5, y_first=True)),
    ):
        evaluation = Evaluation(measures=("ERR@1", "ERR@2", "ERR@4"), **options)  # type: ignore[arg-type]
        actual = _err(compute(engine, run, qrels, evaluation))
        assert actual == pytest.approx(expected, abs=TOLERANCE), options
    assert _hand_expected(4, True)[("q", 4)] == pytest.approx(7 / 16 + (9 / 16) * (15 / 16) / 4)


@pytest.mark.parametrize("engine", ENGINES)
def test_err_follows_input_order_ties(engine: str) -> None:
    run, qrels = run_frame(HAND_RUN), frames([], HAND_QRELS)[1]
    actual = _err(compute(engine, run, qrels, Evaluation(measures=("ERR@1", "ERR@2", "ERR@4"), ties="input-order")))
    assert actual == pytest.approx(_hand_expected(4, y_first=False), abs=TOLERANCE)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_steps_alone_give_nan_from_a_label_above_g_max(engine: str) -> None:
    """Behind validation, which refuses such a label (below), the steps give it no stop chance:
    ERR@k is NaN where the top k holds one, and the cutoffs above it keep their value."""
    run, qrels = frames([("q", "a", 2.0), ("q", "b", 1.0)], [("q", "a", 1), ("q", "b", 5)])
    actual = _err(compute(engine, run, qrels, Evaluation(measures=("ERR@1", "ERR@2"))))
    assert actual[("q", 1)] == pytest.approx(1 / 16, abs=TOLERANCE)
    assert math.isnan(actual[("q", 2)]) and math.isnan(actual[("q", None)])


def test_a_label_above_g_max_is_refused_as_gdeval_refuses_it(tmp_path: Path) -> None:
    """gdeval.pl dies on a qrels line labelled above its $MAX_JUDGMENT (4), retrieved or not:
    with ERR asked, such a judgment is refused (exit 3), here b's 5 (retrieved) and c's 4.5
    (never retrieved; fractional labels allowed), the largest named; raising err_max_grade to
    5 accepts them, and without ERR they are no error at all. (Every front's words, the same
    case in tests/test_validation_engines.py.)"""
    run, qrels = frames([("q", "a", 2.0), ("q", "b", 1.0)], [("q", "a", 1), ("q", "c", 4.5), ("q", "b", 5)])
    options = {"allow_fractional_labels": True, "measures": ["ERR@2"]}
    for engine in ENGINES:
        with pytest.raises(InvalidInput) as refused:
            evaluate(run, qrels, engine=engine, **options)  # type: ignore[arg-type]
        assert refused.value.exit_code == 3
        assert str(refused.value) == (
            "qrels: column 'relevance' has 2 label(s) above ERR's largest grade g_max = 4, such as 4.5; first at "
            "row {'query_id': 'q', 'doc_id': 'c', 'relevance': 4.5}. ERR stops a reader at a label g with the chance "
            "(2^g - 1) / 2^g_max, which passes 1 above g_max (gdeval refuses such a label); the largest label is 5: "
            "pass --err-max-grade G with G at least that (up to 1023), or leave ERR out of --measures"
        )
        accepted = evaluate(run, qrels, engine=engine, err_max_grade=5, **options)  # type: ignore[arg-type]
        err = {row["k"]: row["err"] for row in accepted.per_query.iter_rows(named=True)}
        assert err[2] == pytest.approx(1 / 32 + (31 / 32) * (31 / 32) / 2, abs=TOLERANCE)
        assert evaluate(run, qrels, engine=engine, allow_fractional_labels=True).per_query.height
    # the table macros name the largest label as the command line does (4.5 beside 5: 5)
    run.collect().write_parquet(tmp_path / "run.parquet")
    qrels.collect().write_parquet(tmp_path / "qrels.parquet")
    connection = duckdb.connect()
    try:
        connection.execute(sql_file(MACROS))
        call = "ndcg_per_query($run, $qrels, measures := ['err'], ks := [2], allow_fractional_labels := true"
        inputs = {"run": str(tmp_path / "run.parquet"), "qrels": str(tmp_path / "qrels.parquet")}
        with pytest.raises(duckdb.Error, match=r"2 label\(s\) above ERR's .* the largest label is 5: pass err_max"):
            connection.execute(f"select * from {call})", inputs).fetchall()
        assert connection.execute(f"select * from {call}, err_max_grade := 5)", inputs).fetchall()
    finally:
        connection.close()


def test_err_max_grade_is_checked() -> None:
    for bad in (0, -1, 1024, 2.5, True):
        with pytest.raises(SpecError, match="err_max_grade must be a positive integer up to 1023"):
            Evaluation(measures=("ERR@10",), err_max_grade=bad)  # type: ignore[arg-type]


# --- gdeval's and ir_measures' outputs on a fixed input (no perl needed) ----------------------------


def _trec_frames() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    run_rows = [
        (topic, doc, float(score))
        for topic, _, doc, _, score, _ in (
            line.split() for line in (GDEVAL / "run.txt").read_text(encoding="utf-8").splitlines()
        )
    ]
    qrels_rows = [
        (topic, doc, float(label))
        for topic, _, doc, label in (
            line.split() for line in (GDEVAL / "qrels.txt").read_text(encoding="utf-8").splitlines()
        )
    ]
    return frames(run_rows, qrels_rows)


def _gdeval_lines(k: int) -> dict[str, tuple[float, float]]:
    """``{topic: (ndcg@k, err@k)}`` as gdeval.pl printed them."""
    lines = (GDEVAL / f"gdeval.{k}.csv").read_text(encoding="utf-8").splitlines()
    assert lines[0] == f"runid,topic,ndcg@{k},err@{k}"
    return {topic: (float(ndcg), float(err)) for _, topic, ndcg, err in (line.split(",") for line in lines[1:])}


@pytest.mark.parametrize("engine", ENGINES)
def test_the_gdeval_profile_gives_gdevals_lines(engine: str) -> None:
    """Each topic gdeval prints (in the run, with a label above 0) and no other, its ndcg@k and
    err@k within gdeval's 5 decimals, at k = 1, 5, 10, 20."""
    run, qrels = _trec_frames()
    measures = tuple(f"ERR@{k}" for k in GDEVAL_CUTOFFS) + tuple(f"nDCG@{k}" for k in GDEVAL_CUTOFFS)
    evaluation = PROFILES["gdeval"].evaluation(measures=measures)
    table = compute(engine, run, qrels, evaluation).filter(pl.col("ndcg").is_not_null())
    for k in GDEVAL_CUTOFFS:
        ours = {
            row["query_id"]: (row["ndcg"], row["err"]) for row in table.filter(pl.col("k") == k).iter_rows(named=True)
        }
        theirs = _gdeval_lines(k)
        assert set(ours) == set(theirs), k
        for topic, (ndcg, err) in theirs.items():
            assert ours[topic][0] == pytest.approx(ndcg, abs=PRINTED), (topic, k)
            assert ours[topic][1] == pytest.approx(err, abs=PRINTED), (topic, k)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_ir_measures_profile_gives_ir_measures_means(engine: str) -> None:
    """ir_measures' means of ERR@k (every qrels topic, 0 where gdeval prints none) and of
    nDCG(dcg='exp-log2')@k, gdeval's nDCG (the ir_measures profile with exponential gains)."""
    run, qrels = _trec_frames()
    theirs = dict(
        (name, float(value))
        for name, value in (line.split("\t") for line in (GDEVAL / "ir_measures.tsv").read_text().splitlines())
    )
    evaluation = PROFILES["ir_measures"].evaluation(
        measures=tuple(f"ERR@{k}" for k in GDEVAL_CUTOFFS), gain=Gain("exponential")
    )
    # the summary as users get it (evaluate: validation, hashed ids, the means of the summary)
    summary = evaluate(run, qrels, evaluation=evaluation, engine=engine).summary
    for k in GDEVAL_CUTOFFS:
        (row,) = summary.filter(pl.col("k") == k).iter_rows(named=True)
        assert row["queries"] == 6  # 101, 102, 104 to 107: not 103, in the run only
        assert row["err"] == pytest.approx(theirs[f"ERR@{k}"], abs=PRINTED), k
        if k in (5, 10):
            assert row["ndcg"] == pytest.approx(theirs[f"nDCG(dcg='exp-log2')@{k}"], abs=PRINTED), k


def test_the_macros_give_gdevals_lines_and_refuse_a_bad_g_max(tmp_path: Path) -> None:
    """The table macros (their SQL is the engines' steps), on gdeval's input as Parquet, under
    the gdeval profile's parameters; err_max_grade refused in the API's words."""
    run, qrels = _trec_frames()
    run.collect().write_parquet(tmp_path / "run.parquet")
    qrels.collect().write_parquet(tmp_path / "qrels.parquet")
    connection = duckdb.connect()
    try:
        connection.execute(sql_file(MACROS))
        call = "ndcg_per_query($run, $qrels, measures := ['err'], ks := [1, 5, 10, 20], gain := 'exponential', "
        inputs = {"run": str(tmp_path / "run.parquet"), "qrels": str(tmp_path / "qrels.parquet")}
        rows = connection.execute(
            f"select query_id, k, ndcg, err from {call} empty_ideal := 'skip') where ndcg is not null", inputs
        ).fetchall()
        for k in GDEVAL_CUTOFFS:
            theirs = _gdeval_lines(k)
            ours = {query: (ndcg, err) for query, cutoff, ndcg, err in rows if cutoff == k}
            assert set(ours) == set(theirs)
            for topic, values in theirs.items():
                assert ours[topic] == pytest.approx(values, abs=PRINTED), (topic, k)
        for bad, shown in (("0", "0"), ("1024", "1024"), ("2.5", "2.5"), ("null", "None")):
            with pytest.raises(
                duckdb.Error, match=f"err_max_grade must be a positive integer up to 1023, got {shown}$"
            ):
                connection.execute(f"select * from {call} err_max_grade := {bad})", inputs).fetchall()
    finally:
        connection.close()


def test_err_at_k_through_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    """ir_measures' name on the command line, the option by its flag, gdeval's line of topic 101."""
    arguments = ["--run", str(GDEVAL / "run.txt"), "--run-format", "trec", "--qrels", str(GDEVAL / "qrels.txt")]
    arguments += ["--qrels-format", "trec", "--profile", "gdeval", "--output-format", "json"]
    assert main(["evaluate", *arguments, "--measures", "ERR@10", "--per-query"]) == 0
    printed = capsys.readouterr().out
    assert '"err_max_grade": 4' in printed
    assert main(["evaluate", *arguments, "--measures", "ERR@10", "--err-max-grade", "5"]) == 0
    assert '"err_max_grade": 5' in capsys.readouterr().out


# --- gdeval itself, through ir_measures, on random data (perl) --------------------------------------

needs_perl = pytest.mark.skipif(
    shutil.which("perl") is None,
    reason="gdeval.pl, which ir_measures runs for ERR@k, is a perl script and perl is not installed; "
    "test_the_gdeval_profile_gives_gdevals_lines compares with its recorded outputs instead",
)


def _random_web_track_data(seed: int) -> tuple[list[tuple], list[tuple]]:
    """Numeric topic ids and labels -1..4, as gdeval reads them; few score values (many ties),
    a third unjudged, topics in either input only, one judged 0 and below only."""
    import random

    rng = random.Random(seed)
    run_rows, qrels_rows = [], []
    for topic in range(1, 11):
        docs = [f"d{i}" for i in range(rng.randint(1, 30))]
        for doc in docs:
            if topic != 10:
                run_rows.append((str(topic), doc, float(rng.randint(0, 6))))
            if rng.random() < 0.67 and topic != 9:
                labels = [-1, 0] if topic == 8 else [-1, 0, 0, 1, 1, 2, 3, 4]
                qrels_rows.append((str(topic), doc, rng.choice(labels)))
        qrels_rows.append((str(topic), "never-retrieved", rng.choice([0, 2, 4])))
    return run_rows, [row for row in qrels_rows if row[0] != "9"]


@needs_perl
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(3))
def test_err_and_gdevals_ndcg_match_ir_measures_on_random_data(engine: str, seed: int) -> None:
    import ir_measures
    from ir_measures import ERR, nDCG

    run_rows, qrels_rows = _random_web_track_data(seed)
    cutoffs = (1, 3, 10, 50)
    measures = [*(ERR @ k for k in cutoffs), *(nDCG(dcg="exp-log2") @ k for k in cutoffs)]
    qrels = [ir_measures.Qrel(q, d, int(label)) for q, d, label in qrels_rows]
    run = [ir_measures.ScoredDoc(q, d, s) for q, d, s in run_rows]
    theirs = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}
    evaluation = PROFILES["ir_measures"].evaluation(
        measures=tuple(f"ERR@{k}" for k in cutoffs), gain=Gain("exponential")
    )
    table = compute(engine, *frames(run_rows, qrels_rows), evaluation)
    ours = {(row["query_id"], row["k"]): row for row in table.iter_rows(named=True)}
    for (query, name), value in theirs.items():
        k = int(name.rsplit("@", 1)[1])
        column = "err" if name.startswith("ERR") else "ndcg"
        assert ours[(query, k)][column] == pytest.approx(value, abs=PRINTED), (query, name)
    # ir_measures leaves out no qrels topic (gdeval's missing ones count 0) and adds none of the run's alone
    assert {query for query, _ in theirs} == {query for query, k in ours if k == 1}


# --- the edge-case matrix: the engines and the reference, one evaluation per convention set ---------


# What ERR does not read (the registry's Measure.ignores), left out of the matrix's options so
# that its cases share fewer evaluations; test_err_ignores_what_the_registry_says checks them.
IGNORED = ("gain", "discount", "ideal", "empty_ideal", "relevance_threshold", "ap_denominator", "precision_denominator")


def _matrix() -> dict[str, tuple[str, dict]]:
    """``{name: (case, options)}``: every case of the matrix as it is, and under each option ERR
    reads those without options of their own (beside cutoffs) and with text ids, which then
    share one evaluation per option (each DuckDB evaluation costs about half a second here)."""
    matrix = {}
    for case, (run_rows, _, options, id_type) in {**CASES, **OPTION_CASES}.items():
        has_duplicates = len({(row[0], row[1]) for row in run_rows}) < len(run_rows)
        own = {name for name in options if name not in ("cutoffs", *IGNORED)} or id_type is not pl.String
        # g_max 2: the matrix's labels 3 and 4 have no stop chance (NaN)
        for choice in [{}, *(choice for group in OPTION_VALUES.values() for choice in group), {"err_max_grade": 2}]:
            if (has_duplicates and "duplicates" not in choice) or (own and choice):
                continue  # duplicates are refused by validation, which these engine-level tests bypass
            read = {name: value for name, value in {**options, **choice}.items() if name not in IGNORED}
            label = ",".join(f"{name}={value}" for name, value in read.items() if name != "cutoffs") or "defaults"
            matrix[f"{case} [{label}]"] = (case, {**read, "measures": ("err",)})
    return matrix


@cache
def _matrix_on(engine: str) -> Batch:
    cases = {}
    for name, (case, options) in _matrix().items():
        run_rows, qrels_rows, _, id_type = {**CASES, **OPTION_CASES}[case]
        cases[name] = Case(run_frame(run_rows, id_type), frames([], qrels_rows, id_type)[1], Evaluation(**options))
    return Batch(cases, lambda run, qrels, evaluation: compute(engine, run, qrels, evaluation))  # type: ignore[arg-type]


def test_err_ignores_what_the_registry_says() -> None:
    """Every convention ERR's registry entry says it ignores, set at once, changes no ERR."""
    run_rows, qrels_rows = _random_web_track_data(7)
    run, qrels = frames(run_rows, qrels_rows)
    ignored = {
        "gain": Gain.parse("1=0,4=-2"),
        "discount": Discount("jk", 3.0),
        "ideal": "retrieved",
        "empty_ideal": "nan",
        "relevance_threshold": 3.0,
        "tie_bounds": True,
        "ap_denominator": "min-k-relevant",
        "precision_denominator": "min-k-retrieved",
    }
    said = set(re.findall(r"[a-z_]+", MEASURE["err"].ignores.split(";")[0]))
    assert {"log_base", *ignored} - {"ap_denominator", "precision_denominator"} <= said
    for engine in ENGINES:
        plain = _err(compute(engine, run, qrels, Evaluation(measures=("ERR@1", "ERR@10"))))
        under = _err(compute(engine, run, qrels, Evaluation(measures=("ERR@1", "ERR@10"), **ignored)))  # type: ignore[arg-type]
        assert under == pytest.approx(plain, abs=TOLERANCE), engine


@pytest.mark.parametrize("engine", ENGINES)
def test_the_edge_case_matrix_matches_the_reference(engine: str) -> None:
    for name, (case, options) in _matrix().items():
        run_rows, qrels_rows, _, _ = {**CASES, **OPTION_CASES}[case]
        evaluation = Evaluation(**options)
        fields = {f.name: getattr(evaluation, f.name) for f in dataclasses.fields(evaluation)}
        fields.pop("cutoffs")
        expected = err_table(run_rows, qrels_rows, list(evaluation.cutoffs), **fields)
        actual = _err(_matrix_on(engine)[name])
        assert set(actual) == set(expected), f"{name}: rows differ: {set(actual) ^ set(expected)}"
        assert actual == pytest.approx(expected, abs=TOLERANCE, nan_ok=True), name
