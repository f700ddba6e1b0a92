"""``--measures all_trec`` against trec_eval 10.0's own test outputs (tests/data/trec_eval/full/):
every line of ``out.test.aq``, ``.aqc`` (``-c``), ``.aqcM`` (``-c -M100``) and ``.aql`` (``-l2``,
``-mrelstring.20``) of the families the registry has is printed, per query and ``all``, with
trec_eval's name, padding and number format, its value within 5e-5 (trec_eval prints 4
decimals), and in its order, through the command line on Polars and DuckDB, and on Spark for one
file; ``runid`` (the run's name) and ``relstring`` (the labels of the top results) as strings.
Every family is there, so a line printed that trec_eval does not print, or one left out, fails
here; the rbp_resid lines where trec_eval departs from the published residual are held to the
published value (:data:`PUBLISHED_RESIDUAL`).

``--measures official`` (trec_eval's default output, no ``-m``) diffs clean, byte for byte,
against trec_eval's ``out.test``, ``out.comment.test`` and a ``-q -c`` output.

Also, on small inputs written out by hand: the two conventions of judgment coverage
(trec_eval's ``unj@k``, ranks past the retrieved counting as judged, and ir_measures'
``Judged@k``, counting as unjudged), infAP's terms (a pooled-but-unjudged rank against one absent
from the judgments), relstring's characters, and trec_eval's G, binG, Rndcg and ndcg_rel and
rank-biased precision with its residual on a small graded input, the first four against
pytrec_eval on random data, and Polars and DuckDB on random data under the conventions the
engines' edge-case matrix does not vary."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from pipeline.cli import main
from pipeline.registry import Discount, Evaluation, Gain, SpecError
from tests.helpers import CONFORMANCE, ENGINES, compute, frames
from tests.helpers.peers import as_dicts, assert_same, random_data
from tests.helpers.peers import frames as peer_frames

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
ROUNDING = 5e-5 + 1e-12  # trec_eval prints 4 decimals: half a unit of the last
# Where we print the published rbp_resid (Moffat and Zobel 2008), not trec_eval's: its
# m_rbp_resid.c sets a value only when an unjudged result is retrieved, so query 302 under -c
# (no result retrieved: all of RBP unknown, residual p^0 = 1) prints 0, and the mean with it.
# The published values, from trec_eval's own lines of 301 and 303 (docs/conventions.md).
PUBLISHED_RESIDUAL = {
    ("rbp_resid", "302"): 1.0,
    ("rbp_resid", "all"): (0.0610 + 1.0 + 0.0049) / 3,
}
NOT_TREC_EVAL_S = {"aq": {}, "aqc": PUBLISHED_RESIDUAL, "aqcM": PUBLISHED_RESIDUAL, "aql": {}}
# what the families the registry has print, of the 387 lines of each file, as trec_eval does
# (every line of all_trec is printed: runid and relstring as strings)
MATCHED_LINES = {"aq": 387, "aqc": 385, "aqcM": 385, "aql": 387}


def trec_lines_of(text: str) -> dict[tuple[str, str], str]:
    """``{(measure, query): line}`` of trec_eval's format (comment lines aside)."""
    return {tuple(line.split()[:2]): line for line in text.splitlines() if line.strip() and not line.startswith("#")}  # type: ignore[misc]


def assert_prints_trec_eval_lines(
    ours: dict[tuple[str, str], str],
    theirs: dict[tuple[str, str], str],
    published: dict[tuple[str, str], float],
) -> int:
    """Every line of ``theirs`` of a family we have is in ``ours`` with the same name field
    (padding included) and a value within rounding, but those of ``published``, whose value is
    that one, and we print no other line: the count of lines matched to trec_eval's."""
    expected = dict(theirs)
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
        value = str(published.get(key, value))
        assert abs(float(our_value) - float(value)) <= ROUNDING, (key, ours[key], line)
    return len(set(expected) - set(published))


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
    assert assert_prints_trec_eval_lines(trec_lines_of(out), theirs, NOT_TREC_EVAL_S[name]) == MATCHED_LINES[name]
    # in trec_eval's order: query by query (then all), each in its measure table's order
    assert list(trec_lines_of(out)) == list(theirs)


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
    assert assert_prints_trec_eval_lines(ours, theirs, NOT_TREC_EVAL_S["aqcM"]) == MATCHED_LINES["aqcM"]


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


