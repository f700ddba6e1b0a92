"""The gate's families: the overall rows are a Holm family of their own, each gated dimension
another, each held to alpha, so a flag that gates more rows can add failures and never take one
away; a gate that no data could fail is refused; an infinite score is refused cleanly. Per-query
tables are built by hand so that every p-value can be read off the arithmetic in the comments."""

from __future__ import annotations

import itertools
import json
from math import comb
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.compare import Options, compare_systems
from pipeline.errors import UsageError
from pipeline.gate import Gate, Margin, check_gate
from tests.helpers import run_cli

GATE_FAILED = 6


def output(folder: Path, rows: list[tuple], group: bool = False) -> Path:
    """An evaluation output holding only a per-query table: (query, k, ndcg[, locale]) rows."""
    folder.mkdir(parents=True)
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64} | ({"locale": pl.String} if group else {})
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(folder / "per_query.parquet")
    return folder


def grouped_systems(tmp_path: Path, losses: dict[str, int], size: int = 10) -> tuple[Path, Path]:
    """Per locale, ``size`` queries at 0.5 in the baseline; the candidate scores ``losses[locale]``
    of them 0.4 and the others 0.6 (deltas of -0.1 and +0.1)."""
    base, cand = [], []
    for locale, lost in losses.items():
        for i in range(size):
            query = f"{locale}{i}"
            base.append((query, 10, 0.5, locale))
            cand.append((query, 10, 0.4 if i < lost else 0.6, locale))
    return output(tmp_path / "prod", base, group=True), output(tmp_path / "cand", cand, group=True)


def test_gating_the_groups_keeps_the_overall_failure(tmp_path: Path) -> None:
    # 30 queries, deltas of -0.1 or +0.1: de loses 8 of 10, fr and ja 7 of 10; overall 22 of 30,
    # a mean drop of (22 - 8) * 0.1 / 30 = 0.0467 > 0.01. Under sign flips |sum| >= 1.4 when 22 or
    # more (or 8 or fewer) signs are minus: p = 2 * sum_{j>=22} C(30, j) / 2^30 = 0.0161 (estimated
    # from 10000 draws). Groups (exact, 2^10 vectors): de 2 * (45 + 10 + 1) / 1024 = 0.109, fr and
    # ja 2 * (120 + 45 + 10 + 1) / 1024 = 0.344. One Holm family of all four rows would hold the
    # overall row to 4 * 0.0161 = 0.064 > 0.05: --gate-groups made the gate pass. Its own family: fails.
    expected_p = 2 * sum(comb(30, j) for j in range(22, 31)) / 2**30
    assert 4 * expected_p > 0.05  # the drop one family of four would have let through
    a, b = grouped_systems(tmp_path, {"de": 8, "fr": 7, "ja": 7})
    runs = {}
    for flags in ((), ("--gate-groups",)):
        out = tmp_path / ("cmp" + "".join(flags))
        runs[flags] = run_cli(
            "compare", "--baseline", a, "--candidate", b, "--group-by", "locale",
            "--fail-if-worse", "0.01", "--gate-k", "10", *flags, "--out", out,
        )  # fmt: skip
        assert runs[flags].returncode == GATE_FAILED, runs[flags].stdout + runs[flags].stderr
        gate = json.loads((out / "manifest.json").read_text())["gate"]
        [failure] = gate["failures"]
        assert failure["overall"] is True and failure["family"] == "overall" and failure["family_checks"] == 1
        assert failure["p_gate"] == pytest.approx(expected_p, abs=0.005)
        assert failure["mean_difference"] == pytest.approx(-1.4 / 30)
    grouped = runs[("--gate-groups",)].stdout
    assert "4 check(s) in 2 families" in grouped
    assert "# gate family overall (1 check, Holm, alpha 0.05): the rows over all queries" in grouped
    assert "# gate family groups (3 checks, Holm, alpha 0.05): each group's rows (--gate-groups): passed" in grouped
    assert "(family overall: 1 check, Holm)" in grouped
    gate = json.loads((tmp_path / "cmp--gate-groups" / "manifest.json").read_text())["gate"]
    assert [(f["name"], f["checks"], f["alpha"], f["passed"]) for f in gate["families"]] == [
        ("overall", 1, 0.05, False),
        ("groups", 3, 0.05, True),
    ]
    assert sorted(c["family"] for c in gate["checks"]) == ["groups", "groups", "groups", "overall"]


