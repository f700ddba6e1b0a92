"""Reading TREC text as trec_eval 10.0 reads it: its comment lines.

trec_eval's rule, from its source (usnistgov/trec_eval, get_trec_results.c and get_qrels.c): a
run line whose first character after leading blanks is ``#`` is a comment; a qrels line is a
comment only when ``#`` is its first character. Its quicktest scores ``qrels.test.with-comments``
(copied into tests/data/trec_eval/ with its provenance) exactly as ``qrels.test``. TREC text is
read by Polars for the Polars and DuckDB engines; Spark refuses TREC by design.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import CONFORMANCE, run_cli
from tests.helpers.trec import ALL_TREC_CUTOFFS, assert_conformant, expected_lines

pytestmark = pytest.mark.local_engines("TREC text files (Spark reads Parquet only)")


def trec_values(*args: object, k: str = ALL_TREC_CUTOFFS) -> dict[tuple[str, str], float]:
    done = run_cli("evaluate", "--output-format", "trec", "--per-query", "--k", k, *args)
    assert done.returncode == 0, done.stderr
    found = {}
    for line in done.stdout.splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        found[(measure, query)] = float(value)
    return found


def test_trec_eval_qrels_with_comments_score_as_without(engine: str) -> None:
    """trec_eval's quicktest pair: the commented qrels give trec_eval's expected values of
    qrels.test (its expected.aq), line for line what qrels.test gives."""
    run = CONFORMANCE / "results.test"
    commented = trec_values("--run", run, "--qrels", CONFORMANCE / "qrels.test.with-comments", "--engine", engine)
    assert_conformant(commented, expected_lines("expected.aq"))
    plain = trec_values("--run", run, "--qrels", CONFORMANCE / "qrels.test", "--engine", engine)
    assert commented == plain


def test_run_comment_lines_are_skipped_after_blanks_too(tmp_path: Path, engine: str) -> None:
    """A run's comment may follow blanks (trec_eval skips isspace() before looking for ``#``);
    a ``#`` inside a field is data (trec_eval's own test runs have such doc ids)."""
    lines = (CONFORMANCE / "results.test").read_text().splitlines(keepends=True)
    commented = tmp_path / "results.commented"
    commented.write_text(
        "# a run header, as some toolkits write\n"
        + "".join(lines[:10])
        + "   \t# an indented comment, with six fields too: a b c d e\n"
        + "#\n"
        + "".join(lines[10:])
    )
    qrels = CONFORMANCE / "qrels.test"
    expected = trec_values("--run", CONFORMANCE / "results.test", "--qrels", qrels, "--engine", engine)
    assert trec_values("--run", commented, "--qrels", qrels, "--engine", engine) == expected
    assert_conformant(expected, expected_lines("expected.aq"))


def test_qrels_hash_after_blanks_is_data_as_in_trec_eval(tmp_path: Path, engine: str) -> None:
    """In qrels only the first column starts a comment: `` # a comment`` is a line of data to
    trec_eval (malformed: 3 fields), so refused here, naming the line whose number counts the
    comment line above it."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# judged by hand\n301 0 d1 1\n  # a comment\n")
    run = tmp_path / "run.txt"
    run.write_text("301 Q0 d1 1 2.0 tag\n")
    done = run_cli("evaluate", "--run", run, "--qrels", qrels, "--engine", engine)
    assert done.returncode == 3, done.stderr
    assert f"{qrels}:3: cannot read line '  # a comment'" in done.stderr, done.stderr


def test_shape_check_reads_past_comments(tmp_path: Path, engine: str) -> None:
    """Run and qrels swapped are still named from the first line that is not a comment."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("# run file below\n301 Q0 d1 1 2.0 tag\n")
    done = run_cli("evaluate", "--run", CONFORMANCE / "results.test", "--qrels", qrels, "--engine", engine)
    assert done.returncode == 3 and f"{qrels}:2: 6 fields where qrels lines have 4" in done.stderr, done.stderr


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_trec_lines_of_skipped_queries_follow_the_summary(tmp_path: Path, engine: str) -> None:
    """--empty-ideal skip leaves the queries without a relevant document out of every mean: the
    trec ``all`` lines are the summary's (P_5 too, which is defined for such a query), and those
    queries have no per-query lines. Expected: the means over the per-query file's queries whose
    ndcg is not null, computed here."""
    import polars as pl

    out = tmp_path / "out"
    common = ["--run", "data/run.parquet", "--qrels", "data/qrels.parquet", "--measures", "ndcg,P"]
    common += ["--empty-ideal", "skip", "--k", "5", "--engine", engine]
    written = run_cli("evaluate", *common, "--out", out)
    assert written.returncode == 0, written.stderr
    per_query = pl.read_parquet(out / "per_query.parquet").filter(pl.col("k") == 5)
    skipped = set(per_query.filter(pl.col("ndcg").is_null())["query_id"])
    assert skipped, "the sample has queries without a relevant document"
    kept = per_query.filter(pl.col("ndcg").is_not_null())
    done = run_cli("evaluate", *common, "--output-format", "trec", "--per-query")
    assert done.returncode == 0, done.stderr
    lines = [line.split("\t") for line in done.stdout.splitlines()]
    values = {(name.strip(), query): float(value) for name, query, value in lines}
    assert values[("P_5", "all")] == pytest.approx(round(kept["P"].mean(), 4), abs=1e-12)
    assert values[("ndcg_cut_5", "all")] == pytest.approx(round(kept["ndcg"].mean(), 4), abs=1e-12)
    assert not {query for _, query in values} & skipped


