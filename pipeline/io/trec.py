"""TREC text files: run lines (``qid Q0 docno rank score tag``) and qrels lines (``qid iter
docno rel``), cut into fields as trec_eval cuts them, comment lines skipped as it skips them,
and the shape of a file told from its first line (a run given as qrels). Read by
:func:`pipeline.io.read.scan_run` and :func:`~pipeline.io.read.scan_qrels`.
"""

from __future__ import annotations

import mmap
import os
import re
from dataclasses import dataclass

import polars as pl

from pipeline.errors import InvalidInput
from pipeline.io.location import local_path
from pipeline.io.names import FILE, LINE, LINE_NUMBER

# Fields are split as trec_eval splits them: on C's isspace in its default locale, the ASCII
# space, tab, newline, vertical tab, form feed and carriage return; any other character (a
# no-break space, an ideographic space) is part of a field, as it is to trec_eval.
TREC_SPACE = " \t\n\x0b\x0c\r"
_SPACE, _FIELD = r"[ \t\n\x0B\x0C\r]", r"[^ \t\n\x0B\x0C\r]"
_TREC_RUN = rf"^{_SPACE}*({_FIELD}+){_SPACE}+{_FIELD}+{_SPACE}+({_FIELD}+){_SPACE}+{_FIELD}+{_SPACE}+({_FIELD}+)"
# qid Q0 docno rank score [tag ...]; qrels: qid iter docno rel, exactly: a run line (qid Q0
# docno rank score tag) would otherwise read as qrels with the rank taken for the label
_TREC_QRELS = rf"^{_SPACE}*({_FIELD}+){_SPACE}+({_FIELD}+){_SPACE}+({_FIELD}+){_SPACE}+({_FIELD}+){_SPACE}*$"
_BOM = "\ufeff"


@dataclass(frozen=True)
class TrecLines:
    """How the lines of one kind of TREC file are cut: ``pattern``, the regular expression
    whose groups are the fields kept (any line); ``kept``, their positions among the fields
    and ``fields``, how many a line has (at least, or exactly), when every line of the files
    is single-spaced (:func:`_single_spaced`) and a split on the space gives the fields."""

    pattern: str
    kept: tuple[int, ...]
    fields: int
    exactly: bool
    qrels: bool


RUN_LINES = TrecLines(_TREC_RUN, (0, 2, 4), 5, exactly=False, qrels=False)
# a qrels line's second field is kept: ndeval's subtopic (trec_eval reads and ignores it)
QRELS_LINES = TrecLines(_TREC_QRELS, (0, 1, 2, 3), 4, exactly=True, qrels=True)
# what a single-spaced file (one ASCII space between fields, none before or after) never holds:
# bytes, found in place, and a space beside a space or a line's end, found line by line
_NOT_SINGLE_SPACED = (b"\t", b"\x0b", b"\x0c", b"\r")
_SPACES_ASTRAY = (b"  ", b"\n ", b" \n")
# Comment lines, skipped as trec_eval 10.0 skips them (its get_trec_results.c and get_qrels.c):
# in a run, a line whose first character after leading blanks (C's isspace, ASCII only) is ``#``;
# in qrels, only a ``#`` in the first column (a qrels line that begins with blanks and then ``#``
# is data to trec_eval, as here). trec_eval skips one comment line at a time
# before parsing a qrels line, so it reads the second of two consecutive ones as data (or fails
# on it as malformed); here every comment line is skipped.
_TREC_RUN_COMMENT = rf"^{_SPACE}*#"
_TREC_QRELS_COMMENT = r"^#"


# the fields the CSV reader keeps of a single-spaced line: a file with a line of more (a tag or
# a comment with spaces) is cut by the regular expression, which keeps the whole line's text
_READ_FIELDS = [f"_field_{i}" for i in range(8)]
# Bytes that leave a line whole when Polars reads the file with one as the separator: the first
# that the file does not hold (a line holding it would be cut in two: refused, not read so).
_WHOLE_LINE_SEPARATORS = tuple(chr(byte) for byte in (*range(0x1F, 0x0D, -1), *range(0x01, 0x09)))


