"""Read what `ndcg evaluate --out` and `ndcg compare --out` wrote; the report computes nothing
else: no NDCG is recomputed, only shown (and, for the plots, averaged per group)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.groups import OVERALL, group_rows, overall_rows
from pipeline.io.outputs import (
    COMPARISON,
    DELTAS,
    PER_QUERY,
    SUMMARY,
    conventions_of,
    evaluated_partitions,
    read_conventions,
    read_manifest,
    read_table,
    recorded_judgments,
)
from pipeline.registry import MEASURE, MEASURE_NAMES, PRIMARY_MEASURE

# Columns of the per-query table that are measures or keys; any other non-float column is
# a group column (such as locale) carried along by the job that wrote the table.
KNOWN_COLUMNS = frozenset({"query_id", "k", *MEASURE_NAMES, "ndcg_min", "ndcg_max"})


@dataclass(frozen=True)
class System:
    """One evaluation output directory."""

    name: str
    path: Path
    per_query: pl.DataFrame
    summary: pl.DataFrame
    conventions: dict[str, object] | None
    # one partition of a partitioned output (``out/model_a/dt=2026-11-22``): its key=value pairs,
    # and the name of the output it belongs to (``model_a``), the line it is drawn on in the trend
    partition: dict[str, str] | None = None
    family: str | None = None
    # the summary's rows of each group (with ``--group-by``; empty otherwise), beside the overall ones
    group_summary: pl.DataFrame | None = None
    # the judgments it was scored against, as its manifest.json records them (None: not recorded)
    judgments: dict[str, object] | None = None

    @property
    def group_columns(self) -> list[str]:
        keys = set(self.partition or ())
        return [
            name
            for name, dtype in self.per_query.schema.items()
            if name not in KNOWN_COLUMNS and name not in keys and not dtype.is_float()
        ]

    @property
    def has_tie_bounds(self) -> bool:
        return {"ndcg_min", "ndcg_max"} <= set(self.per_query.columns)


@dataclass(frozen=True)
class ComparisonOutput:
    """One compare output directory."""

    path: Path
    comparison: pl.DataFrame
    deltas: pl.DataFrame
    manifest: dict[str, object] = field(default_factory=dict)

    @property
    def group_columns(self) -> list[str]:
        options = self.manifest.get("options")
        if isinstance(options, dict) and isinstance(options.get("group_by"), list):
            return [str(g) for g in options["group_by"]]
        fixed = {"baseline", "candidate", "k", OVERALL}
        return [c for c in self.comparison.columns[: self.comparison.columns.index("k")] if c not in fixed]

    def overall(self) -> pl.DataFrame:
        """The comparison rows over all queries."""
        return overall_rows(self.comparison, self.group_columns)

    def by_group(self) -> pl.DataFrame:
        """The comparison rows within one group (a null group value included)."""
        return group_rows(self.comparison, self.group_columns)

    def conventions(self) -> dict[str, dict[str, object] | None]:
        recorded = self.manifest.get("conventions")
        systems = self.systems()
        if isinstance(recorded, dict) and not set(recorded) & set(systems):
            # partitioned systems: recorded per "system/partition" (compare checked they agree)
            per_system = {
                name: value for name in systems for key, value in recorded.items() if key.startswith(f"{name}/")
            }
            recorded = per_system or recorded
        if isinstance(recorded, dict) and set(recorded) & set(systems):
            return {name: conventions_of(recorded.get(name)) for name in systems}
        return dict.fromkeys(systems, conventions_of(recorded))

    def systems(self) -> list[str]:
        pairs = self.comparison.select("baseline", "candidate").unique(maintain_order=True)
        return list(dict.fromkeys([*pairs["baseline"].to_list(), *pairs["candidate"].to_list()]))


@dataclass(frozen=True)
class ReportInputs:
    systems: list[System]
    comparisons: list[ComparisonOutput]
    # the reported measure as the page names it (the spec's title without its @k: NDCG, RR, AP, ...)
    measure: str = "NDCG"


def measure_inputs(inputs: ReportInputs, measure: str) -> ReportInputs:
    """The inputs with ``measure``'s columns in ndcg's place (per-query tables, summaries and
    the deltas of comparisons made by it; the tie bounds, NDCG's, left out), so the report
    shows that measure. Refused (exit 2) when an output does not have it."""
    if measure == PRIMARY_MEASURE:
        return inputs
    if measure not in MEASURE:
        raise UsageError(f"unknown measure {measure!r}; expected one of {', '.join(MEASURE)}")

    def swapped(table: pl.DataFrame, where: Path) -> pl.DataFrame:
        if measure not in table.columns:
            raise UsageError(f"{where}: no {measure!r} column; evaluate with --measures {MEASURE[measure].selected_by}")
        table = table.drop(PRIMARY_MEASURE, "ndcg_min", "ndcg_max", strict=False).rename({measure: PRIMARY_MEASURE})
        return table if MEASURE[measure].whole else table.filter(pl.col("k").is_not_null())

    systems = [
        replace(
            s,
            per_query=swapped(s.per_query, s.path),
            summary=swapped(s.summary, s.path),
            group_summary=None if s.group_summary is None else swapped(s.group_summary, s.path),
        )
        for s in inputs.systems
    ]
    comparisons = []
    for c in inputs.comparisons:
        compared = c.manifest.get("measure", PRIMARY_MEASURE)
        if compared != measure:
            raise UsageError(f"{c.path}: a comparison by {compared}, not {measure} (ndcg compare --measure {measure})")
        sides = {f"{measure}_{side}": f"{PRIMARY_MEASURE}_{side}" for side in ("baseline", "candidate")}
        comparisons.append(replace(c, deltas=c.deltas.rename(sides)))
    return ReportInputs(systems, comparisons, MEASURE[measure].title.split("@")[0])


def load(paths: list[str], names: list[str] | None = None) -> ReportInputs:
    """Each path is an evaluation output (per_query.parquet, summary.parquet), a partitioned one
    (``key=value`` folders each holding them: one system per partition, named
    ``<output>/<key=value>``), or a compare output (comparison.parquet, deltas.parquet).
    ``names`` name the evaluation outputs, in order (default: their folder names, made unique)."""
    systems: list[System] = []
    comparisons: list[ComparisonOutput] = []
    evaluations = [raw for raw in paths if not (Path(raw) / COMPARISON).exists()]
    if names is not None and len(names) != len(evaluations):
        raise UsageError(
            f"--names names the {len(evaluations)} evaluation output(s) in order, got {len(names)} name(s)"
        )
    given = dict(zip(evaluations, names or [], strict=False))
    for raw in paths:
        path = Path(raw)
        if not path.is_dir():
            raise InvalidInput(f"{raw}: not a directory (give the --out directory of ndcg evaluate or ndcg compare)")
        if (path / COMPARISON).exists():
            manifest = read_manifest(path)
            comparison, deltas = _pooled(read_table(path / COMPARISON), read_table(path / DELTAS), manifest)
            comparisons.append(ComparisonOutput(path=path, comparison=comparison, deltas=deltas, manifest=manifest))
        elif (path / PER_QUERY).exists():
            systems.append(
                System(
                    name=given.get(raw) or _unique_name(path, [s.name for s in systems]),
                    path=path,
                    per_query=_evaluated(read_table(path / PER_QUERY)),
                    summary=_overall_summary(read_table(path / SUMMARY)),
                    conventions=read_conventions(str(path)),
                    group_summary=_group_summary(read_table(path / SUMMARY)),
                    judgments=recorded_judgments(str(path)),
                )
            )
        elif path.is_dir() and (partitions := evaluated_partitions(path)):
            family = given.get(raw) or _unique_name(path, [s.family or s.name for s in systems])
            for partition in partitions:
                folder = partition.path(path)
                systems.append(
                    System(
                        name=f"{family}/{partition}",
                        path=folder,
                        per_query=_evaluated(read_table(folder / PER_QUERY)),
                        summary=_overall_summary(read_table(folder / SUMMARY)),
                        conventions=read_conventions(str(folder)),
                        group_summary=_group_summary(read_table(folder / SUMMARY)),
                        partition=partition.as_dict(),
                        family=family,
                        judgments=recorded_judgments(str(folder)),
                    )
                )
        else:
            raise InvalidInput(
                f"{raw}: holds neither per_query.parquet (evaluate), partition folders of them (key=value) nor "
                "comparison.parquet (compare)"
            )
    taken = [s.name for s in systems]
    if len(set(taken)) != len(taken):
        raise UsageError(f"two evaluation outputs have the same name ({', '.join(taken)}): name them with --names")
    return ReportInputs(systems=systems, comparisons=comparisons)


def _pooled(
    comparison: pl.DataFrame, deltas: pl.DataFrame, manifest: dict[str, object]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A comparison of partitioned systems (``options.partition_by``) as the report draws it: its
    pooled rows (partition columns null), and deltas whose query ids name their partition
    (``dt=2026-11-22/q1``: the same id on two days is two queries)."""
    options = manifest.get("options")
    keys = options.get("partition_by") if isinstance(options, dict) else None
    if not isinstance(keys, list) or not keys or not set(keys) <= set(comparison.columns) & set(deltas.columns):
        return comparison, deltas
    pooled = comparison.filter(pl.all_horizontal(pl.col(k).is_null() for k in keys)).drop(keys)
    prefix = [pl.lit(f"{k}=") + pl.col(k).cast(pl.String) for k in keys]
    named = pl.concat_str([*prefix, pl.col("query_id").cast(pl.String)], separator="/").alias("query_id")
    return pooled, deltas.with_columns(named).drop(keys)


def _evaluated(per_query: pl.DataFrame) -> pl.DataFrame:
    """The rows of the queries the evaluation evaluated: a query whose NDCG is null
    (``--empty-ideal skip``) is left out of every mean of ``ndcg evaluate``, so of every figure
    and table here too (as ``ndcg compare`` leaves it out)."""
    if PRIMARY_MEASURE not in per_query.columns:
        return per_query
    return per_query.filter(pl.col(PRIMARY_MEASURE).is_not_null())


def _overall_summary(summary: pl.DataFrame) -> pl.DataFrame:
    """A grouped summary's overall rows (the report's summary is over all queries; groups are
    drawn from the per-query tables), without the marker."""
    return summary.filter(pl.col(OVERALL)).drop(OVERALL) if OVERALL in summary.columns else summary


def _group_summary(summary: pl.DataFrame) -> pl.DataFrame | None:
    """A grouped summary's rows of one group each (None for an ungrouped summary)."""
    return summary.filter(~pl.col(OVERALL)).drop(OVERALL) if OVERALL in summary.columns else None


def _unique_name(path: Path, taken: list[str]) -> str:
    name = path.resolve().name
    return name if name not in taken else str(path)
