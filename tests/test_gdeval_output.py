"""``ndcg evaluate --output-format gdeval``: what the TREC Web Track's gdeval.pl prints, byte for
byte, through the real command line.

Against gdeval itself: its outputs recorded on a fixed input (tests/data/gdeval/, the commands and
the script's sha256 in its README), which need no perl; and, where perl is installed, gdeval.pl as
ir_measures ships it, run in the test on random TREC files and diffed with ours. Then what the
format refuses, in its exact words and exit codes. Spark is left out: the format prints the
per-query table every engine gives (the engines' agreement is tests/test_engines_agree.py's)."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest

from tests.helpers import ENGINES, run_cli

GDEVAL = Path(__file__).parent / "data" / "gdeval"
TREC = ["--run", str(GDEVAL / "run.txt"), "--qrels", str(GDEVAL / "qrels.txt"), "--output-format", "gdeval"]
ELSEWHERE = "or use --output-format table|trec|json"


@pytest.mark.parametrize("engine", ENGINES)
def test_the_recorded_outputs_byte_for_byte(engine: str) -> None:
    """gdeval.pl 1.2a's output at k = 1, 5, 10, 20 on the fixed input: the header, a line per
    topic in the run with a label above 0 (not 102, judged 0 and below; not 103, in the run
    only; not 104, in the qrels only), by topic number, 5 decimals, the runid of the run's tag."""
    for k in (1, 5, 10, 20):
        done = run_cli("evaluate", *TREC, "--k", str(k), "--engine", engine)
        assert done.returncode == 0, done.stderr
        assert done.stdout == (GDEVAL / f"gdeval.{k}.csv").read_text(encoding="utf-8"), k


def test_the_cutoff_may_come_from_the_measures() -> None:
    """ERR@10 or nDCG@10 alone names the k (ERR is added beside nDCG at it, not at the default
    cutoffs), and so do ir_measures' parameters that are gdeval's conventions."""
    expected = (GDEVAL / "gdeval.10.csv").read_text(encoding="utf-8")
    for measures in ("ERR@10", "nDCG@10", "nDCG@10,ERR@10", "nDCG(dcg='exp-log2')@10", "ndcg_cut_10"):
        done = run_cli("evaluate", *TREC, "--measures", measures)
        assert (done.returncode, done.stdout) == (0, expected), measures
    done = run_cli("evaluate", *TREC, "--measures", "ndcg,err", "--k", "10", "--profile", "gdeval")
    assert (done.returncode, done.stdout) == (0, expected)


def test_a_run_without_a_tag_is_named_by_its_file(tmp_path: Path) -> None:
    """A Parquet run has no runid: its file name up to the first dot stands in. Integer ids are
    ordered as numbers (9 before 10), as gdeval orders topics; ties by doc_id descending."""
    run = tmp_path / "bm25.v2.parquet"
    pl.DataFrame(
        {"query_id": [10, 10, 9, 9], "doc_id": ["a", "b", "a", "c"], "score": [1.0, 1.0, 2.0, 1.0]}
    ).write_parquet(run)
    qrels = tmp_path / "qrels.parquet"
    pl.DataFrame({"query_id": [10, 9, 9], "doc_id": ["a", "a", "c"], "relevance": [2, 1, 3]}).write_parquet(qrels)
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--output-format", "gdeval", "--k", "1")
    assert done.returncode == 0, done.stderr
    # 9: a (1) first, R = 1/16, IDCG@1 = 2^3 - 1; 10: b (unjudged) before a (2) by doc_id descending
    assert done.stdout == "runid,topic,ndcg@1,err@1\nbm25,9,0.14286,0.06250\nbm25,10,0.00000,0.00000\n"
    assert f"{1 / 7:.5f}" == "0.14286"


# --- gdeval itself, on random data (perl) ---------------------------------------------------------

needs_perl = pytest.mark.skipif(
    shutil.which("perl") is None,
    reason="gdeval.pl is a perl script and perl is not installed; "
    "test_the_recorded_outputs_byte_for_byte compares with its recorded outputs instead",
)


def _gdeval_script() -> Path:
    import ir_measures

    return Path(ir_measures.__file__).parent / "bin" / "gdeval.pl"


