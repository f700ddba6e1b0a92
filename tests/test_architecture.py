"""The project's own import graph, read from the sources with :mod:`ast` (nothing is imported):
no module of ``pipeline/`` reaches itself through its imports, and the layers stand on each
other in one direction only (the registry, then io's ground floor ``io/location.py``, io, validation,
engines, job, compare and report, the fronts ``api.py`` and ``cli.py``).

Every import counts: at module level, inside functions (an import placed in a function to break
a circle at run time is still a circle), and under ``TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pipeline"
# The longest a module may be, every module alike (the registry is in chapters).
MAX_LINES = 800

# What pipeline.io may import of ours besides itself: the registry and the errors.
IO_MAY_IMPORT = {"pipeline.errors", "pipeline.registry"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


@cache
def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _imported(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> list[str]:
    """The names an import statement reaches: ``from a.b import c`` reaches ``a.b.c`` when that
    is a module, else ``a.b``; relative imports resolved from ``module``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if is_package else module.split(".")[:-1]
        anchor = package[: len(package) - (node.level - 1)]
        base = ".".join([*anchor, *([base] if base else [])])
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in _modules() else base for alias in node.names]


@cache
def _imports_of(module: str) -> dict[str, list[int]]:
    """Every module of ``pipeline`` that ``module`` imports, with the lines it does so on."""
    path = _modules()[module]
    found: dict[str, list[int]] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        for name in _imported(node, module, path.name == "__init__.py"):
            # ``import pipeline.io.read`` reaches the module itself, not the package above it
            while name and name not in _modules():
                name = name.rpartition(".")[0]
            if name and name.startswith("pipeline") and name != module:
                found.setdefault(name, []).append(node.lineno)
    return found


