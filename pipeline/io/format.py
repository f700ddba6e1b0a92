"""Text renderings of results for stdout: a readable table and trec_eval's format; and the two
functions every text output prints data through (:func:`text_value` for a value in a cell or a
line, :func:`text_line` for a message holding data), so that a line break or a control character
in an id, a group value or a folder name never forges a line."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import replace

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.registry import (
    CONVENTIONS,
    MEASURE_NAMES,
    MEASURES,
    MIN_GEOMETRIC_MEAN,
    PRIMARY_MEASURE,
    RELEVANCE_WEIGHTED_MEASURES,
    RELSTRING,
    TREC_EVAL_ORDER,
    AskedValue,
    Evaluation,
    Measure,
    NamedLines,
    in_trec_eval_sets,
    ir_measures_defaults,
    ir_measures_name,
    number_text,
    profile_named,
    trec_eval_measure,
)

# The one word for the rows over all queries of a grouped table, in every table of every command
# (evaluate's summary, compare's table, the report): the name of the grouped summary's column that
# marks them. The whole-ranking cutoff is WHOLE_RANKING, a word of its own.
OVERALL_LABEL = "overall"
WHOLE_RANKING = "all"

# The measures the trec format prints: under trec_eval's names, or ir_measures' for a measure
# trec_eval does not have (ERR@10, Judged@10; Measure.line_name), or their own (scikit-learn's
# average_precision_score). NDCG's sums (cg, dcg, idcg)
# have no name in either and no line.
TREC_MEASURES = tuple(
    m for m in MEASURES if m.trec_eval or m.trec_eval_cut or m.ir_measures or m.ir_measures_cut or m.line
)
# trec_eval splits its lines on whitespace: an id holding a space, a tab or a line break (or a
# control character, or nothing) would shift or forge fields and lines. Unicode's separators too:
# Python readers split on them.
_UNCARRIABLE = r"[\s\p{Cc}\p{Zl}\p{Zp}\x{1C}-\x{1F}\x{85}]"


def check_trec_ids(per_query: pl.DataFrame) -> None:
    """Refuse (exit 3, naming the id) a query id that trec_eval's format cannot carry: one its
    readers would split or mistake for a summary line (``all``, the query of the means)."""
    ids = pl.col("query_id").cast(pl.String)
    bad = (
        per_query.lazy()
        .select(ids)
        .filter(ids.str.contains(_UNCARRIABLE) | (ids.str.len_bytes() == 0) | (ids == "all"))
    )
    found = bad.head(1).collect()
    if found.height:
        why = (
            "is 'all', the query of trec_eval's summary lines (its lines would read as the means)"
            if found.item() == "all"
            else "holds whitespace or a control character (or is empty), which trec_eval's format cannot carry "
            "(its fields are split on whitespace)"
        )
        raise InvalidInput(
            f"query id {found.item()!r} {why}: rename the query, or use --output-format table|json and "
            "--out-format parquet|csv|jsonl"
        )


def _trec_lines_of(
    frame: pl.DataFrame,
    trec_sets: tuple[str, ...] = (),
    relstrings: tuple[str, dict[str, str]] | None = None,
    named: NamedLines | None = None,
    named_cuts: NamedLines | None = None,
    whole_tables: bool = False,
    digits: int = 4,
) -> list[str]:
    """The lines ``name<TAB>query<TAB>value`` (``digits`` decimals) of each measure trec_eval knows
    that has a value, row by row; the query is ``all`` in a table of means (no ``query_id``
    column), and per query only the measures trec_eval prints per query. ``trec_sets``, the
    named sets asked for (``all_trec``, ``official``): the lines of their measures at
    trec_eval's own cutoffs of each, and those of the families asked beside them.
    ``relstrings``, ``(line name, {query: string})``: each query's relstring line (an empty
    string for a query not in it). With either, the lines are in trec_eval's order: query by
    query, then its measure table's order, a measure's cutoffs ascending. ``named``: beside the
    sets, only the measures ``--measures`` names one by one (``nDCG@10,AP``: ``ndcg_cut_10`` and
    ``map``). ``named_cuts``: the names with a cutoff, ``--k`` given or not: one trec_eval has
    no line of (``RR@3``) is printed under ir_measures' name (``named`` is None under ``--k``,
    which prints every measure at every cutoff, trec_eval's lines). ``whole_tables``: every
    value a name carries, a measure trec_eval has no line of at a cutoff under ir_measures' name
    (``RR@3`` of recip_rank; the files of ``--out-format trec``, which render the tables)."""
    by_name = named_cuts if named_cuts is not None else named
    per_query = "query_id" in frame.columns
    measures = [m for m in TREC_MEASURES if m.name in frame.columns and (m.trec_per_query or not per_query)]
    beside = _families_beside(trec_sets, frame.columns)
    trec_order = bool(trec_sets or relstrings)

    def line_name(measure: Measure, k: int | None) -> str | None:
        """The line a measure at ``k`` prints under, or None when it prints none."""
        name = measure.line_name(k)
        if name is None and whole_tables:
            return _ir_measures_line(measure, k)
        if name is None and by_name is not None and by_name.shows(measure.name, k):
            # named one by one where trec_eval has no line of it (RR@3): ir_measures' name,
            # as for a measure trec_eval lacks, never left out silently (beside a set, --k too)
            return _ir_measures_line(measure, k)
        if trec_sets and in_trec_eval_sets(measure, k, trec_sets):
            return name
        if named is not None:
            return name if named.shows(measure.name, k) else None
        if trec_sets and measure.selected_by not in beside:
            return None
        return name

    rows = frame.select(
        (pl.col("query_id").cast(pl.String) if per_query else pl.lit("all", dtype=pl.String)).alias("_query"),
        "k",
        pl.int_range(pl.len(), dtype=pl.Int64).alias("_row"),
        *(m.name for m in measures),
    ).with_columns(pl.col("_row").min().over("_query").alias("_first"))  # rows come sorted by query
    # which line each measure prints at each cutoff, and where: decided once per (measure, k),
    # then each measure's cells joined to its lines by k (per cell in Python, 540,000 lines took
    # 4.5 s; a frame per (measure, k), a thousand cutoffs took 7 s)
    cutoffs = rows.get_column("k").unique().to_list()
    placed = pl.Schema([("k", frame.schema["k"]), ("_name", pl.String()), ("_order", pl.Int64())])
    cells = [
        pl.LazyFrame(
            schema={"_query": pl.String, "k": frame.schema["k"], "_row": pl.Int64, "_first": pl.Int64}
        ).with_columns(
            pl.lit(None, dtype=pl.Float64).alias("_value"),
            pl.lit(None, dtype=pl.String).alias("_name"),
            pl.lit(None, dtype=pl.Int64).alias("_order"),
            pl.lit(None, dtype=pl.Int64).alias("_measure_index"),
            pl.lit(None, dtype=pl.Boolean).alias("_whole"),
        )
    ]
    for measure_index, measure in enumerate(measures):
        plan = []
        for k in cutoffs:
            name = line_name(measure, k)
            if name is not None:
                trec_measure = trec_eval_measure(measure, k)
                plan.append((k, name, TREC_EVAL_ORDER.index(trec_measure) if trec_measure else len(TREC_EVAL_ORDER)))
        if not plan:
            continue
        cells.append(
            rows.lazy()
            .select("_query", "k", "_row", "_first", pl.col(measure.name).cast(pl.Float64).alias("_value"))
            .join(pl.LazyFrame(plan, schema=placed, orient="row"), on="k", nulls_equal=True)
            .with_columns(
                pl.lit(measure_index, dtype=pl.Int64).alias("_measure_index"),
                pl.lit(measure.whole_number).alias("_whole"),
            )
        )
    lines = pl.concat(cells).with_columns(pl.lit(None, dtype=pl.String).alias("_text")).collect()
    if relstrings is not None and per_query:
        name, strings = relstrings
        relstring_lines = (
            rows.group_by("_query")
            .agg(pl.col("_first").first())
            .select(
                "_query",
                pl.lit(None, dtype=frame.schema["k"]).alias("k"),
                pl.col("_first").alias("_row"),
                "_first",
                pl.lit(None, dtype=pl.Float64).alias("_value"),
                pl.lit(name).alias("_name"),
                pl.lit(TREC_EVAL_ORDER.index(RELSTRING), dtype=pl.Int64).alias("_order"),
                pl.lit(-1, dtype=pl.Int64).alias("_measure_index"),
                pl.lit(False).alias("_whole"),
                pl.col("_query").replace_strict(strings, default="", return_dtype=pl.String).alias("_text"),
            )
        )
        lines = pl.concat([lines, relstring_lines.select(lines.columns)])
    keys = ["_first", "_order", "_measure_index", "_row"] if trec_order else ["_row", "_measure_index"]
    # a cell without a value (P over the whole ranking) prints no line
    lines = lines.filter(pl.col("_text").is_not_null() | pl.col("_value").is_not_null()).sort(keys)
    # trec_eval prints its counts as whole numbers (%ld), a relstring quoted ('%s'), every other
    # value with 4 decimals; formatted by Python, whose rounding is C's (an exact tie to even)
    shown = [
        f"'{text}'" if text is not None else f"{value:.0f}" if whole else f"{value:.{digits}f}"
        for text, value, whole in zip(
            lines.get_column("_text").to_list(),
            lines.get_column("_value").to_list(),
            lines.get_column("_whole").to_list(),
            strict=True,
        )
    ]
    return (
        lines.select(
            pl.concat_str(pl.col("_name").str.pad_end(22), "_query", pl.Series(shown, dtype=pl.String), separator="\t")
        )
        .to_series()
        .to_list()
    )


def _ir_measures_line(measure: Measure, k: int | None) -> str | None:
    """ir_measures' name of a measure at ``k`` (``RR@3``), or None where it has none."""
    if k is None:
        return measure.ir_measures
    return None if measure.ir_measures_cut is None else measure.ir_measures_cut.format(k=k)