def _failures(comparison: pl.DataFrame, gate: Gate, options: Options) -> dict[str, set[tuple]]:
    verdict = check_gate(
        comparison, gate, group_by=options.group_by, partition_by=options.partition_by, correction=options.correction
    )
    found: dict[str, set[tuple]] = {}
    for row in verdict.failures:
        found.setdefault(row["family"], set()).add((row["candidate"], row["k"], row["group"], row["partition"]))
    return found


@pytest.mark.parametrize("correction", ["holm", "bonferroni"])
def test_adding_a_gating_flag_never_takes_a_failure_away(correction: str) -> None:
    """For random systems (three candidates, two days, three locales, two cutoffs), the failures
    of every family a gate without a flag has are exactly those of the gate with it: gating more
    only adds families."""
    generator = np.random.default_rng(7)
    options = Options(
        group_by=("locale",), partition_by=("dt",), permutations=2000, bootstrap_samples=10, correction=correction
    )
    flags = [(groups, partitions) for groups in (False, True) for partitions in (False, True)]
    seen_failures = 0
    for _ in range(12):
        # 12 queries per day and locale: the largest family (3 pairs x 2 cutoffs x 2 days x 3 locales =
        # 36 checks) can fail, 36 / (2000 + 1) < 0.05
        keys = [(day, f"q{i}", k) for day in ("2026-11-20", "2026-11-21") for i in range(36) for k in (5, 10)]
        locales = [("de", "fr", "ja")[int(q[1:]) % 3] for _, q, _ in keys]
        base = generator.uniform(0.2, 0.9, len(keys))
        tables = {"prod": pl.DataFrame({"dt": [d for d, _, _ in keys], "query_id": [q for _, q, _ in keys],
                                        "k": [k for _, _, k in keys], "ndcg": base, "locale": locales})}  # fmt: skip
        for name in ("c1", "c2", "c3"):
            shift = generator.uniform(-0.15, 0.05) + generator.normal(0, 0.1, len(keys))
            tables[name] = tables["prod"].with_columns(ndcg=pl.Series(np.clip(base + shift, 0, 1)))
        comparison = compare_systems(tables, options).comparison
        margin = Margin(float(generator.choice([0.0, 0.01, 0.03])))
        results = {
            (g, p): _failures(comparison, Gate(margin, alpha=0.05, groups=g, partitions=p), options) for g, p in flags
        }
        for fewer, more in itertools.permutations(flags, 2):
            if fewer[0] <= more[0] and fewer[1] <= more[1]:
                for family, failed in results[fewer].items():
                    assert results[more].get(family, set()) == failed, (fewer, more, family)
        seen_failures += sum(len(f) for f in results[True, True].values())
    assert seen_failures > 0  # the data do fail some checks: the property is not vacuous


def test_a_gate_that_cannot_fail_is_refused(tmp_path: Path) -> None:
    # 5 queries, each 0.8 -> 0.6: the exact test has 2^5 = 32 sign vectors and the observed one and
    # its negation always reach |sum|: p >= 2/32 = 0.0625 > 0.05 whatever the drop
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.8) for i in range(5)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.6) for i in range(5)])
    assert run_cli("compare", "--baseline", a, "--candidate", b).returncode == 0  # comparing alone is fine
    refused = run_cli("compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", "--out", tmp_path / "o")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "the gate cannot fail: family overall (1 check, Holm, alpha 0.05)" in refused.stderr
    assert "the smallest p-value its checks can reach is 0.0625" in refused.stderr
    assert "at least 6 paired queries" in refused.stderr  # 2/64 = 0.031 < 0.05
    assert "Traceback" not in refused.stderr and not (tmp_path / "o").exists()
    # 20 queries but 10 random sign flips: p >= 1/11 = 0.091; 20 flips give 1/21 = 0.048 < 0.05
    a = output(tmp_path / "prod20", [(f"q{i}", 10, 0.8) for i in range(20)])
    b = output(tmp_path / "cand20", [(f"q{i}", 10, 0.6) for i in range(20)])
    few = run_cli("compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", "--permutations", "10")
    assert few.returncode == 2 and "--permutations 20 or more" in few.stderr, few.stderr
    enough = run_cli("compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01", "--permutations", "20")
    assert enough.returncode == GATE_FAILED, enough.stderr


