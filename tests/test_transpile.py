"""The files of sql/ transpiled (pipeline/transpile.py): Spark's parser and engine read what
it prints, values keep their type and meaning, and pruning the switched-off branches changes no
number (DuckDB runs the pruned and the unpruned statement alike for every choice of the
registry)."""

from __future__ import annotations

import gc
import threading
from functools import cache

import duckdb
import polars as pl
import pyspark.sql as pyspark_sql
import pytest
import sqlglot
from pyspark.sql.types import StructType

from pipeline import Discount, Evaluation, Gain, pruning, transpile
from pipeline.api import make_evaluation
from pipeline.engines import duckdb as duckdb_engine
from pipeline.errors import UsageError
from pipeline.registry import CONVENTIONS
from pipeline.registry import Evaluation as _Evaluation
from pipeline.sql_files import PER_QUERY_STEPS, evaluation_variables, per_query_columns
from tests.helpers import as_table, assert_tables_close, compute
from tests.helpers.spark_frames import QRELS, RUN, to_polars, to_spark


@pytest.fixture
def spark(local_spark: pyspark_sql.SparkSession) -> pyspark_sql.SparkSession:
    return local_spark


# --- the transpiled SQL --------------------------------------------------------------------------

EVALUATIONS = {
    "defaults": Evaluation(),
    "every option": Evaluation(
        cutoffs=(1, 10),
        gain=Gain.parse("exponential+1=3,2=9"),
        discount=Discount("jk", 3.0),
        all_queries=True,
        max_results=100,
    ),
}


@pytest.mark.spark
@pytest.mark.parametrize("name", list(EVALUATIONS))
def test_transpiled_sql_parses_in_sparks_dialect(spark: pyspark_sql.SparkSession, name: str) -> None:
    variables = evaluation_variables(EVALUATIONS[name])
    parser = spark._jsparkSession.sessionState().sqlParser()
    for _, statements in transpile.portable_files(variables):
        for statement in statements:
            text = statement.sql("spark")
            assert "getvariable" not in text.lower()
            # sqlglot reads its own Spark SQL back to the same tree ...
            assert sqlglot.parse_one(text, read="spark").sql("spark") == statement.statement.sql("spark")
            # ... and so does Spark's own parser (a parse only: no view needs to exist)
            assert parser.parsePlan(text) is not None


@pytest.mark.spark
def test_printed_spark_sql_runs_when_pasted(spark: pyspark_sql.SparkSession) -> None:
    """What `ndcg sql --dialect spark` prints, run statement by statement over views run and
    qrels in a notebook-like session of its own, gives the Polars engine's numbers."""
    evaluation = EVALUATIONS["every option"]
    notebook = spark.newSession()  # its own temp views
    run, qrels = pl.scan_parquet(RUN), pl.scan_parquet(QRELS)
    # the run view's input-order columns: null when, as here, the run has no order to keep
    with_order = run.with_columns(
        arrival=pl.lit(None, dtype=pl.Int64), input_rank=pl.lit(None, dtype=pl.Float64), doc_weight=pl.lit(1.0)
    )
    to_spark(notebook, with_order).createOrReplaceTempView("run")
    to_spark(notebook, qrels).createOrReplaceTempView("qrels")
    for statement in sqlglot.parse(transpile.sql_text(evaluation, dialect="spark"), read="spark"):
        assert statement is not None
        notebook.sql(statement.sql("spark"))
    expected = as_table(compute("polars", run, qrels, evaluation))
    # computed once and kept: Spark analyses a view's SQL again at every reference, and the
    # per-query statement's analysis and optimisation was most of this test's time (reading the
    # summary over the view did it all again: 50 s of 150, busy machine). The summary view, as
    # pasted, reads per_query by name, so it reads these rows.
    per_query = notebook.table("per_query").localCheckpoint()
    assert_tables_close(as_table(to_polars(per_query)), expected)
    per_query.createOrReplaceTempView("per_query")
    assert to_polars(notebook.table("summary"))["queries"].to_list() == [43] * 3


def test_printed_duckdb_sql_runs_in_duckdb() -> None:
    evaluation = EVALUATIONS["every option"]
    connection = duckdb.connect()
    connection.register(
        "run",
        pl.read_parquet(RUN).with_columns(
            arrival=pl.lit(None, dtype=pl.Int64), input_rank=pl.lit(None, dtype=pl.Float64), doc_weight=pl.lit(1.0)
        ),
    )
    connection.register("qrels", pl.read_parquet(QRELS))
    connection.execute(transpile.sql_text(evaluation, dialect="duckdb"))
    run, qrels = pl.scan_parquet(RUN), pl.scan_parquet(QRELS)
    assert_tables_close(
        as_table(connection.table("per_query").pl()), as_table(compute("polars", run, qrels, evaluation))
    )


