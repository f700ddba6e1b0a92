"""Measure families one at a time (issues 48 and 50): which family makes ``--measures all_trec``
cost more than NDCG alone.

``ndcg-<engine>-family-<family>`` is ``ndcg evaluate --measures <family>`` at the all_trec
tool's cutoffs (the bench's ``--k`` and trec_eval's cutoffs of every family of ``all_trec``,
the k the ``ndcg-<engine>-all_trec`` run writes), and ``ndcg-<engine>-family-ndcg`` is NDCG
alone at those same cutoffs: the baseline each family is divided by, engine against engine.
``ndcg-<engine>-families`` (or ``run.py --families``) names every family of the registry, the
baseline first. The families are this checkout's registry's, read in a child process, so that
the runner stays small (``run.py``'s top).
"""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache
from pathlib import Path

from agreement import rows_apart
from tools import CUTOFFS

FAMILY_INFIX = "-family-"
EVERY_FAMILY_SUFFIX = "-families"
BASELINE = "ndcg"  # NDCG alone: every run computes it, so a family's time is NDCG's plus its own

_REGISTRY_FACTS = """
import json
from pipeline.registry import MEASURES
from pipeline.registry.names import resolve_measures
families = sorted({m.selected_by for m in MEASURES})
print(json.dumps({"families": families, "all_trec_cutoffs": list(resolve_measures(("all_trec",))[1])}))
"""


