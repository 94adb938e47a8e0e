"""The decision table: the contract's rows in the contract's order, and `decide` picks exactly one first matching row."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import decision
from evidence_gate.action import publish as action_publish
from evidence_gate.config import schema_errors
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS, EXIT_PRECONDITION
from evidence_gate.model import Violation
from support.shared_data import SHARED

CONTRACT = Path(__file__).parents[1] / "data" / "spec-decision-table.md"
SPEC = SHARED / "SPEC.md"
ROW = re.compile(r"^\| (\d+) \| `([a-z-]+)` \| .* \| (fail \(exit 11\)|fail[^|]*|pass[^|]*) \|$", re.MULTILINE)
PRECONDITIONS = {"config-invalid", "history-missing", "event-mismatch"}
FAIL_IDS = [r.id for r in decision.table() if r.gate == "fail"]


def _table_lines(text: str) -> list[str]:
    """The decision table's lines in a Markdown text: from its `| # | row id` header to the first non-table line."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| # | row id |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return lines[start:end]


def _contract_rows() -> list[tuple[int, str, str]]:
    """(number, row id, gate) per row of the contract's table, as vendored in tests/data."""
    return [(int(n), i, g) for n, i, g in ROW.findall("\n".join(_table_lines(CONTRACT.read_text("utf-8"))))]


def test_table_is_the_contracts() -> None:
    """The packaged table has the contract's row ids in the contract's order, numbered from 1 with no gap, and each
    row's gate (and precondition exit 11) as the contract states; every row of the contract's table is parsed."""
    table = decision.table()
    contract = _contract_rows()
    assert len(contract) == len(_table_lines(CONTRACT.read_text("utf-8"))) - 2, "a contract row did not parse"
    assert [r.id for r in table] == [i for _, i, _ in contract]
    assert [r.number for r in table] == [n for n, _, _ in contract] == list(range(1, len(table) + 1))
    for r, (_, _, gate) in zip(table, contract, strict=True):
        assert r.gate == gate.split(" ", 1)[0].rstrip(","), (r.id, gate)
        assert (r.id in PRECONDITIONS) == (gate == "fail (exit 11)"), (r.id, gate)


def test_vendored_contract_matches_spec_file() -> None:
    """tests/data's copy of the decision table is SPEC.md's, line for line, wherever SPEC.md is at hand (../shared
    beside the checkout or $EVIDENCE_GATE_SHARED); GitHub's CI rebuilds only the API data there, so it has no SPEC."""
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} is absent (the shared folder holds no contract); tests/data's copy was checked instead")
    assert _table_lines(SPEC.read_text("utf-8")) == _table_lines(CONTRACT.read_text("utf-8")), (
        f"SPEC.md's decision table changed: copy it into {CONTRACT.name}, then make the package data follow"
    )


def test_exit_codes_by_row() -> None:
    """Preconditions exit 11, other fail rows 10, pass rows 0."""
    for r in decision.table():
        expected = EXIT_PRECONDITION if r.id in PRECONDITIONS else EXIT_FAIL if r.gate == "fail" else EXIT_PASS
        assert r.exit_code == expected, r.id


def test_unknown_row_is_an_error() -> None:
    """A violation naming a row id that is not in the table is a programming error, never a pass."""
    with pytest.raises(KeyError):
        decision.decide([Violation("freeze-grew", "x")])


