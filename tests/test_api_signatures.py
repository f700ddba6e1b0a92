"""The library's functions show every keyword they take: in ``inspect.signature`` (what a
notebook completes), in ``help()``, and in docs/python-api.md, each generated from the option
registry; a keyword they do not take is refused by its name with the closest one, as the command
line refuses a mistyped flag; and the whole ranking is ``k`` null in frames, ``all`` in print."""

from __future__ import annotations

import inspect
import json
import math
import pydoc
import re
from collections.abc import Callable
from pathlib import Path

import polars as pl
import pytest

import pipeline
from pipeline import Gate, Margin, api, check, compare_runs, evaluate, make_evaluation, per_query
from pipeline.api_docs import python_api_tables
from pipeline.api_keywords import SECTION, function_keywords, keyword_names
from pipeline.compare_job import compare_job
from pipeline.errors import UsageError
from pipeline.registry import CONVENTIONS, LABEL_BOUND_CONVENTIONS, OPTION, OPTIONS, Evaluation, Option, options_for
from pipeline.registry import options as registry_options
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parent.parent
FUNCTIONS = {"make_evaluation": make_evaluation, "per_query": per_query, "check": check, "evaluate": evaluate}
CONVENTION_NAMES = {c.name for c in CONVENTIONS}


def expected_keywords(name: str) -> set[str]:
    """What each function takes, from the registry itself: the conventions (check: those that
    bound labels), ``profile``, and the options the registry gives the function."""
    conventions = set(LABEL_BOUND_CONVENTIONS) if name == "check" else {*CONVENTION_NAMES, "profile"}
    return conventions | {option.name for option in options_for(function=name)}


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_every_keyword_the_registry_gives_a_function_is_in_its_signature_and_help(name: str) -> None:
    function = FUNCTIONS[name]
    signature = inspect.signature(function)
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
    shown = set(keyword_names(function))
    assert expected_keywords(name) <= shown
    # beyond the registry's, only the keywords the function declares itself
    assert shown - expected_keywords(name) <= {"evaluation", "engine", "columns"}
    helped = pydoc.render_doc(function, renderer=pydoc.plaintext)
    signature_line = next(line for line in helped.splitlines() if line.startswith(f"{name}("))
    section = helped[helped.index(SECTION) :]
    for keyword in shown:
        parameter = signature.parameters[keyword]
        assert parameter.annotation is not inspect.Parameter.empty, keyword
        assert parameter.default is not inspect.Parameter.empty, keyword
        assert f" {keyword}: " in signature_line or f"*, {keyword}: " in signature_line, keyword
    for keyword in expected_keywords(name):
        assert re.search(rf"\n +{keyword}: ", section), keyword


def test_compare_runs_shows_what_compare_job_and_the_registry_give_it() -> None:
    """Every keyword of compare_job (but the systems, the gate and what runs scored here cannot
    differ in), the groups' table of the runs, the conventions (compare's own k and all_queries)
    and compare's validation options."""
    shown = set(keyword_names(compare_runs))
    own = set(inspect.signature(compare_job).parameters) - {"systems", "allow_different_conventions"}
    own -= {"allow_different_judgments"}
    assert own | {"query_attributes"} <= shown
    assert {*CONVENTION_NAMES, "profile"} <= shown
    assert {option.name for option in options_for(command="compare")} <= shown
    assert shown - own - CONVENTION_NAMES - {option.name for option in options_for(command="compare")} <= {
        "query_attributes",
        "query_weights",  # the weights of the means and tests, with their column and missing weight
        "weight_col",
        "missing_query_weight",
        "profile",
        "engine",
    }


def test_a_new_option_of_the_registry_becomes_a_keyword_without_a_hand_edit(monkeypatch: pytest.MonkeyPatch) -> None:
    new = Option("strict_ids", "validation", "checks.strict_ids", "refuse ids with spaces", False, switch=True)
    monkeypatch.setattr(registry_options, "OPTIONS", (*OPTIONS, new))
    keywords = {keyword.name: keyword for keyword in function_keywords("evaluate")}
    assert keywords["strict_ids"].annotation is bool
    assert keywords["strict_ids"].default is False
    assert "strict_ids" in {keyword.name for keyword in function_keywords("check")}


