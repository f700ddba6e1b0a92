"""``make bench``: every tool in its own process on the same generated data, side by side.

    python bench/run.py --size 1M [--repeat 3] [--layout shuffled] [--tools ndcg-polars,hand_polars]
        [--ndcg PATH] [--also-ndcg before=PATH] [--families]

Reports best and median wall time of ``--repeat`` runs, peak RSS, the ratio to our Polars
engine, whether each tool's per-query values match ours within 1e-9, and under the table
the ratios the issue asks for (hand_polars / ours, pytrec_eval / ours, ours / floor_sort,
duckdb / polars, and what ``--measures all_trec`` costs against NDCG alone). By default both
the shuffled and the clustered layout are measured, one after the other, each in its own
runner process and table. ``--also-ndcg NAME=PATH`` times another ``ndcg`` CLI (another
checkout) in the same rounds, as ``ndcg-<engine>@NAME``. ``--families`` (or the tools
``ndcg-<engine>-families``, ``ndcg-<engine>-family-<family>``) times each measure family alone
against NDCG alone at the all_trec cutoffs, in a table of its own (bench/families.py). Results
go to bench/results/<size>-<layout>.md and .json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
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
import families  # noqa: E402
from agreement import TOLERANCE, agreement, all_trec_engines_agreement  # noqa: E402
from tools import CUTOFFS, default_ndcg, ours_command, ours_values, parse_size  # noqa: E402

HAND = "hand_polars"  # the lean hand-written Polars script: the bar to beat (tools.py)
# pytrec_eval-all_trec: pytrec_eval with every measure it supports, the peer of --measures all_trec
PYTREC_EVAL_ALL = "pytrec_eval-all_trec"
PEERS = ("pytrec_eval", PYTREC_EVAL_ALL, "ir_measures", "ranx", "sklearn")
FLOORS = ("floor_scan", "floor_sort")
OURS = ("ndcg-polars", "ndcg-duckdb")
# the same command as OURS with every measure trec_eval's -m all_trec prints (issue 34): its
# cost against NDCG alone, each engine against itself, in the same rounds
ALL_TREC_SUFFIX = "-all_trec"
ALL_TREC = tuple(tool + ALL_TREC_SUFFIX for tool in OURS)
# The same work on TREC text files (the data written once as run.txt and qrels.txt), beside
# trec_eval itself on them (issue 48): NDCG at the bench's cutoffs, and -m all_trec
TREC_SUFFIX = "-trec"
TREC_EVAL = "trec_eval"
TREC_EVAL_ALL = "trec_eval-all_trec"
# trec_eval's default output (no -m) and ours with --measures official, both printing trec_eval's
# per-query lines (-q; --output-format trec --per-query), which are compared line by line
OFFICIAL_SUFFIX = "-official"
TREC_EVAL_OFFICIAL = "trec_eval-official"
TREC_EVALS = (TREC_EVAL, TREC_EVAL_ALL, TREC_EVAL_OFFICIAL)
OURS_ON_TREC = tuple(tool + TREC_SUFFIX + tail for tool in OURS for tail in ("", ALL_TREC_SUFFIX, OFFICIAL_SUFFIX))
# the table macros in a plain DuckDB session (validation included), and the SQL path's
# validation alone (sql/generated/refusals.sql over the inputs): what its checks cost
MACROS = "ndcg-macros"
SQL_REFUSALS = "sql_refusals"
TOOLS = (*OURS, *ALL_TREC, MACROS, SQL_REFUSALS, *OURS_ON_TREC, *TREC_EVALS, HAND, *PEERS, *FLOORS)
LAYOUTS = ("shuffled", "clustered", "chunked")
DEFAULT_LAYOUTS = ("shuffled", "clustered")
LAYOUT_TEXT = {
    "shuffled": "rows shuffled across the whole dataset, every query's rows spread over every file",
    "clustered": "each query's rows contiguous, queries in random order, results in random order within a query",
    "chunked": "queries in order, rows shuffled within each 5M-row file (the layout before 2026-11-26)",
}
# The conventions each peer's values are checked under: the flags that reproduce it (README,
# "Profiles"; docs/conventions.md). ranx has no profile: it orders tied scores with numba's
# quicksort, so its values are checked against input-order ties and, where they differ,
# against our bounds over every order of the ties (--tie-bounds).
MATCHING_FLAGS: dict[str, tuple[str, ...]] = {
    "pytrec_eval": ("--profile", "trec_eval"),
    PYTREC_EVAL_ALL: ("--profile", "trec_eval"),
    "ir_measures": ("--profile", "ir_measures"),
    "ranx": ("--profile", "ir_measures", "--ties", "input-order"),
    "sklearn": ("--profile", "sklearn"),
}
# above this, the tools that hold the whole run in memory (the peers' Python dicts, the hand
# script's frames: about 1 GB per 10M rows) are not run by default
LARGE = 50_000_000


@dataclass(frozen=True)
class OurTool:
    """One of our CLI's timed commands: an engine, the flags it adds, the ``ndcg`` it runs."""

    engine: str
    extra: tuple[str, ...]
    ndcg: Path
    trec_text: bool = False
    cutoffs: tuple[int, ...] = CUTOFFS


