"""ir_measures' parameters in ``--measures`` (``P(rel=2)@5``, ``nDCG(dcg='exp-log2')@10``,
``AP(judged_only=True)``, ``nDCG(gains={0:0,1:1,2:3})@10``, ``RBP(p=0.8)``): each sets the
convention it means for the whole evaluation (pipeline/registry/parameters.py), so that the
number printed under the name is ir_measures' own, which ir_measures computes here beside ours
from the same names (``ir_measures.parse_measure``); names or flags that ask one convention two
ways, and parameters we cannot honour, are refused with the words checked here."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from pipeline import evaluate, make_evaluation
from pipeline.errors import UsageError
from pipeline.io.format import spelling_note
from pipeline.registry import Evaluation, SpecError, asked_values, parse_measures
from pipeline.registry.gain import Gain
from pipeline.registry.parameters import IR_MEASURES
from tests.helpers import run_cli
from tests.helpers.peers import frames, random_data

TOLERANCE = 1e-9
PRINTED = 5e-6 + 1e-12  # gdeval, which ir_measures runs for nDCG(dcg='exp-log2')@k and ERR@k, prints 5 decimals
SAMPLE = ("--run", "data/run.parquet", "--qrels", "data/qrels.parquet")

# One evaluation per set: names that hold every convention they hold alike
CONVENTION_SETS: dict[str, tuple[str, ...]] = {
    "rel": (
        "P(rel=2)@5",
        "R(rel=2)@10",
        "AP(rel=2)",
        "AP(rel=2)@10",
        "RR(rel=2)",
        "Success(rel=2)@3",
        "Rprec(rel=2)",
        "Bpref(rel=2)",
        "infAP(rel=2)",
        "SetP(rel=2)",
        "SetP(rel=2,relative=True)",
        "SetR(rel=2)",
        "SetF(rel=2,beta=1.0)",
        "NumRet(rel=2)",
        # trec_eval 9's rounding of a recall level to a count (pytrec_eval's) and 10's (ours) agree at 0 and 1
        "IPrec(rel=2)@0.0",
        "IPrec(rel=2)@1.0",
        "MAP(rel=2)@5",
        "nDCG@10",  # nDCG reads no relevance level
    ),
    "judged_only": (
        "nDCG(judged_only=True)@10",
        "nDCG(judged_only=True)",
        "P(judged_only=True)@5",
        "R(judged_only=True)@10",
        "AP(judged_only=True)",
        "AP(judged_only=True)@5",
        "RR(judged_only=True)",
        "Success(judged_only=True)@3",
        "Rprec(judged_only=True)",
        "SetP(judged_only=True)",
        "SetF(judged_only=True)",
    ),
    "rel_and_judged_only": ("P(rel=2,judged_only=True)@5", "AP(rel=2,judged_only=True)", "RR(judged_only=True,rel=2)"),
    # the same map, its levels in another order and without those that keep their label (0:0, 1:1)
    "gains": (
        "nDCG(gains={0:0,1:1,2:3,3:7})@10",
        "nDCG(gains={0:0,1:1,2:3,3:7})",
        "nDCG(dcg='log2',gains={3:7,2:3})@5",
    ),
    "gains_of_label_0": ("nDCG(gains={0:1,1:0,2:5})@5", "nDCG(gains={0:1,1:0,2:5})", "P@5"),
}


def _ours(run_rows: list[tuple], qrels_rows: list[tuple], names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``{name: {query: value}}`` from one evaluation of the names under ``--profile ir_measures``."""
    run, qrels = frames(run_rows, qrels_rows)
    result = evaluate(run, qrels, measures=",".join(names), profile="ir_measures")
    asked = asked_values(names, k_given=False, cutoffs=result.evaluation.cutoffs)
    assert asked is not None
    rows = {(row["query_id"], row["k"]): row for row in result.per_query.iter_rows(named=True)}
    return {value.label: {q: row[value.column] for (q, k), row in rows.items() if k == value.k} for value in asked}