def whole_line_separator(path: str) -> str:
    """A byte of :data:`_WHOLE_LINE_SEPARATORS` that ``path`` does not hold (memchr over the
    mapped file: 0.006 s for 65 MB)."""
    try:
        with open(local_path(path), "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return _WHOLE_LINE_SEPARATORS[0]
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                for separator in _WHOLE_LINE_SEPARATORS:
                    if data.find(separator.encode()) < 0:
                        return separator
    except (OSError, ValueError):  # unreadable here: the scan says why
        return _WHOLE_LINE_SEPARATORS[0]
    raise InvalidInput(
        f"{path}: cannot read as trec: it holds every control byte from 0x01 to 0x08 and 0x0e to 0x1f, "
        "which a TREC file does not"
    )


def _single_spaced(path: str, separator: str = _WHOLE_LINE_SEPARATORS[0]) -> bool:
    """Whether every field of the file is one ASCII space from the next, with no other
    whitespace, no byte-order mark and no line of more fields than the CSV reader keeps: then
    the CSV reader, the space its separator, cuts each line as trec_eval does
    (:func:`_fields_of_single_spaced`). Searched in place (mapped); ``separator`` is a byte the
    file does not hold (:func:`whole_line_separator`)."""
    try:
        with open(local_path(path), "rb") as handle:
            if os.fstat(handle.fileno()).st_size == 0:
                return False
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
                edges = data[:3] != b"\xef\xbb\xbf" and data[:1] != b" " and data[-1:] != b" "
                if not edges or any(data.find(sequence) >= 0 for sequence in _NOT_SINGLE_SPACED):
                    return False
                try:
                    return not _lines_astray(path, separator)
                except pl.exceptions.PolarsError:  # not UTF-8: searched here (its lines are refused)
                    return not any(data.find(sequence) >= 0 for sequence in _SPACES_ASTRAY)
    except (OSError, ValueError):  # unreadable here: the scan says why
        return False


def _lines_astray(path: str, separator: str) -> bool:
    """Whether a line of the file holds two spaces in a row, begins or ends with one, or holds
    more fields than :data:`_READ_FIELDS`. Polars reads the lines in 0.07 s over a 65 MB run,
    where Python's search stopped at every space or line's end, 0.08 s for each of the three
    (memchr finds a single byte in 0.006 s)."""
    line = pl.col(LINE)
    astray = line.str.contains("  ", literal=True) | line.str.starts_with(" ") | line.str.ends_with(" ")
    astray = astray | (line.str.count_matches(" ", literal=True) >= len(_READ_FIELDS))
    lines = pl.scan_csv(
        path, glob=False, has_header=False, separator=separator, quote_char=None, schema={LINE: pl.String}
    )
    return bool(lines.select(astray.any()).collect(engine="streaming").item())


_CONTENT = "_content"  # neither blank nor a comment


def _fields_of_single_spaced(path: str, lines_of: TrecLines) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """A single-spaced file's lines read by the CSV reader (a third of the regular expression's
    CPU time, measured on 2M run lines), each line's text joined back from its fields."""
    fields = pl.scan_csv(
        path,
        glob=False,
        has_header=False,
        separator=" ",
        quote_char=None,
        schema={name: pl.String for name in _READ_FIELDS},
        truncate_ragged_lines=True,
        missing_columns="insert",
        # a non-UTF-8 file's fields past the 8th (UTF-8 ones with more go by the regular expression)
        extra_columns="ignore",
    )
    # single-spaced, a line's fields are contiguous: it has n of them when the n-th is there
    parsed = pl.col(_READ_FIELDS[lines_of.fields - 1]).is_not_null()
    if lines_of.exactly:
        parsed = parsed & pl.col(_READ_FIELDS[lines_of.fields]).is_null()
    # no blank before a field: a blank line has no first field, a comment's begins with '#'
    first = pl.col(_READ_FIELDS[0])
    lines = fields.with_columns(
        pl.concat_str(_READ_FIELDS, separator=" ", ignore_nulls=True).alias(LINE),
        (first.is_not_null() & ~first.str.starts_with("#").fill_null(False)).alias(_CONTENT),
    )
    return lines, [pl.when(parsed).then(pl.col(_READ_FIELDS[i])) for i in lines_of.kept]


def _fields_of_any(path: str, lines_of: TrecLines, separator: str) -> tuple[pl.LazyFrame, list[pl.Expr]]:
    """Any file's lines, cut by the regular expression (a byte-order mark, tabs, runs of
    spaces, carriage returns...); ``separator``, a byte the file does not hold."""
    lines = pl.scan_csv(
        path,
        glob=False,
        has_header=False,
        separator=separator,
        quote_char=None,
        new_columns=[LINE],
        schema={LINE: pl.String},
    )
    text = pl.col(LINE).str.strip_prefix(_BOM)
    comment = _TREC_QRELS_COMMENT if lines_of.qrels else _TREC_RUN_COMMENT
    content = (pl.col(LINE).str.strip_chars(TREC_SPACE).fill_null("") != "") & ~text.str.contains(comment).fill_null(
        False
    )
    groups = text.str.extract_groups(lines_of.pattern)
    return lines.with_columns(content.alias(_CONTENT)), [
        groups.struct.field(str(i + 1)) for i in range(len(lines_of.kept))
    ]


def scan_lines(
    files: list[str], lines_of: TrecLines, names: tuple[str, ...], casts: dict[str, type[pl.DataType]]
) -> pl.LazyFrame:
    """Local TREC files' lines to columns. A line that does not parse yields nulls, which
    validation reports with the file, line number and text kept in ``_file``/``_line*``.
    Blank lines and trec_eval's comment lines are skipped (line numbers still count them)."""
    for path in files:
        check_shape(path, qrels=lines_of.qrels)
    frames = []
    for path in files:
        separator = whole_line_separator(path)
        if _single_spaced(path, separator):
            lines, fields = _fields_of_single_spaced(path, lines_of)
        else:
            lines, fields = _fields_of_any(path, lines_of, separator)
        frames.append(
            lines.with_columns(pl.int_range(1, pl.len() + 1).alias(LINE_NUMBER))
            .filter(_CONTENT)
            .select(
                *[
                    field.cast(casts.get(name, pl.String), strict=False).alias(name)
                    for field, name in zip(fields, names, strict=True)
                ],
                pl.lit(path).alias(FILE),
                LINE_NUMBER,
                LINE,
            )
        )
    if not frames:
        empty: dict[str, type[pl.DataType]] = {name: casts.get(name, pl.String) for name in names}
        return pl.LazyFrame(schema={**empty, FILE: pl.String, LINE_NUMBER: pl.Int64, LINE: pl.String})
    return pl.concat(frames, how="vertical")


def trec_fields(line: str) -> list[str]:
    """A TREC line's fields, split as trec_eval splits them (:data:`TREC_SPACE` only).

    >>> trec_fields("q1 Q0 doc\u00a0one 1 2.5 tag")
    ['q1', 'Q0', 'doc\xa0one', '1', '2.5', 'tag']
    """
    return [field for field in re.split(_SPACE, line) if field]


def last_content_line(path: str, block: int = 1 << 16) -> str | None:
    """The last line of ``path`` that is neither blank nor a comment, read backwards a block
    at a time (a run file can be gigabytes; its tag is at its end)."""
    comment = re.compile(_TREC_RUN_COMMENT)
    with open(path, "rb") as handle:
        end = handle.seek(0, os.SEEK_END)
        tail = b""
        while end > 0:
            start = max(0, end - block)
            handle.seek(start)
            tail = handle.read(end - start) + tail
            end = start
            lines = tail.split(b"\n")
            # the first piece may be the end of a line cut by the block, unless at the start
            for raw in reversed(lines if start == 0 else lines[1:]):
                text = raw.decode("utf-8", errors="replace").removeprefix(_BOM)
                if text.strip(TREC_SPACE) and not comment.match(text):
                    return text
    return None


def first_content_line(path: str) -> str | None:
    """The first line of ``path`` that is neither blank nor a comment."""
    comment = re.compile(_TREC_RUN_COMMENT)
    with open(path, "rb") as handle:
        for raw in handle:
            text = raw.decode("utf-8", errors="replace").removeprefix(_BOM).rstrip("\r\n")
            if text.strip(TREC_SPACE) and not comment.match(text):
                return text
    return None


def check_shape(path: str, *, qrels: bool) -> None:
    """A run given as qrels (or qrels as a run) is named from its first line, which is all
    it takes to tell them apart: a run line has 6 fields (``qid Q0 docno rank score tag``),
    a qrels line 4 (``qid iter docno rel``). Later lines are checked by validation."""
    try:
        with open(path, encoding="utf-8-sig", errors="replace") as handle:
            comment = re.compile(_TREC_QRELS_COMMENT if qrels else _TREC_RUN_COMMENT)
            number, line = next(
                ((n, text) for n, text in enumerate(handle, 1) if text.strip(TREC_SPACE) and not comment.match(text)),
                (0, ""),
            )
    except OSError as error:
        raise InvalidInput(f"{path}: cannot read: {error.strerror or error}") from None
    fields = len(trec_fields(line))
    if qrels and fields >= 5:
        raise InvalidInput(
            f"{path}:{number}: {fields} fields where qrels lines have 4 (qid iter docno rel): this looks like a TREC "
            f"run (qid Q0 docno rank score tag); pass it as --run, and the judgments as --qrels"
        )
    if not qrels and fields == 4:
        raise InvalidInput(
            f"{path}:{number}: 4 fields where run lines have 6 (qid Q0 docno rank score tag): this looks like TREC "
            f"qrels (qid iter docno rel); pass it as --qrels, and the run as --run"
        )
