"""``--query-weights``: one weight per query, read from a side table, checked, and matched to the
evaluated queries for the summary's weighted means (:func:`pipeline.aggregate.summarize`).

One rule for every engine (the weights weigh the per-query table each engine computes, so the
rule and its words live here, once):

- the table is Parquet or CSV, its query column named by ``--query-col`` and its weight column by
  ``--weight-col``; a weight is a finite number >= 0 (null, NaN, infinite or negative is an
  error naming the first such row and how many there are), and a query has one row;
- every evaluated query needs a weight: one without a row is an error, unless
  ``--missing-query-weight W`` names the weight such a query takes (never 1 silently); rows of
  queries that were not evaluated are not read;
- the queries averaged together (all of them, or one group's under ``--group-by``) must not all
  weigh 0: their weighted mean would be 0/0.

Every error is :class:`~pipeline.errors.InvalidInput` (exit 3), except a bad option (exit 2).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

import polars as pl

from pipeline.errors import InvalidInput, UsageError
from pipeline.expressions import DOC_WEIGHT, gain, relevant
from pipeline.io.format import WHOLE_RANKING
from pipeline.io.names import SUBTOPIC
from pipeline.io.outputs import LIST_WEIGHTS as LIST_WEIGHTS_FILE
from pipeline.io.read import LABEL, QUERY, Columns, Source, is_id_type, scan_attributes
from pipeline.registry import PRIMARY_MEASURE, RELEVANCE_WEIGHTED_MEASURES, Evaluation, QueryWeights

WHAT = "query weights"


def _rows(numbers: pl.Series) -> str:
    """Row numbers (counting from 1, the header of a CSV file not counted) as a short text."""
    shown = ", ".join(str(n) for n in numbers.head(3).to_list())
    return shown + (f" and {numbers.len() - 3} more" if numbers.len() > 3 else "")


# A weight above 0 too small for Float64 to keep its digits: the weighted means would lose theirs
# (weights of 5e-324 gave a mean of 1.0 for 0.8155); one factor for every weight changes no mean
SUBNORMAL_WEIGHT = f"a subnormal weight (above 0, below {sys.float_info.min}: few digits kept; scale every weight up)"


def read_query_weights(weights: QueryWeights, columns: Columns | None = None) -> pl.DataFrame:
    """``query_id, weight``, one row per query, from ``weights.path``, every rule of the
    module's checked: a weight that is not a finite number >= 0, a query without an id or given
    twice are errors naming the file, the column, the first row and the count."""
    if weights.path is None:
        raise ValueError("no --query-weights given")
    path, column = weights.path, weights.column
    query_column = (columns or Columns()).query
    frame = scan_attributes(Source.of(path, None, Columns(query=query_column)), WHAT)
    found = frame.collect_schema()
    if column not in found.names():
        raise InvalidInput(
            f"{path}: no weight column {column!r}; columns found: {', '.join(map(repr, found.names()))}; "
            "name it with --weight-col"
        )
    if column == query_column:
        raise InvalidInput(f"{path}: --weight-col and --query-col both name {column!r}; name the weight column")
    if not found[column].is_numeric():
        raise InvalidInput(
            f"{path}: weight column {column!r} holds {found[column]} values; expected numbers (a weight is a "
            "finite number >= 0)"
        )
    table = (
        frame.select(pl.col(QUERY), pl.col(column).cast(pl.Float64).alias("weight"))
        .with_row_index("row", offset=1)
        .collect()
    )
    if not is_id_type(table.schema[QUERY]):
        raise InvalidInput(f"{path}: query ids of type {table.schema[QUERY]}; expected text or integers")
    weight = pl.col("weight")
    for problem, bad in (
        (f"a null query id (column {query_column!r})", pl.col(QUERY).is_null()),
        ("a null weight", weight.is_null()),
        ("a NaN weight", weight.is_nan()),
        ("an infinite weight", weight.is_infinite()),
        ("a negative weight", weight < 0),
        (SUBNORMAL_WEIGHT, (weight > 0) & (weight < sys.float_info.min)),
    ):
        rows = table.filter(bad)
        if rows.height:
            first = rows.row(0, named=True)
            raise InvalidInput(
                f"{path}: {rows.height} row(s) with {problem} in column {column!r}, first row {first['row']} "
                f"(query {first[QUERY]!r}, weight {first['weight']}); a weight is a finite number >= 0, one per "
                "query: fix or remove those rows"
            )
    repeated = table.filter(pl.len().over(QUERY) > 1)
    if repeated.height:
        query = repeated[QUERY][0]
        rows_of_query = repeated.filter(pl.col(QUERY) == query)
        raise InvalidInput(
            f"{path}: {repeated[QUERY].n_unique()} query(ies) weighted more than once, first {query!r} in rows "
            f"{_rows(rows_of_query['row'])} (weights {', '.join(map(str, rows_of_query['weight'].head(3)))}); "
            "give each query one row"
        )
    return table.select(QUERY, "weight")


def evaluated_weights(per_query: pl.DataFrame, table: pl.DataFrame, weights: QueryWeights) -> pl.DataFrame:
    """``query_id, weight`` of each evaluated query of ``per_query``, under its own id type (ids
    of two types, integers in one and text in the other, are matched as text, as run and qrels
    are): an evaluated query without a row is an error unless ``weights.missing`` gives its weight."""
    path = weights.path
    ours, theirs = per_query.schema[QUERY], table.schema[QUERY]
    as_text = ours != theirs or pl.Categorical in (ours, theirs)
    key = (pl.col(QUERY).cast(pl.String) if as_text else pl.col(QUERY)).alias("_weight_key")
    evaluated = per_query.select(QUERY).unique(maintain_order=True).with_columns(key)
    matched = evaluated.join(table.select(key, "weight"), on="_weight_key", how="left").drop("_weight_key")
    missing = matched.filter(pl.col("weight").is_null())[QUERY].cast(pl.String).sort()
    if missing.len() and weights.missing is None:
        shown = ", ".join(map(repr, missing.head(5).to_list()))
        none = " (none of them has one: are they the same ids?)" if missing.len() == evaluated.height else ""
        raise InvalidInput(
            f"{path}: {missing.len()} of the {evaluated.height} evaluated queries have no weight{none}, e.g. "
            f"{shown}; add a row for each, or give --missing-query-weight W to weigh each such query W"
        )
    if missing.len():
        return matched.with_columns(pl.col("weight").fill_null(weights.missing))
    return matched


def check_weight_totals(
    per_query: pl.DataFrame, weights: pl.DataFrame, path: str, group_by: Sequence[str] = ()
) -> None:
    """The queries averaged together (all of them; with ``group_by``, each group's too) must not
    all weigh 0 (their weighted mean would be 0/0), nor more than Float64 holds (inf/inf). A query
    left out of the means (a null ndcg, ``--empty-ideal skip``) weighs nothing here either."""
    counted = per_query.filter(pl.col(PRIMARY_MEASURE).is_not_null()).select(QUERY, *group_by).unique()
    weighed = counted.join(weights, on=QUERY, how="left")
    for by in ([], list(group_by)) if group_by else ([],):
        totals = (
            weighed.group_by(by).agg(pl.col("weight").sum(), pl.len().alias("queries"))
            if by
            else weighed.select(pl.col("weight").sum(), pl.len().alias("queries"))
        )
        overflown = totals.filter(pl.col("weight").is_infinite())
        if overflown.height:
            first = overflown.sort(by, nulls_last=False).row(0, named=True) if by else overflown.row(0, named=True)
            where = " of group " + ", ".join(f"{g}={first[g]!r}" for g in by) if by else ""
            raise InvalidInput(_overflown_message(path, f"the {first['queries']} evaluated queries{where}"))
        zero = totals.filter((pl.col("weight") == 0) & (pl.col("queries") > 0))
        if zero.height:
            first = zero.sort(by, nulls_last=False).row(0, named=True) if by else zero.row(0, named=True)
            where = (
                " of group " + ", ".join(f"{g}={first[g]!r}" for g in by) + f" ({zero.height} such group(s))"
                if by
                else ""
            )
            raise InvalidInput(
                f"{path}: all {first['queries']} evaluated queries{where} weigh 0, so their weighted mean is 0/0; "
                "give one of them a weight above 0"
            )


def _overflown_message(path: str, queries: str) -> str:
    return (
        f"{path}: {queries} weigh more together than Float64 holds (their sum overflows), so their weighted "
        "mean is inf/inf; scale every weight down (one factor for every weight changes no mean)"
    )


def refuse_weightless_segments(table: pl.DataFrame, scope: list[str], path: str) -> None:
    """``ndcg compare``'s segments (a cutoff, a group: the columns ``scope`` of ``table``, with its
    ``queries`` and ``sum_of_weights``): paired queries that all weigh 0 have no weighted mean
    (0/0), nor have those that weigh more together than Float64 holds (inf/inf): refused, naming
    the segment, as :func:`check_weight_totals` refuses such a group of ``ndcg evaluate``."""

    def segment(first: dict) -> str:
        cutoff = WHOLE_RANKING if first["k"] is None else first["k"]  # as compare.cutoff_label shows it
        return ", ".join(f"k={cutoff}" if column == "k" else f"{column}={first[column]!r}" for column in scope)

    overflown = table.filter(pl.col("sum_of_weights").is_infinite())
    if overflown.height:
        first = overflown.row(0, named=True)
        raise InvalidInput(_overflown_message(path, f"the {first['queries']} paired queries at {segment(first)}"))
    weightless = table.filter((pl.col("queries") > 0) & (pl.col("sum_of_weights") == 0))
    if weightless.height:
        first = weightless.row(0, named=True)
        raise InvalidInput(
            f"{path}: all {first['queries']} paired queries at {segment(first)} weigh 0 ({weightless.height} such "
            "row(s)), so their weighted mean is 0/0; give one of them a weight above 0"
        )


def weigh(
    per_query: pl.DataFrame,
    weights: QueryWeights,
    columns: Columns | None = None,
    group_by: Sequence[str] = (),
    *,
    table: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The evaluated queries' weights (:func:`evaluated_weights`) from ``table`` (the weights
    :func:`read_query_weights` read, read here when None), their totals checked
    (:func:`check_weight_totals`)."""
    table = read_query_weights(weights, columns) if table is None else table
    evaluated = evaluated_weights(per_query, table, weights)
    check_weight_totals(per_query, evaluated, str(weights.path), group_by)
    return evaluated