def _families_beside(trec_sets: tuple[str, ...], columns: list[str]) -> set[str]:
    """The families of ``columns`` asked for beside the named sets: those no set selects (NDCG,
    always computed, only when a set has it)."""
    if not trec_sets:
        return set()
    in_sets = {m.selected_by for m in MEASURES for k in (None, *m.trec_cutoffs) if in_trec_eval_sets(m, k, trec_sets)}
    return {m.selected_by for m in MEASURES if m.name in columns} - in_sets - {PRIMARY_MEASURE}


def _combined(measure: Measure) -> pl.Expr:
    """A measure's per-query values combined as the summary combines them (its aggregate)."""
    column = pl.col(measure.name)
    if measure.aggregate == "sum":
        return column.sum()
    if measure.aggregate == "geometric_mean":
        return column.clip(lower_bound=MIN_GEOMETRIC_MEAN).log().mean().exp()
    return column.mean()


def trec_lines(
    per_query: pl.DataFrame,
    *,
    per_query_lines: bool,
    summary: pl.DataFrame | None = None,
    digits: int = 4,
    trec_sets: tuple[str, ...] = (),
    run_id: str | None = None,
    relstrings: tuple[str, dict[str, str]] | None = None,
    named: NamedLines | None = None,
    named_cuts: NamedLines | None = None,
) -> str:
    """``measure<TAB>query<TAB>value`` lines as trec_eval prints them: per query (with
    ``per_query_lines``), then the summary's lines as query ``all``. ``summary`` is the
    evaluation's own (its queries and each measure's aggregate, as the table prints them; of a
    grouped summary its overall rows); without it, each measure of ``per_query`` combined as its
    aggregate says (a mean; a sum for ``num_*``, a geometric mean for ``gm_map``) over the
    queries whose ndcg is not null. The queries the summary leaves out (a null ndcg:
    ``empty_ideal`` skip) have no lines, and neither has a null value (P over the whole ranking).
    ``trec_sets``: the named sets asked for (``all_trec``, ``official``), whose lines are
    printed as trec_eval prints them (see :func:`_trec_lines_of`), the summary's led by trec_eval's
    ``runid`` line when ``run_id``, the run's name, is known (:func:`pipeline.io.read.trec_run_id`).
    ``relstrings``, ``(line name, {query: string})``: trec_eval's relstring line of each query
    (per query only, as trec_eval prints it; :func:`pipeline.engines.polars.relstrings`).
    ``named``: beside the sets, only the measures ``--measures`` names one by one
    (:func:`pipeline.registry.named_lines`); ``named_cuts``, those it names with a cutoff, ``--k``
    given or not (see :func:`_trec_lines_of`)."""
    check_trec_ids(per_query)
    rows = per_query.with_columns(pl.col("query_id").cast(pl.String)).sort(["query_id", "k"], nulls_last=False)
    # the queries the summary averages: a query whose ndcg is null (empty_ideal skip) is left out
    # of every mean, so of the per-query lines too
    counted = rows.filter(pl.col("ndcg").is_not_null())
    lines = []
    if per_query_lines:
        lines += _trec_lines_of(counted, trec_sets, relstrings, named, named_cuts, digits=digits)
    if summary is None:
        measures = [m for m in TREC_MEASURES if m.name in rows.columns]
        summary = counted.group_by("k").agg(_combined(m) for m in measures).sort("k", nulls_last=False)
    elif "overall" in summary.columns:
        summary = summary.filter(pl.col("overall"))
    if trec_sets and run_id is not None:
        # trec_eval prints the run's name among the summary's lines only (m_runid.c), as it is
        lines.append(f"{'runid':<22}\tall\t{text_value(run_id)}")
    lines += _trec_lines_of(summary, trec_sets, named=named, named_cuts=named_cuts, digits=digits)
    return "\n".join(lines) + "\n"


