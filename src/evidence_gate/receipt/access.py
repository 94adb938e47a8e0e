"""The accessors that hand out a receipt's parts, typed by `receipt.types` (imported for type checking only).

Readers take receipts that may be partial (aborted) or read back from a file, so every accessor skips what is not an
object and returns an empty list, or None, where the receipt has nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from evidence_gate.receipt.types import (
        CountsJson,
        DecisionJson,
        GitJson,
        PatchCoverageJson,
        SeedLedgerJson,
        ViolationJson,
    )


def _is_object(value: object) -> bool:
    """Whether a JSON value is an object (a function, so the typed value is not narrowed to a plain dict)."""
    return isinstance(value, dict)


def _section(receipt: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = receipt.get(key)
    return value if isinstance(value, Mapping) else {}


def violations(receipt: Mapping[str, Any]) -> list[ViolationJson]:
    """The receipt's violations (entries that are not objects skipped)."""
    found = receipt.get("violations")
    out: list[ViolationJson] = [v for v in found if _is_object(v)] if isinstance(found, list) else []
    return out


def decision(receipt: Mapping[str, Any]) -> DecisionJson | None:
    """The receipt's decision, or None when it has none."""
    found: DecisionJson | None = receipt.get("decision")
    return found if _is_object(found) and found else None


def decision_row(receipt: Mapping[str, Any]) -> str | None:
    """The id of the row that named the verdict, or None."""
    found = decision(receipt)
    row = found.get("row") if found is not None else None
    return row if isinstance(row, str) else None


def ledgers(receipt: Mapping[str, Any]) -> list[SeedLedgerJson]:
    """The receipt's seed ledgers (entries that are not objects skipped)."""
    found = _section(receipt, "properties").get("ledgers")
    out: list[SeedLedgerJson] = [x for x in found if _is_object(x)] if isinstance(found, list) else []
    return out


def counts(receipt: Mapping[str, Any]) -> CountsJson | None:
    """The seed-ledger counts, or None when the receipt has none."""
    found: CountsJson | None = _section(receipt, "properties").get("counts")
    return found if _is_object(found) else None


def git(receipt: Mapping[str, Any]) -> GitJson:
    """The commits compared; each None when unknown."""
    found = _section(receipt, "git")
    return {"baseline": found.get("baseline"), "head": found.get("head"), "merge_base": found.get("merge_base")}


def patch_coverage(receipt: Mapping[str, Any]) -> PatchCoverageJson | None:
    """The receipt's patch coverage, or None when it has none (the property lane did not run)."""
    raw: Any = receipt.get("patch_coverage")
    found: PatchCoverageJson | None = raw if _is_object(raw) and "measured" in raw else None
    return found
