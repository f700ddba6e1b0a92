"""What `ndcg compare` prints: the comparison it could make even when its gate is refused, the
baseline named in its help, the Markdown for a CI step summary (`--output-format markdown`), and
the CI example (examples/ci/ndcg-gate.yml) run command by command. Per-query tables and runs are
built by hand, so every mean, difference and p-value is the arithmetic in the comments."""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ROOT, run_cli

GATE_FAILED = 6
FAST = ("--permutations", "2000", "--bootstrap", "200")
WORKFLOW = ROOT / "examples" / "ci" / "ndcg-gate.yml"


def output(folder: Path, rows: list[tuple], group: bool = False) -> Path:
    """An evaluation output holding only a per-query table: (query, k, ndcg[, locale]) rows."""
    folder.mkdir(parents=True)
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64} | ({"locale": pl.String} if group else {})
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(folder / "per_query.parquet")
    return folder


def good_and_bad_runs(folder: Path, count: int) -> tuple[Path, Path, Path]:
    """``count`` queries with a relevant d1 and an irrelevant d2: good.parquet ranks d1 first
    (NDCG@10 = 1), bad.parquet second (NDCG@10 = 1 / log2(3)). Returns (good, bad, qrels)."""
    queries = [f"q{i}" for i in range(count)]
    docs = ["d1"] * count + ["d2"] * count
    pl.DataFrame({"query_id": queries * 2, "doc_id": docs, "relevance": [1] * count + [0] * count}).write_parquet(
        folder / "qrels.parquet"
    )
    for name, (s1, s2) in {"good": (2.0, 1.0), "bad": (1.0, 2.0)}.items():
        scores = [s1] * count + [s2] * count
        pl.DataFrame({"query_id": queries * 2, "doc_id": docs, "score": scores}).write_parquet(
            folder / f"{name}.parquet"
        )
    return folder / "good.parquet", folder / "bad.parquet", folder / "qrels.parquet"


BAD = 1 / math.log2(3)  # NDCG@10 of a relevant document at rank 2: 1 / log2(2 + 1) = 0.6309


# --- a gate that cannot fail: the comparison first, then why --------------------------------


def test_a_gate_that_cannot_fail_prints_the_comparison_then_the_refusal(tmp_path: Path) -> None:
    # 3 queries, 0.8 -> 0.6 each: mean difference -0.2 (-25%), the candidate loses all 3. The
    # randomization test over 3 queries enumerates 2^3 = 8 sign vectors; only the all-minus and
    # all-plus reach |sum| = 0.6: p = 2/8 = 0.25 whatever the drop, so --fail-if-worse cannot fail
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.8) for i in range(3)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.6) for i in range(3)])
    out = tmp_path / "cmp"
    flags = ("compare", "--baseline", a, "--candidate", b, *FAST, "--fail-if-worse", "0.01")
    refused = run_cli(*flags, "--out", out)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    [row] = [line.split() for line in refused.stdout.splitlines() if line.startswith(" ") or line.startswith("prod")]
    assert row[:9] == ["prod", "cand", "10", "3", "0.8000", "0.6000", "-0.2000", "-25.0%", "0/0/3"]
    assert f"{2 / 8:.4f}" in row  # p(perm)
    assert "# gate (--fail-if-worse 0.01" in refused.stdout and "REFUSED" in refused.stdout
    assert "ndcg: error: the gate cannot fail: family overall (1 check, Holm, alpha 0.05)" in refused.stderr
    assert "the smallest p-value its checks can reach is 0.25" in refused.stderr
    assert not out.exists()  # a usage error writes nothing
    as_json = run_cli(*flags, "--json")
    assert as_json.returncode == 2
    payload = json.loads(as_json.stdout)
    [compared] = payload["comparison"]
    assert compared["mean_difference"] == pytest.approx(-0.2) and compared["p_value_permutation"] == pytest.approx(0.25)
    assert payload["gate"]["passed"] is None and payload["gate"]["refused"].startswith("the gate cannot fail")
    as_markdown = run_cli(*flags, "--output-format", "markdown")
    assert as_markdown.returncode == 2
    assert "**Regression gate: REFUSED** (exit 2)" in as_markdown.stdout
    assert "| prod | cand | 10 | 3 | 0.8000 | 0.6000 | -0.2000 | -25.0% | 0 / 0 / 3 |" in as_markdown.stdout


