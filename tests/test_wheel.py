"""The package as a user gets it: a wheel (and an sdist) built from the sources, installed where
the checkout cannot be seen, runs `ndcg --version`, both local engines and `ndcg sql` from a
folder far from the repository, with the files of sql/ read from the installed package.

The wheel is built from a copy of the files the build reads (so nothing is written into the
checkout), offline with the venv's setuptools when it is new enough (`make dev` installs it),
else in pip's isolated build. It is installed with --no-deps into a fresh venv without pip
whose only view of the dependencies is a path line (.pth) naming this venv's site-packages:
a path line does not run the .pth files there, so the editable install of the checkout stays
invisible and `pipeline` can only come from the wheel. The Spark engine is left out (a JVM per
run costs minutes on a busy machine); `ndcg sql --dialect spark` transpiles the shipped SQL.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest

from tests.helpers import ROOT, run_cli

# A generous limit per test when pytest-timeout is there: the first test pays for the build.
_LIMIT = [pytest.mark.timeout(600)] if importlib.util.find_spec("pytest_timeout") else []
pytestmark = [pytest.mark.slow, *_LIMIT]

# What the build reads; a packaging change that needs another file fails here, loudly.
BUILD_INPUTS = ("pyproject.toml", "README.md", "LICENSE", "pipeline", "sql")
SQL_NAMES = sorted(path.relative_to(ROOT / "sql").as_posix() for path in (ROOT / "sql").rglob("*.sql"))
VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _setuptools_builds_offline() -> bool:
    """True when this venv's setuptools reads the PEP 639 license fields (setuptools 77)."""
    try:
        major = int(importlib.metadata.version("setuptools").split(".")[0])
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return False
    return major >= 77


def _check(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(command, capture_output=True, text=True, timeout=300, **kwargs)
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tree = tmp_path_factory.mktemp("source")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tree / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, tree / name)
    return tree


