"""How ``ndcg COMMAND --help`` reads: a screen, not a manual. Each flag in its group with the
first clause of its help (up to the first ``;``), a long list of choices shown as a name, then
examples and the exit codes; ``--help-all`` prints every flag's help in full (the reference is
docs/reference.md). Only argparse is imported here: ``--help`` stays fast."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Iterable, Sequence

# the flags --help leaves to --help-all: a column named apart in one input, a Delta version, the
# knobs of one engine or one measure, and those that change how output looks, not what it says
ADVANCED = frozenset(
    {
        "run_query_col", "run_doc_col", "qrels_query_col", "qrels_doc_col", "qrels_label_col",
        "run_version", "qrels_version", "log_base", "ap_denominator", "precision_denominator",
        "queries_without_judgments", "rbp_persistence", "rbp_gain", "err_max_grade", "retrieved_scores",
        "cwl_min_rel", "cwl_max_rel", "compat_persistence", "cwl_target", "doc_weight_col", "doc_weights_in",
        "unjudged_weight",
        "threads", "spark_master",
        "weight_col", "missing_query_weight", "missing_qrels_partition", "digits", "log_format", "print_config",
    }
)  # fmt: skip
# a choice list longer than this is shown as the flag's value name (--gain GAIN), its choices
# left to --help-all and the reference (--measures listed some 1,000 characters of them)
_LONGEST_CHOICES = 30
_MORE = "more flags, and each in full: `{prog} --help-all`; the reference: docs/reference.md"


class ShortHelp(argparse.RawDescriptionHelpFormatter):
    """Each flag's help cut to its first clause (to the first ``"; "``), choices past
    :data:`_LONGEST_CHOICES` characters shown by name."""

    def _expand_help(self, action: argparse.Action) -> str:
        return first_clause(super()._expand_help(action))

    def __init__(self, prog: str) -> None:
        super().__init__(prog, max_help_position=30)

    def add_arguments(self, actions: Iterable[argparse.Action]) -> None:
        super().add_arguments([action for action in actions if action.dest not in ADVANCED])

    def _metavar_formatter(self, action: argparse.Action, default_metavar: str) -> Callable[[int], tuple[str, ...]]:
        if (
            default_metavar
            and action.metavar is None
            and (action.choices is None or len(",".join(map(str, action.choices))) > _LONGEST_CHOICES)
        ):
            # the value's name, its last word (--qrels-query-col COL, --memory-limit LIMIT)
            name = default_metavar.rsplit("_", 1)[-1]
            return lambda size: (name,) * size if isinstance(size, int) else (name,)
        return super()._metavar_formatter(action, default_metavar)


class FullHelp(argparse.RawDescriptionHelpFormatter):
    """Every flag's help whole, every choice listed: ``--help-all``."""


def first_clause(text: str) -> str:
    """``text`` up to its first ``"; "`` (a clause that opens a parenthesis keeps it whole).

    >>> first_clause("gains: linear (default; trec_eval's), exponential; see docs/conventions.md")
    "gains: linear (default; trec_eval's), exponential"
    """
    return _up_to(text, "; ", keep=0)


def first_sentence(text: str) -> str:
    """``text`` up to the end of its first sentence (a period outside parentheses).

    >>> first_sentence("Compare systems (e.g. a and b). Either outputs or runs.")
    'Compare systems (e.g. a and b).'
    """
    return _up_to(text, ". ", keep=1)


def _up_to(text: str, separator: str, *, keep: int) -> str:
    """``text`` before the first ``separator`` outside parentheses, with ``keep`` of its characters."""
    depth = 0
    for i, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and text.startswith(separator, i):
            return text[: i + keep]
    return text


class _HelpAll(argparse.Action):
    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        parser.formatter_class, parser.usage = FullHelp, None
        parser.epilog = (parser.epilog or "").replace(_MORE.format(prog=parser.prog) + "\n\n", "")
        parser.description = getattr(parser, "full_description", parser.description)
        for group in parser._action_groups:
            group.description = getattr(group, "full_description", group.description)
        parser.print_help()
        parser.exit()


def add_help_texts(command: argparse.ArgumentParser, usage: str, examples: Sequence[str], exit_codes: str) -> None:
    """``command``'s help as a screen: its ``usage`` in one line (argparse's listed every flag,
    36 lines for evaluate), ``--help-all`` beside ``--help``, and after the flags its
    ``examples`` (each a command line, ``# why`` after it), where the rest is, and the exit codes."""
    command.usage = f"%(prog)s {usage}"
    command.formatter_class = ShortHelp
    # a group's title says what it holds; its paragraph, and the description past its first
    # sentence, are for --help-all
    if command.description:
        command.full_description = command.description  # type: ignore[attr-defined]
        command.description = textwrap.fill(first_sentence(command.description), 78)
    for group in command._action_groups:
        group.full_description, group.description = group.description, None  # type: ignore[attr-defined]
    command.add_argument("--help-all", action=_HelpAll, help="every flag with its help in full, then exit")
    shown = "\n".join(f"  {example}" for example in examples)
    command.epilog = f"examples:\n{shown}\n\n{_MORE.format(prog=command.prog)}\n\n{exit_codes}"


# each command's examples, on the sample in data/ (run as printed from the repository root, in
# order: tests/test_cli_help.py runs them, with out/a and out/b evaluated first)
EXAMPLES: dict[str, tuple[str, ...]] = {
    "evaluate": (
        "ndcg evaluate --run data/run.parquet --qrels data/qrels.parquet --k 5,10",
        "ndcg evaluate --run data/trec/run.txt --qrels data/trec/qrels.txt --measures nDCG@10,P@5,AP"
        "   # just these three",
        "ndcg evaluate --run data/trec/run.txt --qrels data/trec/qrels.txt --measures all_trec --output-format trec",
        "ndcg evaluate --run data/run.parquet --qrels data/qrels.parquet --k 10 --profile lightgbm --per-query",
        "ndcg evaluate --config eval.toml --run data/runs --partition dt=2026-11-21 --out out/daily",
    ),
    "validate": (
        "ndcg validate --run data/run.parquet --qrels data/qrels.parquet",
        "ndcg validate --run data/trec/run.txt --qrels data/trec/qrels.txt --json",
    ),
    "compare": (
        "ndcg compare --run data/run.parquet --run data/run_b.parquet --qrels data/qrels.parquet --k 10 "
        "--fail-if-worse 0.01   # the first --run is the baseline",
        "ndcg compare --run data/run.parquet --run data/run_b.parquet --qrels data/qrels.parquet --k 10 "
        "--fail-if-drop-over 0.02 --output-format markdown   # for a CI step summary",
        "ndcg compare --baseline out/a --candidate out/b --k 10 --out out/cmp   # saved `evaluate --out` folders",
    ),
    "report": ("ndcg report out/a out/b out/cmp --html out/report.html",),
    "sql": (
        "ndcg sql --dialect duckdb --k 5,10 --gain exponential",
        "ndcg sql --macros   # table macros ndcg_per_query(run, qrels, ...) and ndcg_summary(...)",
    ),
}
