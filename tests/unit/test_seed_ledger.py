"""Seed-ledger closing statuses, one case each, in SPEC's order."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import pytest

from evidence_gate.lanes.properties import seed_ledger


def _schema_statuses() -> list[str]:
    """The closing statuses the receipt schema allows, in its (SPEC's) order."""
    schema = json.loads(resources.files("evidence_gate").joinpath("data/receipt.schema.json").read_text("utf-8"))
    found: list[list[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("status"), dict) and "freeze_eligible" in node["status"].get("enum", []):
                found.append(node["status"]["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert len(found) == 1, found
    return found[0]


def _closed_failure(**changes: Any) -> dict[str, Any]:
    base = seed_ledger.new(
        "p" * 40, "properties/test_a.py::test_a", [1, 2, 3, 4], "human_reviewed", "sha256:" + "a" * 64
    )
    base.update(attempted_seeds=[1, 2, 3, 4], failing_seed=2, shrink_stable=True, reproduced=True)
    base.update(changes)
    return base


CASES = {
    "incomplete_fields": {"patch_id": ""},
    "empty_plan": {"planned_seeds": [], "attempted_seeds": []},
    "early_stop_incomplete": {"attempted_seeds": [1, 2], "stopped_early": True},
    "seed_gap": {"attempted_seeds": [1, 2, 4]},
    "not_replayable": {"replays": [{"kind": "shifted", "seed": 1, "differs": ["outcome passed, then failed"]}]},
    "budget_pass_no_freeze": {"failing_seed": None},
    "seed_mismatch": {"failing_seed": 9},
    "oracle_unreviewed": {"oracle_source": "model_draft"},
    "shrink_unstable": {"shrink_stable": False},
    "fixture_unbound": {"fixture_hash": None},
    "freeze_eligible": {},
}


@pytest.mark.parametrize("status", seed_ledger.REASONS)
def test_each_status_has_a_case(status: str) -> None:
    """Each closing status is reached by exactly the change that names it."""
    assert seed_ledger.close(_closed_failure(**CASES[status])) == status


def test_missing_field_is_incomplete() -> None:
    """A ledger without one of SPEC's fields never closes."""
    ledger = _closed_failure()
    del ledger["fixture_hash"]
    assert seed_ledger.close(ledger) == "incomplete_fields"


def test_early_stop_example() -> None:
    """Plan of four, failure at the second, a runner that stopped there: the ledger stays open."""
    ledger = _closed_failure(attempted_seeds=[1, 2], stopped_early=True)
    assert seed_ledger.close(ledger) == "early_stop_incomplete"
    assert seed_ledger.close(_closed_failure()) == "freeze_eligible"


def test_a_seed_attempted_twice_is_a_gap() -> None:
    """Every planned seed exactly once: a repeated seed does not stand in for a missing one."""
    assert seed_ledger.close(_closed_failure(attempted_seeds=[1, 2, 3, 3])) == "seed_gap"


def test_unreproduced_failure_is_a_mismatch() -> None:
    """A failing seed that does not fail again on replay is a flake, not a closed failure."""
    assert seed_ledger.close(_closed_failure(reproduced=False)) == "seed_mismatch"


def test_counts() -> None:
    """Open, closed failures and budget passes are counted from the statuses."""
    ledgers = [{"status": s} for s in ("seed_gap", "freeze_eligible", "shrink_unstable", "budget_pass_no_freeze")]
    assert seed_ledger.counts(ledgers) == {"open": 1, "closed_failures": 2, "budget_passes": 1}


def test_a_repository_without_fixtures_is_never_fixture_unbound() -> None:
    """A repository that has no fixture evidence at all cannot leave a ledger unbound from it."""
    ledger = _closed_failure(fixture_hash=None, fixtures=False)
    assert seed_ledger.close(ledger) == "freeze_eligible"
    assert seed_ledger.close(_closed_failure(fixture_hash=None)) == "fixture_unbound"


def test_status_reason_says_what_blocked_the_ledger() -> None:
    """Each status has words for a maintainer; an open ledger adds what blocked it, an exhausted space is named."""
    assert list(seed_ledger.REASONS) == _schema_statuses()
    gap = _closed_failure(attempted_seeds=[1, 2, 4])
    gap["status"] = seed_ledger.close(gap)
    assert seed_ledger.reason(gap, "no result for seed(s) 3 (timed out after 60s)") == (
        "a planned seed was not attempted exactly once: no result for seed(s) 3 (timed out after 60s)"
    )
    passed = _closed_failure(failing_seed=None, exhausted_seeds=[1, 2])
    passed["status"] = seed_ledger.close(passed)
    assert "Hypothesis ran every distinct example" in seed_ledger.reason(passed)