def _theirs(run_rows: list[tuple], qrels_rows: list[tuple], names: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """``{name: {query: value}}`` from ir_measures, of the same names parsed by ir_measures."""
    import ir_measures

    measures = {ir_measures.parse_measure(name): name for name in names}
    qrels = [ir_measures.Qrel(query, doc, int(label)) for query, doc, label in qrels_rows]
    run = [ir_measures.ScoredDoc(query, doc, score) for query, doc, score in run_rows]
    values: dict[str, dict[str, float]] = {name: {} for name in names}
    for metric in ir_measures.iter_calc(list(measures), qrels, run):
        values[measures[metric.measure]][metric.query_id] = metric.value
    return values


def _assert_same(ours: dict, theirs: dict, tolerance: float = TOLERANCE) -> None:
    assert set(ours) == set(theirs)
    for name, values in theirs.items():
        assert set(ours[name]) == set(values), name  # the same queries: ir_measures' zero-filled ones too
        wrong = {q: (ours[name][q], v) for q, v in values.items() if not abs(ours[name][q] - v) <= tolerance}
        assert not wrong, f"{name} (ours, ir_measures'): {wrong}"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("convention_set", list(CONVENTION_SETS))
def test_parameters_give_ir_measures_numbers_on_random_data(convention_set: str, seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)  # many tied scores, unjudged and negative labels, empty queries
    names = CONVENTION_SETS[convention_set]
    _assert_same(_ours(run_rows, qrels_rows, names), _theirs(run_rows, qrels_rows, names))


@pytest.mark.parametrize("seed", range(2))
def test_rr_at_k_with_rel_gives_ir_measures_number_without_ties(seed: int) -> None:
    # ir_measures computes RR@k by its msmarco provider, which orders tied scores its own way
    run_rows, qrels_rows = random_data(seed, distinct_scores=True)
    names = ("RR(rel=2)@5", "RR(rel=2)@3")
    _assert_same(_ours(run_rows, qrels_rows, names), _theirs(run_rows, qrels_rows, names))


@pytest.mark.skipif(shutil.which("perl") is None, reason="ir_measures runs gdeval.pl (perl) for dcg='exp-log2'")
@pytest.mark.parametrize("seed", range(2))
def test_exp_log2_is_gdevals_ndcg_through_ir_measures(seed: int) -> None:
    run_rows, qrels_rows = random_data(seed)
    # gdeval reads numeric topic ids
    run_rows = [(query[1:], doc, score) for query, doc, score in run_rows]
    qrels_rows = [(query[1:], doc, label) for query, doc, label in qrels_rows]
    names = ("nDCG(dcg='exp-log2')@5", "nDCG(dcg='exp-log2')@10", "ERR@10", "P@5")
    ours, theirs = _ours(run_rows, qrels_rows, names), _theirs(run_rows, qrels_rows, names)
    _assert_same(ours, theirs, PRINTED)
    assert theirs["P@5"] == pytest.approx(ours["P@5"], abs=TOLERANCE)


# Hand-written: q1 ranks a (label 2), x (unjudged), c (1), b (0); d (3) is judged, not retrieved
HAND_RUN = [("q1", "a", 3.0), ("q1", "x", 2.5), ("q1", "c", 2.0), ("q1", "b", 1.0), ("q2", "a", 1.0)]
HAND_QRELS = [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 1), ("q1", "d", 3), ("q2", "a", 1)]
LOG2_3 = 1.584962500721156


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        # of the top 5 only a has a label >= 2; q2's a has 1
        (("P(rel=2)@5",), {"P(rel=2)@5": {"q1": 1 / 5, "q2": 0.0}}),
        # -J drops x: a, c, b; relevant a, c and d (R = 3), at ranks 1 and 2
        (
            ("AP(judged_only=True)", "P(judged_only=True)@5"),
            {
                "AP(judged_only=True)": {"q1": (1 / 1 + 2 / 2) / 3, "q2": 1.0},
                "P(judged_only=True)@5": {"q1": 2 / 5, "q2": 1 / 5},
            },
        ),
        # gains by rank: a 2, x 0, c 4 (label 1 -> 4); ideal: c 4, d 3, a 2
        (
            ("nDCG(gains={1:4})@3",),
            {"nDCG(gains={1:4})@3": {"q1": (2 / 1 + 0 + 4 / 2) / (4 / 1 + 3 / LOG2_3 + 2 / 2), "q2": 1.0}},
        ),
    ],
)
def test_parameters_on_hand_written_data(names: tuple[str, ...], expected: dict[str, dict[str, float]]) -> None:
    ours = _ours(HAND_RUN, HAND_QRELS, names)
    _assert_same(ours, expected)
    _assert_same(ours, _theirs(HAND_RUN, HAND_QRELS, names))


