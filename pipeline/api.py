"""The library's front: arguments (paths or frames, options) -> one unit of work on an engine.

>>> import polars as pl
>>> from pipeline import per_query
>>> run = pl.LazyFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "score": [2.0, 1.0]})
>>> qrels = pl.LazyFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [0, 1]})
>>> per_query(run, qrels, k=[1]).collect()["ndcg"].round(4).to_list()
[0.6309, 0.0]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, is_dataclass, replace
from pathlib import Path
from typing import Any, Literal

import polars as pl

from pipeline.api_keywords import function_keywords, unknown_keywords, with_keywords
from pipeline.engines import ENGINES, Engine, Execution, engine_named
from pipeline.errors import UsageError
from pipeline.inputs import Inputs, as_polars, frame_input, load
from pipeline.io import hadoop
from pipeline.io.read import Columns, Source, table_source
from pipeline.registry import (
    CONVENTION,
    CONVENTIONS,
    LABEL_BOUND_CONVENTIONS,
    OPTION,
    Convention,
    Evaluation,
    InputChecks,
    Profile,
    QueryWeights,
    SpecError,
    measure_conventions,
    options_for,
    parse_cutoffs,
    profile_named,
)
from pipeline.registry.evaluation import DOCUMENT_WEIGHT_SETS
from pipeline.registry.parameters import same_setting, setting_text
from pipeline.units import Result, evaluate_inputs, option_values
from pipeline.validate import ValidationWarning
from pipeline.weights import check_weights_cover

__all__ = ["Result", "check", "evaluate", "make_evaluation", "per_query"]

# A path, or a table: Polars frames, pyarrow tables, pandas frames, DuckDB relations and
# anything else that exports an Arrow C stream.
Input = str | Path | Source | pl.LazyFrame | pl.DataFrame | Any
# a Delta table's version: a number, or an ISO time (the version current then)
Version = int | str | None
EngineName = Literal["polars", "duckdb", "spark"]


def make_evaluation(
    *, k: Iterable[int] | int | str | None = None, profile: str | None = None, **options: Any
) -> Evaluation:
    """An :class:`Evaluation` from plain values, as the CLI and the keyword API give them.

    ``k`` left out (None) evaluates the cutoffs the measures name (``measures="nDCG@10,P@5"``:
    5 and 10), else the default ones; given, the cutoffs the measures name are added to it.

    ``options`` are the conventions of :data:`pipeline.registry.CONVENTIONS` by name (``gain``,
    ``discount``, ``log_base``, ``ties``, ``ideal``, ...); each means what its flag means.
    ``profile`` names a bundle of conventions (:data:`pipeline.registry.PROFILES`); every option
    left out or None keeps the profile's choice, or the default without a profile.

    >>> make_evaluation(k=[3], profile="lightgbm", empty_ideal="zero").describe()["empty_ideal"]
    'zero'
    >>> str(make_evaluation(discount="jk", log_base=3).discount)
    'jk(base=3)'
    """
    unknown = sorted(set(options) - set(CONVENTION))
    if unknown:
        raise UsageError(
            f"unknown option(s) {unknown_keywords(unknown, _EVALUATION_OPTIONS)}; "
            f"options are {', '.join(_EVALUATION_OPTIONS)}"
        )
    try:
        chosen = profile_named(profile) if profile is not None else Profile("default", "defaults", ())
        settings = dict(chosen.settings)
        for convention in CONVENTIONS:  # in the registry's order: a field before its parts
            value = options.get(convention.name)
            if value is not None:
                _set(settings, convention, value)
        _take_measure_parameters(settings, options)
        _refuse_what_doc_weights_set(options)
        return chosen.evaluation(cutoffs=() if k is None else _cutoffs(k), **settings)
    except SpecError as error:
        raise UsageError(str(error)) from None


def _take_measure_parameters(settings: dict[str, object], options: dict[str, Any]) -> None:
    """The conventions ir_measures' parameters of the measures ask for (``P(rel=2)@5``:
    relevance_threshold 2) into the settings: over a profile's choice, as an option is; an
    option given that says otherwise is refused, naming both."""
    measures = settings.get("measures")
    for name, (value, asker) in measure_conventions(measures).items():  # type: ignore[arg-type]
        convention = CONVENTION[name]
        given = options.get(name)
        if given is not None:
            read = convention.from_text(given) if isinstance(given, str) and convention.from_text else given
            if not same_setting(name, read, value):
                raise SpecError(
                    f"{convention.flag} {setting_text(name, read)} contradicts {asker}, which asks for {name} "
                    f"{setting_text(name, value)}; a convention holds for the whole evaluation, so leave "
                    f"{convention.flag} out (the parameter sets it), or evaluate {asker} in a command of its own"
                )
        _set(settings, convention, value)


def _refuse_what_doc_weights_set(options: dict[str, Any]) -> None:
    """``doc_weight_col`` sets the ideal and P's denominator that TF-Ranking's weights are defined
    over where they are left to their default (:class:`Evaluation`); an option given as anything
    else is refused, naming both, never overridden."""
    if options.get("doc_weight_col") is None:
        return
    for name, needed in DOCUMENT_WEIGHT_SETS.items():
        given = options.get(name)
        if given is not None and given != needed:
            flag = CONVENTION[name].flag
            raise SpecError(
                f"{flag} {setting_text(name, given)} contradicts --doc-weight-col, whose weights are TF-Ranking's, "
                f"defined for {name} {setting_text(name, needed)}; leave {flag} out (--doc-weight-col sets it), or "
                "evaluate without --doc-weight-col"
            )


def _set(settings: dict[str, object], convention: Convention, value: object) -> None:
    """One option into the settings of an Evaluation: a text read as its flag reads it (a gain
    map), a part of a field (``log_base`` of ``discount``) set on the profile's or default one."""
    if isinstance(value, str) and convention.from_text is not None:
        value = convention.from_text(value)
    attribute, _, part = convention.field.partition(".")
    if part and not is_dataclass(value):
        value = replace(settings.get(attribute, _DEFAULT_EVALUATION_FIELDS[attribute]), **{part: value})  # type: ignore[type-var]
    settings[attribute] = value


