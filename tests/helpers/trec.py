"""trec_eval's own expected outputs (tests/data/trec_eval), read as (measure, query) -> value, and
the check that our TREC lines conform to them."""

from __future__ import annotations

from tests.helpers import CONFORMANCE

ALL_TREC_CUTOFFS = "5,10,15,20,30,100,200,500,1000"


def expected_lines(name: str, *, rename: dict[str, str] | None = None) -> dict[tuple[str, str], float]:
    """``ndcg`` and ``ndcg_cut_*`` lines of an expected file, keyed by (measure, query)."""
    rename = rename or {}
    found = {}
    for line in (CONFORMANCE / name).read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        measure = rename.get(measure, measure)
        if measure == "ndcg" or measure.startswith("ndcg_cut_"):
            found[(measure, query)] = float(value)
    return found


def assert_conformant(actual: dict, expected: dict) -> None:
    assert expected, "no expected lines were read"
    missing = set(expected) - set(actual)
    assert not missing, f"lines trec_eval prints that we do not: {sorted(missing)}"
    wrong = {key: (actual[key], value) for key, value in expected.items() if abs(actual[key] - value) > 1e-4 + 1e-12}
    assert not wrong, f"(ours, trec_eval's): {wrong}"
