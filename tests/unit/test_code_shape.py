"""The shape of `src/`: no function over 80 lines and no module over 600 (as ruff formats them), and no function or
constant that only its own tests use."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "evidence_gate"
MAX_LINES = 80
MAX_MODULE_LINES = 600  # issue 18: no module over 600 lines, so each can be read in one sitting
# Names nothing in src/ uses, kept on purpose. Each needs a reason; an entry whose name is used again fails below.
KEPT = {
    "leave": "sealed/worker.py's exit, called from runner_env.BOOTSTRAP, a string the sealed interpreter runs",
    "EXIT_PRECONDITION": "SPEC's exit code 11 by name, for tests and callers; src derives codes from the table",
    "known_rows": "the drift test's one view of data/report_rows.json (README anchors per row)",
    "neutralise_reason": "sealed_tree's test entry to its three reasons; sealed_tree is moving into sealed/",
}
# Called by a framework, not by name: pytest hooks, ast.NodeVisitor methods, dunder methods.
CALLED_BY_NAME = ("pytest_", "visit_", "__")


def _ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if found is None:
        pytest.fail("ruff is not installed: `./dev test` installs it with the test extras")
    return found


def _formatted(src: Path, dest: Path) -> Path:
    """A copy of `src` as `ruff format` writes it, so a long function squeezed onto long lines still counts."""
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("__pycache__", "data"))
    subprocess.run(
        [_ruff(), "format", "--quiet", "--config", str(ROOT / "pyproject.toml"), str(dest)],
        check=True,
        capture_output=True,
    )
    return dest


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """`path:line name (N lines)` for every function or method under `root`, nested ones included, over `limit`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "data" in path.relative_to(root).parts:
            continue  # the demo's example project, not the gate's code
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_no_function_in_src_is_over_80_lines(tmp_path: Path) -> None:
    """Every function in src/evidence_gate, formatted, fits in 80 lines: split the ones this names."""
    assert long_functions(_formatted(PACKAGE, tmp_path / "evidence_gate")) == []


def long_modules(root: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    """`path (N lines)` for every module under `root` (the demo's data excepted) longer than `limit`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        if "data" in path.relative_to(root).parts:
            continue
        count = len(path.read_text("utf-8").splitlines())
        if count > limit:
            found.append(f"{path.relative_to(root)} ({count} lines)")
    return found


def test_no_module_in_src_is_over_600_lines(tmp_path: Path) -> None:
    """Every module in src/evidence_gate, formatted, has at most 600 lines: split the ones this names by family."""
    formatted = _formatted(PACKAGE, tmp_path / "evidence_gate")
    assert long_modules(formatted) == []
    (tmp_path / "big.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1), encoding="utf-8")
    assert long_modules(tmp_path) == [f"big.py ({MAX_MODULE_LINES + 1} lines)"]


def _assignments(count: int, indent: str) -> str:
    return "".join(f"{indent}x{i} = {i}\n" for i in range(count))


def test_the_length_check_sees_methods_nested_and_async_functions(tmp_path: Path) -> None:
    """A long method, a long nested function and a long async function are each reported; 80 lines is allowed."""
    (tmp_path / "m.py").write_text(
        "def fits():\n"
        + _assignments(79, "    ")
        + "class C:\n    def method(self):\n"
        + _assignments(80, "        ")
        + "def outer():\n    def inner():\n"
        + _assignments(80, "        ")
        + "async def coroutine():\n"
        + _assignments(80, "    "),
        encoding="utf-8",
    )
    found = long_functions(tmp_path)
    assert {f.split()[1] for f in found} == {"method", "outer", "inner", "coroutine"}, found


def _definitions(tree: ast.Module) -> Iterator[str]:
    """Top-level functions, classes and constants, and the methods of top-level classes."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name
        if isinstance(node, ast.ClassDef):
            yield from (m.name for m in node.body if isinstance(m, ast.FunctionDef | ast.AsyncFunctionDef))
        if isinstance(node, ast.Assign):
            yield from (t.id for t in node.targets if isinstance(t, ast.Name))
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id


def _uses(tree: ast.Module) -> Iterator[str]:
    """Every name the module reads, as a variable, an attribute, an import or a keyword argument."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            yield node.id
        elif isinstance(node, ast.Attribute):
            yield node.attr
        elif isinstance(node, ast.ImportFrom):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.keyword) and node.arg:
            yield node.arg


def unused_names(root: Path) -> set[str]:
    """Names defined under `root` that no code under `root` reads (tests do not count: code only its test calls is
    dead). `__all__` lists are not uses."""
    paths = [p for p in sorted(root.rglob("*.py")) if "data" not in p.relative_to(root).parts]
    trees = [ast.parse(p.read_text("utf-8")) for p in paths]
    used = {name for tree in trees for name in _uses(tree)}
    defined = {name for tree in trees for name in _definitions(tree)}
    return {n for n in defined - used if not n.startswith(CALLED_BY_NAME) and n != "__all__"}


def test_src_has_no_code_that_only_tests_use() -> None:
    """Every function, class, method and constant in src/evidence_gate is used by src/ itself (or listed in KEPT)."""
    unused = unused_names(PACKAGE)
    assert unused - set(KEPT) == set(), "remove it, or list it in KEPT with the reason"
    assert set(KEPT) <= unused, "a KEPT name is used again: drop it from KEPT"


def test_the_dead_code_check_sees_an_unused_function(tmp_path: Path) -> None:
    """A function only defined, a constant only listed in `__all__`, are found; a called one and a hook are not."""
    (tmp_path / "m.py").write_text(
        "LIMIT = 3\nUNUSED = 4\n__all__ = ['UNUSED']\n\n"
        "def used():\n    return LIMIT\n\ndef dead():\n    return used()\n\n"
        "def pytest_configure(config):\n    pass\n",
        encoding="utf-8",
    )
    assert unused_names(tmp_path) == {"UNUSED", "dead"}
