"""ndeval's intent-aware measures over judgments per subtopic (the TREC Web Track's diversity
task; ir_measures runs ndeval through pyndeval): ``strec`` (ir_measures' ``StRecall@k``, ndeval's
strec@k), ``P_IA`` (``P_IA@k``, ndeval's P-IA@k), ``ERR_IA`` (``ERR_IA@k``, ndeval's ERR-IA@k),
``AP_IA`` (``AP_IA``, ndeval's MAP-IA), ``alpha_DCG`` (``alpha_DCG@k``, ndeval's alpha-DCG@k),
``NRBP`` (ndeval's NRBP) and those over ndeval's greedy ideal ranking, ``alpha_nDCG``
(``alpha_nDCG@k``), ``nERR_IA`` (``nERR_IA@k``) and ``nNRBP``; the qrels' subtopic as an input (a TREC
qrels' second field, a Parquet or CSV qrels' column ``subtopic``), a document judged twice for
one (query, subtopic) refused on every front, and what the per-document measures read of a
document judged under several subtopics (its largest label).

Expected values: arithmetic written out here, and pyndeval (ndeval.c 4.5 as ir_measures runs it)
run in the test on random judgments per subtopic.
"""

from __future__ import annotations

import dataclasses
import random
import subprocess
import sys
from math import log2
from pathlib import Path

import duckdb
import polars as pl
import pytest

from pipeline.api import evaluate
from pipeline.errors import InvalidInput
from pipeline.registry import PROFILES, Evaluation
from pipeline.sql_files import MACROS, sql_file
from tests.helpers import ROOT, compute

DUCKDB_CLI = Path(sys.executable).parent / "duckdb"

