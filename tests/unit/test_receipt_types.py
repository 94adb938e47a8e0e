"""The receipt's TypedDicts follow its JSON Schema, and the readers built on them are checked by mypy."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.decision import decide
from evidence_gate.model import Violation
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import types as receipt_types
from evidence_gate.receipt.write import empty_receipt, validate

SCHEMA = json.loads(resources.files("evidence_gate").joinpath("data/receipt.schema.json").read_text("utf-8"))
# Each TypedDict and the path of the schema node it mirrors.
PARTS: dict[str, tuple[type, tuple[str | int, ...]]] = {
    "violation": (receipt_types.ViolationJson, ("properties", "violations", "items")),
    "decision": (receipt_types.DecisionJson, ("properties", "decision")),
    "git": (receipt_types.GitJson, ("properties", "git")),
    "counts": (receipt_types.CountsJson, ("properties", "properties", "properties", "counts")),
    "seed ledger": (receipt_types.SeedLedgerJson, ("$defs", "seed_ledger")),
    "failure": (receipt_types.FailureJson, ("$defs", "seed_ledger", "properties", "failure", "oneOf", 1)),
}


def _node(path: tuple[str | int, ...]) -> Any:
    node: Any = SCHEMA
    for key in path:
        node = node[key]
    return node


@pytest.mark.parametrize("part", PARTS)
def test_typed_dict_keys_are_the_schemas(part: str) -> None:
    """Every key the schema lists is in the TypedDict and back, required exactly where the schema requires it."""
    typed, path = PARTS[part]
    node = _node(path)
    assert node["type"] == "object", path
    keys = set(typed.__required_keys__) | set(typed.__optional_keys__)  # type: ignore[attr-defined]
    assert keys == set(node["properties"]), f"{part}: TypedDict and schema disagree on keys"
    assert set(typed.__required_keys__) == set(node.get("required", [])), f"{part}: required keys differ"  # type: ignore[attr-defined]


# Parts the writers build with keys beside the schema's (the schema allows more): each TypedDict holds every key the
# schema lists, required exactly where the schema requires it.
WRITTEN: dict[str, tuple[type, tuple[str | int, ...]]] = {
    "receipt": (receipt_types.ReceiptJson, ()),
    "config": (receipt_types.ConfigJson, ("properties", "config")),
    "context": (receipt_types.ContextJson, ("properties", "context")),
    "freeze": (receipt_types.FreezeJson, ("properties", "freeze")),
    "fixtures": (receipt_types.FixturesJson, ("properties", "fixtures")),
    "properties": (receipt_types.PropertiesJson, ("properties", "properties")),
    "patch coverage": (receipt_types.PatchCoverageJson, ("properties", "patch_coverage")),
}


@pytest.mark.parametrize("part", WRITTEN)
def test_written_parts_hold_the_schemas_keys(part: str) -> None:
    """A writer's TypedDict has every key of its schema node, required where the schema requires it."""
    typed, path = WRITTEN[part]
    node = _node(path)
    keys = set(typed.__required_keys__) | set(typed.__optional_keys__)  # type: ignore[attr-defined]
    assert set(node["properties"]) <= keys, f"{part}: the TypedDict lacks {set(node['properties']) - keys}"
    assert set(typed.__required_keys__) == set(node.get("required", [])), f"{part}: required keys differ"  # type: ignore[attr-defined]


def test_producers_write_schema_valid_parts() -> None:
    """A violation and a decision as the gate writes them validate, and the accessors hand them back typed."""
    receipt = empty_receipt()
    violation = Violation("history-missing", "gone; fix: fetch", "a.py", 3)
    result = decide([violation])
    receipt.update(state="final", violations=[violation.to_json()], decision=result.to_json())
    assert validate(receipt) == []
    assert receipt_access.violations(receipt) == [
        {"row": "history-missing", "path": "a.py", "line": 3, "message": "gone; fix: fetch"}
    ]
    assert receipt_access.decision_row(receipt) == "history-missing"
    assert receipt_access.git(receipt) == {"baseline": None, "head": None, "merge_base": None}


def test_accessors_skip_what_is_not_an_object() -> None:
    """A receipt read back from a file may hold anything: non-objects are skipped, absent parts are empty or None."""
    odd: dict[str, Any] = {"violations": ["x", None, {"row": "pass"}], "decision": [], "properties": {"ledgers": 5}}
    assert receipt_access.violations(odd) == [{"row": "pass"}]
    assert receipt_access.decision(odd) is None
    assert receipt_access.decision_row({"decision": {"row": 7}}) is None
    assert receipt_access.ledgers(odd) == []
    assert receipt_access.counts({}) is None
    assert receipt_access.git({"git": "abc"}) == {"baseline": None, "head": None, "merge_base": None}


def test_mypy_catches_a_misspelt_key_in_a_reader(tmp_path: Path) -> None:
    """A reader that indexes a part by a key the schema does not have fails mypy --strict (so readers are checked)."""
    reader = tmp_path / "reader.py"
    reader.write_text(
        textwrap.dedent(
            """
            from typing import Any

            from evidence_gate.receipt import access as receipt_access


            def first_failure(receipt: dict[str, Any]) -> str:
                for ledger in receipt_access.ledgers(receipt):
                    return str(ledger["failing_sed"])
                row = receipt_access.violations(receipt)[0]["rwo"]
                return str(row)
            """
        ),
        "utf-8",
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(reader)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert '"SeedLedgerJson" has no key "failing_sed"' in proc.stdout, proc.stdout
    assert '"ViolationJson" has no key "rwo"' in proc.stdout, proc.stdout