# trec_eval splits fields on C's isspace in its default locale: these six ASCII characters
# (a newline ends a line first); a no-break space, an em space or an ideographic space is a
# character of a field, as it is to trec_eval.
ASCII_SEPARATORS = {"space": " ", "tab": "\t", "vertical tab": "\v", "form feed": "\f", "carriage return": "\r"}
OTHER_WHITESPACE = {"no-break space": "\u00a0", "em space": "\u2003", "ideographic space": "\u3000"}


@pytest.mark.parametrize("separator", list(ASCII_SEPARATORS.values()), ids=list(ASCII_SEPARATORS))
def test_fields_split_on_ascii_whitespace(tmp_path: Path, engine: str, separator: str) -> None:
    """Each of C's isspace characters separates fields, alone or repeated, in the run and the
    qrels: d2 (label 1) ranked first of two gives P@1 = 1 and P@2 = 1/2."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    between = separator + " " if separator != " " else separator
    run.write_text(
        between.join(["q1", "Q0", "d2", "1", "2.0", "tag"])
        + "\n"
        + separator.join(["q1", "Q0", "d1", "2", "1.0", "t"])
        + "\n"
    )
    qrels.write_text(separator.join(["q1", "0", "d2", "1"]) + "\n" + "q1 0 d1 0\n")
    found = trec_values("--run", run, "--qrels", qrels, "--engine", engine, "--measures", "P", k="1,2")
    assert found[("P_1", "q1")] == pytest.approx(1.0)
    assert found[("P_2", "q1")] == pytest.approx(0.5)


@pytest.mark.parametrize("space", list(OTHER_WHITESPACE.values()), ids=list(OTHER_WHITESPACE))
def test_other_whitespace_is_part_of_a_docno(tmp_path: Path, engine: str, space: str) -> None:
    """A docno holding a non-ASCII space is one field, in the run and in the qrels: the run's
    ``d<space>x`` takes its judgment (label 1; P@1 = 1), never ``d``'s (label 0), and its score is
    the fifth field, 2.0, ranking it above d1 (score 1.0)."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text(f"q1 Q0 d1 1 1.0 tag\nq1 Q0 d{space}x 2 2.0 tag\n")
    qrels.write_text(f"q1 0 d{space}x 1\nq1 0 d 0\nq1 0 d1 0\n")
    found = trec_values("--run", run, "--qrels", qrels, "--engine", engine, "--measures", "P,num_ret", k="1,2")
    assert found[("P_1", "q1")] == pytest.approx(1.0)
    assert found[("P_2", "q1")] == pytest.approx(0.5)
    assert found[("num_ret", "q1")] == pytest.approx(2.0)


# where a file holds spaces that are not one between two fields, the CSV reader (which cuts a
# single-spaced file's lines) must not be used: each place, on the last of many lines
SPACES_ASTRAY = {
    "two spaces": lambda line: line.replace(" ", "  ", 1),
    "a space before the line": lambda line: " " + line,
    "a space after the line": lambda line: line + " ",
}


@pytest.mark.local_engines("the text is read by pipeline.io for every engine; Spark's case is the split test above")
@pytest.mark.parametrize("astray", list(SPACES_ASTRAY.values()), ids=list(SPACES_ASTRAY))
def test_spaces_astray_anywhere_split_as_trec_eval_splits(
    tmp_path: Path, engine: str, astray: Callable[[str], str]
) -> None:
    """d2 (label 1) ranked first of 301 gives P@1 = 1 and P@2 = 1/2 whatever the spaces of the
    last run line and the last qrels line, 300 single-spaced lines after the first."""
    from pipeline.io.trec import _single_spaced

    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    filler = [f"q1 Q0 x{i} {i + 3} 0.{i:03d} tag" for i in range(300)]
    run.write_text("\n".join(["q1 Q0 d2 1 2.0 tag", *filler, astray("q1 Q0 d1 2 1.0 t")]) + "\n")
    qrels.write_text("q1 0 d1 0\n" + astray("q1 0 d2 1") + "\n")
    assert not _single_spaced(str(run)) and not _single_spaced(str(qrels))
    found = trec_values("--run", run, "--qrels", qrels, "--engine", engine, "--measures", "P,num_ret", k="1,2")
    assert found[("P_1", "q1")] == pytest.approx(1.0)
    assert found[("P_2", "q1")] == pytest.approx(0.5)
    assert found[("num_ret", "q1")] == pytest.approx(302.0)


