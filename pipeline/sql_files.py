"""The files of ``sql/`` and their public variables, for every engine and for ``ndcg sql``.

The files live at the top of the repository, so that the duckdb CLI runs them from a checkout
(``.read sql/ndcg.sql``). A wheel ships them as package data ``pipeline/sql/`` (pyproject maps
the package ``pipeline.sql`` onto that folder); a checkout or an editable install reads the
folder itself. Engines read the SQL only here, so no engine imports another for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pipeline.expressions import TIE_BOUNDS_PER_QUERY
from pipeline.registry import SQL_VARIABLES, SUMMARY_VARIABLE_TYPES, Evaluation

# The public variables of the files in sql/, as documented in their headers: the inputs' and
# outputs', those an evaluation binds and those of the summary (the registry's, pipeline/registry/).
VARIABLES = (
    "run_path",
    "qrels_path",
    "query_col",
    "doc_col",
    "score_col",
    "label_col",
    "run_query_col",
    "run_doc_col",
    "qrels_query_col",
    "qrels_doc_col",
    "qrels_label_col",
    *(variable.name for variable in SQL_VARIABLES),
    *SUMMARY_VARIABLE_TYPES,
    "out_path",
    # the query weights of sql/query_weights.sql (the command line's --query-weights, --missing-query-weight)
    "query_weights_path",
    "missing_query_weight",
    # the table macros' run and qrels arguments (sql/macro_inputs.sql, pipeline/macros.py)
    "run",
    "qrels",
    # their formats (the command line's --run-format, --qrels-format) and what pipeline/macros.py
    # derives from the arguments for sql/macro_inputs.sql and sql/macro_text_inputs.sql
    *(
        f"{role}_{name}"
        for role in ("run", "qrels")
        for name in ("format", "paths", "read_as", "source", "text_paths", "table")
    ),
    # what sql/generated/refusals.sql accepts beside the conventions: the command line's
    # --allow-fractional-labels
    "allow_fractional_labels",
    # sql/ndcg.sql's verdict of sql/generated/refusals.sql, which sql/export.sql reads
    "refusals_verdict",
    # what sql/input_columns.sql finds in the files and sql/inputs.sql reads by (a missing column refused)
    *(f"{role}_columns_{what}" for role in ("run", "qrels") for what in ("found", "read")),
)
# The Spark type of each variable the engines bind (the registry's): the type of its literal,
# and of the NULL of an unset one.
VARIABLE_TYPES: dict[str, str] = {
    **{variable.name: variable.spark_type for variable in SQL_VARIABLES},
    **SUMMARY_VARIABLE_TYPES,
}


class MissingSqlFile(RuntimeError):
    """A file of ``sql/`` is not where the package expects it: a packaging bug of ours, never the
    user's input, so it is not an NdcgError (the CLI reports it as an internal error, exit 1)."""


def _sql_dir() -> Traversable:
    packaged = resources.files("pipeline") / "sql"
    if packaged.is_dir():
        return packaged
    # a checkout or an editable install: the package is the repository's pipeline/, next to sql/
    return Path(__file__).resolve().parent.parent / "sql"


SQL_DIR = _sql_dir()

# The steps of the per-query table, in the order they run: the one list of them (sql/ndcg.sql
# reads the same files in the same order, tests/test_sql_files.py checks). Each file creates one
# view (the last, the table per_query) that the steps after it read by name, and sits in the
# folder of its stage, as its Polars twin, the function of its name, sits in the module of its
# stage (pipeline/engines/polars/<stage>.py).
PER_QUERY_STEPS = (
    "ranking/cutoffs.sql",
    "ranking/judgments.sql",
    "ranking/deduplicated.sql",
    "ranking/tie_orders.sql",
    "ranking/ranked.sql",
    "ranking/retrieved.sql",
    "ranking/ideal.sql",
    "ranking/rankings.sql",
    "counters/signals.sql",
    "counters/running_sums.sql",
    "counters/sums_at_cutoffs.sql",
    "counters/evaluated_queries.sql",
    "counters/counters.sql",
    "curves/relevance_curve.sql",
    "curves/ideal_curve.sql",
    "curves/gain_curve.sql",
    "curves/cascade_curve.sql",
    "curves/intent_pairs.sql",
    "curves/intent_greedy.sql",
    "curves/intent_ideal.sql",
    "curves/intent_curve.sql",
    "curves/cwl_gains.sql",
    "curves/user_model_curve.sql",
    "curves/nerr_runs.sql",
    "curves/nerr_curve.sql",
    "curves/target_runs.sql",
    "curves/target_curve.sql",
    "curves/bpm_curve.sql",
    "curves/compat_curve.sql",
    "curves/weighted_ap_curve.sql",
    "curves/threshold_curve.sql",
    "measures/counted.sql",
    "measures/set_measures.sql",
    "measures/curve_measures.sql",
    "measures/gain_measures.sql",
    "measures/top_k_measures.sql",
    "measures/intent_measures.sql",
    "measures/measures.sql",
    "measures/per_query.sql",
)
STAGES: tuple[str, ...] = tuple(dict.fromkeys(step.split("/")[0] for step in PER_QUERY_STEPS))

