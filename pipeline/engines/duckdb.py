"""The DuckDB engine: executes the files in ``sql/`` with parameters bound as variables.

The files and their variables come from :mod:`pipeline.sql_files`, shared with the Spark engine.

No SQL text is built from values here: every statement comes from a file in ``sql/``, and
values reach it only through ``SET VARIABLE name = $1`` with the value bound as a parameter.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import json
import math
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import polars as pl

from pipeline.errors import InvalidInput
from pipeline.expressions import TIE_BOUNDS_PER_QUERY, TIE_BOUNDS_SUMMARY, with_input_order
from pipeline.io.names import QUERY
from pipeline.registry import Evaluation, summary_variables
from pipeline.sql_files import (
    PER_QUERY_COMPOSED,
    VARIABLE_TYPES,
    VARIABLES,
    evaluation_variables,
    per_query_columns,
    sql_file,
    summary_columns,
)

# The variables holding lists of text (measures, signals, the summary's aggregates).
TEXT_LISTS = frozenset(name for name, spark_type in VARIABLE_TYPES.items() if spark_type == "ARRAY<STRING>")


@functools.lru_cache(maxsize=16)
def _parsed(text: str) -> tuple[duckdb.Statement, ...]:
    """The statements of ``text``, parsed once a process: DuckDB copies a parsed statement at each
    execution, in any connection, and parsing per_query_composed.sql was a fifth of a small
    evaluation (0.025 s of 0.11 s). Keyed by the text, so an edited file is parsed anew. Parsed in a
    connection of its own, which nothing else reads."""
    with contextlib.closing(duckdb.connect()) as parser:
        return tuple(parser.extract_statements(text))


def run_sql_file(connection: duckdb.DuckDBPyConnection, name: str) -> None:
    """Execute the statements of ``sql/<name>`` in ``connection``, in order."""
    for statement in _parsed(sql_file(name)):
        connection.execute(statement)


@functools.cache
def spill_folder() -> str:
    """Where DuckDB spills what does not fit in memory: a folder of this process under TMPDIR,
    removed at exit. DuckDB's own default is ``.tmp`` in the working directory, a folder the
    user did not ask for, left beside their files."""
    folder = tempfile.mkdtemp(prefix="ndcg-duckdb-spill-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


# DuckDB's optimizer pass that moves projections up through the plan: on the composed statement
# it was half of the optimizer's time, the same over 50 rows as over 2M (the statement over the
# sample: 0.11 -> 0.09 s for NDCG, 0.18 -> 0.12 s with the tie bounds, 0.19 -> 0.17 s with every
# measure) and bought nothing at 2M rows (the statement's CPU the same within the spread of 3
# runs, 1.37-1.57 s against 1.45-1.50 s for NDCG, 3.72-3.88 s against 3.75-3.94 s with every
# measure; the table's bits the same)
DISABLED_OPTIMIZERS = "projection_pullup"


def connect(*, threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    config: dict[str, Any] = {"temp_directory": spill_folder(), "disabled_optimizers": DISABLED_OPTIMIZERS}
    if threads is not None:
        config["threads"] = threads
    if memory_limit is not None:
        config["memory_limit"] = memory_limit
    return duckdb.connect(config=config)


class _Connections(threading.local):
    """This thread's idle connections, by (process, threads, memory limit)."""

    def __init__(self) -> None:
        self.idle: dict[tuple[int, int | None, str | None], duckdb.DuckDBPyConnection] = {}


_CONNECTIONS = _Connections()


def take_connection(*, threads: int | None = None, memory_limit: str | None = None) -> duckdb.DuckDBPyConnection:
    """A connection of this thread, kept between evaluations; give it back with
    :func:`release_connection`. A new connection costs about 20 ms, a tenth of a small
    evaluation, which the job's partitions and a session's calls would pay each time.

    In use, a connection is out of the cache, so a nested or concurrent use gets its own; each
    thread and process (a fork copies the cache) has its own. Raises DuckDB's error when it
    refuses ``threads`` or ``memory_limit``."""
    connection = _CONNECTIONS.idle.pop((os.getpid(), threads, memory_limit), None)
    return connection if connection is not None else connect(threads=threads, memory_limit=memory_limit)


