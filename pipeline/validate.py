"""Checks that run before any number is computed, with errors that name the file, the column,
the offending value and an example row, and warnings for what is legal but suspicious.

Errors (:class:`~pipeline.errors.InvalidInput`, exit 3): wrong column types (text scores,
fractional labels of any non-integer type unless allowed: floats and decimals alike), nulls,
NaN or infinite values, labels whose gain under the evaluation's gain exceeds
:data:`~pipeline.spec.MAX_GAIN` (their sums would overflow a double), duplicate (query_id,
doc_id) rows, empty inputs, lines that do not parse, unreadable files.

Warnings (:class:`ValidationWarning`, returned, never logged here): queries only in the run,
queries only in the qrels, queries without any judged document of positive gain (under the
evaluation's gain: their IDCG is 0), negative labels, queries with more results than a limit.
Each carries a count and the first few ids.

The rules other engines' validation shares are functions of this module: :func:`id_casts`
(one id type for both inputs, from the schemas alone), :func:`fractional_label` (which
label types can hold fractions, and the test), :func:`gain_overflows` and
:func:`gain_overflow_message` (labels beyond the largest gain), :func:`positive_gain` (what
the ``queries_without_relevant`` warning counts as relevant).

The checks of one input are three or four small aggregations collected together: column
statistics, a count of repeated (query_id, doc_id) hashes, and a per-query table from which
every warning is taken. Example rows, and the exact duplicate check, run only when a check
fails.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.expressions import gain as gain_of
from pipeline.io.read import (
    COLLECT_ENGINE,
    COLUMN_FLAGS,
    DOC,
    FILE,
    LABEL,
    LINE,
    LINE_NUMBER,
    PROVENANCE,
    QUERY,
    SCORE,
    Columns,
)
from pipeline.spec import MAX_GAIN, Evaluation, Gain

ID_TYPES = "string or integer"
# How many ids a warning lists; the count is always complete.
WARNING_EXAMPLES = 5
# The warnings' codes, in the order check_inputs reports them.
WARNING_ORDER = (
    "queries_only_in_run",
    "queries_only_in_qrels",
    "queries_without_relevant",
    "negative_labels",
    "results_over_limit",
)
# Runs usually keep 1000 results per query (TREC); more is often an unintended full dump.
DEFAULT_WARN_RESULTS_OVER = 1000


@dataclass(frozen=True)
class ValidationWarning:
    """Something legal but suspicious in the inputs: what, how often, and the first few ids.

    ``code`` is stable (for manifests and scripts); ``message`` is for people.
    """

    code: str
    message: str
    count: int
    examples: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "examples": list(self.examples)}

    def __str__(self) -> str:
        shown = ", ".join(self.examples)
        more = ", ..." if self.count > len(self.examples) else ""
        return f"{self.message}: {self.count} ({shown}{more})" if shown else f"{self.message}: {self.count}"


@dataclass(frozen=True)
class Checked:
    """Validated inputs with canonical columns and aligned id types, still lazy, plus the
    warnings found on the way."""

    run: pl.LazyFrame
    qrels: pl.LazyFrame
    warnings: tuple[ValidationWarning, ...] = field(default=())
    # the distinct query ids of each input (type aligned), which the checks count anyway
    run_queries: pl.DataFrame | None = None
    qrels_queries: pl.DataFrame | None = None


def check_inputs(
    run: pl.LazyFrame,
    qrels: pl.LazyFrame,
    *,
    run_name: str,
    qrels_name: str,
    columns: Columns | None = None,
    allow_fractional_labels: bool = False,
    warn_results_over: int | None = DEFAULT_WARN_RESULTS_OVER,
    run_duplicates: str = "error",
    require_rows: bool = True,
    evaluation: Evaluation | None = None,
) -> Checked:
    """Validate run and qrels; return them with matching id types and no helper columns.

    ``columns`` gives the user's column names for messages; ``warn_results_over`` (None: off)
    is the number of results per query above which a query is reported. ``run_duplicates`` is
    the evaluation's duplicate policy: repeated (query, doc) rows in the run are refused only
    under ``"error"``; in the qrels they always are. ``require_rows=False`` accepts an empty
    input (one bucket of a larger input may hold no rows). ``evaluation`` (default: the
    defaults) decides which labels gain too much and which queries have no positive gain.
    """
    evaluation = evaluation or Evaluation()
    names = _display_names(columns or Columns())
    run_schema = run.collect_schema()
    qrels_schema = qrels.collect_schema()
    _check_types(run, run_schema, run_name, {QUERY: "id", DOC: "id", SCORE: "number"}, names)
    _check_types(qrels, qrels_schema, qrels_name, {QUERY: "id", DOC: "id", LABEL: "number"}, names)
    fractional = None if allow_fractional_labels else fractional_label(qrels_schema[LABEL])

    # The checks of each input, and a small table per query for the warnings.
    run_stats, run_repeats, run_queries = _collect(
        run_name,
        [_stats(run, (QUERY, DOC, SCORE), finite=SCORE), _repeated_pair_hashes(run), _results_per_query(run)],
    )
    qrels_stats, qrels_repeats, qrels_queries, negative = _collect(
        qrels_name,
        [
            _stats(qrels, (QUERY, DOC, LABEL), finite=LABEL, fractional=fractional, gain=evaluation.gain),
            _repeated_pair_hashes(qrels),
            _relevant_per_query(qrels, evaluation),
            _negative_labels(qrels),
        ],
    )
    for frame, stats, name, value_column in (
        (run, run_stats, run_name, SCORE),
        (qrels, qrels_stats, qrels_name, LABEL),
    ):
        if require_rows and stats["rows"][0] == 0:
            raise InvalidInput(f"{name}: no rows to evaluate (the input is empty)")
        _raise_on_unparsed(frame, stats, name)
        for column in (QUERY, DOC, value_column):
            if stats[f"null_{column}"][0]:
                raise InvalidInput(
                    f"{name}: column {names[column]} has {stats[f'null_{column}'][0]} null value(s); "
                    f"first at {_example(frame, pl.col(column).is_null(), name)}"
                )
        if stats["not_finite"][0]:
            first = _first_value(frame, ~pl.col(value_column).is_finite(), value_column, name)
            raise InvalidInput(
                f"{name}: column {names[value_column]} has {stats['not_finite'][0]} NaN or infinite value(s), "
                f"such as {first}; first at {_example(frame, ~pl.col(value_column).is_finite(), name)}"
            )
    if qrels_stats["fractional"][0]:
        assert fractional is not None
        raise InvalidInput(
            f"{qrels_name}: column {names[LABEL]} has {qrels_stats['fractional'][0]} label(s) with a fractional "
            f"part, such as {_first_value(qrels, fractional, LABEL, qrels_name)}; "
            f"first at {_example(qrels, fractional, qrels_name)}. "
            "Labels must be integers; pass --allow-fractional-labels (allow_fractional_labels=True) to accept them"
        )
    if qrels_stats["over_gain"][0]:
        over = gain_overflows(pl.col(LABEL), evaluation.gain)
        raise InvalidInput(
            gain_overflow_message(
                qrels_name,
                names[LABEL],
                qrels_stats["over_gain"][0],
                _first_value(qrels, over, LABEL, qrels_name),
                _example(qrels, over, qrels_name),
                evaluation.gain,
            )
        )
    if run_duplicates == "error":
        _raise_on_duplicate(run, run_repeats, run_name, "run")
    _raise_on_duplicate(qrels, qrels_repeats, qrels_name, "qrels")

    casts = id_casts(run_schema, qrels_schema)
    run, qrels = align_ids(_drop_provenance(run), casts), align_ids(_drop_provenance(qrels), casts)
    # the warnings come from the small per-query tables, not from another read of the inputs
    in_run, in_qrels = align_ids(run_queries.lazy(), casts), align_ids(qrels_queries.lazy(), casts)
    only_in_run, only_in_qrels, without_relevant, crowded, run_query_ids, qrels_query_ids = pl.collect_all(
        [
            _summarized(in_run.join(in_qrels, on=QUERY, how="anti")),
            _summarized(in_qrels.join(in_run, on=QUERY, how="anti")),
            _summarized(in_qrels.filter(~pl.col("any_relevant"))),
            _summarized(
                in_run.filter(pl.col("results") > warn_results_over)
                if warn_results_over is not None
                else in_run.head(0)
            ),
            in_run.select(QUERY),
            in_qrels.select(QUERY),
        ]
    )
    warnings = [
        _warning(only_in_run, "queries_only_in_run", f"queries only in the run {run_name}, not evaluated"),
        _warning(
            only_in_qrels,
            "queries_only_in_qrels",
            f"queries only in the qrels {qrels_name}, skipped (or scored 0 with --all-queries)",
        ),
        _warning(
            without_relevant,
            "queries_without_relevant",
            f"queries without any relevant document (no judged document gains more than 0 under gain "
            f"{evaluation.gain}) in {qrels_name}; their IDCG is 0, so they {_EMPTY_IDEAL_FATE[evaluation.empty_ideal]}",
        ),
        _warning(negative, "negative_labels", f"judgments with a negative label in {qrels_name}, counted as unjudged"),
        _warning(
            crowded,
            "results_over_limit",
            f"queries with more than {warn_results_over} results in {run_name} "
            "(--max-results keeps the best N; --warn-results-over changes this limit)",
        ),
    ]
    return Checked(
        run=run,
        qrels=qrels,
        warnings=tuple(w for w in warnings if w is not None),
        run_queries=run_query_ids,
        qrels_queries=qrels_query_ids,
    )


# What happens to a query whose IDCG is 0, by Evaluation.empty_ideal, for the warning.
_EMPTY_IDEAL_FATE = {
    "zero": "score 0",
    "one": "score 1 (--empty-ideal one)",
    "nan": "score NaN (--empty-ideal nan)",
    "skip": "are left out of the summary (--empty-ideal skip)",
}


def fractional_label(dtype: pl.DataType) -> pl.Expr | None:
    """True on a label with a fractional part, for a label column of ``dtype``; None when the
    type cannot hold one (integers of any width, decimals of scale 0). Decimals are tested in
    their own arithmetic: a cast to Float64 would round ``12345678901234567.5`` to an integer."""
    if dtype.is_integer() or (isinstance(dtype, pl.Decimal) and not dtype.scale):
        return None
    label = pl.col(LABEL)
    if dtype.is_float():
        return label.is_finite() & (label != label.floor())
    return label != label.floor()


def gain_overflows(label: pl.Expr, gain: Gain) -> pl.Expr:
    """True on a label whose gain exceeds :data:`~pipeline.spec.MAX_GAIN`: above the gain's
    :attr:`~pipeline.spec.Gain.largest_label` and not a level the gain map names (a map's
    values are bounded when it is parsed). Negative labels gain 0 and never overflow."""
    value = label.cast(pl.Float64)
    levels = [level for level, _ in gain.levels]
    return (value > gain.largest_label) & ~value.is_in(levels) if levels else value > gain.largest_label


def gain_overflow_message(name: str, column: str, count: int, value: object, where: str, gain: Gain) -> str:
    """The error for labels beyond the largest gain (see :func:`gain_overflows`)."""
    return (
        f"{name}: column {column} has {count} label(s) whose gain under --gain {gain} ({gain.formula()}) exceeds "
        f"the largest gain {MAX_GAIN:g}, such as {value}; first at {where}. Sums of such gains overflow a double "
        f"(an infinite IDCG, a NaN NDCG); labels up to {gain.largest_label:g} are accepted under this gain: "
        "map larger levels to smaller gains (e.g. --gain 1024=1e6) or use --gain linear"
    )


def positive_gain(label: pl.Expr, evaluation: Evaluation) -> pl.Expr:
    """Whether a judgment gains more than 0 under the evaluation (its gain map, kind and
    relevance threshold): a query without one has IDCG 0 (``queries_without_relevant``)."""
    return gain_of(label, evaluation.gain, evaluation.relevance_threshold) > 0


def _raise_on_duplicate(frame: pl.LazyFrame, repeats: pl.DataFrame, name: str, what: str) -> None:
    """Refuse an input that lists one document twice for a query. ``repeats`` counted repeated
    hashes of the (query_id, doc_id) pairs: none proves there is no duplicate; some mean a
    duplicate or (rarely) a collision, which the exact check tells apart."""
    if not repeats["repeated_hashes"][0]:
        return
    duplicate = _collect(name, [_first_duplicate(frame)])[0]
    if duplicate.height:
        query, doc, count = duplicate.row(0)
        raise InvalidInput(
            f"{name}: document {doc!r} is listed {count} times for query {query!r}; "
            f"each (query_id, doc_id) may appear once in the {what}"
            + (" (or keep one row with --duplicates first or max-score)" if what == "run" else "")
        )


def _collect(name: str, frames: list[pl.LazyFrame]) -> list[pl.DataFrame]:
    """Collect one input's checks; a read failure here is the input's fault (exit 3)."""
    try:
        # without common-subplan elimination: sharing the scan cached the whole input in
        # memory first and measured slower than reading it once per check
        return pl.collect_all(frames, engine=COLLECT_ENGINE, optimizations=pl.QueryOptFlags(comm_subplan_elim=False))
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, OSError) as error:
        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise InvalidInput(f"{name}: cannot read: {message}") from None


def _display_names(columns: Columns) -> dict[str, str]:
    """How messages name each canonical column: the user's name, and the canonical one when
    they differ."""
    given = {QUERY: columns.query, DOC: columns.doc, SCORE: columns.score, LABEL: columns.label}
    return {
        canonical: repr(name) if name == canonical else f"{name!r} ({COLUMN_FLAGS[canonical]})"
        for canonical, name in given.items()
    }


def _check_types(
    frame: pl.LazyFrame, schema: pl.Schema, name: str, expected: dict[str, str], names: dict[str, str]
) -> None:
    for column, kind in expected.items():
        dtype = schema[column]
        if kind == "id" and not is_id_type(dtype):
            raise InvalidInput(f"{name}: column {names[column]} has type {dtype}; ids must be {ID_TYPES}")
        if kind == "number" and not dtype.is_numeric():
            problem = f"has type {dtype}; expected numbers"
            if dtype == pl.String:
                not_a_number = pl.col(column).is_not_null() & pl.col(column).cast(pl.Float64, strict=False).is_null()
                value = _collect(name, [frame.filter(not_a_number).select(column).head(1)])[0]
                found = f"text such as {value[column][0]!r}" if value.height else "numbers stored as text"
                where = f"; first at {_example(frame, not_a_number, name)}" if value.height else ""
                problem = f"holds {found} (type String); expected numbers{where}"
            raise InvalidInput(f"{name}: column {names[column]} {problem}")


def _stats(
    frame: pl.LazyFrame,
    columns: tuple[str, ...],
    *,
    finite: str,
    fractional: pl.Expr | None = None,
    gain: Gain | None = None,
) -> pl.LazyFrame:
    value = pl.col(finite).cast(pl.Float64)
    if LINE in frame.collect_schema().names():
        unparsed = (pl.col(LINE).is_not_null() & pl.any_horizontal(pl.col(c).is_null() for c in columns)).sum()
    else:
        unparsed = pl.lit(0)
    over_gain = (value.is_finite() & gain_overflows(value, gain)).sum() if gain is not None else pl.lit(0)
    return frame.select(
        pl.len().alias("rows"),
        *[pl.col(c).is_null().sum().alias(f"null_{c}") for c in columns],
        (value.is_not_null() & ~value.is_finite()).sum().alias("not_finite"),
        unparsed.alias("unparsed"),
        (fractional.sum() if fractional is not None else pl.lit(0)).alias("fractional"),
        over_gain.alias("over_gain"),
    )


def _repeated_pair_hashes(frame: pl.LazyFrame) -> pl.LazyFrame:
    """How many rows repeat the hash of an earlier row's (query_id, doc_id): 0 proves there is
    no duplicate pair. Sorting u64 hashes measured 3x cheaper than grouping the string pairs
    (10M rows: 0.4 s against 1.6 s)."""
    pair_hash = (pl.col(QUERY).hash(seed=1) ^ pl.col(DOC).hash(seed=2)).sort()
    return frame.select(pair_hash.alias("hash")).select(
        (pl.col("hash") == pl.col("hash").shift(1)).sum().alias("repeated_hashes")
    )


def _first_duplicate(frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.group_by(QUERY, DOC).agg(pl.len().alias("count")).filter(pl.col("count") > 1).sort(QUERY, DOC).head(1)


# Warnings: each is a one-row frame ``count, examples`` (examples: the first ids, sorted).


def _summarized(ids: pl.LazyFrame, column: str = QUERY) -> pl.LazyFrame:
    return ids.select(
        pl.len().alias("count"),
        pl.col(column).cast(pl.String).sort().head(WARNING_EXAMPLES).implode().alias("examples"),
    )


def _results_per_query(run: pl.LazyFrame) -> pl.LazyFrame:
    return run.group_by(QUERY).agg(pl.len().alias("results"))


def _relevant_per_query(qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.LazyFrame:
    return qrels.group_by(QUERY).agg(positive_gain(pl.col(LABEL), evaluation).any().alias("any_relevant"))


def _negative_labels(qrels: pl.LazyFrame) -> pl.LazyFrame:
    pairs = qrels.filter(pl.col(LABEL) < 0).select(
        pl.format("{}/{}", pl.col(QUERY).cast(pl.String), pl.col(DOC).cast(pl.String)).alias("pair")
    )
    return _summarized(pairs, "pair")


def _warning(summary: pl.DataFrame, code: str, message: str) -> ValidationWarning | None:
    count = int(summary["count"][0])
    if not count:
        return None
    return ValidationWarning(code=code, message=message, count=count, examples=tuple(summary["examples"][0]))


def _raise_on_unparsed(frame: pl.LazyFrame, stats: pl.DataFrame, name: str) -> None:
    if not stats["unparsed"][0]:
        return
    columns = [c for c in (QUERY, DOC, SCORE, LABEL) if c in frame.collect_schema().names()]
    bad = _collect(name, [frame.filter(pl.any_horizontal(pl.col(c).is_null() for c in columns)).head(1)])[0]
    expected = "qid Q0 docno rank score tag" if SCORE in columns else "qid iter docno rel"
    raise InvalidInput(
        f"{bad[FILE][0]}:{bad[LINE_NUMBER][0]}: cannot read line {bad[LINE][0]!r} "
        f"as '{expected}' ({stats['unparsed'][0]} such line(s) in {name})"
    )


def _first_value(frame: pl.LazyFrame, condition: pl.Expr, column: str, name: str) -> object:
    return _collect(name, [frame.filter(condition).select(column).head(1)])[0][column][0]


def _example(frame: pl.LazyFrame, condition: pl.Expr, name: str) -> str:
    """The first row where ``condition`` holds, as its file line or its values. Reading the
    input again may fail where the checks did not (a ragged CSV line beyond the rows used to
    infer the schema); that is still the input's fault."""
    row = _collect(name, [frame.filter(condition).head(1)])[0]
    if LINE_NUMBER in row.columns:
        return f"{row[FILE][0]}:{row[LINE_NUMBER][0]}: {row[LINE][0]!r}"
    shown = {c: row[c][0] for c in row.columns if c not in PROVENANCE}
    return f"row {shown}"


