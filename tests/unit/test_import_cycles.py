"""The import graph of `src/`: no cycle, counting every import (lazy ones inside functions too), so a module split
into stages stays a chain each stage imports only from the ones before it."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _graph() -> dict[str, set[str]]:
    """Each module of the package and the package's modules it imports."""
    found: dict[str, set[str]] = {}
    for path in sorted((SRC / "evidence_gate").rglob("*.py")):
        parts = path.relative_to(SRC).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        found[module] = names
    return {m: {n for n in names if n in found and n != m} for m, names in found.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle in `graph`, as the modules around it, or [] when there is none."""
    done: set[str] = set()
    path: list[str] = []

    def visit(module: str) -> list[str]:
        if module in path:
            return [*path[path.index(module) :], module]
        if module in done:
            return []
        path.append(module)
        for dep in sorted(graph[module]):
            cycle = visit(dep)
            if cycle:
                return cycle
        path.pop()
        done.add(module)
        return []

    for module in sorted(graph):
        cycle = visit(module)
        if cycle:
            return cycle
    return []


def test_src_has_no_import_cycle() -> None:
    """No module of the package imports, through any chain, a module that imports it back."""
    graph = _graph()
    assert "evidence_gate.lanes.properties.plan" in graph["evidence_gate.lanes.properties.lane"], "graph unread"
    assert _cycle(graph) == [], " -> ".join(_cycle(graph))


def test_the_cycle_check_finds_a_cycle() -> None:
    """A two-module and a three-module cycle are both reported; a chain is not."""
    assert _cycle({"a": {"b"}, "b": {"a"}}) == ["a", "b", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) == []
