"""The decision: the first matching row of the table shipped as package data."""

from __future__ import annotations

import json
from functools import cache

from evidence_gate import package_data
from evidence_gate.records import dataclass
from evidence_gate.row_ids import HUMAN_PATCH, PASS_FREEZE_SHRANK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evidence_gate.model import Violation
    from evidence_gate.receipt.types import DecisionJson

# Facts a lane may assert that are not violations.
FACT_HUMAN = HUMAN_PATCH
FACT_FREEZE_SHRANK = "freeze-shrank"
# The lanes of the sealed run: their rows come from running the patch's code, so a publisher can only take them
# from the run's receipt (and re-derive what the receipt's own facts show); every other lane is git objects.
SEALED_LANES = ("replays", "fixtures", "properties")


@dataclass(frozen=True)
class Row:
    """One row of the decision table."""

    number: int
    id: str
    gate: str
    exit_code: int
    title: str
    when: str
    scored: bool
    decided_by: str
    stops_tests: bool


@dataclass(frozen=True)
class Decision:
    """The row that named the verdict and every row that matched."""

    row: Row
    matched: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """True exactly when the gate passes."""
        return self.row.gate == "pass"

    def to_json(self) -> DecisionJson:
        """The receipt's `decision` object."""
        return {
            "row": self.row.id,
            "gate": self.row.gate,
            "title": self.row.title,
            "matched": list(self.matched),
            "exit_code": self.row.exit_code,
            "scored": self.row.scored,
        }


@cache
def table() -> tuple[Row, ...]:
    """The decision table, in order."""
    raw = json.loads(package_data.read_text("decision_table.json"))
    return tuple(Row(**r) for r in raw["rows"])


def row(row_id: str) -> Row:
    """The row with this id; KeyError for an unknown id, which is a programming error."""
    for r in table():
        if r.id == row_id:
            return r
    raise KeyError(row_id)


def row_ids() -> tuple[str, ...]:
    """Every row id, in table order."""
    return tuple(r.id for r in table())


def decided_by(*lanes: str) -> frozenset[str]:
    """The ids of the rows the given lanes decide (the table's `decided_by` column); KeyError for an unknown lane."""
    known = {r.decided_by for r in table()}
    unknown = set(lanes) - known
    if unknown:
        raise KeyError(f"lanes not in the decision table: {sorted(unknown)}")
    return frozenset(r.id for r in table() if r.decided_by in lanes)


def stops_tests() -> frozenset[str]:
    """The ids of the rows that stop the gate before any test runs (the table's `stops_tests` column)."""
    return frozenset(r.id for r in table() if r.stops_tests)


def decide(violations: tuple[Violation, ...] | list[Violation], facts: frozenset[str] = frozenset()) -> Decision:
    """Pick the first matching row.

    Fail and precondition rows match when a violation carries their id; `human-patch` and `pass-freeze-shrank`
    match on facts; `pass` matches when no fail row matched. Pass rows other than `human-patch` never match
    beside a failing row, so the table can't name a pass while something failed.
    """
    failing = {v.row for v in violations}
    unknown = failing - set(row_ids())
    if unknown:
        raise KeyError(f"violation rows not in the decision table: {sorted(unknown)}")
    any_fail = any(row(r).gate == "fail" for r in failing)
    matched: list[str] = []
    for r in table():
        if r.gate == "fail":
            hit = r.id in failing
        elif r.id == FACT_HUMAN:
            hit = FACT_HUMAN in facts
        elif r.id == PASS_FREEZE_SHRANK:
            hit = not any_fail and FACT_FREEZE_SHRANK in facts
        else:
            hit = not any_fail
        if hit:
            matched.append(r.id)
    first = row(matched[0])
    return Decision(first, tuple(matched))
