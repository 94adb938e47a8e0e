"""The worker's result event is a typed record of the protocol: the plugin writes exactly its fields, and the gate
takes a result line only when every field is there with its wire type (else the worker's run has a problem)."""

from __future__ import annotations

import ast
import json
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.sealed import run
from evidence_gate.sealed.worker import protocol

WORKER = Path(protocol.__file__).parent


def _event(**changes: Any) -> dict[str, Any]:
    """A well-formed result event, as the plugin writes one for a passing Hypothesis seed."""
    event: dict[str, Any] = {
        protocol.EV: protocol.Event.RESULT.value,
        "node": "tests/test_p.py::test_p",
        "spec": "tests/test_p.py::test_p",
        "seed": 7,
        "kind": protocol.Kind.PLAN.value,
        "outcome": "passed",
        "message": "",
        "hypothesis": True,
        "examples": 50,
        "stopped_because": "settings.max_examples=50",
        "stop": "max_examples",
        "assertion_hash": None,
        "falsifying": None,
        "failure": None,
        "assertion_bound": None,
        "tampered": [],
        "examples_digest": "ab" * 32,
        "cases": 50,
        "case_digests": ["0123456789ab"],
        "strategies": {"x": "integers()"},
        "discards": 0,
        "census_failures": 0,
        "blob": None,
    }
    event.update(changes)
    return {k: v for k, v in event.items() if v is not ...}


def test_the_wire_types_follow_the_typed_record() -> None:
    """RESULT_FIELDS names each field of ResultEvent but `ev`, with the classes its annotation allows."""
    hints = typing.get_type_hints(protocol.ResultEvent)
    assert set(protocol.RESULT_FIELDS) == set(hints) - {protocol.EV}
    for key, wire in protocol.RESULT_FIELDS.items():
        hint = hints[key]
        allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
        assert {typing.get_origin(a) or a for a in allowed} == set(wire), key


def test_the_plugin_writes_exactly_the_records_fields() -> None:
    """The worker side's result literal (with the steering fields it spreads in) has the record's keys, no more."""
    keys: set[str] = set()
    for path in sorted(WORKER.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Name) and k.id == "EV" and ast.unparse(v) == "Event.RESULT"
                for k, v in zip(node.keys, node.values, strict=True)
            ):
                keys |= {k.value for k in node.keys if isinstance(k, ast.Constant)}
            if isinstance(node, ast.FunctionDef) and node.name == "_steering":
                for ret in ast.walk(node):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Dict):
                        keys |= {k.value for k in ret.value.keys if isinstance(k, ast.Constant)}
    assert keys == set(protocol.RESULT_FIELDS)


def test_a_well_formed_event_has_no_problem() -> None:
    """The plugin's passing and failing shapes are both accepted."""
    assert protocol.result_problem(_event()) is None
    failing = _event(
        outcome="failed",
        assertion_hash="c" * 64,
        falsifying="Falsifying example: test_p(x=0)",
        failure={"path": "tests/test_p.py", "line": 3, "statement": "assert f(x)", "exception": "E", "frames": []},
        assertion_bound=["tests/test_p.py:3"],
        strategies=None,
        examples=None,
    )
    assert protocol.result_problem(failing) is None


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"seed": ...}, "has no 'seed'"),
        ({"seed": "7"}, "'seed' is str, not int"),
        ({"seed": True}, "'seed' is bool, not int"),
        ({"cases": False}, "'cases' is bool, not int"),
        ({"hypothesis": 1}, "'hypothesis' is int, not bool"),
        ({"examples": 5.0}, "'examples' is float, not int or null"),
        ({"tampered": None}, "'tampered' is NoneType, not list"),
        ({"failure": "tests/test_p.py:3"}, "'failure' is str, not dict or null"),
    ],
)
def test_a_malformed_event_names_its_field(changes: dict[str, Any], words: str) -> None:
    """A missing field, a field of another type, and a bool where a count is meant are each named."""
    problem = protocol.result_problem(_event(**changes))
    assert problem is not None and words in problem


def _accepted(event: dict[str, Any]) -> run.WorkerResult:
    result = run.WorkerResult("w")
    run._accept(json.dumps(event).encode(), result, lambda _e: None)
    return result


def test_the_gate_takes_a_result_only_when_it_is_well_formed() -> None:
    """A well-formed result is an event and a typed result; a malformed one is a problem of the run, not an event."""
    good = _accepted(_event())
    assert good.problems == [] and [r["seed"] for r in good.results()] == [7]
    bad = _accepted(_event(seed="7"))
    assert bad.events == [] and bad.results() == []
    assert bad.problems == ["a result event's 'seed' is str, not int"]
