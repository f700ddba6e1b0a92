"""A bound statement cut to what it needs, on the syntax tree (:mod:`pipeline.transpile` binds
the values, then cuts): the ``union all`` branches the options switch off, the CTEs no one
reads then, the left joins of CTEs that select nothing, and the columns a caller does not keep,
with everything only they read. Spark analyses every branch, column and CTE reference it is given;
DuckDB plans them too, but runs the statement as written (``sql/generated/per_query_composed.sql``).

Each cut keeps the result's meaning: tests run the cut and the whole statement in DuckDB for
every choice of the registry and find the same values and types.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from sqlglot import exp
from sqlglot.optimizer.pushdown_projections import pushdown_projections
from sqlglot.optimizer.qualify_columns import qualify_columns
from sqlglot.optimizer.simplify import simplify


def _constant(node: exp.Expr) -> exp.Expr | None:
    """The literal a node is (through casts), or None where it is not a constant."""
    while isinstance(node, exp.Cast):
        node = node.this
    return node if isinstance(node, (exp.Literal, exp.Boolean, exp.Null)) else None


def _folded(node: exp.Expr) -> exp.Expr:
    """``coalesce``, ``is null`` and ``is distinct from`` over bound values, folded: the forms
    the SQL switches with, which sqlglot's simplifier leaves alone."""
    if isinstance(node, exp.Coalesce):
        arguments = [node.this, *node.expressions]
        while len(arguments) > 1 and isinstance(_constant(arguments[0]), exp.Null):
            arguments.pop(0)
        first = _constant(arguments[0])
        if first is not None and not isinstance(first, exp.Null):
            return arguments[0]
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        value = _constant(node.this)
        if value is not None:
            return exp.Boolean(this=isinstance(value, exp.Null))
    if isinstance(node, exp.ArrayContains):
        values, needle = _string_array(node.this), _constant(node.expression)
        if values is not None and isinstance(needle, exp.Literal) and needle.is_string:
            return exp.Boolean(this=needle.this in values)
    if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        left, right = _constant(node.this), _constant(node.expression)
        if isinstance(left, exp.Literal) and isinstance(right, exp.Literal) and left.is_string and right.is_string:
            return exp.Boolean(this=(left.this == right.this) == isinstance(node, exp.NullSafeEQ))
    return node


def _string_array(node: exp.Expr) -> list[str] | None:
    """The texts of a bound list of text (through casts and ``coalesce``), or None where the
    node is not one: the lists the SQL asks with ``list_contains`` (measures, signals)."""
    while isinstance(node, exp.Cast):
        node = node.this
    if isinstance(node, exp.Coalesce):
        for argument in (node.this, *node.expressions):
            if not isinstance(_constant(argument), exp.Null):
                return _string_array(argument)
        return None
    if isinstance(node, exp.Array) and all(
        isinstance(item, exp.Literal) and item.is_string for item in node.expressions
    ):
        return [item.this for item in node.expressions]
    return None


def _always(condition: exp.Expr) -> bool | None:
    """True or False where a condition holds for every row or for none, else None."""
    folded = condition.copy()
    for node in reversed(list(folded.walk())):  # every node after its children
        replacement = _folded(node)
        if replacement is not node:
            if node is folded:
                folded = replacement
            else:
                node.replace(replacement)
    result = simplify(folded)
    return result.this if isinstance(result, exp.Boolean) else None


def pruned(tree: exp.Expr, *, cut_joins: bool = True) -> exp.Expr:
    """The tree without the ``union all`` branches that select no row whatever the data, and
    without the CTEs no one reads then.

    A branch selects no row when its ``where`` is false once the variables are bound, or when
    it only reads (from, or as the left side of a join) a CTE that selects none and does not
    aggregate it into one row. A left branch goes only where the right one names the same
    columns, so the result's columns never change. With ``cut_joins``, the left joins of such
    CTEs go too (:func:`_without_left_joins_of_nothing`).

    >>> import sqlglot
    >>> sql = "with a as (select 1 as x), b as (select 2 as x), c as (select x from a where 'zero' = 'drop') "
    >>> sql += "select x from c union all select x from b where coalesce(null, true)"
    >>> pruned(sqlglot.parse_one(sql)).sql()
    'WITH b AS (SELECT 2 AS x) SELECT x FROM b WHERE COALESCE(NULL, TRUE)'
    """
    empty: set[str] = set()
    ctes = list(tree.find_all(exp.CTE))
    # each where's verdict, by node: the loop below asks again after each round, nothing changes in between
    verdicts: dict[int, bool | None] = {}
    while True:  # a CTE is empty when what it reads is: until no more are found
        found = {
            cte.alias_or_name
            for cte in ctes
            if cte.alias_or_name not in empty and _selects_nothing(cte.this, empty, verdicts)
        }
        if not found:
            break
        empty |= found
    for union in reversed(list(tree.find_all(exp.Union))):
        modifiers = {key for key, value in union.args.items() if value} - {"this", "expression", "distinct", "with_"}
        if type(union) is not exp.Union or union.args.get("distinct") is not False or modifiers:
            continue
        left, right = union.this, union.expression
        # a union's columns are named by its left side: the right one can go whatever it names
        for dead, kept in ((right, left), (left, right)):
            if _selects_nothing(dead, empty, verdicts) and (dead is right or dead.named_selects == kept.named_selects):
                kept.set("with_", union.args.get("with_") or kept.args.get("with_"))
                if union is tree:
                    tree = kept
                else:
                    union.replace(kept)
                break
    if cut_joins:
        _without_left_joins_of_nothing(tree, empty)
    return _without_unread_ctes(tree)


