"""ndcg-pipeline: exact CG, DCG, IDCG and NDCG@k over Parquet, with Polars and DuckDB SQL.

The public API; see the README for the conventions and ``pipeline.spec`` for the formulas.
"""

from pipeline.aggregate import summarize
from pipeline.api import Result, check, evaluate, make_evaluation, per_query
from pipeline.errors import InvalidInput, NdcgError, NothingToEvaluate, UsageError
from pipeline.io.read import Columns, Source
from pipeline.spec import Discount, Evaluation, Gain
from pipeline.validate import ValidationWarning

__all__ = [
    "Columns",
    "Discount",
    "Evaluation",
    "Gain",
    "InvalidInput",
    "NdcgError",
    "NothingToEvaluate",
    "Result",
    "Source",
    "UsageError",
    "ValidationWarning",
    "check",
    "evaluate",
    "make_evaluation",
    "per_query",
    "summarize",
]
