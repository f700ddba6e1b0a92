"""``make bench``: every tool in its own process on the same generated data, side by side.

    python bench/run.py --size 1M [--repeat 3]

Reports best and median wall time of ``--repeat`` runs, peak RSS, the ratio to our Polars
engine, and whether each tool's per-query values match ours within 1e-9. Results go to
bench/results/<size>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

# This process stays small: generation, our values and the agreement check run apart from
# the timed processes or after them. A child's peak RSS (from wait4) is never below its
# parent's peak at the moment it was spawned (Linux carries the high-water mark across
# vfork and exec), so a runner that had generated 10M rows floored every figure at 955 MB.
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from tools import ours_command, ours_values, parse_size  # noqa: E402

PEERS = ("pytrec_eval", "ir_measures", "ranx", "sklearn")
FLOORS = ("floor_scan", "floor_sort")
OURS = ("ndcg-polars", "ndcg-duckdb")
# The conventions each peer's values are checked under: the flags that reproduce it (README,
# "Profiles"; docs/conventions.md). ranx has no profile: it orders tied scores with numba's
# quicksort, so its values are checked against input-order ties and, where they differ,
# against our bounds over every order of the ties (--tie-bounds).
MATCHING_FLAGS: dict[str, tuple[str, ...]] = {
    "pytrec_eval": ("--profile", "trec_eval"),
    "ir_measures": ("--profile", "ir_measures"),
    "ranx": ("--profile", "ir_measures", "--ties", "input-order"),
    "sklearn": ("--profile", "sklearn"),
}
TOLERANCE = 1e-9
LARGE = 50_000_000  # above this, peers that hold everything in Python dicts are not run


@dataclass
class Measured:
    tool: str
    walls: list[float] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    phases_per_run: list[dict] = field(default_factory=list)
    note: str = ""

    @property
    def phases(self) -> dict:
        """The in-process timings a peer printed in its last run."""
        return self.phases_per_run[-1] if self.phases_per_run else {}

    @property
    def best(self) -> float:
        return min(self.walls)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)


def run_once(tool: str, data: Path, out: Path, extra: list[str]) -> tuple[float, float, dict]:
    """One timed process: our ``ndcg`` CLI itself, or a peer or floor through tools.py."""
    run, qrels = str(data / "run"), str(data / "qrels")
    out.mkdir(parents=True, exist_ok=True)
    if tool in OURS:
        command = ours_command(tool.split("-")[1], run, qrels, out, extra)
    else:
        command = [sys.executable, str(HERE / "tools.py"), tool, run, qrels, str(out)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout, stderr = process.stdout.read(), process.stderr.read()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{tool} failed:\n{stderr}")
    if tool in OURS:
        return wall, usage.ru_maxrss / 1024, {}
    phases = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    return wall, usage.ru_maxrss / 1024, phases


def runner_peak_rss_mb() -> float:
    """This process's own peak RSS so far: the floor under every child's figure."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reference_values(tool: str, data: Path, out_root: Path) -> Path:
    """Our per-query table under the conventions ``tool`` is checked against, with the tie
    bounds; computed after every timed run, by the Polars engine, once per set of flags."""
    flags = MATCHING_FLAGS[tool]
    folder = out_root / "reference" / "_".join(flag.strip("-").replace("_", "-") for flag in flags)
    if not (folder / "ndcg" / "per_query.parquet").exists():
        command = ours_command("polars", str(data / "run"), str(data / "qrels"), folder, [*flags, "--tie-bounds"])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return folder / "ndcg" / "per_query.parquet"


