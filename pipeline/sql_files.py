"""The files of ``sql/`` and their public variables, for every engine and for ``ndcg sql``.

The files live at the top of the repository, so that the duckdb CLI runs them from a checkout
(``.read sql/ndcg.sql``). A wheel ships them as package data ``pipeline/sql/`` (pyproject maps
the package ``pipeline.sql`` onto that folder); a checkout or an editable install reads the
folder itself. Engines read the SQL only here, so no engine imports another for it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any

from pipeline.expressions import TIE_BOUNDS_PER_QUERY
from pipeline.registry import COMPANION_MEASURES, SQL_VARIABLES, SUMMARY_VARIABLE_TYPES, Evaluation

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
    # the table macros' run and qrels arguments (sql/macro_inputs.sql, pipeline/macros.py)
    "run",
    "qrels",
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

# The steps of the per-query table, in the order they run: each file creates one view (the
# last, per_query.sql, the table per_query) that the steps after it read by name. sql/ndcg.sql
# `.read`s the same files in the same order.
PER_QUERY_STEPS = (
    "cutoffs.sql",
    "judgments.sql",
    "deduplicated.sql",
    "tie_orders.sql",
    "ranked.sql",
    "retrieved.sql",
    "rankings.sql",
    "running_sums.sql",
    "sums_at_cutoffs.sql",
    "evaluated_queries.sql",
    "relevance_curve.sql",
    "ideal_curve.sql",
    "gain_curve.sql",
    "counted.sql",
    "measures_trec.sql",
    "measures_curve.sql",
    "measures_gain.sql",
    "measures.sql",
    "per_query.sql",
)


# The steps above as one statement, each step a CTE: what the DuckDB engine runs. Generated from
# them by pipeline/transpile.py (python -m pipeline.transpile --write sql/per_query_composed.sql).
PER_QUERY_COMPOSED = "per_query_composed.sql"


def sql_file(name: str) -> str:
    """The text of one file of ``sql/``, e.g. ``sql_file("per_query.sql")``.

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
    'per_query.sql'
    """
    for name in PER_QUERY_STEPS:
        yield name, sql_file(name)


def evaluation_variables(evaluation: Evaluation) -> dict[str, Any]:
    """The spec as the variables that ``sql/per_query.sql`` reads."""
    return {variable.name: variable.value(evaluation) for variable in SQL_VARIABLES}


def unasked_columns(evaluation: Evaluation) -> list[str]:
    """The columns of ``sql/per_query.sql``'s fixed shape that ``evaluation`` did not ask for (null
    there): the companion measures not asked for, and the tie bounds without tie_bounds. The
    engines leave them out of the per-query table.

    >>> unasked = unasked_columns(Evaluation(measures=("ndcg", "P"), tie_bounds=True))
    >>> "P" in unasked, "recall" in unasked, "ndcg_min" in unasked
    (False, True, False)
    """
    unasked = [name for name in COMPANION_MEASURES if name not in evaluation.companions]
    return unasked if evaluation.tie_bounds else [*unasked, *TIE_BOUNDS_PER_QUERY]


def summary_columns(per_query_columns: list[str] | tuple[str, ...]) -> list[str]:
    """The columns of ``sql/summary.sql``'s view for a per-query table with ``per_query_columns``,
    in that table's order (the view gives the measures grouped by their aggregate).

    >>> summary_columns(["query_id", "k", "cg", "ndcg", "ndcg_min", "ndcg_max", "ties_straddle_k"])
    ['k', 'queries', 'cg', 'ndcg', 'ndcg_min', 'ndcg_max', 'tie_sensitive_queries']
    """
    measures = [c for c in per_query_columns if c not in ("query_id", "k", "ties_straddle_k")]
    return ["k", "queries", *measures, "tie_sensitive_queries"]


def generator_main(prog: str, description: str, text: Callable[[], str], argv: list[str] | None) -> int:
    """The command line of a generated file of ``sql/`` (``python -m pipeline.macros``,
    ``python -m pipeline.transpile``): prints the text, or writes it to ``--write PATH``."""
    import argparse
    import sys

    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--write", metavar="PATH", help="write it to PATH instead of printing it")
    arguments = parser.parse_args(argv)
    generated = text()  # before the file is opened: a failure leaves the old file as it was
    if arguments.write:
        with open(arguments.write, "w", encoding="utf-8") as out:
            out.write(generated)
    else:
        sys.stdout.write(generated)
    return 0
