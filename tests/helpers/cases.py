"""The edge-case matrix (CASES, and OPTION_CASES under every convention option), seeded random
cases, the run as a frame in arrival order, and the expectations of tests/helpers/reference.py for
them: what the engine, Spark and tie-bound tests check against."""

from __future__ import annotations

import random

import polars as pl

from pipeline import Discount, Evaluation, Gain
from tests.helpers import reference

# name: (run rows (query, doc, score), qrels rows (query, doc, label), evaluation options, id type)
CASES: dict[str, tuple[list[tuple], list[tuple], dict, type]] = {
    "ties across the cutoff": (
        [("q", "a", 1.0), ("q", "b", 1.0), ("q", "c", 1.0), ("q", "d", 0.5)],
        [("q", "a", 2), ("q", "c", 1), ("q", "d", 3)],
        {"cutoffs": (1, 2, 3)},
        pl.String,
    ),
    "all scores tied": (
        [("q", f"d{i}", 0.0) for i in range(6)],
        [("q", "d1", 1), ("q", "d4", 2)],
        {"cutoffs": (2, 5)},
        pl.String,
    ),
    "k larger than the list": (
        [("q", "a", 3.0), ("q", "b", 2.0)],
        [("q", "a", 1), ("q", "b", 2), ("q", "z", 3)],
        {"cutoffs": (10, 1000)},
        pl.String,
    ),
    "no relevant documents": (
        [("q", "a", 3.0), ("q", "b", 2.0), ("r", "a", 1.0)],
        [("q", "a", 0), ("q", "b", 0), ("r", "a", 1)],
        {"cutoffs": (1, 5)},
        pl.String,
    ),
    "negative labels": (
        [("q", "a", 3.0), ("q", "b", 2.0), ("q", "c", 1.0)],
        [("q", "a", -1), ("q", "b", 2), ("q", "c", -2), ("q", "d", 1)],
        {"cutoffs": (1, 2, 3)},
        pl.String,
    ),
    "query only in run": (
        [("q", "a", 1.0), ("orphan", "a", 1.0)],
        [("q", "a", 1)],
        {"cutoffs": (1,)},
        pl.String,
    ),
    "query only in qrels": (
        [("q", "a", 1.0)],
        [("q", "a", 1), ("missing", "x", 2)],
        {"cutoffs": (1, 3)},
        pl.String,
    ),
    "query only in qrels, all queries": (
        [("q", "a", 1.0)],
        [("q", "a", 1), ("missing", "x", 2)],
        {"cutoffs": (1, 3), "all_queries": True},
        pl.String,
    ),
    "unicode ids": (
        [("запрос", "文書-2", 1.0), ("запрос", "文書-1", 1.0), ("запрос", "é", 0.5), ("🔎", "ß", 1.0)],
        [("запрос", "文書-1", 2), ("запрос", "é", 1), ("🔎", "ß", 1), ("🔎", "ü", 3)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "integer ids tie-break in string order": (
        # doc 9 sorts above 10 as strings ("9" > "10"), though not as numbers
        [(1, 9, 1.0), (1, 10, 1.0), (1, 100, 1.0), (2, 5, 2.0)],
        [(1, 10, 1), (1, 100, 2), (2, 5, 1)],
        {"cutoffs": (1, 2)},
        pl.Int64,
    ),
    "gain map with an unmapped level and a mapped zero": (
        [("q", "a", 5.0), ("q", "b", 4.0), ("q", "c", 3.0), ("q", "d", 2.0), ("q", "e", 1.0)],
        [("q", "a", 0), ("q", "b", 3), ("q", "c", 1), ("q", "d", 4), ("q", "e", -1), ("q", "f", 2)],
        {"cutoffs": (2, 4), "gain": Gain.parse("0=0.5,1=3,2=9,4=4.5,-1=100")},
        pl.String,
    ),
    "gain map with a negative gain": (
        [("q", "a", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "b", 2)],
        {"cutoffs": (1,), "gain": Gain.parse("1=-2")},
        pl.String,
    ),
    "exponential gain, jk discount base 3": (
        [("q", f"d{i}", float(10 - i)) for i in range(8)],
        [("q", f"d{i}", i % 4) for i in range(8)],
        {"cutoffs": (3, 5), "gain": Gain("exponential"), "discount": Discount("jk", 3.0)},
        pl.String,
    ),
    "max results keeps the best, not the first rows": (
        [("q", "low", 0.1), ("q", "mid", 0.5), ("q", "top", 0.9)],
        [("q", "low", 3), ("q", "top", 1)],
        {"cutoffs": (1, 5), "max_results": 2},
        pl.String,
    ),
    "fractional labels": (
        [("q", "a", 0.3), ("q", "b", 0.2), ("q", "c", 0.1)],
        [("q", "a", 0.5), ("q", "b", 0.9), ("q", "c", 0.3)],
        {"cutoffs": (2,)},
        pl.String,
    ),
}


# The same edge cases again under each convention option, plus cases aimed at one option.
OPTION_VALUES: dict[str, list[dict]] = {
    "ties": [{"ties": "input-order"}, {"ties": "average"}],
    "ideal": [{"ideal": "retrieved"}, {"ideal": "judged-cut-at-hits"}],
    "empty_ideal": [{"empty_ideal": "one"}, {"empty_ideal": "skip"}, {"empty_ideal": "nan"}],
    "unjudged": [{"unjudged": "drop"}],
    "duplicates": [{"duplicates": "first"}, {"duplicates": "max-score"}],
    "relevance": [{"gain": Gain("binary")}, {"gain": Gain("binary"), "relevance_threshold": 2}],
    # the denominators change no NDCG: the matrices that ask for every measure family (the
    # macros') read them. docid-asc ties (pyndeval's) ride along rather than add every case again
    # (measured: +35 s of CPU over the four matrices as a choice of its own): the denominators and
    # the order of ties meet nowhere
    "denominators": [
        {
            "ap_denominator": "min-k-relevant",
            "precision_denominator": "min-k-retrieved",
            "err_max_grade": 6,
            "ties": "docid-asc",
        }
    ],
    "queries_without_judgments": [
        {"queries_without_judgments": "evaluate"},
        {"queries_without_judgments": "evaluate", "empty_ideal": "skip"},
        {"queries_without_judgments": "evaluate", "all_queries": True},
    ],
    # the matrix's scores of 0 ("all scores tied": a query with an empty ranking) and below
    "retrieved_scores": [{"retrieved_scores": "positive"}, {"retrieved_scores": "positive", "max_results": 2}],
    # changes no NDCG: the matrices that ask for rbp read it (the graded labels: gains above 1)
    "rbp_gain": [{"rbp_gain": "unscaled"}],
}


OPTION_CASES: dict[str, tuple[list[tuple], list[tuple], dict, type]] = {
    "a tied group straddles the cutoff": (
        [("q", "a", 2.0), ("q", "b", 1.0), ("q", "c", 1.0), ("q", "d", 1.0), ("q", "e", 0.5)],
        [("q", "a", 1), ("q", "b", 3), ("q", "c", 0), ("q", "d", 2), ("q", "e", 1)],
        {"cutoffs": (1, 2, 3, 10)},
        pl.String,
    ),
    "an input rank column, partly missing": (
        [("q", "a", 1.0, 3), ("q", "b", 1.0, 1), ("q", "c", 5.0, None), ("q", "d", 0.5, 2), ("r", "x", 1.0, None)],
        [("q", "a", 2), ("q", "c", 3), ("q", "d", 1), ("r", "x", 1)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "duplicates in the run": (
        [("q", "a", 0.2), ("q", "b", 0.5), ("q", "a", 0.9), ("q", "c", 0.5), ("q", "a", 0.9), ("q", "c", 0.1)],
        [("q", "a", 1), ("q", "b", 2), ("q", "c", 3)],
        {"cutoffs": (1, 2)},
        pl.String,
    ),
    "only unjudged documents retrieved": (
        [("q", "x", 2.0), ("q", "y", 1.0), ("r", "a", 1.0), ("r", "z", 3.0)],
        [("q", "a", 1), ("r", "a", 2)],
        {"cutoffs": (1, 3)},
        pl.String,
    ),
    "scores at and below 0": (
        [("q", "a", 0.5), ("q", "b", 0.0), ("q", "c", -1.0), ("q", "d", 0.0), ("q", "e", 0.5), ("r", "x", -2.0)],
        [("q", "a", 1), ("q", "b", 2), ("q", "c", 3), ("q", "e", 0), ("r", "x", 1), ("r", "y", 2)],
        {"cutoffs": (1, 2, 5)},
        pl.String,
    ),
    "fewer hits than relevant documents": (
        [("q", "a", 2.0), ("q", "b", 1.0)],
        [("q", "a", 1), ("q", "c", 3), ("q", "d", 2), ("q", "e", 2)],
        {"cutoffs": (1, 3, 5)},
        pl.String,
    ),
}


def reference_options(evaluation: Evaluation) -> dict:
    """The spec as the keyword arguments of tests/helpers/reference.py."""
    return {
        "gain_kind": evaluation.gain.kind,
        "levels": dict(evaluation.gain.levels),
        "discount_kind": evaluation.discount.kind,
        "base": evaluation.discount.log_base,
        "all_queries": evaluation.all_queries,
        "max_results": evaluation.max_results,
        "ties": evaluation.ties,
        "ideal": evaluation.ideal,
        "empty_ideal": evaluation.empty_ideal,
        "unjudged": evaluation.unjudged,
        "duplicates": evaluation.duplicates,
        "relevance_threshold": evaluation.relevance_threshold,
        "queries_without_judgments": evaluation.queries_without_judgments,
        "retrieved_scores": evaluation.retrieved_scores,
    }


def reference_table(run_rows: list[tuple], qrels_rows: list[tuple], evaluation: Evaluation) -> dict:
    return reference.ndcg_table(run_rows, qrels_rows, list(evaluation.cutoffs), **reference_options(evaluation))


def run_frame(run_rows: list[tuple], id_type: type = pl.String) -> pl.LazyFrame:
    """The run in row order (its arrival), with a ``rank`` column when the rows carry one."""
    schema: dict = {"query_id": id_type, "doc_id": id_type, "score": pl.Float64}
    if any(len(row) > 3 for row in run_rows):
        schema["rank"] = pl.Int64
        run_rows = [(*row[:3], row[3] if len(row) > 3 else None) for row in run_rows]
    return pl.LazyFrame(run_rows, schema=schema, orient="row")


def random_case(seed: int, *, conventions: bool = False) -> tuple[list[tuple], list[tuple], Evaluation]:
    """Random run and qrels; with ``conventions``, random convention options too, with
    duplicate rows when the duplicate policy allows them and a rank column at times."""
    rng = random.Random(seed)
    options: dict = {}
    if conventions:
        options = {name: rng.choice(values) for name, values in CONVENTION_VALUES.items()}
        if options["gain"] == "binary":
            options["gain"] = Gain("binary")
        else:
            options.pop("gain")
    with_duplicates = options.get("duplicates", "error") != "error"
    with_rank = conventions and rng.random() < 0.3
    run_rows, qrels_rows = [], []
    for q in range(rng.randint(1, 25)):
        docs = [f"d{d}" for d in range(rng.randint(1, 40))]
        retrieved = rng.sample(docs, rng.randint(1, len(docs)))
        if with_duplicates:
            retrieved += rng.choices(retrieved, k=rng.randint(0, 3))
        for doc in retrieved:
            row: tuple = (f"q{q}", doc, float(rng.randint(0, 8)))  # few distinct scores: many ties
            if with_rank:
                row = (*row, rng.choice(range(1, 6)))  # ties and gaps in the rank too (a null is refused)
            run_rows.append(row)
        for doc in docs:
            if rng.random() < 0.5:
                qrels_rows.append((f"q{q}", doc, rng.choice([-1, 0, 0, 1, 2, 3, 4])))
    if not qrels_rows:
        qrels_rows.append(("q0", "d0", 1))
    rng.shuffle(run_rows)
    gain = options.pop("gain", None) or rng.choice(
        [Gain(), Gain("exponential"), Gain.parse("1=3,2=9,4=4.5"), Gain.parse("0=1,3=-1")]
    )
    discount = rng.choice([Discount(), Discount("jk", 2.0), Discount("jk", 2.5)])
    evaluation = Evaluation(
        cutoffs=tuple(sorted(rng.sample([1, 2, 3, 5, 10, 20, 50], rng.randint(1, 4)))),
        gain=gain,
        discount=discount,
        all_queries=rng.random() < 0.5,
        max_results=rng.choice([None, None, 3, 15]),
        **options,
    )
    return run_rows, qrels_rows, evaluation


CONVENTION_VALUES: dict[str, list] = {
    "ties": ["docid-desc", "docid-asc", "input-order", "average"],
    "ideal": ["judged", "retrieved", "judged-cut-at-hits"],
    "empty_ideal": ["zero", "one", "skip", "nan"],
    "unjudged": ["zero", "drop"],
    "duplicates": ["error", "first", "max-score"],
    "relevance_threshold": [None, 1, 2, 0.5],
    "gain": ["binary", "other"],
}
