"""``ndcg evaluate --output-format ndeval``: what the TREC Web Track's ndeval 4.5 prints, byte for
byte, through the real command line, against its outputs recorded on a fixed input
(tests/data/ndeval/: the source, its sha256 and the commands in its README), in both of its tie
orders; then what the format refuses, in its exact words and exit codes. Spark is left out, as
for gdeval's format: it prints the per-query table every engine gives."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ENGINES, run_cli

NDEVAL = Path(__file__).parent / "data" / "ndeval"
TREC = ["--run", str(NDEVAL / "run.txt"), "--qrels", str(NDEVAL / "qrels.txt"), "--output-format", "ndeval"]
ELSEWHERE = "or use --output-format table|trec|json"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_recorded_outputs_byte_for_byte(engine: str) -> None:
    """ndeval's default order (by the run's rank field, here score then docno ascending) is the
    ndeval profile's docid-asc; its -traditional, docno descending, --ties docid-desc. A line
    for each topic of the run by number (9, in the run only, zeros), -nan for the nNRBP of 5
    (judged 0 only) and the amean's, the amean over the 4 topics in both inputs."""
    for flags, recorded in (((), "ndeval.csv"), (("--ties", "docid-desc"), "ndeval-traditional.csv")):
        done = run_cli("evaluate", *TREC, *flags, "--engine", engine)
        assert done.returncode == 0, done.stderr
        assert done.stdout == (NDEVAL / recorded).read_text(encoding="utf-8"), recorded


REFUSED_FLAGS = {
    "k": (
        ["--k", "10"],
        "--output-format ndeval prints what ndeval prints: its 21 columns at k = 5, 10 and 20, which --k would "
        f"change: leave --k out, {ELSEWHERE}",
    ),
    "measures": (
        ["--measures", "P@5"],
        "--output-format ndeval prints what ndeval prints: its 21 columns at k = 5, 10 and 20, which --measures "
        f"would change: leave --measures out, {ELSEWHERE}",
    ),
    "profile": (
        ["--profile", "trec_eval"],
        "--output-format ndeval prints what ndeval prints, under ndeval's conventions (--profile ndeval), not "
        f"those of --profile trec_eval: leave --profile out, {ELSEWHERE}",
    ),
    "ties": (
        ["--ties", "average"],
        "--output-format ndeval prints ndeval's numbers, which orders tied scores by doc_id, ascending or "
        f"descending (-traditional), and --ties average is neither: use --ties docid-asc or docid-desc, {ELSEWHERE}",
    ),
    "convention": (
        ["--relevance-threshold", "2"],
        "--output-format ndeval prints ndeval's numbers, under its conventions (--profile ndeval), and this "
        f"differs: --relevance-threshold 2 (ndeval's: none); leave it out, {ELSEWHERE}",
    ),
    "weights": (
        ["--query-weights", "weights.csv"],
        "--output-format ndeval prints ndeval's amean, the plain mean of its lines; it cannot go with "
        "--query-weights (weighted means): print them with --output-format table, json or trec",
    ),
    "json": (["--json"], "--json is --output-format json; it cannot go with --output-format ndeval"),
}


def test_flags_that_would_change_the_numbers_are_refused() -> None:
    """Exit 2, before anything is read, each naming the flag."""
    for case, (flags, message) in REFUSED_FLAGS.items():
        done = run_cli("evaluate", *TREC, *flags)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ndcg: error: {message}\n"), case


def test_inputs_ndeval_cannot_read_are_refused(tmp_path: Path) -> None:
    """Exit 3, before anything is printed: a topic id that is not a number; a negative judgment
    (ndeval reads a natural number); a partitioned run (exit 2; ndeval reads one run). A Parquet
    run without a tag is named by its file."""
    qrels = tmp_path / "qrels.parquet"
    run = tmp_path / "bm25.parquet"
    pl.DataFrame({"query_id": ["q1"], "doc_id": ["a"], "score": [1.0]}).write_parquet(run)
    pl.DataFrame({"query_id": ["q1"], "subtopic": ["1"], "doc_id": ["a"], "relevance": [1]}).write_parquet(qrels)
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "ndeval")
    assert (done.returncode, done.stdout) == (3, "")
    tail = (
        "and ndeval reads no other (it refuses the run, and orders its lines by number): number the queries, "
        f"{ELSEWHERE}\n"
    )
    assert done.stderr.endswith(f"ndcg: error: {run}: query id 'q1' is not a topic number (digits only), {tail}")
    # a topic of the run only has a line of its own in ndeval's output: its id is read too, before --out
    pl.DataFrame({"query_id": ["1", "wt09-2"], "doc_id": ["a", "a"], "score": [1.0, 1.0]}).write_parquet(run)
    pl.DataFrame({"query_id": ["1"], "subtopic": ["1"], "doc_id": ["a"], "relevance": [1]}).write_parquet(qrels)
    out = tmp_path / "out"
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "ndeval", "--out", out)
    assert (done.returncode, done.stdout, out.exists()) == (3, "", False), done.stderr
    assert done.stderr.endswith(f"ndcg: error: {run}: query id 'wt09-2' is not a topic number (digits only), {tail}")
    # 7 in the run and 07 in the judgments: two queries here, one topic to ndeval
    pl.DataFrame({"query_id": ["1", "7"], "doc_id": ["a", "a"], "score": [1.0, 1.0]}).write_parquet(run)
    pl.DataFrame(
        {"query_id": ["1", "07"], "subtopic": ["1", "1"], "doc_id": ["a", "a"], "relevance": [1, 1]}
    ).write_parquet(qrels)
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "ndeval")
    assert (done.returncode, done.stdout) == (3, ""), done.stderr
    assert done.stderr.endswith(
        f"ndcg: error: {run}: query ids '07' and '7' are the same number, and ndeval, which compares topic ids as "
        f"numbers, would merge them: rename one, {ELSEWHERE}\n"
    )
    pl.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]}).write_parquet(run)
    pl.DataFrame(
        {"query_id": ["1", "1"], "subtopic": ["1", "2"], "doc_id": ["a", "b"], "relevance": [1, -1]}
    ).write_parquet(qrels)
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "ndeval")
    assert (done.returncode, done.stdout) == (3, "")
    assert done.stderr.endswith(
        f"ndcg: error: {qrels}: 1 judgment(s) with a negative label, and ndeval reads a judgment as a natural "
        f"number (it refuses the file): remove them, {ELSEWHERE}\n"
    )
    pl.DataFrame({"query_id": ["1"], "subtopic": ["1"], "doc_id": ["a"], "relevance": [1]}).write_parquet(qrels)
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "ndeval")
    assert done.returncode == 0, done.stderr
    # one relevant document at rank 1, S = 1: ERR-IA@5 = 1 / (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4 + 0.0625 / 5)
    _header, line, amean = done.stdout.splitlines()
    assert line.startswith("bm25,1,") and amean.startswith("bm25,amean,") and line[7:] == amean[11:]
    assert float(line.split(",")[2]) == pytest.approx(1 / (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4 + 0.0625 / 5), abs=1e-6)
    for day in ("dt=2026-11-01", "dt=2026-11-02"):
        (tmp_path / "runs" / day).mkdir(parents=True)
        pl.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]}).write_parquet(
            tmp_path / "runs" / day / "part.parquet"
        )
    done = run_cli("evaluate", "--run", tmp_path / "runs", "--qrels", qrels, "--output-format", "ndeval")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        "ndcg: error: --output-format ndeval prints what ndeval prints for one run, and this run is partitioned: "
        f"evaluate one partition's folder, {ELSEWHERE}\n"
    )
