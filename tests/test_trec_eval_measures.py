"""``--measures all_trec`` against trec_eval 10.0's own test outputs (tests/data/trec_eval/full/):
every line of ``out.test.aq``, ``.aqc`` (``-c``), ``.aqcM`` (``-c -M100``) and ``.aql`` (``-l2``,
``-mrelstring.20``) of the families the registry has is printed, per query and ``all``, with
trec_eval's name, padding and number format, its value within 1e-4 (trec_eval prints 4
decimals), and in its order, through the command line on Polars and DuckDB, and on Spark for one
file; ``runid`` (the run's name) and ``relstring`` (the labels of the top results) as strings.
The families the registry does not have yet are listed by name (:data:`NOT_YET`), so a line
printed that trec_eval does not print, or one left out of a family we have, fails here.

``--measures official`` (trec_eval's default output, no ``-m``) diffs clean, byte for byte,
against trec_eval's ``out.test``, ``out.comment.test`` and a ``-q -c`` output.

Also, on small inputs written out by hand: the two conventions of judgment coverage
(trec_eval's ``unj@k``, ranks past the retrieved counting as judged, and ir_measures'
``Judged@k``, counting as unjudged), infAP's terms (a pooled-but-unjudged rank against one absent
from the judgments) and relstring's characters."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.spec import Evaluation
from tests.helpers import CONFORMANCE, compute, frames

local_engines = pytest.mark.local_engines("trec_eval's TREC files through the command line")

# name: (trec_eval's output, run, qrels, our flags for trec_eval's); -mrelstring.20 is our
# relstring_20 beside all_trec
FILES = {
    "aq": ("out.test.aq", "results.test", "qrels.test", ("--measures", "all_trec")),
    "aqc": ("out.test.aqc", "results.trunc", "qrels.test", ("--measures", "all_trec", "--all-queries")),
    "aqcM": (
        "out.test.aqcM",
        "results.trunc",
        "qrels.test",
        ("--measures", "all_trec", "--all-queries", "--max-results", "100"),
    ),
    "aql": (
        "out.test.aql",
        "results.test",
        "qrels.rel_level",
        ("--measures", "all_trec,relstring_20", "--relevance-threshold", "2"),
    ),
}
# trec_eval's families of all_trec the registry does not have
NOT_YET = re.compile(r"^(G|binG|Rndcg|ndcg_rel|rbp|rbp_resid)$")
ROUNDING = 1e-4 + 1e-12
# what the families the registry has print, of the 387 lines of each file
MATCHED_LINES = 363


def trec_lines_of(text: str) -> dict[tuple[str, str], str]:
    """``{(measure, query): line}`` of trec_eval's format (comment lines aside)."""
    return {tuple(line.split()[:2]): line for line in text.splitlines() if line.strip() and not line.startswith("#")}  # type: ignore[misc]


def assert_prints_trec_eval_lines(ours: dict[tuple[str, str], str], theirs: dict[tuple[str, str], str]) -> int:
    """Every line of ``theirs`` of a family we have is in ``ours`` with the same name field
    (padding included) and a value within rounding, and we print no other line: the count of
    lines matched."""
    expected = {key: line for key, line in theirs.items() if not NOT_YET.match(key[0])}
    assert sorted(set(ours) - set(expected)) == [], "lines trec_eval does not print"
    assert sorted(set(expected) - set(ours)) == [], "lines trec_eval prints that we do not"
    for key, line in expected.items():
        name, _, value = line.split("\t")
        our_name, _, our_value = ours[key].split("\t")
        assert our_name == name, key
        if key[0] == "runid" or key[0].startswith("relstring"):
            # the run's name (the tag of the run file's last line) and the labels of the top
            # results, strings both
            assert our_value == value, (key, ours[key], line)
            continue
        # a count is a whole number in both (trec_eval's %ld), every other value 4 decimals
        assert ("." in our_value) == ("." in value), (key, ours[key], line)
        assert abs(float(our_value) - float(value)) <= ROUNDING, (key, ours[key], line)
    return len(expected)


