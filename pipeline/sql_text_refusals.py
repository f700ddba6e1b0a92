"""What the table macros refuse of their ``run`` and ``qrels`` arguments before reading a value:
in the command line's words, the refusals of its scan (:mod:`pipeline.io.trec`,
:mod:`pipeline.io.read`), for the inputs the macros read themselves.

- an argument that is no name or path (a number, null) and a format they do not read;
- a TREC file whose first line has the other kind's fields (a run given as qrels), a CSV line
  with more or fewer fields than its header, a column the input lacks (rather than DuckDB's
  binder error: ``sql/macro_inputs.sql`` reads the columns by name, a missing one null);
- a TREC line that does not parse (after the empty input, as the command line checks it) and
  a CSV value that is no number.

Each is a ``(condition, message)`` of :func:`pipeline.sql_refusals.refusals_query`'s ``case``,
over the views ``run_given`` and ``qrels_given`` and their one-pass statistics (``run_stats``,
``qrels_stats``: the counts and first rows of the conditions here, by name).
"""

from __future__ import annotations

from pipeline.io.csv_text import OLD_MAC_ENDINGS, TEXT_AFTER_QUOTE, repeated_column_message
from pipeline.io.names import DOC, LABEL, QUERY, SCORE
from pipeline.io.read import _COLUMN_ALIASES
from pipeline.sql_words import Sql, as_sql, marker
from pipeline.sql_words import sql_repr as _repr
from pipeline.sql_words import sql_text as _text
from pipeline.sql_words import variable as _variable

# The formats a macro reads an input in (``run_format``, ``qrels_format``; null: the name's
# ending tells): query_table's (a table or view name, a Parquet path, glob or list), and text.
INPUT_FORMATS = ("parquet", "trec", "csv", "tsv")
TEXT_FORMATS = ("trec", "csv", "tsv")
# the fields each kind of TREC line has, as the command line names them
TREC_LINES = {"run": "qid Q0 docno rank score tag", "qrels": "qid iter docno rel"}
# the command line's fixes (pass it as --qrels, and the run as --run) in a macro's arguments
PASS_AS_QRELS = "pass it as the second argument (qrels), and the run as the first (run)"
PASS_AS_RUN = "pass it as the first argument (run), and the judgments as the second (qrels)"
ROLE_COLUMNS = {"run": ("query_id", "doc_id", "score"), "qrels": ("query_id", "doc_id", "relevance")}
# The columns of each row read from text (sql/macro_text_rows.sql) the messages show.
LINE_COLUMNS = ("ndcg_file", "ndcg_line_number", "ndcg_line", "ndcg_fields", "ndcg_expected_fields")


def line_conditions(view: str, role: str) -> dict[str, str]:
    """The tests of a row read from text, by name: a TREC line that did not parse, a file's first
    line with the other kind's fields, a CSV line with a quote left open (an odd count of them: a
    quoted field running on to the next line, which the macros read as a row of its own, or a
    stray quote), a CSV line whose fields are not its header's."""
    other_shape = f"{view}.ndcg_fields = 4" if role == "run" else f"{view}.ndcg_fields >= 5"
    quotes = f"length({view}.ndcg_line) - length(replace({view}.ndcg_line, '\"', ''))"
    # the fields as sql/macro_text_inputs.sql cuts them cover the line but where a quoted field's
    # closing quote is followed by more than the separator (the cut skips to the next one)
    separator = f"if({_variable(f'{role}_read_as')} = 'tsv', chr(9), ',')"
    fields = (
        f'regexp_extract_all({separator} || {view}.ndcg_line, {separator} || \'("(?:[^"]|"")*"|[^\' '
        f"|| {separator} || ']*)', 0)"
    )
    covered = f"list_sum(list_transform({fields}, f -> length(f))) = length({view}.ndcg_line) + 1"
    # a CSV line's tests under a case: DuckDB computes both sides of an `and` on every row, and
    # these on a TREC file's lines were a fifth of the macros' time over it
    csv = f"{view}.ndcg_expected_fields is not null"
    return {
        "unparsed": f"coalesce({view}.ndcg_unparsed and {view}.ndcg_expected_fields is null, false)",
        "shape": f"coalesce({view}.ndcg_first and {view}.ndcg_expected_fields is null and {other_shape}, false)",
        "quote_open": f"coalesce(case when {csv} then ({quotes}) % 2 = 1 end, false)",
        "quote_after": f"coalesce(case when {csv} then not ({covered}) end, false)",
        "ragged": f"coalesce({view}.ndcg_fields <> {view}.ndcg_expected_fields, false)",
    }


