"""The files of sql/ keep the shape the README promises: sqlfluff passes (as `make lint` checks),
each step of the per-query table is a headed file of at most about 100 lines whose header
lists, as pasteable `SET VARIABLE` lines, exactly the variables it reads, and sql/ndcg.sql
reads the steps in the order the engines run them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipeline.sql_files import PER_QUERY_STEPS, VARIABLES

ROOT = Path(__file__).resolve().parent.parent
SQL = ROOT / "sql"
READ_VARIABLE = re.compile(r"getvariable\('(\w+)'\)")
SET_LINE = re.compile(r"^--   (SET VARIABLE (\w+) = .*?;)", re.MULTILINE)


def _code(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))


@pytest.mark.parametrize("name", PER_QUERY_STEPS)
def test_each_step_is_headed_short_and_lists_what_it_reads(name: str) -> None:
    text = (SQL / name).read_text(encoding="utf-8")
    assert text.startswith(f"-- {name}: "), "the header opens with the file's name and what it computes"
    assert len(text.splitlines()) <= 100
    for section in ("Variables:", "Creates:"):
        assert section in text
    read = set(READ_VARIABLE.findall(_code(text)))
    listed = {match.group(2) for match in SET_LINE.finditer(text)}
    assert read == listed, f"header lists {sorted(listed)}, the SQL reads {sorted(read)}"
    assert read <= set(VARIABLES)
    # each listed line runs when pasted into DuckDB
    connection = duckdb.connect()
    for match in SET_LINE.finditer(text):
        connection.execute(match.group(1))


def test_every_step_creates_one_view_and_the_last_the_table() -> None:
    created = [
        re.findall(r"^create or replace temp (view|table) (\w+) as$", _code((SQL / name).read_text()), re.MULTILINE)
        for name in PER_QUERY_STEPS
    ]
    assert created == [[("view", name.removesuffix(".sql"))] for name in PER_QUERY_STEPS[:-1]] + [
        [("table", "per_query")]
    ]


def test_ndcg_sql_reads_the_steps_in_order() -> None:
    reads = re.findall(r"^\.read sql/(\S+)$", (SQL / "ndcg.sql").read_text(), re.MULTILINE)
    assert reads == ["inputs.sql", *PER_QUERY_STEPS, "summary.sql"]


@pytest.mark.slow
def test_sql_passes_sqlfluff() -> None:
    sqlfluff = shutil.which("sqlfluff", path=str(Path(sys.executable).parent))
    if sqlfluff is None:
        pytest.skip("sqlfluff is not installed (pip install -e '.[dev]')")
    # about 6 s for sql/ on a quiet 2-core machine
    result = subprocess.run(
        [sqlfluff, "lint", "sql", "--nocolor"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stdout + result.stderr
