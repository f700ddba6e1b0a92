"""Errors a user can cause, each with the exit code the CLI returns for it.

Exit codes: 0 done; 1 internal error or out of memory; 2 usage error (bad flags or config) or an output
that cannot be written (a file where asked, or stdout: a full device, a closed pipe, an encoding that
lacks a character of the output); 3 invalid input
data (unreadable, malformed or inconsistent files); 4 a requested partition does not exist;
5 nothing to evaluate (no query in both run and qrels); 6 the regression gate of ``ndcg compare
--fail-if-worse`` failed (the candidate is significantly worse than the baseline by more than the margin),
or its judgment coverage floor ``--min-judged`` did (the candidate's Judged@k is below it).
"""

from __future__ import annotations


class NdcgError(Exception):
    """Base of every error the tool reports as a message rather than a traceback."""

    exit_code = 1


class OutOfMemory(NdcgError):
    """The engine ran out of memory (DuckDB's ``memory_limit`` or the machine's)."""

    exit_code = 1


class UsageError(NdcgError):
    """Bad flags, options or configuration."""

    exit_code = 2


class OutputError(UsageError):
    """An output cannot be written where asked (a file in the way that is not ours, a folder
    given as a file, a read-only or full disk). Exit 2: the user chooses another place."""


def stdout_failure(error: BaseException, encoding: str | None) -> OutputError:
    """Writing to stdout failed: what happened and what to do, as an :class:`OutputError`
    (exit 2). The outputs of ``--out`` are written before stdout is, so they are complete."""
    if isinstance(error, UnicodeEncodeError):
        character = error.object[error.start : error.start + 1]
        return OutputError(
            f"cannot print to stdout: its encoding ({encoding or error.encoding}) has no character "
            f"{character!r} (U+{ord(character):04X}) of the output; set PYTHONIOENCODING=utf-8 (or a UTF-8 locale "
            "such as LANG=C.UTF-8), print JSON (--json or --output-format json: ASCII with escapes), or write "
            "the results with --out"
        )
    if isinstance(error, BrokenPipeError):
        return OutputError(
            "cannot write to stdout: the reader closed the pipe before the output was read in full; read all of "
            "it, or write the results with --out"
        )
    reason = error.strerror if isinstance(error, OSError) and error.strerror else first_line(error)
    return OutputError(
        f"cannot write to stdout: {reason}; redirect it to a file on a disk with room, or write the results with --out"
    )


class InvalidInput(NdcgError):
    """An input file is missing, unreadable, or holds data we refuse to score."""

    exit_code = 3


class PartitionNotFound(NdcgError):
    """A requested partition does not exist in the input."""

    exit_code = 4


class NothingToEvaluate(NdcgError):
    """No query is in both the run and the qrels."""

    exit_code = 5


class RegressionGateFailed(NdcgError):
    """``ndcg compare --fail-if-worse``: the candidate is worse than the baseline by more than the
    margin, significantly; or ``--min-judged``: its Judged@k is below the floor. Raised after the
    comparison is printed and written."""

    exit_code = 6


def install_hint(extra: str) -> str:
    """The command that installs an optional extra's packages, read from this package's own
    metadata (so it follows pyproject.toml), with the checkout's form beside it: the
    distribution is not on the package index, so ``pip install 'ndcg-pipeline[extra]'`` would
    not work."""
    from importlib import metadata

    marker = f'extra == "{extra}"'
    try:
        requirements = metadata.requires("ndcg-pipeline") or []
    except metadata.PackageNotFoundError:
        requirements = []
    packages = [line.split(";")[0].strip() for line in requirements if marker in line.replace("'", '"')]
    direct = " ".join(f"'{package}'" for package in packages) if packages else f"the {extra} extra"
    return f"pip install {direct} (from a checkout: pip install -e '.[{extra}]')"


def first_line(error: BaseException) -> str:
    """The first line of an error's message (engines' errors run to pages), or its type."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