_DEFAULT_EVALUATION_FIELDS = {name: field.default for name, field in Evaluation.__dataclass_fields__.items()}
# the keyword options of the front functions, as make_evaluation names them
_EVALUATION_OPTIONS: tuple[str, ...] = ("k", "profile", *(c.name for c in CONVENTIONS if c.name != "k"))


def _cutoffs(k: object) -> tuple[int, ...]:
    """``k`` as the user may give it: ``10``, ``[5, 10]`` or ``"5,10"``."""
    if isinstance(k, str):
        return parse_cutoffs(k)
    if isinstance(k, int) and not isinstance(k, bool):
        return (k,)
    if isinstance(k, Iterable):
        given = tuple(k)  # each value is checked by Evaluation
        if not given:  # an Evaluation reads no cutoffs as "none given"; an empty k is a mistake
            raise SpecError("at least one cutoff k is needed")
        return given
    raise SpecError(f"k must be an integer, a list of integers or a text such as '5,10', got {k!r}")


@dataclass(frozen=True)
class _Given:
    """A front function's keywords: the conventions (:func:`make_evaluation`'s) and the input,
    validation and execution options of :data:`pipeline.registry.OPTIONS` it takes, typed."""

    conventions: dict[str, object]
    columns: Columns = field(default_factory=Columns)
    run_format: str | None = None
    qrels_format: str | None = None
    run_version: Version = None
    qrels_version: Version = None
    checks: InputChecks = field(default_factory=InputChecks)
    execution: Execution = field(default_factory=Execution)
    weights: QueryWeights = field(default_factory=QueryWeights)

    def evaluation(self, given: Evaluation | None, function: str) -> Evaluation:
        if given is None:
            return make_evaluation(**self.conventions)  # type: ignore[arg-type]
        if self.conventions:
            named = ", ".join(map(repr, self.conventions))
            raise UsageError(
                f"{function}() got evaluation=Evaluation(...) and the option(s) {named}; give the conventions one way"
            )
        return given