def our_tool(tool: str, ndcg: Path, others: dict[str, Path]) -> OurTool | None:
    """``ndcg-polars``, ``ndcg-duckdb-all_trec``, ``ndcg-polars-trec`` (TREC text in),
    ``ndcg-polars@before`` (``--also-ndcg``), ``ndcg-polars-family-P`` (bench/families.py): what
    the name runs; None for a peer or a floor."""
    name, _, other = tool.partition("@")
    family = families.split_family_tool(name)
    if family:
        measures, cutoffs = families.flags(family[1])
        return OurTool(family[0].split("-")[1], measures, ndcg, cutoffs=cutoffs)
    trec_text = TREC_SUFFIX + "-" in name + "-"
    base = name.removesuffix(ALL_TREC_SUFFIX).removesuffix(OFFICIAL_SUFFIX).removesuffix(TREC_SUFFIX)
    if base not in OURS:
        return None
    extra: tuple[str, ...] = ("--measures", "all_trec") if name.endswith(ALL_TREC_SUFFIX) else ()
    if trec_text:
        extra += ("--run-format", "trec", "--qrels-format", "trec")
    if name.endswith(OFFICIAL_SUFFIX):
        # trec_eval's own cutoffs (no --k) and its per-query lines on stdout, as trec_eval -q prints them
        extra += ("--measures", "official", "--output-format", "trec", "--per-query")
        return OurTool(base.split("-")[1], extra, others[other] if other else ndcg, trec_text, cutoffs=())
    return OurTool(base.split("-")[1], extra, others[other] if other else ndcg, trec_text)


@dataclass
class Measured:
    tool: str
    walls: list[float] = field(default_factory=list)
    # user + system CPU seconds of the process and its threads: on a machine shared with other
    # work, wall time also counts the waits for a core, CPU time (nearly) does not
    cpus: list[float] = field(default_factory=list)
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

    @property
    def best_cpu(self) -> float | None:
        return min(self.cpus) if self.cpus else None


# Our CLIs run without the current directory first on sys.path (Python 3.11's PYTHONSAFEPATH,
# as ``python -P``): ``python -m pipeline`` puts it there, so a wrapper of another checkout
# (``PYTHONPATH=/old python -m pipeline``, as --also-ndcg suggests) run from this checkout's root
# imported this checkout's pipeline, and its "before" timed the code after
OURS_ENVIRONMENT = {**os.environ, "PYTHONSAFEPATH": "1"}


def run_once(
    tool: str, data: Path, out: Path, extra: list[str], ours: OurTool | None
) -> tuple[float, float, float, dict]:
    """One timed process: our ``ndcg`` CLI itself, or a peer or floor through tools.py: its wall
    time, CPU time (user + system), peak RSS and the phases it printed."""
    run, qrels = str(data / "run"), str(data / "qrels")
    text_run, text_qrels = str(data / "trec" / "run.txt"), str(data / "trec" / "qrels.txt")
    out.mkdir(parents=True, exist_ok=True)
    stdout_to = subprocess.PIPE
    if ours:
        inputs = (text_run, text_qrels) if ours.trec_text else (run, qrels)
        command = ours_command(ours.engine, *inputs, out, [*ours.extra, *extra], ours.ndcg, ours.cutoffs)
        if tool.partition("@")[0].endswith(OFFICIAL_SUFFIX):  # its trec_eval lines, to a file
            stdout_to = (out / "lines.txt").open("w")  # type: ignore[assignment]
    elif tool == TREC_EVAL_OFFICIAL:
        # trec_eval's default measures, its per-query lines (-q) to a file as ours prints them
        command = [str(trec_eval_binary()), "-q", text_qrels, text_run]
        stdout_to = (out / "lines.txt").open("w")  # type: ignore[assignment]
    elif tool in (TREC_EVAL, TREC_EVAL_ALL):
        # trec_eval's per-query lines (-q), as ours writes per-query tables, to a file
        measures = ["-m", "all_trec"] if tool == TREC_EVAL_ALL else ["-m", f"ndcg_cut.{','.join(map(str, CUTOFFS))}"]
        command = [str(trec_eval_binary()), "-q", *measures, "-m", "ndcg", text_qrels, text_run]
        stdout_to = (out / "lines.txt").open("w")  # type: ignore[assignment]
    else:
        command = [sys.executable, str(HERE / "tools.py"), tool, run, qrels, str(out)]
    started = time.perf_counter()
    env = OURS_ENVIRONMENT if ours else None
    process = subprocess.Popen(command, stdout=stdout_to, stderr=subprocess.PIPE, text=True, env=env)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    stdout = process.stdout.read() if process.stdout else ""
    stderr = process.stderr.read()  # type: ignore[union-attr]
    if stdout_to is not subprocess.PIPE:
        stdout_to.close()  # type: ignore[union-attr]
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{tool} failed:\n{stderr}")
    cpu = usage.ru_utime + usage.ru_stime
    if ours:
        return wall, cpu, usage.ru_maxrss / 1024, {}
    phases = json.loads(stdout.strip().splitlines()[-1]) if stdout.strip() else {}
    return wall, cpu, usage.ru_maxrss / 1024, phases