def test_the_table_of_parameters_is_ir_measures_own() -> None:
    """Each measure takes, or refuses by name, exactly the parameters ir_measures gives it; its
    aliases are ir_measures' names of it."""
    import ir_measures

    for measure in IR_MEASURES:
        theirs = ir_measures.measures.registry[measure.name]
        assert {*measure.parameters, *(name for name, _ in measure.refused)} == set(theirs.SUPPORTED_PARAMS)
        assert measure.at == theirs.AT_PARAM, measure.name
        for alias in measure.aliases:
            assert measure.name == ir_measures.measures.registry[alias].NAME
    # and every alias ir_measures registers for a measure we compute is one of ours
    ours = {measure.name: set(measure.aliases) for measure in IR_MEASURES}
    for name, theirs in ir_measures.measures.registry.items():
        if theirs.NAME in ours and name != theirs.NAME:
            assert name in ours[theirs.NAME], (name, theirs.NAME)


# ir_measures' aliases (registered beside the names: ir_measures.measures.registry), written
# plain or with a cutoff: each is its measure, under the name as written (MAP is trec_eval's map in
# another case, as test_measure_names.py holds)
ALIASES = ("MRR@3", "Precision@2", "Recall@3", "MAP_IA", "α_nDCG@5", "α_DCG@3", "NumRelRet", "SetRelP")


def test_ir_measures_aliases_give_its_numbers_under_the_names_written() -> None:
    # distinct scores: the intent-aware names break ties as pyndeval does only under --ties docid-asc
    run_rows, qrels_rows = random_data(0, distinct_scores=True)
    _assert_same(_ours(run_rows, qrels_rows, ALIASES), _theirs(run_rows, qrels_rows, ALIASES))


NO_PROVIDER = (
    "nDCG(dcg='exp-log2',gains={1:2})@10",
    "nDCG(dcg='exp-log2',judged_only=True)@10",
    "RR(judged_only=True)@5",
    "NumRel(rel=2)",
)


def test_names_taken_are_computed_by_ir_measures_and_those_it_cannot_are_refused() -> None:
    import ir_measures

    providers = ir_measures.DefaultPipeline.providers
    for name in (name for names in CONVENTION_SETS.values() for name in names):
        assert any(p.supports(ir_measures.parse_measure(name)) for p in providers), name
    for name in NO_PROVIDER:
        assert not any(p.supports(ir_measures.parse_measure(name)) for p in providers), name
        with pytest.raises(SpecError, match="is not supported"):
            parse_measures(name)


# --- refusals: the same words through the command line, the API and a config file ------------------