def _given(function: str, options: dict[str, object], columns: Columns | None) -> _Given:
    """The keywords of ``function``, each refused by its name unless it is a convention or one
    of the options :data:`pipeline.registry.OPTIONS` gives that function."""
    taken = {option.name for option in options_for(function=function)}
    unknown = sorted(set(options) - set(_EVALUATION_OPTIONS) - taken)
    if unknown:
        known = (*_EVALUATION_OPTIONS, *sorted(taken))
        raise UsageError(
            f"{function}() got unknown option(s) {unknown_keywords(unknown, known)}; "
            f"options are {', '.join(known)} (or evaluation=Evaluation(...))"
        )
    try:
        fields = option_values({name: value for name, value in options.items() if name in taken})
    except SpecError as error:  # an option's own rule (missing_query_weight's)
        raise UsageError(str(error)) from None
    if columns is not None:
        if not isinstance(columns, Columns):
            raise UsageError(
                f"{function}() got columns={columns!r}; expected pipeline.Columns(...), or the keywords that name "
                "the columns (query_col=, score_col=, qrels_label_col=, ...)"
            )
        if "columns" in fields:
            given = [name for name in options if OPTION.get(name) and OPTION[name].holder == "columns"]
            raise UsageError(f"{function}() got columns= and {', '.join(given)}; name the columns one way")
        fields["columns"] = columns
    conventions = {name: value for name, value in options.items() if name not in taken}
    return _Given(conventions, **fields)


def per_query(
    run: Input,
    qrels: Input | None = None,
    *,
    evaluation: Evaluation | None = None,
    engine: EngineName = "polars",
    columns: Columns | None = None,
    **options: object,
) -> pl.LazyFrame:
    """The per-query table ``query_id, k, cg, dcg, idcg, ndcg`` as a LazyFrame.

    ``run`` and ``qrels`` are paths (Parquet file, directory or glob; TREC; CSV; a Delta
    table's folder, read at its current version or ``run_version``/``qrels_version``: a number
    or an ISO time; local, or ``s3://``, ``gs://``, ``az://`` URLs) or Polars frames with the
    canonical columns. Without ``qrels`` the run's label column is used as inline labels.
    ``options`` are those of :func:`make_evaluation` (``k``, ``gain``, ...) and the input and
    validation options of the command line (:data:`pipeline.registry.OPTIONS`: ``run_format``,
    ``query_col``, ..., ``allow_fractional_labels``, ``warn_results_over``; ``columns`` names
    all the columns at once, a :class:`~pipeline.io.read.Columns`). ``query_col``, ``doc_col``
    and ``label_col`` name a column in both inputs; ``run_query_col``, ``run_doc_col``,
    ``qrels_query_col``, ``qrels_doc_col`` and ``qrels_label_col`` (``Columns(run_query=...)``)
    in one input only, e.g. a run with ``qid, docno, sim`` beside canonical judgments:
    ``run_query_col="qid", run_doc_col="docno", score_col="sim"``. Inputs are validated before anything is computed (see
    :func:`check`); warnings are dropped here, :func:`evaluate` returns them.
    """
    given = _given("per_query", options, columns)
    chosen = engine_named(engine)
    evaluation = given.evaluation(evaluation, "per_query")
    inputs = _inputs(chosen, run, qrels, given)
    return chosen.per_query_plan(chosen.load(inputs, evaluation, given.execution), evaluation, given.execution)


def check(
    run: Input, qrels: Input | None = None, *, columns: Columns | None = None, **options: object
) -> tuple[ValidationWarning, ...]:
    """Run only the checks: raise :class:`~pipeline.errors.InvalidInput` on the first error,
    return the warnings (queries only on one side, no relevant document, negative labels,
    queries with more than ``warn_results_over`` results). ``options`` are the input and
    validation options of :func:`per_query`, and the conventions that decide which labels are
    refused (``gain``, ``measures``, ``err_max_grade``: a label whose gain overflows, one above
    ERR's g_max when ERR is asked) and the run's weight column (``doc_weight_col``: each weight a
    finite number >= 0), so that it refuses what :func:`evaluate` would; with
    ``query_weights``, the weights' table and a weight for each query with results and judgments
    (:func:`pipeline.weights.check_weights_cover`)."""
    given = _given("check", options, columns)
    others = [name for name in given.conventions if name not in LABEL_BOUND_CONVENTIONS]
    if others:
        known = [*(option.name for option in options_for(function="check")), *LABEL_BOUND_CONVENTIONS]
        raise UsageError(
            f"check() got unknown option(s) {unknown_keywords(others, known)}; check() takes the input "
            f"and validation options and the conventions that bound labels only: {', '.join(known)}"
        )
    evaluation = make_evaluation(**given.conventions)  # type: ignore[arg-type]
    validated = load(_inputs(ENGINES["polars"], run, qrels, given), evaluation)
    if given.weights.path is not None:
        check_weights_cover(validated.prepared.run, validated.prepared.qrels, given.weights, given.columns)
    return validated.warnings