@pytest.mark.local_engines("the text is read by pipeline.io for every engine; Spark reads Parquet only")
def test_lines_of_more_fields_than_the_csv_reader_keeps_split_as_trec_eval_splits(tmp_path: Path, engine: str) -> None:
    """A comment of many words as the first line of the run and of the qrels (trec_eval skips
    both), a run line whose tag holds spaces, and a unit separator inside a docno of a file that
    is not single-spaced: d2 (label 1) ranked first, d1 (label 0) second, d\x1f3 third, so P@1 = 1,
    P@2 = 1/2, P@3 = 2/3 (d\x1f3 is judged 1 under its own name) and num_ret 3."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text(
        "# bm25 run k1=0.9 b=0.4 on robust04 title queries\n"
        "q1 Q0 d2 1 2.0 tag with spaces in it and more\nq1 Q0 d1 2 1.0 t\nq1\tQ0 d\x1f3 3 0.5 t\n"
    )
    qrels.write_text("# judged by two assessors, merged by majority vote\nq1 0 d1 0\nq1 0 d2 1\nq1 0 d\x1f3 1\n")
    found = trec_values("--run", run, "--qrels", qrels, "--engine", engine, "--measures", "P,num_ret", k="1,2,3")
    assert found[("P_1", "q1")] == pytest.approx(1.0)
    assert found[("P_2", "q1")] == pytest.approx(1 / 2)
    assert found[("P_3", "q1")] == pytest.approx(2 / 3, abs=5e-5)  # printed to 4 decimals
    assert found[("num_ret", "q1")] == pytest.approx(3.0)


def test_a_line_that_does_not_parse_is_quoted_whole(tmp_path: Path) -> None:
    """A qrels line of ten fields, in an otherwise single-spaced file: the message quotes all ten."""
    run, qrels = tmp_path / "run.txt", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 d2 1 2.0 tag\nq1 Q0 d1 2 1.0 t\n")
    qrels.write_text("q1 0 d1 0\nq1 0 d2 1 a b c d e f\n")
    done = run_cli("evaluate", "--run", str(run), "--qrels", str(qrels), "--k", "1")
    assert done.returncode == 3
    assert f"{qrels}:2: cannot read line 'q1 0 d2 1 a b c d e f' as 'qid iter docno rel'" in done.stderr


def test_single_spaced_files_are_told_apart_in_utf8_and_not(tmp_path: Path) -> None:
    """Lines read by Polars where they are UTF-8; searched byte by byte where they are not (or
    hold a unit separator, Polars' separator for whole lines): the same answer."""
    from pipeline.io.trec import _single_spaced, whole_line_separator

    cases = {
        "plain.txt": (b"q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 1.0 tag\n", True),
        "latin1.txt": (b"q1 Q0 d\xe91 1 2.0 tag\n", True),
        "latin1_two.txt": (b"q1 Q0 d\xe91 1 2.0 tag\nq1  Q0 d2 2 1.0 tag\n", False),
        "unit.txt": (b"q1 Q0 d\x1f1 1 2.0 tag\n", True),
        "unit_end.txt": (b"q1 Q0 d\x1f1 1 2.0 tag\nq1 Q0 d2 2 1.0 tag \nq1 Q0 d3 3 0.5 tag\n", False),
        "tab.txt": (b"q1\tQ0 d1 1 2.0 tag\n", False),
        "blank.txt": (b"q1 Q0 d1 1 2.0 tag\n\nq1 Q0 d2 2 1.0 tag\n", True),
        "nine_fields.txt": (b"q1 Q0 d1 1 2.0 tag\nq1 Q0 d2 2 1.0 tag of four words\n", False),
        # control bytes (no whitespace to trec_eval) in a tag: the lines are read with one it lacks
        "controls.txt": (b"q1 Q0 d1 1 2.0 t\x1f\x1e\x1d\x1c\x01\x02\x03\x04\nq1 Q0 d2 2 1.0 t\n", True),
        "latin1_nine_fields.txt": (b"# r\xe9sum\xe9 of a run of many words\nq1 Q0 d1 1 2.0 tag\n", True),
        "empty.txt": (b"", False),
    }
    for name, (content, expected) in cases.items():
        (tmp_path / name).write_bytes(content)
        path = str(tmp_path / name)
        assert _single_spaced(path, whole_line_separator(path)) is expected, name
