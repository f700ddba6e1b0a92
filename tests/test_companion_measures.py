"""The companion measures (P, recall, map, recip_rank, success): an edge-case matrix with the
arithmetic written out, Polars and DuckDB SQL against each other (1e-9) and against an
independent pure-Python reference on seeded random data under random conventions, the
default plan's outputs unchanged, the summary, and ``--measures`` through the CLI, the
config file and the API. trec_eval's own outputs: tests/test_trec_eval_measures.py; the
peers: tests/test_peers.py."""

from __future__ import annotations

import dataclasses
import json
import math
from functools import cache
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import Evaluation, Gain
from pipeline.aggregate import summarize
from pipeline.api import make_evaluation
from pipeline.cli import main
from pipeline.engines import duckdb as duckdb_engine
from pipeline.errors import UsageError
from pipeline.io.format import trec_lines
from pipeline.registry import COMPANION_MEASURES, SpecError, measure_named, resolve_measures
from pipeline.sql_files import evaluation_variables
from pipeline.transpile import UNSUPPORTED
from tests.helpers import TOLERANCE, compute, frames
from tests.helpers.batch import Batch, Case, through_api
from tests.helpers.cases import random_case, run_frame
from tests.helpers.reference import _keep_one_per_doc, by_query
from tests.helpers.spark import per_query_on_spark

ALL = ("ndcg", "P", "recall", "map", "recip_rank", "success")


def companions(table: pl.DataFrame) -> dict[tuple, dict[str, float | None]]:
    """``{(query_id, k): {measure: value}}`` of the companion columns of a per-query table."""
    names = [name for name in COMPANION_MEASURES if name in table.columns]
    return {(row["query_id"], row["k"]): {n: row[n] for n in names} for row in table.iter_rows(named=True)}


def assert_close(actual: dict, expected: dict, tolerance: float = TOLERANCE) -> None:
    assert set(actual) == set(expected), f"rows differ: {sorted(set(actual) ^ set(expected), key=str)}"
    for key, values in expected.items():
        for name, want in values.items():
            got = actual[key][name]
            if want is None:
                assert got is None, f"{name} of {key}: {got} != None"
            else:
                assert got == pytest.approx(want, abs=tolerance), f"{name} of {key}: {got} != {want}"


# --- the edge-case matrix, by hand --------------------------------------------------------------
# name: (run rows, qrels rows, evaluation options, {(query, k): {measure: expected}})

A_D = [("q", "a", 4.0), ("q", "b", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)]

