"""Bad input gets a clear error, never a number: one test per error, through the CLI, on both
engines; warnings as data and on stderr; the ``ndcg validate`` report."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, InvalidInput, check, evaluate, per_query
from tests.helpers import CONFORMANCE, ROOT, as_table, assert_tables_close, reference, run_cli

pytestmark = pytest.mark.local_engines("the command line in a subprocess (Spark: tests/test_validation_engines.py)")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def snapshot(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def out(tmp_path: Path) -> Path:
    """An output directory holding the files of an earlier evaluation, which a refused run
    must leave exactly as they were."""
    folder = tmp_path / "out"
    folder.mkdir()
    pl.DataFrame({"k": [10], "ndcg": [0.5]}).write_parquet(folder / "summary.parquet")
    pl.DataFrame({"query_id": ["old"], "ndcg": [0.5]}).write_parquet(folder / "per_query.parquet")
    return folder


def run_rows(**changes: object) -> pl.DataFrame:
    """The sample run with row 3 (q001/d001-003) changed: ``column=value``."""
    run = pl.read_parquet(RUN)
    for column, value in changes.items():
        run = run.with_columns(
            pl.when(pl.int_range(pl.len()) == 3).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
        )
    return run


def qrels_rows(**changes: object) -> pl.DataFrame:
    qrels = pl.read_parquet(QRELS)
    for column, value in changes.items():
        qrels = qrels.with_columns(
            pl.when(pl.int_range(pl.len()) == 3).then(pl.lit(value)).otherwise(pl.col(column)).alias(column)
        )
    return qrels


def write(frame: pl.DataFrame, path: Path) -> Path:
    if path.suffix == ".csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path)
    return path


# name -> (make inputs in tmp_path: (run, qrels, extra flags), exit code, words the message must hold)
Case = tuple[Callable[[Path], tuple[Path, Path, list[str]]], int, list[str]]
SAMPLE_ROW = run_rows().row(3, named=True)
CASES: dict[str, Case] = {
    "misnamed column": (
        lambda d: (write(run_rows().rename({"score": "Score"}), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "missing column", "'score'", "did you mean 'Score'", "--score-col", "columns found"],
    ),
    "missing column": (
        lambda d: (write(run_rows().drop("score"), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "missing column", "'score'", "columns found: 'query_id', 'doc_id'"],
    ),
    "text score in csv": (
        lambda d: (write(run_rows(score="high"), d / "run.csv"), QRELS, []),
        3,
        ["run.csv", "'score'", "'high'", "expected numbers", SAMPLE_ROW["doc_id"]],
    ),
    "numbers stored as text in parquet": (
        lambda d: (write(run_rows().with_columns(pl.col("score").cast(pl.String)), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'score'", "String", "expected numbers"],
    ),
    "float ids": (
        lambda d: (
            write(run_rows().with_columns(pl.col("doc_id").str.len_chars() * 0.5), d / "run.parquet"),
            QRELS,
            [],
        ),
        3,
        ["run.parquet", "'doc_id'", "Float64", "string or integer"],
    ),
    "fractional label": (
        lambda d: (RUN, write(qrels_rows(relevance=0.5), d / "qrels.parquet"), []),
        3,
        ["qrels.parquet", "'relevance'", "fractional", "0.5", "--allow-fractional-labels"],
    ),
    "fractional label in trec qrels": (
        lambda d: (
            CONFORMANCE / "results.test",
            _text(d / "qrels.txt", "301 0 FBIS3-10082 1\n301 0 FBIS3-10169 1.5\n"),
            [],
        ),
        3,
        ["qrels.txt:2", "1.5", "fractional", "--allow-fractional-labels"],
    ),
    "null query id": (
        lambda d: (write(run_rows(query_id=None), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'query_id'", "null", SAMPLE_ROW["doc_id"]],
    ),
    "null doc id": (
        lambda d: (write(run_rows(doc_id=None), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'doc_id'", "null", SAMPLE_ROW["query_id"]],
    ),
    "null score": (
        lambda d: (write(run_rows(score=None), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'score'", "null", SAMPLE_ROW["doc_id"]],
    ),
    "null label": (
        lambda d: (RUN, write(qrels_rows(relevance=None), d / "qrels.parquet"), []),
        3,
        ["qrels.parquet", "'relevance'", "null"],
    ),
    "NaN score": (
        lambda d: (write(run_rows(score=float("nan")), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'score'", "NaN", "nan", SAMPLE_ROW["doc_id"]],
    ),
    "infinite score": (
        lambda d: (write(run_rows(score=float("-inf")), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "'score'", "infinite", "-inf", SAMPLE_ROW["doc_id"]],
    ),
    "NaN label": (
        lambda d: (RUN, write(qrels_rows(relevance=float("nan")), d / "qrels.parquet"), []),
        3,
        ["qrels.parquet", "'relevance'", "NaN"],
    ),
    "duplicate in run": (
        lambda d: (write(pl.concat([run_rows(), run_rows().slice(3, 1)]), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", SAMPLE_ROW["query_id"], SAMPLE_ROW["doc_id"], "2 times", "run"],
    ),
    "duplicate in qrels": (
        lambda d: (RUN, write(pl.concat([qrels_rows(), qrels_rows().slice(3, 1)]), d / "qrels.parquet"), []),
        3,
        ["qrels.parquet", "2 times", "qrels"],
    ),
    "empty run": (
        lambda d: (write(run_rows().head(0), d / "run.parquet"), QRELS, []),
        3,
        ["run.parquet", "no rows", "empty"],
    ),
    "empty qrels file": (lambda d: (RUN, _text(d / "qrels.txt", ""), []), 3, ["qrels.txt", "no rows", "empty"]),
    "corrupt parquet": (
        lambda d: (_bytes(d / "run.parquet", RUN.read_bytes()[: RUN.stat().st_size // 2]), QRELS, []),
        3,
        ["run.parquet", "cannot read"],
    ),
    "path missing": (lambda d: (d / "nowhere.parquet", QRELS, []), 3, ["nowhere.parquet", "no such file"]),
    "k zero": (lambda d: (RUN, QRELS, ["--k", "0"]), 2, ["positive integer"]),
    "k negative": (lambda d: (RUN, QRELS, ["--k", "5,-3"]), 2, ["-3"]),
    "gain map syntax": (lambda d: (RUN, QRELS, ["--gain", "1:3,2:9"]), 2, ["gain", "1:3"]),
    "memory limit syntax": (lambda d: (RUN, QRELS, ["--memory-limit", "lots"]), 2, ["memory limit", "lots"]),
}


def _text(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _bytes(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("case", list(CASES))
def test_error_exit_code_message_and_no_output(tmp_path: Path, out: Path, engine: str, case: str) -> None:
    make, code, words = CASES[case]
    run, qrels, flags = make(tmp_path)
    before = snapshot(out)
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--out", out, "--engine", engine, *flags)
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for word in words:
        assert word in result.stderr, (word, result.stderr)
    assert snapshot(out) == before


def test_fractional_labels_accepted_when_allowed(tmp_path: Path, engine: str) -> None:
    qrels = qrels_rows(relevance=0.5)
    write(qrels, tmp_path / "qrels.parquet")
    result = run_cli(
        "evaluate",
        "--run",
        RUN,
        "--qrels",
        tmp_path / "qrels.parquet",
        "--k",
        "5",
        "--allow-fractional-labels",
        "--out",
        tmp_path / "out",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    expected = reference.ndcg_table(
        pl.read_parquet(RUN).select("query_id", "doc_id", "score").rows(), qrels.rows(), [5]
    )
    assert_tables_close(as_table(pl.read_parquet(tmp_path / "out/per_query.parquet")), expected)


def test_integer_valued_float_labels_are_not_fractional() -> None:
    run = pl.LazyFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
    qrels = pl.LazyFrame({"query_id": ["q", "q"], "doc_id": ["a", "b"], "relevance": [0.0, 2.0]})
    assert per_query(run, qrels, k=[1]).collect().height == 2


def test_library_raises_invalid_input_for_frames() -> None:
    run = pl.LazyFrame({"query_id": ["q"], "doc_id": ["a"], "scores": [1.0]})
    qrels = pl.LazyFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(InvalidInput, match=r"run frame: missing column\(s\) 'score' \(did you mean 'scores'"):
        check(run, qrels)


# Warnings: legal but suspicious; counts plus the first few ids, as data and on stderr.


def warning_inputs() -> tuple[pl.LazyFrame, pl.LazyFrame]:
    run = pl.LazyFrame(
        {
            "query_id": ["q1", "q1", "q1", "q2", "q2", "orphan"],
            "doc_id": ["a", "b", "c", "a", "b", "x"],
            "score": [3.0, 2.0, 1.0, 2.0, 1.0, 1.0],
        }
    )
    qrels = pl.LazyFrame(
        {
            "query_id": ["q1", "q1", "q2", "unasked", "unasked"],
            "doc_id": ["a", "c", "a", "z", "y"],
            "relevance": [1, -1, 0, 2, -2],
        }
    )
    return run, qrels


def test_warnings_are_returned_as_data() -> None:
    run, qrels = warning_inputs()
    warnings = {w.code: w for w in check(run, qrels, warn_results_over=2)}
    assert set(warnings) == {
        "queries_only_in_run",
        "queries_only_in_qrels",
        "queries_without_relevant",
        "negative_labels",
        "results_over_limit",
    }
    assert (warnings["queries_only_in_run"].count, warnings["queries_only_in_run"].examples) == (1, ("orphan",))
    assert (warnings["queries_only_in_qrels"].count, warnings["queries_only_in_qrels"].examples) == (1, ("unasked",))
    assert warnings["queries_without_relevant"].examples == ("q2",)
    assert (warnings["negative_labels"].count, warnings["negative_labels"].examples) == (2, ("q1/c", "unasked/y"))
    assert (warnings["results_over_limit"].count, warnings["results_over_limit"].examples) == (1, ("q1",))
    assert warnings["negative_labels"].as_dict() == {
        "code": "negative_labels",
        "message": warnings["negative_labels"].message,
        "count": 2,
        "examples": ["q1/c", "unasked/y"],
    }


def test_warnings_do_not_change_numbers_and_reach_the_result(engine: str) -> None:
    run, qrels = warning_inputs()
    result = evaluate(run, qrels, evaluation=Evaluation(cutoffs=(2,)), engine=engine, warn_results_over=None)
    assert {w.code for w in result.warnings} == {
        "queries_only_in_run",
        "queries_only_in_qrels",
        "queries_without_relevant",
        "negative_labels",
    }
    expected = reference.ndcg_table(run.collect().rows(), qrels.collect().rows(), [2])
    assert_tables_close(as_table(result.per_query), expected)


def test_example_ids_are_capped_but_count_is_complete() -> None:
    run = pl.LazyFrame({"query_id": [f"r{i:02d}" for i in range(12)], "doc_id": "d", "score": 1.0})
    qrels = pl.LazyFrame({"query_id": ["r00"], "doc_id": ["d"], "relevance": [1]})
    (only_in_run,) = check(run, qrels)
    assert only_in_run.count == 11
    assert only_in_run.examples == ("r01", "r02", "r03", "r04", "r05")
    assert str(only_in_run).endswith("11 (r01, r02, r03, r04, r05, ...)")


def test_cli_prints_warnings_to_stderr_and_exits_0(tmp_path: Path, engine: str) -> None:
    result = run_cli(
        "evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5", "--warn-results-over", "20", "--engine", engine,
        "--verbose",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("ndcg: warning:")]
    # data/qrels.parquet: q041..q043 are judged but not retrieved; q013, q026, q039 have no
    # relevant document; 27 negative labels; queries with more than 20 results in the run
    assert any("queries only in the qrels" in line and "3 (q041, q042, q043)" in line for line in lines)
    assert any("without any relevant document" in line and "3 (q013, q026, q039)" in line for line in lines)
    assert any("negative label" in line and ": 27 (" in line for line in lines)
    crowded = pl.read_parquet(RUN).group_by("query_id").len().filter(pl.col("len") > 20).height
    assert any("more than 20 results" in line and f": {crowded} (" in line for line in lines) == (crowded > 0)
    assert "ndcg" in result.stdout


def test_warn_results_over_zero_turns_the_warning_off() -> None:
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5", "--warn-results-over", "0")
    assert result.returncode == 0
    assert "results in" not in result.stderr


# ndcg validate: only the checks, a report, exit 0 when valid and 3 when invalid.


def test_validate_clean_inputs_exit_0_with_warnings() -> None:
    result = run_cli("validate", "--run", RUN, "--qrels", QRELS)
    assert result.returncode == 0, result.stderr
    assert "valid" in result.stdout.splitlines()[2]
    assert any(line.startswith("warning: queries only in the qrels") for line in result.stdout.splitlines())


def test_validate_json_report() -> None:
    result = run_cli("validate", "--run", RUN, "--qrels", QRELS, "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["valid"] is True and report["error"] is None
    codes = {w["code"]: w for w in report["warnings"]}
    assert codes["queries_only_in_qrels"]["examples"] == ["q041", "q042", "q043"]


def test_validate_invalid_exit_3(tmp_path: Path) -> None:
    write(run_rows(score=float("nan")), tmp_path / "run.parquet")
    text = run_cli("validate", "--run", tmp_path / "run.parquet", "--qrels", QRELS)
    assert text.returncode == 3
    assert "invalid:" in text.stdout and "NaN" in text.stdout
    as_json = run_cli("validate", "--run", tmp_path / "run.parquet", "--qrels", QRELS, "--json")
    assert as_json.returncode == 3
    report = json.loads(as_json.stdout)
    assert report["valid"] is False and report["error"]["exit_code"] == 3 and "NaN" in report["error"]["message"]
    assert "Traceback" not in text.stderr + as_json.stderr


def test_validate_missing_path_is_invalid_not_a_crash(tmp_path: Path) -> None:
    result = run_cli("validate", "--run", tmp_path / "nope.txt", "--qrels", QRELS, "--json")
    assert result.returncode == 3
    assert "no such file" in json.loads(result.stdout)["error"]["message"]


def test_validate_inline_labels() -> None:
    labelled = ROOT / "data/run.parquet"
    result = run_cli("validate", "--run", labelled, "--label-col", "score", "--allow-fractional-labels")
    assert result.returncode == 0, result.stderr
    assert "inline labels" in result.stdout


def test_duplicate_check_tells_a_hash_collision_from_a_duplicate() -> None:
    # The duplicate check first counts repeated hashes of (query_id, doc_id); a repeat sends
    # it to the exact check, which must pass distinct pairs (a collision) and name a real
    # duplicate.
    from pipeline.validate import _raise_on_duplicate

    as_if_colliding = pl.DataFrame({"repeated_hashes": [1]})
    distinct = pl.LazyFrame({"query_id": ["q1", "q1", "q2"], "doc_id": ["a", "b", "a"]})
    _raise_on_duplicate(distinct, as_if_colliding, "run.parquet", "run")
    repeated = pl.LazyFrame({"query_id": ["q1", "q2", "q1"], "doc_id": ["a", "a", "a"]})
    with pytest.raises(InvalidInput, match="document 'a' is listed 2 times for query 'q1'"):
        _raise_on_duplicate(repeated, as_if_colliding, "run.parquet", "run")
