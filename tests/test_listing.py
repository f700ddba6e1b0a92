"""``--partition`` lists only the chosen partitions' folders.

Listing a hive dataset walked every partition folder (one listing request each on an object
store: a thousand days took 70 to 99 s to evaluate one). A folder of a key the filters give
with another value is now not listed below; its name still tells which values the key has, for
the messages. Counted with a file system that counts its calls, and once through the job on
the tests' S3 server.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from pipeline.errors import PartitionNotFound
from pipeline.io import objects
from pipeline.io.fs import Kind
from pipeline.io.partitions import Partition, hive_partitions, judgments_partition, select_partitions
from pipeline.job import Job, run_job
from pipeline.registry import Evaluation
from tests.helpers import S3Bucket


class CountingFileSystem:
    """A dataset ``root/dt=0 .. dt=N-1[/locale=de|fr]/part-0.parquet`` in memory, counting calls."""

    def __init__(self, days: int, locales: tuple[str, ...] = ()) -> None:
        self.calls: Counter[str] = Counter()
        self.listed: list[str] = []
        self.folders: dict[str, list[tuple[str, Kind]]] = {"root": [(f"dt={day}", "dir") for day in range(days)]}
        for day in range(days):
            folder = f"root/dt={day}"
            if locales:
                self.folders[folder] = [(f"locale={locale}", "dir") for locale in locales]
                for locale in locales:
                    self.folders[f"{folder}/locale={locale}"] = [("part-0.parquet", "file")]
            else:
                self.folders[folder] = [("part-0.parquet", "file")]

    def kind(self, path: str) -> Kind:
        self.calls["kind"] += 1
        return "dir" if path in self.folders else "missing"

    def entries(self, folder: str) -> list[tuple[str, Kind]]:
        self.calls["entries"] += 1
        self.listed.append(folder)
        return self.folders[folder]

    def glob(self, pattern: str) -> list[str] | None:
        return None

    def missing(self, path: str) -> str:
        return "no such folder"


def test_an_exact_filter_lists_its_folder_only() -> None:
    filesystem = CountingFileSystem(1000)
    found = hive_partitions("root", filesystem, only={"dt": {"500"}})
    assert filesystem.listed == ["root", "root/dt=500"]
    assert select_partitions("root", {"dt": {"500"}}, found) == [Partition((("dt", "500"),))]
    # without filters every folder is listed, as before
    everything = CountingFileSystem(1000)
    assert len(hive_partitions("root", everything)) == 1000
    assert everything.calls["entries"] == 1001


def test_two_levels_and_two_values_list_the_chosen_branches_only() -> None:
    filesystem = CountingFileSystem(300, ("de", "fr"))
    filters = {"dt": {"7", "8"}, "locale": {"fr"}}
    chosen = select_partitions("root", filters, hive_partitions("root", filesystem, only=filters))
    assert chosen == [Partition((("dt", day), ("locale", "fr"))) for day in ("7", "8")]
    assert filesystem.listed == ["root", "root/dt=7", "root/dt=7/locale=fr", "root/dt=8", "root/dt=8/locale=fr"]
    # a filter on the inner key alone cannot skip the outer level: every day is listed, no locale=de
    inner = CountingFileSystem(300, ("de", "fr"))
    assert len(select_partitions("root", {"locale": {"fr"}}, hive_partitions("root", inner, only={"locale": {"fr"}})))
    assert inner.calls["entries"] == 1 + 300 + 300


def test_the_messages_still_name_the_values_found() -> None:
    filesystem = CountingFileSystem(1000)
    with pytest.raises(PartitionNotFound, match=r"partition dt=nope does not exist; dt has 1000 value\(s\)"):
        select_partitions("root", {"dt": {"nope"}}, hive_partitions("root", filesystem, only={"dt": {"nope"}}))
    assert filesystem.listed == ["root"]
    with pytest.raises(PartitionNotFound, match="no partition key 'day'; keys found: dt"):
        select_partitions("root", {"day": {"1"}}, hive_partitions("root", CountingFileSystem(3), only={"day": {"1"}}))


def test_judgments_listed_by_the_runs_chosen_values_keep_their_rules() -> None:
    """Judgments partitioned like the run are listed by the chosen partitions' values: the
    chosen day's folder is found, and a day missing from them is still an error (or the whole
    judgments with --missing-qrels-partition whole)."""
    qrels = CountingFileSystem(1000)
    chosen = Partition((("dt", "42"),))
    listed = hive_partitions("root", qrels, only={"dt": {"42"}})
    assert qrels.calls["entries"] == 2
    assert judgments_partition(chosen, "root", listed) == chosen
    missing = Partition((("dt", "4200"),))
    sparse = hive_partitions("root", CountingFileSystem(1000), only={"dt": {"4200"}})
    with pytest.raises(Exception, match="no dt=4200 for the run's partition dt=4200"):
        judgments_partition(missing, "root", sparse)
    assert judgments_partition(missing, "root", sparse, "whole") is None


RUN = pl.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
QRELS = pl.DataFrame({"query_id": ["q1"], "doc_id": ["b"], "relevance": [1]})


@pytest.mark.timeout(600)
def test_the_job_lists_only_the_chosen_folder_in_a_bucket(
    tmp_path: Path, s3_bucket: S3Bucket, monkeypatch: pytest.MonkeyPatch
) -> None:
    days = 300
    run_file = tmp_path / "part-0.parquet"
    RUN.write_parquet(run_file)
    body = run_file.read_bytes()
    for day in range(days):
        s3_bucket.put(f"runs/dt={day}/part-0.parquet", body)
    qrels = tmp_path / "qrels.parquet"
    QRELS.write_parquet(qrels)
    listed: list[str] = []
    original = objects.ObjectStore.entries

    def entries(self: objects.ObjectStore, folder: str) -> Any:
        listed.append(folder)
        return original(self, folder)

    monkeypatch.setattr(objects.ObjectStore, "entries", entries)
    job = Job(run=s3_bucket.url("runs"), qrels=str(qrels), evaluation=Evaluation(), partition_filters={"dt": {"123"}})
    (unit,) = run_job(job)
    assert unit.partition == Partition((("dt", "123"),))
    # b, the one relevant document, ranked second: NDCG = (1/log2(3)) / 1
    ndcg = unit.per_query.filter(pl.col("k").is_null())["ndcg"].item()
    assert ndcg == pytest.approx(1 / 1.584962500721156, abs=1e-12)
    # the root once to find the days, then only dt=123 (by the listing, the reading, the identities)
    assert set(listed) == {s3_bucket.url("runs"), s3_bucket.url("runs/dt=123")}
    assert listed.count(s3_bucket.url("runs")) == 1
