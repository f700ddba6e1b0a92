"""Delta Lake tables (the optional ``deltalake`` package): a folder holding ``_delta_log/``."""

from __future__ import annotations

from typing import Any


def table_version(source: Any) -> int:
    """The version of the Delta table ``source`` reads."""
    raise NotImplementedError
