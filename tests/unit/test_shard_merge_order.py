"""A merge of shard receipts writes each seed ledger in the order a single run writes it, so `verify` agrees."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, cast

from evidence_gate.commands import verify
from evidence_gate.receipt.shard_merge import merge
from evidence_gate.receipt.types import ReceiptJson

CASE = Path(__file__).resolve().parents[1] / "report_cases" / "property-failed" / "receipt.json"
PLAN = [1101, 1102, 1103, 1104]
NODE = "properties/test_allocate_properties.py::test_sum_is_preserved"


def _receipt(shard: list[int] | None, planned: list[int], fresh: list[int]) -> dict[str, Any]:
    """The report case's failing receipt, run on `planned` and `fresh`, every one of which fails."""
    receipt: dict[str, Any] = copy.deepcopy(json.loads(CASE.read_text("utf-8")))
    receipt["mode"]["shard"] = receipt["properties"]["shard"] = shard
    receipt["properties"]["plan"] = PLAN
    receipt["properties"]["fresh_seeds"] = fresh
    for ledger in receipt["properties"]["ledgers"]:
        failed = ledger["property_id"] == NODE
        ledger["planned_seeds"] = planned
        ledger["attempted_seeds"] = [*planned, *fresh]
        ledger["fresh_seeds"] = fresh
        ledger["failing_seeds"] = [*planned, *fresh] if failed else []
        ledger["examples"] = {str(s): 50 for s in [*planned, *fresh]}
    return receipt


def test_merged_failing_seeds_are_in_plan_then_draw_order() -> None:
    """Shards of interleaved seeds merge to the plan's order, then the fresh seeds in draw order."""
    shards = [_receipt([1, 2], [1101, 1103], [7]), _receipt([2, 2], [1102, 1104], [9])]
    merged = merge(cast(list[ReceiptJson], shards), ["1.json", "2.json"])
    ledger = next(x for x in merged["properties"]["ledgers"] if x["property_id"] == NODE)
    assert ledger["failing_seeds"] == [1101, 1102, 1103, 1104, 7, 9]
    assert ledger["planned_seeds"] == PLAN


def test_a_merged_receipt_verifies_against_the_single_run() -> None:
    """`verify`'s comparison finds no seed-order difference between the merge and the unsharded run's receipt."""
    shards = [_receipt([2, 2], [1102, 1104], [9]), _receipt([1, 2], [1101, 1103], [7])]
    merged = merge(cast(list[ReceiptJson], shards), ["2.json", "1.json"])
    single = _receipt(None, PLAN, [7, 9])
    assert [d for d in verify.differences(cast(dict[str, Any], merged), single) if "_seeds" in d] == []