_TREC_EVAL: list[Path] = []  # the binary trec_eval_binary() gives, once found or built


def trec_eval_binary() -> Path:
    return _TREC_EVAL[0]


def find_trec_eval(given: Path | None) -> str | None:
    """trec_eval for the ``trec_eval`` tools: ``--trec-eval`` a binary, or its source (a folder
    with its Makefile: built here with its own ``make`` into bench/out/trec_eval-build); None
    when it can be had, else why not (the tools are then left out, with that note)."""
    if given is None:
        return "not timed: no trec_eval given (make bench TREC_EVAL=path/to/trec_eval's source or binary)"
    if given.is_file():
        _TREC_EVAL[:] = [given.resolve()]
        return None
    if not (given / "Makefile").is_file():
        return f"not timed: {given} is neither trec_eval nor its source (a folder with its Makefile)"
    if shutil.which("make") is None or not (shutil.which("cc") or shutil.which("gcc")):
        return "not timed: building trec_eval from its source needs make and a C compiler, which this machine lacks"
    build = HERE / "out" / "trec_eval-build"
    if not (build / "trec_eval").is_file():
        shutil.rmtree(build, ignore_errors=True)
        shutil.copytree(given, build, ignore=shutil.ignore_patterns(".git", "*.o", "trec_eval"))
        made = subprocess.run(["make", "-s"], cwd=build, capture_output=True, text=True)
        if made.returncode != 0 or not (build / "trec_eval").is_file():
            return f"not timed: its make failed: {(made.stderr or made.stdout).strip().splitlines()[-1:]}"
    _TREC_EVAL[:] = [build / "trec_eval"]
    return None


def trec_eval_values(out: Path) -> None:
    """``values.parquet`` from trec_eval's per-query lines (``-q``): ndcg and ndcg_cut_<k> at
    the bench's cutoffs, after the timed runs."""
    import polars as pl  # only after every timed process has run (see the top of this file)

    rows = []
    for line in (out / "lines.txt").read_text().splitlines():
        measure, query, value = (field.strip() for field in line.split("\t"))
        k = (
            None
            if measure == "ndcg"
            else int(measure.removeprefix("ndcg_cut_"))
            if measure.startswith("ndcg_cut_")
            else -1
        )
        if query != "all" and (k is None or k in CUTOFFS):
            rows.append((query, k, float(value)))
    schema = {"query_id": pl.String, "k": pl.Int64, "ndcg": pl.Float64}
    pl.DataFrame(rows, schema=schema, orient="row").write_parquet(out / "values.parquet")


