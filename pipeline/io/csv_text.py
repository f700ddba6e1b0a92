"""CSV and TSV text as the command line reads it: each column typed from every row as Polars
infers a type, one header for the files of a dataset, blank lines no rows, and what stops
Polars' reader (a ragged line, a stray quote, old Mac line endings, bytes that are not UTF-8)
said with the file and line."""

from __future__ import annotations

import csv
import re
from collections.abc import Collection

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.io.names import COLLECT_ENGINE
from pipeline.io.objects import error_text

# Polars' inference of a CSV column's type from its texts (checked against Polars' own on generated
# values: tests/test_reading.py), written out to apply it to every row in one streaming pass; the
# table macros refuse by the same patterns (pipeline/sql_refusals.py), each matching a whole text
CSV_TRUTH_VALUE = "(?i:true|false)"
CSV_INTEGER = "-?[0-9]+"
CSV_FLOAT = "[-+]?(([0-9]*[.][0-9]+)([eE][-+]?[0-9]+)?|inf|NaN|([0-9]+)[eE][-+]?[0-9]+|[0-9]+[.])"


def _whole(pattern: str) -> str:
    return f"^(?:{pattern})$"


def column_types(texts: pl.LazyFrame, header: list[str], ids: Collection[str]) -> pl.Schema:
    """Each column's type as Polars infers it, from every row: a truth value, an integer (Int128
    beyond Int64; text beyond Int128, which Polars fails to parse), a float, or text (also a
    column with no value), the ids text; but integers within and beyond Int64 beside floats are
    floats, where Polars makes them text. Polars' own inference from every row held about five
    times the file in memory (222 MB for a 45 MB run) and took 0.6 s on 2M rows; from its first
    100 rows (its default), a score of 2.5 after 100 integers failed to parse, and a +5 there was
    read as 5, where the SQL front, reading the same text, reads every row."""
    typed = [name for name in header if name not in ids]
    checks = []
    for name in typed:
        column = pl.col(name)
        given = column.is_not_null() & (column != "")  # a quoted empty field ("") is none either
        integer = column.str.contains(_whole(CSV_INTEGER))
        checks += [
            given.any().alias(f"{name}:any"),
            (column.str.contains(_whole(CSV_TRUTH_VALUE)) | ~given).all().alias(f"{name}:bool"),
            (integer | ~given).all().alias(f"{name}:int"),
            (column.str.to_integer(strict=False).is_not_null() | ~given).all().alias(f"{name}:int64"),
            (column.str.to_integer(dtype=pl.Int128, strict=False).is_not_null() | ~given).all().alias(f"{name}:int128"),
            (integer | column.str.contains(_whole(CSV_FLOAT)) | ~given).all().alias(f"{name}:float"),
        ]
    found = texts.select(checks).collect(engine=COLLECT_ENGINE).row(0, named=True) if checks else {}
    types: dict[str, pl.DataType | type[pl.DataType]] = {}
    for name in header:
        if name in ids or not found[f"{name}:any"]:
            types[name] = pl.String
        elif found[f"{name}:bool"]:
            types[name] = pl.Boolean
        elif found[f"{name}:int"]:
            types[name] = pl.Int64 if found[f"{name}:int64"] else pl.Int128 if found[f"{name}:int128"] else pl.String
        else:
            types[name] = pl.Float64 if found[f"{name}:float"] else pl.String
    return pl.Schema(types)


def files_and_header(name: str, files: list[str], separator: str) -> tuple[list[str], list[str]]:
    """The files holding rows and their common header. Polars names the columns of every file
    after the first file's header, so a file whose header differs would be read with its
    columns swapped: refused. A file with a header and no rows adds nothing and is left out
    (Polars would type every column of it as text)."""
    header: list[str] | None = None
    with_rows = []
    for path in files:
        this, has_rows = _csv_header(path, separator)
        if header is None:
            header = this
        elif this != header:
            raise InvalidInput(
                f"{path}: header {separator.join(this)!r} differs from {files[0]}'s {separator.join(header)!r}; "
                "every file of one dataset must have the same columns in the same order"
            )
        if has_rows:
            with_rows.append(path)
    if not with_rows:
        raise InvalidInput(f"{name}: no rows (a header only)")
    assert header is not None
    return with_rows, header