def agreement(tool: str, out_root: Path, reference: Path | None) -> dict:
    """How the tool's per-query values compare with ours: the rows equal within
    :data:`TOLERANCE`, and of the others, those inside our bounds over orders of ties."""
    import polars as pl  # only after every timed process has run (see the top of this file)

    values = out_root / tool / "values.parquet"
    if not values.exists():
        return {"text": "-"}
    ours = pl.read_parquet(reference or out_root / "ndcg-polars" / "values.parquet")
    bounds = ["ndcg_min", "ndcg_max"] if "ndcg_min" in ours.columns else []
    theirs = pl.read_parquet(values)
    joined = theirs.join(
        ours.select("query_id", "k", pl.col("ndcg").alias("ours"), *bounds),
        on=["query_id", "k"],
        how="left",
        nulls_equal=True,
    )
    differ = joined.filter(((pl.col("ndcg") - pl.col("ours")).abs() > TOLERANCE) | pl.col("ours").is_null())
    counts = {"rows": theirs.height, "rows_differ": differ.height}
    if differ.height == 0:
        return {**counts, "text": f"yes ({theirs.height} rows)"}
    text = f"no: {differ.height} of {theirs.height} rows differ"
    if bounds:
        within = differ.filter(
            pl.col("ndcg").is_between(pl.col("ndcg_min") - TOLERANCE, pl.col("ndcg_max") + TOLERANCE)
        ).height
        counts["rows_differ_within_tie_bounds"] = within
        text += (
            ", all within our bounds over orders of tied results"
            if within == differ.height
            else f", {within} of them within our bounds over orders of tied results"
        )
    return {**counts, "text": text}


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory = (
        int(
            next(
                line.split()[1]
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")
            )
        )
        / 1024**2
    )
    import duckdb
    import polars as pl

    return (
        f"{os.cpu_count()} cores ({cpu}), {memory:.0f} GiB RAM, Python {platform.python_version()}, "
        f"polars {pl.__version__}, duckdb {duckdb.__version__}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1M")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data")
    parser.add_argument("--memory-limit", help="passed to our CLI (both engines)")
    args = parser.parse_args()
    rows = parse_size(args.size)
    data = args.data / args.size
    if not (data / "run").exists():
        print(f"generating {args.size} rows into {data} ...", flush=True)
        generator = [sys.executable, str(HERE / "generate.py"), "--size", args.size, "--out", str(data)]
        subprocess.run(generator, check=True)
    out_root = HERE / "out" / args.size
    extra = ["--memory-limit", args.memory_limit] if args.memory_limit else []
    tools = [*OURS, *(PEERS if rows <= LARGE else ()), *FLOORS]
    results = {tool: Measured(tool) for tool in tools}
    # Round robin, every tool once per round: the machine's drift over the minutes a size
    # takes then falls on every tool alike, not on whichever ran during a slow spell.
    for attempt in range(args.repeat):
        for tool in tools:
            result = results[tool]
            wall, rss, phases = run_once(tool, data, out_root / tool, extra if tool in OURS else [])
            result.walls.append(wall)
            result.peak_rss_mb = max(result.peak_rss_mb, rss)
            result.phases_per_run.append(phases)
            print(f"{tool:<12} run {attempt + 1}: {wall:8.2f} s  {rss:8.0f} MB", flush=True)
    measured: list[Measured] = []
    for tool in tools:
        result = results[tool]
        measured.append(result)
        if tool == "ranx":  # first call compiles with numba; the warm figure is measured in-process
            result.note = "whole process, first call compiles"
            warm_walls = [phases["load_s"] + phases["warm_call_s"] for phases in result.phases_per_run]
            measured.append(
                Measured(
                    "ranx (warm)",
                    walls=warm_walls,
                    peak_rss_mb=result.peak_rss_mb,
                    note="in-process: load + second evaluate",
                )
            )
        if tool == "sklearn":
            result.note = f"{result.phases['sampled_queries']} queries sampled; time extrapolated"
            result.walls = [phases["extrapolated_s"] for phases in result.phases_per_run]
    runner_rss = runner_peak_rss_mb()
    for tool in OURS:  # their last run's output, read only now (see the top of this file)
        ours_values(out_root / tool)
    references = {tool: reference_values(tool, data, out_root) for tool in tools if tool in MATCHING_FLAGS}
    write(measured, args.size, rows, out_root, runner_rss, references)


def write(
    measured: list[Measured],
    size: str,
    rows: int,
    out_root: Path,
    runner_rss_mb: float,
    references: dict[str, Path],
) -> None:
    baseline = next(m for m in measured if m.tool == "ndcg-polars").best
    lines = [
        f"# NDCG benchmark, {size} rows ({rows:,} run rows, k = 5,10,20,100 and the whole ranking)",
        "",
        f"Machine: {machine()}.",
        "",
        "| tool | best (s) | median (s) | peak RSS (MB) | time / ours (polars) "
        "| per-query values match ours (1e-9) | ours under | note |",
        "|---|---:|---:|---:|---:|---|---|---|",
    ]
    records = []
    for m in measured:
        tool = m.tool.split(" ")[0]
        if m.tool.startswith("floor") or m.tool == "ndcg-polars":
            match, under = {"text": "-"}, "-"
        else:
            match = agreement(tool, out_root, references.get(tool))
            flags = MATCHING_FLAGS.get(tool)
            under = f"`{' '.join(flags)}`" if flags else "the defaults, as ndcg-polars"
        cells = [m.tool, f"{m.best:.2f}", f"{m.median:.2f}", f"{m.peak_rss_mb:.0f}", f"{m.best / baseline:.2f}x"]
        lines.append("| " + " | ".join([*cells, match["text"], under, m.note]) + " |")
        records.append(
            {
                "tool": m.tool,
                "best_s": m.best,
                "median_s": m.median,
                "walls_s": m.walls,
                "peak_rss_mb": m.peak_rss_mb,
                "ratio_to_polars": m.best / baseline,
                "match": match["text"],
                "compared_under": under.strip("`"),
                **{key: value for key, value in match.items() if key != "text"},
                "phases_per_run": m.phases_per_run,
                "note": m.note,
            }
        )
    lines += [
        "",
        f"Time per million rows (ours, polars): {baseline / (rows / 1e6):.3f} s.",
        "",
        f"Peak RSS of the runner that started every process: {runner_rss_mb:.0f} MB (no figure above can be "
        "lower: a child's peak RSS counts its parent's at spawn).",
        "",
    ]
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / f"{size}.md").write_text("\n".join(lines))
    (results / f"{size}.json").write_text(
        json.dumps(
            {"size": size, "rows": rows, "machine": machine(), "runner_peak_rss_mb": runner_rss_mb, "tools": records},
            indent=2,
        )
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