def runner_peak_rss_mb() -> float:
    """This process's own peak RSS so far: the floor under every child's figure."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def reference_values(tool: str, data: Path, out_root: Path) -> Path:
    """Our per-query table under the conventions ``tool`` is checked against, with the tie
    bounds; computed after every timed run, by this checkout's CLI (whatever ``--ndcg``
    times) with the Polars engine, once per set of flags. Tools checked under our defaults
    (hand_polars, ndcg-duckdb) are compared with the timed ndcg-polars run instead, when it ran."""
    flags = MATCHING_FLAGS.get(tool, ())
    folder = out_root / "reference" / ("_".join(flag.strip("-").replace("_", "-") for flag in flags) or "defaults")
    if not (folder / "ndcg" / "per_query.parquet").exists():
        command = ours_command("polars", str(data / "run"), str(data / "qrels"), folder, [*flags, "--tie-bounds"])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=OURS_ENVIRONMENT)
    return folder / "ndcg" / "per_query.parquet"


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


def parse_tools(text: str | None, rows: int, every_family: bool = False) -> list[str]:
    """The tools to time, in the table's order, then the family tools (bench/families.py);
    ``every_family`` (``--families``) adds every family of each engine chosen (both, if none)."""
    if not text:
        chosen = [tool for tool in TOOLS if rows <= LARGE or tool not in (*PEERS, HAND)]
    else:
        chosen = [name.strip() for name in text.split(",") if name.strip()]
    engines = [engine for engine in OURS if engine in chosen or engine + ALL_TREC_SUFFIX in chosen]
    if every_family:
        chosen += [engine + families.EVERY_FAMILY_SUFFIX for engine in engines or OURS]
    timed_families, chosen = families.expand(chosen, OURS)
    unknown = [name for name in chosen if name not in TOOLS]
    if unknown:
        raise SystemExit(
            f"unknown tool(s) {', '.join(unknown)}; known: {', '.join(TOOLS)}, and per engine "
            f"ndcg-<engine>-families or ndcg-<engine>-family-<family> (bench/families.py)"
        )
    return [tool for tool in TOOLS if tool in chosen] + timed_families


def with_others(tools: list[str], others: dict[str, Path]) -> list[str]:
    """Each ``--also-ndcg`` CLI runs each of our tools chosen (each engine, NDCG alone and with
    ``--measures all_trec``), right after ours."""
    return [
        timed
        for tool in tools
        for timed in (tool, *([f"{tool}@{name}" for name in others] if tool in (*OURS, *ALL_TREC) else []))
    ]


def parse_others(pairs: list[str]) -> dict[str, Path]:
    """``--also-ndcg NAME=PATH``: the other CLIs to time, by name."""
    others: dict[str, Path] = {}
    for pair in pairs:
        name, separator, path = pair.partition("=")
        if not separator or not name or "@" in name or name in others:
            raise SystemExit(f"--also-ndcg {pair}: expected NAME=PATH, each NAME once")
        if not Path(path).exists():
            raise SystemExit(f"--also-ndcg {pair}: no such file")
        others[name] = Path(path)
    return others


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", default="1M")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--data", type=Path, default=HERE / "data", help="data folders: <data>/<size>-<layout>/")
    parser.add_argument("--memory-limit", help="passed to our CLI (both engines)")
    parser.add_argument(
        "--layout",
        choices=LAYOUTS,
        action="append",
        help=f"layout of the run's rows (repeatable; default: {' then '.join(DEFAULT_LAYOUTS)})",
    )
    parser.add_argument(
        "--tools",
        help=f"comma list of tools to run (default: all): {','.join(TOOLS)}; also ndcg-<engine>-families "
        "(every measure family alone) and ndcg-<engine>-family-<family> (one)",
    )
    parser.add_argument(
        "--families",
        action="store_true",
        help="also time each measure family alone against NDCG alone at the all_trec cutoffs, "
        "for each engine chosen (bench/families.py)",
    )
    parser.add_argument(
        "--ndcg",
        type=Path,
        default=default_ndcg(),
        help="our CLI to time (default: the ndcg next to this Python), e.g. another checkout's .venv/bin/ndcg",
    )
    parser.add_argument(
        "--also-ndcg",
        action="append",
        default=[],
        metavar="NAME=PATH",
        help="another ndcg CLI to time in the same rounds (repeatable), e.g. before=/path/to/old/.venv/bin/ndcg: "
        "its tools are ndcg-<engine>@NAME, for each of our engines chosen",
    )
    parser.add_argument(
        "--trec-eval",
        type=Path,
        help="trec_eval, or its source folder (built here with its Makefile), for the trec_eval tools",
    )
    parser.add_argument(
        "--label",
        help="results go to bench/results/<size>-<layout>-<label>.md and .json, beside the default tables "
        "rather than over them (for a run of a few tools, such as all_trec's cost or a before/after)",
    )
    args = parser.parse_args()
    rows = parse_size(args.size)
    others = parse_others(args.also_ndcg)
    tools = parse_tools(args.tools, rows, args.families)
    layouts = args.layout or list(DEFAULT_LAYOUTS)
    if not args.ndcg.exists():
        raise SystemExit(f"--ndcg {args.ndcg}: no such file")
    if len(layouts) > 1:
        # one runner process per layout, so that no child's peak RSS counts this runner's
        # reading of the first layout's values (see the top of this file)
        for layout in layouts:
            command = [sys.executable, __file__, "--size", args.size, "--repeat", str(args.repeat)]
            command += [
                "--data",
                str(args.data),
                "--layout",
                layout,
                "--tools",
                ",".join(tools),
                "--ndcg",
                str(args.ndcg),
            ]
            command += ["--memory-limit", args.memory_limit] if args.memory_limit else []
            command += [f"--also-ndcg={pair}" for pair in args.also_ndcg]
            command += ["--label", args.label] if args.label else []
            command += ["--trec-eval", str(args.trec_eval)] if args.trec_eval else []
            subprocess.run(command, check=True)
        return
    bench(
        args.size,
        rows,
        layouts[0],
        tools,
        args.data,
        args.repeat,
        args.memory_limit,
        args.ndcg,
        others,
        args.label,
        args.trec_eval,
    )


def bench(
    size: str,
    rows: int,
    layout: str,
    tools: list[str],
    data_root: Path,
    repeat: int,
    memory_limit: str | None,
    ndcg: Path,
    others: dict[str, Path],
    label: str | None,
    trec_eval: Path | None = None,
) -> None:
    name = f"{size}-{layout}"
    tools = with_others(tools, others)
    data = data_root / name
    if not (data / "run").exists():
        print(f"generating {size} rows, layout {layout}, into {data} ...", flush=True)
        generator = [sys.executable, str(HERE / "generate.py"), "--size", size, "--layout", layout, "--out", str(data)]
        subprocess.run(generator, check=True)
    notes: list[str] = []
    if any(tool in TREC_EVALS for tool in tools):
        why_not = find_trec_eval(trec_eval)
        if why_not:
            notes.append(f"trec_eval: {why_not}.")
            tools = [tool for tool in tools if tool not in TREC_EVALS]
    text_read = any(tool in TREC_EVALS or TREC_SUFFIX + "-" in tool + "-" for tool in tools)
    if text_read and not (data / "trec" / "qrels.txt").exists():
        print(f"writing the data as TREC text into {data / 'trec'} ...", flush=True)
        writer = [sys.executable, str(HERE / "tools.py"), "write_trec", str(data / "run"), str(data / "qrels")]
        subprocess.run([*writer, str(data / "trec")], check=True, stdout=subprocess.DEVNULL)
    out_root = HERE / "out" / name
    shutil.rmtree(out_root / "reference", ignore_errors=True)  # the data may have been generated anew
    extra = ["--memory-limit", memory_limit] if memory_limit else []
    results = {tool: Measured(tool) for tool in tools}
    print(f"{name}: {LAYOUT_TEXT[layout]}; ours: {shown(ndcg)}", flush=True)
    for other, path in others.items():
        print(f"@{other}: {shown(path)}", flush=True)
    commands = {tool: our_tool(tool, ndcg, others) for tool in tools}
    # Round robin, every tool once per round: the machine's drift over the minutes a size
    # takes then falls on every tool alike, not on whichever ran during a slow spell.
    for attempt in range(repeat):
        for tool in tools:
            result = results[tool]
            ours = commands[tool]
            wall, cpu, rss, phases = run_once(tool, data, out_root / tool, extra if ours else [], ours)
            result.walls.append(wall)
            result.cpus.append(cpu)
            result.peak_rss_mb = max(result.peak_rss_mb, rss)
            result.phases_per_run.append(phases)
            print(f"{tool:<20} run {attempt + 1}: {wall:8.2f} s  CPU {cpu:8.2f} s  {rss:8.0f} MB", flush=True)
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
            result.cpus = []  # the sampled process's, not the extrapolated figure's
    runner_rss = runner_peak_rss_mb()
    for tool in tools:  # their last run's output, read only now (see the top of this file)
        if tool in (TREC_EVAL, TREC_EVAL_ALL):
            trec_eval_values(out_root / tool)
            results[tool].note = (
                "`-q -m "
                + ("all_trec" if tool == TREC_EVAL_ALL else "ndcg_cut")
                + " -m ndcg`, TREC text; values to its 4 printed decimals"
            )
        if tool == TREC_EVAL_OFFICIAL:
            results[tool].note = "`-q` (its default measures), TREC text; per-query lines to a file"
        elif commands[tool] and tool.partition("@")[0].endswith(OFFICIAL_SUFFIX):
            results[tool].note = official_lines_note(out_root / tool, out_root / TREC_EVAL_OFFICIAL)
        elif commands[tool]:
            ours_values(out_root / tool)
            if tool.partition("@")[0].endswith(ALL_TREC_SUFFIX):
                results[tool].note = all_trec_note(out_root / tool)
    checked_under_defaults = [
        tool for tool in tools if tool in (HAND, TREC_EVAL, TREC_EVAL_ALL) or (commands[tool] and tool != "ndcg-polars")
    ]
    references = {tool: reference_values(tool, data, out_root) for tool in tools if tool in MATCHING_FLAGS}
    if "ndcg-polars" not in tools:
        references |= {tool: reference_values(tool, data, out_root) for tool in checked_under_defaults}
    stem = f"{name}-{label}" if label else name
    write(measured, stem, size, layout, rows, out_root, runner_rss, references, ndcg, others, notes)


def official_lines_note(ours: Path, theirs: Path) -> str:
    """Our ``--measures official --output-format trec --per-query`` lines against trec_eval's
    ``-q`` lines, both as printed (4 decimals): the lines trec_eval prints that ours prints alike.
    trec_eval prints its lines over all queries only when every query of the run is judged; ours
    always does, so only trec_eval's lines are looked up in ours."""
    if not (theirs / "lines.txt").exists():
        return "`--measures official --output-format trec --per-query`; not checked: trec_eval-official did not run"

    def lines(folder: Path) -> set[tuple[str, ...]]:
        return {tuple(field.strip() for field in line.split("\t")) for line in (folder / "lines.txt").open()}

    ours_lines, theirs_lines = lines(ours), lines(theirs)
    missing = theirs_lines - ours_lines
    verdict = "all equal" if not missing else f"{len(missing)} differ, e.g. {sorted(missing)[0]}"
    return f"`--measures official --output-format trec --per-query`; trec_eval's {len(theirs_lines)} lines: {verdict}"


