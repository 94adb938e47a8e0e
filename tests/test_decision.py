"""The decision table: SPEC's 23 rows in SPEC's order, and `decide` picks exactly one first matching row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import decision
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS, EXIT_PRECONDITION
from evidence_gate.model import Violation

SPEC = Path(__file__).resolve().parents[2] / "shared" / "SPEC.md"
SPEC_IDS = (
    "config-invalid",
    "history-missing",
    "event-mismatch",
    "human-patch",
    "evidence-path-edited",
    "harness-probed",
    "freeze-ledger-invalid",
    "freeze-id-added",
    "freeze-expiry-extended",
    "freeze-budget-raised",
    "freeze-entry-rewritten",
    "freeze-over-budget",
    "freeze-expired",
    "freeze-removed-still-failing",
    "freeze-removal-unverified",
    "fixture-digest-mismatch",
    "run-integrity",
    "seed-ledger-open",
    "property-tautology",
    "property-failed",
    "property-failed-fresh-seed",
    "pass-freeze-shrank",
    "pass",
)
PRECONDITIONS = {"config-invalid", "history-missing", "event-mismatch"}
FAIL_IDS = [r.id for r in decision.table() if r.gate == "fail"]


def test_table_is_spec_order_and_count() -> None:
    """The packaged table has exactly SPEC's 23 row ids, numbered 1..23, in SPEC's order."""
    table = decision.table()
    assert tuple(r.id for r in table) == SPEC_IDS
    assert [r.number for r in table] == list(range(1, 24))


def test_table_matches_spec_file() -> None:
    """The row ids listed in ../shared/SPEC.md's decision table are the packaged ones, in order."""
    if not SPEC.is_file():
        pytest.skip("../shared/SPEC.md is not beside this checkout")
    ids = re.findall(r"^\| (\d+) \| `([a-z-]+)` \|", SPEC.read_text("utf-8"), re.MULTILINE)
    assert tuple(i for _, i in ids) == SPEC_IDS
    assert [int(n) for n, _ in ids] == list(range(1, 24))


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