def check_weights_cover(run: pl.LazyFrame, qrels: pl.LazyFrame, weights: QueryWeights, columns: Columns | None) -> None:
    """What ``ndcg validate`` can check of ``--query-weights`` before any evaluation: the table's
    own rules (:func:`read_query_weights`), and a weight for every query with both results and
    judgments, which every evaluation evaluates (conventions such as ``--all-queries`` evaluate
    more: those are checked when evaluated)."""
    table = read_query_weights(weights, columns)
    as_text = pl.col(QUERY).cast(pl.String)
    judged = qrels.select(as_text.alias("_judged")).unique()
    evaluated = (
        run.select(QUERY).unique().join(judged, left_on=as_text, right_on="_judged", how="semi").sort(as_text).collect()
    )
    evaluated_weights(evaluated, table, weights)


DOCUMENT_WEIGHT_PROBLEMS = (
    ("a null weight", lambda weight: weight.is_null()),
    ("a NaN weight", lambda weight: weight.is_nan()),
    ("an infinite weight", lambda weight: weight.is_infinite()),
    ("a negative weight", lambda weight: weight < 0),
)


# How each front names the option, and how it says to set it: the command line and the API
# (its flag), sql/ndcg.sql (its variable), the table macros (their parameter); the words around
# them are one (pipeline/sql_weight_refusals.py)
WEIGHT_OPTION = {"cli": "--doc-weight-col", "script": "doc_weight_col", "macro": "doc_weight_col"}
WEIGHT_FIX = {"cli": "--doc-weight-col", "script": "SET VARIABLE doc_weight_col", "macro": "doc_weight_col := '...'"}
# the run's columns the weights cannot be, beside those the user named the ids and the score by:
# the input order, which the engines keep there
ALWAYS_READ_AS_ANOTHER = ("arrival",)


