"""Each step of the counters stage (sql/counters/) on a few given rows, against the rows it must
give, as jaffle-shop's unit tests give a model rows and expect rows: the step's file run alone in
DuckDB over the given views, and the Polars engine's twin (pipeline/engines/polars/counters.py)
on the same rows. Expected rows are written out by hand, with their arithmetic."""

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
SIGNAL_NAMES = ["relevant", "judged", "nonrelevant", "pooled"]


def run_step(step: str, given: dict[str, pl.DataFrame], evaluation: Evaluation) -> pl.DataFrame:
    """The view ``step`` (sql/counters/<step>.sql) over the ``given`` views, with the evaluation's
    variables."""
    connection = duckdb.connect()
    for name, frame in given.items():
        connection.register(name, frame)
    set_variables(connection, evaluation_variables(evaluation))
    connection.execute(sql_file(f"counters/{step}.sql"))
    return connection.sql(f"from {step}").pl()


# a query's ranking by score: rank 1 labelled 2 (gain 2), rank 2 labelled 0, rank 3 labelled -1
# (pooled, not judged), rank 4 labelled 1 (gain 1); its ideal ranking of three gains; and its
# judgments, one document more (e, 3)
RANKINGS = pl.DataFrame(
    {
        "ranking": ["retrieved"] * 4 + ["ideal"] * 3,
        "query_id": ["q"] * 7,
        "rank": [1, 2, 3, 4, 1, 2, 3],
        "credited_gain": [2.0, 0.0, 0.0, 1.0, 3.0, 2.0, 1.0],
        "discounted_gain": [2.0, 0.0, 0.0, 1.0 / math.log2(5), 3.0, 2.0 / math.log2(3), 0.5],
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
# relevant: label > 0; judged: label >= 0; nonrelevant: judged and not relevant (0); pooled: any label
HOLDS = {
    1: {"relevant", "judged", "pooled"},
    2: {"judged", "nonrelevant", "pooled"},
    3: {"pooled"},
    4: {"relevant", "judged", "pooled"},
}


def held(frame: pl.DataFrame) -> dict[int, set[str]]:
    return {row["rank"]: {name for name in SIGNAL_NAMES if row[name]} for row in frame.iter_rows(named=True)}


def test_signals_hold_where_the_registry_s_ranges_hold() -> None:
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, EVERY_SIGNAL)
    ranks = got.filter((pl.col("source") == "ranking") & (pl.col("ranking") == "retrieved"))
    assert held(ranks) == HOLDS
    assert not got.filter(pl.col("ranking") == "ideal").select(SIGNAL_NAMES).to_numpy().any()  # no label
    judged = got.filter(pl.col("source") == "judgments")
    assert judged.select(pl.col(SIGNAL_NAMES).cast(pl.Int64).sum()).row(0) == (3, 4, 1, 5)
    # the Polars twin: the same column per signal
    twin = polars_counters.signals(RANKINGS.lazy().filter(pl.col("ranking") == "retrieved"), EVERY_SIGNAL).collect()
    assert held(twin) == HOLDS


def test_a_threshold_moves_the_relevance_level() -> None:
    """With relevance_threshold 2, relevant is label >= 2 and nonrelevant 0 <= label < 2."""
    evaluation = Evaluation(measures=("all_trec",), cutoffs=(1,), relevance_threshold=2)
    for got in (
        run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, evaluation).filter(
            (pl.col("source") == "ranking") & (pl.col("ranking") == "retrieved")
        ),
        polars_counters.signals(RANKINGS.lazy().filter(pl.col("ranking") == "retrieved"), evaluation).collect(),
    ):
        assert got.filter(pl.col("relevant"))["rank"].to_list() == [1]
        assert got.filter(pl.col("nonrelevant"))["rank"].to_list() == [2, 4]


def test_a_signal_not_asked_holds_nowhere() -> None:
    """P alone reads the signal relevant only: the others are false everywhere."""
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, Evaluation(measures=("P",)))
    assert not got.select("judged", "nonrelevant", "pooled").to_numpy().any()
    assert got.filter(pl.col("relevant") & (pl.col("source") == "ranking"))["rank"].to_list() == [1, 4]


def test_no_signal_asked_no_judgment_rows() -> None:
    """NDCG alone reads no signal: the judged documents are not carried."""
    got = run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, Evaluation(measures=("ndcg",)))
    assert got.filter(pl.col("source") == "judgments").height == 0
    assert not got.select(SIGNAL_NAMES).to_numpy().any()


def signals_of_rankings() -> pl.DataFrame:
    return run_step("signals", {"rankings": RANKINGS, "judgments": JUDGMENTS}, EVERY_SIGNAL)