@pytest.mark.spark
def test_decimal_literals_divide_as_doubles_as_in_duckdb(spark: pyspark_sql.SparkSession) -> None:
    # Spark alone: 1.0 / 3 is a decimal, 0.333333; DuckDB's `/` gives the double 1/3
    tree = transpile._decimals_as_doubles(sqlglot.parse_one("select 1.0 / 3 as third", read="duckdb"))
    assert spark.sql(tree.sql("spark")).collect()[0]["third"] == pytest.approx(1 / 3, abs=1e-15)
    assert abs(float(spark.sql("select 1.0 / 3 as third").collect()[0]["third"]) - 1 / 3) > 1e-9


def test_folds_become_sparks_aggregate_the_inner_ones_too() -> None:
    """DuckDB's ``list_reduce(list, lambda, initial)`` is Spark's ``aggregate(list, initial,
    lambda)``; a fold inside another's arguments is rewritten as well (Spark runs the greedy
    ideal so in tests/test_intent_measures.py)."""
    query = (
        "select list_reduce(list_transform(x, lambda v: list_reduce(v, lambda a, b: a + b, 0.0)), "
        "lambda t, v: t + v, 1.0) as f from (select [[1.0, 2.0], [3.0]] as x)"
    )
    tree = transpile._folds_for_spark(sqlglot.parse_one(query, read="duckdb"))
    assert tree.sql("spark").startswith(
        "SELECT AGGREGATE(TRANSFORM(x, v -> AGGREGATE(v, 0.0, (a, b) -> a + b)), 1.0, (t, v) -> t + v) AS f"
    )
    # the fold DuckDB runs: 1 + (0 + 1 + 2) + (0 + 3)
    assert duckdb.sql(query).fetchall() == [(7.0,)]


LITERALS = [
    ("it's a \\ 'quote'", "STRING"),
    ("文書-1", None),
    (2.5, "DOUBLE"),
    (0.1, None),
    (3, "DOUBLE"),
    (2**40, "BIGINT"),
    (True, "BOOLEAN"),
    ([5, 10], "ARRAY<BIGINT>"),
    ([], "ARRAY<BIGINT>"),
]


@cache
def literals_on_spark(spark: pyspark_sql.SparkSession) -> tuple[pyspark_sql.Row, StructType]:
    """Every literal of LITERALS, column ``v<i>``, and a NULL of every variable's type, column
    ``<name>``, in one select: one query, not one round trip a value."""
    nodes = [transpile.literal(value, type_name).as_(f"v{i}") for i, (value, type_name) in enumerate(LITERALS)]
    nodes += [transpile.literal(None, type_name).as_(name) for name, type_name in transpile.VARIABLE_TYPES.items()]
    frame = spark.sql(sqlglot.exp.select(*nodes).sql("spark"))
    return frame.collect()[0], frame.schema


@pytest.mark.spark
@pytest.mark.parametrize(("value", "type_name"), LITERALS)
def test_literals_keep_their_value_on_spark(spark: pyspark_sql.SparkSession, value: object, type_name: str) -> None:
    row, _ = literals_on_spark(spark)
    got = row[f"v{LITERALS.index((value, type_name))}"]
    assert got == value and type(got) is (float if type_name == "DOUBLE" else type(value))


@pytest.mark.spark
def test_unset_variables_are_nulls_of_their_type(spark: pyspark_sql.SparkSession) -> None:
    row, schema = literals_on_spark(spark)
    for name, type_name in transpile.VARIABLE_TYPES.items():
        assert row[name] is None, name
        assert schema[name].dataType.simpleString() == type_name.lower().replace(", ", ",").replace(": ", ":"), name


@pytest.mark.spark
def test_a_gain_map_becomes_a_map(spark: pyspark_sql.SparkSession) -> None:
    node = transpile.literal(([1.0, 2.0], [3.0, -9.5]), "MAP<DOUBLE, DOUBLE>")
    assert spark.sql(sqlglot.exp.select(node.as_("m")).sql("spark")).collect()[0]["m"] == {1.0: 3.0, 2.0: -9.5}