EDGE_CASES: dict[str, tuple[list[tuple], list[tuple], dict, dict]] = {
    "graded labels, one relevant never retrieved, fewer results than k": (
        # ranks: a (1, relevant) b (2) c (3, relevant) d (4); z is relevant and not retrieved
        A_D,
        [("q", "a", 1), ("q", "c", 2), ("q", "z", 1)],
        {"cutoffs": (1, 2, 5)},
        {
            ("q", 1): {"P": 1 / 1, "recall": 1 / 3, "map": (1 / 1) / 3, "recip_rank": 1 / 1, "success": 1.0},
            ("q", 2): {"P": 1 / 2, "recall": 1 / 3, "map": (1 / 1) / 3, "recip_rank": 1 / 1, "success": 1.0},
            # P divides by k even when only 4 were retrieved (trec_eval)
            ("q", 5): {"P": 2 / 5, "recall": 2 / 3, "map": (1 / 1 + 2 / 3) / 3, "recip_rank": 1.0, "success": 1.0},
            # P is not defined for the whole ranking: null
            ("q", None): {"P": None, "recall": 2 / 3, "map": (1 / 1 + 2 / 3) / 3, "recip_rank": 1.0, "success": 1.0},
        },
    ),
    "no relevant document judged: 0, not null": (
        [("q", "a", 2.0), ("q", "b", 1.0)],
        [("q", "a", 0), ("q", "b", 0)],
        {"cutoffs": (1, 5)},
        {
            ("q", 1): {"P": 0 / 1, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
            ("q", 5): {"P": 0 / 5, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
            ("q", None): {"P": None, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
        },
    ),
    "the first relevant result below the cutoff": (
        A_D,
        [("q", "d", 1), ("q", "a", 0)],
        {"cutoffs": (2, 5)},
        {
            ("q", 2): {"P": 0 / 2, "recall": 0 / 1, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
            ("q", 5): {"P": 1 / 5, "recall": 1 / 1, "map": (1 / 4) / 1, "recip_rank": 1 / 4, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": (1 / 4) / 1, "recip_rank": 1 / 4, "success": 1.0},
        },
    ),
    "all scores tied: doc_id descending": (
        # order d5 d4 d3 d2 d1 d0: d4 at rank 2, d1 at rank 5
        [("q", f"d{i}", 0.0) for i in range(6)],
        [("q", "d1", 1), ("q", "d4", 2)],
        {"cutoffs": (2, 5)},
        {
            ("q", 2): {"P": 1 / 2, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
            ("q", 5): {"P": 2 / 5, "recall": 2 / 2, "map": (1 / 2 + 2 / 5) / 2, "recip_rank": 1 / 2, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": (1 / 2 + 2 / 5) / 2, "recip_rank": 1 / 2, "success": 1.0},
        },
    ),
    "all queries: a judged query missing from the run scores 0": (
        [("q", "a", 1.0)],
        [("q", "a", 1), ("missing", "x", 2)],
        {"cutoffs": (1,), "all_queries": True},
        {
            ("q", 1): {"P": 1 / 1, "recall": 1 / 1, "map": 1.0, "recip_rank": 1.0, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": 1.0, "recip_rank": 1.0, "success": 1.0},
            ("missing", 1): {"P": 0.0, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
            ("missing", None): {"P": None, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
        },
    ),
    "relevance threshold 2, negative labels never relevant": (
        # relevant: b (rank 2) and d (not retrieved); a is 1 < 2, c is negative (unjudged)
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        [("q", "a", 1), ("q", "b", 2), ("q", "c", -1), ("q", "d", 3)],
        {"cutoffs": (3,), "relevance_threshold": 2},
        {
            ("q", 3): {"P": 1 / 3, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
            ("q", None): {"P": None, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
        },
    ),
    "unjudged drop: the ranking closes up (trec_eval -J)": (
        # x and y are unjudged: dropped, a and b move to ranks 1 and 2
        [("q", "x", 4.0), ("q", "a", 3.0), ("q", "y", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "b", 1)],
        {"cutoffs": (2,), "unjudged": "drop"},
        {
            ("q", 2): {"P": 2 / 2, "recall": 2 / 2, "map": (1 / 1 + 2 / 2) / 2, "recip_rank": 1 / 1, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": 1.0, "recip_rank": 1.0, "success": 1.0},
        },
    ),
    "unjudged kept (the default): the same run": (
        [("q", "x", 4.0), ("q", "a", 3.0), ("q", "y", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "b", 1)],
        {"cutoffs": (2,)},
        {
            ("q", 2): {"P": 1 / 2, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": (1 / 2 + 2 / 4) / 2, "recip_rank": 1 / 2, "success": 1.0},
        },
    ),
    "max results cuts the ranking before the measures (trec_eval -M)": (
        A_D,
        [("q", "b", 1), ("q", "d", 1)],
        {"cutoffs": (5,), "max_results": 3},
        {
            ("q", 5): {"P": 1 / 5, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
            ("q", None): {"P": None, "recall": 1 / 2, "map": (1 / 2) / 2, "recip_rank": 1 / 2, "success": 1.0},
        },
    ),
    "gains play no part: a relevant level mapped to gain 0 still counts": (
        A_D,
        [("q", "a", 1), ("q", "b", 2)],
        {"cutoffs": (2,), "gain": Gain.parse("1=0")},
        {
            ("q", 2): {"P": 2 / 2, "recall": 2 / 2, "map": (1 / 1 + 2 / 2) / 2, "recip_rank": 1.0, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": 1.0, "recip_rank": 1.0, "success": 1.0},
        },
    ),
    "ties average: the measures read the order by doc_id descending": (
        # b and c tie: c (relevant) ranks 2, b ranks 3
        [("q", "a", 2.0), ("q", "b", 1.0), ("q", "c", 1.0)],
        [("q", "c", 1)],
        {"cutoffs": (2,), "ties": "average"},
        {
            ("q", 2): {"P": 1 / 2, "recall": 1 / 1, "map": (1 / 2) / 1, "recip_rank": 1 / 2, "success": 1.0},
            ("q", None): {"P": None, "recall": 1.0, "map": 1 / 2, "recip_rank": 1 / 2, "success": 1.0},
        },
    ),
}


def edge_case(name: str) -> Case:
    run_rows, qrels_rows, options, _ = EDGE_CASES[name]
    return Case(*frames(run_rows, qrels_rows), Evaluation(measures=ALL, **options))


@cache
def edge_cases_on_spark() -> Batch:
    """Every edge case through the API on Spark, the cases that share their conventions in one
    job (tests/helpers/batch.py): a Spark job of a few rows costs its round trips, not its rows."""
    return Batch({name: edge_case(name) for name in EDGE_CASES}, through_api("spark"))


@pytest.mark.parametrize("case", list(EDGE_CASES))
def test_edge_case_matrix(engine: str, case: str) -> None:
    alone = edge_case(case)
    if engine == "spark":
        table = edge_cases_on_spark()[case]
    else:
        table = compute(engine, alone.run, alone.qrels, alone.evaluation)  # type: ignore[arg-type]
    assert_close(companions(table), EDGE_CASES[case][3])


def test_input_order_ties_follow_arrival() -> None:
    # b then c arrive tied at 1.0: b ranks 2 and c (relevant) 3
    run = run_frame([("q", "a", 2.0), ("q", "b", 1.0), ("q", "c", 1.0)])
    _, qrels = frames([], [("q", "c", 1)])
    for engine in ("polars", "duckdb"):
        table = compute(engine, run, qrels, Evaluation(cutoffs=(2,), measures=ALL, ties="input-order"))
        assert_close(
            companions(table),
            {
                ("q", 2): {"P": 0 / 2, "recall": 0.0, "map": 0.0, "recip_rank": 0.0, "success": 0.0},
                ("q", None): {"P": None, "recall": 1.0, "map": 1 / 3, "recip_rank": 1 / 3, "success": 1.0},
            },
        )


# --- an independent reference, and the engines on random data ------------------------------------


def is_relevant_label(label: float | None, threshold: float | None) -> bool:
    """Judged (a label, not negative) and at or above the threshold (> 0 without one)."""
    if label is None or label < 0:
        return False
    return label > 0 if threshold is None else label >= threshold


def reference_companions(run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation) -> dict:
    """``{(query_id, k): {measure: value}}`` by trec_eval's definitions, one query at a time."""
    labels, results = by_query(run_rows, qrels_rows)
    queries = [q for q in results if q in labels]
    if evaluation.all_queries:
        queries += [q for q in labels if q not in results]
    threshold = evaluation.relevance_threshold
    table = {}
    for query_id in dict.fromkeys(queries):
        rows = _keep_one_per_doc(results.get(query_id, []), evaluation.duplicates)
        if evaluation.ties == "input-order":
            ordered = sorted(rows, key=lambda r: (r[3] is None, r[3] or 0, -r[2], r[0]))
        elif evaluation.ties == "docid-asc":
            ordered = sorted(rows, key=lambda r: (-r[2], str(r[1])))
        else:  # docid-desc, and the order that average averages over
            ordered = sorted(rows, key=lambda r: (r[2], str(r[1])), reverse=True)
        if evaluation.max_results is not None:
            ordered = ordered[: evaluation.max_results]
        judged = labels[query_id]
        if evaluation.unjudged == "drop":
            ordered = [r for r in ordered if judged.get(r[1], -1) >= 0]
        relevant = [is_relevant_label(judged.get(r[1]), threshold) for r in ordered]
        relevant_judged = sum(is_relevant_label(label, threshold) for label in judged.values())
        for k in (None, *evaluation.cutoffs):
            top = relevant if k is None else relevant[:k]
            found = sum(top)
            precisions = [sum(top[: i + 1]) / (i + 1) for i, rel in enumerate(top) if rel]
            first = next((i + 1 for i, rel in enumerate(top) if rel), None)
            table[(query_id, k)] = {
                "P": None if k is None else found / k,
                "recall": found / relevant_judged if relevant_judged else 0.0,
                "map": sum(precisions) / relevant_judged if relevant_judged else 0.0,
                "recip_rank": 1 / first if first else 0.0,
                "success": 1.0 if found else 0.0,
            }
    return table


@pytest.mark.parametrize("seed", range(12))
def test_engines_and_reference_agree_on_random_data(seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(seed, conventions=True)
    evaluation = dataclasses.replace(evaluation, measures=ALL)
    run, (_, qrels) = run_frame(run_rows), frames([], qrels_rows)
    by_polars = compute("polars", run, qrels, evaluation)
    by_sql = compute("duckdb", run, qrels, evaluation)
    assert by_polars.columns == by_sql.columns
    assert_frame_equal(by_sql, by_polars, rel_tol=0, abs_tol=TOLERANCE)
    assert_close(companions(by_polars), reference_companions(run_rows, qrels_rows, evaluation))


@pytest.mark.local_engines("four seeds' conventions here; Spark's case below")
@pytest.mark.parametrize("seed", range(4))
def test_the_ndcg_family_is_the_same_bits_with_or_without_companions(engine: str, seed: int) -> None:
    assert_ndcg_family_unchanged_by_companions(engine, seed)


def test_the_ndcg_family_is_the_same_bits_with_or_without_companions_on_spark(local_spark: object) -> None:
    """One seed whose conventions Spark takes (a gain map with a negative gain, the ideal cut at
    the hits): the companions' steps join the same NDCG steps whatever the conventions."""
    *_, evaluation = random_case(1, conventions=True)
    assert not {
        n: v for n, v in evaluation_variables(evaluation).items() if isinstance(v, str) and v in UNSUPPORTED.get(n, {})
    }
    assert_ndcg_family_unchanged_by_companions("spark", 1)


def assert_ndcg_family_unchanged_by_companions(engine: str, seed: int) -> None:
    run_rows, qrels_rows, evaluation = random_case(seed, conventions=True)
    run, (_, qrels) = run_frame(run_rows), frames([], qrels_rows)
    alone = compute(engine, run, qrels, evaluation)
    together = compute(engine, run, qrels, dataclasses.replace(evaluation, measures=ALL))
    assert_frame_equal(together.select(alone.columns), alone, rel_tol=0, abs_tol=0)


def test_the_default_outputs_keep_their_columns(engine: str, request: pytest.FixtureRequest) -> None:
    run, qrels = frames(EDGE_CASES["graded labels, one relevant never retrieved, fewer results than k"][0], [])
    _, qrels = frames([], [("q", "a", 1), ("q", "c", 2)])

    def output_columns(engine: str, run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> list[str]:
        """On Spark, the columns of the planned DataFrame the API collects (computing it adds
        seconds and no column)."""
        if engine != "spark":
            return compute(engine, run, qrels, evaluation).columns
        from pipeline.engines import spark as spark_engine
        from tests.helpers.spark_frames import to_spark

        spark = request.getfixturevalue("local_spark")
        return spark_engine.per_query(to_spark(spark, run), to_spark(spark, qrels), evaluation).columns

    assert output_columns(engine, run, qrels, Evaluation()) == ["query_id", "k", "cg", "dcg", "idcg", "ndcg"]
    some = output_columns(engine, run, qrels, Evaluation(measures=("RR", "P")))
    assert some == ["query_id", "k", "cg", "dcg", "idcg", "ndcg", "P", "recip_rank"]
    bounded = output_columns(engine, run, qrels, Evaluation(measures=("map",), tie_bounds=True))
    assert bounded[6:] == ["map", "ndcg_min", "ndcg_max", "ties_straddle_k"]


# --- summaries ------------------------------------------------------------------------------------


def test_summary_means_the_evaluated_queries(engine: str) -> None:
    # q: relevant at ranks 1 and 3 of 4; r: no relevant document judged (IDCG 0: skipped)
    run, qrels = frames(
        [*A_D, ("r", "a", 1.0)], [("q", "a", 1), ("q", "c", 1), ("r", "a", 0), ("s", "x", 1)], pl.String
    )
    evaluation = Evaluation(cutoffs=(2,), measures=ALL, empty_ideal="skip", all_queries=True)
    table = compute(engine, run, qrels, evaluation)
    summary = summarize(table.lazy()).collect() if engine == "polars" else duckdb_engine.summarize(table)
    rows = {row["k"]: row for row in summary.iter_rows(named=True)}
    # r is left out of every mean (ndcg null); s is missing from the run and scores 0
    assert rows[2]["queries"] == 2
    assert rows[2]["P"] == pytest.approx((1 / 2 + 0 / 2) / 2)
    assert rows[2]["recall"] == pytest.approx((1 / 2 + 0) / 2)
    assert rows[2]["map"] == pytest.approx(((1 / 1) / 2 + 0) / 2)
    assert rows[2]["recip_rank"] == pytest.approx((1 / 1 + 0) / 2)
    assert rows[2]["success"] == pytest.approx((1 + 0) / 2)
    assert rows[None]["P"] is None  # undefined over the whole ranking
    assert rows[None]["map"] == pytest.approx(((1 / 1 + 2 / 3) / 2 + 0) / 2)


def test_trec_lines_carry_trec_eval_names() -> None:
    run, qrels = frames(A_D, [("q", "a", 1), ("q", "c", 2)])
    table = compute("polars", run, qrels, Evaluation(cutoffs=(1, 5), measures=ALL))
    names = {line.split()[0] for line in trec_lines(table, per_query_lines=False).splitlines()}
    assert names == {
        "ndcg",
        "ndcg_cut_1",
        "ndcg_cut_5",
        "P_1",
        "P_5",
        "recall_1",
        "recall_5",
        "map",
        "map_cut_1",
        "map_cut_5",
        "recip_rank",
        "success_1",
        "success_5",
    }


# --- --measures: CLI, config, API -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("P", ("P", None)),
        ("P_5", ("P", 5)),
        ("P@5", ("P", 5)),
        ("recall_10", ("recall", 10)),
        ("R@100", ("recall", 100)),
        ("R", ("recall", None)),
        ("map", ("map", None)),
        ("map_cut_20", ("map", 20)),
        ("AP", ("map", None)),
        ("AP@10", ("map", 10)),
        ("recip_rank", ("recip_rank", None)),
        ("RR", ("recip_rank", None)),
        ("RR@10", ("recip_rank", 10)),
        ("success_1", ("success", 1)),
        ("Success@1", ("success", 1)),
        ("nDCG@10", ("ndcg", 10)),
        ("ndcg_cut_10", ("ndcg", 10)),
        ("cg", ("ndcg", None)),
        # another case, where it names one measure (issue 49)
        ("p", ("P", None)),
        ("ndcg@10", ("ndcg", 10)),
        ("MAP", ("map", None)),
        # ir_measures' aliases (its registry's)
        ("MRR", ("recip_rank", None)),
        ("Precision@5", ("P", 5)),
        ("α_nDCG@10", ("alpha_nDCG", 10)),
    ],
)
def test_measure_names_of_trec_eval_and_ir_measures(text: str, expected: tuple) -> None:
    assert measure_named(text) == expected


@pytest.mark.parametrize("text", ["precision", "P@0", "P@", "nDCG@x", "hit_rate", "map_cut_", ""])
def test_unknown_measures_are_refused(text: str) -> None:
    with pytest.raises(SpecError):
        measure_named(text)


def test_named_cutoffs_join_k_and_ndcg_is_always_computed() -> None:
    assert resolve_measures(("P@3", "RR")) == (("ndcg", "P", "recip_rank"), (3,))
    evaluation = Evaluation(cutoffs=(10,), measures=("P@3", "Success@1"))
    assert (evaluation.cutoffs, evaluation.measures) == ((1, 3, 10), ("ndcg", "P", "success"))
    assert evaluation.describe()["measures"] == ["ndcg", "P", "success"]
    assert Evaluation().describe()["measures"] == ["ndcg"]


def test_the_api_takes_a_text_or_a_list() -> None:
    assert make_evaluation(measures="map,RR").measures == ("ndcg", "map", "recip_rank")
    assert make_evaluation(measures=["success", "P"]).measures == ("ndcg", "P", "success")
    with pytest.raises(UsageError, match="unknown measure 'hit_rate'"):
        make_evaluation(measures="hit_rate")


def test_cli_refuses_an_unknown_measure_with_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", "--measures", "ndcg,hit_rate"])
    assert exited.value.code == 2
    assert "unknown measure 'hit_rate'" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--relevance-threshold", "--log-base"])
def test_a_number_with_an_underscore_is_refused(flag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """float() reads 1_0 as 10: a typo of the threshold the measures count relevance by is an
    error (exit 2), not a threshold of 10."""
    with pytest.raises(SystemExit) as exited:
        main(["evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", flag, "1_0"])
    assert exited.value.code == 2
    assert f"argument {flag}: invalid float value: '1_0' (write the number without _)" in capsys.readouterr().err


def test_config_key_and_json_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run, qrels = frames(A_D, [("q", "a", 1), ("q", "c", 2)])
    run.collect().write_parquet(tmp_path / "run.parquet")
    qrels.collect().write_parquet(tmp_path / "qrels.parquet")
    config = tmp_path / "eval.toml"
    config.write_text(
        f'run = "{tmp_path / "run.parquet"}"\nqrels = "{tmp_path / "qrels.parquet"}"\n'
        'k = [2]\nmeasures = ["recip_rank", "map"]\n'
    )
    assert main(["evaluate", "--config", str(config), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["conventions"]["measures"] == ["ndcg", "map", "recip_rank"]
    by_k = {row["k"]: row for row in printed["summary"]}
    assert by_k[2]["recip_rank"] == pytest.approx(1 / 1)
    assert by_k[2]["map"] == pytest.approx((1 / 1) / 2)
    assert by_k[None]["map"] == pytest.approx((1 / 1 + 2 / 3) / 2)
    assert "P" not in by_k[2]
    assert not math.isnan(by_k[2]["ndcg"])


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_spark_agrees_with_polars_on_random_data(compiled_spark: object) -> None:
    from pipeline.engines import spark as spark_engine

    spark = compiled_spark
    for seed in range(2):  # a few: each plans the composed SQL afresh (about a minute)
        run_rows, qrels_rows, evaluation = random_case(seed, conventions=True)
        # Spark refuses what depends on arrival order (and so does not read a rank column)
        evaluation = dataclasses.replace(
            evaluation,
            measures=ALL,
            ties="average" if evaluation.ties == "input-order" else evaluation.ties,
            duplicates="max-score" if evaluation.duplicates == "first" else evaluation.duplicates,
        )
        run, (_, qrels) = run_frame([row[:3] for row in run_rows]), frames([], qrels_rows)
        by_polars = compute("polars", run, qrels, evaluation)
        table, by_spark = per_query_on_spark(spark, run, qrels, evaluation)  # type: ignore[arg-type]
        assert_frame_equal(by_spark.sort("query_id", "k"), by_polars, rel_tol=0, abs_tol=TOLERANCE)
        summary = pl.from_arrow(spark_engine.summarize(table).toArrow())
        assert isinstance(summary, pl.DataFrame)
        expected = summarize(by_polars.lazy()).collect()
        assert_frame_equal(summary.sort("k", nulls_last=False), expected, rel_tol=0, abs_tol=TOLERANCE)
    # the summary of a table without companions has none
    only_ndcg = spark_engine.per_query(
        spark.createDataFrame(run.collect().to_arrow()),  # type: ignore[attr-defined]
        spark.createDataFrame(qrels.collect().to_arrow()),  # type: ignore[attr-defined]
        Evaluation(),
    )
    assert spark_engine.summarize(only_ndcg).columns == ["k", "queries", "cg", "dcg", "idcg", "ndcg"]
