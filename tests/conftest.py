from __future__ import annotations

import subprocess
import sys

import pytest

try:  # pytest 9: the field a node id is read from (see the hook below)
    from _pytest.nodeid import NodeId
except ImportError:  # pytest 8: pytest-xdist's own grouping works there
    NodeId = None  # type: ignore[assignment,misc]

# The shared SparkSession and S3 server live in tests/helpers (so that the inner pytest sessions
# of tests/test_harness.py use the same code); importing their fixtures and hook here is what
# makes pytest use them. The helpers the tests call are in tests/helpers too: conftest.py holds
# only fixtures and hooks.
from tests.helpers import ENGINES, run_cli, run_cli_process
from tests.helpers.s3 import s3_bucket, s3_server, s3_server_process
from tests.helpers.spark import compiled_spark, local_spark, pytest_runtest_makereport, shared_spark, spark_cli

__all__ = [
    "compiled_spark",
    "local_spark",
    "pytest_runtest_makereport",
    "s3_bucket",
    "s3_server",
    "s3_server_process",
    "shared_spark",
    "spark_cli",
]


@pytest.fixture(params=[*ENGINES, pytest.param("spark", marks=pytest.mark.spark)])
def engine(request: pytest.FixtureRequest) -> str:
    if request.param == "spark":
        request.getfixturevalue("local_spark")  # the session's one SparkSession, started once
    return str(request.param)


SPARK_FIXTURES = frozenset({"local_spark", "spark_cli"})
# `make test-fast` runs every test function, and of one parametrized over more than SAMPLED_OVER
# cases (engines, options, matrices, seeds) every SAMPLE_EVERY-th: the rest is `exhaustive`
SAMPLED_OVER, SAMPLE_EVERY = 4, 12


def reaches(function: object, namespace: dict, targets: tuple[object, ...], seen: set[int] | None = None) -> bool:
    """Whether ``function``, or a function of its module or of tests/helpers it calls (however
    deep), names one of ``targets`` (a function, a module): read from the code, not by running it."""
    code = getattr(function, "__code__", None)
    seen = set() if seen is None else seen
    if code is None or id(code) in seen:
        return False
    seen.add(id(code))
    codes = [code]
    while codes:  # the function's own code and the lambdas, comprehensions and nested functions in it
        current = codes.pop()
        codes += [const for const in current.co_consts if hasattr(const, "co_names")]
        for name in current.co_names:
            value = namespace.get(name)
            if any(value is target for target in targets):
                return True
            module = getattr(value, "__module__", None) or ""
            # the test module's own functions, and the shared helpers it calls
            if module == namespace.get("__name__") and reaches(value, namespace, targets, seen):
                return True
            if module.startswith("tests.helpers") and reaches(value, vars(sys.modules[module]), targets, seen):
                return True
    return False


# what marks a test `subprocess` (it starts processes) and `cli` (it runs the command line here)
STARTS_PROCESSES = (run_cli_process, subprocess)
RUNS_THE_CLI = (run_cli,)


@pytest.hookimpl(tryfirst=True)  # before -m reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Spark's cases of the `engine` fixture leave the tests marked `local_engines`. Marked by
    rule, for `make test-fast`: `spark`, every test that asks for the shared SparkSession;
    `subprocess`, every test whose code, or its module's fixtures and helpers, start processes
    (the command line in a subprocess costs a second or more of imports each time); `cli`, every
    test that runs the command line in its own process (`run_cli`: a whole evaluation, output
    files and all, per call); `exhaustive`, all but a sample of each test parametrized over many cases."""
    kept, deselected = [], []
    # each function read once, not once per case of its parametrization (a second of collection)
    answers: dict[tuple[object, str, tuple[object, ...]], bool] = {}

    def read(function: object, namespace: dict, targets: tuple[object, ...]) -> bool:
        key = (getattr(function, "__code__", function), namespace["__name__"], targets)
        if key not in answers:
            answers[key] = reaches(function, namespace, targets)
        return answers[key]

    cases: dict[tuple[str, str], list[pytest.Item]] = {}
    for item in items:
        if isinstance(item, pytest.Function) and getattr(item, "callspec", None) is not None:
            cases.setdefault((item.module.__name__, item.originalname), []).append(item)
    for same_function in cases.values():
        if len(same_function) > SAMPLED_OVER:
            for index, item in enumerate(same_function):
                if index % SAMPLE_EVERY:
                    item.add_marker(pytest.mark.exhaustive)
    for item in items:
        params = getattr(item, "callspec", None)
        on_spark = params is not None and params.params.get("engine") == "spark"
        fixtures = set(getattr(item, "fixturenames", ()))
        if SPARK_FIXTURES & fixtures and item.get_closest_marker("spark") is None:
            item.add_marker(pytest.mark.spark)
        if isinstance(item, pytest.Function):
            namespace = vars(item.module)
            definitions = item._fixtureinfo.name2fixturedefs
            own = [
                d.func
                for name in fixtures
                for d in definitions.get(name, ())
                if d.func.__module__ == namespace["__name__"]
            ]
            functions = (item.function, *own)
            if any(read(function, namespace, STARTS_PROCESSES) for function in functions):
                item.add_marker(pytest.mark.subprocess)
            if any(read(function, namespace, RUNS_THE_CLI) for function in functions):
                item.add_marker(pytest.mark.cli)
        (deselected if on_spark and item.get_closest_marker("local_engines") else kept).append(item)
        if getattr(config.option, "loadgroup", False) and (on_spark or SPARK_FIXTURES & fixtures):
            # `make test` (--dist loadgroup): the tests that share the worker's SparkSession all go
            # to one worker, so one JVM starts and warms up, not one per worker. pytest-xdist
            # 3.8's own hook, which reads the mark, sets a field pytest 9 no longer reads; there
            # the node id is set here as that hook means to
            item.add_marker(pytest.mark.xdist_group("shared-spark"))
            if NodeId is not None:
                item._id = NodeId.parse(f"{item.nodeid}@shared-spark")
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept
