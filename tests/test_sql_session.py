"""The SQL a user runs in their own DuckDB session, under the settings a session may hold.

The table macros (sql/generated/macros.sql) and `.read sql/ndcg.sql` run in the user's session,
whose settings (a ~/.duckdbrc line, a dbt profile's) the command line never sees. Each setting
that could change a query's meaning is set before the SQL is read, as a session would hold it,
and the numbers must be the Polars engine's for every measure family (1e-9); the one setting
that cannot be honoured for text ids, a default collation that folds case, is refused in words
that say how to fix it. The duckdb CLI is the real path (`.read`); the macros run in DuckDB's
Python API, which is the same engine.
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.engines import polars as polars_engine
from pipeline.registry import Evaluation
from pipeline.sql_files import MACROS, sql_file
from pipeline.sql_refusals import FAMILIES
from tests.helpers import selected

ROOT = Path(__file__).resolve().parent.parent
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"
KS = (1, 3, 5, 10)
EVALUATION = Evaluation(measures=FAMILIES, cutoffs=KS)

# every DuckDB setting found that changes how a query reads, with a value that would change it
SETTINGS = {
    "descending default order": "SET default_order = 'DESC'",
    "nulls first": "SET default_null_order = 'NULLS_FIRST'",
    "nulls first on asc": "SET default_null_order = 'NULLS_FIRST_ON_ASC_LAST_ON_DESC'",
    "integer division": "SET integer_division = true",
    "no IEEE floating point": "SET ieee_floating_point_ops = false",
    "one thread": "SET threads = 1",
    "no insertion order": "SET preserve_insertion_order = false",
    "nocase collation, integer ids": "SET default_collation = 'nocase'",
}


def inputs(folder: Path, *, text_ids: bool) -> tuple[Path, Path]:
    """Queries with ties, unjudged and negatively labelled documents, a query without judgments
    and one without results; with text ids, ids that differ only in case (q1 and Q1, d1 and D1),
    which a case-folding session would merge."""
    rows = []
    for query in range(6):
        for doc in range(12):
            score = float((query * 7 + doc * 5) % 6)  # ties in every query
            rows.append((query, doc, score))
    run = pl.DataFrame(rows, schema={"query_id": pl.Int64, "doc_id": pl.Int64, "score": pl.Float64}, orient="row")
    labels = [(q, d, (q + d) % 5 - 1) for q in range(1, 7) for d in range(0, 14, 2)]
    qrels = pl.DataFrame(labels, schema={"query_id": pl.Int64, "doc_id": pl.Int64, "relevance": pl.Int64}, orient="row")
    if text_ids:

        def named(frame: pl.DataFrame) -> pl.DataFrame:
            # 0 -> q0, 1 -> Q0, 2 -> q1, 3 -> Q1, ...: every id has a twin in the other case
            return frame.with_columns(
                pl.when(pl.col("query_id") % 2 == 1)
                .then(pl.format("Q{}", pl.col("query_id") // 2))
                .otherwise(pl.format("q{}", pl.col("query_id") // 2))
                .alias("query_id"),
                pl.when(pl.col("doc_id") % 2 == 1)
                .then(pl.format("D{}", pl.col("doc_id") // 2))
                .otherwise(pl.format("d{}", pl.col("doc_id") // 2))
                .alias("doc_id"),
            )

        run, qrels = named(run), named(qrels)
    run_path, qrels_path = folder / "run.parquet", folder / "qrels.parquet"
    run.write_parquet(run_path)
    qrels.write_parquet(qrels_path)
    return run_path, qrels_path


def expected(run: Path, qrels: Path) -> pl.DataFrame:
    return polars_engine.per_query(pl.scan_parquet(run), pl.scan_parquet(qrels), EVALUATION).collect()


def assert_same_numbers(got: pl.DataFrame, want: pl.DataFrame) -> None:
    keys = ["query_id", "k"]
    got = got.with_columns(pl.col("query_id").cast(pl.String)).sort(keys, nulls_last=True)
    want = want.with_columns(pl.col("query_id").cast(pl.String)).sort(keys, nulls_last=True)
    assert got.select(keys).rows() == want.select(keys).rows()
    compared = [c for c in want.columns if c not in keys and c in got.columns and want[c].dtype.is_numeric()]
    assert len(compared) > 40, compared
    for column in compared:
        for key, a, b in zip(want.select(keys).rows(), got[column], want[column], strict=True):
            if b is None or a is None:
                assert a is None and b is None, f"{column} of {key}: {a} != {b}"
            elif math.isnan(b):
                assert math.isnan(a), f"{column} of {key}: {a} != {b}"
            else:
                assert a == pytest.approx(b, abs=1e-9), f"{column} of {key}: {a} != {b}"


def macros_in_session(setting: str, run: Path, qrels: Path) -> pl.DataFrame:
    """The setting first, then the macros read, as a session with it in ~/.duckdbrc reads them."""
    connection = duckdb.connect()
    connection.execute(setting)
    connection.execute(sql_file(MACROS))
    return selected(
        connection, f"select * from ndcg_per_query('{run}', '{qrels}', ks := {list(KS)}, measures := {list(FAMILIES)})"
    )


def script_in_session(setting: str, run: Path, qrels: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """`.read sql/ndcg.sql` and `.read sql/export.sql` in the duckdb CLI after the setting."""
    variables = [f"run_path = '{run}'", f"qrels_path = '{qrels}'", f"ks = {list(KS)}"]
    variables += [f"measures = {list(FAMILIES)}", f"out_path = '{out}'"]
    commands = ["-cmd", setting, *(arg for v in variables for arg in ("-cmd", f"SET VARIABLE {v}"))]
    return subprocess.run(
        [str(DUCKDB_CLI), *commands, "-cmd", ".read sql/ndcg.sql", "-c", ".read sql/export.sql"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )


def as_trec(run: Path, qrels: Path) -> tuple[Path, Path]:
    """The same inputs as TREC text, which the macros read themselves (sql/macro_text_inputs.sql):
    fields apart by a tab in the run, by runs of spaces in the qrels."""
    run_txt, qrels_txt = run.with_suffix(".txt"), qrels.with_suffix(".txt")
    run_txt.write_text("".join(f"{q}\tQ0\t{d}\t0\t{s!r}\ttag\n" for q, d, s in pl.read_parquet(run).iter_rows()))
    qrels_txt.write_text("".join(f"{q}   0  {d} {r}\n" for q, d, r in pl.read_parquet(qrels).iter_rows()))
    return run_txt, qrels_txt


@pytest.mark.parametrize("setting", list(SETTINGS.values()), ids=list(SETTINGS))
def test_macros_give_the_polars_numbers_under_each_setting(tmp_path: Path, setting: str) -> None:
    """On Parquet and, with text ids, on the same inputs as TREC text."""
    text_ids = "collation" not in setting
    run, qrels = inputs(tmp_path, text_ids=text_ids)
    assert_same_numbers(macros_in_session(setting, run, qrels), expected(run, qrels))
    if text_ids:
        assert_same_numbers(macros_in_session(setting, *as_trec(run, qrels)), expected(run, qrels))


@pytest.mark.subprocess
@pytest.mark.parametrize("setting", list(SETTINGS.values()), ids=list(SETTINGS))
def test_ndcg_sql_gives_the_polars_numbers_under_each_setting(tmp_path: Path, setting: str) -> None:
    text_ids = "collation" not in setting
    run, qrels = inputs(tmp_path, text_ids=text_ids)
    out = tmp_path / "out"
    out.mkdir()
    done = script_in_session(setting, run, qrels, out)
    assert done.returncode == 0 and "Error" not in done.stderr, done.stderr
    assert_same_numbers(pl.read_parquet(out / "per_query.parquet"), expected(run, qrels))


def test_macros_refuse_a_case_folding_collation_with_text_ids(tmp_path: Path) -> None:
    run, qrels = inputs(tmp_path, text_ids=True)
    with pytest.raises(duckdb.InvalidInputException) as refused:
        macros_in_session("SET default_collation = 'nocase'", run, qrels)
    assert "ndcg_per_query: the session's default_collation is 'nocase'" in str(refused.value)
    assert "RESET default_collation" in str(refused.value)


@pytest.mark.subprocess
def test_ndcg_sql_refuses_a_case_folding_collation_with_text_ids_and_writes_nothing(tmp_path: Path) -> None:
    run, qrels = inputs(tmp_path, text_ids=True)
    out = tmp_path / "out"
    out.mkdir()
    done = script_in_session("SET default_collation = 'nocase'", run, qrels, out)
    assert "the session's default_collation is 'nocase'" in done.stderr, done.stderr
    assert "RESET default_collation" in done.stderr
    assert not list(out.iterdir())
    assert "0." not in done.stdout  # no number printed


@pytest.mark.parametrize("collation", ["nocase", "noaccent"])
def test_macros_refuse_an_id_column_declared_with_a_folding_collation(collation: str) -> None:
    """A table whose doc_id is declared ``COLLATE NOCASE`` (or NOACCENT): the union of the two
    inputs passes its collation to both, under which the run's 'A' (or 'é') would take the
    judgment of 'a' (or 'e'). Refused, naming such an id; the same ids selected with
    ``COLLATE c`` are scored by their bytes, the NDCG worked out below."""
    first = "A" if collation == "nocase" else "é"
    connection = duckdb.connect()
    connection.execute(sql_file(MACROS))
    connection.execute(
        f"create table rr as select * from (values ('q1', '{first}', 2.0), ('q1', 'b', 1.0), ('q1', 'c', 0.5)) "
        "as t(query_id, doc_id, score)"
    )
    connection.execute(f"create table qq (query_id varchar, doc_id varchar collate {collation}, relevance bigint)")
    folded = "a" if collation == "nocase" else "e"
    connection.execute(f"insert into qq values ('q1', '{folded}', 3), ('q1', 'b', 1), ('q1', 'd', 2)")
    with pytest.raises(duckdb.InvalidInputException) as refused:
        connection.execute("select * from ndcg_per_query('rr', 'qq', ks := [1, 3])").fetchall()
    assert "ndcg_per_query: the ids are compared under a collation that folds case or accents" in str(refused.value)
    connection.execute("create table qq_c as select query_id, doc_id collate c as doc_id, relevance from qq")
    [(whole,)] = connection.execute(
        "select ndcg from ndcg_per_query('rr', 'qq_c', ks := [1]) where k is null"
    ).fetchall()
    # ranked: A/é (unjudged), b (1) at rank 2, c (unjudged); ideal: 3, 2, 1 at ranks 1, 2, 3
    dcg = 1 / math.log2(3)
    idcg = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    assert whole == pytest.approx(dcg / idcg, abs=1e-12)
