"""The dbt example (examples/dbt-duckdb/) built with the real `dbt build`: its models call the
table macros of `ndcg sql --macros`, its dbt tests pass, and the table it builds equals the Polars
engine's per-query table on the same files at 1e-9. dbt lives in a virtual environment of its own
(`make test` makes `.venv-dbt`: dbt's pins clash with the project's lint tools)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline import Evaluation
from pipeline.engines import polars as polars_engine

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "dbt-duckdb"
DBT = ROOT / ".venv-dbt" / "bin" / "dbt"
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"

pytestmark = pytest.mark.skipif(
    not DBT.exists(), reason="dbt is installed by `make test` into .venv-dbt (make .venv-dbt/.installed)"
)


@pytest.mark.timeout(600)
def test_dbt_builds_the_example_with_the_macros_and_its_tests_pass(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(EXAMPLE, project)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    # the README's three lines, as printed
    printed = subprocess.run(
        [sys.executable, "-m", "pipeline", "sql", "--macros"], cwd=project, env=env, capture_output=True, text=True
    )
    assert printed.returncode == 0, printed.stderr
    (project / "ndcg_macros.sql").write_text(printed.stdout, encoding="utf-8")
    defined = subprocess.run(
        [str(DUCKDB_CLI), "ndcg.duckdb", "-c", ".read ndcg_macros.sql"], cwd=project, capture_output=True, text=True
    )
    assert defined.returncode == 0, defined.stderr
    run, qrels = ROOT / "data" / "run.parquet", ROOT / "data" / "qrels.parquet"
    built = subprocess.run(
        [str(DBT), "build", "--profiles-dir", ".", "--vars", f"{{run: '{run}', qrels: '{qrels}'}}"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=540,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-2000:]
    assert "PASS=" in built.stdout and "ERROR=0" in built.stdout, built.stdout[-2000:]
    with duckdb.connect(str(project / "ndcg.duckdb"), read_only=True) as connection:
        table = connection.sql("select * from ndcg_per_query").pl()
    expected = polars_engine.per_query(
        pl.scan_parquet(run), pl.scan_parquet(qrels), Evaluation(cutoffs=(5, 10), measures=("ndcg", "P", "map"))
    ).collect()
    assert sorted(table.columns) == sorted(expected.columns)
    got = {(r["query_id"], r["k"]): r for r in table.iter_rows(named=True)}
    want = {(r["query_id"], r["k"]): r for r in expected.iter_rows(named=True)}
    assert set(got) == set(want)
    for key, row in want.items():
        for column, value in row.items():
            if isinstance(value, float) and not math.isnan(value):
                assert got[key][column] == pytest.approx(value, abs=1e-9), f"{column} of {key}"
            else:
                assert got[key][column] == value or (value is None and got[key][column] is None)
