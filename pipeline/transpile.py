"""The files of ``sql/`` as one statement in another dialect (Spark SQL, or DuckDB's for
``ndcg sql``), values bound, by sqlglot on the syntax tree.

There is no second implementation here. ``sql/measures/per_query.sql`` and ``sql/summary.sql``
are parsed in DuckDB's dialect (per_query.sql with the steps before it as the CTEs of its one
``with`` chain, see :func:`composed_per_query`), every ``getvariable('name')`` node is replaced
by a literal built as a syntax-tree node from the bound value (an unset variable becomes a NULL
of the variable's type), and the tree is written out in the target dialect. No SQL text is ever
built from values.

Rewrites that keep DuckDB's meaning (each tested):

- decimal literals such as ``1.0`` become DOUBLE on Spark: Spark divides decimals in fixed
  scale (``1.0 / 3`` is 0.333333 there), DuckDB's ``/`` divides in double;
- tables ``run``, ``qrels`` and ``per_query`` can be renamed to private views, aliased by their
  old names so qualified columns (``run.query_id``) still resolve;
- ``list_reduce(list, lambda, initial)``, DuckDB's fold, becomes Spark's ``aggregate(list,
  initial, lambda)``;
- once the values are bound, the branches the options switch off are cut
  (:func:`pipeline.pruning.pruned`): a ``union all`` branch whose ``where`` is false for every
  row, and the CTEs no one reads then. The SQL switches conventions with such branches; Spark
  analyses every branch it is given, and the switched-off ones were most of the plan (the tie
  bounds' orderings, the other ideals). The columns a caller does not keep go too, with every
  column only they read (``keep``, :func:`pipeline.pruning.narrowed`).

The bound, cut trees are kept (:func:`_bound_trees`) by everything they are made from, the SQL
files' text included: the next evaluation with the same values starts from them.

This module is neutral: the Spark engine and ``ndcg sql`` use it; it imports no engine. It
also makes ``sql/generated/per_query_composed.sql`` (:func:`composed_per_query_sql`, written by
``make generate``), the composition in DuckDB's own dialect that the DuckDB engine runs, so that
the engine itself needs no sqlglot.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.dialects.duckdb import DuckDB
from sqlglot.optimizer.scope import Scope, traverse_scope

from pipeline.errors import UsageError
from pipeline.pruning import narrowed, pruned
from pipeline.registry import Evaluation, spark_refusals
from pipeline.sql_files import (
    PER_QUERY_COMPOSED,
    PER_QUERY_STEPS,
    VARIABLE_TYPES,
    VARIABLES,
    evaluation_variables,
    per_query_steps,
    sql_file,
)

# The files of sql/ that are plain queries over views, and so portable to Spark.
# (inputs.sql uses DuckDB's read_parquet and COLUMNS(lambda ...); ndcg.sql and export.sql are
# CLI scripts: on Spark, Spark's own readers and writers take their place.)
PORTABLE_FILES = (PER_QUERY_STEPS[-1], "summary.sql")
# With TF-Ranking's document weights (doc_weight_col), in summary.sql's place: the judgments as a view
# of their own (a CTE of per_query.sql otherwise), the list weights, their range and the weighted means,
# the files sql/ndcg.sql reads after the steps, the last one's view named summary
PRINTED_JUDGMENTS = "ndcg_judgments"
DOCUMENT_WEIGHT_FILES = (
    "ranking/judgments.sql",
    "list_weights.sql",
    "list_weight_range.sql",
    "list_weighted_summary.sql",
)


# Options whose meaning Spark cannot honour: variable -> value -> why (the registry's, in
# pipeline/registry/). Rejected, never ignored. Row arrival order is not defined on Spark (files
# are read in parallel and shuffled), so nothing that depends on the order rows arrive can give
# the same answer as on one machine.
UNSUPPORTED: dict[str, dict[str, str]] = spark_refusals()


def literal(value: Any, type_name: str | None = None) -> exp.Expr:
    """A SQL literal for one value, as a syntax-tree node; ``type_name`` is its Spark type.

    >>> literal([5, 10], "ARRAY<BIGINT>").sql("spark")
    'ARRAY(CAST(5 AS BIGINT), CAST(10 AS BIGINT))'
    >>> literal(None, "DOUBLE").sql("spark")
    'CAST(NULL AS DOUBLE)'
    >>> literal("it's").sql("spark")
    "'it\\\\'s'"
    >>> literal({"name": "a", "low": 1}, "STRUCT<name: STRING, low: DOUBLE>").sql("spark")
    "STRUCT('a' AS name, CAST(1.0 AS DOUBLE) AS low)"
    """
    data_type = exp.DataType.build(type_name, dialect="spark") if type_name else None
    if value is None:
        return exp.cast(exp.Null(), data_type) if data_type else exp.Null()
    if data_type is not None and data_type.is_type(exp.DataType.Type.ARRAY):
        element = data_type.expressions[0].sql("spark") if data_type.expressions else None
        items = exp.Array(expressions=[literal(item, element) for item in value])
        return items if value else exp.cast(items, data_type)
    if data_type is not None and data_type.is_type(exp.DataType.Type.STRUCT):
        fields = [(field.name, field.args["kind"].sql("spark")) for field in data_type.expressions]
        return exp.Struct(
            expressions=[
                exp.PropertyEQ(this=exp.to_identifier(name), expression=literal(value[name], kind))
                for name, kind in fields
            ]
        )
    if data_type is not None and data_type.is_type(exp.DataType.Type.MAP):
        key_type, value_type = (part.sql("spark") for part in data_type.expressions)
        keys, values = (list(value), list(value.values())) if isinstance(value, Mapping) else value
        return exp.Map(
            keys=literal(list(keys), f"ARRAY<{key_type}>"), values=literal(list(values), f"ARRAY<{value_type}>")
        )
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, (int, float)):
        number = float(value) if data_type is not None and data_type.is_type(*exp.DataType.REAL_TYPES) else value
        if isinstance(number, float) and not math.isfinite(number):
            text = "NaN" if math.isnan(number) else ("Infinity" if number > 0 else "-Infinity")
            return exp.cast(exp.Literal.string(text), "DOUBLE")
        node = exp.Literal.number(repr(number))
        target = data_type or exp.DataType.build("DOUBLE" if isinstance(number, float) else "BIGINT")
        return exp.cast(node, target)
    if isinstance(value, str):
        return exp.Literal.string(value)
    if isinstance(value, (list, tuple)):
        return exp.Array(expressions=[literal(item) for item in value])
    raise UsageError(f"cannot pass a {type(value).__name__} to SQL: {value!r}")


def check_supported(variables: Mapping[str, Any]) -> None:
    """Refuse options that Spark cannot compute with the same meaning."""
    for name, value in variables.items():
        reason = UNSUPPORTED.get(name, {}).get(value) if isinstance(value, str) else None
        if reason:
            raise UsageError(f"{name} = {value!r} is not supported on the spark engine: {reason}")


def _bind_variables(tree: exp.Expr, variables: Mapping[str, Any]) -> exp.Expr:
    def bind(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Anonymous) and node.name.lower() == "getvariable"):
            return node
        arguments = node.expressions
        if len(arguments) != 1 or not (isinstance(arguments[0], exp.Literal) and arguments[0].is_string):
            raise UsageError(f"getvariable takes one quoted name, got {node.sql('duckdb')}")
        name = arguments[0].name
        if name not in VARIABLES:
            raise UsageError(f"SQL reads variable {name!r}, which is not one of {', '.join(VARIABLES)}")
        return literal(variables.get(name), VARIABLE_TYPES.get(name))

    # the one copy of the tree given (a cached parse): what binding returns is changed in place after
    return _without_subtopics_unread(tree.transform(bind), variables, copy=False)


def _without_subtopics_unread(tree: exp.Expr, variables: Mapping[str, Any], *, copy: bool = True) -> exp.Expr:
    """``qrels.subtopic`` as a null of its type where no measure asked reads the judgments per
    subtopic (the intent curve, sql/curves/intent_pairs.sql): a statement printed for views of
    one's own (``ndcg sql``) then reads the qrels' ``query_id, doc_id, relevance`` alone, as it
    did before subtopics; it names ``subtopic`` only for the intent-aware measures."""
    if "intent_curve" in (variables.get("curves") or ()):
        return tree

    def unread(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Column) and node.table == "qrels" and node.name == "subtopic":
            null = exp.cast(exp.Null(), "VARCHAR")
            return exp.alias_(null, "subtopic") if isinstance(node.parent, exp.Select) else null
        return node

    return tree.transform(unread, copy=copy)


# --- DuckDB's star forms, spelled out ---------------------------------------------------------


def expanded_stars(tree: exp.Expr, known: Mapping[str, Sequence[str]] | None = None) -> exp.Expr:
    """``t.* exclude (a, b)`` and ``f(columns(t.* exclude (a)))`` spelled out column by column,
    for dialects that have neither (Spark): the SQL can then say "every measure" once, and a
    new measure is not listed again in ``per_query.sql`` and ``summary.sql``.

    The columns of a CTE are read off its query (through plain stars); those of a table or view
    come from ``known``. An item built on ``columns(...)`` is named after each column, as DuckDB
    names it.

    >>> sql = "with m as (select 1 as q, 2.0 as a, 3.0 as b) "
    >>> sql += "select m.* exclude (q), sum(columns(m.* exclude (q))) from m"
    >>> expanded_stars(sqlglot.parse_one(sql, read="duckdb")).sql("spark")
    'WITH m AS (SELECT 1 AS q, 2.0 AS a, 3.0 AS b) SELECT m.a, m.b, SUM(m.a) AS a, SUM(m.b) AS b FROM m'
    """
    known = known or {}
    for scope in traverse_scope(tree):
        query = scope.expression
        if not isinstance(query, exp.Select) or not any(_spelled_out(item) for item in query.selects):
            continue
        items: list[exp.Expr] = []
        for item in query.selects:
            if isinstance(item, (exp.Star, exp.Column)) and _spelled_out_star(item):
                items += [exp.column(name, table=table) for table, name in _star_columns(item, scope, known)]
                continue
            found = list(item.find_all(exp.Columns))
            if not found:
                items.append(item)
                continue
            columns = found[0]
            # the same columns(...) twice (a value and its test) stand for the same column
            if any(other != columns for other in found[1:]) or isinstance(item, exp.Alias):
                raise UsageError(f"cannot spell out {item.sql('duckdb')}: one unnamed columns(...) per item")
            for table, name in _star_columns(columns.this, scope, known):
                column = exp.column(name, table=table)
                if item is columns:  # a bare columns(...): each column as it is
                    items.append(column)
                    continue
                copy = item.copy()
                for each in list(copy.find_all(exp.Columns)):
                    each.replace(column.copy())
                items.append(exp.alias_(copy, name))
        query.set("expressions", items)
    return tree


def output_columns(query: exp.Expr, known: Mapping[str, Sequence[str]] | None = None) -> list[str]:
    """The names of the columns ``query`` selects, through its stars."""
    scope = next((scope for scope in traverse_scope(query) if scope.expression is query), None)
    if scope is None:
        raise UsageError(f"cannot read the columns of {query.sql('duckdb')[:80]}")
    return _scope_columns(scope, known or {})


def _spelled_out(item: exp.Expr) -> bool:
    return _spelled_out_star(item) or item.find(exp.Columns) is not None


def _spelled_out_star(item: exp.Expr) -> bool:
    star = item.this if isinstance(item, exp.Column) else item
    return isinstance(star, exp.Star) and bool(star.args.get("except_"))


def _star_columns(star: exp.Expr, scope: Scope, known: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """(table, column) of every column a star selects in ``scope``, in order, less its
    ``exclude`` list; or of a ``columns(lambda c: ...)``, those its condition holds for."""
    if isinstance(star, exp.Lambda):
        query = scope.expression
        from_ = [query.args["from_"].this] if query.args.get("from_") else []
        sources = [source.alias_or_name for source in [*from_, *(join.this for join in query.args.get("joins") or [])]]
        candidates = [(table, name) for table in sources for name in _source_columns(scope, table, known)]
        return [(table, name) for table, name in candidates if _lambda_holds(star, name)]
    bare = star.this if isinstance(star, exp.Column) else star
    excluded = {column.name for column in bare.args.get("except_") or []}
    if isinstance(star, exp.Column) and star.table:
        tables = [star.table]
    else:
        query = scope.expression
        from_ = [query.args["from_"].this] if query.args.get("from_") else []
        tables = [source.alias_or_name for source in [*from_, *(join.this for join in query.args.get("joins") or [])]]
    return [(table, name) for table in tables for name in _source_columns(scope, table, known) if name not in excluded]


def _lambda_holds(condition: exp.Lambda, name: str) -> bool:
    """Whether ``lambda c: <condition>`` holds for the column ``name``, once the variables are
    bound: the condition may only compare ``c`` with texts and lists of them (``c = 'x'``,
    ``list_contains([...], c)``, ``coalesce``, ``and``, ``or``, ``not``)."""
    (parameter,) = condition.expressions

    def value(node: exp.Expr) -> Any:
        if isinstance(node, (exp.Paren, exp.Cast)):
            return value(node.this)
        if isinstance(node, (exp.Identifier, exp.Column)) and node.name == parameter.name:
            return name
        if isinstance(node, exp.Literal) and node.is_string:
            return node.this
        if isinstance(node, exp.Null):
            return None
        if isinstance(node, exp.Array):
            return [value(item) for item in node.expressions]
        if isinstance(node, exp.Coalesce):
            return next((v for v in map(value, [node.this, *node.expressions]) if v is not None), None)
        if isinstance(node, exp.ArrayContains):
            items = value(node.this)
            return None if items is None else value(node.expression) in items
        if isinstance(node, exp.Not):
            return not value(node.this)
        if isinstance(node, exp.And):
            return value(node.this) and value(node.expression)
        if isinstance(node, exp.Or):
            return value(node.this) or value(node.expression)
        if isinstance(node, (exp.EQ, exp.NEQ)):
            return (value(node.this) == value(node.expression)) == isinstance(node, exp.EQ)
        raise UsageError(
            f"cannot spell out columns({condition.sql('duckdb')}): {node.sql('duckdb')} is not a text test"
        )

    return bool(value(condition.this))


def _source_columns(scope: Scope, name: str, known: Mapping[str, Sequence[str]]) -> list[str]:
    source = scope.sources.get(name)
    if isinstance(source, Scope):
        return _scope_columns(source, known)
    table = source.name if isinstance(source, exp.Table) else name
    if table not in known:
        raise UsageError(f"cannot spell out the columns of {table}: not a CTE, and its columns are not given")
    return list(known[table])


def _scope_columns(scope: Scope, known: Mapping[str, Sequence[str]]) -> list[str]:
    if scope.set_operation_scopes:  # a union's columns are named by its left side
        return _scope_columns(scope.set_operation_scopes[0], known)
    query = scope.expression
    if not isinstance(query, exp.Select):
        raise UsageError(f"cannot read the columns of {query.sql('duckdb')[:80]}")
    names: list[str] = []
    for item in query.selects:
        if isinstance(item, exp.Star) or (isinstance(item, exp.Column) and isinstance(item.this, exp.Star)):
            names += [name for _, name in _star_columns(item, scope, known)]
        elif (columns := item.find(exp.Columns)) is not None:
            names += [name for _, name in _star_columns(columns.this, scope, known)]
        else:
            names.append(item.alias_or_name)
    return names


def _decimals_as_doubles(tree: exp.Expr) -> exp.Expr:
    def to_double(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Literal) and not node.is_string and not node.is_int:
            return exp.cast(node.copy(), "DOUBLE")
        return node

    return tree.transform(to_double)


_SUM_IN_ORDER_FOR_SPARK = (
    "CASE WHEN COUNT(value_) = 0 THEN NULL ELSE AGGREGATE(ARRAY_SORT(COLLECT_LIST(STRUCT(key_ AS k, value_ AS v))), "
    "CAST(0 AS DOUBLE), (total, e) -> total + COALESCE(e.v, CAST(0 AS DOUBLE))) END"
)


def _sums_in_order_for_spark(tree: exp.Expr, *, copy: bool = True) -> exp.Expr:
    """``sum(x order by r)`` (the steps' sums in rank order, the same bits on every run) as
    Spark can run it, which has no ordered aggregate: the values gathered beside their rank,
    sorted, and added one by one; null where no value is, as ``sum``."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Sum) and isinstance(node.this, exp.Order)):
            return node
        (ordered,) = node.this.expressions  # one key, ascending: a rank
        if ordered.args.get("desc"):
            raise ValueError(f"a sum in descending order has no Spark form: {node.sql('duckdb')}")
        value, key = node.this.this, ordered.this

        def place(part: exp.Expr) -> exp.Expr:
            if isinstance(part, exp.Column) and not part.table and part.name in ("value_", "key_"):
                return (value if part.name == "value_" else key).copy()
            return part

        return sqlglot.parse_one(_SUM_IN_ORDER_FOR_SPARK, read="spark").transform(place)

    return tree.transform(rewrite, copy=copy)


_PRODUCT_FOR_SPARK = "IF(SIZE(values_) = 0, NULL, AGGREGATE(values_, CAST(1 AS DOUBLE), (total, v) -> total * v))"


def _products_for_spark(tree: exp.Expr, *, copy: bool = True) -> exp.Expr:
    """``product(x) over (...)`` (ERR's chance of reaching a rank, sql/curves/cascade_curve.sql)
    as Spark can run it, which has no product aggregate: the window's values gathered, then
    multiplied one by one; null where no value is, as ``product``."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        product = isinstance(node, exp.Window) and isinstance(node.this, exp.Anonymous)
        if not (product and node.this.name.lower() == "product"):
            return node
        gathered = node.copy()
        gathered.set("this", exp.Anonymous(this="COLLECT_LIST", expressions=[e.copy() for e in node.this.expressions]))

        def place(part: exp.Expr) -> exp.Expr:
            if isinstance(part, exp.Column) and not part.table and part.name == "values_":
                return gathered.copy()
            return part

        return sqlglot.parse_one(_PRODUCT_FOR_SPARK, read="spark").transform(place)

    return tree.transform(rewrite, copy=copy)


def _folds_for_spark(tree: exp.Expr, *, copy: bool = True) -> exp.Expr:
    """``list_reduce(list, lambda, initial)`` (ndeval's greedy ideal rank by rank,
    sql/curves/intent_ideal.sql) as Spark spells the same fold from the same start,
    ``aggregate(list, initial, lambda)``."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        if not (isinstance(node, exp.Anonymous) and node.name.lower() == "list_reduce" and len(node.expressions) == 3):
            return node
        # the folds inside it too (a replaced node's children are not visited again)
        values, merge, initial = (_folds_for_spark(part.copy()) for part in node.expressions)
        return exp.Anonymous(this="AGGREGATE", expressions=[values, initial, merge])

    return tree.transform(rewrite, copy=copy)


def _functions_for_spark(tree: exp.Expr) -> exp.Expr:
    """DuckDB's ``error(message)`` is Spark's ``raise_error(message)``, a boolean where DuckDB's
    is (``x or error(...)``: Spark's returns no type of its own); DuckDB's ``list_has_any(a, b)``
    is Spark's ``arrays_overlap(a, b)`` (sqlglot writes PostgreSQL's ``a && b``, which Spark does
    not parse)."""

    def rewrite(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == "error":
            raised = exp.Anonymous(this="raise_error", expressions=node.expressions)
            return exp.Cast(this=raised, to=exp.DataType.build("boolean"))
        if isinstance(node, exp.ArrayOverlaps):
            return exp.Anonymous(this="arrays_overlap", expressions=[node.this, node.expression])
        return node

    return tree.transform(rewrite, copy=False)


def _rename_tables(tree: exp.Expr, tables: Mapping[str, str]) -> exp.Expr:
    cte_names = {cte.alias_or_name for cte in tree.find_all(exp.CTE)}

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.Table) and node.name in tables and node.name not in cte_names and not node.db:
            renamed = exp.table_(tables[node.name])
            renamed.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return renamed
        return node

    return tree.transform(rename)


# Python's cycle collector, off while a statement's trees are made: each of sqlglot's nodes points
# to its parent, so every tree is a cycle, and the tens of thousands of nodes that binding,
# cutting and typing a statement allocate set off full collections, each scanning every object
# of the process. They were more than half of transpiling (per_query.sql for Spark, new values:
# 0.80 s with the collector on, 0.33 s off). What was left unreachable is collected after.
_COLLECTOR_LOCK = threading.Lock()
_collector_held = [0, False]  # calls inside, whether the collector was on before the first


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    with _COLLECTOR_LOCK:
        if _collector_held[0] == 0:
            _collector_held[1] = gc.isenabled()
            gc.disable()
        _collector_held[0] += 1
    try:
        yield
    finally:
        with _COLLECTOR_LOCK:
            _collector_held[0] -= 1
            if _collector_held[0] == 0 and _collector_held[1]:
                gc.enable()


def _parse(file_name: str, text: str) -> list[exp.Expr]:
    try:
        return [tree for tree in sqlglot.parse(text, read="duckdb") if tree is not None]
    except sqlglot.errors.ParseError as error:
        raise UsageError(f"sql/{file_name} does not parse: {error}") from None


def composed_per_query() -> exp.Expr:
    """The steps of the per-query table (:data:`~pipeline.sql_files.PER_QUERY_STEPS`) as one
    statement: each step's ``create ... view name as <query>`` becomes the CTE ``name as
    (<query>)``, ahead of the last step's own CTEs, in the last step's ``create ... per_query``.

    One query rather than a temp view per step: Spark analyses and optimises the whole plan
    once, and ``ndcg sql`` prints a statement that defines no view but ``per_query``. Built on
    the syntax tree, so no SQL text is ever joined.

    >>> composed_per_query().sql("duckdb", comments=False)[:59]
    'CREATE OR REPLACE TEMPORARY TABLE per_query AS WITH cutoffs'
    """
    ctes: list[exp.CTE] = []
    for file_name, text in per_query_steps():
        (tree,) = _parse(file_name, text)
        if not (isinstance(tree, exp.Create) and tree.kind in ("VIEW", "TABLE")):
            raise UsageError(f"sql/{file_name} is a step, so one `create ... view name as <query>`")
        if file_name != PER_QUERY_STEPS[-1]:
            step = tree.this.name
            alias = exp.TableAlias(this=exp.to_identifier(step))
            ctes.append(exp.CTE(this=_own_ctes_prefixed(tree.expression, step), alias=alias))
    query = tree.expression
    own = query.args["with_"].expressions if query.args.get("with_") else []
    clashes = {cte.alias_or_name for cte in ctes} & {cte.alias_or_name for cte in own}
    if clashes:  # a CTE of per_query.sql would hide a step
        raise UsageError(f"sql/{PER_QUERY_STEPS[-1]} names a CTE as a step: {', '.join(sorted(clashes))}")
    query.set("with_", exp.With(expressions=[*ctes, *own]))
    return tree


def _own_ctes_prefixed(query: exp.Expr, step: str) -> exp.Expr:
    """A step's own CTEs renamed ``<step>__<name>``, each read under its old name as alias.

    sqlglot's Spark dialect lifts nested CTEs to the top of the statement, where the steps'
    ``final`` CTEs would clash (Spark refuses duplicate CTE names)."""
    names = {cte.alias_or_name for cte in query.find_all(exp.CTE)}

    def rename(node: exp.Expr) -> exp.Expr:
        if isinstance(node, exp.CTE) and node.alias_or_name in names:
            node.set("alias", exp.TableAlias(this=exp.to_identifier(f"{step}__{node.alias_or_name}")))
        elif isinstance(node, exp.Table) and node.name in names and not node.db:
            renamed = exp.table_(f"{step}__{node.name}")
            renamed.set("alias", node.args.get("alias") or exp.TableAlias(this=exp.to_identifier(node.name)))
            return renamed
        return node

    return query.transform(rename)


# where the parser found each node: a dict on thousands of nodes, which every copy of the tree
# copied again with Python's deepcopy (with the collector paused, transpiling 5% faster without)
POSITIONS = ("line", "col", "start", "end")


def _strip_comments(tree: exp.Expr) -> exp.Expr:
    """The tree without its comments and its nodes' places in the text they were parsed from."""
    for node in tree.walk():
        node.comments = None
        meta = node._meta
        if meta:
            for key in POSITIONS:
                meta.pop(key, None)
            if not meta:
                node._meta = None
    return tree


class DuckDBNullsSpelledOut(DuckDB):
    """DuckDB's dialect, every ordering's nulls written out. sqlglot leaves out what is DuckDB's
    default (``nulls last``), so the steps' explicit ``nulls last`` went missing and the SQL we
    write for DuckDB (the engine's statement, the macros, ``ndcg sql``) then read a session's
    ``default_null_order``, which the steps do not.

    Each ordering is written here, as DuckDB's generator writes it plus the nulls it left out,
    and put in the tree as that text: the generator cannot be subclassed where sqlglot's
    compiled build (``sqlglot[c]``) is installed."""

    def generate(self, expression: exp.Expr, copy: bool = True, **opts: Any) -> str:
        tree = expression.copy() if copy else expression
        # the deepest first: an ordering inside another's expression is text before the outer one is written
        for ordered in sorted(tree.find_all(exp.Ordered), key=lambda node: node.depth, reverse=True):
            text = super().generate(ordered, copy=False, **{**opts, "pretty": False})
            if not text.endswith((" NULLS FIRST", " NULLS LAST")):
                text += f" NULLS {'FIRST' if ordered.args.get('nulls_first') else 'LAST'}"
            ordered.replace(exp.Var(this=text))
        return super().generate(tree, copy=False, **opts)


def written_in(dialect: str) -> str | type[DuckDB]:
    """The dialect to write SQL for ``dialect`` in: DuckDB's with every null order spelled out."""
    return DuckDBNullsSpelledOut if dialect == "duckdb" else dialect


@dataclass(frozen=True)
class Statement:
    """One transpiled statement: the view it defines (or None) and its query."""

    view: str | None
    query: exp.Expr
    statement: exp.Expr

    @collector_paused()
    def query_sql(self, dialect: str = "spark", *, pretty: bool = False) -> str:
        return self.query.sql(written_in(dialect), pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE)

    @collector_paused()
    def sql(self, dialect: str = "spark", *, pretty: bool = True) -> str:
        return self.statement.sql(written_in(dialect), pretty=pretty, unsupported_level=sqlglot.ErrorLevel.RAISE)


@collector_paused()
def transpile(
    file_name: str,
    variables: Mapping[str, Any],
    *,
    dialect: str = "spark",
    tables: Mapping[str, str] | None = None,
    columns: Mapping[str, Sequence[str]] | None = None,
    spell_out_stars: bool | None = None,
    keep: Sequence[str] | None = None,
) -> list[Statement]:
    """The statements of one file of ``sql/`` with ``variables`` bound, for ``dialect``;
    ``per_query.sql`` is one statement with the steps before it (:func:`composed_per_query`).
    ``columns`` names the columns of the tables the file reads (``per_query`` for
    ``summary.sql``), where a star over them is spelled out (:func:`expanded_stars`): for every
    dialect but DuckDB's, unless ``spell_out_stars`` says otherwise. Each statement's query
    selects the columns ``keep``, in that order, and computes nothing only the others read
    (:func:`~pipeline.pruning.narrowed`; the stars must be spelled out); None: all of them."""
    spell_out_stars = dialect != "duckdb" if spell_out_stars is None else spell_out_stars
    if file_name not in (*PORTABLE_FILES, *DOCUMENT_WEIGHT_FILES):
        portable = ", ".join((*PORTABLE_FILES, *DOCUMENT_WEIGHT_FILES))
        raise UsageError(f"sql/{file_name} is DuckDB-only; portable files: {portable}")
    if keep is not None and not spell_out_stars:
        raise ValueError("columns are kept of a statement whose stars are spelled out only")
    if dialect == "spark":
        check_supported(variables)
    statements = []
    kept = None if keep is None else tuple(keep)
    for bound in _bound_trees(file_name, variables, dialect, columns, spell_out_stars, kept):
        tree = _rename_tables(bound, tables or {})  # a copy: the cached tree stays as it is
        if isinstance(tree, exp.Create) and tree.kind in ("VIEW", "TABLE"):
            if tree.kind == "TABLE" and dialect == "spark":
                # DuckDB materializes per_query once as a temp table; Spark has temp views only
                tree.set("kind", "VIEW")
            statements.append(Statement(view=tree.this.name, query=tree.expression, statement=tree))
        else:
            statements.append(Statement(view=None, query=tree, statement=tree))
    return statements


# Transpiled trees by everything they are made from, the SQL files' text included. Binding and
# cutting the composed statement costs seconds of Python; a job evaluates its partitions, and a
# session its calls, mostly with the same values.
_BOUND_TREES: dict[tuple[str, ...], tuple[exp.Expr, ...]] = {}
_BOUND_TREES_LOCK = threading.Lock()
BOUND_TREES_KEPT = 32


def _bound_trees(
    file_name: str,
    variables: Mapping[str, Any],
    dialect: str,
    columns: Mapping[str, Sequence[str]] | None,
    spell_out_stars: bool,
    keep: tuple[str, ...] | None = None,
) -> tuple[exp.Expr, ...]:
    composed = file_name == PER_QUERY_STEPS[-1]
    texts = [text for _, text in per_query_steps()] if composed else [sql_file(file_name)]
    key = (
        file_name,
        dialect,
        repr(spell_out_stars),
        repr(sorted(variables.items())),
        repr(sorted((name, list(names)) for name, names in (columns or {}).items())),
        repr(keep),
        *texts,
    )
    with _BOUND_TREES_LOCK:
        cached = _BOUND_TREES.get(key)
    if cached is not None:
        return cached
    trees = []
    for tree in _parsed_trees(file_name, dialect, tuple(texts)):
        # binding makes a copy; where the stars are spelled out, the joins of CTEs that select
        # nothing are cut after that, all at once (typing the CTEs for the cut is its cost)
        tree = pruned(_bind_variables(tree, variables), cut_joins=not spell_out_stars)
        if spell_out_stars:
            tree = pruned(expanded_stars(tree, columns))
        if keep is not None:
            tree = narrowed(tree, keep, columns or {})
        # after the cuts, which read a plain sum (the rewrite's lambda is no column of a CTE); in
        # place: the tree is this call's own since binding copied it (a copy of the whole statement
        # is a tenth of a second)
        if dialect == "spark":
            tree = _sums_in_order_for_spark(tree, copy=False)
            tree = _folds_for_spark(_products_for_spark(tree, copy=False), copy=False)
            tree = _functions_for_spark(tree)
        trees.append(tree)
    result = tuple(trees)
    with _BOUND_TREES_LOCK:  # threads may evaluate at once (the job's partitions, a server)
        while len(_BOUND_TREES) >= BOUND_TREES_KEPT:
            _BOUND_TREES.pop(next(iter(_BOUND_TREES)))
        _BOUND_TREES[key] = result
    return result


@functools.lru_cache(maxsize=8)
@collector_paused()
def _parsed_trees(file_name: str, dialect: str, texts: tuple[str, ...]) -> tuple[exp.Expr, ...]:
    """The file's trees before any value is bound (the texts are the key: they are what is
    parsed), kept: parsing and composing the steps is a second of the first evaluation with any
    new values. Never changed in place; :func:`_bound_trees` binds a copy."""
    parsed = [composed_per_query()] if file_name == PER_QUERY_STEPS[-1] else _parse(file_name, texts[0])
    trees = []
    for tree in parsed:
        tree = _strip_comments(tree)
        trees.append(_decimals_as_doubles(tree) if dialect == "spark" else tree)
    return tuple(trees)


def _refuse_printing_qrels_weights(variables: Mapping[str, Any]) -> None:
    """The printed statements read each result's weight from the run view's ``doc_weight``: the
    qrels' weights are joined into it by whoever defines that view."""
    if variables.get("doc_weights_in") == "qrels":
        raise UsageError(
            "doc_weights_in qrels is not read by ndcg sql: its statements read each result's weight from the run "
            "view's column doc_weight; join the qrels' weights into that view and leave doc_weights_in out"
        )


def portable_files(variables: Mapping[str, Any], *, dialect: str = "spark") -> list[tuple[str, list[Statement]]]:
    """Every file of :data:`PORTABLE_FILES` transpiled, in order, each reading the views the
    ones before it define (whose columns spell out its stars); with ``doc_weight_col``, those of
    :data:`DOCUMENT_WEIGHT_FILES` in summary.sql's place, the last view named ``summary``."""
    _refuse_printing_qrels_weights(variables)
    weighted = variables.get("doc_weight_col") is not None
    files = (PER_QUERY_STEPS[-1], *DOCUMENT_WEIGHT_FILES) if weighted else PORTABLE_FILES
    if weighted and variables.get("run_path") is None:  # the errors name the run as the view it is
        variables = {**variables, "run_path": "run"}
    transpiled = []
    columns: dict[str, list[str]] = {}
    tables = {"judgments": PRINTED_JUDGMENTS} if weighted else {}
    # the steps' judgments (a CTE of per_query) as a view named as ours, not as a table the user may have
    # (a qrels view over it would read itself); the weighted means as the summary
    views = {DOCUMENT_WEIGHT_FILES[0]: PRINTED_JUDGMENTS, DOCUMENT_WEIGHT_FILES[-1]: "summary"} if weighted else {}
    for file_name in files:
        statements = [
            statement
            for statement in transpile(file_name, variables, dialect=dialect, columns=columns, tables=tables)
            if isinstance(statement.statement, (exp.Create, exp.Query))  # not a file's closing comment
        ]
        columns.update(
            (statement.view, output_columns(statement.query, columns)) for statement in statements if statement.view
        )
        if file_name in views:
            statements = [_named(statement, views[file_name]) for statement in statements]
        transpiled.append((file_name, statements))
    return transpiled


def _named(statement: Statement, view: str) -> Statement:
    """The statement creating the view ``view`` instead."""
    tree = statement.statement.copy()
    tree.set("this", exp.to_table(view))
    return Statement(view=view, query=tree.expression, statement=tree)


def sql_text(evaluation: Evaluation, *, dialect: str = "spark") -> str:
    """``per_query.sql`` then ``summary.sql``, values bound, in ``dialect``: pasteable SQL
    over views ``run`` and ``qrels`` that defines the views ``per_query`` and ``summary``."""
    parts = []
    for file_name, statements in portable_files(evaluation_variables(evaluation), dialect=dialect):
        try:
            text = ";\n\n".join(statement.sql(dialect) for statement in statements)
        except sqlglot.errors.UnsupportedError as error:
            raise UsageError(f"sql/{file_name} does not transpile to {dialect}: {error}") from None
        steps = f" (its steps {', '.join(PER_QUERY_STEPS[:-1])} as CTEs)" if file_name == PER_QUERY_STEPS[-1] else ""
        parts.append(f"-- from sql/{file_name}{steps}\n{text};\n")
    return "\n".join(parts)


@collector_paused()
def composed_per_query_sql() -> str:
    """The text of ``sql/generated/per_query_composed.sql``: :func:`composed_per_query` in DuckDB's
    own dialect, its variables read as they are (``getvariable``), under a header that says why."""
    tree = _strip_comments(composed_per_query())
    # the rows unordered: the engine orders them as it reads the table, by the ids it gives back
    # (hashed while the statement runs), so a sort here of every column was a second one (2M rows,
    # every measure: 3.96 s -> 3.80 s of the statement's CPU, the median of 4)
    tree.expression.set("order", None)
    body = tree.sql(written_in("duckdb"), pretty=True, unsupported_level=sqlglot.ErrorLevel.RAISE)
    header = [
        f"-- {PER_QUERY_COMPOSED.rpartition('/')[2]}: sql/{PER_QUERY_STEPS[-1]} with the steps before it as the CTEs",
        "-- of one statement. Generated by pipeline/transpile.py from the steps of sql/ (make generate); do",
        "-- not edit. The same variables, views read (run, qrels) and table made (per_query, its rows in no",
        "-- order: the engine orders them as it reads them) as the step views and per_query.sql. The",
        "-- library's DuckDB engine runs this: DuckDB binds a view again at each reference, and the steps",
        "-- read each other many times over (0.18 s of binding and optimising per evaluation through the",
        "-- views, 0.07 s as one statement).",
        "",
    ]
    return "\n".join(header) + body + ";\n"
