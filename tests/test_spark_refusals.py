"""What the Spark engine refuses by design is refused before its session starts: the real command
line, in a subprocess, exits with the documented code in seconds and never imports pyspark (so
never starts a JVM, which costs 20-60 s).

The signal that no JVM was started: Python's own import log (``PYTHONPROFILEIMPORTTIME``, the
environment's ``-X importtime``) names every module imported; pyspark and py4j must not be among
them. A time bound is asserted too, loose enough for a busy machine.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline.registry import CONVENTIONS, spark_refusals
from tests.helpers import ROOT, run_cli_process

RUN = ROOT / "data" / "run.parquet"
QRELS = ROOT / "data" / "qrels.parquet"
# Under 5 s on a quiet machine (about 2 s measured); the bound leaves room for a busy one while
# staying far below a JVM's start (20-60 s).
SECONDS = 30
_IMPORTED = re.compile(r"^import time:.*\|\s*(\S+)\s*$", re.MULTILINE)


def refused_quickly(monkeypatch: pytest.MonkeyPatch, *args: object) -> tuple[int, str]:
    """Run ``ndcg evaluate --engine spark ARGS``; assert it took no JVM and little time, and
    return its exit code and its stderr without the import log."""
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")
    started = time.monotonic()
    done = run_cli_process("evaluate", "--engine", "spark", *args)
    elapsed = time.monotonic() - started
    imported = set(_IMPORTED.findall(done.stderr))
    assert imported, "the import log is missing: the check below would prove nothing"
    spark_modules = sorted(name for name in imported if name.split(".")[0] in ("pyspark", "py4j"))
    assert not spark_modules, f"refused after pyspark was imported: {spark_modules[:3]}"
    assert elapsed < SECONDS, f"took {elapsed:.1f} s"
    messages = "\n".join(line for line in done.stderr.splitlines() if not line.startswith("import time:"))
    return done.returncode, messages


def test_a_trec_run_is_refused_before_the_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 2.5 tag\n")
    code, error = refused_quickly(monkeypatch, "--run", run, "--qrels", QRELS)
    assert code == 2, error
    assert f"{run}: the spark engine reads Parquet only" in error and "not trec" in error


def test_trec_qrels_are_refused_before_the_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 d1 1\n")
    code, error = refused_quickly(monkeypatch, "--run", RUN, "--qrels", qrels)
    assert code == 2 and f"{qrels}: the spark engine reads Parquet only" in error, error


def test_a_csv_run_is_refused_before_the_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    run = tmp_path / "run.csv"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["d1"], "score": [1.0]}).write_csv(run)
    code, error = refused_quickly(monkeypatch, "--run", run, "--qrels", QRELS)
    assert code == 2 and "not csv" in error, error


def test_a_format_given_by_flag_is_refused_before_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    code, error = refused_quickly(monkeypatch, "--run", RUN, "--qrels", QRELS, "--run-format", "tsv")
    assert code == 2 and f"{RUN}: the spark engine reads Parquet only" in error and "not tsv" in error, error


def _refused_conventions() -> list[tuple[str, str, str]]:
    """(flag, value, why) of every convention choice the registry says Spark refuses."""
    flags = {convention.variables[0].name: convention.flag for convention in CONVENTIONS if convention.variables}
    return [
        (flags[variable], value, why)
        for variable, refused in spark_refusals().items()
        for value, why in refused.items()
    ]


@pytest.mark.parametrize(("flag", "value", "why"), _refused_conventions())
def test_a_refused_convention_is_refused_before_the_session(
    monkeypatch: pytest.MonkeyPatch, flag: str, value: str, why: str
) -> None:
    code, error = refused_quickly(monkeypatch, "--run", RUN, "--qrels", QRELS, flag, value)
    assert code == 2 and "is not supported on the spark engine" in error and why in error, error


@pytest.mark.parametrize(
    "flags",
    [["--memory-limit", "2GB"], ["--threads", "2"], ["--group-by", "locale"], ["--query-attributes", str(RUN)]],
)
def test_options_spark_cannot_honour_are_refused_before_the_session(
    monkeypatch: pytest.MonkeyPatch, flags: list[str]
) -> None:
    code, error = refused_quickly(monkeypatch, "--run", RUN, "--qrels", QRELS, *flags)
    assert code == 2 and flags[0] in error, error
    why = (
        "for the duckdb engine" if flags[0] in ("--memory-limit", "--threads") else "not supported by the spark engine"
    )
    assert why in error, error


def test_a_missing_local_run_is_refused_before_the_session(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    missing = tmp_path / "missing.parquet"
    code, error = refused_quickly(monkeypatch, "--run", missing, "--qrels", QRELS)
    assert code == 3 and f"{missing}: no such file or directory" in error, error