def test_runs_of_three_queries_print_their_comparison(tmp_path: Path) -> None:
    """The first hour's case: `compare --run A --run B --qrels Q --k 10 --fail-if-worse 0.01` over
    3 queries exits 2 and says why, after the means and the tests it could run."""
    good, bad, qrels = good_and_bad_runs(tmp_path, 3)
    result = run_cli("compare", "--run", good, "--run", bad, "--qrels", qrels, "--k", "10", *FAST,
                     "--fail-if-worse", "0.01")  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    [row] = [line.split() for line in result.stdout.splitlines() if line.lstrip().startswith("good")]
    assert row[:8] == ["good", "bad", "10", "3", "1.0000", f"{BAD:.4f}", f"{BAD - 1:+.4f}", f"{BAD - 1:+.1%}"]
    assert "It needs at least 6 paired queries" in result.stderr  # 2/2^6 = 0.031 < 0.05
    assert "--fail-if-drop-over DROP in place of --fail-if-worse" in result.stderr
    # the drop alone gates the same 3 queries: a drop of 1 - 0.6309 = 0.369 > 0.05
    dropped = run_cli("compare", "--run", good, "--run", bad, "--qrels", qrels, "--k", "10", *FAST,
                      "--fail-if-drop-over", "0.05")  # fmt: skip
    assert dropped.returncode == GATE_FAILED, dropped.stdout + dropped.stderr


# --- the baseline named in the help -----------------------------------------------------------


