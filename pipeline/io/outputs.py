"""Reading our own outputs back: what ``ndcg evaluate --out`` and ``ndcg compare --out`` wrote.

An evaluation output is a folder holding ``per_query.parquet``, ``summary.parquet`` and
``manifest.json`` (or ``key=value`` folders of them, one per partition); a compare output
holds ``comparison.parquet``, ``deltas.parquet`` and ``manifest.json``. ``ndcg compare``
(over evaluation outputs) and ``ndcg report`` read them through here: the tables, with clear
errors for a missing or unreadable file, and what the manifests record (the conventions each
system was evaluated with, the judgments it was scored against).
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.io.partitions import Partition, hive_partitions
from pipeline.io.read import is_id_type
from pipeline.registry import PRIMARY_MEASURE, RELEVANCE_WEIGHTED_MEASURES

PER_QUERY = "per_query.parquet"
SUMMARY = "summary.parquet"
# --doc-weight-col's TF-Ranking list weights of each query, beside the per-query table
LIST_WEIGHTS_STEM = "list_weights"
LIST_WEIGHTS = f"{LIST_WEIGHTS_STEM}.parquet"
COMPARISON = "comparison.parquet"
DELTAS = "deltas.parquet"
MANIFEST = "manifest.json"


def read_table(path: Path) -> pl.DataFrame:
    """One Parquet table of an output folder."""
    if not path.exists():
        raise InvalidInput(f"{path}: missing (the output directory is incomplete)")
    return _read_parquet(path)


def _read_parquet(path: Path) -> pl.DataFrame:
    try:
        return pl.read_parquet(path)
    except (pl.exceptions.PolarsError, OSError) as error:
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0]
        raise InvalidInput(f"{path}: cannot read as parquet: {first_line}") from None


def read_per_query(path: str) -> pl.DataFrame:
    """A per-query table from an ``ndcg evaluate --out`` directory or a Parquet file, its keys
    and score checked (:func:`check_types`)."""
    target = Path(path)
    if target.is_dir():
        target = target / PER_QUERY
    if not target.exists():
        raise InvalidInput(f"{path}: no {PER_QUERY} here (write one with: ndcg evaluate ... --out {path})")
    return check_types(_read_parquet(target), str(target))


def check_types(table: pl.DataFrame, where: str) -> pl.DataFrame:
    """Keys and scores of the types a comparison can pair and average: query ids text or
    integers, k an integer (null for the whole ranking), ndcg a number (as float64). Anything
    else is an error naming ``where`` and the column, never a failed cast further on."""
    score = PRIMARY_MEASURE
    expected = {"query_id": "text or integers", "k": "integers (null for the whole ranking)", score: "numbers"}
    accepted = {
        "query_id": is_id_type,
        "k": lambda dtype: dtype.is_integer() or dtype == pl.Null,
        score: lambda dtype: dtype.is_numeric(),
    }
    for column, accepts in accepted.items():
        if column in table.columns and not accepts(table.schema[column]):
            example = table.get_column(column).drop_nulls().head(1).to_list()
            shown = f", e.g. {example[0]!r}" if example else ""
            raise InvalidInput(
                f"{where}: column {column!r} holds {table.schema[column]}{shown}; expected {expected[column]}"
            )
    casts = [pl.col(score).cast(pl.Float64)] if score in table.columns else []
    if "k" in table.columns:
        casts.append(pl.col("k").cast(pl.Int64))
    return table.with_columns(casts)


def read_manifest(folder: Path) -> dict[str, object]:
    """The ``manifest.json`` of an output folder as a mapping (empty when there is none)."""
    manifest = folder / MANIFEST
    if not manifest.is_file():
        return {}
    try:
        data = json.loads(manifest.read_text())
    except (OSError, ValueError) as error:
        raise InvalidInput(f"{manifest}: not readable JSON: {error}") from None
    return data if isinstance(data, dict) else {}


def read_list_weights(path: str) -> pl.DataFrame:
    """The list weights an output evaluated with ``--doc-weight-col`` holds beside its per-query
    table (a folder, or a file in it): ``query_id, weight, weight_<measure>...``."""
    folder = Path(path) if Path(path).is_dir() else Path(path).parent
    if not (folder / LIST_WEIGHTS).is_file():
        raise InvalidInput(
            f"{folder}: no {LIST_WEIGHTS} beside its per-query table, though it was evaluated with "
            "--doc-weight-col (an output of an ndcg before it wrote them, or one written in TREC text): "
            "evaluate it again with --out (Parquet)"
        )
    table = _read_parquet(folder / LIST_WEIGHTS)
    where = folder / LIST_WEIGHTS
    # what ndcg evaluate writes: NDCG's weight, one per relevance-weighted measure, scikit-learn AP's
    expected = ["weight", *(f"weight_{name}" for name in RELEVANCE_WEIGHTED_MEASURES), "weight_average_precision_score"]
    missing = [name for name in ["query_id", *expected] if name not in table.columns]
    if missing or any(not table.schema[name].is_numeric() for name in expected):
        raise InvalidInput(
            f"{where}: expected the columns query_id and {', '.join(expected)} (numbers), as ndcg evaluate writes "
            f"them; found {', '.join(f'{name} ({dtype})' for name, dtype in table.schema.items())}"
        )
    # a list weight is finite and >= 0, one per query: a file edited by hand is refused, never averaged
    weight = pl.col("weight_value")
    long = table.unpivot(index="query_id", on=expected, variable_name="column", value_name="weight_value")
    bad = long.with_columns(weight.cast(pl.Float64)).filter(
        weight.is_null() | weight.is_nan() | weight.is_infinite() | (weight < 0)
    )
    if bad.height:
        first = bad.row(0, named=True)
        raise InvalidInput(
            f"{where}: {bad.height} list weight(s) that are not a finite number >= 0, first in column "
            f"{first['column']!r}, query {first['query_id']!r}: {first['weight_value']}; evaluate the output again "
            "with --out rather than edit it"
        )
    repeated = table.filter(pl.col("query_id").is_duplicated())
    if repeated.height:
        raise InvalidInput(
            f"{where}: query {repeated['query_id'][0]!r} has {repeated.height} rows; one per query, as ndcg evaluate "
            "writes it: evaluate the output again with --out"
        )
    return check_types(table, str(where))


def read_conventions(path: str) -> dict[str, object] | None:
    """The conventions recorded beside an output (a folder, or a file in it): ``manifest.json``
    holding either a ``conventions`` (or ``evaluation``) object or the ``Evaluation.describe()``
    dict itself. None when nothing is recorded."""
    folder = Path(path) if Path(path).is_dir() else Path(path).parent
    return conventions_of(read_manifest(folder)) if (folder / MANIFEST).is_file() else None


def recorded_judgments(path: str) -> dict[str, object] | None:
    """The judgments recorded beside an evaluation output (a folder, or a file in it): the
    ``inputs.qrels`` record of its ``manifest.json`` (path, format, rows, identity, and a
    ``sha256`` of the content for local files). None when nothing is recorded."""
    folder = Path(path) if Path(path).is_dir() else Path(path).parent
    inputs = read_manifest(folder).get("inputs")
    record = inputs.get("qrels") if isinstance(inputs, dict) else None
    return dict(record) if isinstance(record, dict) else None


def conventions_of(data: object) -> dict[str, object] | None:
    """The conventions in a manifest, wherever the writer put them."""
    if not isinstance(data, dict):
        return None
    for key in ("conventions", "evaluation", "options"):  # options: the evaluation job's manifest
        if isinstance(data.get(key), dict):
            return dict(data[key])
    if "gain" in data and "discount" in data:
        return dict(data)
    return None


def output_partitions(path: str) -> list[Partition]:
    """The partitions of an evaluation output: its ``key=value`` folders, when it has no
    ``per_query.parquet`` of its own (empty for an unpartitioned output or a file)."""
    target = Path(path)
    if not target.is_dir() or (target / PER_QUERY).exists():
        return []
    return hive_partitions(str(target))


def evaluated_partitions(path: Path) -> list[Partition]:
    """The partition folders of an evaluation output that hold a per-query table."""
    return [p for p in output_partitions(str(path)) if (p.path(path) / PER_QUERY).exists()]


def with_partition_columns(table: pl.DataFrame, partition: Partition, where: str) -> pl.DataFrame:
    """The per-query table of one partition with its partition columns first (as text, as the
    job writes them): added when absent; when present they must hold the folder's value."""
    columns = []
    for key, value in partition.as_dict().items():
        if key in table.columns:
            found = table.get_column(key).cast(pl.String).unique().to_list()
            if found != [value] and table.height:
                raise InvalidInput(
                    f"{where}: column {key!r} holds {', '.join(map(repr, found[:3]))} in the folder {partition}; "
                    "a partition's table must hold its folder's value"
                )
        columns.append(pl.lit(value, dtype=pl.String).alias(key))
    keys = list(partition.as_dict())
    return table.select(*columns, pl.exclude(keys))