# The generated files, each made by `make generate` (python -m pipeline.generate) from the steps
# and the registry, never edited by hand: the steps that name the registry's counters; the steps
# above as one statement, each step a CTE (what the DuckDB engine runs); the table macros; the
# variables derived from the registry that the duckdb CLI's evaluation sets (sql/ndcg.sql reads
# it first).
GENERATED = "generated"
# the steps that name the registry's signals and counters, so generated from it too, each at its
# stage's address (pipeline/counter_steps.py)
GENERATED_STEPS = ("counters/signals.sql", "counters/running_sums.sql", "counters/counters.sql")
PER_QUERY_COMPOSED = f"{GENERATED}/per_query_composed.sql"
MACROS = f"{GENERATED}/macros.sql"
DERIVED_VARIABLES = f"{GENERATED}/derived_variables.sql"
# what sql/ndcg.sql refuses, in the command line's words (pipeline/sql_refusals.py)
REFUSALS = f"{GENERATED}/refusals.sql"
# a variable sql/ndcg.sql reads set to a value of another type, refused first (pipeline/sql_variable_types.py)
VARIABLE_TYPES_CHECK = f"{GENERATED}/variable_types.sql"


def step_name(path: str) -> str:
    """The view a step creates, its file's name: ``step_name("ranking/cutoffs.sql")`` is
    ``"cutoffs"``."""
    return path.rpartition("/")[2].removesuffix(".sql")


def sql_file(name: str) -> str:
    """The text of one file of ``sql/``, e.g. ``sql_file("measures/per_query.sql")``.

    >>> sql_file("summary.sql").startswith("--")
    True
    """
    try:
        return (SQL_DIR / name).read_text(encoding="utf-8")
    except OSError as error:
        raise MissingSqlFile(
            f"sql/{name} is missing from the installed ndcg-pipeline (looked in {SQL_DIR}): "
            f"a packaging bug, please report it ({type(error).__name__}: {error.strerror or error})"
        ) from None


def per_query_steps() -> Iterator[tuple[str, str]]:
    """``(file name, text)`` of each step of the per-query table, in the order they run.

    >>> [name for name, _ in per_query_steps()][-1]
    'measures/per_query.sql'
    """
    for name in PER_QUERY_STEPS:
        yield name, sql_file(name)


def evaluation_variables(evaluation: Evaluation) -> dict[str, Any]:
    """The evaluation as the variables the steps of ``sql/`` read."""
    return {variable.name: variable.value(evaluation) for variable in SQL_VARIABLES}


def per_query_columns(evaluation: Evaluation) -> list[str]:
    """The columns of the per-query table of ``evaluation``, in the registry's order (the SQL
    gives the measures in the order its steps compute them, and the tie bounds always, null
    without tie_bounds).

    >>> per_query_columns(Evaluation(measures=("P",), tie_bounds=True))
    ['query_id', 'k', 'cg', 'dcg', 'idcg', 'ndcg', 'P', 'ndcg_min', 'ndcg_max', 'ties_straddle_k']
    """
    return ["query_id", "k", *evaluation.columns, *(TIE_BOUNDS_PER_QUERY if evaluation.tie_bounds else ())]


def summary_columns(per_query_columns: list[str] | tuple[str, ...]) -> list[str]:
    """The columns of ``sql/summary.sql``'s view for a per-query table with ``per_query_columns``,
    in that table's order (the view gives the measures grouped by their aggregate).

    >>> summary_columns(["query_id", "k", "cg", "ndcg", "ndcg_min", "ndcg_max", "ties_straddle_k"])
    ['k', 'queries', 'cg', 'ndcg', 'ndcg_min', 'ndcg_max', 'tie_sensitive_queries']
    """
    measures = [c for c in per_query_columns if c not in ("query_id", "k", "ties_straddle_k")]
    return ["k", "queries", *measures, "tie_sensitive_queries"]
