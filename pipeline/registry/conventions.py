"""The conventions of an evaluation: each an option (flag, config key, API keyword, SQL variable)
with its choices, one frozen description every engine reads.

Formulas (rank ``i`` starts at 1, ``g(i)`` is the gain of the document at rank ``i``)::

    CG@k   = sum_{i<=k} g(i)
    DCG@k  = sum_{i<=k} g(i) * d(i)
    IDCG@k = DCG@k of the ideal ranking
    NDCG@k = DCG@k / IDCG@k

The companion measures and their formulas are in :mod:`pipeline.registry.measures`.

Gains ``g`` (:class:`Gain`):

- ``linear``: ``g = label`` (trec_eval, ir_measures, scikit-learn).
- ``exponential``: ``g = 2**label - 1`` (Burges et al., 2005; LightGBM, XGBoost,
  Elasticsearch; the "alternative" DCG of most tutorials).
- ``binary``: ``g = 1`` for a relevant label (see ``relevance_threshold``), else 0 (Spark
  MLlib's ``RankingMetrics``).
- a level map such as ``1=3,2=9,4=4.5`` (trec_eval's ``-m ndcg.1=3,2=9,4=4.5``): a mapped
  level gains its mapped value (which may be 0 or negative, and level 0 may be mapped);
  an unmapped level keeps its own value as its gain.

Gains are bounded: :mod:`pipeline.registry.gain` says how and why.

Discounts ``d`` (:class:`Discount`):

- ``log2``: ``d(i) = 1 / log2(i + 1)`` (trec_eval, Burges). Spark's natural log cancels in
  the ratio, so its NDCG equals this one.
- ``jk`` with base ``b``: ``d(i) = 1`` for ``i <= b``, else ``1 / log_b(i)``; the original
  Järvelin & Kekäläinen (2002) form, equal to ``1 / max(1, log_b(i))``.

Conventions (each is a field of :class:`Evaluation`; the defaults are trec_eval's):

1. Ordering, ``ties``: a query's results are ordered by score descending, and tied scores
   are resolved by

   - ``docid-desc`` (default; trec_eval): doc_id descending in string (byte) order, also for
     integer ids; any rank column in the input is ignored.
   - ``docid-asc`` (ndeval's intent-aware measures as pyndeval, and so ir_measures, run them):
     doc_id ascending in string (byte) order, the reverse of ``docid-desc`` within each tie
     group; any rank column is ignored.
   - ``input-order`` (LightGBM, XGBoost, Spark, Elasticsearch, recommender libraries): the
     order in which rows arrive (the ``arrival`` column, a row index added when the input is
     read: files in the order listed, rows in file order). When the run has a ``rank``
     column, results are ordered by that rank ascending instead (score, then arrival, break
     its ties; rows without a rank come last).
   - ``average`` (scikit-learn's ``ndcg_score``, torchmetrics): the documents of a tied
     group share the mean of their gains, so a group occupying ranks ``a..b`` adds
     ``mean gain * (d(a) + ... + d(min(b, k)))`` to DCG@k, whatever their order.

2. Gains: negative labels count as unjudged and gain 0 whatever the gain says; unjudged
   documents (absent from the qrels) gain 0; label 0 gains 0 unless a gain map gives it a
   value. A label is relevant when it is ``>= relevance_threshold`` (trec_eval's ``-l``), or
   ``> 0`` when no threshold is set; relevance decides the ``binary`` gain and leaves
   the other gains unchanged.
3. Ideal ranking, ``ideal``: the positive gains sorted descending, cut at k, taken from

   - ``judged`` (default; trec_eval): every judged document of the query, including ones
     the run never retrieved. With inline labels (no qrels) the judged documents are the
     run's own labelled rows.
   - ``retrieved`` (scikit-learn, LightGBM, XGBoost): only the documents of the evaluated
     ranking (after ``duplicates``, ``max_results`` and ``unjudged`` have applied).
   - ``judged-cut-at-hits`` (Elasticsearch's ``rank_eval``): every judged document, cut at
     the number of results in the evaluated ranking as well as at k.

4. A query whose IDCG is 0 (no relevant document in its ideal ranking), ``empty_ideal``:
   ``zero`` (default; trec_eval, scikit-learn, Spark) scores 0; ``one`` (LightGBM,
   XGBoost's ``ndcg@k``) scores 1; ``nan`` scores NaN, which then propagates into the
   mean; ``skip`` gives NDCG null and leaves the query out of the summary (its ``queries``
   count drops and its cg, dcg and idcg are not averaged either).
5. Queries in the run but not in the qrels (no judgment row at all), ``queries_without_judgments``:
   ``skip`` (default; trec_eval) leaves them out; ``evaluate`` (Elasticsearch's ``rank_eval``,
   which averages over every request it is given) evaluates them as queries whose every
   document is unjudged: R = 0, so every measure scores as it does for a query with no
   relevant document (0 for NDCG under ``empty_ideal`` zero, P, recall, AP, RR and success;
   NDCG as ``empty_ideal`` says otherwise, so ``skip`` leaves them out again). Queries in the
   qrels but not in the run are skipped, or score 0 when ``all_queries`` is set (trec_eval
   ``-c``, ir_measures): the two add queries from opposite sides, and with both every query
   of either input is evaluated. ``max_results=N`` keeps the N best-ranked results of each
   query after ordering (trec_eval ``-M``).
6. Unjudged documents, ``unjudged``: ``zero`` (default) keeps them in the ranking with gain
   0; ``drop`` removes them (documents absent from the qrels, and those with a negative
   label, which count as unjudged) from the ranking after ordering and ``max_results``,
   before cutting at k (trec_eval ``-J``).
7. Duplicates, ``duplicates``: a document listed twice for one query in the run is an
   ``error`` (default), or only its ``first`` row (the first to arrive) or its
   ``max-score`` row (the highest score; the first to arrive among equal scores) is kept
   before ordering. A duplicate in the qrels is always an error (in qrels judged per subtopic,
   a document judged twice under one subtopic; judged under several, its label is its largest).
   Retrieved results, ``retrieved_scores``: ``all`` (default; trec_eval) counts every row of
   the run as retrieved; ``positive`` (torchmetrics' P, recall, AP and RR since 1.7.4) counts
   only results scored above 0: one scored 0 or below is removed after ``duplicates`` (so
   ``max-score`` keeps a document's best row, ``first`` its first row, whatever its score)
   and before ordering, ``max_results`` and ``unjudged``, as if the run had never listed it.
   Under a ranking by score it would have come after every positive score, so no rank above
   it moves and no tie group is split; a relevant document so removed still counts in R
   (``ideal`` judged), and a query whose every result is removed is still evaluated, with an
   empty ranking.

8. Denominators of the companion measures. ``ap_denominator``: AP@k divides by ``relevant``
   (default; trec_eval, ir_measures: R, so a query with more relevant documents than k can
   never reach 1) or by ``min-k-relevant`` (Spark MLlib's ``meanAveragePrecisionAt``,
   RecBole's ``MAP@k``: min(k, R), so it can); the whole ranking (k null) divides by R under
   both. It applies wherever AP is computed (``map`` and ``gm_map``). ``precision_denominator``:
   P@k divides by ``k`` (default; trec_eval, Spark, RecBole: the ranks past the retrieved
   count as misses) or by ``min-k-retrieved`` (TF-Ranking's ``PrecisionMetric``,
   Elasticsearch's ``precision``: min(k, n) of the n retrieved, 0 when none is retrieved).
   Both are 0 when their denominator is 0.

Tie bounds, ``tie_bounds`` (a diagnostic; it changes no score): ``ndcg_min`` and ``ndcg_max``
are NDCG@k with each group of tied results (equal scores; equal rank and score under
``input-order``) ordered by gain ascending and descending. The discount never increases
with rank, so these are the lowest and highest NDCG@k over every order of the ties; the
``average`` score lies between them. ``ties_straddle_k`` says whether ranks k and k + 1 are
tied. Refused with ``max_results`` when the ideal depends on which results are kept
(``retrieved``, or ``judged-cut-at-hits`` with ``unjudged="drop"``): there the cut picks
which tied documents count, the IDCG moves with them, and the gain orders are no longer the
extremes.

Cutoff ``None`` means the whole ranking: DCG over every retrieved document and IDCG over
every ideal document (trec_eval's ``ndcg``); a cutoff k cuts both at k (``ndcg_cut_k``).

Profiles (:data:`PROFILES`) are named bundles of these choices that reproduce a peer tool;
``ndcg profiles`` prints them, and explicit options override a profile's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pipeline.registry.base import DEFAULT_CUTOFFS, SpecError, decimal, number_text, positive_int
from pipeline.registry.gain import DISCOUNT_KINDS, GAIN_KINDS, Gain
from pipeline.registry.names import parse_measures


@dataclass(frozen=True)
class Choice:
    """One value of a convention.

    ``shown`` is how :meth:`Evaluation.describe` writes it into outputs (default: the value);
    ``spark_refuses`` is why the Spark engine refuses it, if it does (refused, never ignored);
    ``effect`` is what it does, as validation's warnings say it (e.g. "score 0").
    """

    value: str
    description: str
    shown: str = ""
    spark_refuses: str = ""
    effect: str = ""


@dataclass(frozen=True)
class Variable:
    """A ``getvariable('name')`` of ``sql/``, its Spark type, and its value for an evaluation."""

    name: str
    spark_type: str
    value: Callable[[Any], Any]  # of an Evaluation (pipeline.registry.evaluation)


@dataclass(frozen=True)
class Convention:
    """One option of an evaluation: its flag ``--name`` (dashes), config key (the same) and
    API keyword ``name`` (underscores), all meaning the same.

    ``field`` is the :class:`Evaluation` field it sets, or ``field.part`` for a part of one
    (``--log-base`` sets ``discount.log_base``). ``choices`` are its values (``open`` when
    other texts are accepted as well, as gain maps are, in the ``syntax`` described);
    ``parse`` reads a flag's or config key's text into the flag's value, ``from_text`` reads
    that value (and the API's text) into the field's (a gain map); ``switch`` makes it a
    yes/no flag. ``described_as`` is its key in
    :meth:`Evaluation.describe` (None: shown inside another one's), with ``show`` turning
    the field's value into what is written there. ``absent_means_default``: outputs written
    before the convention existed do not record it, and were evaluated by its default (the
    only behaviour there was), which ``compare`` then reads for them. ``examples`` are values
    of a convention without choices, each as a flag's text and as the API's value (the tests
    try each through every front). ``companions`` are the settings (API values) it means
    something beside only, and is refused without (``unjudged_weight`` weighs the qrels'
    weights' unjudged results): the tests set them with it.
    """

    name: str
    field: str
    help: str
    default: Any
    choices: tuple[Choice, ...] = ()
    open: bool = False
    parse: Callable[[str], Any] | None = None
    from_text: Callable[[str], Any] | None = None
    switch: bool = False
    metavar: str | None = None
    syntax: str = ""
    flag_default: Any = None  # shown in the reference's usage; the flag's own default is None
    variables: tuple[Variable, ...] = ()
    described_as: str | None = None
    show: Callable[[Any], object] | None = None
    notes: tuple[tuple[str, str], ...] = ()
    in_profiles: bool = False
    absent_means_default: bool = False
    examples: tuple[tuple[str, Any], ...] = ()
    companions: tuple[tuple[str, Any], ...] = ()

    @property
    def attribute(self) -> str:
        """The :class:`Evaluation` field holding this convention (``discount`` for ``discount.kind``)."""
        return self.field.split(".")[0]

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(choice.value for choice in self.choices)

    def choice(self, value: str) -> Choice:
        return next(choice for choice in self.choices if choice.value == value)

    @property
    def flag_help(self) -> str:
        """The help of the flag: its summary, then each choice with its line."""
        if not self.choices:
            return self.help
        listed = "; ".join(
            f"{c.value}{' (default)' if c.value == self.default else ''}: {c.description}"
            + (" (not on the spark engine)" if c.spark_refuses else "")
            for c in self.choices
        )
        return f"{self.help}: {listed}" + (f"; or {self.syntax}" if self.syntax else "")

    def describe(self, value: Any) -> object:
        if self.show is not None:
            return self.show(value)
        if self.choices and isinstance(value, str):
            return self.choice(value).shown or value
        return value


def _relevant(threshold: float | None) -> str:
    return "label > 0" if threshold is None else f"label >= {number_text(threshold)}"


def _gain_map(evaluation: Any) -> tuple[list[float], list[float]] | None:
    levels = evaluation.gain.levels
    return ([level for level, _ in levels], [gain for _, gain in levels]) if levels else None


def _column_name(text: str) -> str:
    """A column name as given: not empty (the input's own names are checked when it is read)."""
    if not text.strip():
        raise SpecError("a column name must not be empty")
    return text


def _variable(name: str, spark_type: str) -> Variable:
    """The variable of the same name as an Evaluation field, bound to that field's value."""
    return Variable(name, spark_type, lambda evaluation: getattr(evaluation, name))


CONVENTIONS: tuple[Convention, ...] = (
    Convention(
        "k",
        "cutoffs",
        "cutoffs, e.g. 5,10,20; the whole ranking is always added. Left out: the cutoffs --measures names "
        "(nDCG@10,P@5: 5 and 10), else 5,10,20; given, the cutoffs --measures names are added to it",
        default=DEFAULT_CUTOFFS,
        flag_default=",".join(map(str, DEFAULT_CUTOFFS)),
        syntax="comma-separated positive integers",
        variables=(Variable("ks", "ARRAY<BIGINT>", lambda evaluation: list(evaluation.cutoffs)),),
        described_as="cutoffs",
        show=list,
        examples=(("3,1", "3,1"),),
    ),
    Convention(
        "gain",
        "gain",
        "how a label becomes a gain",
        default="linear",
        choices=(
            Choice("linear", "gain = label (trec_eval)"),
            Choice("exponential", "gain = 2^label - 1 (LightGBM, XGBoost, Elasticsearch)"),
            Choice("binary", "1 for a relevant label, else 0 (Spark MLlib)"),
        ),
        open=True,
        from_text=Gain.parse,
        syntax="a map like 1=3,2=9 (trec_eval's: a mapped level gains its value, an unmapped one keeps its own)",
        variables=(
            Variable("gain", "STRING", lambda evaluation: evaluation.gain.kind),
            Variable("gain_map", "MAP<DOUBLE, DOUBLE>", _gain_map),
        ),
        described_as="gain",
        show=str,
        in_profiles=True,
    ),
    Convention(
        "discount",
        "discount.kind",
        "how rank i is discounted",
        default="log2",
        choices=(
            Choice("log2", "1/log2(i+1) (trec_eval)"),
            Choice("jk", "Jarvelin-Kekalainen: 1/max(1, log_b(i)), b from --log-base"),
        ),
        variables=(Variable("discount", "STRING", lambda evaluation: evaluation.discount.kind),),
        described_as="discount",
        show=str,
        in_profiles=True,
    ),
    Convention(
        "log_base",
        "discount.log_base",
        "base b of the jk discount (default 2)",
        default=2.0,
        parse=decimal,
        metavar="B",
        variables=(Variable("log_base", "DOUBLE", lambda evaluation: evaluation.discount.log_base),),
        examples=(("3", 3.0),),
    ),
    Convention(
        "ties",
        "ties",
        "tied scores",
        default="docid-desc",
        choices=(
            Choice(
                "docid-desc",
                "doc_id descending, in string order (trec_eval)",
                "score desc, then doc_id desc (string order)",
            ),
            Choice(
                "docid-asc",
                "doc_id ascending, in string order (pyndeval, and so ir_measures' ndeval measures)",
                "score desc, then doc_id asc (string order)",
            ),
            Choice(
                "input-order",
                "the order rows arrive, or the run's 'rank' column when it has one (LightGBM, XGBoost, Spark)",
                "input rank, else score desc, then input order",
                spark_refuses="rows have no arrival order on Spark; give scores without ties or use docid-desc "
                "or docid-asc",
            ),
            Choice("average", "tied documents share their mean gain (scikit-learn)", "score desc, tied gains averaged"),
        ),
        variables=(_variable("ties", "STRING"),),
        described_as="ties",
        in_profiles=True,
    ),
    Convention(
        "ideal",
        "ideal",
        "the ideal ranking",
        default="judged",
        choices=(
            Choice("judged", "every judged document (trec_eval)", "every judged document with positive gain"),
            Choice(
                "retrieved",
                "only the retrieved documents (scikit-learn, LightGBM, XGBoost)",
                "the retrieved documents with positive gain",
            ),
            Choice(
                "judged-cut-at-hits",
                "every judged document, cut at the number of results (Elasticsearch)",
                "every judged document with positive gain, cut at the number of results",
            ),
        ),
        variables=(_variable("ideal", "STRING"),),
        described_as="ideal",
        in_profiles=True,
    ),
    Convention(
        "empty_ideal",
        "empty_ideal",
        "NDCG of a query whose IDCG is 0",
        default="zero",
        choices=(
            Choice("zero", "0 (trec_eval, scikit-learn, Spark)", effect="score 0"),
            Choice("one", "1 (LightGBM, XGBoost)", effect="score 1 (--empty-ideal one)"),
            Choice(
                "skip",
                "left out of the summary (and of its query count)",
                effect="are left out of the summary (--empty-ideal skip)",
            ),
            Choice("nan", "NaN, which propagates into the means", effect="score NaN (--empty-ideal nan)"),
        ),
        variables=(_variable("empty_ideal", "STRING"),),
        described_as="empty_ideal",
        in_profiles=True,
    ),
    Convention(
        "unjudged",
        "unjudged",
        "documents absent from the qrels (or with a negative label)",
        default="zero",
        choices=(
            Choice("zero", "gain 0", "gain 0"),
            Choice("drop", "removed from the ranking before cutting at k (trec_eval -J)", "dropped from the ranking"),
        ),
        variables=(_variable("unjudged", "STRING"),),
        described_as="unjudged",
        notes=(("negative_labels", "unjudged, gain 0"),),
        in_profiles=True,
    ),
    Convention(
        "relevance_threshold",
        "relevance_threshold",
        "labels >= this are relevant (trec_eval -l; default: label > 0); used by the binary gain and the "
        "measures P, recall, map, recip_rank and success",
        default=None,
        parse=decimal,
        metavar="T",
        variables=(_variable("relevance_threshold", "DOUBLE"),),
        described_as="relevant",
        show=_relevant,
        examples=(("2", 2.0),),
    ),
    Convention(
        "ap_denominator",
        "ap_denominator",
        "what AP@k (map, gm_map) divides by",
        default="relevant",
        choices=(
            Choice("relevant", "R, the relevant documents judged (trec_eval, ir_measures)", "relevant judged (R)"),
            Choice(
                "min-k-relevant",
                "min(k, R): a query with more relevant documents than k can still score 1 (Spark MLlib, RecBole)",
                "min(k, relevant judged)",
            ),
        ),
        variables=(_variable("ap_denominator", "STRING"),),
        described_as="ap_denominator",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "precision_denominator",
        "precision_denominator",
        "what P@k divides by",
        default="k",
        choices=(
            Choice("k", "k, even when fewer were retrieved (trec_eval, Spark MLlib, RecBole)", "k"),
            Choice(
                "min-k-retrieved",
                "min(k, retrieved): a short list is not charged for the ranks it lacks (TF-Ranking, Elasticsearch)",
                "min(k, retrieved)",
            ),
        ),
        variables=(_variable("precision_denominator", "STRING"),),
        described_as="precision_denominator",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "all_queries",
        "all_queries",
        "qrels queries missing from the run score 0 (trec_eval -c)",
        default=False,
        switch=True,
        variables=(_variable("all_queries", "BOOLEAN"),),
        described_as="all_queries",
        in_profiles=True,
    ),
    Convention(
        "queries_without_judgments",
        "queries_without_judgments",
        "run queries with no row in the qrels",
        default="skip",
        choices=(
            Choice("skip", "not evaluated (trec_eval)", "not evaluated", effect="are not evaluated"),
            Choice(
                "evaluate",
                "evaluated with every document unjudged: 0 for P, recall, map, recip_rank and success, NDCG as "
                "--empty-ideal says (Elasticsearch rank_eval)",
                "evaluated with every document unjudged",
                effect="are evaluated with every document unjudged (--queries-without-judgments evaluate)",
            ),
        ),
        variables=(_variable("queries_without_judgments", "STRING"),),
        described_as="queries_without_judgments",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "max_results",
        "max_results",
        "keep the N best-ranked results per query (trec_eval -M)",
        default=None,
        parse=positive_int,
        metavar="N",
        variables=(_variable("max_results", "BIGINT"),),
        described_as="max_results",
        examples=(("7", 7),),
    ),
    Convention(
        "duplicates",
        "duplicates",
        "a document twice in one query of the run",
        default="error",
        choices=(
            Choice("error", "an error (exit 3)"),
            Choice(
                "first",
                "keep its first row to arrive",
                spark_refuses="rows have no arrival order on Spark, so 'the first' duplicate is undefined",
            ),
            Choice("max-score", "keep its best-scored row (the first to arrive among equal scores)"),
        ),
        variables=(_variable("duplicates", "STRING"),),
        described_as="duplicates",
        in_profiles=True,
    ),
    Convention(
        "tie_bounds",
        "tie_bounds",
        "also the lowest and highest NDCG any order of tied scores gives (ndcg_min, ndcg_max), whether ties "
        "straddle each cutoff, and how many queries ties can change",
        default=False,
        switch=True,
        variables=(_variable("tie_bounds", "BOOLEAN"),),
        described_as="tie_bounds",
    ),
    Convention(
        "measures",
        "measures",
        "measures besides NDCG, each at every k (and the whole ranking where defined), e.g. "
        "ndcg,P,recall,map,recip_rank,success (trec_eval's families) or nDCG@10,P@5,R@100,AP,RR,Success@1 "
        "(ir_measures'), with ir_measures' parameters, which set the conventions they mean for the whole "
        "evaluation: P(rel=2)@5, nDCG(dcg='exp-log2')@10, AP(judged_only=True), nDCG(gains={0:0,1:1,2:3})@10, "
        "RBP(p=0.8); a name with a cutoff (P@5, ndcg_cut_10) without --k evaluates only the cutoffs named and "
        "trec lines print only the measures named; ndcg (with cg, dcg, idcg) is always computed",
        default=("ndcg",),
        parse=parse_measures,
        from_text=parse_measures,
        metavar="LIST",
        variables=(
            Variable("measures", "ARRAY<STRING>", lambda evaluation: list(evaluation.measures)),
            # derived from the measures (and the conventions their counters follow): the per-rank
            # signals their counters read (none for NDCG alone)
            Variable("signals", "ARRAY<STRING>", lambda evaluation: [s.name for s in evaluation.signals]),
            # whether num_ret's count of every rank is read; the curves read; the columns asked
            Variable("count_retrieved", "BOOLEAN", lambda evaluation: evaluation.counts_retrieved),
            Variable("curves", "ARRAY<STRING>", lambda evaluation: list(evaluation.curves)),
            Variable("measure_columns", "ARRAY<STRING>", lambda evaluation: list(evaluation.columns)),
        ),
        described_as="measures",
        show=list,
    ),
    Convention(
        "rbp_persistence",
        "rbp_persistence",
        "p of rank-biased precision (rbp, rbp_resid) and of cwl_eval's NERR10: the chance that a reader goes on "
        "from a rank to the next, strictly between 0 and 1 (default 0.9, trec_eval's and ir_measures' NERR10's; "
        "ir_measures' RBP defaults to 0.8)",
        default=0.9,
        parse=decimal,
        metavar="P",
        variables=(_variable("rbp_persistence", "DOUBLE"),),
        described_as="rbp_persistence",
        examples=(("0.8", 0.8),),
    ),
    Convention(
        "rbp_gain",
        "rbp_gain",
        "what rank-biased precision (rbp) credits a rank with",
        default="scaled",
        choices=(
            Choice(
                "scaled",
                "its gain over the query's largest judged gain when that is above 1, so rbp lies in [0, 1] "
                "(trec_eval's m_rbp.c)",
                "gain / max(1, the query's largest judged gain)",
            ),
            Choice(
                "unscaled",
                "its gain itself, so a graded rbp can pass 1 (ranx's rbp; trectools' get_rbp with "
                "binary_topical_relevance=False)",
                "the gain itself",
            ),
        ),
        variables=(_variable("rbp_gain", "STRING"),),
        described_as="rbp_gain",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "retrieved_scores",
        "retrieved_scores",
        "which results of the run count as retrieved",
        default="all",
        choices=(
            Choice("all", "every result, whatever its score (trec_eval)", "every result"),
            Choice(
                "positive",
                "only results scored above 0; one scored 0 or below is removed before ranking, as if never listed "
                "(torchmetrics' precision, recall, MAP and MRR)",
                "results scored above 0",
            ),
        ),
        variables=(_variable("retrieved_scores", "STRING"),),
        described_as="retrieved_scores",
        in_profiles=True,
        absent_means_default=True,
    ),
    Convention(
        "doc_weight_col",
        "doc_weight_col",
        "the column of per-document weights (finite, >= 0), the run's (or the qrels', doc_weights_in qrels), "
        "weighed as TF-Ranking's metrics weigh them: a "
        "result weighing 0 leaves the list; NDCG (cg, dcg, idcg) sums weight x gain, its ideal the results by weight "
        "x gain; P@k divides by min(k, list size); map sums P@i x weight over the relevant results, over their "
        "weight; each mean is weighted by the query's list weight (sum of weight x relevance / sum of relevance: the "
        "gain for NDCG, 0 or 1 for P and map); sets --ideal retrieved and --precision-denominator min-k-retrieved",
        default=None,
        parse=_column_name,
        metavar="COL",
        variables=(_variable("doc_weight_col", "STRING"),),
        described_as="doc_weight_col",
        absent_means_default=True,
        examples=(("w", "w"),),
    ),
    Convention(
        "doc_weights_in",
        "doc_weights_in",
        "which input holds doc_weight_col's column",
        default="run",
        choices=(
            Choice("run", "the run: a weight per result, as TF-Ranking's weights and scikit-learn's sample_weight"),
            Choice(
                "qrels",
                "the qrels: a weight per judged document, the same in every row that judges it (one per subtopic); "
                "each result weighs its judgment's weight, a result the qrels do not judge unjudged_weight",
            ),
        ),
        variables=(_variable("doc_weights_in", "STRING"),),
        described_as="doc_weights_in",
        absent_means_default=True,
        companions=(("doc_weight_col", "w"),),
    ),
    Convention(
        "unjudged_weight",
        "unjudged_weight",
        "with doc_weights_in qrels, the weight of each result the qrels do not judge (finite, >= 0; 0: such "
        "results leave the lists); unset: such a result is an error (exit 3)",
        default=None,
        parse=decimal,
        metavar="W",
        variables=(_variable("unjudged_weight", "DOUBLE"),),
        described_as="unjudged_weight",
        absent_means_default=True,
        examples=(("1", 1.0), ("0", 0.0)),
        companions=(("doc_weight_col", "w"), ("doc_weights_in", "qrels")),
    ),
    Convention(
        "err_max_grade",
        "err_max_grade",
        "g_max of ERR (expected reciprocal rank): a rank labelled g stops the reader with probability "
        "(2^g - 1) / 2^g_max; with ERR asked, a label above g_max is refused (exit 3), as gdeval refuses it; a "
        "positive integer up to 1023 (default 4, gdeval's fixed maximum, and so ir_measures' ERR@k; Elasticsearch's "
        "rank_eval takes it as maximum_relevance)",
        default=4,
        parse=positive_int,
        metavar="G",
        variables=(_variable("err_max_grade", "BIGINT"),),
        described_as="err_max_grade",
        absent_means_default=True,
        examples=(("3", 3),),
    ),
    Convention(
        "cwl_min_rel",
        "cwl_min_rel",
        "the lowest label of the scale the C/W/L measures (SDCG, NERR8 to NERR11, INST, INSQ, BPM) read gains on, "
        "as cwl_eval (through ir_measures' min_rel): a rank's gain is (min(max(label, 0, cwl_min_rel), cwl_max_rel) "
        "- cwl_min_rel) / (cwl_max_rel - cwl_min_rel), in [0, 1], an unjudged rank's 0 (default 0, ir_measures')",
        default=0.0,
        parse=decimal,
        metavar="LABEL",
        variables=(_variable("cwl_min_rel", "DOUBLE"),),
        described_as="cwl_min_rel",
        absent_means_default=True,
        examples=(("1", 1.0),),
    ),
    Convention(
        "cwl_max_rel",
        "cwl_max_rel",
        "the highest label of the scale the C/W/L measures read gains on, above cwl_min_rel: a label at "
        "or above it gains 1 (ir_measures' max_rel, which it requires; ours defaults to 4, as err_max_grade does: "
        "give your scale's top, here or as SDCG(max_rel=3)@10)",
        default=4.0,
        parse=decimal,
        metavar="LABEL",
        variables=(_variable("cwl_max_rel", "DOUBLE"),),
        described_as="cwl_max_rel",
        absent_means_default=True,
        examples=(("3", 3.0),),
    ),
    Convention(
        "cwl_target",
        "cwl_target",
        "T of the C/W/L measures INST, INSQ, NERR11 and BPM: the gain the reader seeks, on the scale of cwl_min_rel "
        "and cwl_max_rel; above 0.5 (default 1, ir_measures'; at 0.5 or below cwl_eval's INST's chance of going on "
        "can be 0, and one rule holds T for all four)",
        default=1.0,
        parse=decimal,
        metavar="T",
        variables=(_variable("cwl_target", "DOUBLE"),),
        described_as="cwl_target",
        absent_means_default=True,
        examples=(("3", 3.0),),
    ),
    Convention(
        "compat_persistence",
        "compat_persistence",
        "p of ir_measures' Compat (compatibility, Clarke, Vtyurina and Smucker, TOIS 2021): the persistence of "
        "its rank-biased overlap with the ideal ranking, strictly between 0 and 1 (default 0.95, ir_measures'; "
        "Compat(p=0.9) sets it)",
        default=0.95,
        parse=decimal,
        metavar="P",
        variables=(_variable("compat_persistence", "DOUBLE"),),
        described_as="compat_persistence",
        absent_means_default=True,
        examples=(("0.9", 0.9),),
    ),
)
CONVENTION: dict[str, Convention] = {convention.name: convention for convention in CONVENTIONS}
# The conventions that decide which labels validation refuses (pipeline.rules.label_bounds): the
# gain (a label whose gain overflows a double) and ERR's g_max when ERR is among the measures; and
# the run's weight column, whose weights are checked (pipeline.weights.document_weights).
# The checks alone (ndcg validate, check()) take these, so that they refuse what evaluate would.
LABEL_BOUND_CONVENTIONS: tuple[str, ...] = (
    "gain",
    "measures",
    "err_max_grade",
    "doc_weight_col",
    "doc_weights_in",
    "unjudged_weight",
)

# The choices a plain Evaluation field must take (gain and discount kinds are checked by Gain
# and Discount, which also accept parameters).
CHOICES: dict[str, tuple[str, ...]] = {
    c.field: c.values for c in CONVENTIONS if c.choices and not c.open and c.field == c.name
}
if CONVENTION["gain"].values != GAIN_KINDS or CONVENTION["discount"].values != DISCOUNT_KINDS:
    raise SpecError("the gain and discount conventions must choose among Gain's and Discount's kinds")
# The variables of sql/ that an evaluation binds, in the order of the conventions.
SQL_VARIABLES: tuple[Variable, ...] = tuple(variable for c in CONVENTIONS for variable in c.variables)


def spark_refusals() -> dict[str, dict[str, str]]:
    """``{variable: {value: why}}``: the choices the Spark engine refuses, and why."""
    return {
        c.variables[0].name: {choice.value: choice.spark_refuses for choice in c.choices if choice.spark_refuses}
        for c in CONVENTIONS
        if any(choice.spark_refuses for choice in c.choices)
    }


# Evaluation's defaults are the registry's.
DEFAULTS: dict[str, Any] = {convention.name: convention.default for convention in CONVENTIONS}
