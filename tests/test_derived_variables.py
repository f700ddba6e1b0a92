"""The variables the registry derives from an evaluation (the signals' bounds, num_ret's count,
the curves, the measure columns, the summary's aggregates) are the same whoever computes them:
the engines from Python (Evaluation), the duckdb CLI from sql/generated/derived_variables.sql,
and the table macros from their parameters (pipeline/derived.py makes both)."""

from __future__ import annotations

import itertools

import duckdb
import pytest

from pipeline.derived import DERIVED, READ, derived_variables_sql
from pipeline.engines.duckdb import set_variables
from pipeline.registry import MEASURE_FAMILIES, Evaluation, summary_variables
from pipeline.sql_files import evaluation_variables

# every family alone and a few together, under each threshold kind and each convention the
# derivations read; NDCG alone (measures unset in the CLI too)
MEASURE_LISTS = [("ndcg",), *((family,) for family in MEASURE_FAMILIES if family != "ndcg"), ("all_trec",)]
MEASURE_LISTS += [("P", "bpref", "G"), ("num_ret", "infAP", "rbp", "judged")]
THRESHOLDS = [None, 2.0, -1.0, 0.5, 0.0]


def evaluations() -> list[Evaluation]:
    found = []
    for measures, threshold, denominator in itertools.product(MEASURE_LISTS, THRESHOLDS, ("k", "min-k-retrieved")):
        found.append(Evaluation(measures=measures, relevance_threshold=threshold, precision_denominator=denominator))
    # the run's weights: map reads its weighted sums (TF-Ranking's AP) as well
    for measures in (("ndcg",), ("map",), ("P", "map")):
        found.append(Evaluation(measures=measures, doc_weight_col="w", ideal="retrieved"))
    return found


def test_the_duckdb_cli_derives_what_the_engines_bind() -> None:
    """One connection, every case: the variables the file reads set as the engine sets them,
    then the file, then each derived variable equal to the engine's.

    The file reads only READ, so the evaluations that bind the same values there (the
    thresholds) give the CLI the same inputs: it runs once for them (24 ms a run, 530 runs
    before), and its one answer is compared with each evaluation's own variables."""
    assert set(READ) == {"measures", "precision_denominator", "doc_weight_col"}
    connection = duckdb.connect()
    script = derived_variables_sql()
    cases = evaluations()
    by_inputs: dict[tuple, list[tuple[Evaluation, dict]]] = {}
    for evaluation in cases:
        bound = evaluation_variables(evaluation)
        # the CLI sees the families the engines resolve (a set's name is the engines' to expand)
        families = [name for name in evaluation.measures if name in MEASURE_FAMILIES]
        given = {"measures": families, **{name: bound[name] for name in READ if name != "measures"}}
        key = tuple((name, tuple(value) if isinstance(value, list) else value) for name, value in given.items())
        by_inputs.setdefault(key, []).append((evaluation, bound))
    summary = summary_variables()
    compared = 0
    for key, same_inputs in by_inputs.items():
        set_variables(connection, {name: list(value) if isinstance(value, tuple) else value for name, value in key})
        connection.execute(script)
        row = connection.execute("select " + ", ".join(f"getvariable('{name}')" for name in DERIVED)).fetchone()
        assert row is not None
        derived = dict(zip(DERIVED, row, strict=True))
        for evaluation, bound in same_inputs:
            expected = {**bound, **summary}
            for name in DERIVED:
                assert derived[name] == expected[name], (
                    f"{name} of {evaluation.measures}, threshold {evaluation.relevance_threshold}"
                )
                compared += 1
    assert compared == len(cases) * len(DERIVED)
    assert len(by_inputs) < len(cases)  # the thresholds share their runs


@pytest.mark.parametrize("unset", ["measures", "relevance_threshold", "precision_denominator"])
def test_an_unset_variable_derives_as_its_default(unset: str) -> None:
    """The duckdb CLI without measures is NDCG alone; without a threshold, label > 0 is
    relevant; without a precision denominator, k: the engines' defaults."""
    connection = duckdb.connect()
    defaults = evaluation_variables(Evaluation(measures=("P",)))
    given = {"measures": ["P"], "relevance_threshold": None, "precision_denominator": "k"}
    set_variables(connection, {name: value for name, value in given.items() if name != unset})
    connection.execute(derived_variables_sql())
    expected = evaluation_variables(Evaluation()) if unset == "measures" else defaults
    for name in ("signals", "count_retrieved", "curves", "measure_columns"):
        (got,) = connection.execute(f"select getvariable('{name}')").fetchone()  # type: ignore[misc]
        assert got == expected[name], name
