"""What ``ndcg`` prints reads at a glance: a one-line convention header (the full detail in
``--verbose``, ``--json`` and the manifest), one word for the overall rows in every table, never
the whole-ranking cutoff's, resolved values in ``--print-config``, warnings naming their
partition, reasons in dates and sizes, and trec output with groups saying what it holds."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import polars as pl
import pytest

from pipeline.io.identity import differences
from tests.helpers import ROOT, run_cli, settle

pytestmark = pytest.mark.local_engines("the command line's text, the same on every engine")

RUN, QRELS, RUNS = ROOT / "data/run.parquet", ROOT / "data/qrels.parquet", ROOT / "data/runs"


def evaluate(*flags: object) -> tuple[str, str]:
    done = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


def test_the_header_is_one_short_line_naming_only_what_differs() -> None:
    plain, _ = evaluate()
    assert plain.splitlines()[0] == "# conventions: trec_eval defaults"
    assert plain.splitlines()[1].split() == ["k", "queries", "cg", "dcg", "idcg", "ndcg"]
    changed, _ = evaluate("--gain", "exponential", "--k", "5,10")
    assert changed.splitlines()[0] == "# conventions: trec_eval defaults except k=5,10, gain=exponential"
    profiled, _ = evaluate("--profile", "sklearn")
    assert profiled.splitlines()[0] == "# conventions: profile sklearn"
    # a flag that repeats the profile's own choice is no difference
    overridden, _ = evaluate("--profile", "sklearn", "--ties", "average", "--all-queries")
    assert overridden.splitlines()[0] == "# conventions: profile sklearn except all_queries=true"
    assert max(len(text.splitlines()[0]) for text in (plain, changed, profiled, overridden)) < 80


def test_verbose_and_json_keep_every_convention() -> None:
    verbose, _ = evaluate("--verbose")
    lines = verbose.splitlines()
    assert lines[0] == "# conventions: trec_eval defaults"
    detail = {line[4:].split(": ", 1)[0]: line[4:].split(": ", 1)[1] for line in lines if line.startswith("#   ")}
    assert detail["ties"] == "score desc, then doc_id desc (string order)"  # the registry's wording, in full
    assert detail["gain"] == "linear" and detail["discount"] == "log2" and detail["all_queries"] == "false"
    as_json, _ = evaluate("--json")
    assert set(detail) == set(json.loads(as_json)["conventions"]) - {"cutoffs"} | {"cutoffs"}


def test_one_word_for_the_overall_rows_another_for_the_whole_ranking(tmp_path: Path) -> None:
    table, _ = evaluate("--group-by", "locale", "--k", "10")
    rows = [line.split() for line in table.splitlines()[2:]]
    assert {row[0] for row in rows} == {"de-DE", "en-US", "ja-JP", "overall"}
    assert {row[1] for row in rows} == {"all", "10"}  # k: the whole ranking, and the cutoff
    assert not [row for row in rows if "*" in row]
    for name in ("a", "b"):
        evaluate("--group-by", "locale", "--k", "10", "--out", tmp_path / name)
    compared = run_cli(
        "compare", "--baseline", tmp_path / "a", "--candidate", tmp_path / "b", "--group-by", "locale", "--k", "10"
    )
    assert compared.returncode == 0, compared.stderr
    body = [line.split() for line in compared.stdout.splitlines() if line.split()[:2] == ["a", "b"]]
    assert [row[2] for row in body].count("overall") == 1 and "all" not in [row[2] for row in body], body


def test_print_config_shows_the_values_the_job_resolves() -> None:
    done = run_cli("evaluate", "--run", RUN, "--print-config", "--profile", "lightgbm", "--empty-ideal", "zero")
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    # lightgbm's choices (README's profile table: exponential gain, input-order ties, ideal from
    # the retrieved list), the flag given over the profile, and the defaults of the rest
    assert resolved["gain"] == "exponential" and resolved["ties"] == "input-order" and resolved["ideal"] == "retrieved"
    assert resolved["empty_ideal"] == "zero"
    assert resolved["discount"] == "log2" and resolved["unjudged"] == "zero" and resolved["duplicates"] == "error"
    assert resolved["all_queries"] is False and resolved["tie_bounds"] is False and resolved["measures"] == "ndcg"
    assert resolved["k"] == "5,10,20" and resolved["profile"] == "lightgbm"


def test_warnings_of_a_partitioned_run_name_their_partition() -> None:
    done = run_cli("evaluate", "--run", RUNS, "--qrels", QRELS, "--verbose")
    assert done.returncode == 0, done.stderr
    warnings = [line for line in done.stderr.splitlines() if line.startswith("ndcg: warning: ")]
    assert warnings and all(
        line.startswith(("ndcg: warning: dt=2026-11-20: ", "ndcg: warning: dt=2026-11-21: ")) for line in warnings
    ), warnings
    assert any("dt=2026-11-21: queries only in the qrels" in line for line in warnings)


def test_trec_output_with_groups_says_it_holds_the_overall_lines_only() -> None:
    done = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--group-by", "locale", "--output-format", "trec")
    assert done.returncode == 0, done.stderr
    assert "--output-format trec prints the lines over all queries only" in done.stderr
    assert "--output-format table or json" in done.stderr
    assert {line.split("\t")[1] for line in done.stdout.splitlines()} == {"all"}  # trec_eval's query of the means
    plain = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--output-format", "trec")
    assert "over all queries only" not in plain.stderr


def _files(size: int, mtime_ns: int) -> dict[str, object]:
    record = {"path": "q.parquet", "size": size, "mtime_ns": mtime_ns, "ctime_ns": 1, "device": 1, "inode": 1}
    return {"kind": "files", "files": [{**record, "settled": True}]}


def test_a_changed_file_is_described_in_dates_and_sizes() -> None:
    seconds = 1_795_000_000  # written out with time.gmtime below, not with the code under test
    (change,) = differences(_files(1_200, seconds * 10**9), _files(14_313, (seconds + 90) * 10**9))
    before = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds))
    after = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(seconds + 90))
    assert change == (f"changed q.parquet (modified {before}Z -> {after}Z, size 1,200 bytes -> 14,313 bytes (14.3 kB))")
    # two times within one second are told apart by as many decimals as it takes
    close = differences(_files(1_200, seconds * 10**9), _files(1_200, seconds * 10**9 + 4_000_000))
    assert close == [f"changed q.parquet (modified {before}.000Z -> {before}.004Z)"]


def test_skip_unchanged_says_why_in_words(tmp_path: Path) -> None:
    qrels = tmp_path / "qrels.parquet"
    shutil.copy(QRELS, qrels)
    settle(qrels)
    out = tmp_path / "out"
    first = run_cli("evaluate", "--run", RUN, "--qrels", qrels, "--out", out, "--skip-unchanged")
    assert first.returncode == 0, first.stderr
    pl.read_parquet(qrels).head(100).write_parquet(qrels)
    past = time.time() - 3600  # settled: an hour old
    os.utime(qrels, (past, past))
    settle(qrels)  # its status-change time is now
    second = run_cli("evaluate", "--run", RUN, "--qrels", qrels, "--out", out, "--skip-unchanged")
    assert second.returncode == 0, second.stderr
    (reason,) = [line for line in second.stderr.splitlines() if line.startswith("ndcg: recomputing")]
    assert "qrels changed: changed" in reason and "modified " in reason and " bytes" in reason, reason
    assert "_ns" not in reason, reason


def test_trec_output_prints_a_measure_trec_eval_lacks_under_ir_measures_name() -> None:
    # ERR@k and Judged@k have no trec_eval name; a line was left out silently, exit 0
    stdout, _ = evaluate("--measures", "ERR@10,nDCG@10,Judged@5", "--output-format", "trec", "--per-query")
    lines = [line.split("\t") for line in stdout.splitlines()]
    names = {name.strip() for name, _, _ in lines}
    assert names == {"ERR@10", "ndcg_cut_10", "Judged@5"}
    summary = json.loads(evaluate("--measures", "ERR@10,nDCG@10,Judged@5", "--json")[0])
    means = {(row["k"], column): row[column] for row in summary["summary"] for column in ("err", "judged")}
    printed = {name.strip(): float(value) for name, query, value in lines if query == "all"}
    assert printed["ERR@10"] == pytest.approx(means[(10, "err")], abs=5e-5)
    assert printed["Judged@5"] == pytest.approx(means[(5, "judged")], abs=5e-5)
    # a query's own lines too
    assert sum(1 for name, query, _ in lines if name.strip() == "ERR@10" and query != "all") >= 1
    # over the whole ranking, its name without the cutoff
    whole, _ = evaluate("--measures", "err", "--k", "5", "--output-format", "trec")
    assert [line.split("\t")[0].strip() for line in whole.splitlines()] == ["ndcg", "ERR", "ndcg_cut_5", "ERR@5"]


def test_trec_output_prints_rr_at_k_named_one_by_one_under_ir_measures_name() -> None:
    # trec_eval's recip_rank has no cutoff, so RR@3 (or its alias MRR@3) had no line: left out
    # silently, exit 0. Named one by one, it prints under ir_measures' name; all_trec's lines
    # stay trec_eval's own (tests/test_trec_eval_measures.py diffs them).
    stdout, _ = evaluate("--measures", "MRR@3,recip_rank,P@5", "--output-format", "trec", "--per-query")
    lines = [line.split("\t") for line in stdout.splitlines()]
    assert {name.strip() for name, _, _ in lines} == {"RR@3", "recip_rank", "P_5"}
    summary = json.loads(evaluate("--measures", "RR@3", "--json")[0])
    (mean,) = [row["recip_rank"] for row in summary["summary"] if row["k"] == 3]
    (printed,) = [float(value) for name, query, value in lines if name.strip() == "RR@3" and query == "all"]
    assert printed == pytest.approx(mean, abs=5e-5)
    # with --k too (every measure at every cutoff): RR@3 was left out again, only recip_rank printed
    gridded, _ = evaluate("--measures", "MRR@3,P", "--k", "3,5", "--output-format", "trec")
    names = [line.split("\t")[0].strip() for line in gridded.splitlines()]
    assert "RR@3" in names and "RR@5" not in names and "P_5" in names, names
    (printed,) = [float(line.split("\t")[2]) for line in gridded.splitlines() if line.startswith("RR@3 ")]
    assert printed == pytest.approx(mean, abs=5e-5)


def test_trec_files_hold_rr_at_k_under_ir_measures_name(tmp_path: Path) -> None:
    # --out-format trec renders the tables: recip_rank at each cutoff, which trec_eval has no
    # line of, was left out of both files silently (the parquet held it)
    out = tmp_path / "out"
    evaluate("--measures", "MRR@3,P", "--k", "3,5", "--out", out, "--out-format", "trec")
    tables = {name: (out / f"{name}.trec").read_text().splitlines() for name in ("per_query", "summary")}
    for name, lines in tables.items():
        names = {line.split("\t")[0].strip() for line in lines}
        assert {"recip_rank", "RR@3", "RR@5", "P_3", "P_5"} <= names, (name, names)
    summary = json.loads(evaluate("--measures", "MRR@3,P", "--k", "3,5", "--json")[0])
    (mean,) = [row["recip_rank"] for row in summary["summary"] if row["k"] == 5]
    (written,) = [float(line.split("\t")[2]) for line in tables["summary"] if line.startswith("RR@5 ")]
    assert written == pytest.approx(mean, abs=5e-5)