def evaluate(
    run: Input,
    qrels: Input | None = None,
    *,
    evaluation: Evaluation | None = None,
    engine: EngineName = "polars",
    columns: Columns | None = None,
    **options: object,
) -> Result:
    """Per-query table and summary, computed once by the chosen engine, with the warnings of
    validation. ``options`` are those of :func:`per_query` and the execution options.

    ``threads`` is DuckDB's. ``memory_limit`` (e.g. ``"4GB"``) bounds both engines: when the
    run has more rows than fit (about :data:`pipeline.units.BYTES_PER_RUN_ROW` bytes each, beyond
    what DuckDB's statement takes whatever the rows: 28 MiB for NDCG, 60 MiB for every measure),
    its queries are split by a hash of their id into buckets that are validated and evaluated one
    after the other, each within the limit (DuckDB also gets it as its ``memory_limit``). The
    buckets are written once, in a temporary folder of ``TMPDIR``, about the inputs' size. The
    per-query rows, summary and warnings are the same as in one pass. ``spark_master`` is the
    Spark engine's master URL. ``query_weights`` (a Parquet or CSV table of one weight per query,
    columns ``query_col`` and ``weight_col``) makes every mean of the summary a weighted mean,
    ``missing_query_weight`` the weight of an evaluated query it lacks (default: an error); the
    weights are in the result's ``query_weights``.
    """
    given = _given("evaluate", options, columns)
    chosen = engine_named(engine)
    evaluation = given.evaluation(evaluation, "evaluate")
    return evaluate_inputs(_inputs(chosen, run, qrels, given), evaluation, chosen, given.execution, given.weights)


def _tables(run: Input, qrels: Input | None, given: _Given) -> tuple[Input, Input | None]:
    """Paths of Delta tables given with a version as sources at that version (resolved once);
    a version for anything but a Delta table's path is a usage error."""
    tables = []
    for value, version, name in (
        (run, given.run_version, "run_version"),
        (qrels, given.qrels_version, "qrels_version"),
    ):
        if version is None:
            tables.append(value)
        elif not isinstance(value, (str, Path)):
            raise UsageError(f"{name}: a version is read from a Delta table given by its path")
        else:
            role = "run" if name == "run_version" else "qrels"
            tables.append(table_source(str(value), version, name, given.columns.of(role)) or value)
    return tables[0], tables[1]


def _inputs(engine: Engine, run: Input, qrels: Input | None, given: _Given) -> Inputs:
    """The front's arguments as :class:`~pipeline.inputs.Inputs`: Delta tables at their
    versions; frames of every kind as Polars frames with the canonical column names; for an
    engine that reads frames itself (Spark), its own frames as given and the others as Polars
    frames it renames as it renames its own."""
    columns = given.columns

    def as_input(value: Any, role: str) -> Any:
        if not engine.native_frames:
            return frame_input(value, role, columns)
        is_path = value is None or isinstance(value, (str, Path, Source))
        return value if is_path or hadoop.is_frame(value) else as_polars(value, role)

    run, qrels = _tables(run, qrels, given)
    run, qrels = as_input(run, "run"), as_input(qrels, "qrels")
    return Inputs(run, qrels, columns, given.run_format, given.qrels_format, given.checks)


# Every keyword each function takes, in its signature and docstring, from the registry: help(),
# inspect.signature and a notebook's completion show them all (the functions read **options).
for _function in (make_evaluation, per_query, check, evaluate):
    with_keywords(_function, function_keywords(_function.__name__))