def release_connection(
    connection: duckdb.DuckDBPyConnection,
    *,
    threads: int | None = None,
    memory_limit: str | None = None,
    failed: bool,
) -> None:
    """Back to the cache without what the evaluation left (the inputs' views and frames, the
    tables of ``per_query.sql`` and ``summary.sql``, every variable: ``sql/inputs.sql`` reads some
    before the next evaluation sets them), or closed: after any error, and when the thread
    already holds an idle one like it."""
    key = (os.getpid(), threads, memory_limit)
    if failed or key in _CONNECTIONS.idle:
        connection.close()
        return
    try:
        for name in ("run", "qrels", "run_given", "qrels_given", "per_query", *TEXT_INPUTS.values()):
            connection.unregister(name)  # a registered frame, with the reference to its data
            connection.execute(f"drop view if exists {name}")  # or a view of sql/inputs.sql
        connection.execute("drop table if exists per_query")
        connection.execute(f"drop table if exists {QUERY_HASHES}")
        connection.execute("drop view if exists summary")
        for (name,) in connection.execute("select name from duckdb_variables()").fetchall():
            connection.execute(f'RESET VARIABLE "{name}"')  # names of VARIABLES, set by set_variables
    except BaseException:
        connection.close()
        raise
    _CONNECTIONS.idle[key] = connection


@contextlib.contextmanager
def reused_connection(
    *, threads: int | None = None, memory_limit: str | None = None
) -> Iterator[duckdb.DuckDBPyConnection]:
    """:func:`take_connection` and :func:`release_connection` around a block."""
    connection = take_connection(threads=threads, memory_limit=memory_limit)
    failed = True
    try:
        yield connection
        failed = False
    finally:
        release_connection(connection, threads=threads, memory_limit=memory_limit, failed=failed)


def set_variables(connection: duckdb.DuckDBPyConnection, variables: dict[str, Any]) -> None:
    """Bind each value through a parameter; names come only from :data:`VARIABLES`."""
    for name, value in variables.items():
        if name not in VARIABLES:
            raise ValueError(f"unknown SQL variable {name!r}")
        if name == "gain_map" and value is not None:
            connection.execute(f"SET VARIABLE {name} = map($1::double[], $2::double[])", list(value))
        elif name in TEXT_LISTS and value is not None:
            # typed, so that an empty list compares with text ([] alone binds as INTEGER[])
            connection.execute(f"SET VARIABLE {name} = $1::varchar[]", [value])
        elif value is None:
            connection.execute(f"RESET VARIABLE {name}")
        else:
            connection.execute(f"SET VARIABLE {name} = $1", [value])


def register_inputs(connection: duckdb.DuckDBPyConnection, run: pl.LazyFrame, qrels: pl.LazyFrame) -> None:
    """Make Polars frames the views ``run`` and ``qrels`` that ``per_query.sql`` reads.

    The run gets the ``arrival`` and ``input_rank`` columns of
    :func:`pipeline.expressions.with_input_order`, the same the Polars engine reads. Both are
    collected here, once: ``per_query.sql`` reads ``run`` twice (its rows and its queries),
    and DuckDB collects a registered LazyFrame again on every read (in buckets of a 100M-row
    run, each second read filtered the whole input again).
    """
    connection.register("run", FrameStream(with_input_order(run).collect()))
    subtopic = pl.col("subtopic") if "subtopic" in qrels.collect_schema().names() else pl.lit(None, pl.String)
    qrels_frame = qrels.select("query_id", "doc_id", "relevance", subtopic.alias("subtopic")).collect()
    connection.register("qrels", FrameStream(qrels_frame))


def read_parquet_inputs(
    connection: duckdb.DuckDBPyConnection,
    run_paths: Sequence[str],
    qrels_paths: Sequence[str] | None,
    columns: dict[str, str],
) -> None:
    """Define the views ``run`` and ``qrels`` over Parquet files with ``sql/inputs.sql`` and
    ``sql/aligned_inputs.sql``."""
    set_variables(
        connection,
        {"run_path": list(run_paths), "qrels_path": list(qrels_paths) if qrels_paths else None, **columns},
    )
    run_sql_file(connection, "inputs.sql")
    run_sql_file(connection, "aligned_inputs.sql")


# Text query ids replaced by their hashes while the statement runs (hash_query_ids): the ids
# beside their hashes, and the names the views of the ids as given are kept under
QUERY_HASHES, HASHED = "ndcg_query_hashes", "query_hash"
HASH = "hash(query_id)"
TEXT_INPUTS = {"run": "ndcg_run_text", "qrels": "ndcg_qrels_text"}


