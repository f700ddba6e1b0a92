"""docs/conventions.md tells the truth: every number of its worked example is what our CLI prints
for the command shown (both engines), and what each peer tool installed by ``make test``
computes on the example's files, run here (never copied from the document)."""

from __future__ import annotations

import csv
import json
import re
import shlex
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.cli import main
from tests.helpers import ENGINES, ROOT
from tests.helpers.peers import lightgbm_ndcg, spark_mllib_mean, spark_ndcg_per_query, xgboost_ndcg

DOC = ROOT / "docs" / "conventions.md"
RUN, QRELS = ROOT / "docs" / "conventions" / "run.csv", ROOT / "docs" / "conventions" / "qrels.csv"
K = 3
QUERIES = ("q1", "q2", "q3", "q4")
PRINTED = 0.5e-4 + 1e-12  # the document prints 4 decimals
RBP_HEADING = "## Why does my RBP differ from trec_eval's?"
PEER_TOLERANCE = 1e-9

# Parsing the document


def table_rows(heading: str) -> list[list[str]]:
    """The body rows of the first Markdown table after ``heading``, as lists of cells."""
    text = DOC.read_text(encoding="utf-8")
    start = text.index(heading)
    rows, in_table = [], False
    for line in text[start:].splitlines()[1:]:
        if line.startswith("|"):
            in_table = True
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
                rows.append(cells)
        elif in_table:
            break
    return rows[1:]  # without the header


def number(cell: str) -> float | None:
    """A printed value: 0.1234 (bold allowed), or None for a query not evaluated (—)."""
    cell = cell.strip("* ")
    return None if cell in ("—", "-", "") else float(cell)


def flags_of(cell: str) -> list[str]:
    """The flags of a command cell such as ``--profile trec_eval --unjudged drop``."""
    match = re.fullmatch(r"`([^`]+)`", cell)
    assert match, f"not a command: {cell!r}"
    return shlex.split(match.group(1))


PROFILE_ROWS = table_rows("### Every profile on the example")
TOOL_ROWS = table_rows("### What the tools themselves print")


def test_the_document_shows_every_profile() -> None:
    from pipeline.registry import PROFILES

    shown = {flags_of(row[0])[1] for row in PROFILE_ROWS if flags_of(row[0])[:1] == ["--profile"]}
    assert shown == set(PROFILES)
    assert len(TOOL_ROWS) >= 8


def test_the_command_shown_reads_the_shipped_files() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert "ndcg evaluate --run docs/conventions/run.csv --qrels docs/conventions/qrels.csv --k 3" in text


# Our CLI


