"""The companion measures against trec_eval's own test outputs (tests/data/trec_eval/full/,
the complete `make quicktest` files): every ``P_k``, ``recall_k``, ``map``, ``map_cut_k``,
``recip_rank`` and ``success_k`` line of ``out.test.aq``, ``.aqc`` (``-c``), ``.aqcM``
(``-c -M100``) and ``.aql`` (``-l2``), per query and ``all``, through the CLI's
``--output-format trec`` on Polars and DuckDB, and on Spark in one spark-marked test.
trec_eval prints 4 decimals, so values are compared within 5e-5."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from tests.helpers import CONFORMANCE

# Spark's run of the same lines reads the TREC files converted to Parquet (its own test below)
local_engines = pytest.mark.local_engines("trec_eval's TREC files through the command line")

# every cutoff trec_eval's all_trec prints for these measures (success: 1, 5, 10)
CUTOFFS = "1,5,10,15,20,30,100,200,500,1000"
MEASURES = "ndcg,P,recall,map,recip_rank,success"
COMPANION_LINE = re.compile(r"^(P_\d+|recall_\d+|map|map_cut_\d+|recip_rank|success_\d+)$")
ROUNDING = 5e-5 + 1e-12

# name: (trec_eval's output, run, qrels, our flags for trec_eval's)
FILES = {
    "aq": ("out.test.aq", "results.test", "qrels.test", ()),
    "aqc": ("out.test.aqc", "results.trunc", "qrels.test", ("--all-queries",)),
    "aqcM": ("out.test.aqcM", "results.trunc", "qrels.test", ("--all-queries", "--max-results", "100")),
    "aql": ("out.test.aql", "results.test", "qrels.rel_level", ("--relevance-threshold", "2")),
}


def read_lines(text: str) -> dict[tuple[str, str], float]:
    """``{(measure, query): value}`` of the companion measures' lines of trec_eval's format."""
    found = {}
    for line in text.splitlines():
        measure, query, value = line.split()
        if COMPANION_LINE.match(measure):
            found[(measure, query)] = float(value)
    return found


def assert_matches_trec_eval(actual: dict, expected: dict) -> None:
    families = {re.sub(r"_\d+$", "", measure) for measure, _ in expected}
    assert families == {"P", "recall", "map", "map_cut", "recip_rank", "success"}, families
    missing = sorted(set(expected) - set(actual))
    assert not missing, f"lines trec_eval prints that we do not: {missing}"
    wrong = {key: (actual[key], value) for key, value in expected.items() if abs(actual[key] - value) > ROUNDING}
    assert not wrong, f"(ours, trec_eval's): {wrong}"


@pytest.mark.parametrize("name", list(FILES))
@local_engines
def test_companion_lines_match_trec_eval(capsys: pytest.CaptureFixture[str], engine: str, name: str) -> None:
    output, run, qrels, flags = FILES[name]
    argv = ["evaluate", "--output-format", "trec", "--per-query", "--engine", engine]
    argv += ["--run", str(CONFORMANCE / run), "--qrels", str(CONFORMANCE / qrels), "--k", CUTOFFS]
    assert main([*argv, "--measures", MEASURES, *flags]) == 0
    actual = read_lines(capsys.readouterr().out)
    expected = read_lines((CONFORMANCE / "full" / output).read_text())
    # P, recall and map_cut at 9 cutoffs, map, recip_rank, success at 3: three queries and `all`
    assert len(expected) == 4 * (9 + 9 + 1 + 9 + 1 + 3)
    assert_matches_trec_eval(actual, expected)


def test_ir_measures_names_select_the_same_lines(capsys: pytest.CaptureFixture[str]) -> None:
    # the same measures named as ir_measures names them; their cutoffs are added to --k
    argv = ["evaluate", "--output-format", "trec", "--per-query", "--k", "15,20,30,100,200,500,1000"]
    argv += ["--run", str(CONFORMANCE / "results.test"), "--qrels", str(CONFORMANCE / "qrels.test")]
    measures = "nDCG@5,P@5,P@10,R@5,R@10,AP,AP@5,AP@10,RR,Success@1,Success@5,Success@10"
    assert main([*argv, "--measures", measures]) == 0
    expected = read_lines((CONFORMANCE / "full" / "out.test.aq").read_text())
    assert_matches_trec_eval(read_lines(capsys.readouterr().out), expected)


def _trec_frame(path: Path, names: tuple[str, str, str], columns: tuple[int, int, int]) -> pl.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pl.DataFrame(
        {name: [row[column] for row in rows] for name, column in zip(names, columns, strict=True)}
    ).with_columns(pl.col(names[2]).cast(pl.Float64))


@pytest.mark.spark
@pytest.mark.timeout(600)
@pytest.mark.parametrize("name", ["aqcM", "aql"])
def test_companion_lines_match_trec_eval_on_spark(name: str, local_spark: object) -> None:
    from pipeline.api import make_evaluation
    from pipeline.engines import spark as spark_engine
    from pipeline.io.format import trec_lines

    output, run, qrels, flags = FILES[name]
    options = {"all_queries": "--all-queries" in flags, "relevance_threshold": 2 if name == "aql" else None}
    evaluation = make_evaluation(k=CUTOFFS, measures=MEASURES, max_results=100 if name == "aqcM" else None, **options)
    run_frame = _trec_frame(CONFORMANCE / run, ("query_id", "doc_id", "score"), (0, 2, 4))
    qrels_frame = _trec_frame(CONFORMANCE / qrels, ("query_id", "doc_id", "relevance"), (0, 2, 3))
    spark = local_spark
    table = spark_engine.per_query(
        spark.createDataFrame(run_frame.to_arrow()),  # type: ignore[attr-defined]
        spark.createDataFrame(qrels_frame.to_arrow()),  # type: ignore[attr-defined]
        evaluation,
    )
    per_query = pl.from_arrow(table.toArrow())
    assert isinstance(per_query, pl.DataFrame)
    actual = read_lines(trec_lines(per_query, per_query_lines=True))
    expected = read_lines((CONFORMANCE / "full" / output).read_text())
    assert_matches_trec_eval(actual, expected)
