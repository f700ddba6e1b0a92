"""The tables of docs/reference.md that list the registry, generated from it so that a new
convention, measure or option never leaves the docs stale (``make generate`` rewrites them;
tests/test_registry.py keeps them current), and the lists of measures sql/summary.sql reads."""

from __future__ import annotations

from pipeline.registry.conventions import CONVENTIONS
from pipeline.registry.measures import MEASURES, Measure
from pipeline.registry.options import OPTION_GROUPS, OPTIONS


def conventions_table() -> str:
    """The flags of the conventions and the measures, as the Markdown tables of docs/reference.md
    (between its ``registry`` markers; ``python -m pipeline.registry`` prints them)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| flag | meaning |", "|---|---|"]
    for c in CONVENTIONS:
        if c.switch:
            usage = f"{c.flag}` / `--no-{c.flag[2:]}"
        elif c.choices:
            usage = f"{c.flag} {'|'.join(c.values)}" + ("|MAP" if c.open else "")
        else:
            usage = f"{c.flag} {c.flag_default or c.metavar or c.name.upper()}"
        rows.append(f"| `{cell(usage)}` | {cell(c.flag_help)} |")
    rows += ["", "| measure | per query | trec_eval | ir_measures | summary |", "|---|---|---|---|---|"]
    for m in MEASURES:
        names = [
            ", ".join(f"`{name}`" for name in (whole, cut) if name) or "-"
            for whole, cut in ((m.trec_eval, m.trec_eval_cut), (m.ir_measures, m.ir_measures_cut))
        ]
        summary = {
            "mean": "mean over the evaluated queries",
            "sum": "sum over the evaluated queries",
            "geometric_mean": "geometric mean over the evaluated queries (of max(value, 1e-5))",
        }[m.aggregate]
        rows.append(f"| `{m.name}` ({m.title}) | {cell(m.formula)} | {names[0]} | {names[1]} | {summary} |")
    ignoring: dict[str, list[str]] = {}
    for m in MEASURES:
        if m.ignores:
            ignoring.setdefault(m.ignores, []).append(f"`{m.name}`")
    rows += ["", *(f"{', '.join(names)} ignore these conventions: {text}." for text, names in ignoring.items())]
    return "\n".join(rows) + "\n"


def options_table() -> str:
    """The input, validation, execution and job options (:data:`OPTIONS`), as the Markdown table
    of docs/reference.md between its ``options`` markers: each flag with a value the registry
    gives as an example, the commands that take it, and its help."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    rows = ["| flag | commands | meaning |", "|---|---|---|"]
    for option in OPTIONS:
        if option.switch:
            usage = option.flag
        elif option.choices:
            usage = f"{option.flag} {'|'.join(option.choices)}"
        else:
            usage = f"{option.flag} {option.examples[0][0] if option.examples else option.metavar or 'VALUE'}"
        commands = ", ".join(OPTION_GROUPS[option.group].commands)
        rows.append(f"| `{cell(usage)}` | {commands} | {cell(option.help)} |")
    return "\n".join(rows) + "\n"


def with_table(text: str, marker: str, table: str) -> str:
    """``text`` (docs/reference.md) with ``table`` between its ``marker`` markers (``<!-- registry:
    begin ... -->`` ... ``<!-- registry: end -->``), so a new convention, measure or option never
    leaves the docs stale (``make generate`` writes them)."""
    begin = text.index("\n", text.index(f"<!-- {marker}: begin")) + 1
    end = text.index(f"<!-- {marker}: end -->")
    return text[:begin] + table + text[end:]


def with_conventions_table(text: str, table: str) -> str:
    """``text`` with the conventions' and measures' table between its ``registry`` markers."""
    return with_table(text, "registry", table)


def reference_tables(text: str) -> str:
    """docs/reference.md's ``text`` with every table of the registry made anew."""
    return with_table(with_conventions_table(text, conventions_table()), "options", options_table())


# The variables of sql/summary.sql: which measures it sums and which it combines by geometric
# mean (every other one is a mean). They follow the registry, never an evaluation, so every
# summary (the duckdb CLI's too, unset: all means) combines a measure the same way.
SUMMARY_VARIABLE_TYPES: dict[str, str] = {"sum_measures": "ARRAY<STRING>", "geometric_mean_measures": "ARRAY<STRING>"}


def summary_variables(measures: tuple[Measure, ...] = MEASURES) -> dict[str, list[str]]:
    """The variables of ``sql/summary.sql`` for ``measures`` (the registry's by default).

    >>> summary_variables()["geometric_mean_measures"]
    ['gm_map', 'gm_bpref']
    """
    return {
        "sum_measures": [m.name for m in measures if m.aggregate == "sum"],
        "geometric_mean_measures": [m.name for m in measures if m.aggregate == "geometric_mean"],
    }
