"""`ndcg report` over partitioned evaluation outputs: one system per partition (named
`model_a/dt=...`, or by --names), the trend of NDCG@k by partition value per system and group,
regression gate failures marked, and the default cutoff (the one most tables have, 10 among
equals) stated at the top."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import run_cli

pytest.importorskip("matplotlib")
pytest.importorskip("jinja2")


def partitioned(root: Path, days: dict[str, list[float]], ks: tuple[int, ...] = (5, 10)) -> Path:
    """An evaluation output with one folder per day; query q<i> (locale de for even i, fr for odd)
    scores values[i] at every cutoff."""
    for day, values in days.items():
        folder = root / f"dt={day}"
        folder.mkdir(parents=True)
        rows = [(day, f"q{i}", "de" if i % 2 == 0 else "fr", k, v) for k in ks for i, v in enumerate(values)]
        table = pl.DataFrame(
            rows,
            schema={"dt": pl.String, "query_id": pl.String, "locale": pl.String, "k": pl.Int64, "ndcg": pl.Float64},
            orient="row",
        )
        table.write_parquet(folder / "per_query.parquet")
        summary = table.group_by("dt", "k").agg(pl.len().alias("queries"), pl.col("ndcg").mean()).sort("k")
        summary.write_parquet(folder / "summary.parquet")
    return root


def trend_rows(page: str) -> list[tuple[str, str, str, float]]:
    """(system, group, partition, mean NDCG rounded to 1e-9) of each row of the trend table."""
    table = page.split('id="trend-table"', 1)[1].split("</table>", 1)[0]
    pattern = r'<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td>.*?data-column="ndcg" data-value="([^"]+)"'
    return [(s, g, p, round(float(v), 9)) for s, g, p, v in re.findall(pattern, table)]


def test_trend_by_day_per_system_and_group(tmp_path: Path) -> None:
    # model_a: day 20 overall 0.5, day 21 overall 0.7; model_b: day 20 overall 0.6, day 21 de 0.2 / fr 0.8
    a = partitioned(tmp_path / "model_a", {"2026-11-20": [0.5] * 4, "2026-11-21": [0.7] * 4})
    b = partitioned(tmp_path / "model_b", {"2026-11-20": [0.6] * 4, "2026-11-21": [0.2, 0.8, 0.2, 0.8]})
    html, png = tmp_path / "r.html", tmp_path / "figs"
    result = run_cli("report", a, b, "--html", html, "--png", png)
    assert result.returncode == 0, result.stderr
    page = html.read_text()
    assert "Cutoff k = <strong>10</strong>" in page and "(4 of 4; 10 preferred among equals)" in page
    assert "model_a/dt=2026-11-20" in page and "model_b/dt=2026-11-21" in page
    assert (png / "trend.png").exists() and 'id="figure-trend"' in page
    rows = trend_rows(page)
    assert ("model_a", "overall", "2026-11-21", 0.7) in rows
    assert ("model_b", "overall", "2026-11-21", 0.5) in rows
    assert ("model_b", "locale=de", "2026-11-21", 0.2) in rows and (
        "model_b",
        "locale=fr",
        "2026-11-21",
        0.8,
    ) in rows
    assert "drawn on a time axis" in page
    # --names names the outputs (each partition: NAME/key=value)
    named = run_cli("report", a, b, "--html", tmp_path / "n.html", "--names", "prod,cand")
    assert named.returncode == 0, named.stderr
    assert "cand/dt=2026-11-21" in (tmp_path / "n.html").read_text()
    wrong = run_cli("report", a, b, "--html", tmp_path / "w.html", "--names", "prod")
    assert wrong.returncode == 2 and "--names names the 2 evaluation output(s)" in wrong.stderr


def test_gate_failures_are_marked(tmp_path: Path) -> None:
    # day 21: every one of 10 queries 0.8 -> 0.6 (p = 2/1024): with --gate-partitions that day fails
    a = partitioned(tmp_path / "prod", {"2026-11-20": [0.8] * 10, "2026-11-21": [0.8] * 10}, ks=(10,))
    b = partitioned(tmp_path / "cand", {"2026-11-20": [0.8] * 10, "2026-11-21": [0.6] * 10}, ks=(10,))
    cmp = tmp_path / "cmp"
    compared = run_cli(
        "compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", "--gate-partitions", "--out", cmp
    )
    assert compared.returncode == 6, compared.stderr
    html = tmp_path / "r.html"
    result = run_cli("report", a, b, cmp, "--html", html)
    assert result.returncode == 0, result.stderr
    page = html.read_text()
    failures = page.split('id="gate-failures"', 1)[1].split("</ul>", 1)[0]
    assert "cand vs prod at k=10, group overall, partition dt=2026-11-21" in failures
    assert "red crosses: regression gate failed" in page


def test_default_cutoff_is_the_most_shared(tmp_path: Path) -> None:
    # cutoffs 5 and 20 in both outputs, 10 in one: 5 and 20 are shared by most, the smaller is taken
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5] * 4}, ks=(5, 10, 20))
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.5] * 4}, ks=(5, 20))
    result = run_cli("report", a, b, "--html", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    assert "Cutoff k = <strong>5</strong>" in (tmp_path / "r.html").read_text()


def test_group_rows_in_the_summary_table(tmp_path: Path) -> None:
    # a grouped evaluation: its summary has the overall rows, then de and fr
    out = tmp_path / "grouped"
    folder = partitioned(tmp_path / "tmp", {"2026-11-20": [0.2, 0.8, 0.2, 0.8]}, ks=(10,)) / "dt=2026-11-20"
    table = pl.read_parquet(folder / "per_query.parquet").drop("dt")
    out.mkdir()
    table.write_parquet(out / "per_query.parquet")
    overall = table.group_by("k").agg(pl.len().alias("queries"), pl.col("ndcg").mean())
    overall = overall.select(pl.lit(None, dtype=pl.String).alias("locale"), pl.lit(True).alias("overall"), pl.all())
    by_group = table.group_by("locale", "k").agg(pl.len().alias("queries"), pl.col("ndcg").mean()).sort("locale")
    by_group = by_group.select("locale", pl.lit(False).alias("overall"), "k", "queries", "ndcg")
    pl.concat([by_group, overall]).write_parquet(out / "summary.parquet")
    result = run_cli("report", out, "--html", tmp_path / "r.html")
    assert result.returncode == 0, result.stderr
    page = (tmp_path / "r.html").read_text()
    summary = page.split('id="summary-table"', 1)[1].split("</table>", 1)[0]
    assert "<th>locale</th>" in summary
    groups = re.findall(
        r'<td>grouped</td><td>([^<]*)</td><td>10</td>.*?data-column="ndcg" data-value="([^"]+)"', summary
    )
    assert [(g, round(float(v), 9)) for g, v in groups] == [("overall", 0.5), ("de", 0.2), ("fr", 0.8)]


def test_group_columns_in_the_differences_table(tmp_path: Path) -> None:
    a = partitioned(tmp_path / "a", {"2026-11-20": [0.5, 0.6, 0.7, 0.8]}, ks=(10,)) / "dt=2026-11-20"
    b = partitioned(tmp_path / "b", {"2026-11-20": [0.4, 0.9, 0.7, 0.1]}, ks=(10,)) / "dt=2026-11-20"
    cmp = tmp_path / "cmp"
    flags = ("--permutations", "100", "--bootstrap", "100")
    compared = run_cli("compare", "--baseline", a, "--candidate", b, "--group-by", "locale", "--out", cmp, *flags)
    assert compared.returncode == 0, compared.stderr
    assert run_cli("report", cmp, "--html", tmp_path / "r.html").returncode == 0
    page = (tmp_path / "r.html").read_text()
    table = page.split('class="differences-table"', 1)[1].split("</table>", 1)[0]
    assert "<th>query</th><th>locale</th>" in table and "<td>q3</td><td>fr</td>" in table