@given(
    fails=st.sets(st.sampled_from(FAIL_IDS)),
    human=st.booleans(),
    shrank=st.booleans(),
)
def test_every_combination_has_one_first_row(fails: set[str], human: bool, shrank: bool) -> None:
    """Any mix of violations and facts lands on exactly one row: the first matched in table order."""
    facts = frozenset({decision.FACT_HUMAN} if human else set()) | ({decision.FACT_FREEZE_SHRANK} if shrank else set())
    violations = [Violation(r, f"{r} happened") for r in sorted(fails)]
    result = decision.decide(violations, facts)
    order = decision.row_ids()
    assert result.matched, "no row matched"
    assert list(result.matched) == sorted(result.matched, key=order.index)
    assert len(set(result.matched)) == len(result.matched)
    assert result.row.id == result.matched[0]
    assert set(fails) <= set(result.matched)
    assert result.ok == (result.row.gate == "pass")
    assert result.row.exit_code == decision.row(result.row.id).exit_code
    if fails:
        first_fail = min(fails, key=order.index)
        if human and order.index("human-patch") < order.index(first_fail):
            assert result.row.id == "human-patch"
        else:
            assert result.row.id == first_fail
            assert not result.ok
        assert "pass" not in result.matched
        assert "pass-freeze-shrank" not in result.matched
    elif human:
        assert result.row.id == "human-patch"
    elif shrank:
        assert result.row.id == "pass-freeze-shrank"
        assert result.matched == ("pass-freeze-shrank", "pass")
    else:
        assert result.matched == ("pass",)


@given(fails=st.sets(st.sampled_from(sorted(PRECONDITIONS)), min_size=1), human=st.booleans())
def test_preconditions_beat_human(fails: set[str], human: bool) -> None:
    """A precondition wins over a human author: the gate could not evaluate, exit 11."""
    facts = frozenset({decision.FACT_HUMAN}) if human else frozenset()
    result = decision.decide([Violation(r, "x") for r in fails], facts)
    assert result.row.id in PRECONDITIONS
    assert result.row.exit_code == EXIT_PRECONDITION
    assert not result.ok


def test_decision_json_shape() -> None:
    """The receipt's decision object names the row, gate, title and every matched row."""
    result = decision.decide([Violation("freeze-id-added", "new"), Violation("run-integrity", "skipped")])
    out = result.to_json()
    assert out["row"] == "freeze-id-added"
    assert out["gate"] == "fail"
    assert out["matched"] == ["freeze-id-added", "run-integrity"]
    assert out["title"]


def _raw_table() -> dict[str, Any]:
    raw = json.loads(resources.files("evidence_gate").joinpath("data/decision_table.json").read_text("utf-8"))
    assert isinstance(raw, dict)
    return raw


def test_table_follows_its_schema() -> None:
    """The packaged table validates against data/decision_table.schema.json; a row without its lane does not."""
    raw = _raw_table()
    assert schema_errors(raw, "decision_table.schema.json") == []
    broken = copy.deepcopy(raw)
    del broken["rows"][17]["decided_by"]
    assert schema_errors(broken, "decision_table.schema.json") == ["rows.17: 'decided_by' is a required property"]


def test_lanes_and_stops_are_the_contracts() -> None:
    """The contract's facts as columns: rows 1-6 stop the tests (preconditions, a human author, locked evidence,
    harness probes: SPEC's "before tests"), and rows 13-24 are the sealed run's (replays, digests, properties)."""
    numbers = {r.id: r.number for r in decision.table()}
    assert sorted(numbers[i] for i in decision.stops_tests()) == [1, 2, 3, 4, 5, 6]
    assert sorted(numbers[i] for i in decision.decided_by(*decision.SEALED_LANES)) == list(range(13, 25))
    assert decision.decided_by("properties") >= {"property-steered", "property-not-replayable", "patch-not-covered"}
    with pytest.raises(KeyError):
        decision.decided_by("propertys")


def test_a_new_property_row_reaches_a_forks_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row added to the table in the properties lane is taken from a fork's receipt by the publisher with no other
    edit: the set of rows it takes is a query of the table, not a copy (a copy would drop the new row silently)."""
    new = decision.Row(99, "property-new-kind", "fail", 10, "New", "a new property finding", True, "properties", False)
    rows = (*decision.table(), new)
    monkeypatch.setattr(decision, "table", lambda: rows)
    ours = {"mode": {"scored": True, "run": False}, "freeze": {"removed": []}, "fixtures": {}, "violations": []}
    theirs = {
        "mode": {"run": True},
        "properties": {"ledgers": []},
        "fixtures": {"digests": []},
        "violations": [{"row": "property-new-kind", "path": None, "line": None, "message": "found"}],
    }
    out = action_publish.compose(ours, theirs, [])
    assert out["decision"]["row"] == "property-new-kind"
    assert out["ok"] is False
