"""The table macros' inputs (sql/macro_text_inputs.sql, sql/macro_text_rows.sql, sql/macro_inputs.sql):
TREC and CSV/TSV files read as the command line reads them, and wrong inputs refused in its words.

The numbers are `ndcg evaluate`'s on the same TREC text (the command line's TREC reader is
conformance-tested against trec_eval); the words are the command line's on the same files (its
validation, which `ndcg validate` prints), with the macro's name before them and, where the fix
names a flag, the macro's parameter or argument instead. All the macro calls of a test run in one
duckdb process (the CLI for numbers, the Python module, which is the same engine, for the errors:
each error ends the CLI)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from math import log2
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.api import check, evaluate
from pipeline.errors import InvalidInput
from pipeline.rules import FIXES
from pipeline.sql_files import MACROS, sql_file

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "data" / "trec"
DUCKDB_CLI = Path(sys.executable).parent / "duckdb"
KS = [1, 5, 10]
MEASURES = ["ndcg", "P", "map", "recip_rank"]
SPACES = ["\t", "  ", " \t ", "\x0b", "\x0c", " "]


def _messy(lines: list[str], *, comment: str) -> str:
    """The same lines with the fields apart by tabs, runs of spaces, vertical tabs and form feeds,
    blanks around some lines, CRLF endings, a byte-order mark, comment lines and lines of blanks
    (any ASCII whitespace) between."""
    out = ["\ufeff" + comment]
    for number, line in enumerate(lines):
        fields = line.split()
        text = fields[0]
        for position, field in enumerate(fields[1:]):
            text += SPACES[(number + position) % len(SPACES)] + field
        if number % 7 == 3:
            text = "  " + text + " \t"
        out.append(text)
        if number % 50 == 10:
            out += ["", comment, "   ", "\t\x0b\x0c "]
    return "\r\n".join(out) + "\r\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample's TREC run and qrels; the same as messy TREC, a run without tags, split in two
    files, under a name without .txt; as CSV and TSV with a header (some fields quoted); as Parquet."""
    folder = tmp_path_factory.mktemp("macro_inputs")
    run_lines = (SAMPLE / "run.txt").read_text().splitlines()
    qrels_lines = (SAMPLE / "qrels.txt").read_text().splitlines()
    (folder / "run.txt").write_text("\n".join(run_lines) + "\n")
    (folder / "qrels.txt").write_text("\n".join(qrels_lines) + "\n")
    (folder / "messy_run.txt").write_bytes(_messy(run_lines, comment=" \x0c # a run's comment").encode())
    (folder / "messy_qrels.txt").write_bytes(_messy(qrels_lines, comment="# a qrels comment").encode())
    # five fields: the tag is optional to the command line's reader
    (folder / "untagged.txt").write_text("\n".join(" ".join(line.split()[:5]) for line in run_lines) + "\n")
    (folder / "split").mkdir()
    half = len(run_lines) // 2
    (folder / "split" / "a.txt").write_text("\n".join(run_lines[:half]) + "\n")
    (folder / "split" / "b.txt").write_text("\n".join(run_lines[half:]) + "\n")
    (folder / "run.test").write_text("\n".join(run_lines) + "\n")
    run_rows = [(f[0], f[2], f[4]) for f in (line.split() for line in run_lines)]
    qrels_rows = [(f[0], f[2], f[3]) for f in (line.split() for line in qrels_lines)]
    # columns in another order, a column the macros do not read, quoted fields (a separator, a quote)
    lines = ["doc_id,score,query_id,note"]
    for number, (query, doc, score) in enumerate(run_rows):
        note = '"a, b"' if number % 3 else '"say ""hi"""'
        lines.append(f"{doc if number % 2 else chr(34) + doc + chr(34)},{score},{query},{note}")
    (folder / "run.csv").write_text("\n".join(lines) + "\n")
    with open(folder / "qrels.tsv", "w", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["query_id", "doc_id", "relevance"])
        writer.writerows(qrels_rows)
    pl.DataFrame(run_rows, schema=["query_id", "doc_id", "score"], orient="row").with_columns(
        pl.col("score").cast(pl.Float64)
    ).write_parquet(folder / "run.parquet")
    pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "relevance"], orient="row").with_columns(
        pl.col("relevance").cast(pl.Int64)
    ).write_parquet(folder / "qrels.parquet")
    (folder / "macros.sql").write_text(sql_file(MACROS), encoding="utf-8")
    return folder