# A small graded input for trec_eval's gain measures and RBP, the arithmetic written out below.
# q: ranks a (label 2), b (0), c (unjudged), d (1); x (2) is judged and not retrieved. Gains
# 2, 0, 0, 1; the ideal 2, 2, 1 (M = 3, its gains sum to 5); R = 3 (a, d, x); n = 4.
# r: ranks f (unjudged), e (1), g (0), h (unjudged): gains 0, 1, 0, 0; the ideal 1 (M = 1).
# s: judged (z, label 1), nothing retrieved (scored with --all-queries).
GRADED_RUN = [("q", "a", 4.0), ("q", "b", 3.0), ("q", "c", 2.0), ("q", "d", 1.0)]
GRADED_RUN += [("r", "f", 4.0), ("r", "e", 3.0), ("r", "g", 2.0), ("r", "h", 1.0)]
GRADED_QRELS = [("q", "a", 2), ("q", "b", 0), ("q", "d", 1), ("q", "x", 2)]
GRADED_QRELS += [("r", "e", 1), ("r", "g", 0), ("s", "z", 1)]
GAIN_MEASURES = ("G", "binG", "Rndcg", "ndcg_rel", "rbp")


def _whole(table: pl.DataFrame) -> dict[str, dict[str, float]]:
    """``{query: {measure: value}}`` of the whole ranking (k null)."""
    return {row["query_id"]: row for row in table.filter(pl.col("k").is_null()).iter_rows(named=True)}


def assert_gain_measures_written_out(rows: dict[str, dict[str, float]]) -> None:
    """G, binG, Rndcg and ndcg_rel of the graded input (any p of RBP)."""
    log2 = math.log2
    q, r, s = rows["q"], rows["r"], rows["s"]
    # binG: a relevant result at rank i with f relevant at or above it adds 1 / log2(2 + i - f), / R
    assert q["binG"] == pytest.approx((1 / log2(2 + 1 - 1) + 1 / log2(2 + 4 - 2)) / 3)  # 0.5
    assert r["binG"] == pytest.approx(1 / log2(2 + 2 - 1) / 1)
    # G: the cost c(i) adds max(g*(i), 1) a rank (1 past M): 2, 4, 5, 6; the gains so far 2, 2,
    # 2, 3; rank 1 adds 2 / log2(2 + 2 - 2), rank 4 adds 1 / log2(2 + 6 - 3); over 2 + 2 + 1
    assert q["G"] == pytest.approx((2 / log2(2) + 1 / log2(5)) / 5)
    # r: costs 1, 2, ...; gains so far 0, 1: rank 2 adds 1 / log2(2 + 2 - 1); over 1
    assert r["G"] == pytest.approx(1 / log2(3))
    # Rndcg of q: the ideal's gain changes after ranks 2 (2 -> 1) and 3 (1 -> 0); n = 4 = M + 1,
    # where trec_eval leaves the whole ranking's NDCG out: the mean of NDCG@2 and NDCG@3
    dcg = {1: 2.0, 2: 2.0, 3: 2.0, 4: 2 + 1 / log2(5)}
    idcg = {1: 2.0, 2: 2 + 2 / log2(3), 3: 2 + 2 / log2(3) + 1 / log2(4)}
    assert q["Rndcg"] == pytest.approx((dcg[2] / idcg[2] + dcg[3] / idcg[3]) / 2)  # 0.5724
    # r: one change, after rank 1 (NDCG@1 = 0); n = 4 >= M + 2: the whole NDCG counts too
    assert r["Rndcg"] == pytest.approx((0 + (1 / log2(3)) / 1) / 2)
    # ndcg_rel of q: NDCG at the ranks that gain (1 and 4, idcg of min(i, M)), and the whole NDCG
    # once for x, the one of the M = 3 not retrieved; / M
    whole = dcg[4] / idcg[3]
    assert q["ndcg_rel"] == pytest.approx((dcg[1] / idcg[1] + dcg[4] / idcg[3] + whole) / 3)  # 0.7641
    assert r["ndcg_rel"] == pytest.approx((1 / log2(3)) / 1)
    # nothing retrieved: 0, and the whole of RBP unknown (p^0 = 1; trec_eval prints 0)
    assert (s["G"], s["binG"], s["Rndcg"], s["ndcg_rel"], s["rbp"], s["rbp_resid"]) == (0, 0, 0, 0, 0, 1)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_gain_measures_written_out(engine: str) -> None:
    run, qrels = frames(GRADED_RUN, GRADED_QRELS)
    rows = _whole(compute(engine, run, qrels, Evaluation(measures=GAIN_MEASURES, all_queries=True)))
    assert_gain_measures_written_out(rows)
    q, r = rows["q"], rows["r"]
    # RBP, p = 0.9: the gains over the query's largest (2 for q, 1 for r), weighted p^(i-1)
    assert q["rbp"] == pytest.approx(0.1 * (2 / 2 * 1 + 1 / 2 * 0.9**3))  # 0.13645
    assert r["rbp"] == pytest.approx(0.1 * 0.9)
    # the residual: the unjudged ranks' weights (1 - p) p^(i-1) and the tail's, p^n
    assert q["rbp_resid"] == pytest.approx(0.1 * 0.9**2 + 0.9**4)  # 0.7371
    assert r["rbp_resid"] == pytest.approx(0.1 * (1 + 0.9**3) + 0.9**4)