def test_unknown_variables_and_unsupported_options_are_refused() -> None:
    with pytest.raises(UsageError, match="not one of"):
        transpile._bind_variables(sqlglot.parse_one("select getvariable('nope')", read="duckdb"), {})
    with pytest.raises(UsageError, match="ties = 'input-order' is not supported on the spark engine"):
        transpile.check_supported({"ties": "input-order"})
    with pytest.raises(UsageError, match="DuckDB-only"):
        transpile.transpile("inputs.sql", {})


# --- pruning the switched-off branches -------------------------------------------------------------


def every_choice() -> list[tuple[str, object]]:
    """(option, value) for every choice of every convention of the registry, both states of each
    switch, and a sample of each open one (a convention with companions is left to the engines'
    tests: doc_weights_in, which ndcg sql refuses with its doc_weight_col)."""
    found: list[tuple[str, object]] = []
    for convention in CONVENTIONS:
        if convention.companions:
            continue
        found += [(convention.name, choice.value) for choice in convention.choices]
        if convention.switch:
            found += [(convention.name, True), (convention.name, False)]
    return [*found, ("gain", "1=3,2=9"), ("max_results", 3), ("relevance_threshold", 2.0), ("log_base", 3.0)]


def inputs_on_duckdb() -> duckdb.DuckDBPyConnection:
    """A connection with views ``run`` and ``qrels``: a run with ties, a duplicate row (kept or
    dropped by the duplicates policies) and an input rank."""
    connection = duckdb.connect()
    run = pl.read_parquet(RUN).with_columns(
        arrival=pl.int_range(pl.len(), dtype=pl.Int64),
        input_rank=pl.int_range(pl.len()).cast(pl.Float64),
        doc_weight=pl.lit(1.0),
    )
    connection.register("run", run)
    # the aligned inputs' shape (sql/aligned_inputs.sql), which the unpruned statement reads: the
    # qrels' subtopic, null where they judge none (the printed one names it only for the
    # intent-aware measures, test_printed_duckdb_sql_runs_in_duckdb)
    connection.register("qrels", pl.read_parquet(QRELS).with_columns(subtopic=pl.lit(None, dtype=pl.String)))
    return connection


def pruned_per_query(evaluation: _Evaluation) -> pl.DataFrame:
    """per_query as ``ndcg sql`` prints it for DuckDB: values bound, switched-off branches cut."""
    connection = inputs_on_duckdb()
    connection.execute(transpile.sql_text(evaluation, dialect="duckdb"))
    return connection.table("per_query").pl().sort("query_id", "k", nulls_last=False)


@cache
def unpruned_statement() -> str:
    """The composed per_query.sql as parsed, before any value is bound or branch cut: every
    branch there, each value read from DuckDB's variables. The same text for every evaluation, so
    made once (binding and printing the whole tree anew for each case cost a second a case)."""
    return transpile.composed_per_query_sql()


@cache
def unpruned_per_query(evaluation: _Evaluation) -> pl.DataFrame:
    """per_query by the unpruned statement, the evaluation's values set as DuckDB's variables:
    what the pruned statement must equal bit for bit (binding the values and cutting the
    branches they switch off changes no number). Kept per evaluation: both tests below read it."""
    connection = inputs_on_duckdb()
    duckdb_engine.set_variables(connection, evaluation_variables(evaluation))
    connection.execute(unpruned_statement())
    return connection.table("per_query").pl().sort("query_id", "k", nulls_last=False)


@pytest.mark.parametrize(("option", "value"), every_choice(), ids=str)
def test_pruning_changes_no_bit(option: str, value: object) -> None:
    try:
        evaluation = make_evaluation(k=[1, 5, 10], **{option: value})
    except UsageError:
        pytest.skip(f"{option}={value!r} needs another option")
    pruned = pruned_per_query(evaluation)
    whole = unpruned_per_query(evaluation)
    assert pruned.height > 0
    assert pruned.equals(whole)


# the measures a join of an empty CTE leaves out, alone and together, and the options that
# change which CTEs select nothing
PRUNED_JOINS = [
    *(("measures", m) for m in ("ndcg", "P,recall", "map,recip_rank,success", "Rprec,bpref,infAP", "iprec_at_recall")),
    *(("measures", m) for m in ("G,Rndcg,ndcg_rel", "rbp,binG", "num_q,num_rel_ret,set_F,utility,gm_map", "all_trec")),
    ("tie_bounds", True),
    ("all_queries", True),
    ("queries_without_judgments", "evaluate"),
]


