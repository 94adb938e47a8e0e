"""The worker protocol has one source: event names, the event key, the line signature and run kinds come from
sealed/protocol.py on both sides of the pipe, never from string literals that could drift apart."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import evidence_gate
from evidence_gate.sealed.worker import protocol

SRC = Path(evidence_gate.__file__).parent
KEYS = {protocol.EV}
KINDS = {k.value for k in protocol.Kind}


def drift(source: str) -> list[str]:
    """Protocol strings written as literals: the event key, an event compared with a literal, a literal
    set of run kinds, a literal shrink prefix, an emitted event whose name is not an `Event` member."""
    found = []
    for node in ast.walk(ast.parse(source)):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Constant) and node.value in KEYS:
            found.append(f"{line}: the key {node.value!r} as a literal")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any("EV" in {n.id for n in ast.walk(s) if isinstance(n, ast.Name)} for s in sides) and any(
                isinstance(s, ast.Constant) for s in sides
            ):
                found.append(f"{line}: an event compared with a literal: {ast.unparse(node)}")
        elif isinstance(node, ast.Set | ast.Tuple | ast.List) and node.elts:
            if all(isinstance(e, ast.Constant) and e.value in KINDS for e in node.elts):
                found.append(f"{line}: run kinds as literals: {ast.unparse(node)}")
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("startswith"):
            if any(isinstance(a, ast.Constant) and a.value == protocol.SHRINK for a in node.args):
                found.append(f"{line}: the shrink prefix as a literal")
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Name) and key.id == "EV" and not _is_event(value):
                    found.append(f"{line}: an event emitted under a name that is not an Event: {ast.unparse(value)}")
    return found


def _is_event(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and ast.unparse(node.value).endswith("Event")
        and node.attr in protocol.Event.__members__
    )


def test_no_module_of_the_gate_spells_the_protocol_itself() -> None:
    """Every module of the gate (both sides of the pipe) takes the protocol's strings from protocol.py."""
    problems = [
        f"{path.relative_to(SRC)}:{p}"
        for path in sorted(SRC.rglob("*.py"))
        if path.name != "protocol.py" and "data" not in path.relative_to(SRC).parts
        for p in drift(path.read_text(encoding="utf-8"))
    ]
    assert problems == []


@pytest.mark.parametrize(
    "source",
    [
        'emit({"ev": "start", "seed": 1})\n',
        'events = [e for e in w.events if e.get(EV) == "result"]\n',
        'if kind in {"plan", "fresh"}:\n    pass\n',
        'reruns = [e for e in r if str(e.get("kind")).startswith("shrink")]\n',
        'emit({EV: "finished"})\n',
        "emit({EV: Event.FINISH})\n",
        'kind = event.get("ev")\n',
    ],
)
def test_the_drift_check_catches_each_literal(source: str) -> None:
    """Each way of spelling the protocol by hand is found (so the check above can fail)."""
    assert drift(source) != []


def test_the_protocols_names_are_distinct_and_kinds_do_not_look_like_shrinks() -> None:
    """Event names and run kinds are unique; no kind of its own is mistaken for a shrink re-run."""
    assert len({e.value for e in protocol.Event}) == len(protocol.Event)
    assert len(KINDS) == len(protocol.Kind)
    assert not [k for k in KINDS if protocol.is_shrink(k)]
    assert protocol.is_shrink(protocol.shrink_kind(1)) and protocol.is_shrink(protocol.shrink_kind(12))
    assert not protocol.is_shrink("shrink") and not protocol.is_shrink("shrinkage") and not protocol.is_shrink(None)
    assert set(protocol.PLAN_KINDS) <= set(protocol.Kind)
