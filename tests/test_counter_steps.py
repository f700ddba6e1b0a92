"""Each step of the counters stage (sql/counters/) on a few given rows, against the rows it must
give, as jaffle-shop's unit tests give a model rows and expect rows: the step's file run alone in
DuckDB over the given views, and, where its twin has the same shape, the Polars engine's twin
(pipeline/engines/polars/counters.py) on the same rows. Expected rows are written out by hand,
with their arithmetic."""

from __future__ import annotations

import math

import duckdb
import polars as pl
import pytest

from pipeline.engines.duckdb import set_variables
from pipeline.engines.polars import counters as polars_counters
from pipeline.registry import Evaluation
from pipeline.sql_files import evaluation_variables, sql_file

# every signal of the registry, the default threshold (a label > 0 is relevant)
EVERY_SIGNAL = Evaluation(measures=("all_trec",), cutoffs=(1, 2))


def run_step(step: str, given: dict[str, pl.DataFrame], evaluation: Evaluation, **variables: object) -> pl.DataFrame:
    """The view ``step`` (sql/counters/<step>.sql) over the ``given`` views, with the evaluation's
    variables (and ``variables`` over them)."""
    connection = duckdb.connect()
    for name, frame in given.items():
        connection.register(name, frame)
    set_variables(connection, {**evaluation_variables(evaluation), **variables})
    connection.execute(sql_file(f"counters/{step}.sql"))
    return connection.sql(f"from {step}").pl()


def rows(frame: pl.DataFrame, *columns: str) -> set[tuple[object, ...]]:
    return set(frame.select(columns).iter_rows())


# a query's ranking by score: rank 1 labelled 2, rank 2 labelled 0, rank 3 labelled -1 (judged
# nothing: pooled, not judged), rank 4 labelled 1; and its judgments, one document more (e, 3)
RANKINGS = pl.DataFrame(
    {
        "ranking": ["retrieved"] * 4 + ["ideal"] * 3,
        "query_id": ["q"] * 7,
        "rank": [1, 2, 3, 4, 1, 2, 3],
        "credited_gain": [2.0, 0.0, 0.0, 1.0, 3.0, 2.0, 1.0],
        "label": [2.0, 0.0, -1.0, 1.0, None, None, None],
    }
)
JUDGMENTS = pl.DataFrame(
    {
        "query_id": ["q"] * 5,
        "doc_id": ["a", "b", "c", "d", "e"],
        "label": [2.0, 0.0, -1.0, 1.0, 3.0],
        "gain": [2.0, 0.0, 0.0, 1.0, 3.0],
    }
)


def test_signals_hold_where_the_registry_s_bounds_hold() -> None:
    """relevant: label > 0; judged: label >= 0; nonrelevant: judged and not relevant (0);
    pooled: any label (-1 too); at the ranks of the ranking by score and at each judgment."""
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, EVERY_SIGNAL)
    expected_ranks = {
        (1, "relevant"), (1, "judged"), (1, "pooled"),
        (2, "judged"), (2, "nonrelevant"), (2, "pooled"),
        (3, "pooled"),
        (4, "relevant"), (4, "judged"), (4, "pooled"),
    }  # fmt: skip
    assert rows(got.filter(pl.col("source") == "ranking"), "rank", "signal") == expected_ranks
    judged = got.filter(pl.col("source") == "judgments")
    assert judged["signal"].value_counts().sort("signal").rows() == [
        ("judged", 4), ("nonrelevant", 1), ("pooled", 5), ("relevant", 3)
    ]  # fmt: skip
    # the Polars twin: a column per signal, the same truth per rank
    twin = polars_counters.signals(RANKINGS.lazy().filter(pl.col("ranking") == "retrieved"), EVERY_SIGNAL).collect()
    names = [signal.name for signal in EVERY_SIGNAL.signals]
    assert {
        (rank, name)
        for rank, *held in twin.select("rank", *names).iter_rows()
        for name, h in zip(names, held, strict=True)
        if h
    } == expected_ranks