def _csv_header(path: str, separator: str) -> tuple[list[str], bool]:
    """The header (read by Python's csv module: Polars keeps the doubled quotes of a quoted
    header name, so a name holding a quote could not be found) and whether a row follows.
    A UTF-8 byte-order mark, as spreadsheet exports write, is not part of the first name."""
    try:
        with open(path, "rb") as raw:
            start = raw.read(4)
        for mark, encoding in _OTHER_ENCODINGS:
            if start.startswith(mark):
                raise InvalidInput(f"{path}: the file is {encoding} (byte-order mark); save it as UTF-8")
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle, delimiter=separator)
            header = next(reader, [])
            has_rows = any(row for row in reader)
    except UnicodeDecodeError:
        raise InvalidInput(non_utf8_line([path]) or f"{path}: not UTF-8") from None
    except (OSError, csv.Error) as error:
        raise InvalidInput(f"{path}: cannot read the header: {error_text(error)}") from None
    if not header:
        raise InvalidInput(f"{path}: empty file (no header)")
    repeated = sorted({name for name in header if header.count(name) > 1})
    if repeated:
        raise InvalidInput(repeated_column_message(path, repr(repeated[0]), repr(separator.join(header))))
    return header, has_rows


def repeated_column_message(path: str, name_shown: str, header_shown: str) -> str:
    return f"{path}: the header names column {name_shown} more than once: {header_shown}"


_OTHER_ENCODINGS = (
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)


def check_rows(
    name: str, fmt: str, files: list[str], frame: pl.LazyFrame, header: list[str], separator: str, wanted: list[str]
) -> pl.LazyFrame:
    """Every row has the header's number of fields. Polars only notices a field too many in a
    column it parses, so the checks that read three columns would never see it: all columns
    are parsed once here, and the line is looked for (in Python, only when something is
    wrong) to name it. The frame is given back without the rows of blank lines (Polars reads
    one as a row of nulls; CSV readers, Python's and the table macros', skip it): a file
    ending in an empty line was refused for a null id. ``wanted``: the header's columns that
    are read (their nulls send the file to Python's reader)."""
    if not wanted:
        return frame  # none of the columns: the missing columns are reported by name, not a row
    try:
        # every column parsed (a projection of a few would skip the end of a ragged line)
        nulls = frame.select(pl.all().null_count(), pl.len().alias("\x00rows")).collect(engine=COLLECT_ENGINE)
        problem: str | None = None
        suspicious = any(nulls.select(wanted).row(0))
        polars_rows = nulls["\x00rows"][0]
    except pl.exceptions.PolarsError as error:
        problem, suspicious = error_text(error), True
    if not suspicious:
        return frame
    # ragged lines can also be read without an error (a field missing becomes a null)
    blank_rows, rows_before = [], 0
    for path in files:
        blank, rows = _raise_on_ragged_line(path, header, separator)
        blank_rows += [rows_before + row for row in blank]
        rows_before += rows
    if problem is not None:
        where = csv_text_problem(files, separator)
        raise InvalidInput(where or f"{name}: cannot read as {fmt}: {problem}")
    # Python's rows and Polars' apart (a \r\r\n is a blank row to the one, not to the other): no
    # row is dropped, and the nulls are refused
    if not blank_rows or rows_before != polars_rows:
        return frame
    # and only where Polars read nulls alone
    blank_row = pl.int_range(pl.len()).is_in(blank_rows) & pl.all_horizontal(pl.all().is_null())
    return frame.filter(~blank_row)


def _raise_on_ragged_line(path: str, header: list[str], separator: str) -> tuple[list[int], int]:
    try:
        return _ragged_lines(path, header, separator)
    except UnicodeDecodeError:
        raise InvalidInput(non_utf8_line([path]) or f"{path}: not UTF-8") from None


