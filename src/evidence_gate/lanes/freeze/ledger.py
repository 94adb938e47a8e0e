"""Freeze-ledger lane (the `freeze-*` rows): the patched ledger may only shrink.

Pure: takes the baseline's and the head's ledger bytes, the baseline configuration and the date, and returns
violations plus the entries the dynamic lane must replay (removed) or re-run (expired). Decisions that fail closed:

- ids compare exactly (node ids are case-sensitive), so a case change is a removal plus an addition; two ids of one
  ledger that differ only by case are invalid. Every string is printable ASCII: no look-alikes, no invisible marks.
- The patch deleting the whole file is `freeze-ledger-invalid`, not "every entry removed": a missing ledger also
  drops the budget. A ledger absent on the baseline and present on the head adds every id it lists.
- Budgets compare by their effective value: a missing `max_entries`/`max_bytes` is unlimited and a missing
  `max_ttl_days` is 14, so deleting a budget key is raising it. Rules are checked against the stricter of the
  baseline's and the head's budget.
- Canonical size is the UTF-8 length of the entry list as compact JSON with sorted keys
  (`json.dumps(entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`), the same for both formats and
  blind to comments, quoting and key order.
- `added` after `today` is invalid (an entry's TTL counts from it).
"""

from __future__ import annotations

import json
from datetime import date, timedelta
from functools import cached_property, lru_cache
from itertools import islice