def test_a_threshold_moves_the_relevance_level() -> None:
    """With relevance_threshold 2, relevant is label >= 2 and nonrelevant 0 <= label < 2."""
    evaluation = Evaluation(measures=("all_trec",), cutoffs=(1,), relevance_threshold=2)
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, evaluation)
    ranked = got.filter(pl.col("source") == "ranking")
    assert rows(ranked.filter(pl.col("signal") == "relevant"), "rank") == {(1,)}
    assert rows(ranked.filter(pl.col("signal") == "nonrelevant"), "rank") == {(2,), (4,)}


def test_no_signal_asked_gives_no_row() -> None:
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, Evaluation())
    assert got.height == 0


SIGNALS = pl.DataFrame(
    {
        "source": ["ranking"] * 4,
        "query_id": ["q"] * 4,
        "rank": [1, 3, 4, 2],
        "signal": ["relevant", "relevant", "relevant", "judged"],
    }
)


def test_running_sums_of_gains_and_counts_of_signals() -> None:
    """Gains: cg and dcg up to each earning rank. Signals: found, the first rank, and found /
    rank summed over the ranks where it holds (AP's numerator)."""
    got = run_step("running_sums", {"rankings": RANKINGS, "signals": SIGNALS}, EVERY_SIGNAL).sort(
        "ranking", "signal", "rank", nulls_last=False
    )
    retrieved = got.filter((pl.col("ranking") == "retrieved") & pl.col("signal").is_null())
    # the earning ranks 1 (gain 2) and 4 (gain 1): 1/log2(2) = 1, 1/log2(5)
    assert retrieved["cg"].to_list() == pytest.approx([2.0, 2.0, 2.0, 3.0])
    assert retrieved["dcg"].to_list() == pytest.approx([2.0, 2.0, 2.0, 2.0 + 1.0 / math.log2(5)])
    assert retrieved["next_rank"].to_list() == [2, 3, 4, None]
    relevant = got.filter(pl.col("signal") == "relevant")
    assert relevant["rank"].to_list() == [1, 3, 4]
    assert relevant["found"].to_list() == [1, 2, 3]
    assert relevant["first_rank"].to_list() == [1, 1, 1]
    assert relevant["precision_sum"].to_list() == pytest.approx([1 / 1, 1 / 1 + 2 / 3, 1 / 1 + 2 / 3 + 3 / 4])
    assert relevant["next_rank"].to_list() == [3, 4, None]
    judged = got.filter(pl.col("signal") == "judged")
    assert judged.select("rank", "found", "first_rank", "precision_sum").rows() == [(2, 1, 2, pytest.approx(0.5))]
    # the Polars twin, the signals as columns, counted in the same pass as the sums
    ranking = RANKINGS.filter(pl.col("ranking") == "retrieved").select(
        "query_id",
        "rank",
        "credited_gain",
        relevant=pl.col("rank").is_in([1, 3, 4]),
        judged=pl.col("rank") == 2,
        nonrelevant=pl.lit(False),
        pooled=pl.lit(False),
    )
    twin = polars_counters.running_sums(ranking.lazy(), EVERY_SIGNAL, counted=True).collect().sort("rank")
    assert twin["cg"].to_list() == pytest.approx(retrieved["cg"].to_list())
    assert twin["dcg"].to_list() == pytest.approx(retrieved["dcg"].to_list())
    at_relevant = twin.filter(pl.col("relevant"))
    assert at_relevant["relevant_found"].to_list() == relevant["found"].to_list()
    assert at_relevant["relevant_first_rank"].to_list() == relevant["first_rank"].to_list()
    assert at_relevant["relevant_precision_sum"].to_list() == pytest.approx(relevant["precision_sum"].to_list())


