"""Plain values shared by the lanes, the decision and the receipt."""

from __future__ import annotations

from evidence_gate.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from evidence_gate.receipt.types import ViolationJson


@dataclass(frozen=True)
class Violation:
    """One finding: the row it matches, where it is and what to do about it."""

    row: str
    message: str
    path: str | None = None
    line: int | None = None

    def render(self) -> str:
        """`path:line: message [row]`, the form every reporter prints."""
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message} [{self.row}]"

    def to_json(self) -> ViolationJson:
        """The receipt's form of this violation."""
        return {"row": self.row, "path": self.path, "line": self.line, "message": self.message}


@dataclass(frozen=True)
class LaneResult:
    """What one lane found, plus the section it contributes to the receipt."""

    violations: tuple[Violation, ...] = ()
    receipt: Mapping[str, Any] = field(default_factory=dict)  # a lane's own section types it (FreezeLane)
    # Facts the decision needs beyond violations (e.g. "freeze-shrank").
    facts: frozenset[str] = frozenset()


@dataclass(frozen=True)
class FreezeEntry:
    """One quarantined test of the freeze ledger, in either file format."""

    id: str
    test: str
    expires: str
    added: str
    owner: str
    assertion_hash: str | None = None
    reason: str | None = None
    line: int | None = None