@pytest.mark.spark
@pytest.mark.timeout(900)
def test_gain_measures_and_rbp_persistence_written_out_on_spark(local_spark: object) -> None:
    run, qrels = frames(GRADED_RUN, GRADED_QRELS)
    evaluation = Evaluation(measures=GAIN_MEASURES, all_queries=True, rbp_persistence=0.5)
    rows = _whole(compute("spark", run, qrels, evaluation))
    assert_gain_measures_written_out(rows)
    assert rows["q"]["rbp"] == pytest.approx(0.5 * (1 * 1 + 0.5 * 0.5**3))
    assert rows["q"]["rbp_resid"] == pytest.approx(0.5 * 0.5**2 + 0.5**4)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_rbp_persistence_and_the_gain_measures_conventions(engine: str) -> None:
    run, qrels = frames(GRADED_RUN, GRADED_QRELS)
    rows = _whole(compute(engine, run, qrels, Evaluation(measures=("RBP",), rbp_persistence=0.5)))
    assert rows["q"]["rbp"] == pytest.approx(0.5 * (1 * 1 + 0.5 * 0.5**3))  # 0.53125
    assert rows["q"]["rbp_resid"] == pytest.approx(0.5 * 0.5**2 + 0.5**4)  # 0.1875
    assert rows["r"]["rbp"] == pytest.approx(0.5 * 0.5) and rows["r"]["rbp_resid"] == pytest.approx(0.625)
    # binary gain: the paper's binary RBP (q: a and d relevant)
    binary = _whole(compute(engine, run, qrels, Evaluation(measures=("rbp",), gain=Gain("binary"))))
    assert binary["q"]["rbp"] == pytest.approx(0.1 * (1 + 0.9**3))
    # -l2: binG counts a and x of q (R = 2), nothing of r; Rndcg is 0 when R is 0 (m_Rndcg.c);
    # G reads gains, not relevance
    rows = _whole(compute(engine, run, qrels, Evaluation(measures=GAIN_MEASURES, relevance_threshold=2)))
    assert rows["q"]["binG"] == pytest.approx(1 / math.log2(2) / 2)
    assert (rows["r"]["binG"], rows["r"]["Rndcg"]) == (0, 0)
    assert rows["r"]["G"] == pytest.approx(1 / math.log2(3))
    # trec_eval's own gain map (G.1=3) is the gain convention's map: q's gains 2, 0, 0, 3, its
    # ideal 3, 2, 2, costs 3, 5, 7, 8 and gains so far 2, 2, 2, 5
    mapped = _whole(compute(engine, run, qrels, Evaluation(measures=("G",), gain=Gain.parse("1=3"))))
    assert mapped["q"]["G"] == pytest.approx((2 / math.log2(2 + 3 - 2) + 3 / math.log2(2 + 8 - 5)) / 7)
    with pytest.raises(SpecError, match="strictly between 0 and 1"):
        Evaluation(measures=("rbp",), rbp_persistence=1.0)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_gain_measures_match_pytrec_eval(engine: str, seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run_rows, qrels_rows = random_data(seed)
    run_dict, qrels_dict = as_dicts(run_rows, qrels_rows)
    names = ("G", "binG", "Rndcg", "ndcg_rel")
    evaluated = pytrec_eval.RelevanceEvaluator(qrels_dict, set(names)).evaluate(run_dict)
    expected = {(name, query): values[name] for query, values in evaluated.items() for name in names}
    run, qrels = peer_frames(run_rows, qrels_rows)
    rows = _whole(compute(engine, run, qrels, Evaluation(measures=names)))
    assert_same({(name, query): rows[query][name] for name, query in expected}, expected)
    assert set(rows) == set(evaluated)


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_each_gain_measure_asked_alone_matches_pytrec_eval(engine: str) -> None:
    """Each measure of the gain curve alone: the engines join only the sums it reads (rbp none of
    the ideal's), and what it reads is there."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run_rows, qrels_rows = random_data(3)
    run_dict, qrels_dict = as_dicts(run_rows, qrels_rows)
    run, qrels = peer_frames(run_rows, qrels_rows)
    for name in ("G", "Rndcg", "ndcg_rel"):
        evaluated = pytrec_eval.RelevanceEvaluator(qrels_dict, {name}).evaluate(run_dict)
        rows = _whole(compute(engine, run, qrels, Evaluation(measures=(name,))))
        assert_same({query: rows[query][name] for query in evaluated}, {q: v[name] for q, v in evaluated.items()})


@pytest.mark.parametrize(
    "options",
    [
        {"tie_bounds": True},
        {"discount": Discount("jk", 3.0)},
        {"gain": Gain("exponential")},
        {"gain": Gain.parse("0=-1,1=0.5,3=7")},
        {"ties": "average", "gain": Gain.parse("2=-2")},
        {"rbp_persistence": 0.3, "empty_ideal": "nan"},
        {"ideal": "judged-cut-at-hits", "unjudged": "drop", "max_results": 4},
    ],
    ids=str,
)
def test_gain_measures_engines_agree_under_the_conventions(options: dict) -> None:
    """The conventions the edge-case matrix does not vary (discounts, gains and maps with
    negative values, persistence), on random graded data with ties: Polars and DuckDB at 1e-9."""
    run_rows, qrels_rows = random_data(7)
    run, qrels = peer_frames(run_rows, qrels_rows)
    evaluation = Evaluation(measures=GAIN_MEASURES, cutoffs=(3,), **options)
    by_polars, by_duckdb = (compute(engine, run, qrels, evaluation).sort("query_id", "k") for engine in ENGINES)
    for column in ("G", "binG", "Rndcg", "ndcg_rel", "rbp", "rbp_resid"):
        for ours, theirs in zip(by_polars[column], by_duckdb[column], strict=True):
            assert (ours is None) == (theirs is None), column
            if ours is not None and not (math.isnan(ours) and math.isnan(theirs)):
                assert ours == pytest.approx(theirs, abs=1e-9), column


@pytest.mark.parametrize("engine", ["polars", "duckdb"])
def test_rndcg_scores_an_empty_ideal_as_ndcg_does(tmp_path: Path, engine: str) -> None:
    """Through the command line: query ``e`` judges its one result 0 (no positive gain: an empty
    ideal); under each --empty-ideal, G, Rndcg and ndcg_rel score it as ndcg does, by the
    convention's definition: 0, 1, NaN, or left out. Query ``t`` (threshold 2, its label 1):
    R = 0 while its ideal holds a gain of 1, so Rndcg is 0, as m_Rndcg.c returns for R = 0, and
    G is its own: one result of gain 1 at rank 1, 1 / log2(2 + 0) / 1 = 1."""
    from tests.helpers import run_cli

    run, qrels = tmp_path / "run.parquet", tmp_path / "qrels.parquet"
    pl.DataFrame(
        {"query_id": ["q", "q", "e", "t"], "doc_id": ["a", "b", "c", "d"], "score": [2.0, 1.0, 1.0, 1.0]}
    ).write_parquet(run)
    pl.DataFrame({"query_id": ["q", "e", "t"], "doc_id": ["a", "c", "d"], "relevance": [2, 0, 1]}).write_parquet(qrels)
    expected = {"zero": 0.0, "one": 1.0, "nan": math.nan, "skip": None}
    for empty_ideal, value in expected.items():
        out = tmp_path / empty_ideal
        result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--measures", "G,Rndcg,ndcg_rel", "--empty-ideal",
                         empty_ideal, "--engine", engine, "--out", out)  # fmt: skip
        assert result.returncode == 0, result.stderr
        rows = {
            r["query_id"]: r
            for r in pl.read_parquet(out / "per_query.parquet").filter(pl.col("k").is_null()).iter_rows(named=True)
        }
        for measure in ("ndcg", "G", "Rndcg", "ndcg_rel"):
            got = rows["e"][measure]
            if value is None:
                assert got is None, (empty_ideal, measure)
            elif math.isnan(value):
                assert got is not None and math.isnan(got), (empty_ideal, measure)
            else:
                assert got == pytest.approx(value, abs=1e-12), (empty_ideal, measure)
        assert rows["q"]["Rndcg"] == pytest.approx(1.0) and rows["q"]["G"] == pytest.approx(1.0)
    threshold = tmp_path / "threshold"
    result = run_cli("evaluate", "--run", run, "--qrels", qrels, "--measures", "G,Rndcg", "--relevance-threshold", "2",
                     "--empty-ideal", "one", "--engine", engine, "--out", threshold)  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = {
        r["query_id"]: r
        for r in pl.read_parquet(threshold / "per_query.parquet").filter(pl.col("k").is_null()).iter_rows(named=True)
    }
    assert rows["t"]["Rndcg"] == pytest.approx(0.0, abs=1e-12) and rows["t"]["G"] == pytest.approx(1.0)
    assert rows["e"]["Rndcg"] == pytest.approx(1.0)  # its ideal empty: --empty-ideal one