def value_text_condition(view: str, value: str) -> str:
    """A CSV value that is no number (the command line reads such a column as text)."""
    return f"{view}.ndcg_value_text is not null and {view}.{value} is null"


def _line_repr(value: str) -> Sql:
    """A line as Python's ``repr`` shows it: quoted, its backslashes, tabs and other ASCII
    whitespace escaped."""
    escaped = f"replace({value}, '\\', '\\\\')"
    for character, shown in ((9, "\\t"), (11, "\\x0b"), (12, "\\x0c"), (13, "\\r")):
        escaped = f"replace({escaped}, chr({character}), {_text(shown)})"
    return Sql(
        f"case when contains({value}, '''') and not contains({value}, '\"') then '\"' || {escaped} || '\"' "
        f"else '''' || replace({escaped}, '''', '\\''') || '''' end"
    )


def line_place(struct: str) -> Sql:
    """``file:line: 'text'``, as :func:`pipeline.rules.describe_row` shows a row of a text file."""
    return Sql(
        f"{struct}.ndcg_file || ':' || cast({struct}.ndcg_line_number as varchar) || ': ' || "
        f"({_line_repr(f'{struct}.ndcg_line')})"
    )


def is_trec_row(struct: str) -> str:
    return f"({struct}.ndcg_line_number is not null and {struct}.ndcg_expected_fields is null)"


def argument_rules() -> list[tuple[str, Sql]]:
    """An argument that is no name or path, and a format the macros do not read."""
    rules: list[tuple[str, Sql]] = []
    for role in ("run", "qrels"):
        argument, read_as = _variable(role), _variable(f"{role}_read_as")
        rules.append(
            (
                f"{read_as} = 'none'",
                Sql(
                    f"{_text(role + ' must be a table or view name, or a path, glob or list of paths (text); got ')}"
                    f" || case when {argument} is null then 'null' "
                    f"else {_repr(argument)} || ' (' || typeof({argument}) || ')' end"
                ),
            )
        )
        rules.append(
            (
                f"not list_contains({list(INPUT_FORMATS)!r}, {read_as})",
                Sql(
                    f"'unknown {role}_format ' || {_repr(_variable(f'{role}_format'))} || "
                    + _text(
                        f"; expected one of {', '.join(INPUT_FORMATS)} (parquet: a table or view name too), or null "
                        "(the name's ending tells: .txt TREC, .csv, .tsv, anything else parquet or a table)"
                    )
                ),
            )
        )
    return rules


def scan_rules(role: str, name: Sql) -> list[tuple[str, Sql]]:
    """The refusals of the command line's scan of one input, in its order: a text file that is
    not there, a CSV file without a header or rows, the first TREC line of the other kind, a
    ragged CSV line, the missing columns."""
    stats = f"{role}_stats"
    shape_row, ragged_row, quote_row = f"{stats}.shape_row", f"{stats}.ragged_row", f"{stats}.quote_open_row"
    after_row = f"{stats}.quote_after_row"
    place = "{row}.ndcg_file || ':' || cast({row}.ndcg_line_number as varchar) || ': '"
    if role == "run":
        shape = Sql(
            place.format(row=shape_row)
            + " || "
            + _text(
                f"4 fields where run lines have 6 ({TREC_LINES['run']}): this looks like TREC qrels "
                f"({TREC_LINES['qrels']}); {PASS_AS_QRELS}"
            )
        )
    else:
        shape = Sql(
            place.format(row=shape_row)
            + f" || cast({shape_row}.ndcg_fields as varchar) || "
            + _text(
                f" fields where qrels lines have 4 ({TREC_LINES['qrels']}): this looks like a TREC run "
                f"({TREC_LINES['run']}); {PASS_AS_RUN}"
            )
        )
    ragged = Sql(
        place.format(row=ragged_row)
        + f" || cast({ragged_row}.ndcg_fields as varchar) || ' fields where the header has ' || "
        f"cast({ragged_row}.ndcg_expected_fields as varchar) || case when {ragged_row}.ndcg_fields > "
        f"{ragged_row}.ndcg_expected_fields then ' (a field too many; a value holding the separator must be quoted)' "
        "else ' (a field missing)' end"
    )
    quote_open = Sql(
        place.format(row=quote_row)
        + " || "
        + _text(
            "a double quote left open on the line (an odd number of them): the table macros read one line as one "
            "row, so a quoted field may not hold a line break, and a quote inside a field must be doubled "
            '(""); ndcg evaluate reads quoted line breaks'
        )
    )
    found = f"{role}_columns"
    # a name without a pattern's characters that read_text found no file of (it skips them silently)
    absent = (
        f"list_filter({found}.paths, p -> not regexp_matches(p, '[*?\\[{{]') "
        f"and not list_contains({found}.files_read, p))[1]"
    )
    is_text = f"{found}.is_text"
    return [
        (f"{is_text} and {absent} is not null", Sql(f"{absent} || ': no such file or directory'")),
        (
            f"{is_text} and len({found}.files_read) = 0",
            Sql(
                f"{name} || ': nothing matches this pattern (looked for ' || {_variable(f'{role}_read_as')} || "
                "' files)'"
            ),
        ),
        # a CSV or TSV file without a header line, or with nothing under it, as the command line reads them
        (
            f"{found}.has_header and {found}.headerless is not null",
            Sql(f"{found}.headerless || ': empty file (no header)'"),
        ),
        (
            f"{found}.has_header and {found}.old_mac_header is not null",
            Sql(f"{found}.old_mac_header.source_file || " + _text(f": {OLD_MAC_ENDINGS}")),
        ),
        (f"{found}.has_header and {found}.repeated_header is not null", _repeated_column(role)),
        (f"{found}.has_header and {found}.other_header is not null", _other_header(role)),
        (f"{found}.has_header and {stats}.row_count = 0", Sql(f"{name} || ': no rows (a header only)'")),
        (f"{stats}.shape > 0", shape),
        (f"{stats}.quote_open > 0", quote_open),
        (f"{stats}.quote_after > 0", Sql(place.format(row=after_row) + " || " + _text(TEXT_AFTER_QUOTE))),
        (f"{stats}.ragged > 0", ragged),
        (f"len({_missing(role)}) > 0", _missing_message(role, name)),
    ]