def test_running_sums_of_gains_and_counts_of_signals() -> None:
    """Gains: cg and dcg up to each rank. Signals: found, the first rank where one holds, and
    found / rank summed over the ranks where it holds (AP's numerator)."""
    got = run_step("running_sums", {"signals": signals_of_rankings()}, EVERY_SIGNAL)
    retrieved = got.filter(pl.col("ranking") == "retrieved").sort("rank")
    assert retrieved["cg"].to_list() == pytest.approx([2.0, 2.0, 2.0, 3.0])
    assert retrieved["dcg"].to_list() == pytest.approx([2.0, 2.0, 2.0, 2.0 + 1.0 / math.log2(5)])
    assert retrieved["next_rank"].to_list() == [2, 3, 4, None]
    # relevant at ranks 1 and 4: found 1, 1, 1, 2; AP's numerator 1/1, then + 2/4
    assert retrieved["relevant_found"].to_list() == [1, 1, 1, 2]
    assert retrieved["relevant_first_rank"].to_list() == [1, 1, 1, 1]
    assert retrieved["relevant_precision_sum"].to_list() == pytest.approx([1.0, 1.0, 1.0, 1.0 + 2 / 4])
    assert retrieved["judged_found"].to_list() == [1, 2, 2, 3]
    assert retrieved["nonrelevant_found"].to_list() == [0, 1, 1, 1]
    assert retrieved["pooled_found"].to_list() == [1, 2, 3, 4]
    ideal = got.filter(pl.col("ranking") == "ideal").sort("rank")
    assert ideal["dcg"].to_list() == pytest.approx([3.0, 3.0 + 2 / math.log2(3), 3.0 + 2 / math.log2(3) + 0.5])
    # the Polars twin, on the ranking with its signals
    ranking = polars_counters.signals(RANKINGS.lazy().filter(pl.col("ranking") == "retrieved"), EVERY_SIGNAL)
    twin = polars_counters.running_sums(ranking, EVERY_SIGNAL, counted=True).collect().sort("rank")
    for column in ("cg", "dcg", "relevant_found", "relevant_first_rank", "relevant_precision_sum", "judged_found"):
        assert twin[column].to_list() == pytest.approx(retrieved[column].to_list()), column


def test_sums_at_cutoffs_are_those_of_the_last_rank_at_or_above_k() -> None:
    running = run_step("running_sums", {"signals": signals_of_rankings()}, EVERY_SIGNAL)
    cutoffs = pl.DataFrame({"k": [1, 3, 10, None]}, schema={"k": pl.Int64})
    got = run_step("sums_at_cutoffs", {"running_sums": running, "cutoffs": cutoffs}, EVERY_SIGNAL)
    retrieved = got.filter(pl.col("ranking") == "retrieved").sort("k", nulls_last=True)
    assert retrieved.select("k", "cg", "relevant_found", "judged_found").rows() == [
        (1, 2.0, 1, 1), (3, 2.0, 1, 2), (10, 3.0, 2, 3), (None, 3.0, 2, 3)
    ]  # fmt: skip
    ideal = got.filter(pl.col("ranking") == "ideal").sort("k", nulls_last=True)
    assert ideal.select("k", "cg").rows() == [(1, 3.0), (3, 6.0), (10, 6.0), (None, 6.0)]


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
    # the Polars twin
    twin = polars_counters.evaluated_queries(
        RUN.lazy().select("query_id").unique(),
        TWO_QUERIES.lazy().select("query_id").unique(),
        RETRIEVED.lazy(),
        evaluation,
    ).collect()
    assert dict(twin.select("query_id", "retrieved_in_ranking").iter_rows()) == counts


def test_counters_of_a_query_are_its_judgments_where_each_signal_holds() -> None:
    evaluated = pl.DataFrame({"query_id": ["q", "t"], "retrieved_in_ranking": [4, 1]})
    got = run_step("counters", {"evaluated_queries": evaluated, "signals": signals_of_rankings()}, EVERY_SIGNAL)
    # of q's judgments: relevant a, d, e (labels 2, 1, 3); nonrelevant b (label 0); t has none
    assert got.sort("query_id").select("query_id", "relevant_in_qrels", "nonrelevant_in_qrels").rows() == [
        ("q", 3, 1), ("t", 0, 0)
    ]  # fmt: skip
    twin = polars_counters.counters(evaluated.lazy(), JUDGMENTS.lazy(), EVERY_SIGNAL).collect().sort("query_id")
    assert twin.select("query_id", "relevant_in_qrels", "nonrelevant_in_qrels").rows() == [("q", 3, 1), ("t", 0, 0)]