@pytest.mark.parametrize("name", list(FILES))
@local_engines
def test_all_trec_prints_trec_eval_s_lines(capsys: pytest.CaptureFixture[str], engine: str, name: str) -> None:
    output, run, qrels, flags = FILES[name]
    argv = ["evaluate", "--output-format", "trec", "--per-query", "--engine", engine]
    assert main([*argv, "--run", str(CONFORMANCE / run), "--qrels", str(CONFORMANCE / qrels), *flags]) == 0
    text = (CONFORMANCE / "full" / output).read_text()
    theirs = trec_lines_of(text)
    assert len(theirs) == 387
    out = capsys.readouterr().out
    assert assert_prints_trec_eval_lines(trec_lines_of(out), theirs) == MATCHED_LINES
    # in trec_eval's order: query by query (then all), each in its measure table's order
    assert list(trec_lines_of(out)) == [key for key in theirs if not NOT_YET.match(key[0])]


# trec_eval's default output (no -m: its official set): name -> (its output, run, qrels, our
# flags for trec_eval's)
OFFICIAL = {
    "test": ("out.test", "results.test", "qrels.test", ()),
    "comment.test": ("out.comment.test", "results.comment.judged", "qrels.comment.test", ()),
    "qc": ("out.official.qc", "results.trunc", "qrels.test", ("--per-query", "--all-queries")),
}


@pytest.mark.parametrize("name", list(OFFICIAL))
@local_engines
def test_official_diffs_clean_against_trec_eval_s_default_output(
    capsys: pytest.CaptureFixture[str], engine: str, name: str
) -> None:
    """``--measures official --output-format trec`` prints trec_eval's default output byte for
    byte: its lines, in its order, with its padding and its runid (the run file's tag)."""
    output, run, qrels, flags = OFFICIAL[name]
    argv = ["evaluate", "--output-format", "trec", "--engine", engine, "--measures", "official", *flags]
    assert main([*argv, "--run", str(CONFORMANCE / run), "--qrels", str(CONFORMANCE / qrels)]) == 0
    assert capsys.readouterr().out == (CONFORMANCE / "full" / output).read_text()


def _trec_frame(path: Path, names: tuple[str, str, str], columns: tuple[int, int, int]) -> pl.DataFrame:
    rows = [line.split() for line in path.read_text().splitlines() if line.strip()]
    return pl.DataFrame(
        {name: [row[column] for row in rows] for name, column in zip(names, columns, strict=True)}
    ).with_columns(pl.col(names[2]).cast(pl.Float64))