def read_as_another_message(run_name: str, column: str, front: str = "cli") -> str:
    return f"{run_name}: {WEIGHT_OPTION[front]} names {column!r}, a column read as another; name the weight column"


def missing_weight_column_message(run_name: str, column: str, names: Sequence[str], front: str = "cli") -> str:
    return (
        f"{run_name}: no weight column {column!r}; columns found: {', '.join(map(repr, names))}; "
        f"name it with {WEIGHT_FIX[front]}"
    )


def trec_weights_message(run_name: str, role: str = "run") -> str:
    return f"{run_name}: a TREC {role} has no weight column; give the weights in a Parquet or CSV {role}"


def inline_qrels_weights_message(run_name: str) -> str:
    return (
        f"{run_name}: doc_weights_in qrels reads the weights from the qrels, and the labels are the run's own "
        "(no qrels given): weigh by the run's column (leave doc_weights_in out), or give the qrels"
    )


def disagreeing_weights_message(qrels_name: str, column: str, count: int, first: Mapping[str, object]) -> str:
    return (
        f"{qrels_name}: {count} judged document(s) with differing weights in column {column!r}, first: query "
        f"{first['query']!r}, document {first['doc']!r}, weights {first['low']} and {first['high']}; a document "
        "weighs one weight, the same in every row that judges it (one per subtopic): make them agree"
    )


