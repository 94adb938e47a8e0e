"""What changed since the base branch's last receipt: findings that are new, findings that were fixed, and the
freeze ledger's entry count before → after.

The previous receipt is untrusted input (an artifact anyone with a workflow could upload, or a file on the command
line): it is read under a size cap as strict JSON, checked against the receipt schema and must be final; anything
else is a `Delta` that says "no delta" and why, never a failed gate. A finding is the same finding when its row, its
path and its message are (a failing property: its row and its test), wherever its line moved.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evidence_gate import visible
from evidence_gate.errors import InputInvalid
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt.write import MAX_RECEIPT, validate
from evidence_gate.report import properties as property_report
from evidence_gate.strict_parse import load_json

MAX_LISTED = 10  # new or fixed findings named one by one; the rest are counted


@dataclass(frozen=True)
class Finding:
    """One finding as the delta compares it."""

    row: str
    path: str
    message: str


@dataclass(frozen=True)
class Delta:
    """The change against `against` (words naming the previous receipt), or `why_not` when there is none to show."""

    against: str
    new: tuple[Finding, ...] = ()
    fixed: tuple[Finding, ...] = ()
    entries: tuple[int | None, int | None] = (None, None)
    why_not: str = ""


def parse(data: bytes) -> dict[str, Any] | str:
    """A previous receipt from its bytes, or why it cannot be compared against."""

    if len(data) > MAX_RECEIPT:
        return f"the receipt is over the {MAX_RECEIPT}-byte cap"
    try:
        value = load_json(data)
    except InputInvalid as exc:
        return f"the receipt is not strict JSON ({exc.message})"
    if not isinstance(value, dict):
        return "the receipt is not a JSON object"
    problems = validate(value)
    if problems:
        return f"the receipt breaks the receipt schema: {problems[0][:200]}"
    if value.get("state") != "final":
        return "the previous run did not finish: its receipt is aborted"
    return value


def from_file(path: Path, current: Mapping[str, Any]) -> Delta:
    """`check --previous RECEIPT`: the delta against that file, or why there is none."""
    from evidence_gate.commands.history import bounded_read  # noqa: PLC0415 - the one bounded, FIFO-safe file read

    against = f"--previous {visible.line(str(path))[:200]}"
    try:
        found = parse(bounded_read(path))
    except (OSError, ValueError) as exc:
        found = f"cannot read it ({str(exc)[:200]})"
    if isinstance(found, str):
        return Delta(against, why_not=found)
    return compare(found, current, against)


def _key(v: Any) -> Finding:
    row, path, message = str(v.get("row", "")), str(v.get("path") or ""), str(v.get("message", ""))
    if row in property_report.FAILED_ROWS:
        node = message.split(" ", 1)[0]  # the test; its seeds and examples change from run to run
        message = node.removeprefix(f"{path}::") if path else node
    return Finding(row, path, message)


def _entries(receipt: Mapping[str, Any]) -> int | None:
    value = (receipt.get("freeze") or {}).get("entries")
    return value if type(value) is int and value >= 0 else None


def compare(previous: Mapping[str, Any], current: Mapping[str, Any], against: str) -> Delta:
    """New and fixed findings (as multisets: a second copy of a finding is new too) and the entry counts."""
    before = Counter(_key(v) for v in receipt_access.violations(previous))
    now = Counter(_key(v) for v in receipt_access.violations(current))
    head = str((previous.get("git") or {}).get("head") or "")[:12]
    return Delta(
        against + (f" ({head})" if head and head not in against else ""),
        tuple((now - before).elements()),
        tuple((before - now).elements()),
        (_entries(previous), _entries(current)),
    )


def counts(delta: Delta) -> str:
    """`1 new finding, 2 fixed; freeze ledger 2 → 3 entries`, or `no delta (why)`."""
    if delta.why_not:
        return f"no delta ({delta.why_not})"
    n = len(delta.new)
    out = f"{n} new finding{'s' if n != 1 else ''}, {len(delta.fixed)} fixed"
    before, after = delta.entries
    if before is not None or after is not None:
        shown = [str(x) if x is not None else "?" for x in delta.entries]
        out += f"; freeze ledger {shown[0]} → {shown[1]} entr{'y' if after == 1 else 'ies'}"
    return out


def said(finding: Finding, width: int = 300) -> str:
    """One finding on one line, printable: `row path: message`."""
    text = f"{finding.row} {finding.path + ': ' if finding.path else ''}{finding.message}"
    shown = visible.line(text)
    return shown if len(shown) <= width else shown[: width - 1] + "…"
