"""Spark's side of the file system: listing, reading and publishing through Hadoop's FileSystem.

Local paths are listed by :mod:`pipeline.io.fs` itself; a cluster's file systems and object
stores (``hdfs://``, ``s3a://``) through :class:`HadoopFileSystem`, by the same rules, so Spark
reads the files the other engines would read. Outputs on those file systems are staged and
renamed into place by :func:`write_tables` (local outputs go through
:func:`pipeline.io.publish.publish`, as on every engine).

pyspark is imported inside the functions: this module is used only by the Spark engine.
"""

from __future__ import annotations

import glob
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipeline.errors import InvalidInput, UsageError
from pipeline.io import fs
from pipeline.io.location import Location, is_local, local_path
from pipeline.io.read import check_parquet_schemas, detect_format

if TYPE_CHECKING:
    import polars as pl
    from pyspark.sql import DataFrame, SparkSession


def is_frame(value: object) -> bool:
    """Whether ``value`` is a Spark DataFrame (without importing pyspark)."""
    return hasattr(value, "sparkSession") and hasattr(value, "createOrReplaceTempView")


def spark_format(path: str, format: str | None) -> str:
    """The format of a path on Spark: Parquet unless an extension or ``format`` says otherwise.

    Object-store URLs and extension-less paths are Parquet datasets (directories) there.

    >>> spark_format("s3a://logs/runs/", None)
    'parquet'
    >>> spark_format("run.txt", None)
    'trec'
    """
    if format:
        return format
    if not is_local(path) or not Path(path.rstrip("/*")).suffix:
        return "parquet"
    return detect_format(path)


def check_parquet_only(value: str | Sequence[str] | DataFrame, format: str | None) -> list[str]:
    """The paths of ``value`` (none for a DataFrame), each refused unless Spark reads it as
    Parquet (:func:`spark_format`: ``format``, or the name). Decided from the names alone, so
    that the Spark engine refuses a TREC or CSV input before its session starts."""
    if is_frame(value):
        return []
    paths = [value] if isinstance(value, str) else [str(path) for path in value]  # type: ignore[union-attr]
    for path in paths:
        chosen = spark_format(path, format)
        if chosen != "parquet":
            raise UsageError(
                f"{path}: the spark engine reads Parquet only (files, directories, globs, hive datasets), "
                f"not {chosen}; convert it to Parquet or use --engine polars or duckdb"
            )
    return paths


def read_parquet(
    spark: SparkSession, value: str | Sequence[str] | DataFrame, format: str | None, name: str
) -> DataFrame:
    """Spark reads the files of :func:`data_files`, never a folder: the other engines' rules
    decide which files are data (Spark's own listing would, e.g., read a folder's stray
    files), and the files of one dataset are checked to have the same columns."""
    if is_frame(value):
        return value  # type: ignore[return-value]
    paths = check_parquet_only(value, format)
    files = [file for path in paths for file in data_files(spark, path)]
    if all(is_local(file) for file in files):
        check_parquet_schemas([local_path(file) for file in files])
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import AnalysisException

    try:
        return _literal_reader(spark).parquet(*map(literal_path, files))
    except AnalysisException as error:
        message = str(error).splitlines()[0]
        raise InvalidInput(f"{name}: cannot read as Parquet: {message}") from None
    except Py4JJavaError as error:  # a file Spark cannot read at all, e.g. a corrupt footer
        message = str(error.java_exception.getMessage()).splitlines()[0]
        raise InvalidInput(f"{name}: cannot read as Parquet: {message}") from None


# Hadoop's glob characters (``GlobPattern``; what Spark's ``isGlobPath`` looks for)
_GLOB_CHARACTERS = frozenset("\\{}[]*?")


def literal_path(path: str) -> str:
    """``path`` as Spark reads it literally: Spark expands every path it is handed as a Hadoop
    glob, so ``run[1].parquet`` read ``run1.parquet`` and a partition ``dt=[1]`` read
    ``dt=1``; each glob character is escaped with a backslash, which Hadoop's globs read as
    the character itself.

    >>> literal_path("/data/dt=[1]/run{a,b}*.parquet")
    '/data/dt=\\\\[1\\\\]/run\\\\{a,b\\\\}\\\\*.parquet'
    """
    return "".join(f"\\{character}" if character in _GLOB_CHARACTERS else character for character in path)


def _literal_reader(spark: SparkSession) -> Any:
    """Spark's Parquet reader over local files without Hadoop's checksum layer (options of a
    read reach its Hadoop configuration only, not the session's): the checksum file system
    makes a ``.name.crc`` path beside each file it opens, which Hadoop cannot parse for a name
    holding ``:`` ("Relative path in absolute URI"), so such files were read by the other
    engines and refused by Spark. Checksum files are Hadoop's own (never written by the other
    engines' writers); the data files' own Parquet checks still apply."""
    return (
        spark.read.option("fs.file.impl", "org.apache.hadoop.fs.RawLocalFileSystem")
        # a file system made for this configuration, not the session's cached one
        .option("fs.file.impl.disable.cache", "true")
    )