# how each front says to weigh the results the qrels do not judge
UNJUDGED_WEIGHT_FIX = {
    "cli": "--unjudged-weight W",
    "script": "SET VARIABLE unjudged_weight = W",
    "macro": "unjudged_weight := W",
}


def unweighted_results_message(
    run_name: str, qrels_name: str, column: str, count: int, first: Mapping[str, object], front: str = "cli"
) -> str:
    return (
        f"{run_name}: {count} result(s) that {qrels_name} does not judge, so without a weight in its column "
        f"{column!r} (doc_weights_in qrels), first: query {first['query']!r}, document {first['doc']!r}; judge "
        f"them there, or weigh each such result with {UNJUDGED_WEIGHT_FIX[front]} (0: they leave the lists)"
    )


def weight_type_message(run_name: str, column: str, shown_type: str) -> str:
    return (
        f"{run_name}: weight column {column!r} holds {shown_type} values; expected numbers (a weight is a "
        "finite number >= 0)"
    )


def read_as_another(names: Columns, role: str = "run") -> tuple[str, ...]:
    """The columns of the run (or of the qrels, ``role``) a weight column cannot be: the ids and
    the score (the label, and the subtopic) by the names the user gave them, and by the names
    they are read under (a file's column so named is not read when another one is), and the input
    order's name (the engines keep theirs there)."""
    value, canonical = (names.score, "score") if role == "run" else (names.label, LABEL)
    extra = ALWAYS_READ_AS_ANOTHER if role == "run" else (SUBTOPIC, *ALWAYS_READ_AS_ANOTHER)
    return tuple(dict.fromkeys((names.query, names.doc, value, QUERY, "doc_id", canonical, *extra)))


def weight_column_problem(
    run_name: str,
    column: str,
    names: Sequence[str],
    shown_type: str | None,
    read_as_another: Sequence[str] = (QUERY, "doc_id", "score", *ALWAYS_READ_AS_ANOTHER),
) -> str | None:
    """What is wrong with the weight ``column`` itself, in every engine's words: one read as
    another (``read_as_another``, :func:`read_as_another`), not among the input's column
    ``names``, or of a type (``shown_type``, Polars' name; None when numeric) that holds no
    numbers. None: nothing."""
    if column in read_as_another:
        return read_as_another_message(run_name, column)
    if column not in names:
        return missing_weight_column_message(run_name, column, names)
    if shown_type is not None:
        return weight_type_message(run_name, column, shown_type)
    return None


