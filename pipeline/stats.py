"""The statistics of a paired comparison, over arrays of per-query differences (numpy only).

- :func:`paired_t_test`: Student's paired t-test, its two-sided p-value from
  :func:`student_t_two_sided` (the regularized incomplete beta function, so no scipy);
- :func:`sign_flip_p_value`: the paired randomization test (random sign flips, or every sign
  vector when there are few enough: then exact);
- :func:`bootstrap_interval`: a percentile bootstrap interval of the mean difference;
- :func:`adjust_p_values`: Holm's or Bonferroni's adjustment over a family of p-values;
- :func:`smallest_sign_flip_p`: the smallest p-value the randomization test can give, whatever
  the deltas (a gate whose threshold lies below it cannot fail);
- :func:`weighed`: the deltas and weights the weighted randomization test and bootstrap run on
  (``--query-weights``): the weighted mean ``sum(w*d)/sum(w)`` is their statistic.

Random draws come from ``numpy.random.default_rng(seed)`` started afresh in each call, so a
result depends only on its own deltas and the seed. Resampling works on bounded blocks of
draws, so memory stays bounded however many queries or resamples are asked for.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from pipeline.errors import UsageError

# Two per-query scores within this distance are a tie (and deltas within it have no spread).
TIE_TOLERANCE = 1e-12
CORRECTIONS: tuple[str, ...] = ("holm", "bonferroni")
# Resampling works on (draws x queries) blocks of at most this many cells, so memory stays
# bounded however many queries or resamples are asked for.
_BLOCK_CELLS = 2_000_000


def student_t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for Student's t with ``df`` degrees of freedom.

    Uses the identity ``P(|T| >= |t|) = I_x(df/2, 1/2)`` with ``x = df / (df + t^2)``, where
    ``I`` is the regularized incomplete beta function (Abramowitz & Stegun 26.7.1 with 26.5.2),
    evaluated by its continued fraction; tested against ``scipy.stats.t`` to 1e-10 relative.

    >>> round(student_t_two_sided(2.0, 10), 6)  # scipy.stats.t.sf(2, 10) * 2
    0.073388
    """
    if math.isinf(t):
        return 0.0
    # 1 - x is computed as t^2 / (df + t^2), not by subtraction, to keep its digits for small t.
    return regularized_incomplete_beta(df / 2.0, 0.5, df / (df + t * t), complement=t * t / (df + t * t))


def regularized_incomplete_beta(a: float, b: float, x: float, *, complement: float | None = None) -> float:
    """``I_x(a, b)`` by the continued fraction of Numerical Recipes (2007) §6.4, evaluated
    with the modified Lentz method; the symmetry ``I_x(a, b) = 1 - I_{1-x}(b, a)`` keeps the
    fraction in the region where it converges fast. ``complement`` is ``1 - x`` when the
    caller knows it more precisely than the subtraction would give it."""
    y = 1.0 - x if complement is None else complement
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(y)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, y) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    tiny, epsilon = 1e-300, 1e-16
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= d * c
        if abs(d * c - 1.0) < epsilon:
            return fraction
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}")


def paired_t_test(deltas: np.ndarray) -> tuple[float | None, float | None]:
    """``(t, two-sided p)``; both None when undefined (fewer than 2 queries, or every
    delta equal within ``TIE_TOLERANCE`` so that the standard deviation is 0)."""
    n = deltas.size
    if n < 2:
        return None, None
    if float(np.ptp(deltas)) <= TIE_TOLERANCE:  # every delta the same: no spread to test against
        return None, None
    sd = float(np.std(deltas, ddof=1))
    t = float(np.mean(deltas)) / (sd / math.sqrt(n))
    return t, student_t_two_sided(t, n - 1)