def test_the_defaults_shown_are_what_leaving_a_keyword_out_gives() -> None:
    """A signature's defaults passed explicitly (``sig.bind(...).apply_defaults()``, as tools
    do) compute what leaving them out computes, and the options' defaults are the registry's."""
    for name in ("per_query", "check", "evaluate"):
        parameters = inspect.signature(FUNCTIONS[name]).parameters
        for option in options_for(function=name):
            assert parameters[option.name].default == OPTION[option.name].default, option.name
        for convention in CONVENTIONS:
            if name == "check" and convention.name not in LABEL_BOUND_CONVENTIONS:
                continue
            # None: the profile's choice, else the registry's default
            assert parameters[convention.name].default is None, convention.name
    assert make_evaluation(**dict.fromkeys(CONVENTION_NAMES)) == make_evaluation() == Evaluation()
    assert make_evaluation(profile="lightgbm", gain=None) == make_evaluation(profile="lightgbm")

    run = pl.DataFrame({"query_id": ["q1"] * 3, "doc_id": ["a", "b", "c"], "score": [3.0, 2.0, 1.0]})
    qrels = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "c"], "relevance": [1, 2]})
    bound = inspect.signature(evaluate).bind(run, qrels)
    bound.apply_defaults()
    explicit = evaluate(*bound.args, **bound.kwargs)
    assert explicit.per_query.equals(evaluate(run, qrels).per_query)
    assert explicit.summary.equals(evaluate(run, qrels).summary)


UNKNOWN = r"got unknown option\(s\) "
CLOSEST = [
    (lambda: evaluate("run.parquet", gian="linear"), rf"evaluate\(\) {UNKNOWN}'gian' \(did you mean 'gain'\?\)"),
    (lambda: per_query("r", emtpy_ideal="skip"), rf"per_query\(\) {UNKNOWN}'emtpy_ideal' \(did you mean 'empty_ideal'"),
    (
        lambda: check("r", warn_results_ovr=5),
        rf"check\(\) {UNKNOWN}'warn_results_ovr' \(did you mean 'warn_results_over'",
    ),
    (
        lambda: make_evaluation(tie="average"),
        r"unknown option\(s\) 'tie' \(did you mean 'ties'\?\); options are k, profile",
    ),
    (lambda: compare_runs(["a", "b"], permutatons=5), rf"compare_runs\(\) {UNKNOWN}'permutatons' \(did you mean 'perm"),
    # nothing close: the names alone, as before
    (lambda: evaluate("run.parquet", zzz=1), rf"evaluate\(\) {UNKNOWN}'zzz'; options are k, profile, gain"),
    (lambda: check("run.parquet", ties="average"), rf"check\(\) {UNKNOWN}'ties'; check\(\) takes the input"),
]


@pytest.mark.parametrize(("call", "refusal"), CLOSEST)
def test_an_unknown_keyword_is_refused_with_the_closest_one(call: Callable[[], object], refusal: str) -> None:
    with pytest.raises(UsageError, match=refusal):
        call()


def test_the_command_line_suggests_the_same_name_for_the_same_slip() -> None:
    result = run_cli("evaluate", "--run", "data/run.parquet", "--emtpy-ideal", "skip")
    assert result.returncode == 2
    assert "did you mean --empty-ideal?" in result.stderr
    with pytest.raises(UsageError, match=r"did you mean 'empty_ideal'\?"):
        evaluate("data/run.parquet", emtpy_ideal="skip")


def test_the_python_api_page_lists_what_the_functions_take() -> None:
    page = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    assert python_api_tables(page) == page, "docs/python-api.md's keyword tables are stale: run make generate"
    tables = page[page.index("<!-- keywords: begin") : page.index("<!-- compare keywords: end")]
    for name, function in [*FUNCTIONS.items(), ("compare_runs", compare_runs)]:
        assert f"`{name}(" in page, name  # in the table of functions
        for keyword in keyword_names(function):
            assert f"`{keyword}`" in tables, (name, keyword)
    # the worked examples run (--doctest-glob): evaluate, per_query, compare_runs and the gate
    for shown in (">>> result = evaluate(", ">>> table = per_query(", ">>> compared = compare_runs(", "gate=Gate("):
        assert shown in page, shown


def test_the_package_exports_the_compare_and_gate_functions() -> None:
    for name in ("compare_runs", "Gate", "Margin"):
        assert name in pipeline.__all__ and getattr(pipeline, name) is not None


# --- the whole ranking: k null in frames and files, `all` in print ----------------------------