def spark_shaped_per_query(evaluation: _Evaluation, keep: list[str] | None = None) -> pl.DataFrame:
    """per_query.sql as ``ndcg sql`` prints it for Spark (stars spelled out, then pruned again,
    which cuts the joins of CTEs that select nothing), or with ``keep`` as the Spark engine
    gets it, run on DuckDB."""
    connection = duckdb.connect()
    run = pl.read_parquet(RUN).with_columns(
        arrival=pl.int_range(pl.len(), dtype=pl.Int64),
        input_rank=pl.int_range(pl.len()).cast(pl.Float64),
        doc_weight=pl.lit(1.0),
    )
    connection.register("run", run)
    connection.register("qrels", pl.read_parquet(QRELS))
    columns = {"run": run.columns, "qrels": pl.read_parquet_schema(QRELS).names()}
    variables = evaluation_variables(evaluation)
    (statement,) = transpile.transpile(
        PER_QUERY_STEPS[-1], variables, dialect="duckdb", columns=columns, spell_out_stars=True, keep=keep
    )
    connection.execute(statement.sql("duckdb"))
    return connection.table("per_query").pl().sort("query_id", "k", nulls_last=False)


@pytest.mark.parametrize(("option", "value"), [*PRUNED_JOINS, ("ties", "average"), ("unjudged", "drop")], ids=str)
def test_pruned_joins_and_left_out_columns_change_no_value_and_no_type(option: str, value: object) -> None:
    """The statement ``ndcg sql`` prints for Spark (the joins of CTEs that select nothing cut),
    and the one the Spark engine runs (the columns it leaves out cut too), beside the whole one."""
    evaluation = make_evaluation(k=[1, 5, 10], **{option: value})
    whole = unpruned_per_query(evaluation)
    cut = spark_shaped_per_query(evaluation)
    assert cut.height > 0
    assert cut.schema == whole.schema
    assert cut.equals(whole)
    kept = per_query_columns(evaluation)
    narrowed = spark_shaped_per_query(evaluation, keep=kept)
    assert narrowed.schema == whole.select(kept).schema
    assert narrowed.equals(whole.select(kept))


@pytest.mark.slow  # seconds: left out of make test-fast
def test_left_out_columns_are_not_computed() -> None:
    """What Spark plans: the companion measures' columns, which a default evaluation leaves out,
    are not in its statement at all (planning them was about half of a small evaluation's)."""
    columns = {
        "run": ["query_id", "doc_id", "score", "arrival", "input_rank", "doc_weight"],
        "qrels": ["query_id", "doc_id", "relevance"],
    }
    evaluation = make_evaluation(k=[10])
    variables = evaluation_variables(evaluation)
    (whole,) = transpile.transpile(PER_QUERY_STEPS[-1], variables, columns=columns)
    (narrowed,) = transpile.transpile(
        PER_QUERY_STEPS[-1], variables, columns=columns, keep=per_query_columns(evaluation)
    )
    assert "iprec_0_10" in whole.query_sql() and "iprec_0_10" not in narrowed.query_sql()
    assert len(narrowed.query_sql()) < len(whole.query_sql()) / 2
    assert transpile.output_columns(narrowed.query) == ["query_id", "k", "cg", "dcg", "idcg", "ndcg"]


def test_columns_are_left_out_only_where_the_shape_is_known() -> None:
    """Leaving columns out needs the stars spelled out and a select to cut: asked otherwise, the
    caller (the engine, not the user) made a mistake."""
    with pytest.raises(ValueError, match="stars are spelled out only"):
        transpile.transpile(PER_QUERY_STEPS[-1], {}, dialect="duckdb", keep=["P"])
    union = sqlglot.parse_one("select 1 as a union all select 2 as a")
    with pytest.raises(ValueError, match="cannot leave columns out"):
        pruning.narrowed(union, ["a"], {})