def _selects_nothing(query: exp.Expr, empty: set[str], verdicts: dict[int, bool | None]) -> bool:
    if type(query) is exp.Union and query.args.get("distinct") is False:
        return _selects_nothing(query.this, empty, verdicts) and _selects_nothing(query.expression, empty, verdicts)
    if not isinstance(query, exp.Select):
        return False
    where = query.args.get("where")
    if where is not None:
        if id(where.this) not in verdicts:
            verdicts[id(where.this)] = _always(where.this)
        if verdicts[id(where.this)] is False:
            return True
    source = query.args.get("from_")
    table = source.this if source is not None else None
    if not (isinstance(table, exp.Table) and not table.db and table.name in empty):
        return False
    # only right and full joins keep rows of what an empty left side joins; an aggregate
    # without group by still gives one row (a window's does not: it is one per row)
    joins_keep_nothing = all(join.side not in ("RIGHT", "FULL") for join in query.args.get("joins") or [])
    aggregates = query.args.get("group") is None and any(
        aggregate.find_ancestor(exp.Window) is None
        for select in query.selects
        for aggregate in select.find_all(exp.AggFunc)
    )
    return joins_keep_nothing and not aggregates


def _without_left_joins_of_nothing(tree: exp.Expr, empty: set[str]) -> None:
    """``a left join e on ...``, where the CTE ``e`` selects no row, becomes ``a`` with every
    column of ``e`` a null of its type: the same rows, values and types. Done only where every
    column of the query names its table, no star reads ``e`` (otherwise which columns are
    ``e``'s is not known here), and each column of ``e`` the query selects as it is has a type
    sqlglot infers as a number or a truth value (a null alone has no type: Spark's void, which
    Parquet refuses; an id's type is the input's). The measures the options leave out are
    joined so, and without their CTEs Spark plans a fraction of the statement."""
    types: dict[str, dict[str, exp.DataType]] | None = None
    for select in list(tree.find_all(exp.Select)):
        for join in list(select.args.get("joins") or []):
            table = join.this
            if not (
                isinstance(table, exp.Table)
                and not table.db
                and table.name in empty
                and join.side == "LEFT"
                and not join.args.get("kind")
            ):
                continue
            own = list(_own_nodes(select))
            columns = [node for node in own if isinstance(node, exp.Column)]
            if any(isinstance(node, exp.Star) for node in own) or any(
                isinstance(column.this, exp.Star) or not column.table for column in columns
            ):
                continue
            of_e = [column for column in columns if column.table == table.alias_or_name]
            if types is None:
                types = _cte_column_types(tree, empty)
            nulls = [_typed_null(types.get(table.name, {}).get(column.name)) for column in of_e]
            if any(null is None and _selected_bare(column, select) for column, null in zip(of_e, nulls, strict=True)):
                continue
            for column, null in zip(of_e, nulls, strict=True):
                named = column.parent is select  # selected under its own name, which it keeps
                column.replace(exp.alias_(null, column.name) if named and null else null or exp.Null())
            join.pop()


# The types the portable SQL reads its inputs as (the columns of the views sql/measures/per_query.sql reads), for
# typing the nulls that stand for a pruned join's columns. Ids take the input's own type, so a
# column typed as text here is never replaced (:data:`NULL_TYPES`).
INPUT_TYPES: dict[str, object] = {
    "run": {
        "query_id": "VARCHAR",
        "doc_id": "VARCHAR",
        "score": "DOUBLE",
        "arrival": "BIGINT",
        "input_rank": "DOUBLE",
        "doc_weight": "DOUBLE",
    },
    "qrels": {"query_id": "VARCHAR", "doc_id": "VARCHAR", "relevance": "DOUBLE"},
}
NULL_TYPES = frozenset(
    {exp.DataType.Type.DOUBLE, exp.DataType.Type.BIGINT, exp.DataType.Type.INT, exp.DataType.Type.BOOLEAN}
)


