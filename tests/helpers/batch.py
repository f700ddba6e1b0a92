"""Many small cases scored in few engine runs, for the Spark tests.

A Spark evaluation of a handful of rows costs its round trips (Arrow transfer, the validation
jobs, planning the SQL, the job), not its data: seconds on a loaded machine, the same for one
case as for fifty. So the cases of a parity or edge-case check go into one input: each case's
query ids are prefixed with ``case/``, the cases that share their conventions are evaluated
together, with the union of their cutoffs, and the result is split back into one table per case
with the case's own query ids and cutoffs. Every comparison stays per case, and a failing one
names its case.

That is exact because every number of a per-query row depends only on that query's rows and on
its own cutoff: another query, or another cutoff asked for beside it, changes nothing (which the
comparisons themselves check, since the expected tables come from an evaluation of each case
alone).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from pipeline import Evaluation, per_query

SEPARATOR = "/"


@dataclass(frozen=True)
class Case:
    """One evaluation to score: a run, its judgments (None: the run's inline labels) and the
    Evaluation."""

    run: pl.LazyFrame
    qrels: pl.LazyFrame | None
    evaluation: Evaluation


Score = Callable[[pl.LazyFrame, "pl.LazyFrame | None", Evaluation], pl.DataFrame]


def through_api(engine: str, **options: object) -> Score:
    """Scoring through the library's front (reading, validation, the engine); ``options`` go to
    ``per_query`` (``allow_fractional_labels``, ...)."""

    def score(run: pl.LazyFrame, qrels: pl.LazyFrame | None, evaluation: Evaluation) -> pl.DataFrame:
        return per_query(run, qrels, evaluation=evaluation, engine=engine, **options).collect()  # type: ignore[arg-type]

    return score


class Batch:
    """Each case's per-query table (``query_id, k, ...``), as ``score`` gives it for that case
    alone, from one ``score`` call per group of cases that share their conventions and the
    schemas of their inputs. A group is scored when one of its cases is first asked for, so a
    test pays for its own group at most (and a timeout stays as long as a test's).

    Cases whose query ids are not text cannot be prefixed; each is scored on its own."""

    def __init__(self, cases: Mapping[str, Case], score: Score) -> None:
        for name in cases:
            if SEPARATOR in name:
                raise ValueError(f"a batched case's name cannot hold {SEPARATOR!r}: {name!r}")
        self._cases = dict(cases)
        self._score = score
        self._group_of: dict[str, list[str]] = {}
        groups: dict[tuple, list[str]] = {}
        for name, case in cases.items():
            self._group_of[name] = groups.setdefault(_group_key(name, case), [])
            self._group_of[name].append(name)
        self._tables: dict[str, pl.DataFrame] = {}

    @property
    def names(self) -> list[str]:
        return list(self._cases)

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name not in self._tables:
            self._tables.update(self._scored(self._group_of[name]))
        return self._tables[name]

    def _scored(self, names: list[str]) -> dict[str, pl.DataFrame]:
        cases = self._cases
        if len(names) == 1:
            case = cases[names[0]]
            return {names[0]: self._score(case.run, case.qrels, case.evaluation)}
        cutoffs = tuple(sorted({k for name in names for k in cases[name].evaluation.cutoffs}))
        evaluation = dataclasses.replace(cases[names[0]].evaluation, cutoffs=cutoffs)
        run = pl.concat([_prefixed(name, cases[name].run) for name in names])
        # the schemas are part of the group's key: either every case has judgments, or none has
        judged = [_prefixed(name, qrels) for name in names if (qrels := cases[name].qrels) is not None]
        together = self._score(run, pl.concat(judged) if judged else None, evaluation)
        tables = {}
        for name in names:
            prefix = f"{name}{SEPARATOR}"
            own_cutoffs = cases[name].evaluation.cutoffs
            tables[name] = together.filter(
                pl.col("query_id").str.starts_with(prefix), pl.col("k").is_null() | pl.col("k").is_in(own_cutoffs)
            ).with_columns(pl.col("query_id").str.strip_prefix(prefix))
        return tables


def _group_key(name: str, case: Case) -> tuple:
    schemas = [dict(frame.collect_schema()) for frame in (case.run, case.qrels) if frame is not None]
    if any(schema.get("query_id") != pl.String for schema in schemas):
        return ("alone", name)
    conventions = dataclasses.replace(case.evaluation, cutoffs=(1,))
    return (conventions, *(tuple(schema.items()) for schema in schemas))


def _prefixed(name: str, frame: pl.LazyFrame) -> pl.LazyFrame:
    return frame.with_columns((pl.lit(f"{name}{SEPARATOR}") + pl.col("query_id")).alias("query_id"))


def batched_by_test_id(params: list, case_of: Callable[..., Case], score: Score) -> Batch:
    """A :class:`Batch` of a parametrized test's cases, named by the pytest ids of ``params``
    (``case_of`` builds a case from a param's values); a test reads its table as
    ``batch[batch_name(request.node.callspec.id)]``."""
    return Batch({batch_name(param.id): case_of(*param.values) for param in params}, score)


def batch_name(test_id: str) -> str:
    return test_id.replace(SEPARATOR, "|")


def summaries_on_duckdb(tables: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Each per-query table's summary by ``sql/summary.sql`` (``duckdb_engine.summarize``), as
    that function gives it for the table alone, from one call per schema of the tables.

    A summary over a few rows costs its parse, bind and optimisation, not its rows. The tables
    are stacked with each one's cutoffs renumbered into keys of its own (the whole ranking, a
    null k, one of them too): summary.sql combines the queries of one k at a time, in query
    order, so a case's numbers and their bits are those of its table alone; each summary is
    given back under its own cutoffs."""
    from pipeline.engines import duckdb as duckdb_engine

    groups: dict[tuple, list[str]] = {}
    for name, table in tables.items():
        groups.setdefault(tuple(table.schema.items()), []).append(name)
    summaries: dict[str, pl.DataFrame] = {}
    for names in groups.values():
        stacked, cutoffs_of = [], {}
        for number, name in enumerate(names):
            # the whole ranking (null k) is 0, the cutoffs 1, 2, ... in their order
            position = pl.col("k").rank("dense").fill_null(0).cast(pl.Int64)
            keyed = tables[name].with_columns(key=pl.lit(number * _KEYS_PER_TABLE, dtype=pl.Int64) + position)
            cutoffs_of[name] = dict(keyed.select("key", "k").unique().iter_rows())
            if len(cutoffs_of[name]) > _KEYS_PER_TABLE:
                raise ValueError(f"{name!r} has over {_KEYS_PER_TABLE} cutoffs")
            stacked.append(keyed.with_columns(k=pl.col("key")).drop("key"))
        with duckdb_engine.reused_connection() as connection:
            together = duckdb_engine.summarize(pl.concat(stacked), connection)
        for number, name in enumerate(names):
            first = number * _KEYS_PER_TABLE
            own = together.filter(pl.col("k").is_between(first, first + _KEYS_PER_TABLE - 1))
            original = pl.col("k").replace_strict(cutoffs_of[name], return_dtype=tables[name].schema["k"])
            summaries[name] = own.with_columns(original)
    return summaries


_KEYS_PER_TABLE = 1_000