@pytest.mark.slow  # seconds: left out of make test-fast
def test_pruned_joins_leave_out_the_measures_not_asked_for() -> None:
    columns = {
        "run": ["query_id", "doc_id", "score", "arrival", "input_rank", "doc_weight"],
        "qrels": ["query_id", "doc_id", "relevance"],
    }

    def ctes(measures: str) -> set[str]:
        variables = evaluation_variables(make_evaluation(k=[10], measures=measures))
        (statement,) = transpile.transpile(PER_QUERY_STEPS[-1], variables, columns=columns)
        return {cte.alias_or_name for cte in statement.query.find_all(sqlglot.exp.CTE)}

    assert not {"gain_curve", "relevance_curve", "ideal_curve", "worst", "best", "straddles"} & ctes("ndcg")
    assert {"gain_curve", "ideal_curve"} <= ctes("ndcg,rbp")
    assert "relevance_curve" in ctes("ndcg,bpref")


@pytest.mark.slow  # seconds: left out of make test-fast
def test_pruning_cuts_what_the_defaults_switch_off() -> None:
    (defaults,) = transpile.transpile(PER_QUERY_STEPS[-1], evaluation_variables(Evaluation()))
    (bounds,) = transpile.transpile(PER_QUERY_STEPS[-1], evaluation_variables(Evaluation(tie_bounds=True)))
    # the tie bounds' orderings are read only with tie bounds
    assert "tie_orders__worst" not in defaults.sql() and "tie_orders__worst" in bounds.sql()
    assert len(defaults.sql()) < len(bounds.sql())


def test_transpiled_trees_are_kept_by_everything_they_are_made_from(monkeypatch: pytest.MonkeyPatch) -> None:
    """The bound, cut trees are kept for the next evaluation with the same values, columns and
    SQL files: never handed out to be changed, never kept across other values or files."""
    monkeypatch.setattr(transpile, "_BOUND_TREES", {})
    columns = {"per_query": ["query_id", "k", "ndcg"]}
    variables = evaluation_variables(Evaluation())

    def summary_sql(**changed: object) -> str:
        (statement,) = transpile.transpile("summary.sql", {**variables, **changed}, columns=columns)
        return statement.sql()

    first = summary_sql()
    (statement,) = transpile.transpile("summary.sql", variables, columns=columns, tables={"per_query": "mine"})
    statement.query.set("where", sqlglot.exp.false())  # a caller changing what it was given
    assert "mine" in statement.sql() and "mine" not in first
    assert summary_sql() == first
    assert len(transpile._BOUND_TREES) == 1
    # the summary reads no variable: other values are another key, the same statement
    assert summary_sql(ks=[3]) == first and len(transpile._BOUND_TREES) == 2
    original = transpile.sql_file
    monkeypatch.setattr(transpile, "sql_file", lambda name: original(name).replace("ndcg is not null", "ndcg is null"))
    assert summary_sql() != first
    monkeypatch.setattr(transpile, "BOUND_TREES_KEPT", 2)
    summary_sql(ks=[4])
    assert len(transpile._BOUND_TREES) == 2  # the oldest gone


@pytest.mark.slow  # seconds: left out of make test-fast
def test_the_parsed_steps_kept_for_new_values_are_never_changed_by_binding(monkeypatch: pytest.MonkeyPatch) -> None:
    """The composed, parsed steps are kept across values; binding and cutting work on a copy,
    so the statement for some values is the same before and after others were bound."""
    monkeypatch.setattr(transpile, "_BOUND_TREES", {})
    columns = {
        "run": ["query_id", "doc_id", "score", "arrival", "input_rank", "doc_weight"],
        "qrels": ["query_id", "doc_id", "relevance"],
    }

    def per_query_sql(evaluation: _Evaluation) -> str:
        (statement,) = transpile.transpile(PER_QUERY_STEPS[-1], evaluation_variables(evaluation), columns=columns)
        return statement.sql()

    ndcg = make_evaluation(k=[5])
    first = per_query_sql(ndcg)
    other = per_query_sql(make_evaluation(k=[1, 3], measures="all_trec", tie_bounds=True))
    transpile._BOUND_TREES.clear()  # bound again from the kept parse
    assert per_query_sql(ndcg) == first != other


# --- DuckDB's star forms, spelled out for Spark ---------------------------------------------------


