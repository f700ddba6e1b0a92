"""Where an input or an output is, decided once from the text the user gave: the ground floor of
:mod:`pipeline.io`, which imports nothing of ours (the standard library only), so that every
other module of the package can stand on it.

A :class:`Location` is one of three stores, told from the text alone (no file system is asked):

- **local**: a path on this machine's disks, or a ``file:`` URL (:attr:`Location.local_path`
  drops the scheme);
- **object store**: ``s3://``, ``gs://``, ``gcs://``, ``az://``, ``abfs[s]://``, ``hf://``
  (:data:`OBJECT_STORE_SCHEMES`), which the Polars and DuckDB engines read (Polars reads the
  files, ``pyarrow.fs`` lists and writes them: :mod:`pipeline.io.objects`);
- **Hadoop**: any other URL (``s3a://``, ``hdfs://``, ``abfs`` through Hadoop's connectors),
  read and written by the Spark engine through Hadoop's FileSystem (:mod:`pipeline.io.hadoop`).

A Delta table is a folder of the first two holding :data:`DELTA_LOG`; telling one takes a look
at the store, which :func:`pipeline.io.delta.is_table` takes. An input found to be one is a
:class:`~pipeline.io.read.Source` of format ``delta``, and its location says so
(:attr:`Location.delta_table`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlparse

Store = Literal["local", "object_store", "hadoop"]

# Object stores the Polars and DuckDB engines read and write themselves (Polars reads them,
# pyarrow.fs lists and writes them); s3a:// and hdfs:// are Hadoop's, read by the Spark engine.
OBJECT_STORE_SCHEMES = ("s3", "gs", "gcs", "az", "abfs", "abfss", "hf")
LOCAL_SCHEMES = ("", "file")
# the folder inside a Delta table's folder that makes it a table
DELTA_LOG = "_delta_log"


@dataclass(frozen=True)
class Location:
    """A path or URL as given (``text``), with its store and scheme (lower case; ``""`` for a
    plain path) decided once."""

    text: str
    store: Store
    scheme: str
    delta_table: bool = False

    @classmethod
    def of(cls, path: str | os.PathLike[str] | Location, *, delta_table: bool = False) -> Location:
        """The location of ``path`` (a location given is returned as it is, or marked a Delta
        table when ``delta_table``)."""
        if isinstance(path, Location):
            return cls(path.text, path.store, path.scheme, delta_table) if delta_table else path
        text = os.fspath(path)
        scheme = urlparse(text).scheme.lower()
        if scheme in LOCAL_SCHEMES:
            store: Store = "local"
        elif scheme in OBJECT_STORE_SCHEMES:
            store = "object_store"
        else:
            store = "hadoop"
        return cls(text, store, scheme, delta_table)

    @property
    def is_local(self) -> bool:
        """On this machine's disks (a path, or a ``file:`` URL)."""
        return self.store == "local"

    @property
    def is_object_store(self) -> bool:
        """An object-store URL the Polars and DuckDB engines read (:data:`OBJECT_STORE_SCHEMES`)."""
        return self.store == "object_store"

    @property
    def is_hadoop(self) -> bool:
        """A URL read through Hadoop's FileSystem by the Spark engine (``s3a://``, ``hdfs://``)."""
        return self.store == "hadoop"

    @property
    def local_path(self) -> str:
        """The path on this machine of a local location (a ``file:`` URL loses its scheme)."""
        return urlparse(self.text).path if self.scheme == "file" else self.text

    def __str__(self) -> str:
        return self.text


def is_local(path: str | os.PathLike[str] | Location) -> bool:
    """Whether ``path`` is on this machine's disks (a path, or a ``file:`` URL), not on a
    cluster's file system or an object store (``hdfs://``, ``s3a://``, ``s3://``)."""
    return Location.of(path).is_local


def is_object_store(path: str | os.PathLike[str] | Location) -> bool:
    """Whether ``path`` is an object-store URL the Polars and DuckDB engines read
    (``s3://``, ``gs://``, ``az://``, ``abfs[s]://``, ``hf://``)."""
    return Location.of(path).is_object_store


def is_hadoop(path: str | os.PathLike[str] | Location) -> bool:
    """Whether ``path`` is a URL only the Spark engine reads, through Hadoop (``s3a://``, ``hdfs://``)."""
    return Location.of(path).is_hadoop


def local_path(path: str | os.PathLike[str] | Location) -> str:
    """A local path of ``path`` (a ``file:`` URL loses its scheme).

    >>> local_path("file:///data/run.parquet")
    '/data/run.parquet'
    >>> local_path("runs/part-0.parquet")
    'runs/part-0.parquet'
    """
    return Location.of(path).local_path