# ndeval's qrels: topic subtopic docno judgment. Query 1 has three subtopics with a relevant
# document (S = 3): d1 is relevant to subtopics 1 and 2, d2 to 2, d3 to 3 (label 2), d4 to none
# (0). Query 2 has no relevant judgment (S = 0). The run ranks d1, d2, d9 (unjudged), d3.
QRELS_LINES = ["1 1 d1 1", "1 2 d1 1", "1 2 d2 1", "1 3 d3 2", "1 1 d4 0", "2 1 e1 0"]
RUN_LINES = ["1 Q0 d1 1 3.0 r", "1 Q0 d2 2 2.0 r", "1 Q0 d9 3 1.5 r", "1 Q0 d3 4 1.0 r", "2 Q0 e1 1 1.0 r"]
CUTOFFS = (1, 2, 5)
EXPECTED = {
    # subtopics covered at or above k / S: d1 covers 1 and 2, d3 (rank 4) covers 3
    ("1", 1, "strec"): 2 / 3,
    ("1", 2, "strec"): 2 / 3,
    ("1", 5, "strec"): 3 / 3,
    # (rank, subtopic) pairs relevant at or above k / (k * S): 2 at rank 1, 1 at rank 2, 1 at rank 4
    ("1", 1, "P_IA"): 2 / (1 * 3),
    ("1", 2, "P_IA"): (2 + 1) / (2 * 3),
    ("1", 5, "P_IA"): (2 + 1 + 0 + 1) / (5 * 3),
    # ERR-IA: each pair adds (1/2)^(results relevant to its subtopic above it) / rank: 1 + 1 at
    # rank 1 (d1: subtopics 1, 2), 1/2 / 2 at rank 2 (d2: subtopic 2 again), 1 / 4 at rank 4 (d3);
    # over S * the sum over i <= k of (1/2)^(i - 1) / i (ndeval's "ideal ideal"), but not at k = 1
    ("1", 1, "ERR_IA"): 1 + 1,
    ("1", 2, "ERR_IA"): (1 + 1 + 0.5 / 2) / (3 * (1 + 0.5 / 2)),
    ("1", 5, "ERR_IA"): (1 + 1 + 0.5 / 2 + 1 / 4) / (3 * (1 + 0.5 / 2 + 0.25 / 3 + 0.125 / 4 + 0.0625 / 5)),
    # AP-IA, the whole ranking: the mean over the subtopics of AP, R of subtopics 1, 2, 3 being
    # 1 (d1; d4 is judged 0), 2 (d1, d2), 1 (d3)
    ("1", None, "AP_IA"): ((1 / 1) / 1 + (1 / 1 + 2 / 2) / 2 + (1 / 4) / 1) / 3,
    # alpha-DCG: the same gains over log2(rank + 1), over S * the sum over i <= k of
    # (1/2)^(i - 1) / log2(i + 1), but not at k = 1
    ("1", 1, "alpha_DCG"): 1 + 1,
    ("1", 2, "alpha_DCG"): (2 / log2(2) + 0.5 / log2(3)) / (3 * (1 / log2(2) + 0.5 / log2(3))),
    ("1", 5, "alpha_DCG"): (2 / log2(2) + 0.5 / log2(3) + 1 / log2(5))
    / (3 * sum(0.5 ** (i - 1) / log2(i + 1) for i in range(1, 6))),
    # NRBP, the whole ranking: (1 - (1 - alpha) * beta) / S * the gains times beta^(rank - 1),
    # alpha = beta = 1/2
    ("1", None, "NRBP"): (1 - 0.5 * 0.5) / 3 * (2 * 1 + 0.5 * 0.5 + 1 * 0.5**3),
    # ndeval's greedy ideal: d1 (gain 2: subtopics 1, 2), then d3 (1: subtopic 3; d2 would add
    # 1/2, subtopic 2 being covered), then d2 (1/2); alpha_nDCG, nERR_IA and nNRBP divide the
    # run's sums by the ideal's (at k = 1 too)
    ("1", 1, "alpha_nDCG"): 2 / 2,
    ("1", 2, "alpha_nDCG"): (2 + 0.5 / log2(3)) / (2 + 1 / log2(3)),
    ("1", 5, "alpha_nDCG"): (2 + 0.5 / log2(3) + 1 / log2(5)) / (2 + 1 / log2(3) + 0.5 / log2(4)),
    ("1", 1, "nERR_IA"): 2 / 2,
    ("1", 2, "nERR_IA"): (2 + 0.5 / 2) / (2 + 1 / 2),
    ("1", 5, "nERR_IA"): (2 + 0.5 / 2 + 1 / 4) / (2 + 1 / 2 + 0.5 / 3),
    ("1", None, "nNRBP"): (2 + 0.5 * 0.5 + 1 * 0.5**3) / (2 + 1 * 0.5 + 0.5 * 0.5**2),
    # S = 0: ndeval scores 0 (its nNRBP is 0 / 0, NaN: ours 0, see docs/conventions.md)
    **{
        ("2", k, name): 0.0
        for k in CUTOFFS
        for name in ("strec", "P_IA", "ERR_IA", "alpha_DCG", "alpha_nDCG", "nERR_IA")
    },
    ("2", None, "AP_IA"): 0.0,
    ("2", None, "NRBP"): 0.0,
    ("2", None, "nNRBP"): 0.0,
}
INTENT_MEASURES = ("strec", "P_IA", "ERR_IA", "AP_IA", "alpha_DCG", "NRBP", "alpha_nDCG", "nERR_IA", "nNRBP")
# of the whole ranking only; the others at each cutoff only
WHOLE_ONLY = ("AP_IA", "NRBP", "nNRBP")
INTENT = Evaluation(cutoffs=CUTOFFS, measures=("ndcg", *INTENT_MEASURES))


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("intent")
    (folder / "qrels.txt").write_text("\n".join(QRELS_LINES) + "\n")
    (folder / "run.txt").write_text("\n".join(RUN_LINES) + "\n")
    # the same judgments twice over (a document judged twice for query 1, subtopic 2)
    (folder / "twice.txt").write_text("\n".join([*QRELS_LINES, "1 2 d2 0"]) + "\n")
    rows = [line.split() for line in QRELS_LINES]
    qrels = pl.DataFrame(
        {"query_id": [r[0] for r in rows], "subtopic": [int(r[1]) for r in rows], "doc_id": [r[2] for r in rows]}
    ).with_columns(relevance=pl.Series([int(r[3]) for r in rows]))
    qrels.write_parquet(folder / "qrels.parquet")
    pl.concat([qrels, qrels.head(1)]).write_parquet(folder / "twice.parquet")
    runs = [line.split() for line in RUN_LINES]
    pl.DataFrame(
        {"query_id": [r[0] for r in runs], "doc_id": [r[2] for r in runs], "score": [float(r[4]) for r in runs]}
    ).write_parquet(folder / "run.parquet")
    return folder


@pytest.fixture(scope="module")
def macros() -> duckdb.DuckDBPyConnection:
    """One connection with the table macros defined (defining them costs as much as a call)."""
    connection = duckdb.connect()
    connection.execute(sql_file(MACROS))
    return connection