def _random_trec_files(folder: Path, seed: int) -> tuple[Path, Path]:
    """Numeric topics whose string order is not their number's (9, 10, 100), labels -2..4, few
    score values (ties), doc ids of several lengths, a third unjudged, relevant documents never
    retrieved, a topic judged 0 and below only, topics in one file only; the run's lines
    shuffled, its last line's tag not the others' (gdeval keeps the last)."""
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    topics = rng.sample([1, 2, 9, 10, 11, 19, 100, 101, 250, 1000], 8)
    for index, topic in enumerate(topics):
        docs = [f"{rng.choice('dD')}{i}" for i in range(rng.randint(1, 35))]
        for doc in docs:
            if index != 0:  # the first topic: in the qrels only
                score = rng.choice(["1", "2", "2.5", "3", "-1", "0.25", "7"])
                run_lines.append(f"{topic} Q0 {doc} {rng.randint(0, 99)} {score} tagA")
            if index != 1 and rng.random() < 0.67:  # the second: in the run only
                labels = [-1, 0] if index == 2 else [-2, -1, 0, 0, 1, 1, 2, 3, 4]
                qrels_lines.append(f"{topic} 0 {doc} {rng.choice(labels)}")
        if index not in (1, 2):
            qrels_lines.append(f"{topic} 0 never{topic} {rng.choice([1, 2, 4])}")
    rng.shuffle(run_lines)
    rng.shuffle(qrels_lines)
    run_lines[-1] = run_lines[-1].replace("tagA", f"tag-{seed}")
    run, qrels = folder / f"run{seed}.txt", folder / f"qrels{seed}.txt"
    run.write_text("\n".join(run_lines) + "\n", encoding="utf-8")
    qrels.write_text("\n".join(qrels_lines) + "\n", encoding="utf-8")
    return run, qrels