def bad_weights_message(
    run_name: str, column: str, problem: str, count: int, first: Mapping[str, object], role: str = "run"
) -> str:
    """The words of every engine for ``count`` rows of ``problem`` (one of
    :data:`DOCUMENT_WEIGHT_PROBLEMS`), ``first`` the first such row read (its ``query``, ``doc``
    and ``weight``): Spark reads rows in no order of the file, so no engine numbers it."""
    each = "result" if role == "run" else "judged document"
    return (
        f"{run_name}: {count} row(s) with {problem} in column {column!r}, first: query {first['query']!r}, "
        f"document {first['doc']!r}, weight {first['weight']}; a weight is a finite number >= 0, one per {each}: "
        "fix or remove those rows"
    )


def document_weights(
    run: pl.LazyFrame,
    column: str,
    run_name: str,
    names: Columns | None = None,
    arrival: str = "arrival",
    role: str = "run",
) -> pl.LazyFrame:
    """The run with its weight ``column`` as ``doc_weight`` (Float64), every weight checked as
    :func:`read_query_weights` checks a query's: a weight that is not a finite number >= 0 is an
    error naming the file, the column, the first such row (in input order: its query, document
    and weight) and how many rows are wrong (:func:`bad_weights_message`). ``names`` are the
    user's names of the run's columns (``--score-col sim``), which ``run`` holds under ours: the
    ids and the score are refused by the names given them, the columns found listed by the file's
    names; the inline labels' column, and ``rank``, weigh and stay read as they were. ``role``
    "qrels": the judgments' weights (``doc_weights_in`` qrels), checked alike, the label read as
    another where the run's score is."""
    names = names or Columns()
    found = run.collect_schema()
    as_in_file = {QUERY: names.query, "doc_id": names.doc, LABEL: names.label}
    as_in_file |= {"score": names.score} if role == "run" else {}
    given = [as_in_file.get(name, name) for name in found.names() if name != arrival]  # arrival is ours
    held = LABEL if column == names.label and LABEL in found.names() and role == "run" else column
    dtype = found.get(held)
    shown = None if dtype is None or dtype.is_numeric() else str(dtype)
    problem = weight_column_problem(run_name, column, given, shown, read_as_another(names, role))
    if problem:
        raise InvalidInput(problem)
    weighted = run.with_columns(pl.col(held).cast(pl.Float64).alias(DOC_WEIGHT))
    weight = pl.col(DOC_WEIGHT)
    bad = weighted.select(
        *[
            pl.struct(
                count=problem(weight).sum(),
                query=pl.col(QUERY).filter(problem(weight)).first().cast(pl.String),
                doc=pl.col("doc_id").filter(problem(weight)).first().cast(pl.String),
                weight=weight.filter(problem(weight)).first(),
            ).alias(str(i))
            for i, (_, problem) in enumerate(DOCUMENT_WEIGHT_PROBLEMS)
        ]
    ).collect()
    for i, (problem, _) in enumerate(DOCUMENT_WEIGHT_PROBLEMS):
        first = bad[str(i)][0]
        if first["count"]:
            raise InvalidInput(bad_weights_message(run_name, column, problem, first["count"], first, role))
    # the column stays: read as another too (the inline labels, the input ranks), it is read as that
    return weighted