def columns_looked_up(role: str) -> str:
    """A one-row subquery ``<role>_columns`` over ``<role>_found_columns``: the columns found and
    the text files read, whether the input is CSV or TSV text, the columns it lacks (by name as
    query_table binds them, in any case, or exactly as a CSV header names them) and, for each, the
    found column it most likely is (another case, a name other tools give it). Computed once
    here and read by name by the rules, not written out in each (DuckDB binds each copy)."""
    found = f"{role}_found_columns.found"
    header = f"list_contains(['csv', 'tsv'], {_variable(f'{role}_read_as')})"
    missing = (
        f"list_filter({list(ROLE_COLUMNS[role])!r}, c -> not (case when {header} "
        f"then list_contains({found}, c) else list_contains(list_transform({found}, f -> lower(f)), c) end))"
    )
    guesses = []
    # the other input's value column too: a run given as qrels is told by its score column
    for column in ("query_id", "doc_id", "score", "relevance"):
        guesses.append(f"{_likely_column(found, column)} as guess_{column}")
    return (
        f"(select {found}, {role}_found_columns.files_read, {role}_found_columns.paths, "
        f"list_filter(list_sort({role}_found_columns.files_read), f -> not list_contains(list_transform("
        f"coalesce({role}_found_columns.headers, []), h -> h.source_file), f))[1] as headerless, "
        f"{role}_found_columns.headers[1] as first_header, list_filter({role}_found_columns.headers, "
        f"h -> h.header_fields <> {role}_found_columns.headers[1].header_fields)[1] as other_header, "
        # a file whose lines end in a carriage return alone is one line: its header holds the rest
        f"list_filter({role}_found_columns.headers, h -> contains(array_to_string(h.header_fields, ','), chr(13)))[1]"
        " as old_mac_header, "
        f"list_filter({role}_found_columns.headers, h -> len(list_distinct(h.header_fields)) < len(h.header_fields))[1]"
        " as repeated_header, "
        f"list_contains({list(TEXT_FORMATS)!r}, {_variable(f'{role}_read_as')}) as is_text, {header} as has_header, "
        f"{missing} as missing, {', '.join(guesses)} from {role}_found_columns) as {role}_columns"
    )


def _repeated_column(role: str) -> Sql:
    """The command line's words for the first file (by name) whose header names a column twice:
    the first such name in sorted order, and the header as written."""
    header = f"{role}_columns.repeated_header"
    fields = f"{header}.header_fields"
    name = f"list_sort(list_filter(list_distinct({fields}), x -> len(list_filter({fields}, y -> y = x)) > 1))[1]"
    written = f"array_to_string({fields}, if({_variable(f'{role}_read_as')} = 'tsv', chr(9), ','))"
    shown = f"replace({_repr(written)}, chr(9), '\\t')"  # a tab as Python's repr shows it
    words = repeated_column_message(marker("path"), marker("name"), marker("header"))
    return as_sql(
        words, {marker("path"): f"{header}.source_file", marker("name"): _repr(name), marker("header"): shown}
    )


