"""The scheduled batch job: config files, partitions, groups, atomic outputs, exit codes,
logging. Through the real CLI (subprocess) and the Python API, on a small hive-partitioned
dataset built here."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from pipeline import Evaluation, per_query
from pipeline.errors import NothingToEvaluate
from pipeline.io.identity import identify
from pipeline.job import Job, run_job, run_jobs
from tests.helpers import ROOT, as_table, assert_tables_close, run_cli, settle

pytestmark = pytest.mark.local_engines("the command line in a subprocess (Spark's jobs: tests/test_spark.py)")

RUN, QRELS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet"
DAYS = ("2026-11-19", "2026-11-20", "2026-11-21")


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    """The sample run as three days of hive-partitioned logs (same query ids every day, as in
    real logs, with the scores perturbed per day), judgments unpartitioned."""
    run = pl.read_parquet(RUN)
    for offset, day in enumerate(DAYS):
        folder = tmp_path / "runs" / f"dt={day}"
        folder.mkdir(parents=True)
        shifted = run.with_columns(score=(pl.col("score") * (offset + 1)) % 7)
        shifted.write_parquet(folder / "part-0.parquet")
    settle(tmp_path / "runs")
    return tmp_path


def day_run(logs: Path, day: str) -> Path:
    return logs / "runs" / f"dt={day}" / "part-0.parquet"


def test_partition_is_evaluated_alone_and_keeps_its_column(logs: Path, engine: str) -> None:
    out = logs / "out"
    result = run_cli(
        "evaluate",
        "--run",
        logs / "runs",
        "--qrels",
        QRELS,
        "--partition",
        f"dt={DAYS[1]}",
        "--k",
        "10",
        "--out",
        out,
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == [f"dt={DAYS[1]}"]
    folder = out / f"dt={DAYS[1]}"
    assert sorted(p.name for p in folder.iterdir()) == [
        "_SUCCESS",
        "manifest.json",
        "per_query.parquet",
        "summary.parquet",
    ]
    table = pl.read_parquet(folder / "per_query.parquet")
    assert table["dt"].unique().to_list() == [DAYS[1]]
    alone = per_query(day_run(logs, DAYS[1]), QRELS, evaluation=Evaluation(cutoffs=(10,))).collect()
    assert_tables_close(as_table(table.drop("dt")), as_table(alone))
    assert pl.read_parquet(folder / "summary.parquet")["dt"].unique().to_list() == [DAYS[1]]


def test_unrequested_partitions_are_not_read(logs: Path, engine: str) -> None:
    (logs / "runs" / f"dt={DAYS[0]}" / "part-0.parquet").write_bytes(b"PAR1 not parquet at all PAR1")
    (logs / "runs" / "dt=2026-11-22").mkdir()
    (logs / "runs" / "dt=2026-11-22" / "part-0.parquet").write_bytes(b"garbage")
    result = run_cli(
        "evaluate",
        "--run",
        logs / "runs",
        "--qrels",
        QRELS,
        "--partition",
        f"dt={DAYS[2]}",
        "--out",
        logs / "out",
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    # without --partition every partition is read, and the corrupt one is reported
    result = run_cli("evaluate", "--run", logs / "runs", "--qrels", QRELS, "--engine", engine)
    assert result.returncode == 3
    assert f"dt={DAYS[0]}" in result.stderr


def test_missing_partition_exits_4(logs: Path) -> None:
    result = run_cli("evaluate", "--run", logs / "runs", "--qrels", QRELS, "--partition", "dt=1999-01-01")
    assert result.returncode == 4
    assert "dt=1999-01-01 does not exist" in result.stderr
    result = run_cli("evaluate", "--run", logs / "runs", "--qrels", QRELS, "--partition", "region=eu")
    assert result.returncode == 4
    assert "no partition key 'region'" in result.stderr
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--partition", "dt=2026-11-21")
    assert result.returncode == 4


def test_partitioned_judgments_follow_the_run(logs: Path) -> None:
    qrels = pl.read_parquet(QRELS)
    for day in DAYS:
        folder = logs / "qrels" / f"dt={day}"
        folder.mkdir(parents=True)
        # each day judged differently: the day's judgments must be the ones used
        qrels.with_columns(relevance=(pl.col("relevance") + DAYS.index(day)) % 4).write_parquet(folder / "q.parquet")
    units = run_job(
        Job(
            run=str(logs / "runs"),
            qrels=str(logs / "qrels"),
            evaluation=Evaluation(cutoffs=(5,)),
            partition_filters={"dt": {DAYS[2]}},
        )
    )
    assert len(units) == 1
    expected = per_query(
        day_run(logs, DAYS[2]), logs / "qrels" / f"dt={DAYS[2]}" / "q.parquet", evaluation=Evaluation(cutoffs=(5,))
    ).collect()
    assert_tables_close(as_table(units[0].per_query.drop("dt")), as_table(expected))


def test_group_by_equals_evaluating_each_group_alone(tmp_path: Path, engine: str) -> None:
    out = tmp_path / "out"
    result = run_cli(
        "evaluate",
        "--run",
        RUN,
        "--qrels",
        QRELS,
        "--k",
        "5,10",
        "--group-by",
        "locale",
        "--out",
        out,
        "--engine",
        engine,
    )
    assert result.returncode == 0, result.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    run = pl.read_parquet(RUN)
    for locale in run["locale"].unique().to_list():
        alone = per_query(run.filter(pl.col("locale") == locale).lazy(), QRELS, evaluation=Evaluation(cutoffs=(5, 10)))
        alone_means = alone.collect().group_by("k").agg(pl.col("ndcg").mean(), pl.len().alias("queries"))
        ours = summary.filter(pl.col("locale") == locale)
        joined = ours.join(alone_means, on="k", nulls_equal=True)
        assert joined.height == 3
        assert (joined["ndcg"] - joined["ndcg_right"]).abs().max() < 1e-12
        assert (joined["queries"] == joined["queries_right"]).all()
    overall = summary.filter(pl.col("locale").is_null())
    assert overall["queries"].to_list() == [40, 40, 40]
    assert pl.read_parquet(out / "per_query.parquet").columns[:2] == ["query_id", "locale"]


def test_group_by_from_query_attributes(tmp_path: Path) -> None:
    attributes = tmp_path / "attributes.csv"
    pl.DataFrame({"query_id": [f"q{i:03d}" for i in range(1, 44)], "segment": ["head"] * 10 + ["tail"] * 33}).write_csv(
        attributes
    )
    result = run_cli(
        "evaluate",
        "--run",
        RUN,
        "--qrels",
        QRELS,
        "--group-by",
        "segment",
        "--query-attributes",
        attributes,
        "--json",
        "--k",
        "10",
    )
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["summary"]
    counts = {(row["segment"], row["k"]): row["queries"] for row in rows}
    assert counts[("head", 10)] == 10 and counts[("tail", 10)] == 30 and counts[(None, 10)] == 40


def test_query_in_two_groups_is_an_error(tmp_path: Path) -> None:
    run = pl.read_parquet(RUN)
    first = run["query_id"].sort()[0]
    run = run.with_columns(
        locale=pl.when((pl.col("query_id") == first) & (pl.int_range(pl.len()) % 2 == 0))
        .then(pl.lit("xx-XX"))
        .otherwise("locale")
    )
    run.write_parquet(tmp_path / "run.parquet")
    result = run_cli("evaluate", "--run", tmp_path / "run.parquet", "--qrels", QRELS, "--group-by", "locale")
    assert result.returncode == 3
    assert first in result.stderr and "more than one group" in result.stderr


def test_config_file_and_flags_override_it(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(f'run = "{RUN}"\nqrels = "{QRELS}"\nk = [3, 7]\nall-queries = true\ngain = "exponential"\n')
    by_config = run_cli("evaluate", "--config", config, "--json")
    assert by_config.returncode == 0, by_config.stderr
    payload = json.loads(by_config.stdout)
    assert payload["conventions"]["cutoffs"] == [3, 7]
    assert payload["conventions"]["gain"] == "exponential"
    assert {row["queries"] for row in payload["summary"]} == {43}
    overridden = run_cli("evaluate", "--config", config, "--k", "2", "--json")
    assert json.loads(overridden.stdout)["conventions"]["cutoffs"] == [2]
    printed = run_cli("evaluate", "--config", config, "--gain", "linear", "--print-config")
    resolved = json.loads(printed.stdout)
    assert resolved["k"] == "3,7" and resolved["gain"] == "linear" and resolved["all_queries"] is True


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cutofs = [5]\n", "unknown key 'cutofs'"),
        ("all-querys = true\n", "did you mean 'all-queries'"),
        ('all-queries = "yes"\n', "must be true or false"),
        ('engine = "spark2"\n', "must be one of"),
        ("max-results = 0\n", "positive integer"),
        ("k = [5, \n", "not valid TOML"),
    ],
)
def test_config_errors_exit_2_naming_the_key(tmp_path: Path, text: str, message: str) -> None:
    config = tmp_path / "eval.toml"
    config.write_text(f'run = "{RUN}"\n' + text)
    result = run_cli("evaluate", "--config", config)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_missing_config_and_missing_run_are_usage_errors(tmp_path: Path) -> None:
    assert run_cli("evaluate", "--config", tmp_path / "none.toml").returncode == 2
    result = run_cli("evaluate", "--qrels", QRELS)
    assert result.returncode == 2 and "no run given" in result.stderr


def test_rerun_is_idempotent_and_leaves_other_partitions_alone(logs: Path, engine: str) -> None:
    out = logs / "out"
    common = ["--run", logs / "runs", "--qrels", QRELS, "--out", out, "--engine", engine]
    assert run_cli("evaluate", *common).returncode == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    untouched_mtime = (out / f"dt={DAYS[0]}" / "per_query.parquet").stat().st_mtime_ns
    time.sleep(1.1)  # so that a rewrite would show in the manifest's timestamps
    assert run_cli("evaluate", *common, "--partition", f"dt={DAYS[1]}").returncode == 0
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert set(before) == set(after)
    for path, data in before.items():
        if path.name == "manifest.json":
            old, new = json.loads(data), json.loads(after[path])
            for stamp in ("started_at", "finished_at"):
                old.pop(stamp), new.pop(stamp)
            assert old == new
        else:
            assert data == after[path], path
    assert (out / f"dt={DAYS[0]}" / "per_query.parquet").stat().st_mtime_ns == untouched_mtime


def test_manifest_records_what_was_evaluated(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--out", out, "--all-queries").returncode == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["inputs"]["run"] == {
        "path": str(RUN),
        "format": "parquet",
        "rows": pl.read_parquet(RUN).height,
        "identity": identify(str(RUN)),  # what --skip-unchanged compares
    }
    assert manifest["inputs"]["qrels"]["rows"] == pl.read_parquet(QRELS).height
    assert manifest["queries"] == {
        "evaluated": 43,
        "only_in_run_not_evaluated": 0,
        "only_in_qrels": 3,
        "zero_filled": 3,
        "skipped": 0,
    }
    assert manifest["options"]["all_queries"] is True
    assert {"polars", "duckdb", "python", "ndcg-pipeline"} <= set(manifest["versions"])
    assert manifest["started_at"] <= manifest["finished_at"]
    assert any("relevant" in str(w) for w in manifest["warnings"])
    assert (out / "_SUCCESS").exists()


@pytest.mark.parametrize("out_format", ["csv", "jsonl", "trec"])
def test_output_formats(tmp_path: Path, out_format: str) -> None:
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "10", "--out", out, "--out-format", out_format)
    assert result.returncode == 0, result.stderr
    expected = per_query(RUN, QRELS, evaluation=Evaluation(cutoffs=(10,))).collect()
    path = out / f"per_query.{out_format}"
    if out_format == "csv":
        table = pl.read_csv(path)
    elif out_format == "jsonl":
        table = pl.read_ndjson(path)
    else:
        lines = [line.split("\t") for line in path.read_text().splitlines()]
        ndcg = {(q, None if m.strip() == "ndcg" else int(m.strip().rsplit("_", 1)[1])): float(v) for m, q, v in lines}
        assert ndcg == pytest.approx({key: values[3] for key, values in as_table(expected).items()}, abs=1e-4)
        summary = (out / "summary.trec").read_text().splitlines()
        assert [line.split("\t")[0].strip() for line in summary] == ["ndcg", "ndcg_cut_10"]
        return
    assert_tables_close(as_table(table), as_table(expected))
    assert (out / f"summary.{out_format}").exists()


def test_json_logs_and_json_summary(tmp_path: Path) -> None:
    result = run_cli(
        "evaluate",
        "--run",
        RUN,
        "--qrels",
        QRELS,
        "--out",
        tmp_path / "out",
        "--json",
        "--log-level",
        "info",
        "--log-format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)  # exactly one JSON object on stdout
    assert payload["summary"][0]["k"] is None
    records = [json.loads(line) for line in result.stderr.splitlines()]
    assert {"time", "level", "message"} <= set(records[0])
    assert any(r["message"] == "wrote outputs" for r in records)
    assert any(r["level"] == "warning" for r in records)


def test_nothing_to_evaluate_writes_nothing(tmp_path: Path) -> None:
    pl.DataFrame({"query_id": ["elsewhere"], "doc_id": ["d"], "relevance": [1]}).write_parquet(tmp_path / "q.parquet")
    result = run_cli("evaluate", "--run", RUN, "--qrels", tmp_path / "q.parquet", "--out", tmp_path / "out")
    assert result.returncode == 5
    assert not (tmp_path / "out").exists()


def test_jobs_evaluated_together_write_nothing_when_one_fails(tmp_path: Path) -> None:
    """run_jobs (compare's runs): the first job's units are good, the second's run shares no
    query with the judgments; every job is checked before any is written, so neither writes."""
    elsewhere = tmp_path / "elsewhere.parquet"
    pl.read_parquet(RUN).with_columns(pl.lit("elsewhere").alias("query_id")).unique("doc_id").write_parquet(elsewhere)
    first = Job(run=str(RUN), qrels=str(QRELS), evaluation=Evaluation(cutoffs=(5,)), out=str(tmp_path / "a"))
    second = replace(first, run=str(elsewhere), out=str(tmp_path / "b"))
    with pytest.raises(NothingToEvaluate, match=r"elsewhere\.parquet"):
        run_jobs([first, second])
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    # each alone: the first evaluates and writes what run_job writes for it
    (units,) = run_jobs([first])
    alone = per_query(RUN, QRELS, evaluation=Evaluation(cutoffs=(5,))).collect()
    assert_tables_close(as_table(units[0].per_query), as_table(alone))
    assert (tmp_path / "a" / "_SUCCESS").exists()


def _text(path: Path) -> str:
    """A file's text, or "" when it is gone: the job may be swapping its folder right now."""
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def test_kill_mid_write_leaves_previous_outputs_intact(tmp_path: Path) -> None:
    """SIGKILL the job the moment it starts writing; every partition folder must then hold a
    whole output, the old one or the new one, never a mix and never a half-written file."""
    # 10,000 queries of 4 results per partition: each partition's files take long enough to write
    # that the kill lands in one (every kill of 9 did at 7,500 on a busy machine); 30,000 made each
    # of the four runs evaluate 8 partitions of 120,000 rows before writing any (20 s of the 33 s)
    rows = 10_000 * 4
    run = pl.DataFrame({"i": pl.int_range(rows, eager=True)}).select(
        query_id=pl.format("q{}", pl.col("i") // 4),
        doc_id=pl.format("d{}", pl.col("i") % 4),
        score=(pl.col("i") % 7).cast(pl.Float64),
    )
    qrels = run.select("query_id", "doc_id", relevance=(pl.int_range(pl.len()) % 3).cast(pl.Int64))
    qrels.write_parquet(tmp_path / "qrels.parquet")
    for day in range(8):
        folder = tmp_path / "runs" / f"dt={day}"
        folder.mkdir(parents=True)
        run.write_parquet(folder / "part.parquet")
    out = tmp_path / "out"
    base = [
        sys.executable,
        "-m",
        "pipeline",
        "evaluate",
        "--run",
        str(tmp_path / "runs"),
        "--qrels",
        str(tmp_path / "qrels.parquet"),
        "--out",
        str(out),
        "--warn-results-over",
        "0",
    ]
    assert subprocess.run([*base, "--k", "10"], cwd=ROOT, capture_output=True).returncode == 0
    killed = 0
    for attempt in range(3):
        process = subprocess.Popen([*base, "--k", "5"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        written = 0
        while process.poll() is None and time.monotonic() < deadline:
            # the manifests are read only while a folder is staged (the only moment a kill is sent)
            staging = any(name.startswith(".staging-") for name in os.listdir(out))
            manifests = out.glob("dt=*/manifest.json") if staging else ()
            done = sum(1 for p in manifests if '"cutoffs": [\n      5' in _text(p))
            if staging and done >= attempt * 2:
                os.kill(process.pid, signal.SIGKILL)
                written = done
                break
            time.sleep(0.0005)
        killed += process.wait() == -signal.SIGKILL
        for folder in sorted(out.glob("dt=*")):
            names = sorted(p.name for p in folder.iterdir())
            assert names == ["_SUCCESS", "manifest.json", "per_query.parquet", "summary.parquet"], (folder, names)
            ks = set(pl.read_parquet(folder / "per_query.parquet")["k"].drop_nulls().to_list())
            summary_ks = set(pl.read_parquet(folder / "summary.parquet")["k"].drop_nulls().to_list())
            manifest_ks = set(json.loads((folder / "manifest.json").read_text())["options"]["cutoffs"])
            assert ks == summary_ks == manifest_ks and ks in ({5}, {10}), (folder, ks, summary_ks, manifest_ks)
        assert len(list(out.glob("dt=*"))) == 8
        assert written >= 0
    assert killed, "no kill landed while a folder was staged: the test did not test what it says"


def test_swap_exchanges_folders_in_one_step(tmp_path: Path) -> None:
    from pipeline.job import _exchange

    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "per_query.parquet").write_text("new")
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "per_query.parquet").write_text("old")
    if not _exchange(tmp_path / "new", tmp_path / "old"):
        pytest.skip("no atomic exchange of folders here (renameat2 RENAME_EXCHANGE)")
    assert (tmp_path / "old" / "per_query.parquet").read_text() == "new"
    assert (tmp_path / "new" / "per_query.parquet").read_text() == "old"
