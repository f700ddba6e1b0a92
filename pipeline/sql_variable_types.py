"""``sql/generated/variable_types.sql``: a variable of ``sql/ndcg.sql`` set to a value of the
wrong type (``SET VARIABLE ks = 5``, ``SET VARIABLE measures = 'ndcg,P'``) refused in words,
before any statement reads it.

The steps read each variable as the type the engines bind it as (the registry's); given another,
DuckDB stops on its binder's words in the middle of the script ("Invalid LIST argument during
lambda function binding"), naming neither the variable nor the fix. This check reads the values
through ``typeof`` and a cast to text alone, so it binds whatever they are; the duckdb CLI stops a
``.read`` file at its first error, so the script goes no further. A null is never refused here:
``SET VARIABLE x = NULL`` is the steps' own way to leave a variable unset.
"""

from __future__ import annotations

from pipeline.derived import DERIVED
from pipeline.registry import SQL_VARIABLES, Evaluation

# DuckDB's typeof of each number type a numeric variable takes, as a regular expression
_NUMBER = r"(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE"
_NUMBER += r"|DECIMAL\(\d+,\d+\))"


def _typed(pattern: str) -> str:
    return f"regexp_full_match({{type}}, '{pattern}')"


# what each of the registry's types reads as: (in words, the test of a value {value} of DuckDB type {type})
KINDS: dict[str, tuple[str, str]] = {
    "DOUBLE": ("a number", _typed(_NUMBER)),
    # a fractional value is refused by the value's own rule, in the registry's words
    "BIGINT": ("a whole number", _typed(_NUMBER)),
    # what DuckDB casts to a truth value, as the steps read it: 1, 0, 'true', 'yes', ...
    "BOOLEAN": ("true or false", "try_cast(cast({value} as varchar) as boolean) is not null"),
    "STRING": ("text in quotes", "{type} = 'VARCHAR'"),
    "ARRAY<BIGINT>": ("a list of whole numbers", _typed(_NUMBER + r"\[\]")),
    "ARRAY<STRING>": ("a list of names in quotes", "{type} = 'VARCHAR[]'"),
    "MAP<DOUBLE, DOUBLE>": ("a map of labels to gains", _typed(rf"MAP\({_NUMBER}, {_NUMBER}\)")),
    # a path, or a list of them (read_parquet takes either)
    "PATHS": ("a path in quotes, or a list of them", "{type} in ('VARCHAR', 'VARCHAR[]')"),
}

# The variables the script reads beside the registry's conventions, with their types
OTHER_VARIABLES: dict[str, str] = {
    "run_path": "PATHS",
    "qrels_path": "PATHS",
    "query_weights_path": "PATHS",
    **{
        f"{role}{column}_col": "STRING"
        for role in ("", "run_", "qrels_")
        for column in ("query", "doc", "score", "label")
        if not (role == "run_" and column in ("score", "label")) and not (role == "qrels_" and column == "score")
    },
    "missing_query_weight": "DOUBLE",
    "allow_fractional_labels": "BOOLEAN",
}

# a value to show in the fix where the registry's default is unset
_EXAMPLES = {"DOUBLE": 1.0, "BIGINT": 100, "PATHS": "path/to/file.parquet", "BOOLEAN": True}
_EXAMPLES |= {"ARRAY<BIGINT>": [10], "ARRAY<STRING>": ["ndcg", "P"]}


def _written(value: object) -> str:
    """A value as one writes it after ``SET VARIABLE x =``."""
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_written(item) for item in value) + "]"
    if isinstance(value, bool):
        return str(value).lower()
    return f"'{value}'" if isinstance(value, str) else repr(value)


# a column's name as the fix shows it, by what the column holds
_COLUMN_EXAMPLES = {"query": "qid", "doc": "docno", "score": "score", "label": "relevance", "doc_weight": "weight"}


def _example(name: str, type_name: str, default: object) -> str:
    if type_name == "MAP<DOUBLE, DOUBLE>":
        return "MAP {1: 3.0, 2: 9.0}"
    if name.endswith("_col"):
        held = name.removesuffix("_col").removeprefix("run_").removeprefix("qrels_")
        return _written(_COLUMN_EXAMPLES[held])
    return _written(default if default not in (None, ()) else _EXAMPLES[type_name])


def checked_variables() -> dict[str, str]:
    """``{variable: registry type}`` of every variable the script reads that a user sets."""
    own = {variable.name: variable.spark_type for variable in SQL_VARIABLES if variable.name not in DERIVED}
    return {**own, **OTHER_VARIABLES}


def refusal_words(name: str, type_name: str, default: object) -> str:
    """The SQL text of the refusal of ``name``: its kind, the value and its type, the fix."""
    value, type_text = f"getvariable('{name}')", f"typeof(getvariable('{name}'))"
    text = f"cast({value} as varchar)"  # bound whatever the value's type
    shown = f"if({type_text} = 'VARCHAR', '''' || {text} || '''', {text})"
    kind = KINDS[type_name][0]
    fix = f"SET VARIABLE {name} = {_example(name, type_name, default)}".replace("'", "''")
    return f"'{name} must be {kind}, got ' || {shown} || ' of type ' || {type_text} || ' ({fix})'"


def variable_types_sql() -> str:
    """The text of ``sql/generated/variable_types.sql``."""
    defaults = {variable.name: variable.value(Evaluation()) for variable in SQL_VARIABLES}
    cases = []
    for name, type_name in checked_variables().items():
        test = KINDS[type_name][1].format(type=f"typeof(getvariable('{name}'))", value=f"getvariable('{name}')")
        words = refusal_words(name, type_name, defaults.get(name))
        cases.append(f"    when getvariable('{name}') is not null and not {test}\n        then error({words})")
    header = [
        "-- variable_types.sql: the variables sql/ndcg.sql reads, each refused in words when set to a value of",
        "-- another type (SET VARIABLE ks = 5 for ks = [5]), before any statement reads them. Generated by",
        "-- pipeline/sql_variable_types.py from the registry (make generate); do not edit. sql/ndcg.sql reads it",
        "-- first; the duckdb CLI stops a .read file at its first error. A null is never refused here.",
        "",
    ]
    # set, not selected: a select would print its one row of null when nothing is refused
    checked = "SET VARIABLE variable_types_refused = (\n    select case\n" + "\n".join(cases) + "\n    end\n);\n"
    body = checked + "RESET VARIABLE variable_types_refused;\n"
    return "\n".join(header) + body