def test_sums_at_cutoffs_are_those_of_the_last_row_at_or_above_k() -> None:
    running = run_step("running_sums", {"rankings": RANKINGS, "signals": SIGNALS}, EVERY_SIGNAL)
    cutoffs = pl.DataFrame({"k": [1, 2, 3, None]}, schema={"k": pl.Int64})
    got = run_step("sums_at_cutoffs", {"running_sums": running, "cutoffs": cutoffs}, EVERY_SIGNAL)
    relevant = got.filter(pl.col("signal") == "relevant").sort("k", nulls_last=True)
    # relevant at ranks 1, 3, 4: at k = 1 and 2 the row of rank 1, at 3 the row of rank 3, the whole ranking rank 4
    assert relevant.select("k", "found").rows() == [(1, 1), (2, 1), (3, 2), (None, 3)]
    judged = got.filter(pl.col("signal") == "judged").sort("k", nulls_last=True)
    assert judged.select("k", "found").rows() == [(2, 1), (3, 1), (None, 1)]  # none at or above k = 1: no row
    ideal = got.filter(pl.col("ranking") == "ideal").sort("k", nulls_last=True)
    assert ideal.select("k", "cg").rows() == [(1, 3.0), (2, 5.0), (3, 6.0), (None, 6.0)]


RUN = pl.DataFrame({"query_id": ["q", "q", "r"], "doc_id": ["a", "x", "y"], "score": [1.0, 0.5, 1.0]})
TWO_QUERIES = pl.concat([JUDGMENTS, pl.DataFrame({"query_id": ["s"], "doc_id": ["z"], "label": [1.0], "gain": [1.0]})])
RETRIEVED = pl.DataFrame({"ordering": ["retrieved"] * 3, "query_id": ["q", "q", "r"], "rank": [1, 2, 1]})


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({}, {"q"}),  # judged and in the run
        ({"all_queries": True}, {"q", "s"}),  # every judged query (s: judged, not run)
        ({"queries_without_judgments": "evaluate"}, {"q", "r"}),  # r: run, not judged
        ({"all_queries": True, "queries_without_judgments": "evaluate"}, {"q", "r", "s"}),
    ],
)
def test_evaluated_queries(options: dict[str, object], expected: set[str]) -> None:
    evaluation = Evaluation(measures=("num_ret",), cutoffs=(1,), **options)  # type: ignore[arg-type]
    given = {"run": RUN, "judgments": TWO_QUERIES, "retrieved": RETRIEVED}
    got = run_step("evaluated_queries", given, evaluation)
    assert set(got["query_id"]) == expected
    # num_ret's count of the ranking: q retrieved 2, r 1, s none
    counts = dict(got.select("query_id", "retrieved_in_ranking").iter_rows())
    assert counts == {query: {"q": 2, "r": 1, "s": 0}[query] for query in expected}


def test_counters_are_the_signals_rows_as_the_registry_s_columns() -> None:
    running = run_step("running_sums", {"rankings": RANKINGS, "signals": SIGNALS}, EVERY_SIGNAL)
    cutoffs = pl.DataFrame({"k": [1, 3, None]}, schema={"k": pl.Int64})
    at_cutoffs = run_step("sums_at_cutoffs", {"running_sums": running, "cutoffs": cutoffs}, EVERY_SIGNAL)
    judgments_rows = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, EVERY_SIGNAL)
    evaluated = pl.DataFrame({"query_id": ["q"], "retrieved_in_ranking": [4]})
    given = {
        "evaluated_queries": evaluated,
        "cutoffs": cutoffs,
        "sums_at_cutoffs": at_cutoffs,
        "signals": judgments_rows,
    }
    got = run_step("counters", given, EVERY_SIGNAL).sort("k", nulls_last=True)
    assert got["k"].to_list() == [1, 3, None]
    assert got["relevant_found"].to_list() == [1, 2, 3]
    assert got["relevant_first_rank"].to_list() == [1, 1, 1]
    assert got["relevant_precision_sum"].to_list() == pytest.approx([1.0, 1 + 2 / 3, 1 + 2 / 3 + 3 / 4])
    assert got["judged_found"].to_list() == [None, 1, 1]  # the judged row at rank 2: none at or above k = 1
    # of the judgments: relevant a, d, e (labels 2, 1, 3); nonrelevant b (label 0)
    assert got["relevant_in_qrels"].to_list() == [3, 3, 3]
    assert got["nonrelevant_in_qrels"].to_list() == [1, 1, 1]
    assert got["retrieved_in_ranking"].to_list() == [4, 4, 4]
