"""The gate on the drop alone: `ndcg compare --fail-if-drop-over DROP` exits 6 when the
candidate's mean is below the baseline's by more than DROP, whatever the p-value, so it can fail
on two queries where `--fail-if-worse` (a significance test) cannot; beside the other gate flags
it only adds failures. Per-query tables are built by hand, so every mean and drop is the
arithmetic in the comments."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from pipeline.compare import Options, compare_systems
from pipeline.compare_job import Systems, compare_job
from pipeline.errors import UsageError
from pipeline.gate import Gate, GateCannotFail, Margin, check_gate
from tests.helpers import run_cli

GATE_FAILED = 6
FAST = ("--permutations", "2000", "--bootstrap", "200")


def output(folder: Path, rows: list[tuple], group: bool = False) -> Path:
    """An evaluation output holding only a per-query table: (query, k, ndcg[, locale]) rows."""
    folder.mkdir(parents=True)
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64} | ({"locale": pl.String} if group else {})
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(folder / "per_query.parquet")
    return folder


def systems(tmp_path: Path, base: list[float], cand: list[float]) -> tuple[Path, Path]:
    """Query q<i> scores base[i] / cand[i] at k=10."""
    a = output(tmp_path / "prod", [(f"q{i}", 10, v) for i, v in enumerate(base)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, v) for i, v in enumerate(cand)])
    return a, b


def compare(a: Path, b: Path, *flags: str) -> object:
    return run_cli("compare", "--baseline", a, "--candidate", b, *FAST, *flags)


def test_two_queries_fail_the_drop_alone_where_the_test_cannot(tmp_path: Path) -> None:
    # 2 queries, each 0.8 -> 0.6: the mean drops by 0.2 (25% of 0.8). The randomization test's
    # smallest p-value over 2 queries is 2/2^2 = 0.5: --fail-if-worse can never fail (exit 2), the
    # drop limit fails at once (0.2 > 0.05)
    a, b = systems(tmp_path, [0.8, 0.8], [0.6, 0.6])
    out = tmp_path / "cmp"
    result = compare(a, b, "--fail-if-drop-over", "0.05", "--out", out)
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    assert (
        "# gate FAILED: cand vs prod at k=10: mean 0.8000 -> 0.6000 (-0.2000, -25.0%), a drop beyond 0.0500 "
        "(--fail-if-drop-over 0.05, no significance test; 2 paired queries; family overall)"
    ) in result.stdout
    assert "# gate (--fail-if-drop-over 0.05, 1 check, no test): FAILED" in result.stdout
    assert "ndcg: error: regression gate failed: cand vs prod at k=10" in result.stderr
    gate = json.loads((out / "manifest.json").read_text())["gate"]
    assert gate["passed"] is False and gate["max_drop"] == "0.05" and gate["margin"] is None
    [failure] = gate["drop"]["failures"]
    assert failure["worse_by"] == pytest.approx(0.2) and failure["allowed_drop"] == pytest.approx(0.05)
    assert gate["drop"]["test"] is None and gate["failures"] == []  # no significance test was run
    significance = compare(a, b, "--fail-if-worse", "0.05")
    assert significance.returncode == 2 and "the smallest p-value its checks can reach is 0.5" in significance.stderr
    assert "--fail-if-drop-over DROP in place of --fail-if-worse" in significance.stderr
    assert compare(a, b, "--fail-if-drop-over", "0.25").returncode == 0  # 0.2 <= 0.25


@pytest.mark.parametrize(
    ("base", "cand", "limit", "code"),
    [
        # 0.8 -> 0.79 on every query: a drop of 0.01 (0.010000000000000009 in binary): exactly the
        # limit passes, as a drop of exactly --fail-if-worse's margin does
        ([0.8] * 4, [0.79] * 4, "0.01", 0),
        ([0.8] * 4, [0.79] * 4, "0.009", GATE_FAILED),
        # 0.5 -> 0.375: 25% of the baseline's mean, exactly (both exact in binary)
        ([0.5] * 4, [0.375] * 4, "25%", 0),
        ([0.5] * 4, [0.375] * 4, "20%", GATE_FAILED),
        # a better candidate passes a limit of 0
        ([0.5] * 4, [0.6] * 4, "0", 0),
        # unchanged: no drop, a limit of 0 passes
        ([0.5] * 4, [0.5] * 4, "0", 0),
        # one query alone can fail it: 0.9 -> 0.1
        ([0.9], [0.1], "0.5", GATE_FAILED),
    ],
)
def test_the_limit(tmp_path: Path, base: list[float], cand: list[float], limit: str, code: int) -> None:
    a, b = systems(tmp_path, base, cand)
    result = compare(a, b, "--fail-if-drop-over", limit)
    assert result.returncode == code, result.stdout + result.stderr


def test_a_rise_of_a_measure_better_lower_is_its_drop(tmp_path: Path) -> None:
    """unj (the unjudged fraction) is better lower: 0.2 -> 0.6 on 3 queries is worse by 0.4."""
    folders = []
    for name, values in (("prod", [0.2] * 3), ("cand", [0.6] * 3)):
        folder = tmp_path / name
        folder.mkdir()
        rows = {"query_id": ["q0", "q1", "q2"], "k": [10] * 3, "ndcg": [0.5] * 3, "unj": values}
        pl.DataFrame(rows).write_parquet(folder / "per_query.parquet")
        folders.append(folder)
    result = compare(*folders, "--measure", "unj", "--fail-if-drop-over", "0.1")
    assert result.returncode == GATE_FAILED, result.stderr
    assert "unj mean 0.2000 -> 0.6000 (+0.4000, +200.0%), a rise (lower is better) beyond 0.1000" in result.stdout
    assert compare(folders[1], folders[0], "--measure", "unj", "--fail-if-drop-over", "0.1").returncode == 0
    # a count has no direction: refused, as --fail-if-worse refuses it
    (tmp_path / "n").mkdir()
    for name, value in (("a", 20.0), ("b", 10.0)):
        folder = tmp_path / "n" / name
        folder.mkdir()
        pl.DataFrame({"query_id": ["q0"], "k": [10], "ndcg": [0.5], "num_ret": [value]}).write_parquet(
            folder / "per_query.parquet"
        )
    counted = compare(tmp_path / "n/a", tmp_path / "n/b", "--measure", "num_ret", "--fail-if-drop-over", "1")
    assert counted.returncode == 2 and "--fail-if-drop-over cannot gate num_ret: " in counted.stderr


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--fail-if-drop-over", "-0.1"), "is not a margin"),
        (("--fail-if-drop-over", "abc"), "cannot read 'abc'"),
        (("--fail-if-drop-over", "%"), "cannot read '%'"),
        (("--fail-if-drop-over", "nan"), "is not a margin"),
        (("--fail-if-drop-over", "0.1", "--alpha", "0.1"), "--alpha only applies with --fail-if-worse MARGIN"),
        (("--gate-groups",), "only applies with --fail-if-worse MARGIN, --fail-if-drop-over DROP or --min-judged F"),
    ],
)
def test_bad_drop_flags_are_usage_errors(tmp_path: Path, flags: tuple[str, ...], message: str) -> None:
    a, b = systems(tmp_path, [0.8] * 4, [0.6] * 4)
    result = compare(a, b, *flags)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


def test_groups_and_partitions_only_add_checks(tmp_path: Path) -> None:
    # de: 4 queries 0.5 -> 0.8 (+0.3 each); fr: 4 queries 0.5 -> 0.3 (-0.2 each). Overall the mean
    # rises by (4 * 0.3 - 4 * 0.2) / 8 = +0.05: the overall row passes a limit of 0.1, fr's drop of
    # 0.2 fails it once --gate-groups checks the groups
    base = [(f"d{i}", 10, 0.5, "de") for i in range(4)] + [(f"f{i}", 10, 0.5, "fr") for i in range(4)]
    cand = [(f"d{i}", 10, 0.8, "de") for i in range(4)] + [(f"f{i}", 10, 0.3, "fr") for i in range(4)]
    a, b = output(tmp_path / "prod", base, group=True), output(tmp_path / "cand", cand, group=True)
    flags = ("--group-by", "locale", "--fail-if-drop-over", "0.1")
    assert compare(a, b, *flags).returncode == 0
    grouped = compare(a, b, *flags, "--gate-groups")
    assert grouped.returncode == GATE_FAILED, grouped.stdout + grouped.stderr
    assert "# gate FAILED: cand vs prod at k=10, group locale='fr': mean 0.5000 -> 0.3000 (-0.2000" in grouped.stdout
    assert "family groups)" in grouped.stdout and "locale='de'" not in grouped.stdout.split("gate FAILED", 1)[1]
    # partitions: day 20 rises by 0.3 on 4 queries, day 21 drops by 0.2 on 4: pooled +0.05
    for name, days in (("pa", (0.5, 0.5)), ("pb", (0.8, 0.3))):
        for day, value in zip(("2026-11-20", "2026-11-21"), days, strict=True):
            folder = tmp_path / name / f"dt={day}"
            folder.mkdir(parents=True)
            rows = {"dt": [day] * 4, "query_id": [f"q{i}" for i in range(4)], "k": [10] * 4, "ndcg": [value] * 4}
            pl.DataFrame(rows).write_parquet(folder / "per_query.parquet")
    pooled = compare(tmp_path / "pa", tmp_path / "pb", "--fail-if-drop-over", "0.1")
    assert pooled.returncode == 0, pooled.stdout + pooled.stderr
    each = compare(tmp_path / "pa", tmp_path / "pb", "--fail-if-drop-over", "0.1", "--gate-partitions")
    assert each.returncode == GATE_FAILED, each.stdout + each.stderr
    assert "# gate FAILED: pb vs pa at k=10, partition dt=2026-11-21: mean 0.5000 -> 0.3000" in each.stdout


def test_beside_a_significance_gate_that_cannot_fail(tmp_path: Path) -> None:
    # 3 queries: --fail-if-worse alone cannot fail (p >= 2/2^3 = 0.25) and is refused. Beside a drop
    # limit the refusal stands when nothing failed (more checks never pass what fewer refused), and a
    # drop beyond the limit fails the gate (exit 6) with the idle family named beside it
    a, b = systems(tmp_path, [0.8] * 3, [0.75] * 3)  # a drop of 0.05
    both = compare(a, b, "--fail-if-worse", "0.01", "--fail-if-drop-over", "0.1")
    assert both.returncode == 2, both.stdout + both.stderr
    assert "--fail-if-drop-over 0.1 gates the drop without a test and passed; leave --fail-if-worse out" in both.stderr
    assert both.stdout.count("0.8000") == 1 and "REFUSED" in both.stdout  # the comparison is printed
    failing = compare(a, b, "--fail-if-worse", "0.01", "--fail-if-drop-over", "0.02")
    assert failing.returncode == GATE_FAILED, failing.stdout + failing.stderr
    assert "a drop beyond 0.0200 (--fail-if-drop-over 0.02" in failing.stdout
    assert "# gate: the gate cannot fail: family overall" in failing.stdout


def _verdicts(comparison: pl.DataFrame, gate: Gate, group_by: tuple[str, ...]) -> tuple[str, set, set]:
    """(passed | FAILED | REFUSED, the margin's failures, the drop limit's failures), each failure
    named by (family, group, k)."""
    try:
        result = check_gate(comparison, gate, group_by=group_by)
    except GateCannotFail as refused:
        result = refused.result
    named = lambda rows: {(row["family"], row["group"], row["k"]) for row in rows}  # noqa: E731
    return result.verdict, named(result.failures), named(result.drop_failures)


def test_more_checks_never_make_a_weaker_gate() -> None:
    """On random systems of 2 to 9 queries per group (some too few for the test), every set of gate
    flags against each of its supersets: a failure stays a failure (the same checks fail, more may
    be added), and a refusal never turns into a pass."""
    rng = np.random.default_rng(7)
    strength = {"passed": 0, "REFUSED": 1, "FAILED": 2}
    seen = {"FAILED": 0, "REFUSED": 0, "passed": 0}
    for trial in range(20):
        sizes = rng.integers(2, 10, size=3)
        rows = [(f"{g}{i}", g) for g, size in zip("xyz", sizes, strict=True) for i in range(size)]
        base = rng.uniform(0.3, 0.9, len(rows))
        cand = np.clip(base + rng.normal(rng.uniform(-0.06, 0.04), 0.05, len(rows)), 0, 1)
        tables = {
            name: pl.DataFrame(
                {"query_id": [q for q, _ in rows], "k": [10] * len(rows), "ndcg": values, "g": [g for _, g in rows]}
            )
            for name, values in (("prod", base), ("cand", cand))
        }
        comparison = compare_systems(
            tables, Options(group_by=("g",), permutations=500, bootstrap_samples=50)
        ).comparison
        flags = {"margin": Margin(0.01), "max_drop": Margin(0.03), "groups": True}
        results = {}
        for chosen in itertools.product((False, True), repeat=3):
            given = {key: value for key, value, on in zip(flags, flags.values(), chosen, strict=True) if on}
            if "margin" not in given and "max_drop" not in given:
                continue
            results[chosen] = _verdicts(comparison, Gate(**given), ("g",))
        for fewer, more in itertools.permutations(results, 2):
            if all(f <= m for f, m in zip(fewer, more, strict=True)):
                (weak, margin_f, drop_f), (strong, margin_m, drop_m) = results[fewer], results[more]
                assert strength[strong] >= strength[weak], (trial, fewer, more, weak, strong)
                assert margin_f <= margin_m and drop_f <= drop_m, (trial, fewer, more)
        for verdict, _, _ in results.values():
            seen[verdict] += 1
    assert min(seen.values()) >= 3, seen  # every verdict occurs: the property is not vacuous


def test_the_python_api_takes_the_drop_limit(tmp_path: Path) -> None:
    a, b = systems(tmp_path, [0.8, 0.8], [0.6, 0.6])
    given = Systems(baseline=str(a), candidates=[str(b)])
    failed = compare_job(given, gate=Gate(max_drop=Margin.parse("10%", "--fail-if-drop-over")))
    assert failed.gate is not None and failed.gate.failed and failed.gate.verdict == "FAILED"
    [failure] = failed.gate.drop_failures
    assert failure["allowed_drop"] == pytest.approx(0.08)  # 10% of the baseline's 0.8
    passed = compare_job(given, gate=Gate(max_drop=Margin(0.25)))
    assert passed.gate is not None and not passed.gate.failed and passed.gate.describe()["drop"]["passed"]
    with pytest.raises(UsageError, match=r"max_drop \(--fail-if-drop-over\) must be a pipeline.gate.Margin"):
        Gate(max_drop=0.05)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match=r"--fail-if-drop-over: cannot read 'x'"):
        Margin.parse("x", "--fail-if-drop-over")
    with pytest.raises(UsageError, match="a drop limit \\(--fail-if-drop-over\\)"):
        Gate()
    # the refusal of a gate that cannot fail carries the comparison it was asked over
    with pytest.raises(GateCannotFail) as refused:
        compare_job(given, gate=Gate(Margin(0.01)))
    assert refused.value.compared is not None and refused.value.compared.result.comparison.height == 1
    assert refused.value.result.verdict == "REFUSED" and refused.value.result.describe()["passed"] is None


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_runs_scored_here_on_each_local_engine(tmp_path: Path, engine: str) -> None:
    # 2 queries with a relevant d1 and an irrelevant d2: the baseline ranks d1 first (NDCG@10 1),
    # the candidate second (NDCG@10 = 1 / log2(3) = 0.6309): a drop of 0.369 on each query
    queries = ["q0", "q1"]
    pl.DataFrame(
        {"query_id": queries * 2, "doc_id": ["d1"] * 2 + ["d2"] * 2, "relevance": [1] * 2 + [0] * 2}
    ).write_parquet(tmp_path / "qrels.parquet")
    for name, (s1, s2) in {"good": (2.0, 1.0), "bad": (1.0, 2.0)}.items():
        pl.DataFrame(
            {"query_id": queries * 2, "doc_id": ["d1"] * 2 + ["d2"] * 2, "score": [s1] * 2 + [s2] * 2}
        ).write_parquet(tmp_path / f"{name}.parquet")
    drop = 1 - 1 / np.log2(3)
    result = run_cli(
        "compare", "--run", tmp_path / "good.parquet", "--run", tmp_path / "bad.parquet",
        "--qrels", tmp_path / "qrels.parquet", "--k", "10", "--engine", engine, *FAST,
        "--fail-if-drop-over", "0.3",
    )  # fmt: skip
    assert result.returncode == GATE_FAILED, result.stdout + result.stderr
    assert f"mean 1.0000 -> {1 / np.log2(3):.4f} ({-drop:+.4f}, {-drop:+.1%}), a drop beyond 0.3000" in result.stdout


def test_the_report_names_the_drop_limit(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib", reason="ndcg report needs the report extra")
    a, b = systems(tmp_path, [0.8] * 4, [0.6] * 4)  # a drop of 0.2 > 0.05
    out = tmp_path / "cmp"
    assert compare(a, b, "--fail-if-drop-over", "0.05", "--out", out).returncode == GATE_FAILED
    page = tmp_path / "report.html"
    done = run_cli("report", out, "--html", page)
    assert done.returncode == 0, done.stderr
    assert "<li>Regression gate (--fail-if-drop-over 0.05: the drop alone, no test): FAILED</li>" in page.read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("cand_ndcg", "cand_judged", "code", "failed"),
    [
        (0.45, 0.9, 0, set()),  # a drop of 0.05 <= 0.1, Judged@10 0.9 >= 0.8
        (0.3, 0.9, GATE_FAILED, {"drop"}),  # a drop of 0.2 > 0.1
        (0.45, 0.5, GATE_FAILED, {"coverage"}),  # Judged@10 0.5 < 0.8
        (0.3, 0.5, GATE_FAILED, {"drop", "coverage"}),
    ],
)
def test_beside_the_judgment_coverage_floor(
    tmp_path: Path, cand_ndcg: float, cand_judged: float, code: int, failed: set[str]
) -> None:
    """Two queries (0.5 and judged 1.0 in the baseline): the drop limit and the floor each fail on
    their own, and a failure of either fails the gate; neither is a test, so neither is refused."""
    folders = []
    for name, ndcg, judged in (("prod", 0.5, 1.0), ("cand", cand_ndcg, cand_judged)):
        folder = tmp_path / name
        folder.mkdir()
        rows = {"query_id": ["q0", "q1"], "k": [10, 10], "ndcg": [ndcg] * 2, "judged": [judged] * 2}
        pl.DataFrame(rows).write_parquet(folder / "per_query.parquet")
        folders.append(folder)
    out = tmp_path / "cmp"
    result = compare(*folders, "--fail-if-drop-over", "0.1", "--min-judged", "0.8", "--out", out)
    assert result.returncode == code, result.stdout + result.stderr
    gate = json.loads((out / "manifest.json").read_text())["gate"]
    found = {part for part in ("drop", "coverage") if gate[part]["failures"]}
    assert found == failed and gate["passed"] is (not failed)
