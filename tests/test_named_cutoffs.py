"""Measures named with their cutoffs: ``--measures nDCG@10,P@5,R@100,AP,RR`` without ``--k``
evaluates only the cutoffs named (5, 10, 100 and the whole ranking) and prints, as trec lines,
exactly the five measures named; with ``--k`` every measure is printed at every cutoff, as before.

The expected lines are written out; their values are trec_eval's own (``trec_eval -m all_trec``
on its test collection, tests/data/trec_eval/full/out.test.a and .aq).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess

import polars as pl
import pytest

from tests.helpers import CONFORMANCE, ENGINES, ROOT, run_cli

COLLECTION = ("--run", CONFORMANCE / "results.test", "--qrels", CONFORMANCE / "qrels.test")
NAMED = ("--measures", "nDCG@10,P@5,R@100,AP,RR")
# the five measures asked for, under trec_eval's names, nothing else
FIVE = {"ndcg_cut_10", "P_5", "recall_100", "map", "recip_rank"}
QUERIES = ("301", "302", "303")
# trec_eval's printed precision: 4 decimals
PRINTED = 5e-5 + 1e-12


def _trec_eval(name: str) -> dict[tuple[str, str], float]:
    """trec_eval's lines of one of its outputs, as (measure, query) -> value."""
    lines = {}
    for line in (CONFORMANCE / "full" / name).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        if measure not in ("runid", "relstring"):  # the lines that are not numbers
            lines[(measure, query)] = float(value)
    return lines


def _lines(stdout: str) -> dict[tuple[str, str], float]:
    found = {}
    for line in stdout.splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        assert (measure, query) not in found, f"printed twice: {line}"
        found[(measure, query)] = float(value)
    return found


def _assert_trec_evals(lines: dict[tuple[str, str], float], expected_names: set[str], queries: tuple[str, ...]) -> None:
    expected_keys = {(measure, query) for measure in expected_names for query in queries}
    assert set(lines) == expected_keys
    trec_eval = _trec_eval("out.test.aq" if queries != ("all",) else "out.test.a")
    wrong = {key: (value, trec_eval[key]) for key, value in lines.items() if abs(value - trec_eval[key]) > PRINTED}
    assert not wrong, f"(ours, trec_eval's): {wrong}"


@pytest.mark.parametrize("engine", ENGINES)
def test_trec_lines_are_exactly_the_measures_named(engine: str) -> None:
    done = run_cli("evaluate", *COLLECTION, *NAMED, "--output-format", "trec", "--engine", engine)
    assert done.returncode == 0, done.stderr
    _assert_trec_evals(_lines(done.stdout), FIVE, ("all",))


@pytest.mark.parametrize("engine", ENGINES)
def test_per_query_trec_lines_are_the_measures_named_for_each_query(engine: str) -> None:
    done = run_cli("evaluate", *COLLECTION, *NAMED, "--output-format", "trec", "--per-query", "--engine", engine)
    assert done.returncode == 0, done.stderr
    lines = _lines(done.stdout)
    _assert_trec_evals({key: v for key, v in lines.items() if key[1] != "all"}, FIVE, QUERIES)
    _assert_trec_evals({key: v for key, v in lines.items() if key[1] == "all"}, FIVE, ("all",))


# the five measures as named, each with trec_eval's name of it
AS_NAMED = {"nDCG@10": "ndcg_cut_10", "P@5": "P_5", "R@100": "recall_100", "AP": "map", "RR": "recip_rank"}