def _other_header(role: str) -> Sql:
    """The command line's words for a file whose header is not the first file's (by name)."""
    found, separator = f"{role}_columns", f"if({_variable(f'{role}_read_as')} = 'tsv', chr(9), ',')"
    # quoted as Python's repr quotes a header of plain names (a full repr, escapes and all, was a
    # tenth of the macros' text, which DuckDB binds at each call)
    quote, possessive = _text("'"), _text("'s ")
    other, first = (
        f"{quote} || array_to_string({found}.{header}.header_fields, {separator}) || {quote}"
        for header in ("other_header", "first_header")
    )
    return Sql(
        f"{found}.other_header.source_file || ': header ' || {other} || ' differs from ' || "
        f"{found}.first_header.source_file || {possessive} || {first} || "
        "'; every file of one dataset must have the same columns in the same order'"
    )


def _likely_column(found: str, column: str) -> str:
    """The first of the ``found`` columns (a SQL list) that is likely ``column``: its own name or
    a name other tools give it, in any case (null: none)."""
    aliases = sorted({column, *_COLUMN_ALIASES[_canonical(column)]})
    return f"list_filter({found}, f -> list_contains({aliases!r}, lower(f)))[1]"


def _text_input(role: str) -> str:
    return f"{role}_columns.has_header"


def _found(role: str) -> str:
    return f"{role}_columns.found"


def _missing(role: str) -> str:
    return f"{role}_columns.missing"


def _guess(role: str, column: str) -> str:
    return f"{role}_columns.guess_{column}"


def _canonical(column: str) -> str:
    return {"query_id": QUERY, "doc_id": DOC, "score": SCORE, "relevance": LABEL}[column]


def _missing_message(role: str, name: Sql) -> Sql:
    """``missing column(s) ...; columns found: ...`` and how to fix it in the macros' terms: a view
    that renames the columns (the likely ones when every missing column has one), or the header."""
    missing, found = _missing(role), _found(role)
    listed = f"list_transform({{names}}, n -> {_repr('n')})"
    shown_missing = f"array_to_string({listed.format(names=missing)}, '; ')"
    shown_found = f"coalesce(nullif(array_to_string({listed.format(names=found)}, ', '), ''), 'none')"
    renamed = (
        "array_to_string(list_filter(["
        + ", ".join(
            f"case when list_contains({missing}, '{column}') then {_guess(role, column)} || ' as {column}' end"
            for column in ROLE_COLUMNS[role]
        )
        + "], g -> g is not null), ', ')"
    )
    every_guessed = " and ".join(
        f"(not list_contains({missing}, '{column}') or {_guess(role, column)} is not null)"
        for column in ROLE_COLUMNS[role]
    )
    columns = ", ".join(ROLE_COLUMNS[role])
    source = f"{_repr(_variable(role))}"
    table_fix = (
        f"case when {every_guessed} then '; to read them so: create view {role}_columns as select * rename (' || "
        f"{renamed} || ') from query_table(' || {source} || '), and pass ''{role}_columns''' "
        f"else '; the macros read the columns {columns} by name: select yours under these names in a view "
        f"(create view {role}_columns as select ... as query_id, ... from query_table(' || {source} || ')), "
        f"and pass ''{role}_columns''' end"
    )
    header_renamed = (
        "array_to_string(list_filter(["
        + ", ".join(
            f"case when list_contains({missing}, '{column}') then {_guess(role, column)} || ' to {column}' end"
            for column in ROLE_COLUMNS[role]
        )
        + "], g -> g is not null), ', ')"
    )
    csv_fix = (
        f"case when {every_guessed} then '; to read them so: rename ' || {header_renamed} || ' in the header' "
        f"else {_text(f'; the header must name the columns {columns}: rename them there')} end"
    )
    value, other = ("score", "relevance") if role == "run" else ("relevance", "score")
    other_found = f"{_guess(role, other)} is not null and {_guess(role, value)} is null"
    looks = (
        f"this looks like qrels (a label column, no score): {PASS_AS_QRELS}"
        if role == "run"
        else f"this looks like a run (a score column, no label): {PASS_AS_RUN}"
    )
    return Sql(
        f"{name} || ': missing column(s) ' || {shown_missing} || '; columns found: ' || {shown_found} || "
        f"case when list_contains({missing}, '{value}') and {other_found} then {_text('; ' + looks)} "
        f"when {_text_input(role)} then {csv_fix} else {table_fix} end"
    )