def trec_file_text(frame: pl.DataFrame, *, digits: int = 4) -> str:
    """A per-query table as trec_eval's per-query lines, or a summary as its ``all`` lines, each
    value under trec_eval's name, or ir_measures' where trec_eval has none (``RR@10``); as
    :func:`trec_lines`, a query whose ndcg is null (``empty_ideal`` skip) has no lines, and a
    null value (P over the whole ranking) none. The set measures and counts of the top k
    (``set_P``, ``num_ret`` at a cutoff), which neither names, are in the other formats' tables."""
    if "query_id" in frame.columns:
        check_trec_ids(frame)
        rows = frame.with_columns(pl.col("query_id").cast(pl.String)).sort(["query_id", "k"], nulls_last=False)
        if "ndcg" in rows.columns:
            rows = rows.filter(pl.col("ndcg").is_not_null())
        lines = _trec_lines_of(rows, whole_tables=True, digits=digits)
    else:
        # a grouped summary: only its overall rows (a null group value is a group, not overall)
        overall = frame.filter(pl.col("overall")) if "overall" in frame.columns else frame
        lines = _trec_lines_of(overall, whole_tables=True, digits=digits)
    return "\n".join(lines) + "\n"


def text_value(value: object) -> str:
    """A value that came from data (an id, a group value, a partition folder's name, a system's
    name) as every text output prints it: as it is when it is printable on one line and does not
    begin with a quote, else quoted with its escapes (Python's ``repr``: ``'a\\nb'``), so that no
    value breaks a line, forges a row, a ``# gate ...: passed`` line or a verdict, or passes for
    a quoted one. Printable means Python's ``str.isprintable``: line breaks (``\\n``, ``\\r``,
    U+2028/2029, NEL), tabs, control and format characters (bidi overrides) are not."""
    text = str(value)
    if text.isprintable() and text[:1] not in ("'", '"'):
        return text
    return repr(text)