def data_files(spark: SparkSession, path: str) -> list[str]:
    """The Parquet data files of ``path`` by :func:`pipeline.io.fs.data_files`: local paths
    listed as the other engines list them, URLs (``s3a://``, ``hdfs://``) through Hadoop's
    FileSystem by the same rules."""
    location = Location.of(path)
    if location.is_local:
        return fs.data_files(location.local_path, "parquet")
    return fs.data_files(path, "parquet", HadoopFileSystem(spark))


def hadoop_filesystem(spark: SparkSession, path: str) -> tuple[Any, Any]:
    """Hadoop's FileSystem for ``path`` and the path itself: local folders, HDFS and object
    stores (``s3a://``) are listed and renamed through the same API Spark writes with."""
    hadoop_path = spark._jvm.org.apache.hadoop.fs.Path(path)  # type: ignore[union-attr]
    return hadoop_path.getFileSystem(spark._jsc.hadoopConfiguration()), hadoop_path


class HadoopFileSystem:
    """:class:`pipeline.io.fs.FileSystem` over Hadoop's FileSystem API (HDFS, object stores)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark

    def kind(self, path: str) -> fs.Kind:
        filesystem, hadoop_path = hadoop_filesystem(self.spark, path)
        if not filesystem.exists(hadoop_path):
            return "missing"
        return self._kind(filesystem.getFileStatus(hadoop_path))

    def entries(self, folder: str) -> list[tuple[str, fs.Kind]]:
        filesystem, hadoop_path = hadoop_filesystem(self.spark, folder)
        statuses = filesystem.listStatus(hadoop_path)
        return sorted((status.getPath().getName(), self._kind(status)) for status in statuses)

    def glob(self, pattern: str) -> list[str] | None:
        if self.kind(pattern) != "missing" or not glob.has_magic(pattern):
            return None
        filesystem, hadoop_path = hadoop_filesystem(self.spark, pattern)
        return sorted(str(status.getPath()) for status in filesystem.globStatus(hadoop_path) or [])

    def missing(self, path: str) -> str:
        return "no such file or directory"

    @staticmethod
    def _kind(status: Any) -> fs.Kind:
        return "dir" if status.isDirectory() else "file" if status.isFile() else "other"


def write_tables(spark: SparkSession, out: str, tables: Sequence[tuple[str, Mapping[str, pl.DataFrame]]]) -> list[str]:
    """Write ``(relative folder, {name: table})`` under ``out`` on a cluster's file system
    (``s3a://``, ``hdfs://``), laid out as the job lays out local outputs:
    ``OUT/[key=value/]name.parquet``, each a folder holding one part file written by Spark
    (the tables are small: a row per query and cutoff).

    Everything is first written by Spark under one staging folder ``OUT/_ndcg_staging_*``
    (Spark's readers skip ``_`` names); only when every table is complete are the folders
    renamed into place, replacing earlier outputs of the same units. A failed job leaves the
    previous outputs as they were. (Renames are atomic on local disks and HDFS; object stores
    copy instead.)"""
    from pyspark.errors import PySparkException

    token = uuid.uuid4().hex[:12]
    root = out.rstrip("/")
    staging = f"{root}/_ndcg_staging_{token}"
    filesystem, staging_path = hadoop_filesystem(spark, staging)
    placements = []
    try:
        for folder, frames in tables:
            below = f"/{folder}" if folder else ""
            for name, frame in frames.items():
                staged, target = f"{staging}{below}/{name}.parquet", f"{root}{below}/{name}.parquet"
                try:
                    spark.createDataFrame(frame.to_arrow()).coalesce(1).write.mode("errorifexists").parquet(staged)
                except PySparkException as error:
                    raise UsageError(f"--out {target}: cannot write: {str(error).splitlines()[0]}") from None
                placements.append((staged, target))
        for staged, target in placements:
            _replace(spark, staged, target, token)
    finally:
        filesystem.delete(staging_path, True)
    return [target for _, target in placements]


def _replace(spark: SparkSession, staged: str, target: str, token: str) -> None:
    """Rename ``staged`` to ``target``; an existing ``target`` is moved aside first (Hadoop
    would move the new folder into it) and deleted once the new one is in place."""
    filesystem, target_path = hadoop_filesystem(spark, target)
    jvm_path = spark._jvm.org.apache.hadoop.fs.Path  # type: ignore[union-attr]
    staged_path = jvm_path(staged)
    filesystem.mkdirs(target_path.getParent())
    retired = None
    if filesystem.exists(target_path):
        retired = jvm_path(target_path.getParent(), f"_ndcg_retired_{target_path.getName()}_{token}")
        if not filesystem.rename(target_path, retired):
            raise UsageError(f"--out {target}: cannot move the previous output aside")
    if not filesystem.rename(staged_path, target_path):
        if retired is not None:
            filesystem.rename(retired, target_path)
        raise UsageError(f"--out {target}: cannot move the new output into place")
    if retired is not None:
        filesystem.delete(retired, True)