def command_line_per_query(folder: Path) -> dict[tuple[str, int | None], dict[str, float | None]]:
    """`ndcg evaluate`'s per-query numbers on the sample's TREC text."""
    options = ["--k", ",".join(map(str, KS)), "--measures", ",".join(MEASURES)]
    options += ["--per-query", "--output-format", "json"]
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "evaluate", "--run", "run.txt", "--qrels", "qrels.txt", *options],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert done.returncode == 0, done.stderr
    (unit,) = json.loads(done.stdout)["units"]
    return {(row.pop("query_id"), row.pop("k")): row for row in unit["per_query"]}


@pytest.mark.timeout(300)
def test_text_inputs_give_the_command_lines_numbers(folder: Path) -> None:
    """The macro on TREC text (as written, messy, untagged, in two files, as a glob, under another
    name with run_format), on CSV and TSV and on Parquet: `ndcg evaluate`'s numbers on the TREC text."""
    calls = {
        "trec": "'run.txt', 'qrels.txt'",
        "messy trec": "'messy_run.txt', 'messy_qrels.txt'",
        "untagged": "'untagged.txt', 'qrels.txt'",
        "two files": "['split/a.txt', 'split/b.txt'], 'qrels.txt'",
        "glob": "'split/*.txt', 'messy_qrels.txt'",
        "run_format": "'run.test', 'qrels.parquet', run_format := 'trec'",
        "csv and tsv": "'run.csv', 'qrels.tsv'",
        "parquet": "'run.parquet', 'qrels.parquet'",
        "as a view": "'run_view', 'qrels.txt'",
    }
    statements = ["create view run_view as select * from 'run.parquet';"]
    for number, call in enumerate(calls.values()):
        statements.append(
            f"copy (select * from ndcg_per_query({call}, ks := {KS}, measures := {MEASURES})) "
            f"to 'out{number}.parquet' (format parquet);"
        )
    (folder / "calls.sql").write_text("\n".join(statements) + "\n")
    done = subprocess.run(
        [str(DUCKDB_CLI), "-c", ".read macros.sql", "-c", ".read calls.sql"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr
    expected = command_line_per_query(folder)
    assert len(expected) == 40 * (len(KS) + 1)
    for number, name in enumerate(calls):
        got = pl.read_parquet(folder / f"out{number}.parquet")
        rows = {(row.pop("query_id"), row.pop("k")): row for row in got.iter_rows(named=True)}
        assert set(rows) == set(expected), name
        for key, values in expected.items():
            for measure, want in values.items():
                value = rows[key][measure]
                if want is None:
                    assert value is None, (name, key, measure)
                else:
                    assert value == pytest.approx(want, abs=1e-9), (name, key, measure, value, want)


# --- wrong inputs -------------------------------------------------------------------------------

BAD_FILES = {
    "bad_score.txt": "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 abc tag\nq1 Q0 d3 3\n",
    "tab_line.txt": "q1 Q0 d1 1 2.5 tag\r\nq1\tQ0  d2 2 x7 tag\r\n",
    "nan_score.txt": "q1 Q0 d1 1 2.5 tag\n# note\nq1 Q0 d2 2 nan tag\n",
    "underscore.txt": "q1 Q0 d1 1 1_000 tag\n",
    "good_run.txt": "q1 Q0 d1 1 2.5 tag\nq1 Q0 d2 2 1.5 tag\n",
    "bad_label.txt": "q1 0 d1 1\nq1 0 d2 x\n",
    "five_fields.txt": "q1 0 d1 1\nq1 0 d2 1 extra\n",
    "fractional.txt": "q1 0 d1 1\nq1 0 d2 1.5\n",
    "twice.txt": "q1 0 d1 1\nq1 0 d1 2\n",
    "comments_only.txt": "# nothing\n\n",
    "bad_score.csv": "query_id,doc_id,score\nq1,d1,1.5\nq1,d2,abc\n",
    "ragged.csv": "query_id,doc_id,score\nq1,d1,1.5\nq1,d2\n",
    "too_many.csv": 'query_id,doc_id,score\nq1,d1,1.5\nq1,d2,1,5\n"q1",d3,2\n',
    "renamed.csv": "qid,docno,score\nq1,d1,1.5\n",
    "empty_id.tsv": "query_id\tdoc_id\tscore\nq1\t\t1.5\n",
    "header_only.csv": "query_id,doc_id,score\n",
    "empty.csv": "",
    # integers all: the command line reads the column as integers, and a double holds neither of the first two
    "big_integers.csv": "query_id,doc_id,score\nq1,d1,1700000000000000001\nq1,d2,-1700000000000000003\nq1,d3,7\n",
    # values that cast to numbers but that Polars' inference reads as text (its patterns: -?[0-9]+ for
    # integers, and floats as written by Rust), anywhere in the file: a column of text, not of numbers
    "plus.csv": "query_id,doc_id,score\nq1,d1,+5\nq1,d2,3\n",
    "lower_nan.csv": "query_id,doc_id,score\nq1,d1,nan\nq1,d2,3\n",
    "late_plus.csv": "query_id,doc_id,score\n" + "".join(f"q1,d{i},{i}\n" for i in range(150)) + "q1,dx,+5\n",
    "plus_label.csv": "query_id,doc_id,relevance\nq1,d1,1\nq1,d2,+2\n",
    # Polars casts neither to a number (DuckDB's own cast takes both)
    "spaced.csv": "query_id,doc_id,score\nq1,d1, 5\nq1,d2,3\n",
    "plus_minus.txt": "q1 Q0 d1 1 +-2 tag\nq1 Q0 d2 2 1 tag\n",
    # truth values (any case) make a column of them; empty fields alone, a column of text
    "truth.csv": "query_id,doc_id,score\nq1,d1,true\nq1,d2,FALSE\nq1,d3,\n",
    "empty_scores.csv": "query_id,doc_id,score\nq1,d1,\nq1,d2,\n",
    # integers beyond Int128 (HUGEINT), which Polars cannot parse as integers: a column of text
    "huge_scores.csv": f"query_id,doc_id,score\nq1,d1,{10**40 + 2}\nq1,d2,{10**40 + 1}\nq1,d3,1\n",
    "huge_labels.csv": f"query_id,doc_id,relevance\nq1,d1,1\nq1,d2,{2**127}\n",
    "empty_first_field.csv": "query_id,doc_id,score\nq1,d1,3\n,d2,2\n",
    # a quoted empty field is as missing as an empty one (Polars reads it as an empty text)
    "quoted_empty_id.csv": 'query_id,doc_id,score\nq1,d1,3\nq1,"",2\n',
    "quoted_empty_scores.csv": 'query_id,doc_id,score\nq1,d1,""\nq1,d2,""\n',
    "old_mac.csv": "query_id,doc_id,score\rq1,d1,3\rq1,d2,2\r",
    # text after a closing quote: Polars stops on it; read line by line it was 'd1', a judged document
    "after_quote.csv": 'query_id,doc_id,score\nq1,d2,5\nq1,"d1"x,3\n',
    "glob_a.csv": "query_id,doc_id,score\nq1,d1,3\n",
    "glob_b.csv": "",
    # one dataset of two files whose headers differ (read by name, the second's columns would be swapped)
    "header_a.csv": "query_id,doc_id,score\nq1,d1,3\n",
    "header_b.csv": "doc_id,query_id,score\nd2,q1,2\n",
    # a header naming a column twice: the macros read the first of them, the command line neither
    "twice_named.csv": "query_id,doc_id,score,score\nq1,d1,3,1\nq1,d2,2,5\n",
    "twice_named.tsv": "query_id\tdoc_id\tscore\tx\tx\nq1\td1\t3\t0\t0\n",
}
# (run, qrels, how much of the command line's message the macro says as it is: all, or up to a fix
# that names a flag)
CASES = {
    "a score that is no number": ("bad_score.txt", "qrels.txt", None),
    "a line split by a tab and spaces, CRLF": ("tab_line.txt", "qrels.txt", None),
    "a NaN score": ("nan_score.txt", "qrels.txt", None),
    "an underscore in a score": ("underscore.txt", "qrels.txt", None),
    "a label that is no number": ("good_run.txt", "bad_label.txt", None),
    "a qrels line with five fields": ("good_run.txt", "five_fields.txt", None),
    "a fractional label": ("good_run.txt", "fractional.txt", None),
    "a judgment twice": ("good_run.txt", "twice.txt", None),
    "no lines but comments": ("comments_only.txt", "qrels.txt", None),
    "qrels given as the run": ("qrels.txt", "qrels.txt", "; pass it as"),
    "a run given as qrels": ("run.txt", "run.txt", "; pass it as"),
    "a file that is not there": ("nope.txt", "qrels.txt", None),
    "a pattern that matches nothing": ("nope*.txt", "qrels.txt", None),
    "a CSV score that is no number": ("bad_score.csv", "qrels.txt", None),
    "a CSV line a field short": ("ragged.csv", "qrels.txt", None),
    "a CSV line a field long": ("too_many.csv", "qrels.txt", None),
    "an empty id in TSV": ("empty_id.tsv", "qrels.txt", None),
    "a CSV header and no rows": ("header_only.csv", "qrels.txt", None),
    "an empty CSV file": ("empty.csv", "qrels.txt", None),
    "CSV integer scores beyond 2^53": ("big_integers.csv", "qrels.txt", None),
    "a CSV score written +5": ("plus.csv", "qrels.txt", None),
    "a CSV score written nan": ("lower_nan.csv", "qrels.txt", None),
    "a CSV score written +5 after 150 integers": ("late_plus.csv", "qrels.txt", None),
    "a CSV label written +2": ("good_run.txt", "plus_label.csv", None),
    "a CSV score with a space before it": ("spaced.csv", "qrels.txt", None),
    "a TREC score written +-2": ("plus_minus.txt", "qrels.txt", None),
    "a CSV score column of true and false": ("truth.csv", "qrels.txt", None),
    "a CSV score column of empty fields": ("empty_scores.csv", "qrels.txt", None),
    "CSV integer scores beyond Int128": ("huge_scores.csv", "qrels.txt", None),
    "a CSV integer label beyond Int128": ("good_run.txt", "huge_labels.csv", None),
    "a CSV line whose first field is empty": ("empty_first_field.csv", "qrels.txt", None),
    "a CSV id written as an empty quoted field": ("quoted_empty_id.csv", "qrels.txt", None),
    "a CSV score column of empty quoted fields": ("quoted_empty_scores.csv", "qrels.txt", None),
    "CSV lines ending in a carriage return alone": ("old_mac.csv", "qrels.txt", None),
    "text after a quoted field's closing quote": ("after_quote.csv", "qrels.txt", None),
    "an empty file among CSV files": ("glob_*.csv", "qrels.txt", None),
    "CSV files whose headers differ": ("header_*.csv", "qrels.txt", None),
    "a CSV header naming the score twice": ("twice_named.csv", "qrels.txt", None),
    "a TSV header naming a column twice": ("twice_named.tsv", "qrels.txt", None),
    "a CSV header without the columns": ("renamed.csv", "qrels.txt", "; to read"),
    "a Parquet file without the columns": ("renamed.parquet", "qrels.parquet", "; to read"),
    "a Parquet run given as qrels": ("run.parquet", "run.parquet", "; this looks like"),
}


def _in_macro_words(message: str) -> str:
    """The command line's message with the fixes it names spelt as a macro's parameters."""
    for name, flag in FIXES["cli"].items():
        if flag:
            message = message.replace(flag, FIXES["macro"][name])
    return message


@pytest.fixture(scope="module")
def bad_files(folder: Path) -> Path:
    for name, text in BAD_FILES.items():
        (folder / name).write_text(text)
    pl.read_parquet(folder / "run.parquet").rename({"query_id": "qid"}).write_parquet(folder / "renamed.parquet")
    return folder


def connected(folder: Path, monkeypatch: pytest.MonkeyPatch) -> duckdb.DuckDBPyConnection:
    """A DuckDB session in ``folder`` with the macros read."""
    monkeypatch.chdir(folder)
    connection = duckdb.connect()
    connection.execute(sql_file(MACROS))
    return connection


def test_wrong_inputs_are_refused_in_the_command_lines_words(bad_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    connection = connected(bad_files, monkeypatch)
    for case, (run, qrels, fix_starts) in CASES.items():
        with pytest.raises(InvalidInput) as command_line:
            check(run, qrels)
        said = str(command_line.value)
        with pytest.raises(duckdb.InvalidInputException) as macro:
            connection.execute(f"select * from ndcg_per_query('{run}', '{qrels}')").fetchall()
        refused = str(macro.value).removeprefix("Invalid Input Error: ")
        expected = "ndcg_per_query: " + _in_macro_words(said)
        if fix_starts is None:
            assert refused == expected, case
        else:
            assert fix_starts in refused and fix_starts in expected, (case, refused, expected)
            assert refused.split(fix_starts)[0] == expected.split(fix_starts)[0], case


def test_a_csv_column_of_integers_and_decimals_is_read_as_doubles_by_both(
    bad_files: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a decimal among them the command line reads a CSV column as doubles, as the macros
    read every text score: an integer beyond 2^53 is then one more double on both fronts, as in a
    TREC file (not refused by either)."""
    (bad_files / "mixed.csv").write_text("query_id,doc_id,score\nq1,d1,1700000000000000001\nq1,d2,0.5\n")
    connection = connected(bad_files, monkeypatch)
    check("mixed.csv", "qrels.txt")
    connection.execute("select * from ndcg_per_query('mixed.csv', 'qrels.txt')").fetchall()  # no refusal


def test_a_csv_column_is_typed_by_all_its_rows_on_both_fronts(bad_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A decimal after 150 integers makes a column of doubles, as the macros read it. The
    command line typed a CSV column by its first 100 rows, and then could not parse 2.5 as an
    integer; the macros computed it."""
    rows = "".join(f"q1,d{i},{i}\n" for i in range(150))
    (bad_files / "late_decimal.csv").write_text("query_id,doc_id,score\n" + rows + "q1,dx,2.5\n")
    (bad_files / "late_qrels.csv").write_text("query_id,doc_id,relevance\nq1,dx,1\nq1,d149,2\n")
    connection = connected(bad_files, monkeypatch)
    by_macro = connection.execute(
        "select k, ndcg from ndcg_per_query('late_decimal.csv', 'late_qrels.csv', ks := [1, 5])"
    ).fetchall()
    # ranked by score: d149 (149, gain 2) first, d148 to d3 (148 to 3), dx (2.5, gain 1) 148th, d2 to d0
    ideal = 2 + 1 / log2(3)
    expected = {1: 2 / 2, 5: 2 / ideal, None: (2 + 1 / log2(149)) / ideal}
    assert dict(by_macro) == pytest.approx(expected, abs=1e-12)
    by_command_line = evaluate("late_decimal.csv", "late_qrels.csv", k=[1, 5]).per_query
    assert dict(by_command_line.select("k", "ndcg").iter_rows()) == pytest.approx(expected, abs=1e-12)


def ndcg_on_both_fronts(connection: duckdb.DuckDBPyConnection, run: str, qrels: str) -> dict[str, dict]:
    """NDCG@1 and @2 of each query, ``(query, k): value``, by the macros and by the command line's
    reading (the API's evaluate)."""
    call = f"select query_id, k, ndcg from ndcg_per_query('{run}', '{qrels}', ks := [1, 2])"
    table = evaluate(run, qrels, k=[1, 2]).per_query.filter(pl.col("k").is_not_null())
    return {
        "macro": {(q, k): v for q, k, v in connection.execute(call).fetchall() if k is not None},
        "command line": {(q, k): v for q, k, v in table.select("query_id", "k", "ndcg").iter_rows()},
    }


def test_quoted_csv_fields_are_read_on_one_line_or_refused(bad_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The macros read one line as one row: quoted fields holding the separator or a doubled
    quote are read as the command line reads them; a quote left open on its line (a field holding
    a line break, which the command line reads, or a stray quote) is refused, naming the line,
    never read as rows of their own (q2's line inside q1's field scored q2)."""
    (bad_files / "quoted.csv").write_text('query_id,doc_id,score\nq1,"d,1",3\nq1,"d""2",2\nq2,d1,1\n')
    (bad_files / "quoted_qrels.csv").write_text('query_id,doc_id,relevance\nq1,"d""2",1\nq2,d1,1\n')
    connection = connected(bad_files, monkeypatch)
    # q1: 'd,1' (score 3, unjudged) then 'd"2' (label 1) at rank 2; q2: d1 (label 1) at rank 1
    expected = {("q1", 1): 0.0, ("q1", 2): 1 / log2(3), ("q2", 1): 1.0, ("q2", 2): 1.0}
    for front, found in ndcg_on_both_fronts(connection, "quoted.csv", "quoted_qrels.csv").items():
        assert found == pytest.approx(expected, abs=1e-12), front
    open_quotes = {
        "running_on.csv": 'query_id,doc_id,score\nq1,d2,5\nq1,"x,3\nq2,d1,1\nq1,y",1\n',
        "line_break.csv": 'query_id,doc_id,score\nq2,d1,1\nq1,"d1\nx",3\n',
        "stray.csv": 'query_id,doc_id,score\nq2,d1,1\nq1,d"1,3\n',
    }
    for name, text in open_quotes.items():
        (bad_files / name).write_text(text)
        with pytest.raises(duckdb.InvalidInputException) as refused:
            connection.execute(f"select * from ndcg_per_query('{name}', 'quoted_qrels.csv')").fetchall()
        assert str(refused.value) == (
            f"Invalid Input Error: ndcg_per_query: {name}:3: a double quote left open on the line (an odd number "
            "of them): the table macros read one line as one row, so a quoted field may not hold a line break, and "
            'a quote inside a field must be doubled (""); ndcg evaluate reads quoted line breaks'
        ), name
    # the command line reads the quoted line break as CSV does: q1's one document is 'd1\nx', unjudged
    broken = evaluate("line_break.csv", "quoted_qrels.csv", k=[1]).per_query.filter(pl.col("k") == 1)
    assert dict(broken.select("query_id", "ndcg").iter_rows()) == pytest.approx({"q1": 0.0, "q2": 1.0}, abs=1e-12)


def test_blank_csv_lines_are_skipped_on_both_fronts(bad_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A blank line inside a CSV file and at its end are no rows, as CSV readers (Python's, the
    macros') skip them; Polars reads each as a row of nulls, which the command line refused as a
    null query id. A line of empty fields is still a row, refused on both fronts."""
    (bad_files / "blank_lines.csv").write_text("query_id,doc_id,score\nq1,d1,3\n\nq1,d2,2\n\n\nq2,d1,1\n\n")
    (bad_files / "blank_qrels.csv").write_text("query_id,doc_id,relevance\nq1,d2,1\n\nq2,d1,1\n\n")
    # q1: d1 (unjudged) then d2 (label 1) at rank 2; q2: d1 (label 1) at rank 1
    expected = {("q1", 1): 0.0, ("q1", 2): 1 / log2(3), ("q2", 1): 1.0, ("q2", 2): 1.0}
    connection = connected(bad_files, monkeypatch)
    for front, found in ndcg_on_both_fronts(connection, "blank_lines.csv", "blank_qrels.csv").items():
        assert found == pytest.approx(expected, abs=1e-12), front
    # and where Python's csv module sees a blank row that Polars does not (\r\r\n), none is dropped
    rows = {"empty_fields.csv": "q1,d1,3,x\n,,,\n", "cr_cr_lf.csv": "q1,d1,3,x\r\r\n,,,\nq1,d2,2,y\n"}
    for name, text in rows.items():
        (bad_files / name).write_bytes(f"query_id,doc_id,score,tag\n{text}".encode())
        with pytest.raises(InvalidInput, match="column 'query_id' has 1 null value"):
            check(name, "blank_qrels.csv")
        with pytest.raises(duckdb.InvalidInputException, match="column 'query_id' has 1 null value"):
            connection.execute(f"select * from ndcg_per_query('{name}', 'blank_qrels.csv')").fetchall()


def test_arguments_the_command_line_has_no_word_for(bad_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What only a macro can be given: a number or null as an input, a format it does not read;
    and the fixes of a missing column in a macro's terms."""
    connection = connected(bad_files, monkeypatch)
    cases = {
        "ndcg_summary(42, 'qrels.txt')": (
            "ndcg_summary: run must be a table or view name, or a path, glob or list of paths (text); got 42 (INTEGER)"
        ),
        "ndcg_summary('run.txt', NULL)": (
            "ndcg_summary: qrels must be a table or view name, or a path, glob or list of paths (text); got null"
        ),
        "ndcg_summary('run.txt', 'qrels.txt', qrels_format := 'delta')": (
            "ndcg_summary: unknown qrels_format 'delta'; expected one of parquet, trec, csv, tsv"
        ),
        "ndcg_per_query('renamed.parquet', 'qrels.parquet')": (
            "to read them so: create view run_columns as select * rename (qid as query_id) from "
            "query_table('renamed.parquet'), and pass 'run_columns'"
        ),
        "ndcg_per_query('renamed.csv', 'qrels.parquet')": (
            "ndcg_per_query: renamed.csv: missing column(s) 'query_id'; 'doc_id'; columns found: 'qid', 'docno', "
            "'score'; to read them so: rename qid to query_id, docno to doc_id in the header"
        ),
        "ndcg_per_query('run.txt', 'run.txt')": (
            "pass it as the first argument (run), and the judgments as the second (qrels)"
        ),
    }
    for call, words in cases.items():
        with pytest.raises(duckdb.InvalidInputException) as refused:
            connection.execute(f"select * from {call}").fetchall()
        assert words in str(refused.value), call
    # the same query, run again as it should be, works: nothing was left behind in the session
    (row,) = connection.execute("select count(*) from ndcg_per_query('run.txt', 'qrels.txt')").fetchall()
    assert row[0] == 80


def test_what_duckdb_says_before_any_macro_code_runs(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The errors DuckDB's binder gives while it binds the call, before any refusal can run, as
    docs/sql.md lists them: a Parquet path with no file, a table that does not exist, a subquery,
    a parameter the macros do not have."""
    connection = connected(folder, monkeypatch)
    cases = {
        "ndcg_summary('nope.parquet', 'qrels.txt')": 'No files found that match the pattern "nope.parquet"',
        "ndcg_summary('no_such_table', 'qrels.txt')": "Table with name no_such_table does not exist",
        "ndcg_summary((select 1), 'qrels.txt')": "Table function cannot contain subqueries",
        "ndcg_summary('run.txt', 'qrels.txt', bogus := 1)": "Macro ndcg_summary() does not support the supplied",
    }
    for call, words in cases.items():
        with pytest.raises(duckdb.Error) as refused:
            connection.execute(f"select * from {call}").fetchall()
        assert words in str(refused.value), call


def test_a_refusal_s_words_are_never_null() -> None:
    """DuckDB's error(NULL) raises nothing: a value of a message that is null (an example row's
    cast that failed) would let the input through unsaid. Each value is shown as None instead."""
    from pipeline.sql_refusals import _words
    from pipeline.sql_words import Sql

    words = _words("nulls", "macro", name="run.csv", column="'score'", count=Sql("null"), row=Sql("null::varchar"))
    said = duckdb.sql(f"select {words}").fetchall()[0][0]
    assert said == "run.csv: column 'score' has None null value(s); first at None"
    with pytest.raises(duckdb.InvalidInputException, match="has None null value"):
        duckdb.sql(f"select error({words})").fetchall()