def text_line(text: str) -> str:
    """One line of free text that holds data (a message naming a path or an id, a log line, a
    verdict) kept on one line: each character that is not printable replaced by its escape
    (``\\n``, ``\\x1b``, ``\\u2028``), the rest as it is."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def group_cell(value: object, *, overall: bool, overall_marker: str = OVERALL_LABEL) -> str:
    """A group value as a table cell: ``overall_marker`` on the overall rows (their group values
    are null), ``(null)`` for the null group; a value that would pass for one of these is quoted,
    and any other as :func:`text_value` prints it, so no value forges a marker or a row."""
    if value is None:
        return overall_marker if overall else "(null)"
    text = str(value)
    return repr(text) if text in (overall_marker, "(null)") else text_value(text)


def summary_table(summary: pl.DataFrame, title: str = "", *, digits: int = 4) -> str:
    """A fixed-width table of the summary under ``title`` (e.g. :func:`conventions_header`).
    Partition and group columns (those before ``k``) lead each row; :data:`OVERALL_LABEL` marks
    the overall rows of a grouped summary (its ``overall`` column), ``(null)`` the group of
    queries whose group value is null, :data:`WHOLE_RANKING` the whole-ranking cutoff; a group
    value that looks like a marker or holds a control character is quoted (:func:`group_cell`)."""
    keys = [c for c in summary.columns[: summary.columns.index("k")] if c != "overall"]
    means = [m for m in (*MEASURE_NAMES, "ndcg_min", "ndcg_max") if m in summary.columns]
    counts = [c for c in ("tie_sensitive_queries",) if c in summary.columns]
    header = [*keys, "k", "queries", *means, *counts]
    body = [
        [group_cell(row[key], overall=bool(row.get("overall"))) for key in keys]
        + [WHOLE_RANKING if row["k"] is None else str(row["k"]), str(row["queries"])]
        + [_number(row[m], digits) for m in means]
        + ["-" if row[c] is None else str(row[c]) for c in counts]
        for row in summary.iter_rows(named=True)
    ]
    table = _aligned(header, body, len(keys))
    return "\n".join([*title.splitlines(), *table]) + "\n"


def _cell(column: str, value: object, digits: int) -> str:
    if column == "measure":
        return str(value)
    if column == "k":
        return WHOLE_RANKING if value is None else str(value)
    return _number(value, digits)  # type: ignore[arg-type]


def _aligned(header: list[str], body: list[list[str]], left: int) -> list[str]:
    """Rows of cells in columns as wide as their widest cell: the first ``left`` columns (ids,
    groups, names) flush left, the numbers flush right."""
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    return [
        "  ".join(
            cell.ljust(width) if i < left else cell.rjust(width)
            for i, (cell, width) in enumerate(zip(line, widths, strict=True))
        )
        for line in [header, *body]
    ]


def _number(value: float | None, digits: int) -> str:
    # a mean is null when every query was skipped (empty_ideal="skip"); P over the whole ranking is none
    return "-" if value is None else f"{value:.{digits}f}"


def asked_rows(summary: pl.DataFrame, asked: Sequence[AskedValue]) -> list[dict[str, object]]:
    """The values ``--measures`` named one by one (:func:`pipeline.registry.asked_values`) of
    each summary row (over all queries, each group, each partition), in the order named: the
    row's partition and group values (and ``overall``, when grouped), then ``measure`` (the
    name as asked), ``queries`` and ``value``."""
    keys = summary.columns[: summary.columns.index("k")]
    rows = _by_cutoff(summary.to_dicts(), keys)
    return [
        {
            **dict(zip(keys, lead, strict=True)),
            "measure": value.label,
            "queries": found["queries"],
            "value": found[value.column],
        }
        for lead, by_cutoff in rows.items()
        for value in asked
        if (found := by_cutoff.get(value.k)) is not None
    ]


def _by_cutoff(rows: list[dict[str, object]], keys: Sequence[str]) -> dict[tuple, dict[object, dict[str, object]]]:
    """``rows`` (of a summary or a per-query table) by the values of ``keys`` (a query, a group,
    a partition), then by cutoff, in the order they come."""
    found: dict[tuple, dict[object, dict[str, object]]] = {}
    for row in rows:
        found.setdefault(tuple(row[key] for key in keys), {})[row["k"]] = row
    return found


def asked_table(summary: pl.DataFrame, asked: Sequence[AskedValue], title: str = "", *, digits: int = 4) -> str:
    """:func:`asked_rows` as a table under ``title``, ``measure  queries  value`` led by the
    partition and group columns as :func:`summary_table` prints them."""
    keys = [c for c in summary.columns[: summary.columns.index("k")] if c != "overall"]
    body = [
        [group_cell(row[key], overall=bool(row.get("overall"))) for key in keys]
        + [str(row["measure"]), str(row["queries"]), _number(row["value"], digits)]  # type: ignore[arg-type]
        for row in asked_rows(summary, asked)
    ]
    table = _aligned([*keys, "measure", "queries", "value"], body, len(keys) + 1)
    return "\n".join([*title.splitlines(), *table]) + "\n"


def per_query_rows(per_query: pl.DataFrame, asked: Sequence[AskedValue] | None = None) -> list[dict[str, object]]:
    """Each query's values as ``--per-query`` prints them, by query id then cutoff (the whole
    ranking first): with the measures named one by one, a row per query and measure named
    (its id and group values, ``measure``, ``value``); else a row per query and cutoff."""
    keys = per_query.columns[: per_query.columns.index("k")]
    rows = per_query.sort([keys[0], "k"], nulls_last=False, maintain_order=True).to_dicts()
    if asked is None:
        return rows
    return [
        {**dict(zip(keys, lead, strict=True)), "measure": value.label, "value": by_cutoff[value.k][value.column]}
        for lead, by_cutoff in _by_cutoff(rows, keys).items()
        for value in asked
        if value.k in by_cutoff
    ]


def per_query_table(per_query: pl.DataFrame, asked: Sequence[AskedValue] | None = None, *, digits: int = 4) -> str:
    """:func:`per_query_rows` as a table, above the summary: ``query_id  measure  value`` with
    the measures named one by one, else a line per query and cutoff with the summary table's
    columns; ids and group values as :func:`text_value` prints them."""
    keys = per_query.columns[: per_query.columns.index("k")]
    columns = (
        ["measure", "value"]
        if asked is not None
        else ["k", *(m for m in (*MEASURE_NAMES, "ndcg_min", "ndcg_max") if m in per_query.columns)]
    )
    body = [
        [text_value(row[keys[0]]), *(group_cell(row[key], overall=False) for key in keys[1:])]
        + [_cell(column, row[column], digits) for column in columns]
        for row in per_query_rows(per_query, asked)
    ]
    return "\n".join(_aligned([*keys, *columns], body, len(keys) + (asked is not None))) + "\n"


def convention_settings(evaluation: Evaluation) -> dict[str, object]:
    """Each convention of ``evaluation`` as its flag and config key give it, by name:
    ``{"k": "5,10", "gain": "exponential", "discount": "log2", "all_queries": False, ...}``."""
    settings: dict[str, object] = {}
    for convention in CONVENTIONS:
        attribute, _, part = convention.field.partition(".")
        value = getattr(evaluation, attribute)
        value = getattr(value, part) if part else value
        if isinstance(value, tuple):
            value = ",".join(map(str, value))
        elif not isinstance(value, (str, int, float, bool)) and value is not None:
            value = str(value)  # a gain: its name, or its map as --gain writes it
        settings[convention.name] = value
    return settings


def conventions_header(evaluation: Evaluation, profile: str | None = None, *, verbose: bool = False) -> str:
    """The line above a summary table: the profile (or trec_eval's defaults) and only the
    conventions that differ from it, e.g. ``# conventions: trec_eval defaults except
    gain=exponential, k=5,10``; ``verbose`` adds every convention in full, a line each (as
    ``--json`` and the manifest record them)."""
    base = profile_named(profile).evaluation() if profile else Evaluation()
    ours, theirs = convention_settings(evaluation), convention_settings(base)
    differing = [f"{name}={_setting_text(value)}" for name, value in ours.items() if value != theirs[name]]
    named = f"profile {profile}" if profile else "trec_eval defaults"
    line = f"# conventions: {named}" + (f" except {', '.join(differing)}" if differing else "")
    if not verbose:
        return line
    return "\n".join([line, *(f"#   {key}: {_setting_text(value)}" for key, value in evaluation.describe().items())])


def weights_line(weights: dict[str, object] | None) -> str | None:
    """The line under the conventions line when the means are weighted (``--query-weights``,
    as :meth:`pipeline.registry.QueryWeights.describe` records it), else None."""
    if weights is None:
        return None
    missing = weights.get("missing_query_weight")
    default = f"; a query without a row weighs {missing:g}" if isinstance(missing, float) else ""
    return text_line(
        f"# query weights: {weights['path']} (column {weights['weight_column']}{default}): each mean is "
        "sum(w*x)/sum(w) over the evaluated queries, each geometric mean exp(sum(w*ln x)/sum(w)); sums and "
        "query counts are not weighted"
    )


def document_weights_line(evaluation: Evaluation) -> str | None:
    """The line under the conventions line when the run's per-document weights weigh the numbers
    (``--doc-weight-col``), else None: how each mean asked weighs its queries."""
    if evaluation.doc_weight_col is None:
        return None
    means = ["sum(w*g)/sum(g) for ndcg"]
    weighed = [name for name in RELEVANCE_WEIGHTED_MEASURES if name in evaluation.columns]
    if weighed:
        means.append(f"sum(w*rel)/sum(rel) for {' and '.join(filter(None, (', '.join(weighed[:-1]), weighed[-1])))}")
    plain = (
        "; average_precision_score weighs each result as scikit-learn's sample_weight, its mean plain over the "
        "queries with a result weighing above 0"
        if "average_precision_score" in evaluation.columns
        else ""
    )
    source = "the run"
    if evaluation.doc_weights_in == "qrels":
        unjudged = evaluation.unjudged_weight
        source = "the qrels"
        if unjudged is not None:
            source += f" (a result they do not judge: {number_text(unjudged)})"
    return text_line(
        f"# document weights: column {evaluation.doc_weight_col} of {source}, as TF-Ranking weighs them: weight x gain "
        "in the DCG and its ideal; each mean is sum(lw*x)/sum(lw) with lw the query's list weight, "
        f"{' and '.join(means)} (a query without relevance: the mean list weight){plain}"
    )


IR_MEASURES_PROFILE = "ir_measures"


def spelling_note(given: Sequence[str] | None, evaluation: Evaluation, profile: str | None) -> str | None:
    """A line for where the numbers are read when ``--measures`` names measures in ir_measures'
    spelling (``nDCG@10``) and no profile was chosen, and the conventions differ from
    ir_measures': the names, the conventions that differ and the flag that gives ir_measures'
    numbers. We keep one meaning per convention (a spelling does not switch conventions: a list
    may mix spellings, and a convention set by a name would change under the user's feet), and
    say so where the number is read. ir_measures' conventions of the names are its profile's
    under the names' parameters, written (``P(rel=2)@5``) or left to ir_measures' defaults
    (``RBP``: p=0.8). None when nothing differs or a profile was chosen."""
    if not given or profile is not None:
        return None
    foreign = [named.label for name in given if (named := ir_measures_name(name)) is not None]
    if not foreign:
        return None
    profile_alone = profile_named(IR_MEASURES_PROFILE).evaluation(cutoffs=evaluation.cutoffs, measures=tuple(given))
    defaults = ir_measures_defaults(given)
    base = replace(profile_alone, **defaults)  # type: ignore[arg-type]
    ours, theirs = convention_settings(evaluation), convention_settings(base)
    # what the profile leaves at trec_eval's choice and ir_measures' default of a name is not (RBP's p)
    flags = [
        f"--{name.replace('_', '-')} {_setting_text(theirs[name])}"
        for name in defaults
        if theirs[name] != convention_settings(profile_alone)[name]
    ]
    # ir_measures orders tied scores as pyndeval does for its ndeval measures, as trec_eval does
    # for the others: with both kinds named, no one --ties gives all of its numbers
    by_ties: dict[str, list[str]] = {}
    for name in given:
        if (named := ir_measures_name(name)) is not None:
            held = named.conventions().get("ties", (profile_alone.ties, False))[0]
            by_ties.setdefault(str(held), []).append(named.label)
    split = len(by_ties) > 1
    differing = [
        f"{name}={_setting_text(value)} (ir_measures: {_setting_text(theirs[name])})"
        for name, value in ours.items()
        if name not in ("k", "measures") and value != theirs[name] and not (split and name == "ties")
    ]
    if split:
        differing.append(
            f"ties={_setting_text(ours['ties'])} (ir_measures: "
            + "; ".join(f"{order} for {', '.join(labels)}" for order, labels in by_ties.items())
            + ": no one --ties gives both)"
        )
    if not differing:
        return None
    return (
        f"# {', '.join(foreign)}: ir_measures' spelling, scored with these conventions, not ir_measures': "
        f"{', '.join(differing)}; {' '.join(['--profile ir_measures', *flags])} gives ir_measures' numbers"
        + (" where no scores tie" if split else "")
    )


def _setting_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return "none" if value is None else str(value)


def json_text(value: object) -> str:
    """``value`` as strict JSON: NaN and infinities (an ``--empty-ideal nan`` mean) become
    ``null``, as in the jsonl outputs, instead of the ``NaN`` JSON parsers refuse."""
    return json.dumps(_finite(value), default=str, allow_nan=False)


def _finite(value: object) -> object:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def validation_report(
    run: str, qrels: str | None, error: InvalidInput | None, warnings: Sequence, *, as_json: bool
) -> str:
    """What ``ndcg validate`` prints: valid or the error, then each warning; or one JSON object."""
    if as_json:
        report = {
            "valid": error is None,
            "run": run,
            "qrels": qrels,
            "error": None if error is None else {"exit_code": error.exit_code, "message": str(error)},
            "warnings": [warning.as_dict() for warning in warnings],
        }
        return json.dumps(report) + "\n"
    lines = [f"run:   {run}", f"qrels: {qrels or '(inline labels of the run)'}"]
    lines.append("invalid: " + str(error) if error else "valid")
    lines += [f"warning: {warning}" for warning in warnings]
    return "\n".join(map(text_line, lines)) + "\n"


def decimals_apart(value: float, bound: float, least: int = 4) -> int:
    """The fewest decimals (at least ``least``) at which ``value`` printed is on its own side of
    ``bound`` printed, so that a message never reads "0.9000 is below 0.9"; 17 at most.

    >>> decimals_apart(0.89996, 0.9), decimals_apart(0.01004, 0.01), decimals_apart(0.5, 0.9)
    (5, 5, 4)
    """
    side = value > bound
    for decimals in range(least, 18):
        shown, limit = float(f"{value:.{decimals}f}"), float(f"{bound:.{decimals}f}")
        if shown != limit and (shown > limit) == side:
            return decimals
    return 17
