"""The report's first lines are the verdict of each comparison in words: the candidate's
difference over all queries at the report's cutoff, its interval and adjusted p-value, whether
it is significant, and the gate's verdict when one was recorded."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl

from tests.helpers import run_cli


def test_the_verdict_opens_the_page(tmp_path: Path) -> None:
    for name, run in (("a", "data/run.parquet"), ("b", "data/run_b.parquet")):
        done = run_cli(
            "evaluate", "--run", run, "--qrels", "data/qrels.parquet", "--k", "5,10", "--out", tmp_path / name
        )
        assert done.returncode == 0, done.stderr
    compared = run_cli(
        "compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--out", tmp_path / "cmp",
        "--fail-if-worse", "0.01",
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    page = tmp_path / "report.html"
    done = run_cli("report", tmp_path / "a", tmp_path / "b", tmp_path / "cmp", "--html", page, "--k", "10")
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    body = html[html.index("<body>") :]
    # the verdict comes first, before the cutoff line, the inputs and every section
    assert body.index('id="verdict"') < body.index('id="default-cutoff"') < body.index("<section")
    sentence = re.search(r"<li>(b vs a: NDCG@10 .*?)</li>", body)
    assert sentence, body[:2000]
    # the difference of the means, from the evaluations' own per-query files
    means = [pl.read_parquet(tmp_path / n / "per_query.parquet").filter(pl.col("k") == 10)["ndcg"].mean() for n in "ab"]
    difference = float(re.search(r"NDCG@10 ([+-]\d\.\d{4})", sentence.group(1)).group(1))
    assert abs(difference - (means[1] - means[0])) <= 5e-5
    p = float(re.search(r"p = ([0-9.e+-]+) ", sentence.group(1)).group(1))
    assert sentence.group(1).endswith("not significant at alpha 0.05" if p >= 0.05 else ": significant at alpha 0.05")
    assert "<li>Regression gate (--fail-if-worse 0.01, alpha 0.05): passed</li>" in body


def test_no_comparison_no_verdict(tmp_path: Path) -> None:
    done = run_cli("evaluate", "--run", "data/run.parquet", "--qrels", "data/qrels.parquet", "--out", tmp_path / "a")
    assert done.returncode == 0, done.stderr
    done = run_cli("report", tmp_path / "a", "--html", tmp_path / "r.html")
    assert done.returncode == 0, done.stderr
    assert 'id="verdict"' not in (tmp_path / "r.html").read_text(encoding="utf-8")
