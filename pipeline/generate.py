"""``make generate`` (``python -m pipeline.generate``): every generated file, made anew from its
source, in one command.

- ``sql/counters/signals.sql``, ``running_sums.sql``, ``counters.sql``: the steps that name the
  registry's signals and counters (:mod:`pipeline.counter_steps`);
- ``sql/generated/per_query_composed.sql``: the steps as one statement (:mod:`pipeline.transpile`);
- ``sql/generated/macros.sql``: the table macros (:mod:`pipeline.macros`);
- ``sql/generated/derived_variables.sql``: the variables the registry derives, for the duckdb CLI
  (:mod:`pipeline.derived`);
- ``sql/generated/refusals.sql``: what ``sql/ndcg.sql`` refuses, in the command line's words
  (:mod:`pipeline.sql_refusals`);
- ``sql/generated/variable_types.sql``: a variable of ``sql/ndcg.sql`` set to a value of another
  type, refused in words (:mod:`pipeline.sql_variable_types`);
- the tables of docs/reference.md between its ``registry`` and ``options`` markers
  (:mod:`pipeline.registry.tables`);
- the keyword tables of docs/python-api.md between its ``keywords`` and ``compare keywords``
  markers (:mod:`pipeline.api_docs`).

Each is marked generated in ``.gitattributes`` and never edited by hand; tests check each is
what its generator makes. ``--check`` writes nothing and fails (exit 1) naming the stale files.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from pipeline.api_docs import python_api_tables
from pipeline.counter_steps import counters_sql, running_sums_sql, signals_sql
from pipeline.derived import derived_variables_sql
from pipeline.macros import macros_sql
from pipeline.registry.tables import reference_tables
from pipeline.sql_files import DERIVED_VARIABLES, MACROS, PER_QUERY_COMPOSED, REFUSALS, VARIABLE_TYPES_CHECK
from pipeline.sql_refusals import refusals_sql
from pipeline.sql_variable_types import variable_types_sql
from pipeline.transpile import collector_paused, composed_per_query_sql

ROOT = Path(__file__).resolve().parent.parent


def generated() -> dict[str, Callable[[str], str]]:
    """``{path from the repository root: the file's text, from its current text}``."""
    # the counters' steps first: the composed statement and the macros are made of the steps
    return {
        "sql/counters/signals.sql": lambda _: signals_sql(),
        "sql/counters/running_sums.sql": lambda _: running_sums_sql(),
        "sql/counters/counters.sql": lambda _: counters_sql(),
        f"sql/{PER_QUERY_COMPOSED}": lambda _: composed_per_query_sql(),
        f"sql/{MACROS}": lambda _: macros_sql(),
        f"sql/{DERIVED_VARIABLES}": lambda _: derived_variables_sql(),
        f"sql/{REFUSALS}": lambda _: refusals_sql(),
        f"sql/{VARIABLE_TYPES_CHECK}": lambda _: variable_types_sql(),
        "docs/reference.md": reference_tables,
        "docs/python-api.md": python_api_tables,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 naming the files that are stale")
    arguments = parser.parse_args(argv)
    stale = []
    for name, make in generated().items():
        path = ROOT / name
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        with collector_paused():  # the files are made of sqlglot's trees (see collector_paused)
            text = make(current)  # before the file is opened: a failure leaves the old file as it was
        if text == current:
            continue
        stale.append(name)
        if not arguments.check:
            path.write_text(text, encoding="utf-8")
    if arguments.check and stale:
        print(f"stale (run make generate): {', '.join(stale)}", file=sys.stderr)
        return 1
    print(f"{'stale' if arguments.check else 'written'}: {', '.join(stale) or 'none, all current'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