def _intent_values(table: pl.DataFrame) -> dict[tuple[str, int | None, str], float]:
    """Each intent-aware measure's values: at each cutoff, AP_IA and NRBP over the whole ranking
    (the others have no whole-ranking value, those two none at a cutoff)."""
    values = {}
    for row in table.to_dicts():
        for name in INTENT_MEASURES:
            if name in row and (row["k"] is None) == (name in WHOLE_ONLY):
                values[(str(row["query_id"]), row["k"], name)] = row[name]
            elif name in row:
                assert row[name] is None, (row["query_id"], row["k"], name)
    return values


def _assert_expected(got: dict[tuple[str, int | None, str], float]) -> None:
    assert set(got) == set(EXPECTED)
    for key, want in EXPECTED.items():
        assert got[key] == pytest.approx(want, abs=1e-12), key


def test_the_hand_collection_on_polars_duckdb_and_the_macros(
    collection: Path, macros: duckdb.DuckDBPyConnection
) -> None:
    """One evaluation per front: each engine from the TREC files (the subtopic is the second
    field), the macros from the Parquet files (a subtopic column of integers, read as text)."""
    for engine in ("polars", "duckdb"):
        result = evaluate(run=collection / "run.txt", qrels=collection / "qrels.txt", evaluation=INTENT, engine=engine)
        _assert_expected(_intent_values(result.per_query))
    rows = macros.execute(
        "select * from ndcg_per_query(?, ?, ks := [1, 2, 5], measures := "
        "['strec', 'P_IA', 'ERR_IA', 'AP_IA', 'alpha_DCG', 'NRBP', 'alpha_nDCG', 'nERR_IA', 'nNRBP'])",
        [str(collection / "run.parquet"), str(collection / "qrels.parquet")],
    ).fetchall()
    names = [column[0] for column in macros.description]
    _assert_expected(_intent_values(pl.DataFrame(rows, schema=names, orient="row")))


