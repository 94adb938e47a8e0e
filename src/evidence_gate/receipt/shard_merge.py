"""`evidence-gate merge`: close seed ledgers over the receipts of `--shard K/N` runs.

Every shard must judge the same commits, configuration and list; together they must cover shards 1..N once each,
and every planned seed must have been attempted exactly once across them. The merged receipt re-decides.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from evidence_gate import decision
from evidence_gate.errors import GateError, InputInvalid
from evidence_gate.lanes.properties import patch_coverage, seed_ledger, steering
from evidence_gate.model import Violation
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import facts as run_facts
from evidence_gate.receipt.types import PatchCoverageJson, ReceiptJson, SeedLedgerJson
from evidence_gate.receipt.write import MAX_RECEIPT, finalise, sha256_of, validate
from evidence_gate.report.registry import violations_of
from evidence_gate.row_ids import SEED_LEDGER_OPEN
from evidence_gate.strict_parse import load_json


def load(path: Path) -> ReceiptJson:
    """One shard receipt, bounded, strictly parsed and schema-checked; a usage error naming the fix if not."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_RECEIPT + 1)  # bounded: a huge or endless file (a FIFO, /dev/zero) is refused
        if len(data) > MAX_RECEIPT:
            raise GateError(
                f"shard receipt {path} is over the {MAX_RECEIPT}-byte cap",
                fix="pass the receipt.json each --shard run wrote",
                usage=True,
            )
        value = load_json(data)
    except (OSError, InputInvalid) as exc:
        raise GateError(
            f"cannot read shard receipt {path}: {exc}", fix="pass the receipt.json of each --shard run", usage=True
        ) from exc
    if not isinstance(value, dict) or value.get("state") != "final":
        raise GateError(
            f"{path} is not a final receipt", fix="merge only receipts of completed --shard runs", usage=True
        )
    problems = validate(value)
    if problems:
        raise GateError(
            f"{path} breaks the receipt schema: {problems[0]}",
            fix="pass the receipt.json each --shard run wrote, unedited",
            usage=True,
        )
    return cast(ReceiptJson, value)  # schema-valid: the one place a shard receipt from a file becomes typed


# What every shard of one matrix must agree on, in the order `identity` gives it.
IDENTITY = ("baseline commit", "head commit", "configuration", "property list", "seed plan", "context")