NDCG_HELP = (
    "nDCG takes cutoff (the cutoff k, as @k), dcg ('log2': --gain linear, 'exp-log2': --gain exponential "
    "(discount log2)), gains (a gain map: {1:1,2:3} is --gain 1=1,2=3), judged_only (True drops unjudged "
    "results: --unjudged drop)"
)
P_HELP = (
    "P takes cutoff (the cutoff k, as @k), rel (a label >= rel is relevant: --relevance-threshold), judged_only "
    "(True drops unjudged results: --unjudged drop)"
)
# (measures, flags, message): refused as the value of --measures (argparse's words around it)
REFUSED_NAMES = [
    (
        "nDCG@10,nDCG(dcg='exp-log2')@10",
        "measures nDCG@10 and nDCG(dcg='exp-log2')@10 ask for different conventions: gain linear (nDCG@10, by "
        "ir_measures' default) and gain exponential (nDCG(dcg='exp-log2')@10); a convention holds for the whole "
        'evaluation, so evaluate them in separate commands: --measures "nDCG@10", then --measures '
        "\"nDCG(dcg='exp-log2')@10\"",
    ),
    (
        "P(rel=2)@5,P(rel=3)@10",
        "measures P(rel=2)@5 and P(rel=3)@10 ask for different conventions: relevance_threshold 2 (P(rel=2)@5) "
        "and relevance_threshold 3 (P(rel=3)@10); a convention holds for the whole evaluation, so evaluate them "
        'in separate commands: --measures "P(rel=2)@5", then --measures "P(rel=3)@10"',
    ),
    (
        "nDCG(judged_only=True)@10,ERR@10",
        "measures nDCG(judged_only=True)@10 and ERR@10 ask for different conventions: unjudged drop "
        "(nDCG(judged_only=True)@10) and unjudged zero (ERR@10, by ir_measures' default); a convention holds for "
        'the whole evaluation, so evaluate them in separate commands: --measures "nDCG(judged_only=True)@10", '
        'then --measures "ERR@10"',
    ),
    ("P(foo=1)@5", f"measure 'P(foo=1)@5': unknown parameter 'foo'; {P_HELP}"),
    ("P(rel=2.5)@5", f"measure 'P(rel=2.5)@5': parameter rel=2.5: expected a whole number; {P_HELP}"),
    ("P(rel=2)", "measure 'P(rel=2)': ir_measures' P needs a cutoff (P@...)"),
    (
        "nDCG(dcg='exp')@10",
        "measure \"nDCG(dcg='exp')@10\": parameter dcg='exp': expected 'log2' (gain = label) or 'exp-log2' (gain = "
        f"2^label - 1); {NDCG_HELP}",
    ),
    (
        "nDCG(gains={1:2.5})@10",
        "measure 'nDCG(gains={1:2.5})@10': parameter gains={1: 2.5}: ir_measures maps whole labels to whole gains "
        f"(its qrels hold integers), got 1:2.5; {NDCG_HELP}",
    ),
    (
        "P(rel=x)@5",
        "measure 'P(rel=x)@5': parameter 'rel' must be a literal (a number, 'text', True or False, or a dict such "
        "as {0:0,1:1,2:3}), got 'x'",
    ),
    ("P(rel=2@5", "measures 'P(rel=2@5': a parenthesis, bracket or brace is never closed"),
    (
        "RBP(rel=2)",
        "measure 'RBP(rel=2)': parameter 'rel' is not supported here: ir_measures computes RBP(rel=...) by "
        "cwl_eval, with binary relevance and the first 1000 results only; our rbp is trec_eval's graded RBP. For "
        "binary RBP use --gain binary --relevance-threshold REL --measures rbp; RBP takes p (the persistence: "
        "--rbp-persistence)",
    ),
    (
        "nDCG(dcg='exp-log2',judged_only=True)@10",
        "measure \"nDCG(dcg='exp-log2',judged_only=True)@10\" is not supported: ir_measures computes nDCG with "
        "dcg='exp-log2' by gdeval, which takes neither gains nor judged_only (no provider of ir_measures computes "
        f"them together); {NDCG_HELP}",
    ),
    (
        "alpha_nDCG(alpha=0.7)@10",
        "measure 'alpha_nDCG(alpha=0.7)@10' is not supported: alpha=0.7: the intent-aware measures are computed with "
        "ndeval's alpha 0.5 only; alpha_nDCG takes cutoff (the cutoff k, as @k), alpha (the redundancy intolerance "
        "of alpha_(n)DCG and (n)NRBP; 0.5 only (ndeval's)), rel (a label >= rel is relevant: --relevance-threshold), "
        "judged_only (True drops unjudged results: --unjudged drop)",
    ),
    (
        "Accuracy(rel=2)@5",
        "measure 'Accuracy(rel=2)@5': 'Accuracy' is not one of ir_measures' measures we compute (nDCG, P, R, AP, "
        "RR, Success, NumQ, NumRet, NumRel, SetP, SetR, SetF, Judged, Rprec, IPrec, Bpref, infAP, RBP, ERR, SDCG, "
        "NERR8, NERR9, INST, INSQ, NERR10, NERR11, BPM, Compat, P_IA, StRecall, ERR_IA, AP_IA, alpha_DCG, NRBP, "
        "alpha_nDCG, nERR_IA, nNRBP)",
    ),
]
# (measures, flags, message): a flag that says otherwise than a parameter
REFUSED_FLAGS = [
    (
        "nDCG(dcg='exp-log2')@10",
        ("--gain", "linear"),
        "--gain linear contradicts nDCG(dcg='exp-log2')@10, which asks for gain exponential; a convention holds "
        "for the whole evaluation, so leave --gain out (the parameter sets it), or evaluate "
        "nDCG(dcg='exp-log2')@10 in a command of its own",
    ),
    (
        "P(rel=2)@5",
        ("--relevance-threshold", "3"),
        "--relevance-threshold 3 contradicts P(rel=2)@5, which asks for relevance_threshold 2; a convention holds "
        "for the whole evaluation, so leave --relevance-threshold out (the parameter sets it), or evaluate "
        "P(rel=2)@5 in a command of its own",
    ),
    (
        "AP(judged_only=True)",
        ("--unjudged", "zero"),
        "--unjudged zero contradicts AP(judged_only=True), which asks for unjudged drop; a convention holds for "
        "the whole evaluation, so leave --unjudged out (the parameter sets it), or evaluate AP(judged_only=True) "
        "in a command of its own",
    ),
]