def _ragged_lines(path: str, header: list[str], separator: str) -> tuple[list[int], int]:
    """Raise at the first row of another number of fields than the header's; else the indexes
    of the blank rows among the rows under the header, and how many rows there are."""
    blank, reader_rows = [], 0
    with open(path, encoding="utf-8-sig", newline="") as handle:
        reader = csv.reader(handle, delimiter=separator)
        next(reader, None)
        for index, row in enumerate(reader):
            reader_rows = index + 1
            if not row:
                blank.append(index)
            elif len(row) != len(header):
                what = "a field too many" if len(row) > len(header) else "a field missing"
                hint = "; a value holding the separator must be quoted" if len(row) > len(header) else ""
                raise InvalidInput(
                    f"{path}:{reader.line_num}: {len(row)} fields where the header has {len(header)} ({what}{hint})"
                )
    return blank, reader_rows


_STRAY_QUOTE = 'a double quote inside a field that is not quoted; quote the field and double the quote ("a""b")'
# the table macros refuse these two in the same words (pipeline/sql_text_refusals.py)
OLD_MAC_ENDINGS = "its lines end in a carriage return alone (old Mac endings); save it with \\n line endings"
TEXT_AFTER_QUOTE = 'text after a quoted field\'s closing quote; quote the whole field ("a""b")'


def csv_text_problem(paths: list[str], separator: str) -> str | None:
    """What stopped Polars' CSV reader, said plainly: lines ending in a carriage return alone, a
    double quote inside a field that is not quoted (Polars calls it malformed), or text after a
    quoted field's closing quote. Read a line at a time, only once the reader has failed."""
    for path in paths:
        try:
            with open(path, encoding="utf-8-sig", errors="replace", newline="") as handle:
                start = handle.read(1 << 16)
                if "\r" in start and "\n" not in start:
                    return f"{path}: {OLD_MAC_ENDINGS}"
                handle.seek(0)
                quoted = False  # inside a quoted field, which may hold line breaks
                sep = re.escape(separator)
                field = rf'(?: *"(?:[^"]|"")*"|[^"{sep}\r\n]*)'
                well_quoted = re.compile(rf"{field}(?:{sep}{field})*\r?\n?")
                for number, line in enumerate(handle, 1):
                    if quoted or ('"' in line and not well_quoted.fullmatch(line)):
                        quoted, fault = _quotes(line, separator, quoted)
                        if fault:
                            return f"{path}:{number}: {fault}"
        except OSError:
            continue
    return None


def _quotes(line: str, separator: str, quoted: bool) -> tuple[bool, str | None]:
    """Walk one line's quotes: whether it ends inside a quoted field, and what is wrong with it."""
    field_start, index = not quoted, 0
    while index < len(line):
        character = line[index]
        if quoted:
            if character == '"' and line[index + 1 : index + 2] == '"':
                index += 1  # a doubled quote inside a quoted field
            elif character == '"':
                quoted, after = False, line[index + 1 : index + 2]
                if after not in ("", separator, "\n", "\r"):
                    return False, TEXT_AFTER_QUOTE
        elif character == '"':
            if not field_start:
                return False, _STRAY_QUOTE
            quoted = True
        elif character == separator:
            field_start = True
        elif character != " ":  # a field may begin with spaces before its quote, as Polars reads it
            field_start = False
        index += 1
    return quoted, None


def non_utf8_line(paths: list[str]) -> str | None:
    """``file:line: byte 0xff at column 4 is not UTF-8; save the file as UTF-8`` for the first
    bad byte in text ``paths``, or None. Read line by line only once a reader has failed."""
    for path in paths:
        try:
            with open(path, "rb") as handle:
                for number, line in enumerate(handle, 1):
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as error:
                        byte = line[error.start]
                        return (
                            f"{path}:{number}: byte 0x{byte:02x} at column {error.start + 1} is not UTF-8; "
                            "save the file as UTF-8"
                        )
        except OSError:
            continue
    return None
