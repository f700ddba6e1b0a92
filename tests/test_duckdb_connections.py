"""The DuckDB engine keeps one connection per thread between evaluations
(pipeline/engines/duckdb.py, ``take_connection``): an evaluation on a reused connection gives
the bits of one on a new connection, whatever ran before it, leaves nothing of its inputs
behind, and a connection that saw an error is never used again."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipeline import Evaluation, Gain
from pipeline.engines import duckdb as duckdb_engine
from pipeline.errors import InvalidInput

TEXT_IDS = (
    pl.LazyFrame({"query_id": ["q1", "q1", "q1", "q2"], "doc_id": ["a", "b", "c", "d"], "score": [3.0, 2.0, 2.0, 1.0]}),
    pl.LazyFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "c", "x"], "relevance": [2, 1, 1]}),
)
INTEGER_IDS = (
    pl.LazyFrame({"query_id": [7, 7, 8], "doc_id": [1, 2, 3], "score": [0.5, 0.9, 0.1]}),
    pl.LazyFrame({"query_id": [7, 8, 8], "doc_id": [1, 3, 4], "relevance": [1.0, 3.0, 2.0]}),
)
ALL_TREC = Evaluation(cutoffs=(1, 3), measures=("all_trec",), all_queries=True)
GRADED = Evaluation(cutoffs=(2,), gain=Gain.parse("exponential"), ties="average", tie_bounds=True, empty_ideal="nan")


def on_a_new_connection(inputs: tuple[pl.LazyFrame, pl.LazyFrame], evaluation: Evaluation) -> pl.DataFrame:
    connection = duckdb_engine.connect()
    try:
        duckdb_engine.register_inputs(connection, *inputs)
        return duckdb_engine.per_query_table(connection, evaluation)
    finally:
        connection.close()


def idle_connection() -> object:
    """This thread's idle connection of the default settings, which these tests use: an earlier
    test of the same worker may have left one of other settings (threads, a memory limit)."""
    return duckdb_engine._CONNECTIONS.idle.get((os.getpid(), None, None))


@pytest.mark.slow  # seconds: left out of make test-fast
def test_an_evaluation_after_others_gives_the_bits_of_a_new_connection() -> None:
    sequence = [(TEXT_IDS, ALL_TREC), (INTEGER_IDS, GRADED), (INTEGER_IDS, ALL_TREC), (TEXT_IDS, GRADED)]
    expected = [on_a_new_connection(inputs, evaluation) for inputs, evaluation in sequence]
    reused = []
    for inputs, evaluation in sequence:
        reused.append(duckdb_engine.per_query(*inputs, evaluation).collect())
        assert idle_connection() is not None
    for got, want in zip(reused, expected, strict=True):
        assert_frame_equal(got, want)
    assert reused[1]["query_id"].dtype == pl.Int64  # the statement read the new inputs' types


def test_the_connection_is_reused_and_keeps_nothing_of_the_inputs() -> None:
    duckdb_engine.per_query(*TEXT_IDS, ALL_TREC).collect()
    first = idle_connection()
    duckdb_engine.per_query(*INTEGER_IDS, GRADED).collect()
    connection = idle_connection()
    assert connection is first
    left = connection.execute(  # type: ignore[attr-defined]
        "select view_name from duckdb_views() where view_name in ('run', 'qrels', 'per_query', 'summary') "
        "union all select table_name from duckdb_tables()"
    ).fetchall()
    assert left == []
    with pytest.raises(Exception, match="run"):
        connection.sql("from run")  # type: ignore[attr-defined]


def test_a_connection_that_saw_an_error_is_closed_not_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    duckdb_engine.per_query(*TEXT_IDS, ALL_TREC).collect()
    before = idle_connection()

    def broken(*args: object) -> None:
        raise RuntimeError("an error in the middle of an evaluation")

    monkeypatch.setattr(duckdb_engine, "per_query_table", broken)
    with pytest.raises(RuntimeError, match="middle"):
        duckdb_engine.per_query(*TEXT_IDS, ALL_TREC)
    assert idle_connection() is None
    with pytest.raises(Exception, match="closed"):
        before.sql("select 1")  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert_frame_equal(duckdb_engine.per_query(*TEXT_IDS, ALL_TREC).collect(), on_a_new_connection(TEXT_IDS, ALL_TREC))


def test_each_thread_has_its_own_connection() -> None:
    duckdb_engine.per_query(*TEXT_IDS, ALL_TREC).collect()
    mine = idle_connection()
    theirs: list[object] = []
    results: list[pl.DataFrame] = []

    def evaluate_in_a_thread() -> None:
        results.append(duckdb_engine.per_query(*INTEGER_IDS, GRADED).collect())
        theirs.append(idle_connection())

    thread = threading.Thread(target=evaluate_in_a_thread)
    thread.start()
    thread.join(timeout=120)
    assert theirs and theirs[0] is not None and theirs[0] is not mine
    assert idle_connection() is mine
    assert_frame_equal(results[0], on_a_new_connection(INTEGER_IDS, GRADED))


def test_threads_evaluating_at_once_share_the_parsed_statements() -> None:
    """The statements of sql/ are parsed once a process and copied by DuckDB at each execution:
    threads that evaluate at once, each on its own connection, get the bits of a new connection."""
    expected = {
        name: on_a_new_connection(inputs, evaluation)
        for name, inputs, evaluation in (("text", TEXT_IDS, ALL_TREC), ("integer", INTEGER_IDS, GRADED))
    }
    failures: list[BaseException] = []

    def evaluate_in_a_thread(number: int) -> None:
        name, inputs, evaluation = ("text", TEXT_IDS, ALL_TREC) if number % 2 else ("integer", INTEGER_IDS, GRADED)
        try:
            for _ in range(3):
                assert_frame_equal(duckdb_engine.per_query(*inputs, evaluation).collect(), expected[name])
        except BaseException as error:  # the assertion below reports it
            failures.append(error)

    threads = [threading.Thread(target=evaluate_in_a_thread, args=(number,)) for number in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert duckdb_engine._parsed.cache_info().hits > 0


def test_a_query_id_the_checks_did_not_read_is_refused_not_dropped() -> None:
    """The hashed ids are given back by the ids validation counted: an id DuckDB reads beyond them
    (a file changed between the two reads) is an error, never a row left out."""
    connection = duckdb_engine.connect()
    try:
        duckdb_engine.register_inputs(connection, *TEXT_IDS)
        counted = pl.DataFrame({"query_id": ["q1"]})  # q2 is in both inputs
        assert duckdb_engine.hash_query_ids(connection, counted, counted)
        with pytest.raises(InvalidInput, match="query ids the checks did not read"):
            duckdb_engine.per_query_table(connection, ALL_TREC)
    finally:
        connection.close()


def test_duckdb_spills_under_tmpdir_never_into_the_working_directory() -> None:
    """DuckDB's default spill folder is ``.tmp`` in the working directory: a folder the user did
    not ask for, left beside their files. Ours is a folder of the process under TMPDIR."""
    import tempfile

    from pipeline.engines.duckdb import connect, spill_folder

    connection = connect(threads=1, memory_limit="64MB")
    (folder,) = connection.execute("SELECT current_setting('temp_directory')").fetchone()
    assert folder == spill_folder()
    assert Path(folder).resolve().parent == Path(tempfile.gettempdir()).resolve()