@pytest.mark.parametrize(("measures", "message"), REFUSED_NAMES)
def test_names_refused_by_the_command_line_and_the_api_alike(measures: str, message: str) -> None:
    done = run_cli("evaluate", *SAMPLE, "--measures", measures)
    assert done.returncode == 2
    assert f"ndcg evaluate: error: argument --measures: {message}" in done.stderr.splitlines()
    with pytest.raises(UsageError) as refused:
        make_evaluation(measures=measures)
    assert str(refused.value) == message


@pytest.mark.parametrize(("measures", "flag", "message"), REFUSED_FLAGS)
def test_a_flag_against_a_parameter_is_refused(measures: str, flag: tuple[str, str], message: str) -> None:
    done = run_cli("evaluate", *SAMPLE, "--measures", measures, *flag)
    assert done.returncode == 2
    assert f"ndcg: error: {message}" in done.stderr.splitlines()
    with pytest.raises(UsageError) as refused:
        make_evaluation(measures=measures, **{flag[0].removeprefix("--").replace("-", "_"): flag[1]})
    assert str(refused.value) == message


def test_an_evaluation_built_directly_takes_the_parameters_or_refuses_a_field_against_them() -> None:
    evaluation = Evaluation(measures=("P(rel=2)@5", "nDCG(dcg='exp-log2')@10", "AP(rel=2)"))
    assert (evaluation.relevance_threshold, evaluation.gain, evaluation.unjudged) == (2.0, Gain("exponential"), "zero")
    assert (evaluation.measures, evaluation.cutoffs) == (("ndcg", "P", "map"), (5, 10))
    with pytest.raises(SpecError) as refused:
        Evaluation(gain=Gain("binary"), measures=("nDCG(dcg='log2')@10",))
    assert str(refused.value) == (
        "gain binary contradicts nDCG(dcg='log2')@10, which asks for gain linear; a convention holds for the whole "
        "evaluation, so leave gain out (the parameter sets it), or evaluate nDCG(dcg='log2')@10 on its own"
    )


def test_a_parameter_takes_precedence_over_a_profile_as_a_flag_does() -> None:
    evaluation = make_evaluation(profile="gdeval", measures="nDCG(dcg='log2')@10,RBP(p=0.5)")
    assert (evaluation.gain, evaluation.rbp_persistence, evaluation.empty_ideal) == (Gain("linear"), 0.5, "skip")
    same = make_evaluation(measures="nDCG(gains={2:3,1:1})@10", gain="1=1,2=3", unjudged="zero")
    assert same.gain == Gain("linear", ((1.0, 1.0), (2.0, 3.0)))


def test_a_comma_inside_a_parameter_does_not_split_the_list() -> None:
    assert parse_measures("nDCG(gains={0:0,1:1})@10,P@5, SetF(beta=1.0,judged_only=False)") == (
        "nDCG(gains={0:0,1:1})@10",
        "P@5",
        "SetF(beta=1.0,judged_only=False)",
    )
    assert make_evaluation(measures=["nDCG(gains={0:0,1:1,2:3})@10", "P@5"]).gain == Gain(
        "linear", ((0.0, 0.0), (1.0, 1.0), (2.0, 3.0))
    )


# --- what the outputs say -----------------------------------------------------------------------------