def test_a_family_that_cannot_fail_keeps_the_overall_failure(tmp_path: Path) -> None:
    # 4 locales of 3 queries, each 0.5 -> 0.4: overall 12 paired queries all worse, p = 2/2^12 =
    # 0.0005 (estimated from the draws, below 0.05): the overall family fails. Each group's 3
    # queries reach p >= 2/8 = 0.25 at best: the groups family cannot fail whatever the data.
    # Adding --gate-groups must not turn the failing gate into a refusal: exit 6, the overall
    # failure printed, the idle family named beside it.
    locales = ("de", "fr", "ja", "es")
    base = [(f"{loc}{i}", 10, 0.5, loc) for loc in locales for i in range(3)]
    cand = [(f"{loc}{i}", 10, 0.4, loc) for loc in locales for i in range(3)]
    a, b = output(tmp_path / "prod", base, group=True), output(tmp_path / "cand", cand, group=True)
    flags = ("--group-by", "locale", "--fail-if-worse", "0.01")
    alone = run_cli("compare", "--baseline", a, "--candidate", b, *flags)
    assert alone.returncode == GATE_FAILED, alone.stderr
    out = tmp_path / "cmp"
    both = run_cli("compare", "--baseline", a, "--candidate", b, *flags, "--gate-groups", "--out", out)
    assert both.returncode == GATE_FAILED, both.stdout + both.stderr
    assert "# gate family overall (1 check, Holm, alpha 0.05): the rows over all queries" in both.stdout
    assert "over the paired partitions): FAILED (1 failure(s))" in both.stdout
    assert (
        "# gate family groups (4 checks, Holm, alpha 0.05): each group's rows (--gate-groups): cannot fail"
        in both.stdout
    )
    assert "# gate FAILED: cand vs prod at k=10" in both.stdout
    assert "# gate: the gate cannot fail: family groups (4 checks, Holm, alpha 0.05)" in both.stdout
    gate = json.loads((out / "manifest.json").read_text())["gate"]
    assert gate["passed"] is False and len(gate["failures"]) == 1
    assert gate["unreachable_families"][0].startswith("the gate cannot fail: family groups")
    # the groups alone, overall passing: still refused, as before
    rising = [(q, k, 0.6, loc) for q, k, _, loc in cand]
    c = output(tmp_path / "rising", rising, group=True)
    refused = run_cli("compare", "--baseline", a, "--candidate", c, *flags, "--gate-groups")
    assert refused.returncode == 2 and "the gate cannot fail: family groups" in refused.stderr, refused.stderr


def test_checks_that_cannot_fail_are_said(tmp_path: Path) -> None:
    # de: 10 queries 0.5 -> 0.4 (p = 2/1024, its family of two: 0.0039); fr: 3 queries, p >= 2/8:
    # it cannot fail whatever the data, and the verdict says so
    base = [(f"d{i}", 10, 0.5, "de") for i in range(10)] + [(f"f{i}", 10, 0.5, "fr") for i in range(3)]
    cand = [(f"d{i}", 10, 0.4, "de") for i in range(10)] + [(f"f{i}", 10, 0.1, "fr") for i in range(3)]
    a, b = output(tmp_path / "prod", base, group=True), output(tmp_path / "cand", cand, group=True)
    out = tmp_path / "cmp"
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--group-by", "locale",
                     "--fail-if-worse", "0.01", "--gate-groups", "--out", out)  # fmt: skip
    assert result.returncode == GATE_FAILED, result.stderr
    assert (
        "# gate: 1 check cannot fail whatever the data (too few paired queries or permutations to reach alpha): "
        "cand vs prod at k=10, group locale='fr' (3 paired queries, p >= 0.25; family groups)"
    ) in result.stdout
    gate = json.loads((out / "manifest.json").read_text())["gate"]
    [idle] = gate["cannot_fail"]
    assert idle["locale"] == "fr" and idle["smallest_p"] == pytest.approx(0.25) and idle["can_fail"] is False


def test_an_infinite_score_is_refused_cleanly(tmp_path: Path) -> None:
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.5) for i in range(10)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, float("inf") if i == 3 else 0.5) for i in range(10)])
    result = run_cli("compare", "--baseline", a, "--candidate", b, "--fail-if-worse", "0.01")
    assert result.returncode == 3, result.stderr
    assert "cand: 1 row(s) with infinite score ('ndcg' column), e.g. {'query_id': 'q3'" in result.stderr
    assert "internal error" not in result.stderr and "did not converge" not in result.stderr


def test_the_library_refuses_a_gate_that_cannot_fail() -> None:
    tables = {
        "prod": pl.DataFrame({"query_id": ["q1", "q2", "q3"], "k": [10] * 3, "ndcg": [0.9] * 3}),
        "cand": pl.DataFrame({"query_id": ["q1", "q2", "q3"], "k": [10] * 3, "ndcg": [0.1] * 3}),
    }
    comparison = compare_systems(tables).comparison
    with pytest.raises(UsageError, match=r"cannot fail.*0\.25"):
        check_gate(comparison, Gate(Margin(0.01)))