def _drop_provenance(frame: pl.LazyFrame) -> pl.LazyFrame:
    names = frame.collect_schema().names()
    return frame.drop([c for c in PROVENANCE if c in names])


def is_id_type(dtype: pl.DataType) -> bool:
    """Whether validation accepts ``dtype`` for an id column: text (String, Categorical) or an
    integer of any width, signed or not."""
    return dtype == pl.String or dtype == pl.Categorical or dtype.is_integer()


def id_casts(run_schema: pl.Schema, qrels_schema: pl.Schema) -> dict[str, pl.DataType]:
    """One id type per column for both inputs, from the schemas alone (the out-of-core split
    aligns the ids with it before hashing them into buckets, so that a query's rows of both
    inputs share a bucket), and without loss:

    - the same type on both sides is kept, except Categorical, which becomes String (a
      categorical's hash and order follow its dictionary, not its text);
    - integers of different widths become Int64 when both are signed or the unsigned one
      has fewer than 64 bits, UInt64 when both are unsigned, and text when a UInt64 meets a
      signed integer (a UInt64 above 2**63 fits no Int64);
    - anything else (an integer against text) becomes String.

    A column whose type validation refuses on either side is left alone for that check to
    name it.
    """
    casts: dict[str, pl.DataType] = {}
    for column in (QUERY, DOC):
        left, right = run_schema[column], qrels_schema[column]
        if not (is_id_type(left) and is_id_type(right)) or (left == right and left != pl.Categorical):
            continue
        casts[column] = _common_integer(left, right) if left.is_integer() and right.is_integer() else pl.String()
    return casts


def _common_integer(left: pl.DataType, right: pl.DataType) -> pl.DataType:
    if any(dtype in (pl.Int128(), pl.UInt128(), pl.UInt64()) for dtype in (left, right)):
        # only text holds both a UInt64 above 2**63 and a negative integer (128-bit ids are rare)
        both_unsigned = left.is_unsigned_integer() and right.is_unsigned_integer()
        return pl.UInt64() if both_unsigned and pl.UInt128() not in (left, right) else pl.String()
    return pl.UInt64() if left.is_unsigned_integer() and right.is_unsigned_integer() else pl.Int64()


def align_ids(frame: pl.LazyFrame, casts: dict[str, pl.DataType]) -> pl.LazyFrame:
    present = frame.collect_schema().names()
    cast = [pl.col(c).cast(t) for c, t in casts.items() if c in present]
    return frame.with_columns(cast) if cast else frame