def test_the_help_names_the_baseline() -> None:
    shown = run_cli("compare", "--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())  # argparse wraps at the terminal's width
    assert "--run RUN a run to evaluate, repeated: the first is the baseline, the next ones the candidates" in text
    assert "--baseline BASELINE the baseline (the system the gate holds the others to)" in text
    assert "--candidate CANDIDATE a candidate compared with the baseline" in text
    assert "--fail-if-drop-over DROP the drop allowed without a significance test" in text


# --- Markdown ---------------------------------------------------------------------------------

TABLE_ROW = re.compile(r"^\|.*\|$")


def tables(markdown: str) -> list[list[list[str]]]:
    """The pipe tables of a page, each as rows of cells (escaped pipes kept inside their cell),
    checked as GitHub reads them: a header, a delimiter row of as many cells, rows of as many."""
    found: list[list[list[str]]] = []
    lines = markdown.splitlines()
    i = 0
    while i < len(lines):
        if TABLE_ROW.match(lines[i]) and i + 1 < len(lines) and re.fullmatch(r"\|( -+:? \|)+", lines[i + 1]):
            rows = []
            while i < len(lines) and TABLE_ROW.match(lines[i]):
                cells = re.split(r"(?<!\\)\|", lines[i])[1:-1]
                rows.append([cell.strip() for cell in cells])
                i += 1
            widths = {len(row) for row in rows}
            assert len(widths) == 1, rows
            found.append([rows[0], *rows[2:]])
        else:
            i += 1
    return found


def grouped_outputs(tmp_path: Path) -> tuple[Path, Path]:
    """de: q0..q3 0.5 -> 0.7 (+0.2 each); fr: 'q|4*', q5, q6, q7 0.6 -> 0.3, 0.5, 0.5, 0.6
    (-0.3, -0.1, -0.1, 0): fr loses 3 of 4. A query id with a pipe and a star shows as text."""
    ids = ["q0", "q1", "q2", "q3", "q|4*", "q5", "q6", "q7"]
    locale = ["de"] * 4 + ["fr_FR"] * 4
    base = [0.5] * 4 + [0.6] * 4
    cand = [0.7] * 4 + [0.3, 0.5, 0.5, 0.6]
    a = output(tmp_path / "prod", list(zip(ids, [10] * 8, base, locale, strict=True)), group=True)
    b = output(tmp_path / "cand", list(zip(ids, [10] * 8, cand, locale, strict=True)), group=True)
    return a, b


def test_markdown_of_saved_evaluations_with_groups(tmp_path: Path) -> None:
    a, b = grouped_outputs(tmp_path)
    flags = ("compare", "--baseline", a, "--candidate", b, "--group-by", "locale", *FAST)
    result = run_cli(*flags, "--fail-if-drop-over", "0.1", "--gate-groups", "--output-format", "markdown")
    # fr drops by (0.3 + 0.1 + 0.1 + 0) / 4 = 0.125 > 0.1: the gate fails on fr's row; overall the
    # mean changes by (4 * 0.2 - 0.5) / 8 = +0.0375 (baseline (4 * 0.5 + 4 * 0.6) / 8 = 0.55)
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    page = result.stdout
    assert page.startswith("### ndcg compare: NDCG@k, candidate cand against baseline prod\n")
    assert "**Regression gate: FAILED** (exit 6): 1 failure, listed below." in page
    comparison, regressed = tables(page)
    header = comparison[0]
    assert header[:5] == ["baseline", "candidate", "locale", "k", "queries"]
    rows = {row[2]: dict(zip(header, row, strict=True)) for row in comparison[1:]}
    assert list(rows) == ["overall", "de", r"fr\_FR"]
    overall, de, fr = rows["overall"], rows["de"], rows[r"fr\_FR"]
    assert (overall["queries"], overall["mean baseline"], overall["mean candidate"]) == ("8", "0.5500", "0.5875")
    assert overall["difference"] == f"{(4 * 0.2 - 0.5) / 8:+.4f}" and overall["relative"] == f"{0.0375 / 0.55:+.1%}"
    assert de["difference"] == "+0.2000" and de["wins / ties / losses"] == "4 / 0 / 0"
    assert fr["mean candidate"] == f"{(0.3 + 0.5 + 0.5 + 0.6) / 4:.4f}" and fr["wins / ties / losses"] == "0 / 1 / 3"
    # de's 4 identical deltas: 2 of the 2^4 sign vectors reach |sum|, p = 2/16
    assert de["p (randomization)"] == f"{2 / 16:.4f}"
    assert "- gate FAILED: cand vs prod at k=10, group locale='fr\\_FR': mean 0.6000 -\\> 0.4750" in page
    # the most regressed: q|4* (-0.3), then q5 and q6 (-0.1 each, by id); q7 is a tie, de rose
    assert regressed[0][3:] == ["query", "locale", "baseline value", "candidate value", "difference"]
    assert [row[3] for row in regressed[1:]] == [r"q\|4\*", "q5", "q6"]
    assert regressed[1][-1] == "-0.3000" and regressed[2][-3:] == ["0.6000", "0.5000", "-0.1000"]
    # deterministic: the same comparison prints the same page
    again = run_cli(*flags, "--fail-if-drop-over", "0.1", "--gate-groups", "--output-format", "markdown")
    assert again.stdout == page


def test_markdown_is_valid_github_flavoured_markdown(tmp_path: Path) -> None:
    """Read by a CommonMark parser with GitHub's tables: two tables, their rows, and the ids with
    Markdown's characters shown as text (no emphasis, no extra cell)."""
    markdown_it = pytest.importorskip("markdown_it", reason="markdown-it-py parses the page as GitHub would")
    a, b = grouped_outputs(tmp_path)
    page = run_cli("compare", "--baseline", a, "--candidate", b, "--group-by", "locale", *FAST,
                   "--output-format", "markdown").stdout  # fmt: skip
    tokens = markdown_it.MarkdownIt("commonmark").enable("table").parse(page)
    assert [t.type for t in tokens].count("table_open") == 2
    inline = [child.type for t in tokens if t.type == "inline" for child in t.children or []]
    assert "em_open" not in inline and "strong_open" not in inline  # q|4* and fr_FR are no emphasis
    html = markdown_it.MarkdownIt("commonmark").enable("table").render(page)
    assert "<td>q|4*</td>" in html and "<td>fr_FR</td>" in html
    assert html.count("<tr>") == 1 + 3 + 1 + 3  # header and 3 rows of each table


def test_markdown_of_runs_scored_here_with_the_gate(tmp_path: Path) -> None:
    # 8 queries, each 1 -> 0.6309: p = 2/2^8 = 0.0078 < 0.05 and a drop of 0.369 > 0.01: FAILED
    good, bad, qrels = good_and_bad_runs(tmp_path, 8)
    result = run_cli("compare", "--run", good, "--run", bad, "--qrels", qrels, "--k", "10", *FAST,
                     "--fail-if-worse", "0.01", "--output-format", "markdown")  # fmt: skip
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    [comparison, regressed] = tables(result.stdout)
    row = dict(zip(comparison[0], comparison[1], strict=True))
    assert (row["mean baseline"], row["mean candidate"]) == ("1.0000", f"{BAD:.4f}")
    assert row["p (randomization)"] == f"{2 / 2**8:.4f}" and row["wins / ties / losses"] == "0 / 0 / 8"
    assert "**Regression gate: FAILED** (exit 6): 1 failure, listed below." in result.stdout
    # 8 equal losses: the first 5 by query id
    assert [r[3] for r in regressed[1:]] == ["q0", "q1", "q2", "q3", "q4"]
    passed = run_cli("compare", "--run", bad, "--run", good, "--qrels", qrels, "--k", "10", *FAST,
                     "--fail-if-worse", "0.01", "--output-format", "markdown")  # fmt: skip
    assert passed.returncode == 0 and "**Regression gate: passed**" in passed.stdout
    assert "No query got worse." in passed.stdout


def test_markdown_of_partitioned_outputs(tmp_path: Path) -> None:
    # day 20: 4 queries 0.5 -> 0.7; day 21: 4 queries 0.6 -> 0.4; pooled: 8 units, difference 0
    for name, days in (("a", (0.5, 0.6)), ("b", (0.7, 0.4))):
        for day, value in zip(("2026-11-20", "2026-11-21"), days, strict=True):
            folder = tmp_path / name / f"dt={day}"
            folder.mkdir(parents=True)
            rows = {"dt": [day] * 4, "query_id": [f"q{i}" for i in range(4)], "k": [10] * 4, "ndcg": [value] * 4}
            pl.DataFrame(rows).write_parquet(folder / "per_query.parquet")
    result = run_cli("compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", *FAST,
                     "--output-format", "markdown")  # fmt: skip
    assert result.returncode == 0, result.stderr
    comparison, regressed = tables(result.stdout)
    assert [(row[2], row[5], row[7]) for row in comparison[1:]] == [
        ("pooled", "0.5500", "+0.0000"),
        ("dt=2026-11-20", "0.5000", "+0.2000"),
        ("dt=2026-11-21", "0.6000", "-0.2000"),
    ]
    assert {row[3] for row in regressed[1:]} == {"dt=2026-11-21"} and len(regressed) == 1 + 4


def test_json_and_markdown_together_are_refused(tmp_path: Path) -> None:
    a = output(tmp_path / "prod", [("q0", 10, 0.5)])
    b = output(tmp_path / "cand", [("q0", 10, 0.6)])
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--json", "--output-format", "markdown")
    assert result.returncode == 2 and "--json is --output-format json" in result.stderr


# --- the CI example ---------------------------------------------------------------------------


def _workflow_steps(env_overrides: dict[str, str] | None = None) -> tuple[dict[str, str], list[tuple[str, str]]]:
    """The gate job's environment and its `run:` steps as (name, script), as GitHub Actions runs
    them; the install step is left out (this environment has ndcg-pipeline installed, as `make dev`
    installs it) and so are the `uses:` steps (checkout, setup-python, upload-artifact)."""
    yaml = pytest.importorskip("yaml", reason="PyYAML reads the workflow file")
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert workflow["defaults"]["run"]["shell"] == "bash"
    [job] = workflow["jobs"].values()
    env = {**workflow.get("env", {}), **job.get("env", {}), **(env_overrides or {})}
    steps = [(step["name"], step["run"]) for step in job["steps"] if "run" in step and step.get("id") != "install"]
    assert [name for name, _ in steps] == ["Evaluate both runs", "Compare, summarise and gate"]
    return env, steps


def _run_workflow(tmp_path: Path, env_overrides: dict[str, str] | None = None) -> tuple[list[int], str]:
    env, steps = _workflow_steps(env_overrides)
    shutil.copytree(ROOT / "data", tmp_path / "data")
    summary = tmp_path / "summary.md"
    summary.write_text("")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    environment = {**os.environ, **env, "GITHUB_STEP_SUMMARY": str(summary), "PATH": path}
    codes = []
    for number, (_, script) in enumerate(steps):
        script_file = tmp_path / f"step{number}.sh"
        script_file.write_text(script)
        # GitHub Actions' `shell: bash` is `bash --noprofile --norc -eo pipefail {0}`
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script_file)],
            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        codes.append(done.returncode)
        if done.returncode not in (0, GATE_FAILED):
            raise AssertionError(f"step {number}: exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return codes, summary.read_text(encoding="utf-8")


@pytest.mark.timeout(600)
def test_the_ci_example_gates_and_writes_the_summary(tmp_path: Path) -> None:
    # the sample's B (the candidate) is better than A: the gate passes, the summary holds the table
    codes, summary = _run_workflow(tmp_path / "passes")
    assert codes == [0, 0], summary
    assert summary.startswith("### ndcg compare: NDCG@k, candidate candidate against baseline baseline\n")
    assert "**Regression gate: passed**" in summary and "| baseline | candidate | k | queries |" in summary
    assert (tmp_path / "passes/out/comparison/comparison.parquet").exists()
    # the other way round the candidate got worse: the step fails (exit 6), the summary says why
    swapped = {"BASELINE_RUN": "data/run_b.parquet", "CANDIDATE_RUN": "data/run.parquet"}
    codes, summary = _run_workflow(tmp_path / "fails", swapped)
    assert codes == [0, GATE_FAILED], summary
    assert "**Regression gate: FAILED** (exit 6)" in summary and "#### Most regressed queries" in summary