def _graph() -> dict[str, set[str]]:
    return {module: set(_imports_of(module)) for module in _modules()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of ``graph`` as ``[a, b, ..., a]``, or None when there is none."""
    state: dict[str, str] = {}
    path: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = "open"
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == "open":
                return [*path[path.index(target) :], target]
            if target not in state:
                found = visit(target)
                if found:
                    return found
        state[module] = "done"
        path.pop()
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def _where(module: str, target: str) -> str:
    return f"{_modules()[module].relative_to(ROOT)}:{_imports_of(module)[target][0]} imports {target}"


def test_the_sources_are_read() -> None:
    modules = _modules()
    assert "pipeline.io.location" in modules and "pipeline.job" in modules, sorted(modules)
    assert "pipeline.io.fs" in _imports_of("pipeline.io.read")  # `from pipeline.io.fs import ...`
    assert "pipeline.io.delta" in _imports_of("pipeline.io.read")  # `from pipeline.io import delta`


def test_the_cycle_finder_names_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _cycle(graph) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


def test_no_import_circle_in_pipeline() -> None:
    graph = _graph()
    cycle = _cycle(graph)
    assert cycle is None, (
        "import circle: "
        + " -> ".join(cycle or [])
        + "\n"
        + "\n".join(_where(first, second) for first, second in zip(cycle or [], (cycle or [])[1:], strict=False))
    )


def test_the_ground_floor_imports_nothing_of_ours() -> None:
    """``io/location.py`` stands on the standard library alone."""
    path = _modules()["pipeline.io.location"]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = [
        (node.lineno, name.split(".")[0])
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for name in _imported(node, "pipeline.io.location", False)
    ]
    outside = [(line, name) for line, name in imported if name not in sys.stdlib_module_names]
    assert not outside, f"io/location.py imports beyond the standard library: {outside}"


def test_the_file_system_layer_stands_on_the_ground_floor() -> None:
    """``io/fs.py`` lists whatever file system it is handed: it imports no store of its own."""
    assert set(_imports_of("pipeline.io.fs")) <= {"pipeline.io.location", "pipeline.errors"}, _imports_of(
        "pipeline.io.fs"
    )


def test_io_imports_no_upper_layer() -> None:
    wrong = [
        _where(module, target)
        for module in _modules()
        if module.startswith("pipeline.io.")
        for target in _imports_of(module)
        if not target.startswith("pipeline.io") and target not in IO_MAY_IMPORT
    ]
    assert not wrong, "pipeline.io imports above itself:\n" + "\n".join(wrong)


def test_the_registry_stands_on_nothing_of_ours() -> None:
    """The registry's chapters import each other and the standard library, nothing else of ours:
    every other layer reads it, so it can read none of them."""
    wrong = [
        _where(module, target)
        for module in _modules()
        if module.startswith("pipeline.registry")
        for target in _imports_of(module)
        if not target.startswith("pipeline.registry")
    ]
    assert not wrong, "\n".join(wrong)


def test_nothing_below_the_fronts_imports_the_cli() -> None:
    below = ("pipeline.engines", "pipeline.registry", "pipeline.job", "pipeline.io")
    wrong = [
        _where(module, target)
        for module in _modules()
        if module.startswith(below)
        for target in _imports_of(module)
        if target == "pipeline.cli" or target.startswith("pipeline.cli.")
    ]
    assert not wrong, "\n".join(wrong)


def _over_length() -> dict[str, int]:
    counts = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_LINES:
            counts[name] = lines
    return counts


def test_no_module_is_over_800_lines() -> None:
    over = _over_length()
    assert not over, f"modules over {MAX_LINES} lines (split them by concern): {over}"


def test_reserved_names_cover_every_output_column() -> None:
    """The names a group column or a partition key may not take (one set, defined in io below
    the groups) hold every column the outputs have: the measures, the tie bounds, the marker."""
    from pipeline.groups import OVERALL, RESERVED_COLUMNS
    from pipeline.registry import MEASURE_NAMES

    outputs = {"query_id", "k", "queries", OVERALL, "ndcg_min", "ndcg_max", "ties_straddle_k", "tie_sensitive_queries"}
    assert outputs | set(MEASURE_NAMES) <= RESERVED_COLUMNS


def _test_imports_outside_helpers(path: Path) -> list[str]:
    """The imports of ours in a test or helpers file that reach neither ``pipeline`` nor
    ``tests.helpers``: another test module, conftest.py, or a relative import of either."""
    module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
    wrong = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        targets = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        if isinstance(node, ast.ImportFrom) and node.level:
            anchor = module.split(".")[: -node.level]
            targets = [".".join([*anchor, *([node.module] if node.module else [])])]
            if not node.module:  # ``from . import x``: each name is a module of the anchor
                targets = [f"{targets[0]}.{alias.name}" for alias in node.names]
        for target in targets:
            ours = target == "tests" or target.startswith("tests.") or target.startswith("conftest")
            if ours and target != "tests.helpers" and not target.startswith("tests.helpers."):
                wrong.append(f"{path.relative_to(ROOT).as_posix()}:{node.lineno} imports {target}")
    return wrong


def test_tests_import_only_the_product_the_helpers_and_libraries() -> None:
    """A test module imports pipeline, tests.helpers and third-party libraries, never another test
    module or conftest.py (which holds only fixtures and hooks): what tests share lives in
    tests/helpers, by subject, so a test file can be moved or deleted alone."""
    files = sorted((ROOT / "tests").glob("test_*.py")) + sorted((ROOT / "tests" / "helpers").glob("*.py"))
    assert len(files) > 50
    wrong = [line for path in files for line in _test_imports_outside_helpers(path)]
    assert not wrong, "imports between test modules (move what they share to tests/helpers):\n" + "\n".join(wrong)


def test_no_helpers_module_shadows_a_helper_of_the_same_name() -> None:
    """``tests.helpers.frames`` the module would replace ``tests.helpers.frames`` the function
    for every test that imports the name after some test imported the module (order-dependent:
    470 tests failed in a full run, none alone)."""
    folder = ROOT / "tests" / "helpers"
    modules = {path.stem for path in folder.glob("*.py") if path.stem != "__init__"}
    defined = set()
    for node in ast.parse((folder / "__init__.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            defined.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.ImportFrom):
            defined.update(alias.asname or alias.name for alias in node.names)
    assert not modules & defined, f"tests/helpers modules named like helpers of tests.helpers: {modules & defined}"
