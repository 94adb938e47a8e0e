"""Freeze-ledger lane (rows 6-14). STUB: being written."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from evidence_gate.config import Config
from evidence_gate.model import FreezeEntry, LaneResult, Violation


@dataclass(frozen=True)
class LedgerResult:
    """The static verdict on the ledger plus the entries the dynamic lane must replay."""

    lane: LaneResult
    removed: tuple[FreezeEntry, ...] = ()
    expired: tuple[FreezeEntry, ...] = ()
    active: tuple[FreezeEntry, ...] = ()


def check(base: bytes | None, head: bytes | None, config: Config, today: date) -> LedgerResult:
    """Compare the baseline ledger with the patched one."""
    return LedgerResult(LaneResult(receipt={"file": config.freeze.file, "added": [], "removed": [],
                                            "file_sha256": None}))


def unverified(result: LedgerResult, reason: str) -> tuple[Violation, ...]:
    """Violations for removals and expired entries that no run could verify."""
    return tuple(
        [Violation("freeze-removal-unverified", f"entry {e.id!r} was removed but not replayed ({reason})",
                   None, e.line) for e in result.removed]
        + [Violation("freeze-expired", f"entry {e.id!r} expired on {e.expires} and its test was not run ({reason})",
                     None, e.line) for e in result.expired])
