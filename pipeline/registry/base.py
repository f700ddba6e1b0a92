"""What every chapter of the registry stands on: its error, the bounds of a gain and a cutoff,
and the readers of the numbers flags and config keys take."""

from __future__ import annotations

import re

# The largest gain, in magnitude, a label may earn (pipeline.registry.gain): sums of up to
# 1.7e8 such gains stay finite in a double (1.8e308).
MAX_GAIN = 1e300
# The largest g_max of ERR (err_max_grade) whose 2^g_max a double holds
MAX_ERR_GRADE = 1023
# The largest cutoff: k is an int64 column of the outputs and an integer of both engines' SQL.
# A larger k ranks no differently (no query has that many results) but fits no table.
MAX_CUTOFF = 2**63 - 1


class SpecError(ValueError):
    """A measure or convention was described in a way we cannot accept."""


def decimal(text: str) -> float:
    """A flag's or config key's number as written (``--relevance-threshold``, ``--log-base``):
    Python's ``float`` also reads ``1_0`` as 10, a typo taken silently; refused here."""
    if isinstance(text, str) and "_" in text:
        raise SpecError(f"invalid float value: {text!r} (write the number without _)")
    return float(text)


decimal.__name__ = "float"  # argparse names a ValueError's type by it ("invalid float value")


def positive_int(text: str) -> int:
    """A flag's or config key's positive integer (``--max-results``)."""
    if not text.strip().isdigit() or int(text) < 1:
        raise SpecError(f"expected a positive integer, got {text!r}")
    if int(text) > MAX_CUTOFF:
        # the engines count in 64-bit integers (DuckDB cannot run the SQL with a larger literal)
        raise SpecError(f"must be at most {MAX_CUTOFF} (2**63 - 1), got {text.strip()}")
    return int(text)


def parse_cutoffs(text: str) -> tuple[int, ...]:
    """Read ``"5,10,20"`` into cutoffs, refusing anything but positive integers.

    >>> parse_cutoffs("20, 5,10")
    (5, 10, 20)
    """
    cutoffs = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"\d+", part) or int(part) < 1:
            raise SpecError(f"cannot read k {text!r}: each cutoff must be a positive integer (bad part: {part!r})")
        if int(part) > MAX_CUTOFF:
            raise SpecError(f"cutoff k must be at most {MAX_CUTOFF} (2**63 - 1), got {part}")
        cutoffs.append(int(part))
    if len(set(cutoffs)) != len(cutoffs):
        raise SpecError(f"cutoffs repeat a value: {text!r}")
    return tuple(sorted(cutoffs))


def number_text(value: float) -> str:
    # beyond 2**53 a float's integer digits are not its value's: print it as a float
    return str(int(value)) if float(value).is_integer() and abs(value) < 2**53 else repr(float(value))


# The cutoffs evaluated when none is given and no measure's name carries one (``--k``'s default).
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 20)
