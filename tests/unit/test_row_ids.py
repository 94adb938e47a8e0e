"""Row ids are names: `row_ids.py` holds one constant per decision-table row, and `src/` writes no row id as a string.

The literal `"pass"` is exempt (it is also a gate value and a lane status, so a string `"pass"` says nothing about
which is meant), and so is the worker side (`sealed/worker/`, which names no row: its `"freeze-expired"` is a run
kind); docstrings and f-string text may name rows in prose.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

from evidence_gate import decision, row_ids

PACKAGE = Path(row_ids.__file__).parent
EXEMPT_VALUES = {row_ids.PASS}


def _constants() -> dict[str, str]:
    return {name: value for name, value in vars(row_ids).items() if name.isupper() and isinstance(value, str)}


def test_one_constant_per_row_in_table_order() -> None:
    """The constants are the table's ids, one each, named by the id in upper case, in the table's order."""
    constants = _constants()
    assert list(constants.values()) == list(decision.row_ids())
    assert all(name == value.upper().replace("-", "_") for name, value in constants.items())


def row_literals(path: Path, ids: set[str]) -> Iterator[str]:
    """`path:line 'id'` for each string literal in code (not a docstring, not f-string text) that is a row id."""
    tree = ast.parse(path.read_text("utf-8"))
    prose: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr | ast.JoinedStr | ast.FormattedValue):
            prose.update(id(child) for child in ast.iter_child_nodes(node))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in ids and id(node) not in prose:
            yield f"{path.name}:{node.lineno} {node.value!r}"


def test_src_names_rows_by_constant() -> None:
    """No module outside row_ids.py writes a row id as a string literal: import its name from row_ids instead."""
    ids = set(decision.row_ids()) - EXEMPT_VALUES
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] == "data" or rel.parts[:2] == ("sealed", "worker") or path.name == "row_ids.py":
            continue
        found += [f"{rel.parent}/{hit}" for hit in row_literals(path, ids)]
    assert found == []


def test_the_literal_check_sees_a_row_in_code_and_not_in_prose(tmp_path: Path) -> None:
    """A row id in a call, a dict key and a match pattern is found; in a docstring or an f-string's text it is not."""
    (tmp_path / "m.py").write_text(
        '"""Mentions run-integrity."""\n'
        'def f(x):\n    """run-integrity"""\n    v = Violation("run-integrity", f"see run-integrity {x}")\n'
        '    d = {"harness-probed": 1}\n'
        '    match x:\n        case "property-failed":\n            return d\n',
        encoding="utf-8",
    )
    found = list(row_literals(tmp_path / "m.py", {"run-integrity", "harness-probed", "property-failed"}))
    assert found == ["m.py:4 'run-integrity'", "m.py:5 'harness-probed'", "m.py:7 'property-failed'"]
