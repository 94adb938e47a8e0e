"""How each decision row is presented: its lane, the docs page that documents it, what to do; and the lanes.

Presentation data lives in `data/report_rows.json`; the rules themselves stay in `decision_table.json`.
"""

from __future__ import annotations

import json
from functools import cache
from urllib.parse import urljoin

from evidence_gate import decision, package_data
from evidence_gate.receipt import access as receipt_access
from evidence_gate.records import dataclass
from evidence_gate.row_ids import CONFIG_INVALID, EVENT_MISMATCH, HISTORY_MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from evidence_gate.receipt.types import ViolationJson

# pyproject's [project.urls] (a test keeps them equal): where a row's docs live when the runner names no README,
# and where a crash is reported.
PROJECT_README = "https://github.com/evidence-gate/evidence-gate/blob/main/README.md"
ISSUES_URL = "https://github.com/evidence-gate/evidence-gate/issues"
# The page that holds the generated decision table; each of its rows carries `<a id="row-ID">` (docs.py writes it).
DECISION_ROWS = "docs/decision-rows.md"
EXIT_CODES = "docs/cli.md#exit-codes"  # where an aborted run links
# Lanes in reading order.
LANES = ("Preconditions", "Locked evidence", "Harness probes", "Freeze ledger", "Fixtures", "Properties")
OTHER = "Other"
PRECONDITIONS = frozenset({CONFIG_INVALID, HISTORY_MISSING, EVENT_MISMATCH})


@dataclass(frozen=True)
class RowInfo:
    """One row's presentation."""

    lane: str
    page: str  # `docs/PAGE.md#anchor`, relative to the repository root (where the README is)
    todo: str
    title: str | None = None  # shown instead of the decision table's title


def title(row: str) -> str:
    """The row's title as people read it: report_rows.json's when it has one, else the decision table's."""
    shown = info(row).title
    if shown:
        return shown
    try:
        return decision.row(row).title
    except KeyError:
        return row


@cache
def _rows() -> dict[str, RowInfo]:
    raw = json.loads(package_data.read_text("report_rows.json"))
    return {row: RowInfo(**info) for row, info in raw["rows"].items()}


def info(row: str) -> RowInfo:
    """The row's presentation; a row this file does not know yet is in lane `Other`, documented by the table."""
    return _rows().get(row, RowInfo(OTHER, f"{DECISION_ROWS}#decision-table", "See the finding's message for the fix."))


def row_anchor(row_id: str) -> str:
    """The fragment of a row in the decision table's page."""
    return f"row-{row_id}"


def docs_url(readme: str, page: str) -> str:
    """`page` (`docs/PAGE.md#anchor`, relative to the repository root) as an address beside the README at `readme`:
    `https://github.com/o/r/blob/main/README.md` + `docs/x.md#a` is `https://github.com/o/r/blob/main/docs/x.md#a`."""
    return urljoin(readme, page)


def row_url(readme: str, row_id: str) -> str:
    """The address of a row's line in the generated decision table, beside the README at `readme`."""
    return docs_url(readme, f"{DECISION_ROWS}#{row_anchor(row_id)}")


def known_rows() -> frozenset[str]:
    """The rows `data/report_rows.json` describes."""
    return frozenset(_rows())


def lane_of(row: str) -> str:
    """The lane a violation row belongs to."""
    return info(row).lane


def violations_by_lane(receipt: Mapping[str, Any]) -> dict[str, list[ViolationJson]]:
    """The receipt's violations grouped by lane, lanes in reading order (`Other` last), only lanes with any."""
    out: dict[str, list[ViolationJson]] = {}
    for v in receipt_access.violations(receipt):
        out.setdefault(lane_of(str(v.get("row"))), []).append(v)
    order = [*LANES, OTHER]
    return {lane: out[lane] for lane in order if lane in out}