@needs_perl
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", range(3))
def test_gdeval_itself_on_random_data(engine: str, seed: int, tmp_path: Path) -> None:
    script = _gdeval_script()
    run, qrels = _random_trec_files(tmp_path, seed)
    for k in ((1, 10), (3, 50), (5, 20))[seed]:
        theirs = subprocess.run(
            ["perl", str(script), str(qrels), str(run), str(k)], capture_output=True, text=True, timeout=60, check=True
        ).stdout
        done = run_cli(
            "evaluate", "--run", run, "--qrels", qrels, "--output-format", "gdeval", "--k", str(k), "--engine", engine
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == theirs, (seed, k)
        assert len(theirs.splitlines()) >= 4 and f"tag-{seed}," in theirs  # several topics, the last line's tag


# --- what the format refuses ----------------------------------------------------------------------

REFUSED_FLAGS = {
    "several cutoffs": (
        ["--k", "5,10"],
        "--output-format gdeval prints one cutoff, as gdeval.pl takes one k, and --k and the cutoffs --measures "
        "names give 2: 5,10; pass one (--k 20, or --measures nDCG@20,ERR@20)",
    ),
    "the default cutoffs": (
        [],
        "--output-format gdeval prints one cutoff, as gdeval.pl takes one k, and without --k, the default "
        "cutoffs are 3: 5,10,20; pass one (--k 20, or --measures nDCG@20,ERR@20)",
    ),
    "cutoffs the measures name": (
        ["--measures", "ERR@10,nDCG@20"],
        "--output-format gdeval prints one cutoff, as gdeval.pl takes one k, and --measures names 2: 10,20; "
        "pass one (--k 20, or --measures nDCG@20,ERR@20)",
    ),
    "other measures": (
        ["--measures", "nDCG@10,P@5,dcg"],
        "--output-format gdeval prints what gdeval.pl prints, its two measures nDCG@k and ERR@k, and --measures "
        f"P@5, dcg would be lost: leave them out, {ELSEWHERE}",
    ),
    "a set of measures": (
        ["--measures", "official", "--k", "10"],
        "--output-format gdeval prints what gdeval.pl prints, its two measures nDCG@k and ERR@k, and --measures "
        f"official would be lost: leave it out, {ELSEWHERE}",
    ),
    "conventions": (
        ["--k", "10", "--gain", "linear", "--ties", "input-order"],
        "--output-format gdeval prints gdeval.pl's numbers, under its conventions (--profile gdeval), and these "
        "differ: --gain linear (gdeval's: exponential), --ties input-order (gdeval's: docid-desc); leave them "
        f"out, {ELSEWHERE}",
    ),
    "ERR's g_max": (
        ["--k", "10", "--err-max-grade", "5"],
        "--output-format gdeval prints gdeval.pl's numbers, under its conventions (--profile gdeval), and this "
        f"differs: --err-max-grade 5 (gdeval's: 4); leave it out, {ELSEWHERE}",
    ),
    "every query": (
        ["--k", "10", "--all-queries"],
        "--output-format gdeval prints gdeval.pl's numbers, under its conventions (--profile gdeval), and this "
        f"differs: --all-queries true (gdeval's: false); leave it out, {ELSEWHERE}",
    ),
    "another profile": (
        ["--k", "10", "--profile", "ir_measures"],
        "--output-format gdeval prints what gdeval.pl prints, under gdeval's conventions (--profile gdeval), not "
        f"those of --profile ir_measures: leave --profile out, {ELSEWHERE}",
    ),
    "digits": (
        ["--k", "10", "--digits", "6"],
        f"--output-format gdeval prints what gdeval.pl prints, with its 5 decimals: leave --digits 6 out, {ELSEWHERE}",
    ),
    "groups": (
        ["--k", "10", "--group-by", "locale"],
        f"--output-format gdeval prints what gdeval.pl prints, which has no groups: leave --group-by out, {ELSEWHERE}",
    ),
    "fractional labels": (
        ["--k", "10", "--allow-fractional-labels"],
        "--output-format gdeval prints what gdeval.pl prints, which reads whole-number labels only (it refuses "
        f"any other): leave --allow-fractional-labels out, {ELSEWHERE}",
    ),
    "skip unchanged": (
        ["--k", "10", "--skip-unchanged"],
        "--output-format gdeval prints what gdeval.pl prints, from the evaluation, which --skip-unchanged leaves "
        f"out when the outputs are current: leave --skip-unchanged out, {ELSEWHERE}",
    ),
    "json": (["--k", "10", "--json"], "--json is --output-format json; it cannot go with --output-format gdeval"),
}


def test_flags_that_would_change_the_numbers_are_refused() -> None:
    """Exit 2, before anything is read, each naming the flag; what neither nDCG nor ERR reads
    (--ap-denominator) changes no line and is taken."""
    for case, (flags, message) in REFUSED_FLAGS.items():
        done = run_cli("evaluate", *TREC, *flags)
        assert (done.returncode, done.stdout, done.stderr) == (2, "", f"ndcg: error: {message}\n"), case
    done = run_cli("evaluate", *TREC, "--k", "10", "--ap-denominator", "min-k-relevant", "--digits", "5")
    assert (done.returncode, done.stdout) == (0, (GDEVAL / "gdeval.10.csv").read_text(encoding="utf-8"))


def test_ids_gdeval_cannot_read_are_refused(tmp_path: Path) -> None:
    """Exit 3, naming the run and the id, before --out is written: an id that is not a number
    (gdeval refuses it), two ids of one number (gdeval would merge them), a negative integer."""
    qrels = tmp_path / "qrels.parquet"
    cases = {
        "q1": "query id 'q1' is not a topic number (digits only), and gdeval.pl reads no other (it refuses the run, "
        f"and orders its lines by number): number the queries, {ELSEWHERE}",
        "07": "query ids '07' and '7' are the same number, and gdeval.pl, which compares topic ids as numbers, "
        f"would merge them: rename one, {ELSEWHERE}",
        -3: "query id '-3' is not a topic number (digits only), and gdeval.pl reads no other (it refuses the run, "
        f"and orders its lines by number): number the queries, {ELSEWHERE}",
    }
    for odd, message in cases.items():
        ids = [odd, 7] if isinstance(odd, int) else [odd, "7"]
        run = tmp_path / "run.parquet"
        pl.DataFrame({"query_id": ids, "doc_id": ["a", "a"], "score": [1.0, 1.0]}).write_parquet(run)
        pl.DataFrame({"query_id": ids, "doc_id": ["a", "a"], "relevance": [1, 1]}).write_parquet(qrels)
        out = tmp_path / "out"
        done = run_cli(
            "evaluate", "--run", run, "--qrels", qrels, "--output-format", "gdeval", "--k", "1", "--out", out
        )
        assert (done.returncode, done.stdout) == (3, ""), odd
        assert done.stderr.endswith(f"ndcg: error: {run}: {message}\n"), (odd, done.stderr)
        assert not out.exists()


def test_a_partitioned_run_is_refused(tmp_path: Path) -> None:
    """gdeval prints one run's lines: a run evaluated partition by partition is refused (exit 2)."""
    for day in ("dt=2026-11-01", "dt=2026-11-02"):
        (tmp_path / "runs" / day).mkdir(parents=True)
        pl.DataFrame({"query_id": ["1"], "doc_id": ["a"], "score": [1.0]}).write_parquet(
            tmp_path / "runs" / day / "part.parquet"
        )
    pl.DataFrame({"query_id": ["1"], "doc_id": ["a"], "relevance": [1]}).write_parquet(tmp_path / "qrels.parquet")
    done = run_cli(
        "evaluate", "--run", tmp_path / "runs", "--qrels", tmp_path / "qrels.parquet", "--output-format", "gdeval",
        "--k", "1",
    )  # fmt: skip
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        "ndcg: error: --output-format gdeval prints what gdeval.pl prints for one run, and this run is "
        f"partitioned: evaluate one partition's folder, {ELSEWHERE}\n"
    )
