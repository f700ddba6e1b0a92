"""Evaluation and comparison outputs built for the compare and report tests: the sample run
perturbed into a second system, two outputs and their comparison, and the report page read back
as HTML with its numbers checked against the outputs."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, evaluate
from pipeline.compare import Options, compare_systems
from pipeline.io.write import write_tables
from tests.helpers import ROOT

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def perturbed_run(path: Path) -> Path:
    """The sample run with scores shifted by a deterministic function of the document id."""
    pl.read_parquet(RUN).with_columns(
        pl.col("score") + pl.col("doc_id").str.slice(-3).cast(pl.Int64) % 7 * 0.8
    ).write_parquet(path)
    return path


def make_outputs(root: Path) -> dict[str, Path]:
    """Two evaluation outputs whose per-query tables carry a group column (locale) and tie
    bounds (ndcg_min <= ndcg <= ndcg_max, made up here: the report only shows them), one with
    a manifest and one without, and a comparison of the two by locale."""
    locales = pl.read_parquet(RUN).select("query_id", "locale").unique()
    evaluation = Evaluation(cutoffs=(5, 10))
    paths = {}
    tables = {}
    for name, run in (("model_a", RUN), ("model_b", perturbed_run(root / "run_b.parquet"))):
        result = evaluate(run, QRELS, evaluation=evaluation)
        per_query = result.per_query.join(locales, on="query_id").with_columns(
            (pl.col("ndcg") * 0.9).alias("ndcg_min"), pl.min_horizontal(pl.col("ndcg") * 1.1, 1.0).alias("ndcg_max")
        )
        write_tables(root / name, {"per_query": per_query, "summary": result.summary})
        paths[name] = root / name
        tables[name] = per_query
    (root / "model_a" / "manifest.json").write_text(json.dumps({"conventions": evaluation.describe()}))
    options = Options(group_by=("locale",), permutations=500, bootstrap_samples=500)
    comparison = compare_systems(tables, options)
    write_tables(
        root / "cmp",
        {"comparison": comparison.comparison, "deltas": comparison.deltas},
        manifest={"systems": list(tables), "options": options.describe()},
    )
    paths["cmp"] = root / "cmp"
    return paths


class Page(HTMLParser):
    """Sections, images, links and the table cells of a report page."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.images: list[str] = []
        self.external: list[str] = []
        self.scripts = 0
        self.tables: dict[str, list[list[dict[str, str]]]] = {}
        self._table: str | None = None
        self._cell: dict[str, str] | None = None
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {key: value or "" for key, value in attrs}
        if tag == "section":
            self.sections.append(attributes["id"])
        elif tag == "img":
            self.images.append(attributes["src"])
        elif tag == "script":
            self.scripts += 1
        elif tag == "table":
            self._table = attributes.get("id") or attributes.get("class", "")
            self.tables.setdefault(self._table, [])
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = {"column": attributes.get("data-column", ""), "value": attributes.get("data-value", "")}
            self._cell["text"] = ""
            self.tables[self._table][-1].append(self._cell)
        for key in ("src", "href"):
            if re.match(r"(https?:)?//", attributes.get(key, "")):
                self.external.append(attributes[key])

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = None
        elif tag in ("td", "th"):
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data


def check_numbers(page: Page, outputs: dict[str, Path]) -> None:
    """The numbers the page shows are those of the Parquet outputs, to every digit kept and
    as rounded for display."""
    summary_rows = [row for row in page.tables["summary-table"] if row and row[0]["column"] == ""][1:]
    expected = []
    for name in ("model_a", "model_b"):
        for row in pl.read_parquet(outputs[name] / "summary.parquet").iter_rows(named=True):
            expected.append((name, row))
    assert len(summary_rows) == len(expected)
    for cells, (name, row) in zip(summary_rows, expected, strict=True):
        assert cells[0]["text"] == name
        assert cells[1]["text"] == ("all" if row["k"] is None else str(row["k"]))
        for cell in cells[2:]:
            want = row[cell["column"]]
            assert float(cell["value"]) == pytest.approx(want, abs=1e-15)
            if isinstance(want, float):
                assert cell["text"] == f"{want:.4f}"
    comparison = pl.read_parquet(outputs["cmp"] / "comparison.parquet")
    for table in ("comparison-table-0", "comparison-tests-0"):  # means and tests, one row per comparison row
        shown = page.tables[table][1:]
        assert len(shown) == comparison.height
        for cells, row in zip(shown, comparison.iter_rows(named=True), strict=True):
            for cell in cells:
                if cell["value"] and cell["column"] not in ("", "correction"):
                    assert float(cell["value"]) == pytest.approx(row[cell["column"]], abs=1e-15), cell
