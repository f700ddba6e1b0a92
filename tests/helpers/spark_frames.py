"""The sample run and qrels, and frames handed between Polars and Spark through Arrow."""

from __future__ import annotations

import polars as pl
import pyspark.sql as pyspark_sql

from tests.helpers import ROOT

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"


def to_spark(spark: pyspark_sql.SparkSession, frame: pl.LazyFrame) -> pyspark_sql.DataFrame:
    return spark.createDataFrame(frame.collect().to_arrow())


def to_polars(frame: pyspark_sql.DataFrame) -> pl.DataFrame:
    table = pl.from_arrow(frame.toArrow())
    assert isinstance(table, pl.DataFrame)
    return table