def cli_values(flags: list[str], engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[dict, float]:
    """{query: NDCG@3} as written to per_query.parquet, and the mean printed in --json."""
    out = tmp_path / engine / "_".join(flag.strip("-") for flag in flags)
    argv = ["evaluate", "--run", str(RUN), "--qrels", str(QRELS), "--k", str(K), *flags]
    assert main([*argv, "--engine", engine, "--json", "--out", str(out)]) == 0
    printed = json.loads(capsys.readouterr().out)
    (mean,) = [row["ndcg"] for row in printed["summary"] if row["k"] == K]
    # a query --empty-ideal skip leaves out has a row without NDCG, shown as not evaluated (—)
    table = pl.read_parquet(out / "per_query.parquet").filter(pl.col("k") == K, pl.col("ndcg").is_not_null())
    return dict(zip(table["query_id"], table["ndcg"], strict=True)), mean


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("row", PROFILE_ROWS, ids=lambda row: row[0].strip("`"))
def test_profile_numbers_are_what_the_cli_prints(
    row: list[str], engine: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    per_query, mean = cli_values(flags_of(row[0]), engine, tmp_path, capsys)
    documented = dict(zip(QUERIES, map(number, row[1:5]), strict=True))
    assert {query for query, value in documented.items() if value is not None} == set(per_query)
    for query, value in per_query.items():
        assert documented[query] == pytest.approx(value, abs=PRINTED), (query, value)
    assert number(row[5]) == pytest.approx(mean, abs=PRINTED)
    assert int(row[6]) == len(per_query)


# The peer tools, each fed the example the way its users feed it


def example() -> tuple[list[tuple[str, str, float]], dict[str, dict[str, int]]]:
    """Run rows in file order, and the judgments as {query: {doc: label}}."""
    with RUN.open(newline="") as run_file:
        run = [(row["query_id"], row["doc_id"], float(row["score"])) for row in csv.DictReader(run_file)]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    with QRELS.open(newline="") as qrels_file:
        for row in csv.DictReader(qrels_file):
            qrels[row["query_id"]][row["doc_id"]] = int(row["relevance"])
    return run, dict(qrels)


def run_dict(run: list[tuple[str, str, float]]) -> dict[str, dict[str, float]]:
    nested: dict[str, dict[str, float]] = defaultdict(dict)
    for query, doc, score in run:
        nested[query][doc] = score
    return dict(nested)


def row_labels(run: list[tuple[str, str, float]], qrels: dict) -> dict[str, list[tuple[int, float]]]:
    """What the learning-to-rank tools see: the retrieved rows of the judged queries, each
    labelled from the judgments; unjudged rows and negative labels (which they refuse) are 0,
    the gain our conventions give them."""
    rows: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for query, doc, score in run:
        if query in qrels:
            rows[query].append((max(qrels[query].get(doc, 0), 0), score))
    return dict(rows)


PeerResult = tuple[dict[str, float], float]


def pytrec_eval_peer(judged_docs_only: bool) -> Callable[[], PeerResult]:
    def compute() -> PeerResult:
        import pytrec_eval

        run, qrels = example()
        evaluator = pytrec_eval.RelevanceEvaluator(qrels, {f"ndcg_cut.{K}"}, judged_docs_only_flag=judged_docs_only)
        values = {query: v[f"ndcg_cut_{K}"] for query, v in evaluator.evaluate(run_dict(run)).items()}
        mean = pytrec_eval.compute_aggregated_measure(f"ndcg_cut_{K}", list(values.values()))
        return values, mean

    return compute


def ir_measures_peer() -> PeerResult:
    import ir_measures
    from ir_measures import nDCG

    run, qrels = example()
    measure = nDCG @ K
    values = {result.query_id: result.value for result in ir_measures.iter_calc([measure], qrels, run_dict(run))}
    return values, ir_measures.calc_aggregate([measure], qrels, run_dict(run))[measure]


def sklearn_peer() -> PeerResult:
    from sklearn.metrics import ndcg_score

    run, qrels = example()
    values = {
        query: float(ndcg_score([[label for label, _ in rows]], [[score for _, score in rows]], k=K))
        for query, rows in row_labels(run, qrels).items()
    }
    return values, float(np.mean(list(values.values())))  # lists of unequal length: one call per query


def gbdt_peer(score: Callable[[list[int], list[float], list[int]], float]) -> Callable[[], PeerResult]:
    """Per query one group at a time, and the library's own mean over all groups at once."""

    def compute() -> PeerResult:
        run, qrels = example()
        by_query = row_labels(run, qrels)
        values = {
            query: score([label for label, _ in rows], [s for _, s in rows], [len(rows)])
            for query, rows in by_query.items()
        }
        every = [row for query in by_query for row in by_query[query]]
        mean = score([label for label, _ in every], [s for _, s in every], [len(rows) for rows in by_query.values()])
        return values, mean

    return compute


def lightgbm_score(labels: list[int], scores: list[float], groups: list[int]) -> float:
    return lightgbm_ndcg(labels, scores, groups, (K,))[0]


def xgboost_score(metric: str) -> Callable[[list[int], list[float], list[int]], float]:
    return lambda labels, scores, groups: xgboost_ndcg(labels, scores, groups, (metric,))[0]


def spark_peer(spark: object) -> PeerResult:
    """RankingMetrics gets each judged query's documents in score order (ties in file order)
    and its set of relevant documents (label > 0)."""
    run, qrels = example()
    rankings = {}
    for query, rows in run_dict(run).items():
        if query in qrels:
            predicted = sorted(rows, key=lambda doc: -rows[doc])  # stable: file order breaks ties
            rankings[query] = (predicted, [doc for doc, label in qrels[query].items() if label > 0])
    values = {query: value for (query, _), value in spark_ndcg_per_query(spark, rankings, (K,)).items()}
    return values, spark_mllib_mean(spark, rankings, K)


PEERS: dict[str, Callable[[], PeerResult]] = {
    "pytrec_eval": pytrec_eval_peer(judged_docs_only=False),
    "pytrec_eval -J": pytrec_eval_peer(judged_docs_only=True),
    "ir_measures": ir_measures_peer,
    "scikit-learn": sklearn_peer,
    "LightGBM": gbdt_peer(lightgbm_score),
    "XGBoost": gbdt_peer(xgboost_score(f"ndcg@{K}")),
    "XGBoost ndcg@3-": gbdt_peer(xgboost_score(f"ndcg@{K}-")),
}


def tool_name(row: list[str]) -> str:
    return row[0].strip("*` ")


def check_tool_row(row: list[str], result: PeerResult, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    values, mean = result
    documented = dict(zip(QUERIES, map(number, row[2:6]), strict=True))
    assert {query for query, value in documented.items() if value is not None} == set(values)
    for query, value in values.items():
        assert documented[query] == pytest.approx(value, abs=PRINTED), (query, value)
    assert number(row[6]) == pytest.approx(mean, abs=PRINTED)
    # and the command the row names reproduces the tool to its own precision
    ours, ours_mean = cli_values(flags_of(row[7]), "polars", tmp_path, capsys)
    assert set(ours) == set(values)
    for query, value in values.items():
        assert ours[query] == pytest.approx(value, abs=PEER_TOLERANCE), query
    assert ours_mean == pytest.approx(mean, abs=PEER_TOLERANCE)


def test_every_tool_row_is_checked() -> None:
    assert {tool_name(row) for row in TOOL_ROWS} == {*PEERS, "Spark MLlib"}


@pytest.mark.parametrize("row", [row for row in TOOL_ROWS if tool_name(row) in PEERS], ids=tool_name)
def test_tool_numbers_are_what_the_tool_computes(
    row: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    check_tool_row(row, PEERS[tool_name(row)](), tmp_path, capsys)


@pytest.mark.spark
def test_spark_numbers_are_what_spark_computes(
    local_spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (row,) = [row for row in TOOL_ROWS if tool_name(row) == "Spark MLlib"]
    check_tool_row(row, spark_peer(local_spark), tmp_path, capsys)


# the prose quotes ranx's ndcg_burges, which these flags reproduce (see "Tools the tests do not run")
PROSE_ONLY_FLAGS = [["--profile", "ir_measures", "--ties", "input-order", "--gain", "exponential"]]


def test_every_value_quoted_on_the_page_is_one_the_cli_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    printed: list[float] = []
    for flags in [*(flags_of(row[0]) for row in PROFILE_ROWS), *PROSE_ONLY_FLAGS]:
        per_query, mean = cli_values(flags, "polars", tmp_path, capsys)
        printed += [*per_query.values(), mean]
    ndcg_part = DOC.read_text(encoding="utf-8").split(RBP_HEADING)[0]
    quoted = re.findall(r"(?<![\d.])0\.\d{4}(?![\d.])", ndcg_part)
    assert len(quoted) > 50
    for value in quoted:
        assert any(abs(float(value) - known) <= PRINTED for known in printed), value


# The RBP section quotes trec_eval builds (which we do not run) and, in one parenthesis, what our
# command prints; that parenthesis is checked here and its arithmetic in test_trec_eval_measures.


def test_the_rbp_values_quoted_are_what_the_command_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the command names the files from the repository's root
    section = DOC.read_text(encoding="utf-8").split(RBP_HEADING)[1]
    # the first command, of trec_eval's scaled gains (the --rbp-gain paragraph's comes after it)
    command = re.findall(r"^ndcg (evaluate .*rbp\.run.*)$", section, flags=re.MULTILINE)[0]
    assert "--rbp-gain" not in command
    quoted = re.search(r"\(`rbp` q ([\d.]+), r ([\d.]+); `rbp_resid` q ([\d.]+), r ([\d.]+)\)", section)
    assert quoted, "the parenthesis with our printed values moved"
    assert main(shlex.split(command)) == 0
    printed = {
        (measure, query): float(value)
        for measure, query, value in (line.split() for line in capsys.readouterr().out.splitlines())
    }
    keys = [("rbp", "q"), ("rbp", "r"), ("rbp_resid", "q"), ("rbp_resid", "r")]
    expected = dict(zip(keys, quoted.groups(), strict=True))
    for key, value in expected.items():
        assert printed[key] == pytest.approx(float(value), abs=PRINTED), key
