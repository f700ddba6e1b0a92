"""Judgment coverage: Judged@k per query and per group (`ndcg evaluate --measures judged
--group-by`), the floor of `ndcg compare --min-judged` (exit 6 below it, exit 2 when the outputs
hold no Judged@k), and the report's coverage beside the tie bounds. Expected values are written
out by hand, or computed in the test from the run and the judgments by the definition (the
ranking by score descending, ties by doc_id descending; judged = a label of 0 or more; Judged@k
= judged in the top k / k, the ranks past the retrieved counting as unjudged)."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.compare import Options, compare_systems
from pipeline.compare_job import Systems, compare_job
from pipeline.coverage import candidate_judged
from pipeline.errors import UsageError
from pipeline.gate import Gate, Margin, check_gate, parse_min_judged
from tests.helpers import ROOT, run_cli
from tests.helpers.outputs import Page

GATE_FAILED = 6
RUN, RUN_B, QRELS = ROOT / "data/run.parquet", ROOT / "data/run_b.parquet", ROOT / "data/qrels.parquet"


def judged_by_hand(run: Path, qrels: Path, k: int) -> dict[str, float]:
    """Judged@k of every query both files have, by the definition, in plain Python."""
    judged = {(q, d) for q, d, label in pl.read_parquet(qrels).select("query_id", "doc_id", "relevance").rows()
              if label >= 0}  # fmt: skip
    judged_queries = set(pl.read_parquet(qrels).get_column("query_id").to_list())
    ranked: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for query, doc, score in pl.read_parquet(run).select("query_id", "doc_id", "score").rows():
        ranked[query].append((score, doc))
    return {
        query: sum((query, doc) in judged for _, doc in sorted(results, reverse=True)[:k]) / k
        for query, results in ranked.items()
        if query in judged_queries
    }


def locales(run: Path) -> dict[str, str]:
    return dict(pl.read_parquet(run).select("query_id", "locale").unique().rows())


# --- Judged@k per query and per group ------------------------------------------------------


def test_judged_and_unj_per_query_and_group_by_hand(tmp_path: Path) -> None:
    # q1 (de): a 3.0, b 2.0, c 1.0; a judged 1, c judged 0, b unjudged. Top 1: a -> Judged@1 = 1;
    # top 2: a, b -> 1/2; k=5: a, c of 5 ranks (ranks 4 and 5 are past the 3 retrieved: unjudged)
    # -> 2/5. trec_eval's unj@5 counts those ranks as judged: only b -> 1/5.
    # q2 (fr): d 1.0, e 1.0 tie -> doc_id descending: e, d; e labelled -1 (unjudged), d judged 2.
    # Judged@1 = 0, Judged@2 = 1/2, Judged@5 = 1/5; unj@5 = 1/5 (e).
    run = tmp_path / "run.csv"
    run.write_text("query_id,doc_id,score,locale\nq1,a,3.0,de\nq1,b,2.0,de\nq1,c,1.0,de\nq2,d,1.0,fr\nq2,e,1.0,fr\n")
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query_id,doc_id,relevance\nq1,a,1\nq1,c,0\nq2,d,2\nq2,e,-1\n")
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--k", "1,2,5", "--measures", "judged,unj",
                     "--group-by", "locale", "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    per_query = pl.read_parquet(out / "per_query.parquet").filter(pl.col("k").is_not_null())
    got = {(q, k): (j, u) for q, k, j, u in per_query.select("query_id", "k", "judged", "unj").rows()}
    expected_judged = {("q1", 1): 1.0, ("q1", 2): 0.5, ("q1", 5): 0.4, ("q2", 1): 0.0, ("q2", 2): 0.5, ("q2", 5): 0.2}
    assert {key: value[0] for key, value in got.items()} == pytest.approx(expected_judged, abs=1e-12)
    assert got[("q1", 5)][1] == pytest.approx(0.2) and got[("q2", 5)][1] == pytest.approx(0.2)
    summary = pl.read_parquet(out / "summary.parquet").filter(pl.col("k").is_not_null())
    rows = {(g, k): j for g, k, j in summary.select("locale", "k", "judged").rows()}
    assert rows == pytest.approx(
        # one query per group: its own values; overall (locale null) the mean of the two
        {("de", 1): 1.0, ("de", 2): 0.5, ("de", 5): 0.4, ("fr", 1): 0.0, ("fr", 2): 0.5, ("fr", 5): 0.2}
        | {(None, 1): 0.5, (None, 2): 0.5, (None, 5): 0.3},
        abs=1e-12,
    )
    # the whole ranking has no Judged@k
    assert pl.read_parquet(out / "summary.parquet").filter(pl.col("k").is_null())["judged"].null_count() == 3


def test_judged_per_group_of_the_sample_matches_the_definition(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", "5,10", "--measures", "judged",
                     "--group-by", "locale", "--out", out)  # fmt: skip
    assert result.returncode == 0, result.stderr
    summary = pl.read_parquet(out / "summary.parquet")
    locale_of = locales(RUN)
    for k in (5, 10):
        by_query = judged_by_hand(RUN, QRELS, k)
        assert len(by_query) == 40
        groups: dict[str | None, list[float]] = defaultdict(list)
        for query, value in by_query.items():
            groups[locale_of[query]].append(value)
            groups[None].append(value)
        for group, values in groups.items():
            row = summary.filter(pl.col("k") == k, pl.col("locale").eq_missing(group)).row(0, named=True)
            assert row["queries"] == len(values)
            assert row["judged"] == pytest.approx(sum(values) / len(values), abs=1e-12), (group, k)


# --- the gate's floor: compare --min-judged ------------------------------------------------


def output(folder: Path, rows: list[tuple], *, group: bool = False, judged: bool = True) -> Path:
    """An evaluation output holding a per-query table of (query, k, ndcg, judged[, locale]) rows."""
    folder.mkdir(parents=True)
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64, "judged": pl.Float64}
    table = pl.DataFrame(rows, schema=schema | ({"locale": pl.String} if group else {}), orient="row")
    (table if judged else table.drop("judged")).write_parquet(folder / "per_query.parquet")
    return folder


def compare(a: Path, b: Path, *flags: object) -> object:
    return run_cli("compare", "--baseline", a, "--candidate", b, *flags)


def coverage_systems(tmp_path: Path, judged: list[float], ndcg: float = 0.5) -> tuple[Path, Path]:
    """10 queries at k=10: the baseline scores 0.5 with every result judged; the candidate scores
    ``ndcg`` with Judged@10 of ``judged[i]`` on query i."""
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, ndcg, j) for i, j in enumerate(judged)])
    return a, b


@pytest.mark.parametrize(("floor", "code"), [("0.8", 0), ("80%", 0), ("0.75", 0), ("0.81", GATE_FAILED)])
def test_floor_on_the_candidates_mean_judged(tmp_path: Path, floor: str, code: int) -> None:
    # Judged@10 of 1.0 on 6 queries and 0.5 on 4: mean (6 + 2) / 10 = 0.8. The floor itself passes.
    a, b = coverage_systems(tmp_path, [1.0] * 6 + [0.5] * 4)
    out = tmp_path / "cmp"
    result = compare(a, b, "--min-judged", floor, "--out", out)
    assert result.returncode == code, result.stdout + result.stderr
    coverage = json.loads((out / "manifest.json").read_text())["gate"]["coverage"]
    [check] = coverage["checks"]
    assert check["judged"] == pytest.approx(0.8) and check["judged_queries"] == 10 and check["k"] == 10
    assert coverage["min_judged"] == pytest.approx(parse_min_judged(floor))
    assert coverage["passed"] is (code == 0)
    assert f"# gate (--min-judged {parse_min_judged(floor):g}, 1 check of Judged@k): " in result.stdout
    if code:
        assert "gate FAILED: cand vs prod at k=10: Judged@10 0.8000 is below the floor of --min-judged 0.81" in (
            result.stdout
        )
        assert "ndcg: error: regression gate failed: cand vs prod at k=10: Judged@10 0.8000" in result.stderr


def test_a_mean_just_below_the_floor_prints_digits_that_show_it(tmp_path: Path) -> None:
    # Judged@10 of 1.0 on 9 queries and 0.9999 on one: mean (9 + 0.9999) / 10 = 0.99999, below a
    # floor of 1.0 by 1e-5; four decimals would print "1.0000 is below the floor of 1.0"
    a, b = coverage_systems(tmp_path, [1.0] * 9 + [0.9999])
    result = compare(a, b, "--min-judged", "1.0")
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    assert "Judged@10 0.99999 is below the floor of --min-judged 1.0 (" in result.stdout


def test_a_drop_just_beyond_the_margin_prints_digits_that_show_it(tmp_path: Path) -> None:
    # every one of 12 queries 0.5 -> 0.48996: a drop of 0.01004, beyond a margin of 0.01, which
    # four decimals print as "-0.0100 ... beyond 0.0100"; p = 2/2^12 (sign flips), below 0.05
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5, 1.0) for i in range(12)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.48996, 1.0) for i in range(12)])
    result = compare(a, b, "--fail-if-worse", "0.01")
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    assert "mean 0.50000 -> 0.48996 (-0.01004, -2.0%), a drop beyond 0.01000" in result.stdout


def test_the_baselines_coverage_is_not_gated(tmp_path: Path) -> None:
    # the baseline's Judged@10 is 0.1 everywhere; the candidate's 1.0: only the candidate is held to it
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5, 0.1) for i in range(10)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
    assert compare(a, b, "--min-judged", "0.9").returncode == 0


def test_groups_are_floored_only_with_gate_groups(tmp_path: Path) -> None:
    # de: 10 queries fully judged (1.0); fr: 10 queries judged 0.5. Overall (10 + 5) / 20 = 0.75.
    rows_a = [(f"d{i}", 10, 0.5, 1.0, "de") for i in range(10)] + [(f"f{i}", 10, 0.5, 1.0, "fr") for i in range(10)]
    rows_b = [(f"d{i}", 10, 0.5, 1.0, "de") for i in range(10)] + [(f"f{i}", 10, 0.5, 0.5, "fr") for i in range(10)]
    a, b = output(tmp_path / "prod", rows_a, group=True), output(tmp_path / "cand", rows_b, group=True)
    overall = compare(a, b, "--group-by", "locale", "--min-judged", "0.7", "--json")
    assert overall.returncode == 0, overall.stderr
    [check] = json.loads(overall.stdout)["gate"]["coverage"]["checks"]
    assert check["judged"] == pytest.approx(0.75) and check["family"] == "overall"
    grouped = compare(a, b, "--group-by", "locale", "--min-judged", "0.7", "--gate-groups", "--json")
    assert grouped.returncode == GATE_FAILED, grouped.stderr
    coverage = json.loads(grouped.stdout)["gate"]["coverage"]
    found = {(c["group"], c["family"]): (c["judged"], c["judged_queries"], c["failed"]) for c in coverage["checks"]}
    assert found == {
        (None, "overall"): (pytest.approx(0.75), 20, False),
        ("locale='de'", "groups"): (pytest.approx(1.0), 10, False),
        ("locale='fr'", "groups"): (pytest.approx(0.5), 10, True),
    }
    [failure] = coverage["failures"]
    assert failure["locale"] == "fr" and failure["overall"] is False
    text = compare(a, b, "--group-by", "locale", "--min-judged", "0.7", "--gate-groups")
    assert "gate FAILED: cand vs prod at k=10, group locale='fr': Judged@10 0.5000 is below the floor" in text.stdout


def test_the_floor_never_turns_a_failing_gate_into_a_passing_one(tmp_path: Path) -> None:
    # every query 0.8 -> 0.6 (p = 2/1024 < 0.05, a drop of 0.2 > 0.01): the margin fails, whatever
    # the coverage; and a passing margin (no drop) fails on a coverage of 0.5 < 0.9
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.8, 1.0) for i in range(10)])
    worse = output(tmp_path / "worse", [(f"q{i}", 10, 0.6, 1.0) for i in range(10)])
    thin = output(tmp_path / "thin", [(f"q{i}", 10, 0.8, 0.5) for i in range(10)])
    for floor in ("0", "0.5", "1"):
        result = compare(a, worse, "--fail-if-worse", "0.01", "--min-judged", floor)
        assert result.returncode == GATE_FAILED, (floor, result.stdout)
        assert "gate FAILED: worse vs prod at k=10: mean 0.8000 -> 0.6000" in result.stdout
    assert compare(a, thin, "--fail-if-worse", "0.01").returncode == 0
    both = compare(a, thin, "--fail-if-worse", "0.01", "--min-judged", "0.9")
    assert both.returncode == GATE_FAILED
    assert both.stdout.count("# gate FAILED:") == 1 and "Judged@10 0.5000 is below the floor" in both.stdout
    assert "# gate (--fail-if-worse 0.01, alpha 0.05, 1 check(s) in 1 family" in both.stdout
    assert "; --min-judged 0.9, 1 check of Judged@k): FAILED" in both.stdout


def test_queries_the_candidate_lost_count_zero_with_all_queries(tmp_path: Path) -> None:
    # the candidate answers q0..q8 fully judged and lost q9: over its 9 paired queries Judged@10 is
    # 1.0; with --all-queries q9 counts 0 for it (nothing retrieved, nothing judged): 9 / 10 = 0.9
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.5, 1.0) for i in range(9)])
    assert compare(a, b, "--min-judged", "0.95").returncode == 0
    scored = compare(a, b, "--min-judged", "0.95", "--all-queries", "--json")
    assert scored.returncode == GATE_FAILED
    [check] = json.loads(scored.stdout)["gate"]["coverage"]["checks"]
    assert check["judged"] == pytest.approx(0.9) and check["judged_queries"] == 10


def test_gated_cutoffs_and_the_whole_ranking(tmp_path: Path) -> None:
    # k=5: Judged@5 0.4 everywhere; k=10: 1.0; the whole ranking (k null) has no Judged@k
    rows = [(f"q{i}", k, 0.5, j) for i in range(10) for k, j in ((5, 0.4), (10, 1.0), (None, None))]
    a, b = output(tmp_path / "prod", rows), output(tmp_path / "cand", rows)
    every = compare(a, b, "--min-judged", "0.5", "--json")  # every compared cutoff: 5 fails
    assert every.returncode == GATE_FAILED
    checks = json.loads(every.stdout)["gate"]["coverage"]["checks"]
    assert [(c["k"], c["failed"]) for c in checks] == [(5, True), (10, False)]  # the whole ranking: no check
    assert compare(a, b, "--min-judged", "0.5", "--gate-k", "10").returncode == 0
    whole = compare(a, b, "--min-judged", "0.5", "--gate-k", "all")
    assert whole.returncode == 2 and "no value over the whole ranking" in whole.stderr


def test_outputs_without_judged_are_a_usage_error_naming_the_flag(tmp_path: Path) -> None:
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)], judged=False)
    out = tmp_path / "cmp"
    result = compare(a, b, "--min-judged", "0.9", "--out", out)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "system 'cand' has no 'judged' (Judged@k) values" in result.stderr
    assert "evaluate it with --measures judged" in result.stderr
    assert not out.exists()
    # without the floor the same outputs compare as before
    assert compare(a, b).returncode == 0


def test_a_partition_without_judged_is_named(tmp_path: Path) -> None:
    a, b = tmp_path / "prod", tmp_path / "cand"
    for day, has_judged in (("2026-11-20", True), ("2026-11-21", False)):
        output(a / f"dt={day}", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
        output(b / f"dt={day}", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)], judged=has_judged)
    result = compare(a, b, "--min-judged", "0.9")
    assert result.returncode == 2, result.stderr
    expected = "system 'cand' has no 'judged' (Judged@k) values in its per-query table at k=10, partition dt=2026-11-21"
    assert expected in result.stderr


def test_partitions_are_floored_with_gate_partitions(tmp_path: Path) -> None:
    # day 20: the candidate's Judged@10 is 1.0 on 10 queries; day 21: 0.5. Pooled: 0.75.
    a, b = tmp_path / "prod", tmp_path / "cand"
    for day, judged in (("2026-11-20", 1.0), ("2026-11-21", 0.5)):
        output(a / f"dt={day}", [(f"q{i}", 10, 0.5, 1.0) for i in range(10)])
        output(b / f"dt={day}", [(f"q{i}", 10, 0.5, judged) for i in range(10)])
    assert compare(a, b, "--min-judged", "0.7").returncode == 0
    result = compare(a, b, "--min-judged", "0.7", "--gate-partitions", "--json")
    assert result.returncode == GATE_FAILED
    checks = json.loads(result.stdout)["gate"]["coverage"]["checks"]
    found = {(c["partition"], c["family"]): (pytest.approx(c["judged"]), c["failed"]) for c in checks}
    assert found == {
        (None, "overall"): (0.75, False),
        ("dt=2026-11-20", "partitions"): (1.0, False),
        ("dt=2026-11-21", "partitions"): (0.5, True),
    }
    text = compare(a, b, "--min-judged", "0.7", "--gate-partitions")
    assert "gate FAILED: cand vs prod at k=10, partition dt=2026-11-21: Judged@10 0.5000" in text.stdout


def test_runs_scored_here_compute_judged(tmp_path: Path) -> None:
    # the sample's B against A: B's Judged@10 over the 40 paired queries, by the definition
    expected = judged_by_hand(RUN_B, QRELS, 10)
    mean = sum(expected.values()) / len(expected)
    flags = ("--run", RUN, "--run", RUN_B, "--qrels", QRELS, "--k", "10", "--json")
    result = run_cli("compare", *flags, "--min-judged", f"{mean - 0.001:.6f}")
    assert result.returncode == 0, result.stderr
    [check] = json.loads(result.stdout)["gate"]["coverage"]["checks"]
    assert check["judged"] == pytest.approx(mean, abs=1e-12) and check["judged_queries"] == 40
    assert run_cli("compare", *flags, "--min-judged", f"{mean + 0.001:.6f}").returncode == GATE_FAILED


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--min-judged", "1.5"), "is not a fraction of judged results"),
        (("--min-judged", "-0.1"), "is not a fraction of judged results"),
        (("--min-judged", "nan"), "is not a fraction of judged results"),
        (("--min-judged", "abc"), "cannot read 'abc'"),
        (("--min-judged", "0_9"), "cannot read '0_9'"),
        (("--min-judged", "0.9", "--alpha", "0.1"), "--alpha only applies with --fail-if-worse"),
        (
            ("--gate-k", "10"),
            "--gate-k only applies with --fail-if-worse MARGIN, --fail-if-drop-over DROP or --min-judged F",
        ),
        (("--min-judged", "0.9", "--gate-groups"), "--gate-groups needs --group-by"),
    ],
)
def test_bad_floor_flags_are_usage_errors(tmp_path: Path, flags: tuple[str, ...], message: str) -> None:
    a, b = coverage_systems(tmp_path, [1.0] * 10)
    result = compare(a, b, *flags)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_python_api(tmp_path: Path) -> None:
    a, b = coverage_systems(tmp_path, [1.0] * 6 + [0.5] * 4)
    given = Systems(baseline=str(a), candidates=[str(b)])
    failed = compare_job(given, gate=Gate(None, min_judged=0.9))
    assert failed.gate is not None and failed.gate.failed and failed.gate.failures == []
    assert [c["judged"] for c in failed.gate.coverage_failures] == [pytest.approx(0.8)]
    passed = compare_job(given, gate=Gate(Margin.parse("0.01"), min_judged=0.8))
    assert passed.gate is not None and not passed.gate.failed
    with pytest.raises(UsageError, match="a gate needs a margin"):
        Gate(None)
    with pytest.raises(UsageError, match="fraction from 0 to 1"):
        Gate(None, min_judged=2.0)


def _where(row: dict) -> tuple:
    return (row["candidate"], row["k"], row["group"], row["partition"], row["family"])


def test_the_floor_only_adds_failures_on_random_systems() -> None:
    """Random systems (two candidates, two days, three locales, two cutoffs): with --min-judged added,
    the margin's failures are exactly those without it; a flag that gates more rows keeps every
    coverage failure of the gate without it; and each coverage check is the candidate's mean
    Judged@k over its rows, as numpy computes it from the table."""
    generator = np.random.default_rng(11)
    options = Options(group_by=("locale",), partition_by=("dt",), permutations=2000, bootstrap_samples=10)
    flags = [(groups, partitions) for groups in (False, True) for partitions in (False, True)]
    keys = [(day, f"q{i}", k) for day in ("2026-11-20", "2026-11-21") for i in range(36) for k in (5, 10)]
    columns = {"dt": [d for d, _, _ in keys], "query_id": [q for _, q, _ in keys], "k": [k for _, _, k in keys],
               "locale": [("de", "fr", "ja")[int(q[1:]) % 3] for _, q, _ in keys]}  # fmt: skip
    seen = 0
    for _ in range(6):
        base = generator.uniform(0.2, 0.9, len(keys))
        tables = {"prod": pl.DataFrame(columns | {"ndcg": base, "judged": np.ones(len(keys))})}
        for name in ("c1", "c2"):
            shift = generator.uniform(-0.15, 0.05) + generator.normal(0, 0.1, len(keys))
            judged = generator.integers(0, 11, len(keys)) / 10  # Judged@10-like fractions
            tables[name] = pl.DataFrame(columns | {"ndcg": np.clip(base + shift, 0, 1), "judged": judged})
        comparison = compare_systems(tables, options).comparison
        coverage = candidate_judged(tables, [5, 10], group_by=("locale",), partition_by=("dt",))
        floor = float(generator.choice([0.45, 0.5, 0.55]))
        results = {}
        for groups, partitions in flags:
            plain = Gate(Margin(0.01), groups=groups, partitions=partitions)
            floored = Gate(Margin(0.01), groups=groups, partitions=partitions, min_judged=floor)
            run = {"by": ("locale",), "partition_by": ("dt",)}
            without = check_gate(comparison, plain, group_by=run["by"], partition_by=run["partition_by"])
            verdict = check_gate(comparison, floored, group_by=run["by"], partition_by=run["partition_by"],
                                 coverage=coverage)  # fmt: skip
            assert verdict.failures == without.failures
            assert verdict.failed >= without.failed
            results[groups, partitions] = {_where(row) for row in verdict.coverage_failures}
            for check in verdict.coverage_checks:
                rows = tables[check["candidate"]].filter(pl.col("k") == check["k"])
                if check["dt"] is not None:
                    rows = rows.filter(pl.col("dt") == check["dt"])
                if not check["overall"]:
                    rows = rows.filter(pl.col("locale") == check["locale"])
                values = rows.get_column("judged").to_numpy()
                assert check["judged_queries"] == len(values)
                assert check["judged"] == pytest.approx(float(np.mean(values)), abs=1e-12)
                assert check["failed"] == (float(np.mean(values)) < floor - 1e-12)
        for fewer, more in itertools.permutations(flags, 2):
            if fewer[0] <= more[0] and fewer[1] <= more[1]:
                assert results[fewer] <= results[more], (fewer, more)
        seen += len(results[True, True])
    assert seen > 0  # some coverage checks do fail: the property is not vacuous


# --- the report: coverage beside the tie bounds --------------------------------------------


def test_report_shows_coverage_per_system_and_group_and_says_how_to_get_it(tmp_path: Path) -> None:
    a, b, bare = tmp_path / "a", tmp_path / "b", tmp_path / "bare"
    for out, run, measures in ((a, RUN, "judged"), (b, RUN_B, "judged,P"), (bare, RUN_B, "P")):
        result = run_cli("evaluate", "--run", run, "--qrels", QRELS, "--k", "5,10", "--measures", measures,
                         "--group-by", "locale", "--out", out)  # fmt: skip
        assert result.returncode == 0, result.stderr
    html = tmp_path / "report.html"
    result = run_cli("report", a, b, bare, "--html", html, "--k", "5")
    assert result.returncode == 0, result.stderr
    text = html.read_text()
    page = Page(text)
    rows = [row for row in page.tables["coverage-table"] if row and row[0]["column"] == ""][1:]
    shown = {(row[0]["text"], row[1]["text"], row[2]["text"]): row[3:] for row in rows}
    assert {key[0] for key in shown} == {"a", "b"} and {key[2] for key in shown} == {"5"}
    for name, run in (("a", RUN), ("b", RUN_B)):
        by_query = judged_by_hand(run, QRELS, 5)
        locale_of = locales(run)
        groups: dict[str, list[float]] = defaultdict(list)
        for query, value in by_query.items():
            groups[locale_of[query]].append(value)
            groups["overall"].append(value)
        assert {key[1] for key in shown if key[0] == name} == set(groups)
        for group, values in groups.items():
            cells = {cell["column"]: cell["value"] for cell in shown[(name, group, "5")]}
            assert int(cells["queries"]) == len(values)
            assert float(cells["judged"]) == pytest.approx(sum(values) / len(values), abs=1e-12)
            assert int(cells["fully_judged"]) == sum(value == 1.0 for value in values)
            assert float(cells["lowest_judged"]) == pytest.approx(min(values), abs=1e-12)
    # the output evaluated without Judged@k is named, with the flag that records it
    assert "Judgment coverage not recorded for bare" in text and "--measures judged" in text


def test_report_of_a_gated_comparison_shows_its_coverage(tmp_path: Path) -> None:
    a, b = coverage_systems(tmp_path, [1.0] * 6 + [0.5] * 4)
    out = tmp_path / "cmp"
    assert compare(a, b, "--min-judged", "0.9", "--out", out).returncode == GATE_FAILED
    html = tmp_path / "report.html"
    assert run_cli("report", out, "--html", html).returncode == 0
    text = html.read_text()
    page = Page(text)
    [row] = [r for r in page.tables["coverage-gate-table"] if r and r[0]["column"] == ""][1:]
    assert [cell["text"] for cell in row] == ["cand vs prod", "10", "overall", "pooled", "10", "0.8000", "FAILED"]
    assert "Regression gate (--min-judged 0.9: the candidate&#39;s Judged@k): FAILED" in text
    # an ungated comparison says how to see the coverage of the systems it alone names
    plain = tmp_path / "plain"
    assert compare(a, b, "--out", plain).returncode == 0
    assert run_cli("report", plain, "--html", tmp_path / "plain.html").returncode == 0
    assert "Judgment coverage not recorded for prod, cand" in (tmp_path / "plain.html").read_text()


def test_report_names_an_output_without_judged_at_the_pages_cutoff(tmp_path: Path) -> None:
    # a evaluated at k=5 only, b at k=10: the page's cutoff is 10 (10 preferred among equals)
    a, b = tmp_path / "a", tmp_path / "b"
    for out, k in ((a, "5"), (b, "10")):
        result = run_cli("evaluate", "--run", RUN, "--qrels", QRELS, "--k", k, "--measures", "judged", "--out", out)
        assert result.returncode == 0, result.stderr
    html = tmp_path / "report.html"
    assert run_cli("report", a, b, "--html", html).returncode == 0
    text = html.read_text()
    assert "No Judged@k at k = 10 for a (evaluated at other cutoffs)" in text
    rows = [row for row in Page(text).tables["coverage-table"] if row and row[0]["column"] == ""][1:]
    assert [(row[0]["text"], row[1]["text"]) for row in rows] == [("b", "10")]