def all_trec_note(out: Path) -> str:
    """What the ``--measures all_trec`` run wrote, read from its table: the columns and cutoffs
    that NDCG alone does not have."""
    import polars as pl

    table = pl.read_parquet(out / "ndcg" / "per_query.parquet")
    measures = [column for column in table.columns if column not in ("query_id", "k")]
    cutoffs = sorted(k for k in table["k"].unique().to_list() if k is not None)
    added = [k for k in cutoffs if k not in CUTOFFS]
    return (
        f"`--measures all_trec`: {len(measures)} measure columns, k = {','.join(map(str, cutoffs))} and the whole "
        f"ranking ({','.join(map(str, added)) or 'none'} added; NDCG checked at the bench's k)"
    )


def shown(path: Path) -> str:
    """A path as the tables show it: relative to the checkout when inside it."""
    try:
        return str(path.absolute().relative_to(HERE.parent))
    except ValueError:
        return str(path)


def ndcg_version(ndcg: Path) -> str:
    done = subprocess.run([str(ndcg), "--version"], capture_output=True, text=True, env=OURS_ENVIRONMENT)
    return (done.stdout or done.stderr).strip() or "unknown version"


def trec_text_ratio_lines(best: dict[str, float], ratios: dict[str, float]) -> list[str]:
    """Ours on TREC text against trec_eval on the same files, for each work both did (NDCG,
    all_trec, the official measures): the ratios the issue sets, beside whatever else ran."""
    lines: list[str] = []
    for tail, reference in (("", TREC_EVAL), (ALL_TREC_SUFFIX, TREC_EVAL_ALL), (OFFICIAL_SUFFIX, TREC_EVAL_OFFICIAL)):
        on_text = {engine: engine + TREC_SUFFIX + tail for engine in OURS if engine + TREC_SUFFIX + tail in best}
        if reference in best and on_text:
            for tool in on_text.values():
                ratios[f"{tool} / {reference}"] = best[tool] / best[reference]
            parts = "; ".join(f"{engine} {best[tool] / best[reference]:.2f}x" for engine, tool in on_text.items())
            fastest = min(best[tool] for tool in on_text.values()) / best[reference]
            what = {
                "": "NDCG",
                ALL_TREC_SUFFIX: "`--measures all_trec` / `-m all_trec`",
                OFFICIAL_SUFFIX: "`--measures official` / its default measures",
            }[tail]
            lines.append(
                f"- ours on TREC text / {reference}, {what}, per-query lines both: **{fastest:.2f}x** ({parts})"
            )
    return lines