@pytest.fixture(scope="module")
def wheel_build(source: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel built from the checkout's files, and what the build printed."""
    out = tmp_path_factory.mktemp("dist")
    offline = ["--no-build-isolation", "--no-index"] if _setuptools_builds_offline() else []
    done = _check([sys.executable, "-m", "pip", "wheel", "--no-deps", *offline, "-w", str(out), str(source)])
    (built,) = out.glob("ndcg_pipeline-*.whl")
    return built, done.stdout + done.stderr


@pytest.fixture(scope="module")
def wheel(wheel_build: tuple[Path, str]) -> Path:
    return wheel_build[0]


def test_the_build_warns_of_nothing(wheel_build: tuple[Path, str]) -> None:
    """`make install` prints what setuptools warns while it builds: each folder of sql/ that
    pyproject.toml's packages left out was a 40-line warning, 200 lines of a first install."""
    _, printed = wheel_build
    assert "BuildBackendWarning" not in printed and "SetuptoolsDeprecationWarning" not in printed, printed[-3000:]


@dataclass(frozen=True)
class Installed:
    venv: Path
    python: Path
    ndcg: Path
    work: Path  # a folder far from the checkout holding run.parquet and qrels.parquet
    env: dict[str, str]

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [str(self.ndcg), *args]
        if check:
            return _check(command, cwd=self.work, env=self.env)
        return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=self.work, env=self.env)


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Installed:
    venv = tmp_path_factory.mktemp("venv")
    _check([sys.executable, "-m", "venv", "--without-pip", "--clear", str(venv)])
    python = venv / "bin" / "python"
    site = Path(_check([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"]).stdout.strip())
    (site / "project_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # --ignore-installed: the checkout's editable dist-info is visible through that path line;
    # pip must neither count it as installed nor try to uninstall it
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    _check([*pip, "install", "--no-deps", "--no-index", "--ignore-installed", "--no-warn-script-location", str(wheel)])
    work = tmp_path_factory.mktemp("elsewhere")
    for name in ("run.parquet", "qrels.parquet"):
        shutil.copy2(ROOT / "data" / name, work / name)
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "PYTHONHOME")}
    return Installed(venv=venv, python=python, ndcg=venv / "bin" / "ndcg", work=work, env=env)


def test_version_from_a_checkout_is_pyprojects() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["ndcg", VERSION]


def test_wheel_ships_sql_license_and_readme(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"ndcg_pipeline-{VERSION}.dist-info/METADATA").decode()
    assert sorted(name.removeprefix("pipeline/sql/") for name in names if name.startswith("pipeline/sql/")) == SQL_NAMES
    assert f"ndcg_pipeline-{VERSION}.dist-info/licenses/LICENSE" in names
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    assert "Description-Content-Type: text/markdown" in metadata
    assert (ROOT / "README.md").read_text().splitlines()[0] in metadata


def test_sdist_carries_what_the_wheel_is_built_from(source: Path, tmp_path: Path) -> None:
    if not _setuptools_builds_offline():
        pytest.skip("building the sdist needs setuptools>=77 in this venv (make dev installs it)")
    script = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    name = _check([sys.executable, "-c", script, str(tmp_path)], cwd=source).stdout.split()[-1]
    with tarfile.open(tmp_path / name) as archive:
        members = {member.removeprefix(f"ndcg_pipeline-{VERSION}/") for member in archive.getnames()}
    assert {"LICENSE", "README.md", "pyproject.toml", "PKG-INFO"} <= members
    assert {f"sql/{sql}" for sql in SQL_NAMES} <= members


def test_installed_package_is_the_wheel_not_the_checkout(installed: Installed) -> None:
    script = "import pipeline, pipeline.sql_files as s; print(pipeline.__file__); print(s.SQL_DIR)"
    package, sql_dir = _check(
        [str(installed.python), "-c", script], cwd=installed.work, env=installed.env
    ).stdout.split()
    assert Path(package).is_relative_to(installed.venv)
    assert Path(sql_dir).is_relative_to(installed.venv)
    assert not Path(package).is_relative_to(ROOT)
    assert installed.run("--version").stdout.split() == ["ndcg", VERSION]


def summary(installed: Installed, engine: str) -> list[dict]:
    result = installed.run("evaluate", "--run", "run.parquet", "--qrels", "qrels.parquet", "--engine", engine, "--json")
    return json.loads(result.stdout)["summary"]


def test_installed_engines_agree(installed: Installed) -> None:
    polars_summary, duckdb_summary = summary(installed, "polars"), summary(installed, "duckdb")
    # queries in both files, counted here without the package
    run, qrels = (pl.read_parquet(installed.work / name) for name in ("run.parquet", "qrels.parquet"))
    both = run.select("query_id").unique().join(qrels.select("query_id").unique(), on="query_id").height
    assert [row["k"] for row in polars_summary] == [None, 5, 10, 20]
    assert len(duckdb_summary) == len(polars_summary)
    for ours, theirs in zip(polars_summary, duckdb_summary, strict=True):
        assert ours["k"] == theirs["k"]
        assert ours["queries"] == theirs["queries"] == both
        for measure in ("cg", "dcg", "idcg", "ndcg"):
            assert theirs[measure] == pytest.approx(ours[measure], abs=1e-9), (ours["k"], measure)


def test_installed_sql_prints_and_runs(installed: Installed) -> None:
    spark_sql = installed.run("sql", "--dialect", "spark").stdout
    assert "-- from sql/measures/per_query.sql" in spark_sql
    assert "-- from sql/summary.sql" in spark_sql
    assert "getvariable" not in spark_sql
    # the DuckDB text, pasted into DuckDB over the sample, gives the installed engine's summary
    duckdb_sql = installed.run("sql", "--dialect", "duckdb").stdout
    connection = duckdb.connect()
    run, qrels = installed.work / "run.parquet", installed.work / "qrels.parquet"
    connection.execute(
        "CREATE VIEW run AS SELECT query_id, doc_id, score, NULL::BIGINT AS arrival, NULL::BIGINT AS input_rank "
        f"FROM read_parquet('{run}')"
    )
    connection.execute(f"CREATE VIEW qrels AS SELECT query_id, doc_id, relevance FROM read_parquet('{qrels}')")
    connection.execute(duckdb_sql)
    pasted = connection.execute("SELECT k, queries, cg, dcg, idcg, ndcg FROM summary ORDER BY k NULLS FIRST").fetchall()
    expected = summary(installed, "duckdb")
    assert [row[0] for row in pasted] == [row["k"] for row in expected]
    for row, want in zip(pasted, expected, strict=True):
        assert row[1] == want["queries"]
        assert list(row[2:]) == pytest.approx([want[m] for m in ("cg", "dcg", "idcg", "ndcg")], abs=1e-9)


def test_a_missing_sql_file_is_our_error_not_the_input(installed: Installed) -> None:
    shipped = (
        Path(
            _check(
                [str(installed.python), "-c", "import pipeline.sql_files as s; print(s.SQL_DIR)"],
                cwd=installed.work,
                env=installed.env,
            ).stdout.strip()
        )
        / "inputs.sql"
    )
    hidden = shipped.with_suffix(".hidden")
    shipped.rename(hidden)
    try:
        result = installed.run(
            "evaluate", "--run", "run.parquet", "--qrels", "qrels.parquet", "--engine", "duckdb", check=False
        )
    finally:
        hidden.rename(shipped)
    assert result.returncode == 1, result.stderr
    assert "internal error" in result.stderr
    assert "sql/inputs.sql" in result.stderr
    assert "cannot read the inputs" not in result.stderr
    assert "Traceback" not in result.stderr