def judged_weights(
    run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation, run_name: str, qrels_name: str
) -> tuple[pl.LazyFrame, pl.LazyFrame]:
    """``doc_weights_in`` qrels: each result of the run weighs its judgment's weight (the qrels'
    ``doc_weight``, checked as read by :func:`document_weights`), a result the qrels do not judge
    ``unjudged_weight``; the run with that ``doc_weight``, the qrels without it. Ids aligned
    (validation's). Refused: a document whose rows (one per subtopic) give it differing weights,
    and, without ``unjudged_weight``, a result the qrels do not judge (how many, and the first by
    its ids as text: Spark reads rows in no order of the file, and SQL orders ids of either type)."""
    column = str(evaluation.doc_weight_col)
    weight = pl.col(DOC_WEIGHT)
    judged = qrels.group_by(QUERY, "doc_id").agg(weight.min().alias("low"), weight.max().alias("high"))
    differing = judged.filter(pl.col("low") != pl.col("high"))
    weighted = run.drop(DOC_WEIGHT, strict=False).join(
        judged.select(QUERY, "doc_id", pl.col("low").alias(DOC_WEIGHT)), on=[QUERY, "doc_id"], how="left"
    )
    unweighted = weighted.filter(weight.is_null())
    # the first by its ids as text, as the SQL fronts order them
    as_text = [pl.col(QUERY).cast(pl.String), pl.col("doc_id").cast(pl.String)]
    disagreeing, unjudged = pl.collect_all(
        [
            differing.with_columns(as_text)
            .sort(QUERY, "doc_id")
            .select(pl.len().alias("count"), *(pl.col(name).first() for name in (QUERY, "doc_id", "low", "high"))),
            unweighted.select(as_text)
            .sort(QUERY, "doc_id")
            .select(pl.len().alias("count"), pl.col(QUERY, "doc_id").first())
            if evaluation.unjudged_weight is None
            else pl.LazyFrame({"count": [0]}),
        ]
    )
    if disagreeing["count"][0]:
        (row,) = disagreeing.rows(named=True)
        first = {"query": str(row[QUERY]), "doc": str(row["doc_id"]), "low": row["low"], "high": row["high"]}
        raise InvalidInput(disagreeing_weights_message(qrels_name, column, row["count"], first))
    if unjudged["count"][0]:
        (row,) = unjudged.rows(named=True)
        first = {"query": str(row[QUERY]), "doc": str(row["doc_id"])}
        raise InvalidInput(unweighted_results_message(run_name, qrels_name, column, row["count"], first))
    if evaluation.unjudged_weight is not None:
        weighted = weighted.with_columns(weight.fill_null(evaluation.unjudged_weight))
    # the run's columns in their order, the weight last (the other engines' order)
    return weighted, qrels.drop(DOC_WEIGHT)


def list_weight_sums(run: pl.LazyFrame, qrels: pl.LazyFrame, evaluation: Evaluation) -> pl.DataFrame:
    """``query_id, results, weighted_gain, gain, weighted_relevant, relevant``: over each query's
    list (its results weighing above 0, as TF-Ranking masks the others), how many they are and the
    sums that TF-Ranking's ``_per_example_weights_to_per_list_weights`` reads: of weight x gain and
    of gain for NDCG, of weight x relevant and of relevant (0 or 1) for P."""
    labels = qrels.group_by(QUERY, "doc_id").agg(pl.col("relevance").max())  # judged per subtopic: the largest
    gained = gain(pl.col("relevance"), evaluation.gain, evaluation.relevance_threshold).fill_null(0.0)
    relevance = relevant(pl.col("relevance"), evaluation.relevance_threshold).fill_null(False).cast(pl.Float64)
    # the run's own columns but the ids and weights left out: one named "relevance" (the weights'
    # own, --doc-weight-col relevance) took the place of the labels in the join
    listed = run.select(QUERY, "doc_id", DOC_WEIGHT).filter(pl.col(DOC_WEIGHT) > 0)
    listed = listed.join(labels, on=[QUERY, "doc_id"], how="left")

    def summed(value: pl.Expr) -> pl.Expr:
        # in doc_id order, whatever order the rows came in: the same bits on every run (a running
        # sum, as pipeline.aggregate sums: before sum() the optimizer may drop the sort)
        return value.sort_by("doc_id").cum_sum().last()

    return (
        listed.group_by(QUERY)
        .agg(
            pl.len().alias("results"),
            summed(pl.col(DOC_WEIGHT) * gained).alias("weighted_gain"),
            summed(gained).alias("gain"),
            summed(pl.col(DOC_WEIGHT) * relevance).alias("weighted_relevant"),
            summed(relevance).alias("relevant"),
        )
        .collect()
    )


BOTH_WEIGHTS = (
    "--query-weights and --doc-weight-col both weigh the means (the second by TF-Ranking's list weights): "
    "give one of them"
)