@cache
def registry_facts() -> dict:
    """The registry's families and the cutoffs ``--measures all_trec`` adds, from a child process."""
    done = subprocess.run([sys.executable, "-c", _REGISTRY_FACTS], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def families() -> tuple[str, ...]:
    """Every family of the registry, NDCG alone (the baseline) first."""
    return (BASELINE, *(family for family in registry_facts()["families"] if family != BASELINE))


def all_trec_cutoffs() -> tuple[int, ...]:
    """The k the all_trec tool evaluates: the bench's and trec_eval's cutoffs of the all_trec set."""
    return tuple(sorted({*CUTOFFS, *registry_facts()["all_trec_cutoffs"]}))


def family_tool(engine_tool: str, family: str) -> str:
    return f"{engine_tool}{FAMILY_INFIX}{family}"


def split_family_tool(tool: str) -> tuple[str, str] | None:
    """``ndcg-polars-family-set_P`` -> (``ndcg-polars``, ``set_P``); None for any other tool."""
    engine_tool, infix, family = tool.partition(FAMILY_INFIX)
    return (engine_tool, family) if infix and family else None


def expand(chosen: list[str], engine_tools: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """The family tools among ``chosen`` (each engine's baseline added, ``-families`` expanded,
    in the registry's order) and the names left over, which are not family tools."""
    asked: dict[str, set[str]] = {}
    rest: list[str] = []
    for name in chosen:
        engine_tool = name.removesuffix(EVERY_FAMILY_SUFFIX)
        split = split_family_tool(name)
        if name.endswith(EVERY_FAMILY_SUFFIX) and engine_tool in engine_tools:
            asked.setdefault(engine_tool, set()).update(families())
        elif split and split[0] in engine_tools:
            if split[1] not in families():
                known = ", ".join(families())
                raise SystemExit(f"unknown measure family {split[1]!r} in {name}; the registry's: {known}")
            asked.setdefault(split[0], set()).update((BASELINE, split[1]))
        else:
            rest.append(name)
    if not asked:
        return [], rest
    timed = [family_tool(engine, family) for engine in asked for family in families() if family in asked[engine]]
    return timed, rest


def flags(family: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """What a family tool adds to our command, and its cutoffs (in place of the bench's)."""
    return ("--measures", family), all_trec_cutoffs()


def family_agreement(family_table: Path, all_trec_table: Path) -> dict:
    """Whether a family run's columns equal the all_trec run's same columns (same engine, same
    cutoffs), every (query, k) row within 1e-9 (:func:`rows_apart`); the columns all_trec lacks (a
    family outside trec_eval's set) are named, not checked."""
    import polars as pl  # only after every timed process has run (run.py's top)

    if not (family_table.exists() and all_trec_table.exists()):
        return {"text": "not checked: no all_trec run of this engine in this sitting"}
    keys = ["query_id", "k"]
    ours, whole = pl.read_parquet(family_table), pl.read_parquet(all_trec_table)
    columns = [column for column in ours.columns if column not in keys and column in whole.columns]
    missing = [column for column in ours.columns if column not in keys and column not in whole.columns]
    joined = ours.select(*keys, *columns).join(
        whole.select(*keys, *[pl.col(column).alias(f"{column}_all") for column in columns]),
        on=keys,
        how="left",
        nulls_equal=True,
    )
    differ = rows_apart(joined, columns, "_all")
    text = (
        f"yes ({len(columns)} columns x {joined.height} rows)"
        if not differ
        else "no: " + ", ".join(f"{column} in {rows} rows" for column, rows in differ.items())
    )
    if missing:
        text += f"; not in all_trec: {', '.join(missing)}"
    return {"text": text, "columns": columns, "columns_differ": differ, "not_in_all_trec": missing}


def checks(out_root: Path, best: dict[str, float]) -> dict[str, dict]:
    """:func:`family_agreement` of each family tool timed, against its engine's all_trec run
    when that ran in this sitting (``out/`` keeps an earlier sitting's tables)."""
    found = {}
    for tool in best:
        split = split_family_tool(tool)
        if split is None:
            continue
        whole = split[0] + "-all_trec"
        if whole not in best:
            found[tool] = {"text": "not checked: no all_trec run of this engine in this sitting"}
            continue
        found[tool] = family_agreement(*(out_root / name / "ndcg" / "per_query.parquet" for name in (tool, whole)))
    return found


def table(
    best: dict[str, float], best_cpu: dict[str, float], checks: dict[str, dict], ndcg_checks: dict[str, str]
) -> tuple[list[str], list[dict], dict[str, float]]:
    """The families' table (markdown lines), its rows for the JSON, and the ratios under
    ``ratios``: each family's best wall and CPU time over NDCG alone's, same engine; the
    families sorted by the larger of the engines' CPU-time ratios, the costliest first: CPU time
    is the work a family adds, and a machine shared with other work disturbs it less than wall
    time (bench/README.md, "The tables")."""
    rows: list[dict] = []
    ratios: dict[str, float] = {}
    for tool in best:
        split = split_family_tool(tool)
        if split is None:
            continue
        engine_tool, family = split
        baseline = family_tool(engine_tool, BASELINE)
        if baseline not in best:
            continue
        wall, cpu = best[tool] / best[baseline], best_cpu[tool] / best_cpu[baseline]
        if family != BASELINE:
            ratios[f"{tool} / {baseline}"] = wall
            ratios[f"{tool} / {baseline} (CPU)"] = cpu
        rows.append(
            {
                "family": family,
                "engine": engine_tool.split("-")[1],
                "tool": tool,
                "best_s": best[tool],
                "best_cpu_s": best_cpu[tool],
                "wall_over_ndcg_alone": wall,
                "cpu_over_ndcg_alone": cpu,
                "all_trec_columns_match": checks.get(tool, {}).get("text", "-"),
                "ndcg_matches_ours": ndcg_checks.get(tool, "-"),
            }
        )
    if not rows:
        return [], [], ratios
    cost: dict[str, float] = {}
    for row in rows:
        cost[row["family"]] = max(cost.get(row["family"], 0.0), row["cpu_over_ndcg_alone"])
    engines = ["polars", "duckdb"]
    rows.sort(key=lambda row: (-cost[row["family"]], row["family"], engines.index(row["engine"])))
    cutoffs = ",".join(map(str, all_trec_cutoffs()))
    lines = [
        "## Measure families, one at a time",
        "",
        f"Each family alone: `ndcg evaluate --measures <family> --k {cutoffs}` (the all_trec tool's cutoffs; "
        "NDCG is computed in every run, so a family's time is NDCG's and its own), against NDCG alone at "
        "the same cutoffs (`--measures ndcg`, the row `ndcg`), each engine against itself, in the same rounds as "
        "every tool above. Sorted by the larger of the engines' CPU-time ratios (less disturbed than wall time "
        "on a shared machine), the costliest family first. "
        "\"= all_trec\": the family's columns against the all_trec run's same columns (same engine, every "
        'query and k, 1e-9), when that run is in this sitting; "NDCG = ours": its NDCG at the bench\'s k '
        "against the `ndcg-polars` run.",
        "",
        "| family | engine | best (s) | best CPU (s) | / NDCG alone (wall) | / NDCG alone (CPU) "
        "| = all_trec | NDCG = ours |",
        "|---|---|---:|---:|---:|---:|---|---|",
    ]
    for row in rows:
        cells = [
            row["family"],
            row["engine"],
            f"{row['best_s']:.2f}",
            f"{row['best_cpu_s']:.2f}",
            f"{row['wall_over_ndcg_alone']:.2f}x",
            f"{row['cpu_over_ndcg_alone']:.2f}x",
            row["all_trec_columns_match"],
            row["ndcg_matches_ours"],
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    for engine_tool in dict.fromkeys(row["tool"].partition(FAMILY_INFIX)[0] for row in rows):
        whole, baseline = engine_tool + "-all_trec", family_tool(engine_tool, BASELINE)
        if whole in best and baseline in best:
            ratios[f"{whole} / {baseline}"] = best[whole] / best[baseline]
            ratios[f"{whole} / {baseline} (CPU)"] = best_cpu[whole] / best_cpu[baseline]
            lines.append(
                f"- `--measures all_trec` / NDCG alone at the same cutoffs, {engine_tool.split('-')[1]}: "
                f"**{ratios[f'{whole} / {baseline}']:.2f}x** (CPU time {ratios[f'{whole} / {baseline} (CPU)']:.2f}x)"
            )
    if lines[-1] != "":
        lines.append("")
    return lines, rows, ratios