def test_the_table_prints_the_measures_named_in_their_order() -> None:
    """``--measures nDCG@10,P@5,R@100,AP,RR``: a line per measure, in the order named, under the
    name given (any case: ``ndcg@10`` is printed ``nDCG@10``), each value trec_eval's; and
    ``--per-query`` a line per query and measure above them (it was ignored in the table)."""
    table = run_cli("evaluate", *COLLECTION, "--measures", "ndcg@10,P@5,R@100,ap,RR", "--per-query")
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert rows[0] == "# conventions: trec_eval defaults except k=5,10,100, measures=ndcg,P,recall,map,recip_rank"
    per_query_header = rows.index("query_id  measure   value")
    summary_header = next(i for i, row in enumerate(rows) if row.split() == ["measure", "queries", "value"])
    per_query = [row.split() for row in rows[per_query_header + 1 : summary_header] if row]
    summary = [row.split() for row in rows[summary_header + 1 :]]
    assert [row[0] for row in summary] == list(AS_NAMED)
    trec_eval, by_query = _trec_eval("out.test.a"), _trec_eval("out.test.aq")
    for name, queries, value in summary:
        assert queries == "3"
        assert float(value) == pytest.approx(trec_eval[(AS_NAMED[name], "all")], abs=PRINTED)
    assert [(query, name) for query, name, _ in per_query] == [(q, name) for q in QUERIES for name in AS_NAMED]
    for query, name, value in per_query:
        assert float(value) == pytest.approx(by_query[(AS_NAMED[name], query)], abs=PRINTED)


def test_table_json_and_outputs_hold_the_cutoffs_named(tmp_path: Path) -> None:
    """The rows are the cutoffs named and the whole ranking, in every format; the columns the
    families named (with ndcg's), each value trec_eval's where trec_eval has a name for it.
    JSON adds the values as named, in order (``measures``)."""

    done = run_cli("evaluate", *COLLECTION, *NAMED, "--json", "--out", tmp_path / "out")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["conventions"]["cutoffs"] == [5, 10, 100]
    assert [row["measure"] for row in payload["measures"]] == list(AS_NAMED)
    for row in payload["measures"]:
        assert row["value"] == pytest.approx(_trec_eval("out.test.a")[(AS_NAMED[row["measure"]], "all")], abs=PRINTED)
    summary = {row["k"]: row for row in payload["summary"]}
    assert list(summary) == [None, 5, 10, 100]
    trec_eval = _trec_eval("out.test.a")
    assert summary[10]["ndcg"] == pytest.approx(trec_eval[("ndcg_cut_10", "all")], abs=PRINTED)
    assert summary[5]["P"] == pytest.approx(trec_eval[("P_5", "all")], abs=PRINTED)
    assert summary[100]["recall"] == pytest.approx(trec_eval[("recall_100", "all")], abs=PRINTED)
    assert summary[None]["map"] == pytest.approx(trec_eval[("map", "all")], abs=PRINTED)
    assert summary[None]["recip_rank"] == pytest.approx(trec_eval[("recip_rank", "all")], abs=PRINTED)

    per_query = pl.read_parquet(tmp_path / "out" / "per_query.parquet")
    written = pl.read_parquet(tmp_path / "out" / "summary.parquet")
    assert sorted(per_query["k"].unique().to_list(), key=lambda k: -1 if k is None else k) == [None, 5, 10, 100]
    assert written["k"].to_list() == [None, 5, 10, 100]
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["options"]["cutoffs"] == [5, 10, 100]