def list_weights(per_query: pl.DataFrame, sums: pl.DataFrame) -> pl.DataFrame:
    """``query_id, weight, weight_P, weight_map, weight_recip_rank, weight_success,
    weight_average_precision_score``: TF-Ranking's list weights of each evaluated query of
    ``per_query`` (NDCG's, whose relevance is the gain; P's, AP's, MRR's and Hits', whose relevance
    is 0 or 1; 1 for scikit-learn's AP, which weighs no list), from its
    :func:`list_weight_sums`, the evaluated queries taken as one batch: sum(w x rel) / sum(rel)
    for a list with relevance; for a list without, the mean of those weights over the lists with
    relevance (1 when none has any); 0 for a query none of whose results weighs above 0."""
    evaluated = per_query.select(QUERY).unique(maintain_order=True)
    sums = evaluated.join(sums, on=QUERY, how="left").with_columns(pl.exclude(QUERY).fill_null(0))

    def weight(weighted: str, relevance: str) -> pl.Expr:
        own = pl.col(weighted) / pl.col(relevance)
        with_relevance = sums.filter(pl.col(relevance) > 0)
        average = with_relevance.select(own.sum()).item() / with_relevance.height if with_relevance.height else 1.0
        chosen = pl.when(pl.col("results") == 0).then(0.0).when(pl.col(relevance) > 0).then(own).otherwise(average)
        return chosen.cast(pl.Float64)

    return sums.select(
        QUERY,
        weight("weighted_gain", "gain").alias("weight"),
        *(weight("weighted_relevant", "relevant").alias(f"weight_{name}") for name in RELEVANCE_WEIGHTED_MEASURES),
        # scikit-learn's AP is of one list, with no list weight: a plain mean of the lists
        pl.when(pl.col("results") == 0).then(0.0).otherwise(1.0).alias("weight_average_precision_score"),
    )


def check_weighted_values_representable(
    per_query: pl.DataFrame, weights: pl.DataFrame, column: str, run_name: str
) -> None:
    """Weights whose products with the gains leave Float64's normal numbers are refused, naming
    the first query and value: so large that weight x gain, or a sum of them, overflows (NDCG
    inf / inf: a NaN mean, exit 0), or so small that the ideal DCG or a list weight is subnormal,
    where Float64 keeps few digits (weights of 5e-324 gave an NDCG of 0.667 for 0.860; a DCG
    below a normal ideal is a tiny NDCG, whatever its digits). Checked on every engine's values,
    after the evaluation: the weights alone cannot say it, the gains can."""
    sums = [name for name in ("cg", "dcg", "idcg") if name in per_query.columns]
    listed = [name for name in weights.columns if name != QUERY]
    ideal = [name for name in sums if name == "idcg"]
    checks = ((True, per_query, sums), (True, weights, listed), (False, per_query, ideal), (False, weights, listed))
    for large, table, names in checks:
        found = (
            table.filter(pl.any_horizontal(_unrepresentable(pl.col(name), large) for name in names)) if names else None
        )
        if found is None or not found.height:
            continue
        first = found.sort(QUERY).head(1)
        name = next(name for name in names if first.select(_unrepresentable(pl.col(name), large)).item())
        effect = (
            "too large: weight x gain overflows Float64"
            if large
            else "too small: weight x gain is a subnormal number, which keeps few digits"
        )
        raise InvalidInput(
            f"{run_name}: the weights of column {column!r} are {effect} in query {first[QUERY][0]!r} ({name} "
            f"{first[name][0]}); scale them {'down' if large else 'up'} (one factor for every weight changes no "
            "value: NDCG, P and AP are ratios, and the list weights weigh the means relative to each other)"
        )


def _unrepresentable(value: pl.Expr, large: bool) -> pl.Expr:
    """Overflowed (``large``), or a subnormal number above 0."""
    return value.is_infinite() if large else (value > 0) & (value < sys.float_info.min)


def list_weights_source(run_name: str, evaluation: Evaluation) -> str:
    """Where the list weights come from, as an error about their totals names it."""
    read = ", read from the qrels" if evaluation.doc_weights_in == "qrels" else ""
    return f"{run_name} (the list weights of --doc-weight-col {evaluation.doc_weight_col!r}{read})"