def hash_query_ids(
    connection: duckdb.DuckDBPyConnection, run_queries: pl.DataFrame | None, judged_queries: pl.DataFrame | None
) -> bool:
    """Give the views ``run`` and ``qrels`` DuckDB's 64-bit hash of each text query id in its
    place, when no two of the ids (``run_queries`` and ``judged_queries``, the distinct ids
    validation counted) hash alike: every step groups, joins and partitions by query, and a
    UBIGINT costs less than text there (2M rows, the statement's CPU: NDCG 1.52 s -> 1.30 s, every
    measure 4.07 s -> 3.87 s, read from Parquet; 1.31 s -> 1.06 s and 3.87 s -> 3.33 s from frames),
    as the Polars engine does with its own hash
    (:func:`pipeline.engines.polars._hashed_query_ids`). No value depends on an id but through
    its equality; :func:`per_query_table` gives the ids back. Returns whether it did."""
    if run_queries is None or judged_queries is None:
        return False
    types = [connection.execute(f"describe select query_id from {name}").fetchall()[0][1] for name in TEXT_INPUTS]
    if run_queries.schema[QUERY] != pl.String or any(kind != "VARCHAR" for kind in types):
        return False
    # the ids as a list parameter, not a registered frame: DuckDB converts a frame through pyarrow,
    # whose import was 0.21 s of a command line's run
    ids = pl.concat([run_queries.get_column(QUERY), judged_queries.get_column(QUERY)]).unique().to_list()
    connection.execute(
        f"create or replace temp table {QUERY_HASHES} as "
        f"select query_id, {HASH} as {HASHED} from (select unnest($1::varchar[]) as query_id)",
        [ids],
    )
    # fetched whole: DuckDB refuses other work on a connection with a result not read to its end
    ((apart,),) = connection.execute(f"select count(distinct {HASHED}) = count(*) from {QUERY_HASHES}").fetchall()
    if not apart:
        connection.execute(f"drop table {QUERY_HASHES}")
        return False
    for name, text in TEXT_INPUTS.items():
        connection.execute(f"alter view {name} rename to {text}")
        connection.execute(f"create temp view {name} as select * replace ({HASH} as query_id) from {text}")
    return True


def _hashed_ids(connection: duckdb.DuckDBPyConnection) -> bool:
    ((count,),) = connection.execute(
        "select count(*) from duckdb_tables() where temporary and table_name = $1", [QUERY_HASHES]
    ).fetchall()
    return bool(count)


def evaluate(connection: duckdb.DuckDBPyConnection, evaluation: Evaluation) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per-query table and summary over the views ``run`` and ``qrels`` of ``connection``."""
    table = per_query_table(connection, evaluation)
    return table, summarize(table, connection)


def per_query_table(connection: duckdb.DuckDBPyConnection, evaluation: Evaluation) -> pl.DataFrame:
    """The per-query table alone over the views ``run`` and ``qrels`` of ``connection``: the
    API's ``per_query`` (the summary of a small evaluation costs as much again)."""
    set_variables(connection, evaluation_variables(evaluation))
    # the steps as the CTEs of one statement, not as views: DuckDB binds a view again at each
    # reference, and the steps read each other many times (0.18 s a small evaluation, 0.07 s)
    run_sql_file(connection, PER_QUERY_COMPOSED)
    # ordered here: the statement leaves its rows unordered (pipeline.transpile.composed_per_query_sql)
    rows, hashed = "from per_query order by query_id asc nulls last, k asc nulls first", _hashed_ids(connection)
    if hashed:  # each id for its hash (hash_query_ids), in the ids' order
        rows = (
            f"select ids.query_id, per_query.* exclude (query_id) from per_query "
            f"left join {QUERY_HASHES} as ids on per_query.query_id = ids.{HASHED} "
            "order by ids.query_id asc nulls last, per_query.k asc nulls first"
        )
    table = _from_arrow_stream(connection.sql(rows))
    if hashed and table[QUERY].null_count():
        # validation and DuckDB read the files apart: one of them changed in between
        raise InvalidInput(
            "DuckDB cannot read the inputs: they hold query ids the checks did not read (a file was replaced or "
            "changed while it was evaluated); run it again"
        )
    # the tie bounds without tie_bounds are null columns of the SQL's fixed shape: left out
    # before the summary, which averages every column it is given; the measures in the
    # registry's order (the SQL gives them in the order its steps compute them)
    table = table.select(per_query_columns(evaluation))
    connection.execute("drop table per_query")  # its rows are in the frame now
    return table


# The run :func:`statement_floor` measures the statement over: 100 queries of 10 documents.
# From a few hundred rows on, each hash join of the statement holds whole blocks in each of its
# partitions (4 MiB a join; a 5-row join takes 1.25 MiB), whatever the run's size: measured with
# every measure, 50 MiB here against 48 MB the smallest limit through which 10,000 rows pass.
_FLOOR_QUERIES, _FLOOR_DOCUMENTS = 100, 10
# The floor is rounded up to this: one hash join's blocks, so that a bucket count does not move
# with the few hundred KiB the peak differs by from one measurement to the next
_FLOOR_STEP = 4 * 2**20