def unparsed_rule(role: str, name: Sql) -> tuple[str, Sql]:
    """A TREC line that does not parse: where, its text and how many, as the command line says it."""
    stats = f"{role}_stats"
    return (
        f"{stats}.unparsed > 0",
        Sql(
            f"{stats}.unparsed_row.ndcg_file || ':' || cast({stats}.unparsed_row.ndcg_line_number as varchar) || "
            f"': cannot read line ' || ({_line_repr(f'{stats}.unparsed_row.ndcg_line')}) || "
            f"{_text(' as ' + repr(TREC_LINES[role]) + ' (')} || cast({stats}.unparsed as varchar) || "
            f"' such line(s) in ' || {name} || ')'"
        ),
    )


# The variables sql/ndcg.sql names a column of each input with, by canonical column (inline
# labels: the qrels are the run's file, named by the run's variables and label_col).
SCRIPT_COLUMN_VARIABLES = {
    "run": {"query_id": "run_query_col", "doc_id": "run_doc_col", "score": "score_col"},
    "qrels": {"query_id": "qrels_query_col", "doc_id": "qrels_doc_col", "relevance": "qrels_label_col"},
    "inline": {"query_id": "run_query_col", "doc_id": "run_doc_col", "relevance": "label_col"},
}


def script_column_rules(role: str, name: Sql, looked_for: dict[str, Sql]) -> list[tuple[str, Sql]]:
    """sql/ndcg.sql's refusals of the files' columns: one the variables name and the file lacks;
    and a run's rank column under input-order ties, which the command line orders them by and
    the script does not read (its ties would follow the rows' arrival: another number, unsaid)."""
    rules = [script_missing_columns_rule(role, name, looked_for)]
    if role == "run":
        ranked = f"{_variable('ties')} = 'input-order' and list_contains({_variable('run_columns_found')}, 'rank')"
        words = (
            ": column 'rank' orders input-order ties on the command line, and sql/ndcg.sql reads no rank column "
            "(its ties would follow the rows as they arrive): rename or drop the column to order them so, or "
            "define the view run yourself with input_rank (sql/aligned_inputs.sql)"
        )
        rules.append((ranked, Sql(f"{name} || {_text(words)}")))
    return rules


def script_missing_columns_rule(role: str, name: Sql, looked_for: dict[str, Sql]) -> tuple[str, Sql]:
    """sql/ndcg.sql's refusal of a column the variables name and the file lacks (the files'
    columns found by sql/input_columns.sql), in the command line's words: the names looked for,
    the columns found, and the variable to set (each missing column's likely one, as the macros
    guess it, when every missing column has one)."""
    found = _variable(f"{role}_columns_found")
    wanted = "[" + ", ".join(looked_for.values()) + "]"
    missing = f"list_filter({wanted}, n -> not list_contains({found}, n))"
    shown_missing = f"array_to_string(list_transform({missing}, n -> {_repr('n')}), '; ')"
    shown_found = f"coalesce(nullif(array_to_string(list_transform({found}, f -> {_repr('f')}), ', '), ''), 'none')"

    def guess(column: str) -> str:
        return _likely_column(found, column)

    inline = f"{_variable('qrels_path')} is null"

    def setting(column: str) -> str:
        own = _text(SCRIPT_COLUMN_VARIABLES[role][column])
        if role == "qrels":
            own = f"case when {inline} then {_text(SCRIPT_COLUMN_VARIABLES['inline'][column])} else {own} end"
        return f"'SET VARIABLE ' || {own} || ' = ' || {_repr(guess(column))}"

    absent = {
        column: f"not list_contains({found}, {name_looked_for})" for column, name_looked_for in looked_for.items()
    }
    every_guessed = " and ".join(f"({test} = false or {guess(column)} is not null)" for column, test in absent.items())
    settings = (
        "array_to_string(list_filter(["
        + ", ".join(f"case when {test} then {setting(column)} end" for column, test in absent.items())
        + "], s -> s is not null), '; ')"
    )
    variables = ", ".join(SCRIPT_COLUMN_VARIABLES[role].values())
    generic = _text(f"; name the {role}'s columns with SET VARIABLE ({variables}; query_col and doc_col: both inputs')")
    return (
        f"len({missing}) > 0",
        Sql(
            f"{name} || ': missing column(s) ' || {shown_missing} || '; columns found: ' || {shown_found} || "
            f"case when {every_guessed} then '; to read them so: ' || {settings} else {generic} end"
        ),
    )
