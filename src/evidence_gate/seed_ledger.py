"""Seed ledgers: one per property, what ran on which seed, and the closing status in SPEC's order."""

from __future__ import annotations

from collections import Counter
from typing import Any

# SPEC's closing statuses, checked in this order.
STATUSES = ("incomplete_fields", "empty_plan", "early_stop_incomplete", "seed_gap", "budget_pass_no_freeze",
            "seed_mismatch", "oracle_unreviewed", "shrink_unstable", "fixture_unbound", "freeze_eligible")
# A ledger in one of these did not close: the run does not show what the plan promised.
OPEN = frozenset({"incomplete_fields", "empty_plan", "early_stop_incomplete", "seed_gap", "seed_mismatch"})
REQUIRED = ("patch_id", "property_id", "planned_seeds", "attempted_seeds", "failing_seed", "stopped_early",
            "shrink_stable", "oracle_source", "fixture_hash")


def _is_seed_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in value)


def close(ledger: dict[str, Any]) -> str:
    """The closing status of one ledger (the first that applies in SPEC's order)."""
    if (any(key not in ledger for key in REQUIRED) or not ledger["patch_id"] or not ledger["property_id"]
            or not _is_seed_list(ledger["planned_seeds"]) or not _is_seed_list(ledger["attempted_seeds"])
            or not isinstance(ledger["stopped_early"], bool) or not ledger["oracle_source"]):
        return "incomplete_fields"
    planned: list[int] = ledger["planned_seeds"]
    attempted: list[int] = ledger["attempted_seeds"]
    if not planned:
        return "empty_plan"
    counts = Counter(attempted)
    missing = [s for s in planned if counts[s] == 0]
    if ledger["stopped_early"] and missing:
        return "early_stop_incomplete"
    if missing or any(counts[s] > 1 for s in planned):
        return "seed_gap"
    failing = ledger["failing_seed"]
    if failing is None:
        return "budget_pass_no_freeze"
    if failing not in counts or ledger.get("reproduced") is False:
        return "seed_mismatch"
    if ledger["oracle_source"] != "human_reviewed":
        return "oracle_unreviewed"
    if ledger["shrink_stable"] is not True:
        return "shrink_unstable"
    if not ledger["fixture_hash"]:
        return "fixture_unbound"
    return "freeze_eligible"


def counts(ledgers: list[dict[str, Any]]) -> dict[str, int]:
    """The receipt's three counts: open ledgers, closed failures, budget passes."""
    statuses = [ledger["status"] for ledger in ledgers]
    return {
        "open": sum(s in OPEN for s in statuses),
        "closed_failures": sum(s not in OPEN and s != "budget_pass_no_freeze" for s in statuses),
        "budget_passes": sum(s == "budget_pass_no_freeze" for s in statuses),
    }


def new(patch_id: str, property_id: str, planned: list[int], oracle: str, fixture_hash: str | None) -> dict[str, Any]:
    """An empty ledger for a property about to run."""
    return {"patch_id": patch_id, "property_id": property_id, "planned_seeds": list(planned), "attempted_seeds": [],
            "fresh_seeds": [], "failing_seed": None, "failing_seeds": [], "stopped_early": False,
            "shrink_stable": None, "reproduced": None, "oracle_source": oracle, "fixture_hash": fixture_hash,
            "examples": {}, "status": "incomplete_fields"}
