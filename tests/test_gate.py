"""The regression gate: `ndcg compare --fail-if-worse MARGIN` exits 6 when the candidate got
worse by more than the margin, significantly; per-query tables built by hand, so that every
drop and every p-value can be read off the arithmetic in the comments."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from pipeline.compare_job import Systems, compare_job
from pipeline.errors import UsageError
from pipeline.gate import Gate, Margin
from tests.helpers import run_cli

GATE_FAILED = 6


def _exact_p(deltas: list[float]) -> float:
    """The exact two-sided sign-flip p-value, by brute force over every sign vector."""
    from itertools import product

    observed = abs(sum(deltas))
    hits = sum(
        abs(sum(s * d for s, d in zip(signs, deltas, strict=True))) >= observed - 1e-12
        for signs in product((1, -1), repeat=len(deltas))
    )
    return hits / 2 ** len(deltas)


P_MIXED = _exact_p([-0.5] * 5 + [0.3] * 5)


def output(folder: Path, rows: list[tuple], group: bool = False) -> Path:
    """An evaluation output holding only a per-query table: (query, k, ndcg[, locale]) rows."""
    folder.mkdir(parents=True)
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64} | ({"locale": pl.String} if group else {})
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(folder / "per_query.parquet")
    return folder


def systems(tmp_path: Path, base: list[float], cand: list[float], *, unchanged_k5: bool = True) -> tuple[Path, Path]:
    """Query q<i> scores base[i] / cand[i] at k=10; at k=5 both systems score 0.5 (no change)."""
    five = [(f"q{i}", 5, 0.5) for i in range(len(base))] if unchanged_k5 else []
    a = output(tmp_path / "prod", [(f"q{i}", 10, v) for i, v in enumerate(base)] + five)
    b = output(tmp_path / "cand", [(f"q{i}", 10, v) for i, v in enumerate(cand)] + five)
    return a, b


def compare(a: Path, b: Path, *flags: str) -> object:
    return run_cli("compare", "--baseline", a, "--candidate", b, *flags)


def test_large_significant_drop_fails_the_gate(tmp_path: Path) -> None:
    # 10 queries, each 0.8 -> 0.6: every delta is -0.2, the mean drop 0.2 > 0.01. The randomization
    # test enumerates all 2^10 = 1024 sign vectors (<= 10000 draws): only the all-minus and the
    # all-plus reach |sum| = 2.0, so p = 2/1024 = 0.00195 < 0.05 (two cutoffs gated: Holm gives
    # 2 * 0.00195 = 0.0039 for k=10; k=5 has no change, p = 1).
    a, b = systems(tmp_path, [0.8] * 10, [0.6] * 10)
    out = tmp_path / "cmp"
    result = compare(a, b, "--fail-if-worse", "0.01", "--out", out)
    assert result.returncode == GATE_FAILED, result.stderr
    assert "gate FAILED: cand vs prod at k=10: mean 0.8000 -> 0.6000 (-0.2000, -25.0%)" in result.stdout
    assert "k=5" not in result.stdout.split("FAILED", 1)[1]
    assert "ndcg: error: regression gate failed: cand vs prod at k=10" in result.stderr
    assert "Traceback" not in result.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    gate = manifest["gate"]
    assert gate["passed"] is False and gate["margin"] == "0.01" and gate["alpha"] == 0.05 and gate["checked"] == 2
    [failure] = gate["failures"]
    assert (failure["baseline"], failure["candidate"], failure["k"]) == ("prod", "cand", 10)
    assert failure["p_value_permutation"] == pytest.approx(2 / 1024)
    assert failure["p_gate"] == pytest.approx(2 * 2 / 1024)
    assert failure["mean_difference"] == pytest.approx(-0.2)
    # the comparison itself is written whole, as without the gate
    assert pl.read_parquet(out / "comparison.parquet").height == 2


def test_large_but_not_significant_drop_passes(tmp_path: Path) -> None:
    # baseline 0.5 everywhere; candidate 0.0 on 5 queries and 0.8 on 5: mean 0.4, a drop of 0.1
    # (ten times the margin). Deltas -0.5 x5 and +0.3 x5, sum -1.0: of the 1024 sign vectors, 464
    # reach |sum| >= 1.0 (p = 0.453, brute-forced by _exact_p): not significant.
    a, b = systems(tmp_path, [0.5] * 10, [0.0] * 5 + [0.8] * 5, unchanged_k5=False)
    out = tmp_path / "cmp"
    result = compare(a, b, "--fail-if-worse", "0.01", "--out", out, "--json")
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    [row] = payload["comparison"]
    assert row["mean_difference"] == pytest.approx(-0.1) and row["p_value_permutation"] == pytest.approx(P_MIXED)
    assert payload["gate"]["passed"] is True and payload["gate"]["failures"] == []
    assert json.loads((out / "manifest.json").read_text())["gate"]["passed"] is True
    assert "gate (--fail-if-worse 0.01, alpha 0.05, 1 check(s)" in compare(a, b, "--fail-if-worse", "0.01").stdout


def test_small_significant_drop_passes(tmp_path: Path) -> None:
    # every query 0.800 -> 0.795: significant (p = 2/1024) but a drop of 0.005 < 0.01
    a, b = systems(tmp_path, [0.8] * 10, [0.795] * 10)
    result = compare(a, b, "--fail-if-worse", "0.01")
    assert result.returncode == 0, result.stderr
    assert ": passed" in result.stdout
    # the same drop fails a margin of 0.001
    assert compare(a, b, "--fail-if-worse", "0.001").returncode == GATE_FAILED


def test_a_margin_of_minus_zero_is_zero() -> None:
    assert str(Margin.parse("-0")) == "0" and str(Margin.parse("-0%")) == "0%"


@pytest.mark.parametrize(("margin", "code"), [("20%", GATE_FAILED), ("25%", 0), ("30%", 0), ("0.125", 0)])
def test_relative_margin(tmp_path: Path, margin: str, code: int) -> None:
    # 0.5 -> 0.375 on every query: a drop of 0.125, exactly 25% of the baseline's 0.5 (all exact in
    # binary). 20% allows 0.1: fails; 25% allows 0.125: a drop of exactly the margin passes; 30%
    # allows 0.15. The absolute margin 0.125 is the same boundary.
    a, b = systems(tmp_path, [0.5] * 10, [0.375] * 10)
    result = compare(a, b, "--fail-if-worse", margin, "--k", "10")
    assert result.returncode == code, result.stdout + result.stderr
    if code:
        assert "a drop beyond 0.1000" in result.stdout


def test_per_group_failure_only_with_gate_groups(tmp_path: Path) -> None:
    # de: 10 queries 0.8 -> 0.6 (-0.2 each); fr: 10 queries 0.4 -> 0.6 (+0.2 each). Overall the mean
    # difference is 0: the overall rows pass. Group de: p = 2/1024; the groups are a family of two
    # rows (de, fr; the overall row is a family of its own), so Holm gives 2 * 2/1024 = 0.0039 <
    # 0.05: fails with --gate-groups.
    base = [(f"d{i}", 10, 0.8, "de") for i in range(10)] + [(f"f{i}", 10, 0.4, "fr") for i in range(10)]
    cand = [(f"d{i}", 10, 0.6, "de") for i in range(10)] + [(f"f{i}", 10, 0.6, "fr") for i in range(10)]
    a, b = output(tmp_path / "prod", base, group=True), output(tmp_path / "cand", cand, group=True)
    overall_only = compare(a, b, "--group-by", "locale", "--fail-if-worse", "0.01")
    assert overall_only.returncode == 0, overall_only.stderr
    out = tmp_path / "cmp"
    grouped = compare(a, b, "--group-by", "locale", "--fail-if-worse", "0.01", "--gate-groups", "--out", out)
    assert grouped.returncode == GATE_FAILED, grouped.stderr
    assert "gate FAILED: cand vs prod at k=10, group locale='de'" in grouped.stdout
    assert "locale='fr'" not in grouped.stdout.split("FAILED", 1)[1]
    gate = json.loads((out / "manifest.json").read_text())["gate"]
    assert gate["checked"] == 3 and gate["groups"] is True
    [failure] = gate["failures"]
    assert failure["locale"] == "de" and failure["overall"] is False
    assert failure["p_gate"] == pytest.approx(2 * 2 / 1024)
    assert failure["family"] == "groups" and failure["family_checks"] == 2
    assert [(f["name"], f["checks"], f["alpha"], f["passed"]) for f in gate["families"]] == [
        ("overall", 1, 0.05, True),
        ("groups", 2, 0.05, False),
    ]


def test_gate_k_restricts_the_cutoffs(tmp_path: Path) -> None:
    a, b = systems(tmp_path, [0.8] * 10, [0.6] * 10)
    assert compare(a, b, "--fail-if-worse", "0.01", "--gate-k", "5").returncode == 0
    assert compare(a, b, "--fail-if-worse", "0.01", "--gate-k", "10").returncode == GATE_FAILED
    missing = compare(a, b, "--fail-if-worse", "0.01", "--gate-k", "20")
    assert missing.returncode == 2 and "--gate-k 20 is not a compared cutoff (compared: 5, 10)" in missing.stderr


def test_without_the_flag_nothing_changes(tmp_path: Path) -> None:
    a, b = systems(tmp_path, [0.8] * 10, [0.6] * 10)
    out = tmp_path / "cmp"
    result = compare(a, b, "--out", out)
    assert result.returncode == 0 and "gate" not in result.stdout
    assert "gate" not in json.loads((out / "manifest.json").read_text())


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (("--fail-if-worse", "-0.01"), "is not a margin"),
        (("--fail-if-worse", "nan"), "is not a margin"),
        (("--fail-if-worse", "inf"), "is not a margin"),
        (("--fail-if-worse", "abc"), "cannot read 'abc'"),
        (("--fail-if-worse", "%"), "cannot read '%'"),
        (("--fail-if-worse", "0_01"), "cannot read '0_01'"),  # float() reads it as 1.0
        (("--fail-if-worse", "1_0%"), "cannot read '1_0%'"),
        (("--fail-if-worse=-2%",), "is not a margin"),  # argparse reads a lone -2% as a flag
        (("--fail-if-worse", "0.01", "--alpha", "0"), "between 0 and 1"),
        (("--fail-if-worse", "0.01", "--alpha", "nan"), "between 0 and 1"),
        (("--gate-k", "10"), "--gate-k only applies with --fail-if-worse"),
        (("--alpha", "0.1", "--gate-groups"), "--alpha, --gate-groups only apply with --fail-if-worse"),
        (("--fail-if-worse", "0.01", "--gate-groups"), "--gate-groups needs --group-by"),
    ],
)
def test_bad_gate_flags_are_usage_errors(tmp_path: Path, flags: tuple[str, ...], message: str) -> None:
    a, b = systems(tmp_path, [0.8] * 10, [0.6] * 10)
    out = tmp_path / "cmp"
    result = compare(a, b, *flags, "--out", out)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def write_good_and_bad_runs(folder: Path) -> None:
    """qrels.parquet, good.parquet and bad.parquet in ``folder``: 8 queries with a relevant d1
    and an irrelevant d2, ranked d1 first by the good run and d2 first by the bad one."""
    queries = [f"q{i}" for i in range(8)]
    qrels = pl.DataFrame({"query_id": queries * 2, "doc_id": ["d1"] * 8 + ["d2"] * 8, "relevance": [1] * 8 + [0] * 8})
    qrels.write_parquet(folder / "qrels.parquet")
    for name, (s1, s2) in {"good": (2.0, 1.0), "bad": (1.0, 2.0)}.items():
        pl.DataFrame(
            {"query_id": queries * 2, "doc_id": ["d1"] * 8 + ["d2"] * 8, "score": [s1] * 8 + [s2] * 8}
        ).write_parquet(folder / f"{name}.parquet")


def test_gate_over_runs_evaluated_here(tmp_path: Path) -> None:
    # 8 queries with a relevant d1 and an irrelevant d2: the baseline ranks d1 first (NDCG 1), the
    # candidate d2 first (NDCG@10 = 1/log2(3) = 0.6309): a drop of 0.369 on every query, p = 2/2^8
    write_good_and_bad_runs(tmp_path)
    result = run_cli(
        "compare",
        "--run",
        tmp_path / "good.parquet",
        "--run",
        tmp_path / "bad.parquet",
        "--qrels",
        tmp_path / "qrels.parquet",
        "--k",
        "10",
        "--fail-if-worse",
        "5%",
    )
    assert result.returncode == GATE_FAILED, result.stderr
    assert "gate FAILED: bad vs good at k=10: mean 1.0000 -> 0.6309" in result.stdout


def test_python_api(tmp_path: Path) -> None:
    a, b = systems(tmp_path, [0.8] * 10, [0.6] * 10)
    compared = compare_job(Systems(baseline=str(a), candidates=[str(b)]), gate=Gate(Margin.parse("0.01")))
    assert compared.gate is not None and compared.gate.failed
    assert [f["k"] for f in compared.gate.failures] == [10]
    passed = compare_job(Systems(baseline=str(a), candidates=[str(b)]), gate=Gate(Margin(0.3)))
    assert passed.gate is not None and not passed.gate.failed
    with pytest.raises(UsageError):
        Margin(-1.0)
    with pytest.raises(UsageError):
        Gate(Margin(0.01), alpha=1.5)


def test_only_pairs_with_the_first_system_are_gated(tmp_path: Path) -> None:
    # prod 0.6, cand 0.8, other 0.6: "other" is worse than "cand", but only prod is the baseline of the
    # gate, and prod -> other is no change
    base = output(tmp_path / "prod", [(f"q{i}", 10, 0.6) for i in range(10)])
    cand = output(tmp_path / "cand", [(f"q{i}", 10, 0.8) for i in range(10)])
    other = output(tmp_path / "other", [(f"q{i}", 10, 0.6) for i in range(10)])
    result = run_cli(
        "compare", "--baseline", base, "--candidate", cand, "--candidate", other, "--fail-if-worse", "0.01"
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_queries_the_candidate_lost_are_said_and_gated_with_all_queries(tmp_path: Path) -> None:
    # the candidate keeps q0..q9 unchanged (0.8) but lost q10..q19 (0.8 in the baseline): without
    # --all-queries the 10 lost queries are left out (the gate passes, with a warning naming them);
    # with it they score 0 for the candidate: 10 deltas of -0.8 and 10 of 0, mean -0.4, p = 2/1024
    a = output(tmp_path / "prod", [(f"q{i}", 10, 0.8) for i in range(20)])
    b = output(tmp_path / "cand", [(f"q{i}", 10, 0.8) for i in range(10)])
    left_out = compare(a, b, "--fail-if-worse", "0.01")
    assert left_out.returncode == 0, left_out.stderr
    assert "gate: 10 queries only in prod (not in cand) are not gated; --all-queries scores them 0" in left_out.stderr
    scored = compare(a, b, "--fail-if-worse", "0.01", "--all-queries")
    assert scored.returncode == GATE_FAILED, scored.stderr
    assert "mean 0.8000 -> 0.4000" in scored.stdout and "not gated" not in scored.stderr


def test_a_failure_of_another_measure_names_it(tmp_path: Path) -> None:
    """--measure recip_rank: the failure says whose means they are (8 queries, the relevant d1
    first for the baseline, second for the candidate: RR 1 -> 1/2, p = 2/2^8), never read as NDCG's."""
    write_good_and_bad_runs(tmp_path)
    out = tmp_path / "cmp"
    result = run_cli(
        "compare", "--run", tmp_path / "good.parquet", "--run", tmp_path / "bad.parquet",
        "--qrels", tmp_path / "qrels.parquet", "--k", "10", "--measure", "recip_rank",
        "--fail-if-worse", "0.01", "--out", out,
    )  # fmt: skip
    assert result.returncode == GATE_FAILED, result.stderr
    assert "gate FAILED: bad vs good at k=10: recip_rank mean 1.0000 -> 0.5000 (-0.5000, -50.0%)" in result.stdout
    [failure] = json.loads((out / "manifest.json").read_text())["gate"]["failures"]
    assert failure["measure"] == "recip_rank" and failure["p_value_permutation"] == pytest.approx(2 / 2**8)