# one query: a (score 3, label 1), b (2, unjudged), c (1, label 2). By hand, log2 discount:
# DCG = 1/log2(2) + 2/log2(4) = 2, IDCG = 2/log2(2) + 1/log2(3); at k=1, DCG 1 and IDCG 2
WHOLE = 2 / (2 + 1 / math.log2(3))
AT_1 = 1 / 2


@pytest.fixture()
def tiny(tmp_path: Path) -> tuple[Path, Path]:
    run, qrels = tmp_path / "run.csv", tmp_path / "qrels.csv"
    run.write_text("query_id,doc_id,score\nq1,a,3\nq1,b,2\nq1,c,1\n", encoding="utf-8")
    qrels.write_text("query_id,doc_id,relevance\nq1,a,1\nq1,c,2\n", encoding="utf-8")
    return run, qrels


def test_the_whole_ranking_is_k_null_in_python_and_files_and_all_when_printed(
    tiny: tuple[Path, Path], tmp_path: Path
) -> None:
    run, qrels = tiny
    summary = evaluate(run, qrels, k=1).summary
    assert summary["k"].to_list() == [None, 1]
    assert summary["ndcg"].to_list() == pytest.approx([WHOLE, AT_1], abs=1e-12)
    # the command line's table prints the same row as `all`
    printed = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "1", "--log-level", "error")
    assert printed.returncode == 0, printed.stderr
    rows = {
        line.split()[0]: line.split() for line in printed.stdout.splitlines() if line.split()[:1] in (["all"], ["1"])
    }
    assert float(rows["all"][-1]) == pytest.approx(WHOLE, abs=5e-5)
    assert float(rows["1"][-1]) == pytest.approx(AT_1, abs=5e-5)
    # its JSON, and the Parquet it writes (k int64), hold null, as Python does
    as_json = run_cli(
        "evaluate", "--run", run, "--qrels", qrels, "--k", "1", "--output-format", "json", "--log-level", "error"
    )
    assert [row["k"] for row in json.loads(as_json.stdout)["summary"]] == [None, 1]
    out = tmp_path / "out"
    written = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "1", "--out", out, "--log-level", "error")
    assert written.returncode == 0, written.stderr
    table = pl.read_parquet(out / "per_query.parquet")
    assert table.schema["k"] == pl.Int64 and table["k"].to_list() == [None, 1]


def test_compare_takes_the_whole_ranking_as_none_or_all(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    run, qrels = tiny
    other = tmp_path / "other.csv"
    other.write_text("query_id,doc_id,score\nq1,a,1\nq1,b,2\nq1,c,3\n", encoding="utf-8")
    by_none = compare_runs([run, other], qrels, k=[1, None]).result.comparison
    by_text = compare_runs([run, other], qrels, k="1,all").result.comparison
    assert by_none["k"].to_list() == by_text["k"].to_list() == [None, 1]
    assert by_none["mean_baseline"].to_list() == pytest.approx([WHOLE, AT_1], abs=1e-12)
    # the other ranks c, b, a: DCG = 2 + 1/log2(4), the same IDCG; at k=1, 2/2
    assert by_none["mean_candidate"].to_list() == pytest.approx([2.5 / (2 + 1 / math.log2(3)), 1.0], abs=1e-12)
    with pytest.raises(UsageError, match="--gate-k all is not a compared cutoff"):
        compare_runs([run, other], qrels, k=1, gate=Gate(Margin(0.01), cutoffs=(None,)))


def test_make_evaluation_shows_the_names_it_reads() -> None:
    """The names make_evaluation reads from ``**options`` are the ones it shows."""
    assert set(api._EVALUATION_OPTIONS) == {"k", "profile", *CONVENTION_NAMES}
    assert set(keyword_names(make_evaluation)) == set(api._EVALUATION_OPTIONS)


def test_compare_runs_defaults_shown_are_what_leaving_them_out_gives(tiny: tuple[Path, Path], tmp_path: Path) -> None:
    run, qrels = tiny
    other = tmp_path / "other.csv"
    other.write_text("query_id,doc_id,score\nq1,a,1\nq1,b,2\nq1,c,3\n", encoding="utf-8")
    bound = inspect.signature(compare_runs).bind([run, other], qrels)
    bound.apply_defaults()
    explicit = compare_runs(*bound.args, **bound.kwargs).result.comparison
    assert explicit.equals(compare_runs([run, other], qrels).result.comparison)
    # None where a list is taken means none given, as leaving it out does
    assert compare_runs([run, other], qrels, group_by=None, partition=None).result.comparison.equals(explicit)
