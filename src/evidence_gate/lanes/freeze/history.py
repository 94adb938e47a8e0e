"""The freeze ledger along a branch's history, as values: a point per commit, the counts of a receipt, the ledger a
pull request proposes. `evidence-gate history` collects them; the text and the picture render them."""

from __future__ import annotations

from dataclasses import dataclass

MAX_TIME = 253_402_214_399  # 9999-12-30: a commit dated past it (git takes any number) is drawn there


@dataclass(frozen=True)
class Point:
    """The ledger at one commit: `state` is measured, absent, invalid or unreadable (`detail` says why)."""

    commit: str
    when: int
    subject: str
    file: str
    state: str
    detail: str = ""
    entries: int | None = None
    size: int | None = None
    max_entries: int | None = None  # None: no limit
    max_bytes: int | None = None


@dataclass(frozen=True)
class PatchCounts:
    """`properties.counts` of one receipt: open seed ledgers, closed failures, budget passes."""

    name: str
    head: str
    day: str
    open: int
    closed_failures: int
    budget_passes: int


@dataclass(frozen=True)
class Proposal:
    """The ledger a pull request proposes: measured at its merge (or head) commit with the base branch's
    configuration, dated by its head commit; the entry ids it adds and removes (None when a side does not parse)."""

    point: Point
    head: str
    added: tuple[str, ...] | None = None
    removed: tuple[str, ...] | None = None


@dataclass(frozen=True)
class History:
    """Everything the text and the picture show."""

    branch: str
    tip: str
    points: tuple[Point, ...]
    patches: tuple[PatchCounts, ...] = ()
    skipped: tuple[str, ...] = ()  # receipts not drawn, each with why
    shallow: bool = False
    proposal: Proposal | None = None


def _ids(ids: tuple[str, ...]) -> str:
    """`a, b and 3 more`: at most three entry ids, each cut to 40 characters."""
    shown = [i if len(i) <= 40 else i[:39] + "…" for i in ids[:3]]
    return ", ".join(shown) + (f" and {len(ids) - 3} more" if len(ids) > 3 else "")


def change_words(proposal: Proposal) -> str:
    """What the pull request adds to and removes from the ledger (`+1 (flaky-x), ` then the removals), or ''."""
    if proposal.added is None or proposal.removed is None:
        return ""
    parts = []
    for sign, ids in (("+", proposal.added), ("−", proposal.removed)):
        parts.append(f"{sign}{len(ids)}" + (f" ({_ids(ids)})" if ids else ""))
    return ", ".join(parts)