def test_outputs_name_each_measure_as_written(tmp_path: Path) -> None:
    config = tmp_path / "eval.toml"
    config.write_text('measures = ["p(rel=2)@5", "AP(rel=2)", "nDCG(gains={0:0,1:1,2:3})@10"]\n')
    done = run_cli("evaluate", *SAMPLE, "--config", config, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    labels = [row["measure"] for row in payload["measures"]]
    assert labels == ["P(rel=2)@5", "AP(rel=2)", "nDCG(gains={0:0,1:1,2:3})@10"]
    assert (payload["conventions"]["relevant"], payload["conventions"]["gain"]) == ("label >= 2", "0=0,1=1,2=3")
    note = (
        "P(rel=2)@5, AP(rel=2), nDCG(gains={0:0,1:1,2:3})@10: ir_measures' spelling, scored with these "
        "conventions, not ir_measures': all_queries=false (ir_measures: true); --profile ir_measures gives "
        "ir_measures' numbers"
    )
    assert f"ndcg: warning: {note}" in done.stderr.splitlines()

    table = run_cli("evaluate", *SAMPLE, "--measures", "P(rel=2)@5,AP(rel=2)", "--profile", "ir_measures")
    assert table.returncode == 0, table.stderr
    rows = table.stdout.splitlines()
    assert [row.split()[0] for row in rows[2:]] == ["P(rel=2)@5", "AP(rel=2)"]
    assert "spelling" not in table.stdout  # ir_measures' conventions were asked for
    trec = run_cli("evaluate", *SAMPLE, "--measures", "P(rel=2)@5,AP(rel=2)", "--output-format", "trec")
    assert [line.split()[0] for line in trec.stdout.splitlines()] == ["map", "P_5"]


def test_the_note_names_pyndeval_s_order_of_ties_for_the_intent_measures() -> None:
    """ir_measures runs its ndeval measures by pyndeval (score, then docno ascending) and the
    others by trec_eval's order (docno descending): the note says which, and when a list names
    both that no one --ties gives all of them."""
    alone = spelling_note(["ERR_IA@5", "P_IA@5"], make_evaluation(k=[5], measures=["ERR_IA@5", "P_IA@5"]), None)
    assert alone is not None and "ties=docid-desc (ir_measures: docid-asc)" in alone
    assert alone.endswith("--profile ir_measures --ties docid-asc gives ir_measures' numbers")
    mixed = ["nDCG@5", "ERR_IA@5"]
    note = spelling_note(mixed, make_evaluation(k=[5], measures=mixed, ties="docid-asc"), None)
    assert note is not None
    assert (
        "ties=docid-asc (ir_measures: docid-desc for nDCG@5; docid-asc for ERR_IA@5: no one --ties gives both)" in note
    )
    assert note.endswith("--profile ir_measures gives ir_measures' numbers where no scores tie")


def test_the_note_names_what_still_differs_from_ir_measures_defaults() -> None:
    done = run_cli("evaluate", *SAMPLE, "--measures", "RBP,P@5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[1] == (
        "# RBP, P@5: ir_measures' spelling, scored with these conventions, not ir_measures': all_queries=false "
        "(ir_measures: true), rbp_persistence=0.9 (ir_measures: 0.8); --profile ir_measures --rbp-persistence 0.8 "
        "gives ir_measures' numbers"
    )
    written = run_cli("evaluate", *SAMPLE, "--measures", "RBP(p=0.5),P@5", "--all-queries")
    assert written.returncode == 0, written.stderr
    assert "spelling" not in written.stdout  # p written: nothing differs


def test_rr_at_k_is_held_to_the_msmarco_providers_order_of_ties() -> None:
    """ir_measures computes RR@k (MRR@k) by its msmarco provider, which orders tied scores by
    docno ascending (RR without a cutoff by trec_eval's, descending): the note said nothing, so
    MRR@3 over tied scores was silently another number than ir_measures'. It names the order now,
    and --ties docid-asc gives ir_measures' numbers on tied data."""
    names = ["MRR@3", "RR@5"]
    note = spelling_note(names, make_evaluation(measures=names), None)
    assert note is not None and "ties=docid-desc (ir_measures: docid-asc)" in note, note
    run_rows, qrels_rows = random_data(1)  # many tied scores
    run, qrels = frames(run_rows, qrels_rows)
    result = evaluate(run, qrels, measures=",".join(names), profile="ir_measures", ties="docid-asc")
    theirs = _theirs(run_rows, qrels_rows, tuple(names))
    for name, k in (("MRR@3", 3), ("RR@5", 5)):
        ours = {row["query_id"]: row["recip_rank"] for row in result.per_query.filter(pl.col("k") == k).to_dicts()}
        assert ours == pytest.approx(theirs[name], abs=TOLERANCE), name
