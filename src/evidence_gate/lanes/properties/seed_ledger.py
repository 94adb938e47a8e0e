"""Seed ledgers: one per property, what ran on which seed, and the closing status in SPEC's order."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from evidence_gate.receipt.types import CountsJson

# A ledger in one of these did not close: the run does not show what the plan promised.
OPEN = frozenset({"incomplete_fields", "empty_plan", "early_stop_incomplete", "seed_gap", "seed_mismatch"})
REQUIRED = (
    "patch_id",
    "property_id",
    "planned_seeds",
    "attempted_seeds",
    "failing_seed",
    "stopped_early",
    "shrink_stable",
    "oracle_source",
    "fixture_hash",
)


def _is_seed_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in value)


def close(ledger: Mapping[str, Any]) -> str:
    """The closing status of one ledger (the first that applies in SPEC's order)."""
    if (
        any(key not in ledger for key in REQUIRED)
        or not ledger["patch_id"]
        or not ledger["property_id"]
        or not _is_seed_list(ledger["planned_seeds"])
        or not _is_seed_list(ledger["attempted_seeds"])
        or not isinstance(ledger["stopped_early"], bool)
        or not ledger["oracle_source"]
    ):
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
    replays = ledger.get("replays")
    if isinstance(replays, list) and any(isinstance(r, Mapping) and r.get("differs") for r in replays):
        return "not_replayable"
    failing = ledger["failing_seed"]
    if failing is None:
        return "budget_pass_no_freeze"
    if failing not in counts or ledger.get("reproduced") is False:
        return "seed_mismatch"
    if ledger["oracle_source"] != "human_reviewed":
        return "oracle_unreviewed"
    if ledger["shrink_stable"] is not True:
        return "shrink_unstable"
    if not ledger["fixture_hash"] and ledger.get("fixtures", True):
        # Only a repository that has fixture evidence can leave a ledger unbound from it.
        return "fixture_unbound"
    return "freeze_eligible"


def failing_rank(seed: int, plan: Sequence[int], fresh: Sequence[int], *, drawn: bool = False) -> tuple[int, int]:
    """Where a failing seed goes in `failing_seeds`: the plan's in plan order, then the fresh (`drawn`) in draw order.

    One order for a single run and for a merge of shards, so the two receipts agree byte for byte.
    """
    if not drawn and seed in plan:
        return (0, plan.index(seed))
    return (1, fresh.index(seed) if seed in fresh else len(fresh))


def counts(ledgers: Sequence[Mapping[str, Any]]) -> CountsJson:
    """The receipt's three counts: open ledgers, closed failures, budget passes."""
    statuses = [ledger["status"] for ledger in ledgers]
    return {
        "open": sum(s in OPEN for s in statuses),
        "closed_failures": sum(s not in OPEN and s != "budget_pass_no_freeze" for s in statuses),
        "budget_passes": sum(s == "budget_pass_no_freeze" for s in statuses),
    }


def new(
    patch_id: str, property_id: str, planned: list[int], oracle: str, fixture_hash: str | None, fixtures: bool = True
) -> dict[str, Any]:
    """An empty ledger for a property about to run (`fixtures`: whether the repository has fixture evidence)."""
    return {
        "patch_id": patch_id,
        "property_id": property_id,
        "planned_seeds": list(planned),
        "attempted_seeds": [],
        "fresh_seeds": [],
        "failing_seed": None,
        "failing_seeds": [],
        "stopped_early": False,
        "shrink_stable": None,
        "reproduced": None,
        "oracle_source": oracle,
        "fixture_hash": fixture_hash,
        "fixtures": fixtures,
        "examples": {},
        "stopped_because": {},
        "exhausted_seeds": [],
        "runs": {},
        "replays": [],
        "failure": None,
        "status": "incomplete_fields",
    }


# What each closing status means, in a maintainer's words; in SPEC's order, the order `close` checks them.
REASONS = {
    "incomplete_fields": "the ledger is missing fields, so the run cannot be trusted",
    "empty_plan": "no seed was planned, so nothing was measured",
    "early_stop_incomplete": "the run stopped before every planned seed was attempted",
    "seed_gap": "a planned seed was not attempted exactly once",
    "not_replayable": "a seed run again (a failing seed in a fresh worker, a sample seed under a shifted clock and "
    "another hash seed) did not give the same outcome and examples, so the seed does not decide the run",
    "budget_pass_no_freeze": "the property held on every seed; there is nothing to freeze",
    "seed_mismatch": "the failing seed is not among the attempts, or it did not fail again when re-run (a flake)",
    "oracle_unreviewed": "the property failed, and its oracle is a model draft: a human must review it first",
    "shrink_unstable": "the property failed, but two shrink passes gave different minimal examples",
    "fixture_unbound": "the property failed, and the ledger is not bound to the repository's fixture evidence",
    "freeze_eligible": "the property failed reproducibly with a stable minimal example; a human may discuss a freeze",
}


def reason(ledger: Mapping[str, Any], blocked_by: str = "") -> str:
    """The ledger's status in words, plus what blocked the run when something did (a worker's problem)."""
    text = REASONS.get(str(ledger.get("status")), str(ledger.get("status")))
    if ledger.get("status") == "budget_pass_no_freeze" and ledger.get("exhausted_seeds"):
        text += (
            f" (on seed(s) {', '.join(map(str, ledger['exhausted_seeds']))} Hypothesis ran every distinct "
            "example the strategies allow, fewer than the trials declared)"
        )
    return f"{text}: {blocked_by}" if blocked_by and ledger.get("status") in OPEN else text