def weighed(deltas: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The deltas of the queries that weigh more than 0, and their weights scaled by the largest.

    A query of weight 0 cannot move a weighted mean: flipping its sign changes no flipped mean, so
    it doubles the hits and the draws alike and the exact p-value is the same without it; left in,
    it would only make the test enumerate (or draw) more sign vectors than it can tell apart, and a
    bootstrap resample of such queries alone would have no mean (0/0). Scaling by the largest
    weight changes no weighted mean and makes weights all equal exactly 1.0, so that they give the
    unweighted test's numbers to the last digit."""
    kept = weights > 0
    deltas, weights = deltas[kept], weights[kept]
    return deltas, (weights / weights.max() if weights.size else weights)


def sign_flip_p_value(
    deltas: np.ndarray, permutations: int, seed: int, weights: np.ndarray | None = None
) -> float | None:
    """Two-sided p-value of the paired randomization test on the mean of ``deltas`` (with
    ``weights``, on the weighted mean ``sum(w*d)/sum(w)``: each delta keeps its weight, its sign
    flips; under the null hypothesis each delta is symmetric about 0 whatever its weight).

    Exact (every one of the ``2**n`` sign vectors) when ``2**n <= permutations``, otherwise
    ``permutations`` random sign vectors and ``(hits + 1) / (permutations + 1)``; ``n`` counts
    the queries that weigh more than 0 (:func:`weighed`).
    """
    if weights is not None:
        # sum(w) is the same for every sign vector: comparing |sum(s*w*d)| compares the means
        deltas, weights = weighed(deltas, weights)
        deltas = deltas * weights
    n = deltas.size
    if n == 0:
        return None
    observed = abs(float(deltas.sum()))
    # Sums of the same numbers in another order differ by rounding; a flipped sum that
    # equals the observed one up to that rounding counts as a hit (scipy does the same).
    threshold = observed - 1e-12 * max(float(np.abs(deltas).sum()), 1.0)
    exact = n < 63 and 2**n <= permutations
    draws = 2**n if exact else permutations
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // n)
    hits = 0
    for start in range(0, draws, block):
        size = min(block, draws - start)
        if exact:
            codes = np.arange(start, start + size, dtype=np.int64)[:, None]
            signs = 1 - 2 * ((codes >> np.arange(n, dtype=np.int64)) & 1)
        else:
            signs = 1 - 2 * rng.integers(0, 2, size=(size, n), dtype=np.int8)
        hits += int(np.count_nonzero(np.abs(signs @ deltas) >= threshold))
    return hits / draws if exact else (hits + 1) / (permutations + 1)


def smallest_sign_flip_p(queries: int, permutations: int) -> float | None:
    """The smallest p-value :func:`sign_flip_p_value` can return over ``queries`` deltas with
    ``permutations`` draws, whatever the deltas (None without a delta).

    Exact enumeration counts the observed sign vector and its negation, both as far from 0 as
    the observed sum: at least ``2 / 2**n``, reached when every delta has one sign. Random draws
    give ``(hits + 1) / (permutations + 1)``: at least ``1 / (permutations + 1)``, reached when
    no draw is as extreme as the observed sum.

    >>> smallest_sign_flip_p(5, 10_000)  # 2/32: five queries can never be significant at 0.05
    0.0625
    """
    if queries <= 0:
        return None
    if queries < 63 and 2**queries <= permutations:
        return 2 / 2**queries
    return 1 / (permutations + 1)


def bootstrap_interval(
    deltas: np.ndarray, samples: int, seed: int, confidence: float = 0.95, weights: np.ndarray | None = None
) -> tuple[float | None, float | None]:
    """Percentile bootstrap interval of the mean of ``deltas``: resample the queries with
    replacement ``samples`` times and take the ``(1 - confidence) / 2`` and
    ``(1 + confidence) / 2`` quantiles (linear interpolation) of the resampled means. With
    ``weights``, each query is drawn with its weight and a resample's mean is its weighted mean
    ``sum(w*d)/sum(w)``, over the queries that weigh more than 0 (:func:`weighed`)."""
    if weights is not None:
        deltas, weights = weighed(deltas, weights)
    n = deltas.size
    if n == 0:
        return None, None
    rng = np.random.default_rng(seed)
    block = max(1, _BLOCK_CELLS // n)
    means = np.empty(samples)
    for start in range(0, samples, block):
        size = min(block, samples - start)
        drawn = rng.integers(0, n, size=(size, n))
        if weights is None:
            means[start : start + size] = deltas[drawn].mean(axis=1)
        else:
            drawn_weights = weights[drawn]
            means[start : start + size] = (drawn_weights * deltas[drawn]).sum(axis=1) / drawn_weights.sum(axis=1)
    low, high = np.quantile(means, [(1 - confidence) / 2, (1 + confidence) / 2])
    return float(low), float(high)


def adjust_p_values(p_values: Sequence[float | None], method: str) -> list[float | None]:
    """Family-wise adjusted p-values; nulls stay null and do not count as tests.

    Bonferroni: ``min(1, m p)``. Holm: sort ascending, ``min(1, max_{j<=i} (m - j + 1) p_(j))``.
    """
    if method not in CORRECTIONS:
        raise UsageError(f"unknown correction {method!r}; expected one of {', '.join(CORRECTIONS)}")
    present = [(i, p) for i, p in enumerate(p_values) if p is not None]
    m = len(present)
    adjusted: list[float | None] = [None] * len(p_values)
    if method == "bonferroni":
        for i, p in present:
            adjusted[i] = min(1.0, m * p)
        return adjusted
    running = 0.0
    for rank, (i, p) in enumerate(sorted(present, key=lambda item: item[1])):
        running = max(running, min(1.0, (m - rank) * p))
        adjusted[i] = running
    return adjusted
