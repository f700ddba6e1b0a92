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
    then the file, then each derived variable equal to the engine's."""
    assert set(READ) == {"measures", "precision_denominator", "doc_weight_col"}
    connection = duckdb.connect()
    script = derived_variables_sql()
    compared = 0
    for evaluation in evaluations():
        bound = evaluation_variables(evaluation)
        # the CLI sees the families the engines resolve (a set's name is the engines' to expand)
        families = [name for name in evaluation.measures if name in MEASURE_FAMILIES]
        set_variables(connection, {"measures": families, **{name: bound[name] for name in READ if name != "measures"}})
        connection.execute(script)
        expected = {**bound, **summary_variables()}
        for name in DERIVED:
            (got,) = connection.execute(f"select getvariable('{name}')").fetchone()  # type: ignore[misc]
            assert got == expected[name], f"{name} of {evaluation.measures}, threshold {evaluation.relevance_threshold}"
            compared += 1
    assert compared == len(evaluations()) * len(DERIVED)


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