@pytest.mark.parametrize(
    ("measures", "k", "expected"),
    [
        # --k given: every measure at every cutoff, the cutoffs named added (as before)
        (
            "nDCG@10,P@5",
            "20",
            {"ndcg", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_20", "P_5", "P_10", "P_20"},
        ),
        # a family named without a cutoff keeps the default cutoffs, as trec_eval's -m P prints P
        # at its cutoffs; beside it, the measure named with one
        ("P,nDCG@10", None, {"P_5", "P_10", "P_20", "ndcg_cut_10"}),
        # no name carries a cutoff: every measure at the default cutoffs, as before
        (
            "P,map",
            None,
            {"ndcg", "ndcg_cut_5", "ndcg_cut_10", "ndcg_cut_20", "P_5", "P_10", "P_20"}
            | {"map", "map_cut_5", "map_cut_10", "map_cut_20"},
        ),
        # trec_eval's names of one measure over the whole ranking, beside a cutoff
        ("ndcg,map,P_5", None, {"ndcg", "map", "P_5"}),
    ],
)
def test_named_cutoffs_with_k_and_with_families(measures: str, k: str | None, expected: set[str]) -> None:
    flags = ("--measures", measures, *(("--k", k) if k else ()))
    done = run_cli("evaluate", *COLLECTION, *flags, "--output-format", "trec", "--engine", "duckdb")
    assert done.returncode == 0, done.stderr
    _assert_trec_evals(_lines(done.stdout), expected, ("all",))


def test_compare_names_the_cutoffs_an_output_has(tmp_path: Path) -> None:
    """An output holds only the cutoffs named: a gate or a comparison at another k is refused,
    naming the ones there are."""
    for name in ("a", "b"):
        done = run_cli("evaluate", *COLLECTION, "--measures", "nDCG@10", "--out", tmp_path / name)
        assert done.returncode == 0, done.stderr
    outputs = ("--baseline", tmp_path / "a", "--candidate", tmp_path / "b")
    gate = run_cli("compare", *outputs, "--fail-if-worse", "0.01", "--gate-k", "20")
    assert gate.returncode == 2
    assert "--gate-k 20 is not a compared cutoff (compared: 10, all)" in gate.stderr
    compared = run_cli("compare", *outputs, "--k", "5")
    assert compared.returncode == 2
    assert "a has no rows for k=5 (it has k=10, all)" in compared.stderr


def _as_parquet(text: Path, columns: list[str], kept: dict[str, pl.DataType], target: Path) -> Path:
    """A TREC file's whitespace-separated fields as Parquet (Spark reads Parquet only)."""
    fields = [line.split() for line in text.read_text().splitlines() if line.strip()]
    frame = pl.DataFrame(fields, schema=columns, orient="row")
    frame.select(pl.col(name).cast(dtype) for name, dtype in kept.items()).write_parquet(target)
    return target


@pytest.mark.spark
def test_spark_prints_the_measures_named(tmp_path: Path, spark_cli: Callable[..., CompletedProcess[str]]) -> None:
    run = _as_parquet(
        CONFORMANCE / "results.test",
        ["query_id", "q0", "doc_id", "rank", "score", "tag"],
        {"query_id": pl.String, "doc_id": pl.String, "score": pl.Float64},
        tmp_path / "run.parquet",
    )
    qrels = _as_parquet(
        CONFORMANCE / "qrels.test",
        ["query_id", "iteration", "doc_id", "relevance"],
        {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64},
        tmp_path / "qrels.parquet",
    )
    done = spark_cli("evaluate", "--run", run, "--qrels", qrels, *NAMED, "--output-format", "trec", "--engine", "spark")
    assert done.returncode == 0, done.stderr
    _assert_trec_evals(_lines(done.stdout), FIVE, ("all",))


def test_grouped_named_rows_are_the_summary_s_cells() -> None:
    """With --group-by, a row per group (and ``overall``) and measure named, each the cell of the
    summary's grid at that group, cutoff and column (``P`` named without a cutoff: at each)."""
    sample = ("--run", ROOT / "data/run.parquet", "--qrels", ROOT / "data/qrels.parquet", "--group-by", "locale")
    named = ("--measures", "nDCG@10,P,AP")
    table = run_cli("evaluate", *sample, *named, "--log-level", "error")
    grid = run_cli("evaluate", *sample, *named, "--json", "--log-level", "error")
    assert table.returncode == 0 and grid.returncode == 0, table.stderr + grid.stderr
    summary = json.loads(grid.stdout)["summary"]
    asked = [("nDCG@10", "ndcg", 10), ("P_5", "P", 5), ("P_10", "P", 10), ("P_20", "P", 20), ("AP", "map", None)]
    cells = {
        ("overall" if row["overall"] else row["locale"], label): (row["queries"], row[column])
        for row in summary
        for label, column, k in asked
        if row["k"] == k
    }
    lines = [line.split() for line in table.stdout.splitlines()[2:]]
    assert lines[0] == ["locale", "measure", "queries", "value"]
    assert {(group, label) for group, label, _, _ in lines[1:]} == set(cells)
    assert len(lines) - 1 == len(cells)
    for group, label, queries, value in lines[1:]:
        assert int(queries) == cells[group, label][0]
        assert float(value) == pytest.approx(cells[group, label][1], abs=5e-5)