def ratio_lines(
    best: dict[str, float], best_cpu: dict[str, float], others: dict[str, Path]
) -> tuple[list[str], dict[str, float]]:
    """The lines under the table: each ratio of best wall times the issue asks for, when
    the tools it needs ran. "ours" is the better of our two engines."""
    engines = [tool for tool in OURS if tool in best]
    ratios: dict[str, float] = {}
    lines: list[str] = trec_text_ratio_lines(best, ratios)
    if not engines:
        return lines, ratios
    ours_tool = min(engines, key=best.__getitem__)
    ours = best[ours_tool]

    def each(numerator: str) -> str:
        parts = []
        for engine in engines:
            ratios[f"{numerator} / {engine}"] = best[numerator] / best[engine]
            parts.append(f"/ {engine} {best[numerator] / best[engine]:.2f}x")
        return "; ".join(parts)

    for peer in (HAND, "pytrec_eval"):
        if peer in best:
            ratios[f"{peer} / ours"] = best[peer] / ours
            lines.append(
                f"- {peer} / ours: **{best[peer] / ours:.2f}x** (ours = {ours_tool}, {ours:.2f} s; {each(peer)})"
            )
    ours_all = {
        engine + ALL_TREC_SUFFIX: best[engine + ALL_TREC_SUFFIX]
        for engine in engines
        if engine + ALL_TREC_SUFFIX in best
    }
    if PYTREC_EVAL_ALL in best and ours_all:
        fastest = min(ours_all, key=ours_all.__getitem__)
        ratios[f"{PYTREC_EVAL_ALL} / ours-all_trec"] = best[PYTREC_EVAL_ALL] / ours_all[fastest]
        lines.append(
            f"- pytrec_eval with every measure it supports / ours with `--measures all_trec`: "
            f"**{best[PYTREC_EVAL_ALL] / ours_all[fastest]:.2f}x** (ours = {fastest}, {ours_all[fastest]:.2f} s)"
        )
    if "floor_sort" in best:
        ratios["ours / floor_sort"] = ours / best["floor_sort"]
        per_engine = "; ".join(f"{engine} {best[engine] / best['floor_sort']:.2f}x" for engine in engines)
        for engine in engines:
            ratios[f"{engine} / floor_sort"] = best[engine] / best["floor_sort"]
        lines.append(f"- ours / floor_sort: **{ours / best['floor_sort']:.2f}x** ({per_engine})")
    if len(engines) == 2:
        ratios["duckdb / polars"] = best["ndcg-duckdb"] / best["ndcg-polars"]
        lines.append(f"- duckdb / polars: **{ratios['duckdb / polars']:.2f}x**")
    if MACROS in best and "ndcg-duckdb" in best:
        ratios[f"{MACROS} / ndcg-duckdb"] = best[MACROS] / best["ndcg-duckdb"]
        lines.append(f"- {MACROS} / ndcg-duckdb: **{ratios[f'{MACROS} / ndcg-duckdb']:.2f}x**")
    if MACROS in best and SQL_REFUSALS in best:
        ratios[f"{SQL_REFUSALS} / {MACROS}"] = best[SQL_REFUSALS] / best[MACROS]
        lines.append(
            f"- the SQL path's validation alone ({SQL_REFUSALS}: sql/inputs.sql and every rule of "
            f"sql/generated/refusals.sql, process start included) / {MACROS}: "
            f"**{ratios[f'{SQL_REFUSALS} / {MACROS}']:.2f}x**"
        )
    all_trec = [engine for engine in engines if engine + ALL_TREC_SUFFIX in best]
    if all_trec:
        parts = []
        for engine in all_trec:
            key = f"{engine}{ALL_TREC_SUFFIX} / {engine}"
            ratios[key] = best[engine + ALL_TREC_SUFFIX] / best[engine]
            ratios[f"{key} (CPU)"] = best_cpu[engine + ALL_TREC_SUFFIX] / best_cpu[engine]
            parts.append(
                f"{engine.split('-')[1]} **{ratios[key]:.2f}x** ({best[engine + ALL_TREC_SUFFIX]:.2f} s; "
                f"CPU time {ratios[f'{key} (CPU)']:.2f}x)"
            )
        lines.append(f"- `--measures all_trec` / NDCG alone, each engine against itself: {'; '.join(parts)}")
        if "floor_sort" in best:
            parts = []
            for engine in all_trec:
                key = f"{engine}{ALL_TREC_SUFFIX} / floor_sort"
                ratios[key] = best[engine + ALL_TREC_SUFFIX] / best["floor_sort"]
                ratios[f"{key} (CPU)"] = best_cpu[engine + ALL_TREC_SUFFIX] / best_cpu["floor_sort"]
                parts.append(f"{engine.split('-')[1]} {ratios[key]:.2f}x (CPU time {ratios[f'{key} (CPU)']:.2f}x)")
            lines.append(f"- `--measures all_trec` / floor_sort: {'; '.join(parts)}")
    for other in others:
        for suffix, asked in (("", "NDCG alone"), (ALL_TREC_SUFFIX, "`--measures all_trec`")):
            parts = []
            for engine in engines:
                tool = engine + suffix
                if f"{tool}@{other}" in best and tool in best:
                    key = f"{tool}@{other} / {tool}"
                    ratios[key] = best[f"{tool}@{other}"] / best[tool]
                    ratios[f"{key} (CPU)"] = best_cpu[f"{tool}@{other}"] / best_cpu[tool]
                    parts.append(
                        f"{engine.split('-')[1]} **{ratios[key]:.2f}x** (CPU time {ratios[f'{key} (CPU)']:.2f}x)"
                    )
            if parts:
                lines.append(f"- @{other} / ours, {asked}, each engine against itself: {'; '.join(parts)}")
    if lines:
        lines = [
            "Ratios of best wall times (above 1: the first is slower; CPU time: of the best CPU times):",
            "",
            *lines,
            "",
        ]
    return lines, ratios


