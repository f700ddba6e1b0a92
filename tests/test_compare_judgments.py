"""`ndcg compare` across judgments: outputs scored against different judgments (another qrels
file, another version of a Delta table, objects rewritten in a bucket, a day judged again) are
refused (exit 2, naming both sources) unless --allow-different-judgments; outputs scored against
the same judgments, wherever the file was copied, compare silently; what cannot be told is
warned about; different query sets are warned about; the trend report marks the partitions whose
judgments differ. Everything through the real command line, on evaluate's own outputs."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import S3Bucket, run_cli, settle

FAST = ("--permutations", "200", "--bootstrap", "200", "--k", "10")
QUERIES = [f"q{i}" for i in range(8)]
# every query: a relevant d1 and an irrelevant d2 (and, re-judged, d2 relevant too)
JUDGED = pl.DataFrame({"query_id": QUERIES * 2, "doc_id": ["d1"] * 8 + ["d2"] * 8, "relevance": [1] * 8 + [0] * 8})
REJUDGED = JUDGED.with_columns(relevance=pl.lit(1, dtype=pl.Int64))


def write_runs(folder: Path, queries: list[str] = QUERIES) -> tuple[Path, Path]:
    """Two runs over ``queries``: ``a`` ranks d1 first, ``b`` d2 first."""
    paths = []
    for name, (s1, s2) in {"a": (2.0, 1.0), "b": (1.0, 2.0)}.items():
        path = folder / f"run_{name}.parquet"
        n = len(queries)
        pl.DataFrame(
            {"query_id": queries * 2, "doc_id": ["d1"] * n + ["d2"] * n, "score": [s1] * n + [s2] * n}
        ).write_parquet(path)
        paths.append(path)
    return paths[0], paths[1]


def evaluate(run: Path, qrels: object, out: Path, *flags: str) -> Path:
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "10", "--out", out, *flags)
    assert result.returncode == 0, result.stderr
    return out


def compare(a: Path, b: Path, *flags: object) -> object:
    return run_cli("compare", "--baseline", a, "--candidate", b, *FAST, *flags)


def test_local_judgments_other_content_refused_a_copy_accepted(tmp_path: Path) -> None:
    run_a, run_b = write_runs(tmp_path)
    qrels, copy, rejudged = (
        tmp_path / "qrels.parquet",
        tmp_path / "elsewhere" / "qrels.parquet",
        tmp_path / "v2.parquet",
    )
    JUDGED.write_parquet(qrels)
    copy.parent.mkdir()
    shutil.copy(qrels, copy)  # the same bytes at another path (another inode, another mtime)
    REJUDGED.write_parquet(rejudged)
    a = evaluate(run_a, qrels, tmp_path / "a")
    b_same = evaluate(run_b, copy, tmp_path / "b_same")
    b_other = evaluate(run_b, rejudged, tmp_path / "b_other")
    # the evaluate manifest records the judgments' content digest: sha256 of the file's bytes
    recorded = json.loads((a / "manifest.json").read_text())["inputs"]["qrels"]
    assert recorded["sha256"] == "sha256:" + hashlib.sha256(qrels.read_bytes()).hexdigest()

    same = compare(a, b_same)
    assert same.returncode == 0, same.stderr
    assert "judgments" not in same.stderr

    refused = compare(a, b_other, "--out", tmp_path / "cmp")
    assert refused.returncode == 2, refused.stderr
    assert "scored against different judgments" in refused.stderr and "Traceback" not in refused.stderr
    digest_a = "sha256:" + hashlib.sha256(qrels.read_bytes()).hexdigest()[:12]
    digest_b = "sha256:" + hashlib.sha256(rejudged.read_bytes()).hexdigest()[:12]
    assert f"a: {qrels} ({digest_a})" in refused.stderr and f"b_other: {rejudged} ({digest_b})" in refused.stderr
    assert "--allow-different-judgments" in refused.stderr
    assert not (tmp_path / "cmp").exists()

    allowed = compare(a, b_other, "--allow-different-judgments", "--out", tmp_path / "cmp", "--json")
    assert allowed.returncode == 0, allowed.stderr
    assert "comparing systems scored against different judgments" in allowed.stderr
    [difference] = json.loads((tmp_path / "cmp" / "manifest.json").read_text())["judgments"]["differences"]
    assert difference["systems"] == ["a", "b_other"] and difference["reason"] == "content digest differs"
    assert json.loads(allowed.stdout)["judgments"]["differences"] == [difference]


def test_a_manifest_without_a_digest_compares_by_identity_and_warns_when_it_cannot_tell(tmp_path: Path) -> None:
    """Manifests of an earlier version record the identity of local judgments, no digest: the
    same file untouched is the same judgments; two files of one size cannot be told apart
    without their bytes: warned, not refused; files of other sizes are other judgments."""
    run_a, run_b = write_runs(tmp_path)
    qrels, copy = tmp_path / "qrels.parquet", tmp_path / "copy.parquet"
    JUDGED.write_parquet(qrels)
    shutil.copy(qrels, copy)
    settle(qrels, copy)
    a, b = evaluate(run_a, qrels, tmp_path / "a"), evaluate(run_b, copy, tmp_path / "b")
    b_same = evaluate(run_b, qrels, tmp_path / "b_same")
    for output in (a, b, b_same):
        manifest = json.loads((output / "manifest.json").read_text())
        del manifest["inputs"]["qrels"]["sha256"]
        (output / "manifest.json").write_text(json.dumps(manifest))
    untouched = compare(a, b_same)
    assert untouched.returncode == 0 and "judgments" not in untouched.stderr, untouched.stderr
    unknown = compare(a, b)
    assert unknown.returncode == 0, unknown.stderr
    assert "cannot tell whether the systems were scored against the same judgments" in unknown.stderr
    assert "without a content digest" in unknown.stderr
    bigger = tmp_path / "bigger.parquet"
    extra = pl.DataFrame({"query_id": QUERIES, "doc_id": ["d3"] * 8, "relevance": [0] * 8})
    pl.concat([JUDGED, extra]).write_parquet(bigger)
    c = evaluate(run_b, bigger, tmp_path / "c")
    manifest = json.loads((c / "manifest.json").read_text())
    del manifest["inputs"]["qrels"]["sha256"]
    (c / "manifest.json").write_text(json.dumps(manifest))
    other = compare(a, c)
    assert other.returncode == 2 and "files of other sizes" in other.stderr, other.stderr


def test_delta_versions_of_the_judgments_are_other_judgments(tmp_path: Path) -> None:
    deltalake = pytest.importorskip("deltalake")
    run_a, run_b = write_runs(tmp_path)
    table = tmp_path / "qrels_table"
    deltalake.write_deltalake(str(table), JUDGED.to_arrow())
    deltalake.write_deltalake(str(table), REJUDGED.to_arrow(), mode="overwrite")  # version 1: judged again
    a = evaluate(run_a, table, tmp_path / "a", "--qrels-version", "0")
    b_old = evaluate(run_b, table, tmp_path / "b_old", "--qrels-version", "0")
    b_new = evaluate(run_b, table, tmp_path / "b_new")  # the current version, 1
    assert compare(a, b_old).returncode == 0
    refused = compare(a, b_new)
    assert refused.returncode == 2, refused.stderr
    assert f"a: {table} (Delta version 0), b_new: {table} (Delta version 1)" in refused.stderr
    assert "version 0 vs 1 of the Delta table" in refused.stderr


def test_objects_rewritten_in_a_bucket_are_other_judgments(tmp_path: Path, s3_bucket: S3Bucket) -> None:
    run_a, run_b = write_runs(tmp_path)
    JUDGED.write_parquet(tmp_path / "v1.parquet")
    REJUDGED.write_parquet(tmp_path / "v2.parquet")
    s3_bucket.put("judged/qrels.parquet", tmp_path / "v1.parquet")
    s3_bucket.put("copy/qrels.parquet", tmp_path / "v1.parquet")
    url = s3_bucket.url("judged/qrels.parquet")
    a = evaluate(run_a, url, tmp_path / "a")
    b_copy = evaluate(run_b, s3_bucket.url("copy/qrels.parquet"), tmp_path / "b_copy")  # same bytes, same ETag
    s3_bucket.put("judged/qrels.parquet", tmp_path / "v2.parquet")  # rewritten in place: a new ETag
    b_new = evaluate(run_b, url, tmp_path / "b_new")
    same = compare(a, b_copy)
    assert same.returncode == 0 and "judgments" not in same.stderr, same.stderr
    refused = compare(a, b_new)
    assert refused.returncode == 2, refused.stderr
    assert f"a: {url} (ETag" in refused.stderr and f"b_new: {url} (ETag" in refused.stderr
    assert "ETags differ" in refused.stderr


def test_runs_scored_here_share_their_judgments_recorded(tmp_path: Path) -> None:
    run_a, run_b = write_runs(tmp_path)
    JUDGED.write_parquet(tmp_path / "qrels.parquet")
    out = tmp_path / "cmp"
    result = run_cli("compare", "--run", run_a, "--run", run_b, "--qrels", tmp_path / "qrels.parquet", *FAST,
                     "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    judgments = json.loads((out / "manifest.json").read_text())["judgments"]
    assert judgments["differences"] == []
    expected = "sha256:" + hashlib.sha256((tmp_path / "qrels.parquet").read_bytes()).hexdigest()
    assert judgments["shared"]["path"] == str(tmp_path / "qrels.parquet") and judgments["shared"]["sha256"] == expected


def test_different_query_sets_are_warned(tmp_path: Path) -> None:
    run_a, _ = write_runs(tmp_path)
    (tmp_path / "fewer").mkdir()
    _, run_b = write_runs(tmp_path / "fewer", QUERIES[:5])
    JUDGED.write_parquet(tmp_path / "qrels.parquet")
    a = evaluate(run_a, tmp_path / "qrels.parquet", tmp_path / "a")
    b = evaluate(run_b, tmp_path / "qrels.parquet", tmp_path / "b")
    result = compare(a, b)
    assert result.returncode == 0, result.stderr
    assert "a and b were evaluated on different query sets: 3 only in a (q5, q6, q7); compared on the queries" in (
        result.stderr
    )


def test_trend_marks_the_partition_judged_again(tmp_path: Path) -> None:
    """Judgments partitioned like the runs (qrels/dt=.../): model_b's day 21 was scored against
    judgments made again. compare refuses naming that partition only; the trend marks it."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("jinja2")
    days = ("2026-11-20", "2026-11-21")
    for name in ("a", "b"):
        for day in days:
            (tmp_path / f"runs_{name}" / f"dt={day}").mkdir(parents=True)
    for day in days:
        _, run_b = write_runs(tmp_path / f"runs_a/dt={day}")
        shutil.move(run_b, tmp_path / f"runs_b/dt={day}/run.parquet")
        for root, frame in (("qrels", JUDGED), ("qrels_b", REJUDGED if day == days[1] else JUDGED)):
            (tmp_path / root / f"dt={day}").mkdir(parents=True, exist_ok=True)
            frame.write_parquet(tmp_path / root / f"dt={day}" / "qrels.parquet")
    runs = {"a": tmp_path / "runs_a", "b": tmp_path / "runs_b"}
    a = evaluate(runs["a"], tmp_path / "qrels", tmp_path / "out_a")
    b = evaluate(runs["b"], tmp_path / "qrels_b", tmp_path / "out_b")
    refused = compare(a, b)
    assert refused.returncode == 2, refused.stderr
    assert "(partition dt=2026-11-21)" in refused.stderr and "dt=2026-11-20" not in refused.stderr
    html = tmp_path / "r.html"
    result = run_cli("report", a, b, "--html", html)
    assert result.returncode == 0, result.stderr
    page = html.read_text()
    changes = page.split('id="judgment-changes"', 1)[1].split("</ul>", 1)[0]
    assert "2026-11-21" in changes and "2026-11-20" not in changes
    table = page.split('id="trend-table"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><td>[^<]*</td><td>[^<]*</td><td>([^<]*)</td>(?:(?!</tr>).)*<td>(changed)?</td></tr>", table)
    assert {day for day, mark in rows if mark} == {"2026-11-21"} and {day for day, _ in rows} == set(days)


def test_one_file_read_with_two_label_columns_is_two_judgings(tmp_path: Path) -> None:
    """The same qrels file, scored once by its ``relevance`` column and once by its ``grade``
    column: the same bytes, other judgments. Refused naming the two columns; with
    --allow-different-judgments compared and warned. Read the same way twice, silent."""
    run_a, run_b = write_runs(tmp_path)
    qrels = tmp_path / "qrels.parquet"
    JUDGED.with_columns(grade=pl.lit(1, dtype=pl.Int64)).write_parquet(qrels)
    a = evaluate(run_a, qrels, tmp_path / "a")
    b_relevance = evaluate(run_b, qrels, tmp_path / "b_relevance", "--label-col", "relevance")
    b_grade = evaluate(run_b, qrels, tmp_path / "b_grade", "--qrels-label-col", "grade")
    recorded = json.loads((b_grade / "manifest.json").read_text())["inputs"]["qrels"]["read_as"]
    assert recorded == {"query_column": "query_id", "doc_column": "doc_id", "label_column": "grade"}

    same = compare(a, b_relevance)
    assert same.returncode == 0 and "judgments" not in same.stderr, same.stderr
    refused = compare(a, b_grade, "--out", tmp_path / "cmp")
    assert refused.returncode == 2 and not (tmp_path / "cmp").exists(), refused.stderr
    assert "scored against different judgments" in refused.stderr
    assert "read differently (label column 'relevance' vs 'grade')" in refused.stderr
    allowed = compare(a, b_grade, "--allow-different-judgments")
    assert allowed.returncode == 0, allowed.stderr
    assert "read differently (label column 'relevance' vs 'grade')" in allowed.stderr