@functools.lru_cache(maxsize=8)
def statement_floor(evaluation: Evaluation) -> int:
    """Bytes DuckDB holds at the peak of ``per_query_composed.sql`` for ``evaluation`` whatever
    the run's size: its buffer manager's peak over a run of 1,000 rows, rounded up to 4 MiB.
    What a memory limit leaves beyond it is what the run's rows may take. The statement for
    every measure has more hash joins than NDCG's alone, so its floor is higher (60 MiB against
    28 MiB in November 2026, and growing with the measures): measured, not estimated. On one
    thread: there the peak is the same from one measurement to the next (on two, it moved by
    4 MiB with how the pipelines met), and the smallest limit that holds is the same on one
    thread and on two (48 MB at 10,000 rows). Measured once a process for each evaluation (it
    costs about one small evaluation; a job's partitions share it)."""
    rows = _FLOOR_QUERIES * _FLOOR_DOCUMENTS
    position = pl.int_range(rows, eager=True)
    run = pl.DataFrame(
        {
            "query_id": (position // _FLOOR_DOCUMENTS).cast(pl.String),
            "doc_id": (position % _FLOOR_DOCUMENTS).cast(pl.String),
            "score": (position % 7).cast(pl.Float64),  # ties, as in most runs
        }
    )
    # a judgment for every other document, labels -1 to 3
    qrels = run.filter(position % 2 == 0).select(
        "query_id", "doc_id", relevance=(pl.int_range(pl.len()) % 5 - 1).cast(pl.Int64)
    )
    # a connection of its own, on one thread, closed after. The inputs are frames: read from
    # Parquet files, as the buckets are, the peak of NDCG's statement moved between 18.6 and
    # 20.4 MiB from one measurement to the next.
    connection = connect(threads=1)  # the engine's settings: the plan the floor is of
    with contextlib.closing(connection):
        register_inputs(connection, run.lazy(), qrels.lazy())
        set_variables(connection, evaluation_variables(evaluation))
        connection.execute("SET enable_profiling = 'no_output'")
        run_sql_file(connection, PER_QUERY_COMPOSED)
        profile = json.loads(connection.get_profiling_information(format="json"))
    peak = int(profile["system"]["peak_buffer_memory"])
    return math.ceil(peak / _FLOOR_STEP) * _FLOOR_STEP


class FrameStream:
    """A Polars frame as DuckDB registers it, through the Arrow C stream interface alone: given the
    frame itself, DuckDB converts it through pyarrow, whose import was 0.21 s of a command line's
    run. Each scan of the registered view opens a new stream over the frame's own buffers."""

    def __init__(self, frame: pl.DataFrame) -> None:
        self.frame = frame

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.frame.__arrow_c_stream__(requested_schema)


class _ArrowStream:
    """An Arrow C stream capsule as the object ``pl.DataFrame`` reads."""

    def __init__(self, capsule: object) -> None:
        self.capsule = capsule

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        return self.capsule


def _from_arrow_stream(relation: duckdb.DuckDBPyRelation) -> pl.DataFrame:
    """A DuckDB result handed to Polars through the Arrow C stream interface: no copy through
    files, and no pyarrow (``.pl()`` imports it, and numpy: a third of a second of a 1M-row
    run)."""
    # Only the capsule reaches Polars: given the relation itself, Polars' constructor left
    # DuckDB's Python objects referenced at exit, and every CLI run ended with nanobind's
    # "leaked instances" report on stderr.
    return pl.DataFrame(_ArrowStream(relation.__arrow_c_stream__()))


def per_query(run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    """Mirror of :func:`pipeline.engines.polars.per_query`, computed by the steps of ``sql/``."""
    with reused_connection() as connection:
        register_inputs(connection, run, qrels)
        return per_query_table(connection, evaluation).lazy()


def summarize(per_query_table: pl.DataFrame, connection: duckdb.DuckDBPyConnection | None = None) -> pl.DataFrame:
    """The summary of a per-query table by ``sql/summary.sql``, in ``connection`` (default: a
    connection of its own). Out of core, the buckets' tables are summarised here, so that
    their summary has the bits of one pass on this engine."""
    bounds = all(column in per_query_table.columns for column in TIE_BOUNDS_PER_QUERY)
    complete = (
        per_query_table.with_columns(
            pl.lit(None, dtype=pl.Float64).alias("ndcg_min"),
            pl.lit(None, dtype=pl.Float64).alias("ndcg_max"),
            pl.lit(None, dtype=pl.Boolean).alias("ties_straddle_k"),
        )
        if not bounds
        else per_query_table
    )
    own = connection is None
    connection = connect() if connection is None else connection
    try:
        connection.register("per_query", FrameStream(complete))
        set_variables(connection, summary_variables())
        run_sql_file(connection, "summary.sql")
        # summary.sql gives the measures grouped by aggregate: back in the per-query table's order
        summary = _from_arrow_stream(connection.sql("from summary")).select(summary_columns(complete.columns))
    finally:
        if own:
            connection.close()
        else:  # the caller's connection as it was: per_query.sql can run in it again
            connection.execute("drop view if exists summary")
            connection.unregister("per_query")
    return summary if bounds else summary.drop(TIE_BOUNDS_SUMMARY)
