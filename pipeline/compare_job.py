"""``ndcg compare`` as a library call: systems (evaluation outputs, or runs scored here) ->
checked conventions -> :func:`pipeline.compare.compare_systems` -> outputs.

Runs are scored by the evaluation job (:func:`pipeline.job.run_jobs`: one :class:`~pipeline.job.Job`
per system, their units evaluated together, nothing written), so ``compare --run`` takes the
conventions, ``--profile``, ``--measures`` and the input checks of ``ndcg evaluate`` and gives
its numbers; their groups follow the rule of :mod:`pipeline.groups`. Evaluation outputs are
read by :mod:`pipeline.io.outputs`. Everything here takes plain values (paths, names,
numbers), so the command line only reads flags and prints; the statistics themselves live in
:mod:`pipeline.stats`.

What makes two outputs comparable is checked here, before any number: the conventions they were
evaluated with (refused when they differ, unless allowed), the judgments they were scored against
(:mod:`pipeline.judgments`: refused when they differ, unless allowed; warned when it cannot be
told) and their query sets (warned when they differ). The queries an evaluation left out of its
means are left out here too: a null NDCG (``--empty-ideal skip``), and a NaN of an output
evaluated with ``--empty-ideal nan`` (with a warning).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from pipeline.compare import (
    SCORE,
    Comparison,
    Options,
    compare_systems,
    convention_differences,
    describe_differences,
    unpaired_queries,
)
from pipeline.coverage import JUDGED, candidate_judged
from pipeline.errors import UsageError
from pipeline.gate import DROP_FLAG, Gate, GateCannotFail, GateResult, check_gate, check_gated_measure
from pipeline.groups import attach_shared_groups, parse_group_by
from pipeline.io.outputs import read_conventions, read_per_query
from pipeline.judgments import check_judgments, describe_judgment_differences
from pipeline.registry import (
    CONVENTION,
    MEASURE,
    OPTION,
    PRIMARY_MEASURE,
    Evaluation,
    QueryWeights,
    SpecError,
    parse_cutoffs,
)
from pipeline.rules import shared_warnings
from pipeline.weights import BOTH_WEIGHTS, check_list_weights_cover, shared_list_weights

if TYPE_CHECKING:
    from pipeline.job import Job

log = logging.getLogger("ndcg")
QUERY = "query_id"  # the query column of a weights table given to compare (evaluate's default --query-col)


@dataclass(frozen=True)
class Systems:
    """What to compare: evaluation outputs (``baseline`` and ``candidates``), or ``runs`` to
    score against ``qrels`` as ``ndcg evaluate`` does: with ``profile`` and the conventions of
    ``evaluation_options`` (the options of :func:`pipeline.api.make_evaluation`, by name), the
    input checks of ``input_options`` (``allow_fractional_labels``, ``warn_results_over``), on
    ``engine``; the queries' groups from ``query_attributes`` when given, else from the runs.
    ``names`` are comma-separated."""

    baseline: str | None = None
    candidates: Sequence[str] = ()
    runs: Sequence[str] = ()
    qrels: str | None = None
    names: str | None = None
    engine: str = "polars"
    evaluation_options: Mapping[str, Any] = field(default_factory=dict)
    profile: str | None = None
    query_attributes: str | None = None
    input_options: Mapping[str, Any] = field(default_factory=dict)
    # one weight per query (--query-weights, --weight-col, --missing-query-weight): the means and
    # tests are weighted (pipeline.compare); outputs evaluated with weights bring their own
    query_weights: str | None = None
    weight_col: str = OPTION["weight_col"].default
    missing_query_weight: float | None = OPTION["missing_query_weight"].default


@dataclass(frozen=True)
class Compared:
    """A comparison with what it was made from: the conventions of each system and which of
    them differ (allowed by the caller), and the queries only one system of a pair has."""

    result: Comparison
    unpaired: pl.DataFrame
    conventions: dict[str, Any]
    differences: dict[str, Any]
    options: Options
    gate: GateResult | None = None  # with ``gate=``: the regression gate's verdict
    # the judgments the systems were scored against: ``shared`` (runs scored here against one
    # --qrels) and ``differences`` (outputs scored against different ones, allowed by the caller)
    judgments: dict[str, Any] = field(default_factory=dict)
    measure: str = PRIMARY_MEASURE  # the per-query column compared


def compare_job(
    systems: Systems,
    *,
    k: str | None = None,
    group_by: str | None = None,
    all_queries: bool = False,
    permutations: int = 10_000,
    bootstrap: int = 10_000,
    seed: int = 0,
    correction: str = "holm",
    allow_different_conventions: bool = False,
    allow_different_judgments: bool = False,
    out: str | None = None,
    gate: Gate | None = None,
    partition: Sequence[str] = (),
    measure: str = PRIMARY_MEASURE,
) -> Compared:
    """Compare the systems by ``measure`` (a column of their per-query tables); with ``out``,
    write the comparison, the deltas and a manifest there as one unit (a kill never leaves new
    tables with an old manifest). With ``gate``, the regression gate's verdict is returned
    (``Compared.gate``) and recorded in the manifest (``"gate"``); raising for a failure
    (:class:`pipeline.errors.RegressionGateFailed`) is the caller's choice (the command line
    does, after printing). A gate that no data could fail raises
    :class:`pipeline.gate.GateCannotFail` (a usage error, exit 2) before anything is written,
    carrying the comparison (``compared``) and the refused verdict (``result``).

    Hive-partitioned systems (``out/model_a/dt=2026-11-22/per_query.parquet``, or runs in
    ``dt=...`` folders) are compared partition by partition: see
    :mod:`pipeline.compare_partitions`; ``partition`` (``["dt=2026-11-22"]``) selects some."""
    from pipeline.io.partitions import parse_partition_filters
    from pipeline.io.write import check_out_folder

    requested = QueryWeights(systems.query_weights, systems.weight_col, systems.missing_query_weight)
    # TF-Ranking's list weights (--doc-weight-col) weigh the runs scored here, as query weights do
    doc_weight_col = systems.evaluation_options.get("doc_weight_col") if systems.runs else None
    if doc_weight_col is not None and requested.path is not None:
        raise UsageError(BOTH_WEIGHTS)
    if systems.runs and (systems.baseline or systems.candidates):
        raise UsageError("give either --run (runs to evaluate) or --baseline/--candidate (evaluation outputs)")
    if systems.query_attributes and not systems.runs:
        raise UsageError("--query-attributes gives the groups of runs scored here (--run); outputs carry theirs")
    inputs = [("baseline", systems.baseline), *(("candidate", c) for c in systems.candidates)]
    attributes = [("query attributes", systems.query_attributes)]
    check_out_folder(out, [*inputs, ("qrels", systems.qrels), *(("run", r) for r in systems.runs), *attributes])
    groups = parse_group_by(group_by)
    if measure not in MEASURE:
        raise UsageError(f"unknown measure {measure!r}; expected one of {', '.join(MEASURE)}")
    check_measure_cutoffs(measure, compare_cutoffs(k), gate)
    if gate is not None and gate.margin is not None:
        check_gated_measure(measure)
    if gate is not None and gate.max_drop is not None:
        check_gated_measure(measure, DROP_FLAG)
    filters = parse_partition_filters(list(partition))
    partition_by: tuple[str, ...] = ()
    # runs scored here compute what the gate reads: Judged@k for a coverage floor
    also = (JUDGED,) if gate is not None and gate.min_judged is not None else ()
    if also and doc_weight_col is not None:
        raise UsageError(
            "--min-judged gates on Judged@k, which --doc-weight-col does not weigh (TF-Ranking weighs no judgment "
            "coverage): gate the coverage in a comparison without --doc-weight-col"
        )
    if systems.runs:
        tables, conventions, partition_by, run_list_weights = _evaluate_runs(
            systems, k, groups, all_queries, filters, measure, also
        )
        # every run is scored against the one --qrels: the same judgments, recorded
        judgments: dict[str, Any] = {"shared": shared_judgments(systems.qrels), "differences": []}
        weights, query_column = requested, QUERY
    else:
        tables, conventions, partition_by, recorded, partitioned_weights = _read_outputs(systems, filters)
        run_list_weights = output_list_weights(systems, conventions, requested, partitioned_weights)
        doc_weight_col = _weight_column(conventions) if run_list_weights else None
        weights, query_column = output_weights(requested, conventions, recorded_weight_files(systems, conventions))
        judgments = {"differences": check_output_judgments(recorded, allow_different_judgments)}
    if gate is not None and gate.partitions and not partition_by:
        raise UsageError("--gate-partitions needs partitioned systems (key=value folders); these are not")
    tables = {name: measure_as_score(evaluated_rows(table), measure, name) for name, table in tables.items()}
    differences = check_conventions(conventions, allow_different_conventions)
    tables = defined_rows(tables, conventions, measure)
    weight_table = weights_of(tables, weights, query_column) if weights.path is not None else None
    described = weights.describe()
    if doc_weight_col is not None:
        check_list_weights_cover(tables, run_list_weights, partition_by)
        weight_table = shared_list_weights(
            run_list_weights, measure, doc_weight_col, partition_by, outputs=not systems.runs
        )
        described = document_weights_described(doc_weight_col, measure, next(iter(run_list_weights.values())))
    options = Options(
        cutoffs=compare_cutoffs(k),
        group_by=groups,
        all_queries=all_queries,
        permutations=permutations,
        bootstrap_samples=bootstrap,
        seed=seed,
        correction=correction,
        partition_by=partition_by,
        query_weights=described,
    )
    result = compare_systems(tables, options, measure=measure, weights=weight_table)
    refused: GateCannotFail | None = None
    verdict: GateResult | None = None
    if gate is not None:
        try:
            verdict = check_gate(
                result.comparison,
                gate,
                group_by=groups,
                partition_by=partition_by,
                correction=correction,
                measure=measure,
                coverage=_gate_coverage(tables, result.comparison, gate, options, measure),
            )
        except GateCannotFail as cannot_fail:
            refused, verdict = cannot_fail, cannot_fail.result
    if measure != SCORE:  # the deltas name the measure compared
        sides = {f"{SCORE}_baseline": f"{measure}_baseline", f"{SCORE}_candidate": f"{measure}_candidate"}
        result = dataclasses.replace(result, deltas=result.deltas.rename(sides))
    unpaired = unpaired_queries(result.deltas)
    warn_different_query_sets(unpaired, all_queries)
    compared = Compared(result, unpaired, conventions, differences, options, verdict, judgments, measure)
    if refused is not None:
        # a gate that cannot fail is a usage error: nothing is written, but the comparison it was
        # asked over goes with the error, for the caller to show (the command line prints it)
        refused.compared = compared
        raise refused
    if out:
        _write_comparison(out, compared, measure, list(tables))
    return compared


def _gate_coverage(
    tables: Mapping[str, pl.DataFrame], comparison: pl.DataFrame, gate: Gate, options: Options, measure: str
) -> pl.DataFrame | None:
    """The candidates' Judged@k at the gated cutoffs, for a coverage floor (None without one);
    the whole ranking has none (the gate says so when it is all that is gated)."""
    if gate.min_judged is None:
        return None
    compared = {k for k in comparison.get_column("k").to_list() if k is not None}
    cutoffs = sorted(compared if gate.cutoffs is None else compared & set(gate.cutoffs))
    if not cutoffs:
        return None
    return candidate_judged(
        tables,
        cutoffs,
        column=SCORE if measure == JUDGED else JUDGED,
        group_by=options.group_by,
        partition_by=options.partition_by,
        all_queries=options.all_queries,
    )


def warn_different_query_sets(unpaired: pl.DataFrame, all_queries: bool) -> None:
    """Two systems evaluated on different query sets (other judgments, a lost query, another
    day's logs) are compared on the queries both have, or with ``all_queries`` with the missing
    side scored 0: said on stderr for each such pair, with the count and a few ids per side."""
    handling = "the side without one scores 0 (--all-queries)" if all_queries else "compared on the queries both have"
    for (baseline, candidate), sides in unpaired.group_by("baseline", "candidate", maintain_order=True):
        parts = []
        for row in sides.iter_rows(named=True):
            ids = row["queries"]
            shown = ", ".join(ids[:3]) + (", ..." if len(ids) > 3 else "")
            parts.append(f"{len(ids)} only in {row[row['side']]} ({shown})")
        log.warning(
            "%s and %s were evaluated on different query sets: %s; %s", baseline, candidate, "; ".join(parts), handling
        )


def _write_comparison(out: str, compared: Compared, measure: str, systems: list[str]) -> None:
    """The comparison, the deltas and their manifest, as one unit."""
    from pipeline.io.write import write_tables

    manifest = {"command": "compare", "measure": measure, "systems": systems, "conventions": compared.conventions}
    manifest["convention_differences"] = compared.differences
    manifest["judgments"] = compared.judgments
    if compared.gate is not None:
        manifest["gate"] = compared.gate.describe()
    weights = compared.options.query_weights
    if weights is not None and "doc_weight_col" in weights:  # the runs' own list weights
        manifest["document_weights"] = dict(weights)
    elif weights is not None:  # which file weighed the means, as evaluate records it
        from pipeline.io.identity import identify

        manifest["query_weights"] = {**weights, "identity": identify(str(weights["path"]))}
    write_tables(
        out,
        {"comparison": compared.result.comparison, "deltas": compared.result.deltas},
        manifest={**manifest, "options": compared.options.describe()},
    )


def evaluated_rows(table: pl.DataFrame) -> pl.DataFrame:
    """The rows of the queries an evaluation evaluated: a query whose NDCG is null
    (``--empty-ideal skip``) is left out of every mean of ``ndcg evaluate``, so out of the
    comparison too (a query that system lacks, counted and listed as such). The same for the
    outputs ``evaluate --out`` wrote and for runs scored here."""
    if PRIMARY_MEASURE not in table.columns:
        return table
    return table.filter(pl.col(PRIMARY_MEASURE).is_not_null())


def defined_rows(tables: dict[str, pl.DataFrame], conventions: Mapping[str, Any], measure: str) -> dict:
    """Without the NaN scores of systems evaluated with ``--empty-ideal nan`` (as their manifest
    records it): such a query has no relevant document to rank, and its NaN makes every mean of
    ``ndcg evaluate`` over it NaN, so no difference and no test would have a value. It is left
    out, as ``--empty-ideal skip`` leaves it out, said in a warning. A NaN anywhere else is
    refused (:func:`pipeline.compare.check_per_query`): it is no convention's."""
    kept = {}
    for name, table in tables.items():
        recorded = [c for key, c in conventions.items() if key == name or str(key).startswith(f"{name}/")]
        undefined = pl.col(SCORE).is_nan().fill_null(False)
        if not any(isinstance(c, Mapping) and c.get("empty_ideal") == "nan" for c in recorded):
            kept[name] = table
            continue
        ids = table.filter(undefined).get_column("query_id").cast(pl.String).unique().sort().to_list()
        if ids:
            shown = ", ".join(ids[:5]) + (f", ... ({len(ids)} in all)" if len(ids) > 5 else "")
            log.warning(
                "%s: %d quer%s score NaN by %s (evaluated with --empty-ideal nan: no relevant document to rank), "
                "which makes its means NaN; compared without them, as --empty-ideal skip leaves them out: %s",
                name,
                len(ids),
                "y" if len(ids) == 1 else "ies",
                measure,
                shown,
            )
        kept[name] = table.filter(~undefined)
    return kept


def check_measure_cutoffs(measure: str, cutoffs: tuple[int | None, ...] | None, gate: Gate | None) -> None:
    """A measure without a value over the whole ranking (P) cannot be compared or gated at
    ``k=all``, and one with a value there only (bpref) at a cutoff: said as such, rather than as
    a table without rows there."""
    asked = [("--k", cutoffs), ("--gate-k", gate.cutoffs if gate is not None else None)]
    for flag, given in asked:
        if given is not None and None in given and not MEASURE[measure].whole:
            raise UsageError(
                f"{measure} has no value over the whole ranking (k=all), by its definition: choose a cutoff "
                f"({flag} 10, for instance)"
            )
        cut = [k for k in given or () if k is not None]
        if cut and MEASURE[measure].whole_only:
            raise UsageError(
                f"{measure} has a value over the whole ranking only (k=all), by its definition, not at "
                f"k={','.join(map(str, cut))}: pass {flag} all (or leave {flag} out)"
            )


def measure_as_score(table: pl.DataFrame, measure: str, name: str) -> pl.DataFrame:
    """The per-query table with ``measure`` as the column compared (``ndcg``'s place), without
    the rows where the measure is undefined (P over the whole ranking, bpref at a cutoff)."""
    if measure == SCORE:
        return table
    if measure not in table.columns:
        raise UsageError(
            f"system {name!r} has no {measure!r} column in its per-query table: evaluate it with "
            f"--measures {MEASURE[measure].selected_by} (or compare another --measure)"
        )
    if not MEASURE[measure].whole:
        table = table.filter(pl.col("k").is_not_null())
    if MEASURE[measure].whole_only:
        table = table.filter(pl.col("k").is_null())
    return table.drop(SCORE, strict=False).rename({measure: SCORE})


def check_output_judgments(units: Mapping[str | None, Mapping[str, Any]], allowed: bool) -> list[dict[str, Any]]:
    """Outputs scored against different judgments are not comparable: a re-judging would read as
    a regression or a win. Refused (exit 2) naming both judgment sources, unless allowed, then
    warned and returned (for the manifest and the report); what cannot be told is warned about
    (see :mod:`pipeline.judgments`)."""
    found = check_judgments(units)
    if found.different and not allowed:
        raise UsageError(
            "the systems were scored against different judgments, so their difference would mix the systems "
            f"with the judging: {describe_judgment_differences(found.different)}; evaluate them against the same "
            "judgments, or pass --allow-different-judgments"
        )
    if found.different:
        log.warning(
            "comparing systems scored against different judgments: %s", describe_judgment_differences(found.different)
        )
    if found.unknown:
        log.warning(
            "cannot tell whether the systems were scored against the same judgments: %s",
            describe_judgment_differences(found.unknown),
        )
    return found.different


def shared_judgments(qrels: str | None) -> dict[str, Any] | None:
    """What identifies the one ``--qrels`` runs are scored against here, as an evaluation's
    manifest records its judgments (None for judgments inline in the runs)."""
    from pipeline.errors import NdcgError
    from pipeline.io.identity import UNKNOWN, identify, judgments_digest

    if qrels is None:
        return None
    try:
        identity = identify(qrels)
    except (NdcgError, OSError):  # the job said what is wrong with it when it read it
        identity = dict(UNKNOWN)
    digest = judgments_digest(identity)
    return {"path": qrels, "identity": identity, **({"sha256": digest} if digest else {})}


def document_weighted_systems(conventions: Mapping[str, Any]) -> list[str]:
    """The systems whose recorded conventions say they were evaluated with ``--doc-weight-col``."""
    return [name for name, found in conventions.items() if isinstance(found, dict) and found.get("doc_weight_col")]


def document_weights_described(column: str, measure: str, list_weights: pl.DataFrame) -> dict[str, Any]:
    """What weighs a comparison of runs scored with ``--doc-weight-col``, as its outputs record it."""
    from pipeline.weights import list_weight_column

    relevance = "gain" if list_weight_column(list_weights, measure) == "weight" else "relevant"
    formula = "1 (a plain mean)" if measure == "average_precision_score" else f"sum(w*{relevance})/sum({relevance})"
    return {"doc_weight_col": column, "measure": measure, "list_weight": formula}


def output_list_weights(
    systems: Systems,
    conventions: Mapping[str, Any],
    requested: QueryWeights,
    partitioned: Mapping[str, pl.DataFrame] | None,
) -> dict[str, pl.DataFrame]:
    """The list weights of outputs evaluated with ``--doc-weight-col`` (each folder's
    ``list_weights.parquet``; ``partitioned``: those read with each partition's folder), by
    system; none when no output was. Refused: outputs some weighted and others not, and
    ``--query-weights`` beside them (exit 2); a weighted output without the file (exit 3)."""
    from pipeline.io.outputs import read_list_weights

    weighted = document_weighted_systems(conventions)
    if not weighted:
        return {}
    plain = [name for name in conventions if name not in weighted]
    if plain:
        raise UsageError(
            f"{', '.join(weighted)} evaluated with --doc-weight-col and {', '.join(plain)} without: a comparison "
            "would weigh one side by list weights that are not its own; evaluate them alike"
        )
    if requested.path is not None:
        raise UsageError(
            f"{', '.join(weighted)} evaluated with --doc-weight-col, whose list weights weigh this comparison: "
            "--query-weights would weigh it a second time; leave --query-weights out"
        )
    paths = [str(systems.baseline), *systems.candidates]
    names = system_names(systems.names, paths)
    if partitioned is None:
        return {name: read_list_weights(path) for name, path in zip(names, paths, strict=True)}
    return dict(partitioned)  # read with each partition's folder


def _weight_column(conventions: Mapping[str, Any]) -> str:
    """The weight column the outputs were evaluated with (the first's: they differ only when allowed)."""
    return str(next(found["doc_weight_col"] for found in conventions.values() if isinstance(found, dict)))


def refuse_document_weights(systems: list[str], command: str) -> None:
    """Outputs evaluated with per-document weights, whose figures would count every query alike
    (the report's): refused (exit 2), never drawn unweighted. ``ndcg compare`` weighs them."""
    if systems:
        raise UsageError(
            f"{', '.join(systems)} evaluated with --doc-weight-col: {command} does not weigh their queries by "
            "TF-Ranking's list weights (its figures would count every query alike); ndcg compare prints the "
            "weighted comparison; for a report, evaluate and compare without --doc-weight-col"
        )


def weighted_systems(conventions: Mapping[str, Any]) -> list[str]:
    """The systems whose recorded conventions (their manifest's options) say they were
    evaluated with ``--query-weights`` (the report refuses them: its figures count queries alike)."""
    return [name for name, found in conventions.items() if isinstance(found, dict) and found.get("query_weights")]


def weights_of(tables: Mapping[str, pl.DataFrame], weights: QueryWeights, query: str = "query_id") -> pl.DataFrame:
    """``query_id, weight`` of every query of every table, read and checked as ``ndcg evaluate
    --query-weights`` reads them (:mod:`pipeline.weights`: the same rules and errors, exit 3)."""
    from pipeline.io.read import Columns
    from pipeline.weights import evaluated_weights, read_query_weights

    ids = [table.select("query_id") for table in tables.values()]
    if len({frame.schema["query_id"] for frame in ids}) > 1:  # paired as text, as pairing does
        ids = [frame.select(pl.col("query_id").cast(pl.String)) for frame in ids]
    return evaluated_weights(pl.concat(ids), read_query_weights(weights, Columns(query=query)), weights)


def recorded_weight_files(systems: Systems, conventions: Mapping[str, Any]) -> dict[str, Any]:
    """The identity of the weights file each output recorded (its manifest's
    ``inputs.query_weights``) and the query column it read it by (``settings.columns.query``),
    by the conventions' keys (a system, or ``system/partition``)."""
    from pipeline.io.outputs import read_manifest

    paths = [str(systems.baseline), *systems.candidates]
    found: dict[str, Any] = {}
    for name, path in zip(system_names(systems.names, paths), paths, strict=True):
        for key in conventions:
            if key != name and not str(key).startswith(f"{name}/"):
                continue
            folder = Path(path) if Path(path).is_dir() else Path(path).parent
            folder = folder / str(key)[len(name) + 1 :] if key != name else folder
            manifest = read_manifest(folder) if (folder / "manifest.json").is_file() else {}
            inputs, settings = manifest.get("inputs"), manifest.get("settings")
            record = inputs.get("query_weights") if isinstance(inputs, dict) else None
            columns = settings.get("columns") if isinstance(settings, dict) else None
            found[key] = {
                "identity": record.get("identity") if isinstance(record, dict) else None,
                # the weights' query column is evaluate's --query-col
                "query_column": columns.get("query") if isinstance(columns, dict) else None,
            }
    return found


def output_weights(
    requested: QueryWeights, conventions: Mapping[str, Any], records: Mapping[str, Any]
) -> tuple[QueryWeights, str]:
    """The weights a comparison of evaluation outputs is weighted by: ``--query-weights`` when
    given, else those every output was evaluated with (their manifests' ``query_weights``: the
    same file, column and missing weight, and the same file identity). Outputs weighted
    differently, or some weighted and others not, are refused (exit 2): no side is compared
    weighted by weights that are not its own, nor unweighted when it was weighted. With the query
    column the weights are read by: the outputs' ``--query-col`` for their own weights."""
    from pipeline.errors import NdcgError
    from pipeline.io.identity import identify

    recorded = {name: c.get("query_weights") if isinstance(c, dict) else None for name, c in conventions.items()}
    weighted = {name: found for name, found in recorded.items() if found}
    if not weighted:
        return requested, QUERY
    chosen = requested.describe() or next(iter(weighted.values()))
    columns = {name: (records.get(name) or {}).get("query_column") or QUERY for name in weighted}
    texts = {name: _weights_text(found, columns.get(name, QUERY)) for name, found in recorded.items()}
    query = next(iter(columns.values()))
    if len(set(texts.values())) > 1 or (requested.path and _weights_text(chosen, query) not in texts.values()):
        given = f"; --query-weights: {_weights_text(chosen, QUERY)}" if requested.path else ""
        raise UsageError(
            "the systems were evaluated with different query weights, so a comparison would weigh one side by "
            f"weights that are not its own: {'; '.join(f'{n}: {t}' for n, t in texts.items())}{given}; evaluate "
            "them with the same --query-weights (or none)"
        )
    try:
        now = identify(str(chosen["path"]))
    except (NdcgError, OSError):  # reading the weights says what is wrong with the file
        found = QueryWeights(str(chosen["path"]), str(chosen.get("weight_column")), chosen.get("missing_query_weight"))
        return found, query
    # compared without "settled", which says how old the file was when identified, not what it holds
    identities = {name: (records.get(name) or {}).get("identity") for name in weighted}
    known = {n: found for n, found in identities.items() if isinstance(found, dict) and found.get("kind") != "unknown"}
    changed = [n for n, found in known.items() if found.get("kind") and _stamps(found) != _stamps(now)]
    if changed:
        raise UsageError(
            f"{chosen['path']} changed since {', '.join(changed)} {'was' if len(changed) == 1 else 'were'} evaluated "
            "with it (its recorded identity differs), so the weights read now are not those of the evaluation; "
            "evaluate again with the weights as they are"
        )
    column, missing = chosen.get("weight_column"), chosen.get("missing_query_weight")
    return QueryWeights(str(chosen["path"]), str(column), None if missing is None else float(missing)), query


def _stamps(identity: Mapping[str, Any]) -> dict[str, Any]:
    files = identity.get("files")
    if not isinstance(files, list):
        return dict(identity)
    return {**identity, "files": [{k: v for k, v in dict(f).items() if k != "settled"} for f in files]}


def _weights_text(found: Mapping[str, Any] | None, query: str) -> str:
    if not found:
        return "no query weights"
    missing = found.get("missing_query_weight")
    by = "" if query == QUERY else f", query column {query}"
    return f"{found.get('path')} (column {found.get('weight_column')}{by}" + (
        f", missing weight {missing:g})" if missing is not None else ")"
    )


def check_conventions(conventions: dict, allowed: bool) -> dict:
    """Outputs evaluated with different conventions are not comparable: refused (exit 2) unless
    allowed, then warned; a system with no conventions recorded cannot be checked: warned."""
    differences, unknown = convention_differences(conventions)
    if unknown:
        log.warning(
            "conventions not recorded for %s (no manifest.json with them beside the output): cannot check "
            "that the systems were evaluated alike",
            ", ".join(unknown),
        )
    if differences and not allowed:
        raise UsageError(
            f"the systems were evaluated with different conventions, so their NDCG are not comparable: "
            f"{describe_differences(differences)}; evaluate them alike, or pass --allow-different-conventions"
        )
    if differences:
        log.warning("comparing systems evaluated with different conventions: %s", describe_differences(differences))
    return differences


def system_names(names: str | None, paths: Sequence[str]) -> list[str]:
    """``names`` (comma-separated, one per path), or each output's folder or file name."""
    if names:
        listed = [n.strip() for n in names.split(",")]
        if len(listed) != len(paths) or len(set(listed)) != len(listed) or not all(listed):
            raise UsageError(f"--names needs {len(paths)} distinct names, got {names!r}")
        return listed
    found = []
    for path in paths:
        resolved = Path(path)
        stem = resolved.parent.name if resolved.name == "per_query.parquet" else resolved.name.split(".")[0]
        found.append(stem or path)
    if len(set(found)) != len(found):
        found = list(paths)  # two outputs called the same: their whole paths tell them apart
    if len(set(found)) != len(found):
        raise UsageError(f"the same system is given twice: {', '.join(paths)}")
    return found


def _read_outputs(
    systems: Systems, filters: dict[str, set[str]]
) -> tuple[dict, dict, tuple[str, ...], dict, dict[str, pl.DataFrame] | None]:
    """Partitioned outputs partition by partition, else :func:`read_outputs`; with the judgments
    each was scored against (``{partition or None: {system: record}}``) and, when partitioned,
    the list weights read with them (see :func:`output_list_weights`)."""
    from pipeline.compare_partitions import check_filters, read_partitioned_outputs
    from pipeline.io.outputs import output_partitions, recorded_judgments

    if systems.baseline and systems.candidates:
        paths = [systems.baseline, *systems.candidates]
        if any(output_partitions(path) for path in paths):
            names = system_names(systems.names, paths)
            tables, conventions, keys, _, judgments, list_weights = read_partitioned_outputs(names, paths, filters)
            return tables, conventions, keys, judgments, list_weights
    check_filters(filters)
    tables, conventions = read_outputs(systems)
    paths = [str(systems.baseline), *systems.candidates]
    judgments = {None: {name: recorded_judgments(path) for name, path in zip(tables, paths, strict=True)}}
    return tables, conventions, (), judgments, None


def _evaluate_runs(
    systems: Systems,
    k: str | None,
    group_by: tuple[str, ...],
    all_queries: bool,
    filters: dict[str, set[str]],
    measure: str = PRIMARY_MEASURE,
    also: Sequence[str] = (),
) -> tuple[dict, dict, tuple[str, ...], dict]:
    """Partitioned runs evaluated partition by partition, else :func:`evaluate_runs` (with the
    measures ``also`` computed beside ``measure``); with their partition keys and their list weights."""
    from pipeline.compare_partitions import check_filters, evaluate_partitioned_runs, run_partitions

    if len(systems.runs) >= 2 and any(run_partitions(run) for run in systems.runs):
        job = run_job_of(systems, k, all_queries, measure, also)
        names = system_names(systems.names, systems.runs)
        tables, keys, _, list_weights = evaluate_partitioned_runs(names, systems.runs, job, filters, group_by)
        return tables, dict.fromkeys(names, job.evaluation.describe()), keys, list_weights
    check_filters(filters)
    tables, conventions, list_weights = evaluate_runs(systems, k, group_by, all_queries, measure, also)
    return tables, conventions, (), list_weights


def run_evaluation(
    systems: Systems, k: str | None, all_queries: bool, measure: str = PRIMARY_MEASURE, also: Sequence[str] = ()
) -> Evaluation:
    """The conventions every run is scored with, as ``ndcg evaluate`` resolves its flags (the
    profile's choices, then the options given), with ``measure`` (and the measures ``also``)
    among the measures computed. ``all_queries`` (compare's own flag) zero-fills as evaluate's
    does; without it the profile's choice stands."""
    from pipeline.api import make_evaluation

    options = {**systems.evaluation_options, **({"all_queries": True} if all_queries else {})}
    cutoffs = _run_cutoffs(k)
    evaluation = make_evaluation(k=cutoffs, profile=systems.profile, **options)
    lacking = [name for name in (measure, *also) if name not in evaluation.columns]
    if lacking:
        given = options.get("measures") or evaluation.measures
        measures = [*given, *(MEASURE[name].selected_by for name in lacking)]
        # the cutoffs already chosen: the families added for --measure name none of their own
        evaluation = make_evaluation(
            k=list(evaluation.cutoffs), profile=systems.profile, **{**options, "measures": measures}
        )
    return evaluation


def run_job_of(systems: Systems, k: str | None, all_queries: bool, measure: str, also: Sequence[str] = ()) -> Job:
    """The evaluation job every run is scored by (its ``run`` set per system); nothing is
    written. The groups are attached after, over every run (see :func:`evaluate_runs`)."""
    from pipeline.job import Job
    from pipeline.units import option_values

    return Job(
        run="",
        qrels=systems.qrels,
        evaluation=run_evaluation(systems, k, all_queries, measure, also),
        engine=systems.engine,
        query_attributes=systems.query_attributes,
        **option_values(dict(systems.input_options)),
    )


def _run_cutoffs(k: str | None) -> list[int] | None:
    """The cutoffs the runs are scored at: compare's ``--k`` (10 for ``all`` alone); left out
    (None), those ``ndcg evaluate`` would score at (the cutoffs --measures names, else the default)."""
    if k is None:
        return None
    return [c for c in compare_cutoffs(k) or CONVENTION["k"].default if c is not None] or [10]


def read_outputs(systems: Systems) -> tuple[dict, dict]:
    """The per-query tables and recorded conventions of evaluation outputs."""
    if not systems.baseline or not systems.candidates:
        raise UsageError("give --baseline and at least one --candidate (or two or more --run)")
    paths = [systems.baseline, *systems.candidates]
    names = system_names(systems.names, paths)
    tables = {name: read_per_query(path) for name, path in zip(names, paths, strict=True)}
    conventions = {name: read_conventions(path) for name, path in zip(names, paths, strict=True)}
    return tables, conventions


def evaluate_runs(
    systems: Systems,
    k: str | None,
    group_by: tuple[str, ...],
    all_queries: bool,
    measure: str = PRIMARY_MEASURE,
    also: Sequence[str] = (),
) -> tuple[dict, dict, dict]:
    """Each run scored alike by the evaluation job (with ``measure`` among its measures), its
    warnings logged as ``ndcg evaluate`` logs them; with ``group_by``, each query's groups
    attached by :func:`pipeline.groups.attach_shared_groups` (from ``--query-attributes``, or
    else from every run, so that paired queries are in the same group); with ``--doc-weight-col``,
    each run's list weights (:func:`pipeline.weights.list_weights`) by its name."""
    from pipeline.job import run_jobs

    if len(systems.runs) < 2:
        raise UsageError("give at least two --run to compare (or --baseline and --candidate)")
    job = run_job_of(systems, k, all_queries, measure, also)
    names = system_names(systems.names, systems.runs)
    tables, found, list_weights = {}, [], {}
    # the runs' units evaluated together (every run refused, if at all, before any is scored):
    # on Spark, one statement for the runs of one shape
    evaluated = run_jobs([dataclasses.replace(job, run=path) for path in systems.runs])
    for name, units in zip(names, evaluated, strict=True):
        found += [(name, warning) for unit in units for warning in unit.result.warnings]
        tables[name] = pl.concat([unit.per_query for unit in units], how="diagonal_relaxed")
        if job.evaluation.doc_weight_col is not None:  # TF-Ranking's list weights of its queries
            list_weights[name] = pl.concat(
                [unit.result.query_weights for unit in units if unit.result.query_weights is not None]
            )
    for shared_by, warning in shared_warnings(found):
        log.warning("%s: %s", shared_by, warning)
    if group_by:  # the rule of `ndcg evaluate --group-by`, over every run
        tables, warnings = attach_shared_groups(
            tables, systems.runs, group_by, query_attributes=systems.query_attributes
        )
        for name, warning in warnings:
            log.warning("%s: %s", name, warning)
    return tables, dict.fromkeys(names, job.evaluation.describe()), list_weights


def compare_cutoffs(text: str | None) -> tuple[int | None, ...] | None:
    """``--k`` of compare and report: cutoffs, ``all`` for the whole ranking (None), or None
    when not given."""
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    numbers = ",".join(p for p in parts if p.lower() != "all")
    try:
        cutoffs: tuple[int | None, ...] = parse_cutoffs(numbers) if numbers else ()
    except SpecError as error:
        raise UsageError(str(error)) from None
    return (*cutoffs, None) if any(p.lower() == "all" for p in parts) else cutoffs