from evidence_gate.config import Config, is_agent, sorted_schema_errors
from evidence_gate.digest import optional_sha256_digest
from evidence_gate.errors import InputInvalid
from evidence_gate.lanes.freeze.formats import LedgerFormat, format_of
from evidence_gate.model import FreezeEntry, LaneResult, Violation
from evidence_gate.records import dataclass
from evidence_gate.records import field as record_field
from evidence_gate.row_ids import (
    FREEZE_BUDGET_RAISED,
    FREEZE_ENTRY_REWRITTEN,
    FREEZE_EXPIRED,
    FREEZE_EXPIRY_EXTENDED,
    FREEZE_ID_ADDED,
    FREEZE_LEDGER_INVALID,
    FREEZE_OVER_BUDGET,
    FREEZE_REMOVAL_UNVERIFIED,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

    from evidence_gate.receipt.types import FreezeJson
    from evidence_gate.strict_parse import NodePath

DEFAULT_TTL_DAYS = 14
MAX_PROBLEMS = 20  # rows one invalid ledger reports at most (the first in file order): a hostile file stays cheap
BUDGET_KEYS = ("max_entries", "max_bytes", "max_ttl_days")
REWRITABLE = ("test", "assertion_hash", "owner", "reason", "added")
_PRINTABLE = frozenset(chr(c) for c in range(0x20, 0x7F))


def _no_ledger() -> FreezeJson:
    """The `freeze` section of a lane that read no ledger (a literal: the TypedDict is imported for type checking only)."""
    return {"file": "", "added": [], "removed": [], "file_sha256": None}


@dataclass(frozen=True)
class FreezeLane(LaneResult):
    """The freeze lane's result: its section is the receipt's `freeze`."""

    receipt: FreezeJson = record_field(default_factory=_no_ledger)


@dataclass(frozen=True)
class LedgerResult:
    """The static verdict on the ledger plus the entries the dynamic lane must replay."""

    lane: FreezeLane
    removed: tuple[FreezeEntry, ...] = ()
    expired: tuple[FreezeEntry, ...] = ()
    active: tuple[FreezeEntry, ...] = ()
    file: str = "freeze.yaml"


@dataclass(frozen=True)
class Ledger:
    """One parsed, schema-valid ledger: entries in file order, the raw budget and where things are."""

    entries: tuple[FreezeEntry, ...]
    budget: dict[str, int]
    raw_entries: list[Any]
    lines: dict[NodePath, int]
    format: LedgerFormat

    def line(self, *path: str | int) -> int:
        """The line of `path`, or of its nearest ancestor present in the file."""
        return _nearest_line(self.lines, path)

    def by_id(self) -> dict[str, FreezeEntry]:
        """Entries keyed by id; the first wins where ids repeat (repeats are reported as invalid)."""
        out: dict[str, FreezeEntry] = {}
        for e in self.entries:
            out.setdefault(e.id, e)
        return out

    @cached_property
    def canonical_size(self) -> int:
        """Bytes of the entry list as compact sorted JSON (see the module docstring), computed once."""
        return len(
            json.dumps(self.raw_entries, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        )


class _Invalid(Exception):
    """Raised by parse() with every problem of one ledger; never leaves this module."""

    def __init__(self, violations: list[Violation]) -> None:
        super().__init__(violations)
        self.violations = violations


def effective_budget(budget: dict[str, int] | None) -> dict[str, float]:
    """Each budget key's effective limit: absent is unlimited, except `max_ttl_days` (14)."""
    given = budget or {}
    return {
        "max_entries": given.get("max_entries", float("inf")),
        "max_bytes": given.get("max_bytes", float("inf")),
        "max_ttl_days": given.get("max_ttl_days", DEFAULT_TTL_DAYS),
    }


def _nearest_line(lines: dict[NodePath, int], path: NodePath) -> int:
    """The line of `path`, or of its nearest ancestor present in `lines` (1 when none is)."""
    while path and path not in lines:
        path = path[:-1]
    return lines.get(path, 1)


def _strings(value: Any, path: NodePath = ()) -> Iterator[tuple[NodePath, Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _strings(v, (*path, i))


def _has_odd_value(raw: Any) -> bool:
    """Whether any value is a float or a string of more than printable ASCII (a walk without paths; `_strings`
    then finds where)."""
    stack = [raw]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if not (value.isascii() and value.isprintable()):  # printable ASCII is exactly " " to "~"
                return True
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
        elif isinstance(value, float):
            return True
    return False


def parse(data: bytes, file: str) -> Ledger:
    """Parse and schema-check one ledger; raises _Invalid with the problems found (at most MAX_PROBLEMS), each at
    its line."""
    fmt = format_of(file)
    try:
        raw, lines = fmt.load(data)
    except InputInvalid as exc:
        raise _Invalid(
            [
                Violation(
                    FREEZE_LEDGER_INVALID,
                    f"does not parse: {exc.message}; fix the syntax "
                    "(duplicate keys, YAML anchors, aliases and tags are never accepted)",
                    file,
                    exc.line or 1,
                )
            ]
        ) from exc

    def at(path: NodePath) -> int:
        return _nearest_line(lines, path)

    problems: list[Violation] = []
    odd = (
        (path, value)
        for path, value in (_strings(raw) if _has_odd_value(raw) else ())
        if isinstance(value, float) or (isinstance(value, str) and not set(value) <= _PRINTABLE)
    )
    for path, value in islice(odd, MAX_PROBLEMS):
        what = "a non-integer number" if isinstance(value, float) else "a control or non-ASCII character"
        problems.append(
            Violation(
                FREEZE_LEDGER_INVALID,
                f"{'.'.join(map(str, path))} holds {what}; ledger values are printable ASCII text and plain integers",
                file,
                at(path),
            )
        )
    if not problems:
        problems.extend(_schema_violations(raw, fmt.schema, file, at))
    if problems:
        raise _Invalid(problems)
    entries = tuple(fmt.entry(item, at((fmt.list_key, i))) for i, item in enumerate(raw[fmt.list_key]))
    return Ledger(entries, dict(raw.get("budget", {})), list(raw[fmt.list_key]), lines, fmt)


def _schema_violations(raw: Any, schema_name: str, file: str, at: Callable[[NodePath], int]) -> list[Violation]:
    out = []
    for err in sorted_schema_errors(raw, schema_name, limit=1000)[:MAX_PROBLEMS]:
        path = tuple(err.absolute_path)
        where = ".".join(str(p) for p in path) or "(top level)"
        out.append(
            Violation(
                FREEZE_LEDGER_INVALID,
                f"{where}: {err.message}; follow the ledger format in docs/freeze-ledger.md",
                file,
                at(path),
            )
        )
    return out


def _entry_line(ledger: Ledger, index: int, field: str | None = None) -> int:
    fmt = ledger.format
    return ledger.line(fmt.list_key, index, *([fmt.key(field)] if field else []))


@lru_cache(maxsize=4096)
def _agent_owner(owner: str, agents: tuple[str, ...]) -> bool:
    names = {owner, owner.lstrip("@"), *owner.lstrip("@").split("/")}
    return any(n.casefold() == "agent" or is_agent(n, agents) for n in names if n)


def _rules(ledger: Ledger, config: Config, today: date, ttl: float, file: str) -> list[Violation]:
    """Every rule a single ledger must keep: owners, dates, TTL, unique ids."""
    out: list[Violation] = []
    seen: dict[str, str] = {}

    def bad(index: int, field: str | None, message: str) -> None:
        out.append(Violation(FREEZE_LEDGER_INVALID, message, file, _entry_line(ledger, index, field)))

    for i, e in enumerate(ledger.entries):
        folded = e.id.casefold()
        if folded in seen:
            same = "repeats" if seen[folded] == e.id else f"differs only by case from {seen[folded]!r}"
            bad(i, "id", f"entry id {e.id!r} {same}; ids are unique — keep one entry per id")
        seen.setdefault(folded, e.id)
        if _agent_owner(e.owner, config.agents):
            bad(
                i,
                "owner",
                f"entry {e.id!r} is owned by {e.owner!r}, an agent; a ledger entry is owned by the "
                "human who quarantined the test — a human adds it on the base branch",
            )
        try:
            added, expires = date.fromisoformat(e.added), date.fromisoformat(e.expires)
        except ValueError as exc:
            bad(i, "expires", f"entry {e.id!r} has an impossible date ({exc}); write real dates as YYYY-MM-DD")
            continue
        if expires < added:
            bad(
                i,
                "expires",
                f"entry {e.id!r} expires {e.expires}, before it was added ({e.added}); "
                "correct the dates on the base branch",
            )
        elif (expires - added).days > ttl:
            bad(
                i,
                "expires",
                f"entry {e.id!r} lives {(expires - added).days} days ({e.added} to {e.expires}), over "
                f"max_ttl_days {int(ttl)}; expires must be at most {added + timedelta(days=int(ttl))}",
            )
        if added > today:
            bad(
                i,
                "added",
                f"entry {e.id!r} was added {e.added}, after today ({today}); an entry's TTL counts from "
                "the day it was really added — use that date",
            )
    return out


def _compare(base: Ledger, head: Ledger, file: str) -> list[Violation]:
    """Growth of any kind between the baseline's ledger and the head's (the four growth rows)."""
    out: list[Violation] = []
    base_ids = base.by_id()
    head_index = {e.id: i for i, e in reversed(list(enumerate(head.entries)))}
    for e in head.by_id().values():
        i = head_index[e.id]
        old = base_ids.get(e.id)
        if old is None:
            hint = next((b for b in base_ids if b.casefold() == e.id.casefold()), None)
            also = f" (the baseline has {hint!r}: ids are case-sensitive)" if hint else ""
            out.append(
                Violation(
                    FREEZE_ID_ADDED,
                    f"entry {e.id!r} is new{also}; the ledger may only shrink — "
                    "ask a human to add it on the base branch",
                    file,
                    _entry_line(head, i),
                )
            )
            continue
        if e.expires > old.expires:
            out.append(
                Violation(
                    FREEZE_EXPIRY_EXTENDED,
                    f"entry {e.id!r} expires {e.expires}, later than "
                    f"{old.expires} on the baseline; an expiry may only move earlier — restore "
                    f"{old.expires}",
                    file,
                    _entry_line(head, i, "expires"),
                )
            )
        for field in REWRITABLE:
            was, now = getattr(old, field), getattr(e, field)
            if was != now:
                out.append(
                    Violation(
                        FREEZE_ENTRY_REWRITTEN,
                        f"entry {e.id!r} changed {head.format.key(field)} "
                        f"from {was!r} to {now!r}; a kept entry is read-only — restore {was!r} or "
                        "delete the entry",
                        file,
                        _entry_line(head, i, field),
                    )
                )
    before, after = effective_budget(base.budget), effective_budget(head.budget)
    for key in BUDGET_KEYS:
        if after[key] > before[key]:
            now_text = "removed (no limit)" if key not in head.budget else f"{head.budget[key]}"
            if key == "max_ttl_days" and key not in head.budget:
                now_text = f"removed (default {DEFAULT_TTL_DAYS})"
            was_text = str(base.budget[key]) if key in base.budget else f"{before[key]:g} (unset)"
            out.append(
                Violation(
                    FREEZE_BUDGET_RAISED,
                    f"budget.{key} is {now_text}, above {was_text} on the "
                    f"baseline; a budget may only be lowered — restore {key}: {int(before[key])}",
                    file,
                    head.line("budget", key),
                )
            )
    return out


def _budget_rules(ledger: Ledger, limits: dict[str, float], file: str) -> list[Violation]:
    out = []
    count, size = len(ledger.entries), ledger.canonical_size
    if count > limits["max_entries"]:
        out.append(
            Violation(
                FREEZE_OVER_BUDGET,
                f"the ledger has {count} entries, over max_entries "
                f"{int(limits['max_entries'])}; delete entries whose tests pass now",
                file,
                ledger.line("budget", "max_entries"),
            )
        )
    if size > limits["max_bytes"]:
        out.append(
            Violation(
                FREEZE_OVER_BUDGET,
                f"the entries take {size} canonical bytes, over max_bytes "
                f"{int(limits['max_bytes'])}; delete entries whose tests pass now",
                file,
                ledger.line("budget", "max_bytes"),
            )
        )
    return out


def check(base: bytes | None, head: bytes | None, config: Config, today: date) -> LedgerResult:
    """Compare the baseline ledger with the patched one."""
    file = config.freeze.file
    receipt: FreezeJson = {
        "file": file,
        "format": format_of(file).name,
        "mode": config.freeze.mode,
        "added": [],
        "removed": [],
        "expired": [],
        "active": [],
        "file_sha256": optional_sha256_digest(head),
        "base_sha256": optional_sha256_digest(base),
        "valid": False,
        "entries": None,
        "budget": None,
    }

    def result(violations: list[Violation], **kw: Any) -> LedgerResult:
        return LedgerResult(FreezeLane(tuple(violations), receipt), file=file, **kw)

    sides = _sides(base, head, file)
    if not isinstance(sides, tuple):
        return result(sides)
    base_ledger, head_ledger = sides
    before, after = effective_budget(base_ledger.budget), effective_budget(head_ledger.budget)
    limits = {k: min(before[k], after[k]) for k in BUDGET_KEYS}
    violations = _rules(head_ledger, config, today, limits["max_ttl_days"], file)
    violations += _compare(base_ledger, head_ledger, file)
    violations += _budget_rules(head_ledger, limits, file)
    removed, active, expired = _kept(base_ledger, head_ledger, today)
    base_ids = base_ledger.by_id()
    receipt.update(
        {
            "valid": not any(v.row == FREEZE_LEDGER_INVALID for v in violations),
            "added": [e.id for e in head_ledger.entries if e.id not in base_ids],
            "removed": [e.id for e in removed],
            "expired": [e.id for e in expired],
            "active": [e.id for e in active],
            "entries": len(head_ledger.entries),
            "budget": {
                "limits": {k: (None if v == float("inf") else int(v)) for k, v in limits.items()},
                "canonical_bytes": head_ledger.canonical_size,
            },
        }
    )
    return result(violations, removed=removed, expired=expired, active=active)


def _sides(base: bytes | None, head: bytes | None, file: str) -> tuple[Ledger, Ledger] | list[Violation]:
    """Both ledgers parsed (an absent baseline ledger as an empty one), or the rows that stop the comparison (none
    when neither side has a ledger)."""
    if base is not None and head is None:
        return [
            Violation(
                FREEZE_LEDGER_INVALID,
                "the patch deletes the ledger file (and its budget); keep "
                "the file and delete only the entries whose tests pass now",
                file,
                1,
            )
        ]
    base_ledger = None
    if base is not None:
        try:
            base_ledger = parse(base, file)
        except _Invalid as exc:
            first = exc.violations[0]
            return [
                Violation(
                    FREEZE_LEDGER_INVALID,
                    f"the baseline's ledger is invalid (line {first.line}: "
                    f"{first.message}); a human must repair it on the base branch",
                    file,
                    1,
                )
            ]
    if head is None:
        return []
    try:
        # Most patches leave the ledger alone: the same bytes parse to the same (immutable) ledger, so read once.
        head_ledger = base_ledger if base_ledger is not None and head == base else parse(head, file)
    except _Invalid as exc:
        return exc.violations
    if base_ledger is None:  # no ledger on the baseline: every entry is new, nothing may be raised above defaults
        base_ledger = Ledger((), {}, [], {}, head_ledger.format)
    return base_ledger, head_ledger


def _kept(
    base: Ledger, head: Ledger, today: date
) -> tuple[tuple[FreezeEntry, ...], tuple[FreezeEntry, ...], tuple[FreezeEntry, ...]]:
    """The baseline's entries the patch removed, and those it kept, split into active and expired."""
    base_ids, head_ids = base.by_id(), head.by_id()
    removed = tuple(e for e in base.entries if e.id not in head_ids)
    active: list[FreezeEntry] = []
    expired: list[FreezeEntry] = []
    for e in head.entries:
        old = base_ids.get(e.id)
        if old is None or head_ids[e.id] is not e:
            continue
        # The trusted view of a kept entry: the baseline's values, the earlier expiry, the head's line.
        trusted = FreezeEntry(  # dataclasses.replace, spelled out: it costs ~4 times as much per entry
            old.id, old.test, min(old.expires, e.expires), old.added, old.owner, old.assertion_hash, old.reason, e.line
        )
        (expired if trusted.expires < today.isoformat() else active).append(trusted)
    return removed, tuple(active), tuple(expired)


def unverified(result: LedgerResult, reason: str) -> tuple[Violation, ...]:
    """Violations for removals and expired entries that no run could verify."""
    return tuple(
        [
            Violation(
                FREEZE_REMOVAL_UNVERIFIED,
                f"entry {e.id!r} was removed but its test was not replayed "
                f"({reason}); run the gate with tests so the removal is verified",
                result.file,
                e.line,
            )
            for e in result.removed
        ]
        + [
            Violation(
                FREEZE_EXPIRED,
                f"entry {e.id!r} expired on {e.expires} and its test was not run ({reason}); "
                "fix the test and delete the entry, or a human renews it on the base branch",
                result.file,
                e.line,
            )
            for e in result.expired
        ]
    )


def measure(data: bytes, file: str) -> tuple[int, int, dict[str, float]] | Violation:
    """One ledger on its own (no baseline, no dates): its entry count, canonical bytes and effective budget, or
    the first reason it does not parse or fit its schema (for `evidence-gate history`)."""
    try:
        ledger = parse(data, file)
    except _Invalid as exc:
        return exc.violations[0]
    return len(ledger.entries), ledger.canonical_size, effective_budget(ledger.budget)


def entry_ids(data: bytes, file: str) -> tuple[str, ...] | None:
    """The entry ids of one ledger in file order, or None when it does not parse or fit its schema."""
    try:
        return tuple(parse(data, file).by_id())
    except _Invalid:
        return None