def test_sql_ndcg_sql_reads_the_subtopic_column_and_refuses_a_document_judged_twice(collection: Path) -> None:
    """`.read sql/ndcg.sql` in the duckdb CLI: the summary's means over the two queries, then
    the same qrels with a judgment repeated, refused in the command line's words."""

    def ndcg_sql(qrels: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [
                str(DUCKDB_CLI),
                "-csv",
                "-cmd",
                f"SET VARIABLE run_path = '{collection / 'run.parquet'}'",
                "-cmd",
                f"SET VARIABLE qrels_path = '{collection / qrels}'",
                "-cmd",
                "SET VARIABLE ks = [1, 2, 5]",
                "-cmd",
                "SET VARIABLE measures = ['strec', 'P_IA', 'ERR_IA', 'AP_IA', 'alpha_DCG', 'NRBP', 'alpha_nDCG', "
                "'nERR_IA', 'nNRBP']",
                "-c",
                ".read sql/ndcg.sql",
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )

    done = ndcg_sql("qrels.parquet")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    header = lines[0].split(",")
    rows = {row[0]: dict(zip(header, row, strict=True)) for row in (line.split(",") for line in lines[1:])}
    for (query, k, name), value in EXPECTED.items():
        if query == "1":
            mean = (value + EXPECTED[("2", k, name)]) / 2
            assert float(rows["NULL" if k is None else str(k)][name]) == pytest.approx(mean, abs=1e-12)
    refused = ndcg_sql("twice.parquet")
    assert refused.returncode != 0
    assert "document 'd1' is judged 2 times for query '1' under subtopic '1'" in refused.stderr


def test_a_document_judged_twice_for_one_subtopic_is_refused_on_every_front(
    collection: Path, macros: duckdb.DuckDBPyConnection
) -> None:
    message = (
        "twice.txt: document 'd2' is judged 2 times for query '1' under subtopic '2'; each (query_id, subtopic, "
        "doc_id) may appear once in the qrels"
    )
    for engine in ("polars", "duckdb"):
        with pytest.raises(InvalidInput) as refused:
            evaluate(run=collection / "run.txt", qrels=collection / "twice.txt", evaluation=INTENT, engine=engine)
        assert str(refused.value).endswith(message)
    with pytest.raises(duckdb.InvalidInputException) as macro_refused:
        macros.execute(
            "select * from ndcg_per_query(?, ?)", [str(collection / "run.txt"), str(collection / "twice.txt")]
        )
    assert message in str(macro_refused.value)
    # without subtopics a document judged twice for a query is refused as before
    plain = pl.DataFrame({"query_id": ["1", "1"], "doc_id": ["d1", "d1"], "relevance": [1, 0]})
    with pytest.raises(InvalidInput, match="document 'd1' is listed 2 times for query '1'; each"):
        evaluate(run=collection / "run.txt", qrels=plain, evaluation=INTENT)


def test_the_per_document_measures_read_a_document_s_largest_label_over_its_subtopics(collection: Path) -> None:
    """NDCG, P and ERR of the judgments per subtopic equal theirs over one row per document
    holding its largest label (ndeval counts a document relevant to the topic when it is
    relevant to any subtopic): d1 1 (1, 1), d2 1, d3 2, d4 0, e1 0."""
    largest = pl.DataFrame(
        {"query_id": ["1", "1", "1", "1", "2"], "doc_id": ["d1", "d2", "d3", "d4", "e1"], "relevance": [1, 1, 2, 0, 0]}
    )
    evaluation = Evaluation(cutoffs=CUTOFFS, measures=("ndcg", "P", "map", "err"))
    for engine in ("polars", "duckdb"):
        per_subtopic = evaluate(
            run=collection / "run.txt", qrels=collection / "qrels.txt", evaluation=evaluation, engine=engine
        )
        per_document = evaluate(run=collection / "run.txt", qrels=largest, evaluation=evaluation, engine=engine)
        columns = ["query_id", "k", "ndcg", "P", "map", "err"]
        assert per_subtopic.per_query.select(columns).to_dicts() == per_document.per_query.select(columns).to_dicts()


def _random_collection(seed: int) -> tuple[list[tuple[str, str, str, int]], list[tuple[str, str, float]]]:
    """Queries with 1 to 5 subtopics; each judged document judged under a random subset of
    them, labels -1 to 2; runs of few distinct scores, so that most results tie (pyndeval breaks
    ties by docno ascending: --ties docid-asc, the ndeval profile's), with unjudged documents
    among them; a query of the run without judgments, and one judged and never retrieved."""
    rng = random.Random(seed)
    qrels, run = [], []
    for query in range(30):
        qid = f"q{query}"
        subtopics = [str(s) for s in rng.sample(range(1, 9), rng.randint(1, 5))]
        documents = [f"d{i:02d}" for i in range(rng.randint(3, 30))]
        for doc in documents:
            for subtopic in rng.sample(subtopics, rng.randint(1, len(subtopics))):
                qrels.append((qid, subtopic, doc, rng.choice([-1, 0, 0, 1, 1, 2])))
        if query == 29:
            continue  # judged, never retrieved
        pool = [*documents, *(f"u{i}" for i in range(10))]
        retrieved = rng.sample(pool, rng.randint(1, min(25, len(pool))))
        scores = [rng.randint(0, 4) for _ in retrieved]
        run += [(qid, doc, float(score)) for doc, score in zip(retrieved, scores, strict=True)]
    run += [("unjudged", "d00", 1.0)]
    # where ndeval's tie rule decides its greedy ideal: a, b and c gain 2 each; ndeval takes c (the
    # greatest docno), then b over a (1.5 each), so 2, 1.5, 1.5 (a first would give 2, 2, 1)
    qrels += [("tie", s, doc, 1) for doc, subtopics in (("a", "12"), ("b", "34"), ("c", "13")) for s in subtopics]
    run += [("tie", "a", 3.0), ("tie", "b", 2.0), ("tie", "c", 1.0)]
    # 90 relevant documents: ndeval's ideal NRBP sums all 90 ranks, ours 55 + ceil(log2 3) of them
    for i in range(90):
        qrels += [("deep", s, f"p{i:02d}", 1) for s in rng.sample(["x", "y", "z"], rng.randint(1, 2))]
    run += [("deep", f"p{i:02d}", float(100 - i)) for i in rng.sample(range(90), 40)]
    return qrels, run


# ours and ndeval's names (pyndeval's), with a cutoff or over the whole ranking
NDEVAL_NAMES = {
    "strec": "strec",
    "P_IA": "P-IA",
    "ERR_IA": "ERR-IA",
    "AP_IA": "MAP-IA",
    "alpha_DCG": "alpha-DCG",
    "NRBP": "NRBP",
    "alpha_nDCG": "alpha-nDCG",
    "nERR_IA": "nERR-IA",
    "nNRBP": "nNRBP",
}


def test_the_ndeval_profile_equals_pyndeval_on_random_judgments_per_subtopic_and_tied_scores() -> None:
    pyndeval = pytest.importorskip("pyndeval", reason="pyndeval (the peers extra) runs ndeval.c")
    cutoffs = (1, 2, 3, 5, 10, 20)
    evaluation = PROFILES["ndeval"].evaluation(cutoffs=cutoffs, measures=("ndcg", *INTENT_MEASURES))
    assert evaluation.ties == "docid-asc"
    evaluation_desc = dataclasses.replace(evaluation, ties="docid-desc")
    for seed in (1, 2):
        qrels, run = _random_collection(seed)
        names = [f"{NDEVAL_NAMES[m]}@{k}" for m in INTENT_MEASURES if m not in WHOLE_ONLY for k in cutoffs]
        names += [NDEVAL_NAMES[m] for m in WHOLE_ONLY]
        expected = pyndeval.ndeval(qrels, run, measures=names)
        qrels_frame = pl.DataFrame(qrels, schema=["query_id", "subtopic", "doc_id", "relevance"], orient="row")
        run_frame = pl.DataFrame(run, schema=["query_id", "doc_id", "score"], orient="row")
        for engine in ("polars", "duckdb"):
            table = compute(engine, run_frame.lazy(), qrels_frame.lazy(), evaluation)
            got = _intent_values(table)
            assert {query for query, _, _ in got} == set(expected)
            for query, values in expected.items():
                for name in INTENT_MEASURES:
                    for k in (None,) if name in WHOLE_ONLY else cutoffs:
                        peer = NDEVAL_NAMES[name] if k is None else f"{NDEVAL_NAMES[name]}@{k}"
                        assert got[(query, k, name)] == pytest.approx(values[peer], abs=1e-9), (seed, query, peer)
        # the ties decide: trec_eval's order of them scores otherwise
        descending = _intent_values(compute("polars", run_frame.lazy(), qrels_frame.lazy(), evaluation_desc))
        assert sum(abs(descending[key] - value) > 1e-9 for key, value in got.items()) > 10


# pyndeval's own test (seanmacavaney/pyndeval, tests/test_pyndeval.py, test_basic): its four judgments
# per subtopic, its run and the values it asserts, to 4 decimals (strec 0.6666: 2/3 cut, not rounded)
PYNDEVAL_QRELS = [("0", "a", "A", 1), ("0", "b", "B", 1), ("0", "b", "D", 1), ("0", "c", "C", 1)]
PYNDEVAL_RUN = [("0", "A", 9.3), ("0", "D", 8.4), ("0", "E", 8.1), ("0", "B", 7.6)]
PYNDEVAL_ASSERTS = {
    **{"ERR-IA@5": 0.3933, "ERR-IA@10": 0.3907, "ERR-IA@20": 0.3907},
    **{"nERR-IA@5": 0.8297, "nERR-IA@10": 0.8297, "nERR-IA@20": 0.8297},
    **{"alpha-DCG@5": 0.4052, "alpha-DCG@10": 0.3998, "alpha-DCG@20": 0.3997},
    **{"alpha-nDCG@5": 0.7868, "alpha-nDCG@10": 0.7868, "alpha-nDCG@20": 0.7868},
    **{"NRBP": 0.3906, "nNRBP": 0.8620, "MAP-IA": 0.5000},
    **{"P-IA@5": 0.2000, "P-IA@10": 0.1000, "P-IA@20": 0.0500},
    **{"strec@5": 0.6666, "strec@10": 0.6666, "strec@20": 0.6666},
}


def test_pyndeval_s_own_asserted_values() -> None:
    evaluation = PROFILES["ndeval"].evaluation(cutoffs=(5, 10, 20), measures=("ndcg", *INTENT_MEASURES))
    qrels = pl.DataFrame(PYNDEVAL_QRELS, schema=["query_id", "subtopic", "doc_id", "relevance"], orient="row")
    run = pl.DataFrame(PYNDEVAL_RUN, schema=["query_id", "doc_id", "score"], orient="row")
    for engine in ("polars", "duckdb"):
        got = _intent_values(compute(engine, run.lazy(), qrels.lazy(), evaluation))
        for name in INTENT_MEASURES:
            for k in (None,) if name in WHOLE_ONLY else (5, 10, 20):
                peer = NDEVAL_NAMES[name] if k is None else f"{NDEVAL_NAMES[name]}@{k}"
                assert got[("0", k, name)] == pytest.approx(PYNDEVAL_ASSERTS[peer], abs=1e-4), (engine, peer)


def test_the_intent_measures_and_the_refusal_on_spark(collection: Path, local_spark: object) -> None:
    """Spark runs the same SQL, transpiled; it reads Parquet, whose integer subtopics become text."""
    result = evaluate(
        run=collection / "run.parquet", qrels=collection / "qrels.parquet", evaluation=INTENT, engine="spark"
    )
    _assert_expected(_intent_values(result.per_query))
    with pytest.raises(InvalidInput, match="document 'd1' is judged 2 times for query '1' under subtopic '1'"):
        evaluate(run=collection / "run.parquet", qrels=collection / "twice.parquet", evaluation=INTENT, engine="spark")
