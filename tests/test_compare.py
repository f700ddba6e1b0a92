"""Paired comparison: statistics checked against scipy and against visible arithmetic."""

from __future__ import annotations

import itertools
import math
from types import ModuleType

import numpy as np
import polars as pl
import pytest

from pipeline.compare import Options, compare_systems, pair, unpaired_queries
from pipeline.errors import InvalidInput, UsageError
from pipeline.stats import adjust_p_values, bootstrap_interval, paired_t_test, sign_flip_p_value, student_t_two_sided

FAST = {"permutations": 2000, "bootstrap_samples": 2000}


def table(rows: list[tuple], **extra: list) -> pl.DataFrame:
    """A per-query table from ``(query_id, k, ndcg)`` rows."""
    frame = pl.DataFrame(rows, schema={"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64}, orient="row")
    return frame.with_columns(**{name: pl.Series(values) for name, values in extra.items()})


def scipy_stats() -> ModuleType:
    """scipy.stats, imported by the tests that compare with it: its import is 2 s of every
    pytest worker's collection otherwise."""
    from scipy import stats

    return stats


# --- the distributions and tests, against scipy -------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 4.5, 9, 29, 120, 5000])
@pytest.mark.parametrize("t", [0.0, 1e-6, 0.3, 1.0, 2.0, 2.7, 5.0, 12.0, -3.3])
def test_student_t_matches_scipy(t: float, df: float) -> None:
    stats = scipy_stats()
    expected = 2 * stats.t.sf(abs(t), df)
    assert student_t_two_sided(t, df) == pytest.approx(expected, rel=1e-10, abs=1e-15)


def test_paired_t_test_matches_scipy() -> None:
    stats = scipy_stats()
    rng = np.random.default_rng(7)
    for n in (2, 3, 10, 57):
        baseline, candidate = rng.uniform(size=n), rng.uniform(size=n)
        t, p = paired_t_test(candidate - baseline)
        expected = stats.ttest_rel(candidate, baseline)
        assert t == pytest.approx(expected.statistic, rel=1e-12)
        assert p == pytest.approx(expected.pvalue, rel=1e-9)


def test_t_test_is_undefined_without_spread() -> None:
    assert paired_t_test(np.array([0.1])) == (None, None)
    assert paired_t_test(np.array([0.2, 0.2, 0.2])) == (None, None)
    assert paired_t_test(np.zeros(4)) == (None, None)


def _enumerated_p_value(deltas: list[float]) -> float:
    """Every sign vector, written out: the share whose |sum| reaches the observed |sum|."""
    observed = abs(sum(deltas))
    vectors = list(itertools.product((1, -1), repeat=len(deltas)))
    hits = sum(abs(sum(s * d for s, d in zip(signs, deltas, strict=True))) >= observed - 1e-12 for signs in vectors)
    return hits / len(vectors)


def test_exact_sign_flip_matches_enumeration_and_scipy() -> None:
    stats = scipy_stats()
    rng = np.random.default_rng(3)
    for n in (1, 4, 9):
        deltas = np.round(rng.normal(0.05, 0.2, size=n), 3)
        ours = sign_flip_p_value(deltas, permutations=2**n, seed=0)
        assert ours == pytest.approx(_enumerated_p_value(deltas.tolist()), abs=1e-12)
        if n < 2:
            continue  # scipy's permutation_test needs two observations
        scipy_result = stats.permutation_test(
            (deltas,), lambda d, axis: np.mean(d, axis=axis), permutation_type="samples", n_resamples=2**n
        )
        assert ours == pytest.approx(scipy_result.pvalue, abs=1e-12)


def test_exact_sign_flip_with_tied_magnitudes() -> None:
    # deltas +0.1, -0.1, +0.1: sums of the 8 sign vectors are ±0.3 (2 vectors) and ±0.1 (6);
    # every |sum| >= 0.1, so p = 8/8.
    assert sign_flip_p_value(np.array([0.1, -0.1, 0.1]), permutations=8, seed=0) == pytest.approx(1.0)
    # deltas all +0.1: only the two all-same-sign vectors reach |sum| = 0.3: p = 2/8.
    assert sign_flip_p_value(np.array([0.1, 0.1, 0.1]), permutations=8, seed=0) == pytest.approx(2 / 8)


def test_random_sign_flip_is_close_to_scipy() -> None:
    stats = scipy_stats()
    rng = np.random.default_rng(11)
    deltas = rng.normal(0.03, 0.15, size=40)
    ours = sign_flip_p_value(deltas, permutations=4000, seed=1)
    assert ours == sign_flip_p_value(deltas, permutations=4000, seed=1)  # seeded: repeatable
    scipy_result = stats.permutation_test(
        (deltas,), lambda d, axis: np.mean(d, axis=axis), permutation_type="samples", n_resamples=4000, rng=2
    )
    # Two Monte Carlo estimates of one p-value (~0.2): the standard error of each is
    # sqrt(0.2 * 0.8 / 4000) ~ 0.0063; 0.04 is over four standard errors of their difference.
    assert ours == pytest.approx(scipy_result.pvalue, abs=0.04)
    # and both are close to the t-test's p-value, which approximates the same null here
    assert ours == pytest.approx(paired_t_test(deltas)[1], abs=0.05)


def test_bootstrap_interval_is_close_to_scipy_percentile() -> None:
    stats = scipy_stats()
    rng = np.random.default_rng(5)
    deltas = rng.normal(0.02, 0.2, size=60)
    low, high = bootstrap_interval(deltas, samples=5000, seed=0)
    assert (low, high) == bootstrap_interval(deltas, samples=5000, seed=0)
    expected = stats.bootstrap(
        (deltas,), np.mean, n_resamples=5000, method="percentile", confidence_level=0.95, rng=1
    ).confidence_interval
    standard_error = deltas.std(ddof=1) / math.sqrt(deltas.size)
    assert low == pytest.approx(expected.low, abs=0.15 * standard_error)
    assert high == pytest.approx(expected.high, abs=0.15 * standard_error)
    assert low < deltas.mean() < high


def test_bootstrap_of_one_query_is_that_query() -> None:
    assert bootstrap_interval(np.array([0.25]), samples=50, seed=0) == pytest.approx((0.25, 0.25))


def test_holm_and_bonferroni() -> None:
    p_values = [0.01, 0.04, 0.03, None]
    # Bonferroni: m = 3 tests (the null is no test): 3p, capped at 1
    assert adjust_p_values(p_values, "bonferroni") == pytest.approx([0.03, 0.12, 0.09, None])
    # Holm: sorted 0.01, 0.03, 0.04 -> 3*0.01 = 0.03; 2*0.03 = 0.06; max(0.06, 1*0.04) = 0.06
    assert adjust_p_values(p_values, "holm") == pytest.approx([0.03, 0.06, 0.06, None])
    assert adjust_p_values([0.6, 0.5], "holm") == pytest.approx([1.0, 1.0])  # 2*0.5 = 1.0, capped
    with pytest.raises(UsageError, match="sidak"):
        adjust_p_values([0.1], "sidak")


# --- pairing and the comparison table -------------------------------------------------------

BASELINE = table([("q1", 10, 0.5), ("q2", 10, 0.2), ("q3", 10, 0.9), ("q5", 10, 0.3)])
CANDIDATE = table([("q1", 10, 0.7), ("q2", 10, 0.2), ("q4", 10, 0.4), ("q5", 10, 0.1)])


def test_common_queries_only_by_default() -> None:
    stats = scipy_stats()
    result = compare_systems({"base": BASELINE, "cand": CANDIDATE}, Options(**FAST))
    row = result.comparison.row(0, named=True)
    # common queries q1, q2, q5: deltas 0.7-0.5 = 0.2, 0.2-0.2 = 0, 0.1-0.3 = -0.2
    assert (row["baseline"], row["candidate"], row["k"]) == ("base", "cand", 10)
    assert row["queries"] == 3
    assert (row["only_baseline"], row["only_candidate"]) == (1, 1)  # q3, q4
    assert row["mean_baseline"] == pytest.approx((0.5 + 0.2 + 0.3) / 3)
    assert row["mean_candidate"] == pytest.approx((0.7 + 0.2 + 0.1) / 3)
    assert row["mean_difference"] == pytest.approx((0.2 + 0.0 - 0.2) / 3, abs=1e-15)
    assert (row["wins"], row["ties"], row["losses"]) == (1, 1, 1)
    expected = stats.ttest_rel([0.7, 0.2, 0.1], [0.5, 0.2, 0.3])
    assert row["t_statistic"] == pytest.approx(expected.statistic, abs=1e-12)
    assert row["p_value_t"] == pytest.approx(expected.pvalue)
    assert row["p_value_permutation"] == pytest.approx(_enumerated_p_value([0.2, 0.0, -0.2]))  # 2^3 <= 2000: exact
    assert row["correction"] == "holm" and row["p_adjusted_t"] == pytest.approx(row["p_value_t"])
    unpaired = unpaired_queries(result.deltas).sort("side")
    assert unpaired.select("side", "queries").to_dicts() == [
        {"side": "baseline", "queries": ["q3"]},
        {"side": "candidate", "queries": ["q4"]},
    ]


def test_all_queries_scores_the_missing_side_zero() -> None:
    result = compare_systems({"base": BASELINE, "cand": CANDIDATE}, Options(all_queries=True, **FAST))
    row = result.comparison.row(0, named=True)
    # q3: 0 - 0.9; q4: 0.4 - 0
    deltas = [0.2, 0.0, -0.2, -0.9, 0.4]
    assert row["queries"] == 5
    assert row["mean_baseline"] == pytest.approx((0.5 + 0.2 + 0.3 + 0.9 + 0.0) / 5)
    assert row["mean_candidate"] == pytest.approx((0.7 + 0.2 + 0.1 + 0.0 + 0.4) / 5)
    assert row["mean_difference"] == pytest.approx(sum(deltas) / 5)
    assert row["relative_change"] == pytest.approx((sum(deltas) / 5) / ((0.5 + 0.2 + 0.3 + 0.9) / 5))
    assert (row["wins"], row["ties"], row["losses"]) == (2, 1, 2)
    assert row["p_value_permutation"] == pytest.approx(_enumerated_p_value(deltas))


def test_ties_within_tolerance_and_relative_change_of_zero_baseline() -> None:
    zero = table([("q1", 5, 0.0), ("q2", 5, 0.0)])
    almost = table([("q1", 5, 1e-13), ("q2", 5, 0.0)])
    row = compare_systems({"a": zero, "b": almost}, Options(**FAST)).comparison.row(0, named=True)
    assert (row["wins"], row["ties"], row["losses"]) == (0, 2, 0)
    assert row["relative_change"] is None  # baseline mean 0: no relative change to report


def test_whole_ranking_rows_pair_on_null_k() -> None:
    a = table([("q1", None, 0.4), ("q1", 5, 0.2), ("q2", None, 0.6), ("q2", 5, 0.3)])
    b = table([("q1", None, 0.5), ("q1", 5, 0.2), ("q2", None, 0.8), ("q2", 5, 0.1)])
    result = compare_systems({"a": a, "b": b}, Options(**FAST))
    assert result.comparison["k"].to_list() == [None, 5]
    assert result.comparison["mean_difference"].to_list() == pytest.approx([(0.1 + 0.2) / 2, (0.0 - 0.2) / 2])
    only_whole = compare_systems({"a": a, "b": b}, Options(cutoffs=(None,), **FAST)).comparison
    assert only_whole["k"].to_list() == [None]


def test_groups_show_a_regression_the_overall_mean_hides() -> None:
    locales = ["en", "en", "en", "de", "de"]
    a = table([(f"q{i}", 10, 0.5) for i in range(5)], locale=locales)
    # en improves by 0.3 on each query, de loses 0.1 on each: overall +0.14
    b = table([(f"q{i}", 10, 0.8 if i < 3 else 0.4) for i in range(5)], locale=locales)
    comparison = compare_systems({"a": a, "b": b}, Options(group_by=("locale",), **FAST)).comparison
    assert comparison.columns[:5] == ["baseline", "candidate", "locale", "overall", "k"]
    assert comparison["overall"].to_list() == [True, False, False]
    by_group = {(None if row["overall"] else row["locale"]): row for row in comparison.iter_rows(named=True)}
    assert by_group[None]["mean_difference"] == pytest.approx((3 * 0.3 - 2 * 0.1) / 5)
    assert by_group["en"]["mean_difference"] == pytest.approx(0.3)
    assert by_group["de"]["mean_difference"] == pytest.approx(-0.1)
    assert (by_group["de"]["wins"], by_group["de"]["losses"]) == (0, 2)
    assert by_group["de"]["queries"] == 2


def test_three_systems_every_pair_with_correction() -> None:
    rng = np.random.default_rng(2)
    base = rng.uniform(size=30)
    systems = {
        name: table([(f"q{i}", 10, float(v)) for i, v in enumerate(np.clip(base + shift, 0, 1))])
        for name, shift in (("a", 0.0), ("b", 0.05), ("c", -0.02))
    }
    for correction in ("holm", "bonferroni"):
        comparison = compare_systems(systems, Options(correction=correction, **FAST)).comparison
        assert comparison.select("baseline", "candidate").rows() == [("a", "b"), ("a", "c"), ("b", "c")]
        assert set(comparison["correction"]) == {correction}
        for raw, adjusted in (("p_value_t", "p_adjusted_t"), ("p_value_permutation", "p_adjusted_permutation")):
            expected = adjust_p_values(comparison[raw].to_list(), correction)
            assert comparison[adjusted].to_list() == pytest.approx(expected)
    # a pair's own numbers do not depend on which other systems were compared alongside it
    pairwise = compare_systems({"a": systems["a"], "b": systems["b"]}, Options(**FAST)).comparison
    three = compare_systems(systems, Options(**FAST)).comparison.filter(pl.col("candidate") == "b", baseline="a")
    for column in ("p_value_t", "p_value_permutation", "ci_low", "ci_high"):
        assert three[column][0] == pytest.approx(pairwise[column][0])


def test_integer_and_string_query_ids_pair_as_strings() -> None:
    numbers = pl.DataFrame({"query_id": [1, 2], "k": [10, 10], "ndcg": [0.5, 0.6]})
    texts = pl.DataFrame({"query_id": ["1", "2"], "k": [10, 10], "ndcg": [0.6, 0.6]})
    assert pair(numbers, texts)["delta"].to_list() == pytest.approx([0.1, 0.0])


def test_bad_inputs_are_named() -> None:
    duplicated = table([("q1", 10, 0.5), ("q1", 10, 0.6)])
    with pytest.raises(InvalidInput, match=r"dup: 1 row\(s\) with duplicates.*q1"):
        compare_systems({"dup": duplicated, "b": CANDIDATE})
    with pytest.raises(InvalidInput, match=r"missing column.*'ndcg'"):
        compare_systems({"a": BASELINE.drop("ndcg"), "b": CANDIDATE})
    with pytest.raises(InvalidInput, match="nan score"):
        compare_systems({"a": table([("q1", 10, float("nan"))]), "b": CANDIDATE})
    with pytest.raises(UsageError, match=r"a has no rows for k=5 \(it has k=10\)"):
        compare_systems({"a": BASELINE, "b": CANDIDATE}, Options(cutoffs=(5,)))
    with pytest.raises(InvalidInput, match=r"missing column.*'locale'"):
        compare_systems({"a": BASELINE, "b": CANDIDATE}, Options(group_by=("locale",)))
    with pytest.raises(UsageError, match="at least two systems"):
        compare_systems({"a": BASELINE})
    with pytest.raises(UsageError, match="unknown correction"):
        Options(correction="sidak")


def test_a_null_group_value_is_a_group_apart_from_the_overall_rows() -> None:
    locales = ["en", "en", None, None]
    a = table([(f"q{i}", 10, 0.5) for i in range(4)], locale=locales)
    b = table([(f"q{i}", 10, v) for i, v in enumerate((0.6, 0.7, 0.1, 0.3))], locale=locales)
    comparison = compare_systems({"a": a, "b": b}, Options(group_by=("locale",), **FAST)).comparison
    rows = [
        (row["locale"], row["overall"], row["queries"], row["mean_difference"])
        for row in comparison.iter_rows(named=True)
    ]
    assert rows == [
        (None, True, 4, pytest.approx((0.1 + 0.2 - 0.4 - 0.2) / 4)),
        (None, False, 2, pytest.approx((-0.4 - 0.2) / 2)),
        ("en", False, 2, pytest.approx((0.1 + 0.2) / 2)),
    ]
    # one pair per family: no adjustment, and the overall row is not a family with the null group
    assert comparison["p_adjusted_t"].to_list() == pytest.approx(comparison["p_value_t"].to_list())


def test_convention_differences_name_what_changes_ndcg() -> None:
    from pipeline.compare import convention_differences
    from pipeline.registry import Evaluation, Gain

    linear = Evaluation(cutoffs=(5, 10)).describe()
    other_cutoffs = Evaluation(cutoffs=(10, 20), tie_bounds=True, all_queries=True).describe()
    exponential = Evaluation(gain=Gain("exponential")).describe()
    assert convention_differences({"a": linear, "b": other_cutoffs}) == ({}, [])
    assert convention_differences({"a": linear, "b": exponential, "c": None}) == (
        {"gain": {"a": "linear", "b": "exponential"}},
        ["c"],
    )
    older = {key: value for key, value in linear.items() if key != "duplicates"}
    assert convention_differences({"a": linear, "b": older})[0] == {"duplicates": {"a": "error", "b": "not recorded"}}


def test_per_query_columns_of_the_wrong_type_are_named() -> None:
    with pytest.raises(InvalidInput, match=r"b: column 'ndcg' holds String, e.g. '0.5'; expected numbers"):
        compare_systems({"a": BASELINE, "b": BASELINE.with_columns(pl.col("ndcg").cast(pl.String))})
    with pytest.raises(InvalidInput, match=r"b: column 'query_id' holds Float64"):
        compare_systems({"a": BASELINE, "b": BASELINE.with_columns(pl.lit(1.5).alias("query_id"))})
    integers = BASELINE.with_columns(pl.col("ndcg").round(0).cast(pl.Int32))  # 0/1 scores are numbers too
    assert compare_systems({"a": BASELINE, "b": integers}, Options(**FAST)).comparison.height >= 1


def test_resampling_and_seed_bounds() -> None:
    with pytest.raises(UsageError, match="permutations must be at most 1,000,000"):
        Options(permutations=1_000_001)
    with pytest.raises(UsageError, match="bootstrap_samples must be at most"):
        Options(bootstrap_samples=10**12)
    with pytest.raises(UsageError, match="seed must be an integer from 0 to 9223372036854775807"):
        Options(seed=2**63)
    with pytest.raises(UsageError, match="cannot group by 'delta'"):
        Options(group_by=("delta",))