def identity(receipt: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values named by IDENTITY, of one shard receipt."""
    props = receipt.get("properties", {})
    return (
        receipt.get("git", {}).get("baseline"),
        receipt.get("git", {}).get("head"),
        receipt.get("config", {}).get("blob"),
        props.get("list_sha256"),
        tuple(props.get("plan") or ()),
        (receipt.get("context") or {}).get("name"),
    )


def _merge_ledgers(parts: list[SeedLedgerJson], plan: list[int]) -> SeedLedgerJson:
    merged = copy.deepcopy(parts[0])
    merged["planned_seeds"] = [s for p in parts for s in p["planned_seeds"]]
    merged["attempted_seeds"] = [s for p in parts for s in p["attempted_seeds"]]
    merged["fresh_seeds"] = [s for p in parts for s in p.get("fresh_seeds", [])]
    failing_seeds = [s for p in parts for s in p.get("failing_seeds", [])]
    merged["failing_seeds"] = sorted(
        failing_seeds, key=lambda s: seed_ledger.failing_rank(s, plan, merged["fresh_seeds"])
    )
    merged["stopped_early"] = any(p["stopped_early"] for p in parts)
    merged["examples"] = {k: v for p in parts for k, v in p.get("examples", {}).items()}
    merged["runs"] = {k: v for p in parts for k, v in p.get("runs", {}).items()}
    merged["replays"] = [r for p in parts for r in p.get("replays", [])]
    failing = [p for p in parts if p.get("failing_seed") is not None]
    failing.sort(key=lambda p: plan.index(p["failing_seed"]) if p["failing_seed"] in plan else len(plan))
    source = failing[0] if failing else parts[0]
    # The failure is the first failing shard's, in plan order (each key spelled out, so mypy checks it).
    merged["failing_seed"] = source.get("failing_seed")
    merged["shrink_stable"] = source.get("shrink_stable")
    merged["reproduced"] = source.get("reproduced")
    merged["assertion_hash"] = source.get("assertion_hash")
    merged["falsifying"] = source.get("falsifying")
    merged["excused_by"] = source.get("excused_by")
    merged["excuse"] = source.get("excuse")
    merged["steering"] = steering.merge(p.get("steering") for p in parts)
    # The declared plan, in its order as a single run writes it: shards' slices that do not partition it show a gap
    # against the attempted seeds.
    merged["planned_seeds"] = list(plan)
    merged["status"] = seed_ledger.close(merged)
    return merged


def _shard_gaps(shards: list[list[int]], total: set[int]) -> str:
    """`1/2, 1/2 (missing 2/2)`: the shards given, as K/N, and what is missing or repeated."""
    given = sorted((k, n) for k, n in shards)
    text = ", ".join(f"{k}/{n}" for k, n in given)
    if len(total) != 1:
        return f"{text} (from matrices of different sizes)"
    n = next(iter(total))
    missing = [f"{k}/{n}" for k in range(1, n + 1) if k not in {k for k, _ in given}]
    return f"{text} (missing {', '.join(missing)})" if missing else f"{text} (one given twice)"


def merged_coverage(receipts: Sequence[Mapping[str, Any]]) -> PatchCoverageJson | None:
    """Patch coverage over every shard: each shard lists the same changed lines (from git); a line counts as
    executed when any shard's property workers ran it."""
    measured = [c for c in map(receipt_access.patch_coverage, receipts) if c is not None and c["measured"]]
    if not measured:
        return None
    first = measured[0]
    files = [patch_coverage.ChangedFile(f["path"], b"", tuple(f["lines"])) for f in first.get("files", [])]
    executed: dict[str, set[int]] = {}
    for cov in measured:
        for f in cov.get("files", []):
            executed.setdefault(f["path"], set()).update(f["executed"])
    return patch_coverage.section(files, executed, first.get("min_percent"))


def merge(receipts: list[ReceiptJson], names: list[str]) -> ReceiptJson:
    """The merged receipt of shard receipts (pure)."""
    shards: list[Any] = [r.get("mode", {}).get("shard") for r in receipts]
    if any(not (isinstance(s, list) and len(s) == 2) for s in shards):
        raise GateError("every receipt must come from a `check --shard K/N` run", fix="re-run with --shard", usage=True)
    total = {s[1] for s in shards}
    if len(total) != 1 or sorted(s[0] for s in shards) != list(range(1, next(iter(total)) + 1)):
        raise GateError(
            f"the receipts cover shards {_shard_gaps(shards, total)}, not 1..N exactly once",
            fix="pass one receipt per shard of the same matrix",
            usage=True,
        )
    if len({identity(r) for r in receipts}) != 1:
        raise GateError(
            "the shard receipts judge different commits, configurations or property lists",
            fix="merge only the shards of one workflow run",
            usage=True,
        )
    ordered = [r for _, r in sorted(zip([s[0] for s in shards], receipts, strict=True), key=lambda p: p[0])]
    out = copy.deepcopy(ordered[0])
    plan = list(out["properties"].get("plan") or [])
    by_property: dict[str, list[SeedLedgerJson]] = {}
    for receipt in ordered:
        for ledger in receipt_access.ledgers(receipt):
            by_property.setdefault(ledger["property_id"], []).append(ledger)
    ledgers = [_merge_ledgers(parts, plan) for parts in by_property.values()]
    out["properties"]["ledgers"] = ledgers
    violations: list[Violation] = []
    seen: set[tuple[Any, ...]] = set()
    for receipt in ordered:
        # A shard's rows that its ledgers show are derived again from the merged ledgers, as a publisher would.
        derived = {(v.row, v.path, v.line, v.message) for v in run_facts.derived_rows(receipt)}
        for v in violations_of(receipt):
            key = (v.row, v.path, v.line, v.message)
            # patch-not-covered is decided again over the union of every shard's lines (a shard records its own).
            if v.row not in {SEED_LEDGER_OPEN, patch_coverage.ROW} and key not in seen and key not in derived:
                seen.add(key)
                violations.append(v)
    violations += run_facts.derived_rows(out)
    coverage = merged_coverage(ordered)
    if coverage is not None:
        out["patch_coverage"] = coverage
        violations += patch_coverage.violations(coverage)
    facts: set[str] = set()
    if any(not r.get("mode", {}).get("scored", True) for r in ordered):
        facts.add(decision.FACT_HUMAN)
    first = ordered[0]
    if first.get("freeze", {}).get("removed") and not any(v.row.startswith("freeze-") for v in violations):
        facts.add(decision.FACT_FREEZE_SHRANK)
    out["properties"]["ledgers"] = ledgers
    out["properties"]["counts"] = seed_ledger.counts(ledgers)
    out["properties"]["shard"] = None
    out["properties"]["fresh_seeds"] = [s for r in ordered for s in r["properties"].get("fresh_seeds", [])]
    out["mode"]["shard"] = None
    out["merged_from"] = [
        {"receipt": n, "shard": r["mode"]["shard"], "sha256": sha256_of(r)}
        for n, r in zip(names, receipts, strict=True)
    ]
    finalise(out, violations, frozenset(facts))  # every shard receipt is final: `state` stays
    return out