def list_weight_column(weights: pl.DataFrame, measure: str) -> str:
    """The column of :func:`list_weights` that weighs ``measure`` (as pipeline.aggregate picks it)."""
    own = f"weight_{measure}"
    return own if own in weights.columns else "weight"


def shared_list_weights(
    per_run: Mapping[str, pl.DataFrame],
    measure: str,
    column: str,
    partition_by: Sequence[str] = (),
    *,
    outputs: bool = False,
) -> pl.DataFrame:
    """``query_id, weight`` (after the ``partition_by`` columns, each partition's queries weighed
    apart): each query's list weight for ``measure``, which every run that
    evaluated the query must give alike (within 1e-12, relatively): a paired comparison weighs a
    query once, for both sides. Runs that list the same documents with the same weights do (the
    list weight reads the list, not its order); otherwise refused (exit 2), naming the first
    query that differs, since weighing one side by the other's weights would compare weighted
    means that are not either run's own."""
    # ids of other types in other runs are paired as text (pipeline.compare.pair), and so weighed
    as_text = len({table.schema[QUERY] for table in per_run.values()}) > 1
    query = pl.col(QUERY).cast(pl.String) if as_text else pl.col(QUERY)
    rows = [
        table.select(
            *partition_by, query, pl.col(list_weight_column(table, measure)).alias("weight"), pl.lit(name).alias("run")
        )
        for name, table in per_run.items()
    ]
    spread = (
        pl.concat(rows, how="vertical_relaxed")
        .group_by(*partition_by, QUERY, maintain_order=True)
        .agg(
            pl.col("weight").first(),
            pl.col("weight").min().alias("low"),
            pl.col("weight").max().alias("high"),
            pl.col("run").sort_by("weight").first().alias("low_run"),
            pl.col("run").sort_by("weight").last().alias("high_run"),
        )
    )
    differing = spread.filter(pl.col("high") - pl.col("low") > 1e-12 * pl.col("high").abs())
    if differing.height:
        first = differing.sort(*partition_by, QUERY).row(0, named=True)
        low_run, high_run = first["low_run"], first["high_run"]
        where = "".join(f", {key}={first[key]}" for key in partition_by)
        whose = (
            f"the outputs' list weights (their {LIST_WEIGHTS_FILE}, of --doc-weight-col {column!r})"
            if outputs
            else f"the runs' list weights of --doc-weight-col {column!r}"
        )
        remedy = (
            "compare the weighted summaries ndcg evaluate printed, or evaluate the runs without --doc-weight-col"
            if outputs
            else "compare the weighted summaries ndcg evaluate prints, or compare without --doc-weight-col"
        )
        raise UsageError(
            f"{whose} differ for {measure} in {differing.height} query(ies), first {first[QUERY]!r}{where}: "
            f"{first['low']!r} in {low_run}, {first['high']!r} in {high_run}; a paired comparison weighs each query "
            "once, for both sides, so each must give a query the same list weight: the same documents with the same "
            "weights (in any order, not scaled) and, for a query without relevance, which weighs the mean of its "
            f"run's lists with relevance, the same queries evaluated; {remedy}"
        )
    return spread.select(*partition_by, QUERY, "weight")


def check_list_weights_cover(
    tables: Mapping[str, pl.DataFrame], per_run: Mapping[str, pl.DataFrame], partition_by: Sequence[str] = ()
) -> None:
    """Each system's list weights weigh every query of its per-query table (a file written beside
    an output, then edited, may not): exit 3 naming the system and the first query without one."""
    keys = [*partition_by, QUERY]
    for name, table in tables.items():
        as_text = [pl.col(key).cast(pl.String) for key in keys]
        missing = (
            table.select(as_text).unique().join(per_run[name].select(as_text).unique(), on=keys, how="anti").sort(keys)
        )
        if missing.height:
            first = ", ".join(f"{key}={missing[key][0]}" for key in partition_by)
            raise InvalidInput(
                f"{name}: its list weights (--doc-weight-col) lack {missing.height} of its evaluated queries, "
                f"first {missing[QUERY][0]!r}{' (' + first + ')' if first else ''}: every query of its per-query "
                "table needs one; evaluate it again with --out"
            )