def _cte_column_types(tree: exp.Expr, names: set[str]) -> dict[str, dict[str, exp.DataType]]:
    """``{cte: {column: type}}`` of the CTEs ``names`` and those they read, as sqlglot infers
    them over :data:`INPUT_TYPES`; empty where the statement reads other tables or cannot be
    typed. A CTE's types depend only on what it reads, so the rest of the statement is left
    out: typing all of it took most of the time the cut costs."""
    from sqlglot.optimizer.annotate_types import annotate_types
    from sqlglot.optimizer.qualify import qualify

    query = tree.expression if isinstance(tree, exp.Create) else tree
    ctes = query.args["with_"].expressions if query.args.get("with_") else []
    by_name = {cte.alias_or_name: cte for cte in ctes}
    needed, waiting = set(), [name for name in names if name in by_name]
    while waiting:
        name = waiting.pop()
        if name not in needed:
            needed.add(name)
            read = (table for table in by_name[name].find_all(exp.Table) if not table.db)
            waiting += [table.name for table in read if table.name in by_name]
    if not needed:
        return {}
    last = next(cte.alias_or_name for cte in reversed(ctes) if cte.alias_or_name in needed)
    subset = exp.With(expressions=[cte.copy() for cte in ctes if cte.alias_or_name in needed])
    query = exp.select("*").from_(last)
    query.set("with_", subset)
    try:
        qualified = qualify(query, schema=INPUT_TYPES, dialect="duckdb", validate_qualify_columns=False)
        annotated = annotate_types(qualified, schema=INPUT_TYPES, dialect="duckdb")
    except Exception:  # any failure to type means no cut: slower to plan, never wrong
        return {}
    ctes = annotated.args["with_"].expressions if annotated.args.get("with_") else []
    return {cte.alias_or_name: {item.alias_or_name: item.type for item in cte.this.selects} for cte in ctes}


def _typed_null(data_type: exp.DataType | None) -> exp.Expr | None:
    if data_type is None or data_type.this not in NULL_TYPES:
        return None
    return exp.cast(exp.Null(), data_type.copy())


def _selected_bare(column: exp.Column, select: exp.Select) -> bool:
    """Whether the query selects the column as it is (named, or under an alias of its own)."""
    node: exp.Expr = column
    if isinstance(node.parent, exp.Alias):
        node = node.parent
    return node.parent is select and node.arg_key == "expressions"


def _own_nodes(select: exp.Select) -> Iterator[exp.Expr]:
    """The nodes of a query, without those of the queries nested in it."""
    nested = (exp.Select, exp.Subquery, exp.Union, exp.CTE)
    for node in select.walk(prune=lambda node: node is not select and isinstance(node, nested)):
        if node is select or not isinstance(node, nested):
            yield node


def _without_unread_ctes(tree: exp.Expr) -> exp.Expr:
    while True:
        read = {table.name for table in tree.find_all(exp.Table) if not table.db}
        unread = [cte for cte in tree.find_all(exp.CTE) if cte.alias_or_name not in read]
        if not unread:
            return tree
        for cte in unread:
            cte.pop()


def narrowed(tree: exp.Expr, keep: Sequence[str], known: Mapping[str, Sequence[str]]) -> exp.Expr:
    """The statement's query selecting the columns ``keep``, in that order, and every CTE and
    subquery selecting only the columns read after it (sqlglot's ``pushdown_projections``, over the
    query with its columns qualified). Spark analyses and optimises every column it is given:
    the per-query statement of a default evaluation carries the companion measures' chain of
    columns, which the engine leaves out (planning a 3-row evaluation took Spark's rules 1.05 s
    with them, 0.49 s without). The stars must be spelled out (:func:`expanded_stars`); the
    tables' columns are ``known``.

    >>> import sqlglot
    >>> sql = "with m as (select q, a, b, a + b as c from t) select m.q, m.a, m.c from m"
    >>> narrowed(sqlglot.parse_one(sql), ["a", "q"], {"t": ["q", "a", "b"]}).sql()
    'WITH m AS (SELECT t.q AS q, t.a AS a FROM t) SELECT m.a AS a, m.q AS q FROM m'

    A column that makes rows (``unnest``, ``explode``) stays, read or not: the rows it makes are
    read.

    >>> sql = "with m as (select q, unnest(l) as e, a from t) select m.q from m"
    >>> narrowed(sqlglot.parse_one(sql, read="duckdb"), ["q"], {"t": ["q", "l", "a"]}).sql("duckdb")
    'WITH m AS (SELECT t.q AS q, UNNEST(t.l) AS e FROM t) SELECT m.q AS q FROM m'
    """
    query = tree.expression if isinstance(tree, exp.Create) else tree
    if not isinstance(query, exp.Select):
        # the caller's mistake, not the user's: the statements columns are left out of are selects
        raise ValueError(f"cannot leave columns out of {query.sql('duckdb')[:80]}")
    # qualified first (the final select's star spelled out): pushdown_projections finds what each
    # scope reads by its columns' tables. Not sqlglot's whole qualify, which also lower-cases
    # every unquoted name (the measures G, Rprec and set_F would be renamed).
    schema: dict[str, object] = {table: dict.fromkeys(names, "UNKNOWN") for table, names in known.items()}
    qualified = qualify_columns(query, schema, dialect="duckdb")
    by_name = {item.alias_or_name: item for item in qualified.selects}
    missing = [name for name in keep if name not in by_name]
    if missing:
        raise ValueError(f"the statement has no column {', '.join(missing)}: it has {', '.join(by_name)}")
    qualified.set("expressions", [by_name[name] for name in keep])
    narrowed = pushdown_projections(qualified)
    if isinstance(tree, exp.Create):
        tree.set("expression", narrowed)
        return _without_unread_ctes(tree)
    return _without_unread_ctes(narrowed)