@pytest.mark.slow  # seconds: left out of make test-fast
@pytest.mark.parametrize("tie_bounds", [False, True])
def test_spelled_out_stars_give_duckdbs_own_tables(tie_bounds: bool) -> None:
    """`t.* exclude (...)` and `sum(columns(...))`, spelled out column by column, select what
    DuckDB's own expansion does: the same columns, in the same order, with the same bits."""
    evaluation = make_evaluation(k=[1, 5, 10], measures="ndcg,P,map,recip_rank", tie_bounds=tie_bounds)
    variables = evaluation_variables(evaluation)
    tables = {}
    for spell_out in (False, True):
        connection = duckdb.connect()
        connection.register(
            "run", pl.read_parquet(RUN).with_columns(arrival=pl.int_range(pl.len()), input_rank=None, doc_weight=1.0)
        )
        connection.register("qrels", pl.read_parquet(QRELS))
        columns: dict[str, list[str]] = {}
        for _, statements in transpile.portable_files(variables, dialect="duckdb"):
            for statement in statements:
                tree = statement.statement.copy()
                if spell_out:
                    tree = transpile.expanded_stars(tree, columns)
                    assert "exclude" not in tree.sql("duckdb").lower() and "columns(" not in tree.sql("duckdb").lower()
                connection.execute(tree.sql("duckdb"))
                columns[statement.view] = transpile.output_columns(statement.query, columns)
        tables[spell_out] = [connection.table(name).pl() for name in ("per_query", "summary")]
    for native, spelled in zip(tables[False], tables[True], strict=True):
        assert native.columns == spelled.columns
        assert native.equals(spelled)
    # a measure not asked for is no column (sql/measures/measures.sql selects those asked)
    assert "P" in tables[True][1].columns and "recall" not in tables[True][1].columns


def test_a_star_over_a_table_of_unknown_columns_is_refused() -> None:
    tree = sqlglot.parse_one("select t.* exclude (a) from t", read="duckdb")
    with pytest.raises(UsageError, match="columns of t"):
        transpile.expanded_stars(tree)
    assert transpile.expanded_stars(tree, {"t": ["a", "b"]}).sql("spark") == "SELECT t.b FROM t"
    mixed = sqlglot.parse_one("select * exclude (b) from t join u on t.a = u.a", read="duckdb")
    expanded = transpile.expanded_stars(mixed, {"t": ["a", "b"], "u": ["a", "c"]})
    assert expanded.sql("spark") == "SELECT t.a, u.a, u.c FROM t JOIN u ON t.a = u.a"


NULL_ORDERS_WRITTEN_OUT = {
    "list": "select list(x order by x) as l from t",
    "array_agg desc": "select array_agg(x order by x desc) as l from t",
    "string_agg": "select string_agg(cast(x as varchar), ',' order by x) as s from t",
    "first and last": "select first(x order by x) as f, last(x order by x desc) as g from t",
    "window and qualify": (
        "select x, row_number() over (order by x) as r from t"
        " qualify row_number() over (order by x desc) <= 5 order by r"
    ),
    # an ordering inside another ordering's expression
    "nested": (
        "select x from t"
        " order by (select count(*) from t as u where u.x < t.x), row_number() over (order by x nulls first)"
    ),
}


@pytest.mark.parametrize("query", NULL_ORDERS_WRITTEN_OUT.values(), ids=NULL_ORDERS_WRITTEN_OUT.keys())
def test_sql_written_for_duckdb_reads_no_default_null_order(query: str) -> None:
    """SQL we write for DuckDB (transpile.written_in) spells out every ordering's nulls, in
    windows, aggregates and nested orderings alike: it gives the rows the query gives in a
    default session, in a session whose default_null_order is nulls_first."""
    written = sqlglot.parse_one(query, read="duckdb").sql(transpile.written_in("duckdb"))
    connection = duckdb.connect()
    try:
        connection.execute("create table t as select * from (values (1), (null), (3), (2), (null)) as v(x)")
        expected = connection.execute(query).fetchall()
        connection.execute("set default_null_order = 'nulls_first'")
        assert connection.execute(written).fetchall() == expected, written
    finally:
        connection.close()


@pytest.mark.parametrize("enabled", [True, False], ids=["collector on", "collector off"])
def test_transpiling_leaves_the_cycle_collector_as_it_found_it(enabled: bool) -> None:
    """Transpiling pauses Python's cycle collector (transpile.collector_paused), in threads at once
    too; the process's own setting is given back, whatever it was, and an error inside gives it
    back as well."""
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        seen = []

        def work(k: int) -> None:
            with transpile.collector_paused():
                seen.append(gc.isenabled())
                transpile.sql_text(make_evaluation(k=[k]), dialect="duckdb")

        threads = [threading.Thread(target=work, args=(k,)) for k in (31, 32, 33)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert seen == [False, False, False]
        assert gc.isenabled() is enabled
        with pytest.raises(UsageError), transpile.collector_paused():
            raise UsageError("inside")
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()