def write(
    measured: list[Measured],
    stem: str,
    size: str,
    layout: str,
    rows: int,
    out_root: Path,
    runner_rss_mb: float,
    references: dict[str, Path],
    ndcg: Path,
    others: dict[str, Path],
    notes: list[str] | None = None,
) -> None:
    best = {m.tool: m.best for m in measured}
    base_tool = next((tool for tool in OURS if tool in best), None)
    baseline = best[base_tool] if base_tool else None
    base_label = base_tool.split("-")[1] if base_tool else "-"
    version = ndcg_version(ndcg)
    lines = [
        f"# NDCG benchmark, {stem} ({rows:,} run rows, k = 5,10,20,100 and the whole ranking)",
        "",
        f"Layout `{layout}`: {LAYOUT_TEXT[layout]}.",
        "",
        f"Machine: {machine()}.",
        "",
        f"Ours: `{shown(ndcg)}` ({version}).",
        "",
        *[
            line
            for other, path in others.items()
            for line in (f"@{other}: `{shown(path)}` ({ndcg_version(path)}).", "")
        ],
        f"| tool | best (s) | median (s) | best CPU (s) | peak RSS (MB) | time / ours ({base_label}) "
        "| per-query values match ours (1e-9) | ours under | note |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    if notes:
        lines[-2:-2] = [*notes, ""]
    records = []
    family_checks, ndcg_checks = families.checks(out_root, best), {}
    for m in measured:
        tool = m.tool.split(" ")[0]
        if m.tool.startswith("floor") or m.tool in (base_tool, SQL_REFUSALS):
            match, under = {"text": "-"}, "-"
        else:
            # trec_eval prints 4 decimals: its values can agree to half a unit of the last
            tolerance = 5e-5 if tool in (TREC_EVAL, TREC_EVAL_ALL) else TOLERANCE
            match = agreement(tool, out_root, references.get(tool), tolerance)
            flags = MATCHING_FLAGS.get(tool)
            under = f"`{' '.join(flags)}`" if flags else "the defaults"
        ratio = m.best / baseline if baseline else None
        cpu = f"{m.best_cpu:.2f}" if m.best_cpu is not None else "-"
        cells = [m.tool, f"{m.best:.2f}", f"{m.median:.2f}", cpu, f"{m.peak_rss_mb:.0f}"]
        cells.append(f"{ratio:.2f}x" if ratio else "-")
        if families.split_family_tool(tool):  # in the families' own table, below
            ndcg_checks[tool] = match["text"]
        else:
            lines.append("| " + " | ".join([*cells, match["text"], under, m.note]) + " |")
        records.append(
            {
                "tool": m.tool,
                "best_s": m.best,
                "median_s": m.median,
                "walls_s": m.walls,
                "best_cpu_s": m.best_cpu,
                "cpus_s": m.cpus,
                "peak_rss_mb": m.peak_rss_mb,
                "ratio_to_ours": ratio,
                "match": match["text"],
                "compared_under": under.strip("`"),
                **{key: value for key, value in match.items() if key != "text"},
                **({"all_trec_columns_match": family_checks[tool]} if tool in family_checks else {}),
                "phases_per_run": m.phases_per_run,
                "note": m.note,
            }
        )
    best_cpu = {m.tool: m.best_cpu for m in measured if m.best_cpu is not None}
    ratio_text, ratios = ratio_lines(best, best_cpu, others)
    family_lines, family_rows, family_ratios = families.table(best, best_cpu, family_checks, ndcg_checks)
    ratios |= family_ratios
    lines += ["", *ratio_text, *family_lines]
    # only when both ran in this sitting: out/ keeps an earlier sitting's tables
    engines_agree = all_trec_engines_agreement(out_root, ALL_TREC) if all(tool in best for tool in ALL_TREC) else {}
    if engines_agree:
        lines += [
            f"`--measures all_trec`, DuckDB against Polars, per query, every measure (1e-9): {engines_agree['text']}.",
            "",
        ]
    others_agree = {
        f"{tool}@{other} / {tool}": all_trec_engines_agreement(out_root, (tool, f"{tool}@{other}"))
        for other in others
        for tool in ALL_TREC
        if tool in best and f"{tool}@{other}" in best
    }
    lines += [
        f"`--measures all_trec`, {key}, per query, every measure (1e-9): {v['text']}."
        for key, v in others_agree.items()
    ]
    lines += [""] if others_agree else []
    if baseline:
        lines += [f"Time per million rows (ours, {base_label}): {baseline / (rows / 1e6):.3f} s.", ""]
    lines += [
        f"Peak RSS of the runner that started every process: {runner_rss_mb:.0f} MB (no figure above can be "
        "lower: a child's peak RSS counts its parent's at spawn).",
        "",
    ]
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    (results / f"{stem}.md").write_text("\n".join(lines))
    (results / f"{stem}.json").write_text(
        json.dumps(
            {
                "size": size,
                "layout": layout,
                "rows": rows,
                "machine": machine(),
                "ndcg": shown(ndcg),
                "ndcg_version": version,
                "runner_peak_rss_mb": runner_rss_mb,
                "others": {
                    other: {"ndcg": shown(path), "version": ndcg_version(path)} for other, path in others.items()
                },
                "ratios": ratios,
                "all_trec_engines_agree": engines_agree,
                "all_trec_others_agree": others_agree,
                "families": family_rows,
                "tools": records,
            },
            indent=2,
        )
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