@pytest.mark.spark
@pytest.mark.timeout(600)
def test_all_trec_prints_trec_eval_s_lines_on_spark(local_spark: object) -> None:
    from pipeline.engines import polars as polars_engine
    from pipeline.engines import spark as spark_engine
    from pipeline.io.format import trec_lines
    from pipeline.io.read import Source, trec_run_id

    output, run, qrels, _ = FILES["aqcM"]
    evaluation = Evaluation(measures=("all_trec",), all_queries=True, max_results=100)
    run_frame = _trec_frame(CONFORMANCE / run, ("query_id", "doc_id", "score"), (0, 2, 4))
    qrels_frame = _trec_frame(CONFORMANCE / qrels, ("query_id", "doc_id", "relevance"), (0, 2, 3))
    spark = local_spark
    table = spark_engine.per_query(
        spark.createDataFrame(run_frame.to_arrow()),  # type: ignore[attr-defined]
        spark.createDataFrame(qrels_frame.to_arrow()),  # type: ignore[attr-defined]
        evaluation,
    )
    per_query = pl.from_arrow(table.toArrow())
    assert isinstance(per_query, pl.DataFrame)
    run_id = trec_run_id(Source.of(str(CONFORMANCE / run)))
    # relstring is read by Polars whatever the engine (a line of the output, not a measure)
    strings = polars_engine.relstrings(run_frame.lazy(), qrels_frame.lazy(), evaluation, 10).collect()
    lines = trec_lines(
        per_query,
        per_query_lines=True,
        trec_sets=("all_trec",),
        run_id=run_id,
        relstrings=("relstring", dict(strings.iter_rows())),
    )
    ours = trec_lines_of(lines)
    theirs = trec_lines_of((CONFORMANCE / "full" / output).read_text())
    assert assert_prints_trec_eval_lines(ours, theirs) == MATCHED_LINES


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_unjudged_and_judged_at_k_written_out(engine: str) -> None:
    # three results: a relevant, an unjudged, a judged nonrelevant (label 0); one relevant
    # document not retrieved; a negative label counts as unjudged
    run, qrels = frames(
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        [("q", "a", 1), ("q", "c", 0), ("q", "d", 1), ("q", "b", -1)],
    )
    measures = ("unj", "judged", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret", "set_F", "utility")
    table = compute(engine, run, qrels, Evaluation(cutoffs=(2, 5), measures=measures))
    rows = {row["k"]: row for row in table.iter_rows(named=True)}
    # top 2: a judged, b unjudged; top 5: 3 retrieved, 2 judged; trec_eval's unj counts the
    # 2 ranks past the retrieved as judged (1 / 5), ir_measures' Judged@5 as unjudged (2 / 5)
    assert rows[2]["unj"] == pytest.approx(1 / 2) and rows[2]["judged"] == pytest.approx(1 / 2)
    assert rows[5]["unj"] == pytest.approx(1 / 5) and rows[5]["judged"] == pytest.approx(2 / 5)
    assert rows[None]["unj"] is None and rows[None]["judged"] is None
    whole = rows[None]
    assert (whole["num_ret"], whole["num_rel"], whole["num_rel_ret"], whole["num_nonrel_judged_ret"]) == (3, 2, 1, 1)
    # F1 of the retrieved set: 2 * 1 / (3 + 2); utility: 1 relevant - 2 others retrieved
    assert whole["set_F"] == pytest.approx(2 / 5) and whole["utility"] == -1
    # at k = 2 the set is the top 2: 1 relevant of 2 retrieved, 2 relevant judged
    assert rows[2]["num_ret"] == 2 and rows[2]["set_F"] == pytest.approx(2 * 1 / (2 + 2))


@pytest.mark.timeout(600)  # Spark's session starts within the test on its first use
def test_infap_written_out(engine: str) -> None:
    # ranks: 1 a relevant, 2 b absent from the qrels (never pooled), 3 c labelled -1 (pooled,
    # not judged), 4 d judged nonrelevant, 5 e relevant, 6 g relevant; f relevant, not retrieved
    run = [("q", doc, float(10 - rank)) for rank, doc in enumerate("abcdeg", start=1)]
    judged = [("q", "a", 1), ("q", "d", 0), ("q", "e", 1), ("q", "g", 1), ("q", "f", 1)]
    eps = 1e-5
    # trec_eval's m_infap.c: rank 1 adds 1; a relevant rank k > 1 adds 1/k + ((k-1)/k) *
    # (pooled above / (k-1)) * (relevant above + eps) / (relevant above + judged nonrelevant above + 2 eps)
    rank_5 = 1 / 5 + (4 / 5) * (3 / 4) * ((1 + eps) / (1 + 1 + 2 * eps))  # a, c, d pooled above
    rank_6 = 1 / 6 + (5 / 6) * (4 / 5) * ((2 + eps) / (2 + 1 + 2 * eps))  # a, c, d, e pooled above
    table = compute(engine, *frames(run, [*judged, ("q", "c", -1)]), Evaluation(measures=("infAP", "map")))
    whole = table.filter(pl.col("k").is_null()).row(0, named=True)
    assert whole["infap"] == pytest.approx((1 + rank_5 + rank_6) / 4, abs=1e-12)
    assert rank_5 == pytest.approx(0.5, abs=1e-12)
    # AP counts c as nonrelevant: (1/1 + 2/5 + 3/6) / 4
    assert whole["map"] == pytest.approx((1 + 2 / 5 + 3 / 6) / 4, abs=1e-12)
    # c absent from the qrels instead: never pooled, so one pooled rank fewer above e and g
    table = compute(engine, *frames(run, judged), Evaluation(measures=("infAP",)))
    rank_5 = 1 / 5 + (4 / 5) * (2 / 4) * ((1 + eps) / (1 + 1 + 2 * eps))
    rank_6 = 1 / 6 + (5 / 6) * (3 / 5) * ((2 + eps) / (2 + 1 + 2 * eps))
    assert table.filter(pl.col("k").is_null())["infap"].item() == pytest.approx((1 + rank_5 + rank_6) / 4, abs=1e-12)
    # at a cutoff infAP is not defined (trec_eval computes it over the whole ranking only)
    assert table.filter(pl.col("k").is_not_null())["infap"].is_null().all()


def test_relstring_written_out() -> None:
    from pipeline.engines.polars import relstrings

    # by score: a (label 2), b (absent: '-'), c (-1: pooled, not judged, '.'), d (12: '>'),
    # e (1.5: '<'), f (0), g (1); h and i tie at the bottom, trec_eval's order docno descending
    # (i, then h)
    scores = {"a": 9.0, "b": 8.0, "c": 7.0, "d": 6.0, "e": 5.0, "f": 4.0, "g": 3.0, "h": 1.0, "i": 1.0}
    run, qrels = frames(
        [("q", doc, score) for doc, score in scores.items()],
        [("q", "a", 2), ("q", "c", -1), ("q", "d", 12), ("q", "e", 1.5), ("q", "f", 0), ("q", "g", 1), ("q", "h", 3)],
    )

    def strings(evaluation: Evaluation, length: int = 10) -> dict[str, str]:
        return dict(relstrings(run, qrels, evaluation, length).collect().iter_rows())

    assert strings(Evaluation()) == {"q": "2-.><01-3"}
    assert strings(Evaluation(), 3) == {"q": "2-."}
    # trec_eval -M4: the top 4 only
    assert strings(Evaluation(max_results=4)) == {"q": "2-.>"}
    # trec_eval -J: the unjudged (absent or negative) are dropped, the rest ranked anew
    assert strings(Evaluation(unjudged="drop")) == {"q": "2><013"}


def test_relstring_lines_as_trec_eval_prints_them(capsys: pytest.CaptureFixture[str]) -> None:
    # trec_eval -m relstring -q qrels.test results.test: one quoted line per query, no all line
    run, qrels = str(CONFORMANCE / "results.test"), str(CONFORMANCE / "qrels.test")
    argv = ["evaluate", "--output-format", "trec", "--per-query", "--measures", "relstring", "--run", run]
    assert main([*argv, "--qrels", qrels]) == 0
    ours = [line for line in capsys.readouterr().out.splitlines() if line.startswith("relstring")]
    theirs = [line for line in (CONFORMANCE / "full" / "out.test.aq").read_text().splitlines() if "relstring" in line]
    assert ours == theirs


def test_runid_is_the_tag_of_the_run_file_s_last_content_line(tmp_path: Path) -> None:
    from pipeline.io.read import Source, trec_run_id

    # trec_eval keeps the tag of the last line it parses (get_trec_results.c): blank lines and
    # comment lines after it are passed over
    # 200 KB: more than one block of the read from the end, so a line is cut by a block
    lines = [f"q Q0 d{i} {i} {10_000 - i} {'first' if i < 5000 else 'last'}" for i in range(8000)]
    run = tmp_path / "run.txt"
    run.write_text("\n".join([*lines, "", "# a comment", "   "]) + "\n")
    assert trec_run_id(Source.of(str(run))) == "last"
    run.write_text("q Q0 d 1 2.0\n")  # no tag: no runid line
    assert trec_run_id(Source.of(str(run))) is None
    assert trec_run_id(Source.of(str(CONFORMANCE / "results.trunc"))) == "STANDARD"
