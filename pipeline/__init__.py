"""ndcg-pipeline: exact CG, DCG, IDCG and NDCG@k over Parquet, with Polars and DuckDB SQL.

The public API; see the README for the conventions and ``pipeline.registry`` for the formulas.
Names are imported on first use, so that ``ndcg --help`` does not pay for Polars and DuckDB.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pipeline.aggregate import summarize
    from pipeline.api import Result, check, evaluate, make_evaluation, per_query
    from pipeline.api_compare import compare_runs
    from pipeline.errors import InvalidInput, NdcgError, NothingToEvaluate, UsageError
    from pipeline.gate import Gate, Margin
    from pipeline.io.read import Columns, Source
    from pipeline.registry import Discount, Evaluation, Gain
    from pipeline.validate import ValidationWarning

_EXPORTS = {
    "summarize": "pipeline.aggregate",
    "Result": "pipeline.api",
    "check": "pipeline.api",
    "evaluate": "pipeline.api",
    "make_evaluation": "pipeline.api",
    "per_query": "pipeline.api",
    "compare_runs": "pipeline.api_compare",
    "InvalidInput": "pipeline.errors",
    "NdcgError": "pipeline.errors",
    "NothingToEvaluate": "pipeline.errors",
    "UsageError": "pipeline.errors",
    "Gate": "pipeline.gate",
    "Margin": "pipeline.gate",
    "Columns": "pipeline.io.read",
    "Source": "pipeline.io.read",
    "Discount": "pipeline.registry",
    "Evaluation": "pipeline.registry",
    "Gain": "pipeline.registry",
    "ValidationWarning": "pipeline.validate",
}

__all__ = [
    "Columns",
    "Discount",
    "Evaluation",
    "Gain",
    "Gate",
    "InvalidInput",
    "Margin",
    "NdcgError",
    "NothingToEvaluate",
    "Result",
    "Source",
    "UsageError",
    "ValidationWarning",
    "check",
    "compare_runs",
    "evaluate",
    "make_evaluation",
    "per_query",
    "summarize",
]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'pipeline' has no attribute {name!r}")
