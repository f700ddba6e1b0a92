"""bench/run.py's timed processes: what an ``--also-ndcg`` executable runs.

The README's script for another checkout is ``PYTHONPATH=<checkout> python -m pipeline``; run
from this checkout's root, ``python -m`` put the current directory first on ``sys.path`` and ran
this checkout's ``pipeline``, so its "before" rows timed the code after (docs/benchmarks.md)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT

# bench/run.py imported in a child process: it puts bench/ first on sys.path for its own modules
PROBE = """
import subprocess, sys
sys.path.insert(0, "bench")
import run
environment = run.OURS_ENVIRONMENT if sys.argv[2] == "as-bench" else None
done = subprocess.run([sys.argv[1]], env=environment, capture_output=True, text=True, timeout=60)
print(done.stdout.strip() or done.stderr.strip())
"""


@pytest.fixture
def other_checkout_script(tmp_path: Path) -> Path:
    """A script running ``python -m pipeline`` from another "checkout", whose pipeline says so."""
    other = tmp_path / "other" / "pipeline"
    other.mkdir(parents=True)
    (other / "__init__.py").write_text("")
    (other / "__main__.py").write_text("import pipeline\nprint('ran', pipeline.__file__)\n")
    script = tmp_path / "ndcg-other"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={tmp_path / "other"} exec {sys.executable} -m pipeline "$@"\n')
    script.chmod(0o755)
    return script


@pytest.mark.timeout(120)
@pytest.mark.subprocess
def test_an_also_ndcg_script_runs_its_own_checkout_from_this_one_s_root(other_checkout_script: Path) -> None:
    def ran(how: str) -> str:
        command = [sys.executable, "-c", PROBE, str(other_checkout_script), how]
        return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=90, check=True).stdout

    other = str(other_checkout_script.parent / "other" / "pipeline" / "__init__.py")
    assert ran("as-bench").split() == ["ran", other]
    # the hazard itself: without the bench's environment, this checkout's pipeline runs
    assert other not in ran("plain")