def measure_outputs(tmp_path: Path, measure: str, base: list[float], cand: list[float]) -> tuple[Path, Path]:
    """Two outputs whose per-query tables hold ``measure`` at k=10 beside a constant ndcg."""
    folders = []
    for name, values in (("prod", base), ("cand", cand)):
        folder = tmp_path / name
        folder.mkdir(parents=True)
        rows = {"query_id": [f"q{i}" for i in range(len(values))], "k": [10] * len(values)}
        pl.DataFrame({**rows, "ndcg": [0.5] * len(values), measure: values}).write_parquet(folder / "per_query.parquet")
        folders.append(folder)
    return folders[0], folders[1]


def test_a_measure_whose_better_is_lower_fails_on_a_rise(tmp_path: Path) -> None:
    """unj (the unjudged fraction of the top k) is better lower: 10 queries 0.2 -> 0.6 is a rise of
    0.4 > 0.01 with p = 2/1024 (every delta +0.4: only the all-plus and all-minus sign vectors reach
    |sum| = 4), so the gate fails, and the candidate loses every query; the same numbers the other
    way round (0.6 -> 0.2) are an improvement that passes."""
    a, b = measure_outputs(tmp_path / "rise", "unj", [0.2] * 10, [0.6] * 10)
    result = compare(a, b, "--measure", "unj", "--fail-if-worse", "0.01")
    assert result.returncode == GATE_FAILED, result.stderr
    assert "gate FAILED: cand vs prod at k=10: unj mean 0.2000 -> 0.6000 (+0.4000, +200.0%), a rise" in result.stdout
    assert " 0/0/10 " in result.stdout  # wins/ties/losses: the candidate is worse on every query
    a, b = measure_outputs(tmp_path / "fall", "unj", [0.6] * 10, [0.2] * 10)
    result = compare(a, b, "--measure", "unj", "--fail-if-worse", "0.01")
    assert result.returncode == 0, result.stderr
    assert " 10/0/0 " in result.stdout and "# gate (--fail-if-worse 0.01" in result.stdout


@pytest.mark.parametrize("measure", ["num_ret", "idcg"])
def test_a_measure_without_a_direction_cannot_be_gated(tmp_path: Path, measure: str) -> None:
    """A count (num_ret) or a property of the judgments (idcg) is neither better higher nor lower:
    gating it as if higher were better would fail a run that merely returns fewer results."""
    a, b = measure_outputs(tmp_path, measure, [20.0] * 10, [10.0] * 10)
    result = compare(a, b, "--measure", measure, "--fail-if-worse", "0.01")
    assert result.returncode == 2, result.stderr
    assert f"--fail-if-worse cannot gate {measure}: " in result.stderr and "Traceback" not in result.stderr
    assert compare(a, b, "--measure", measure).returncode == 0  # compared without the gate
