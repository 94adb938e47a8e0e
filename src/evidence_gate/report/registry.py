"""The reporters, by name: `text` for people (a compiler-style diagnostic per violation, then the decision; see
`terminal_report`), `json` (the receipt itself) and `sarif` (SARIF 2.1.0 for code scanning). `--format` offers `REPORTERS`."""

from __future__ import annotations

import json

from evidence_gate.model import Violation
from evidence_gate.receipt import access as receipt_access
from evidence_gate.records import dataclass
from evidence_gate.report import terminal as terminal_report

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any

    from evidence_gate.receipt import delta as receipt_delta


def violations_of(receipt: Mapping[str, Any]) -> list[Violation]:
    """The receipt's violations as values."""
    return [Violation(v["row"], v["message"], v.get("path"), v.get("line")) for v in receipt_access.violations(receipt)]


def render_text(
    receipt: Mapping[str, Any], style: terminal_report.Style | None = None, delta: receipt_delta.Delta | None = None
) -> str:
    """The CLI's text output: compiler-style diagnostics, a blank line, the verdict (see `terminal_report`)."""
    return terminal_report.render(receipt, style, delta=delta)


def render_json(receipt: Mapping[str, Any]) -> str:
    """The receipt itself, for machines."""
    return json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_sarif(receipt: Mapping[str, Any], docs: str | None = None) -> str:
    """SARIF 2.1.0: one rule per decision-table row, one result per violation (see `sarif`)."""
    from evidence_gate.report import sarif  # noqa: PLC0415 - only `--format sarif` and the action need it

    return json.dumps(sarif.sarif_log(receipt, docs), indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Context:
    """What a reporter may use beside the receipt: the README URL its links point into (None: unknown), and for
    the text report the terminal's width, whether to colour, the source line of a finding's location and the change
    since a previous receipt."""

    docs: str | None = None
    width: int = terminal_report.DEFAULT_WIDTH
    color: bool = False
    source: terminal_report.SourceLine | None = None
    delta: receipt_delta.Delta | None = None  # the change since a previous receipt (`check --previous`)


if TYPE_CHECKING:
    Reporter = Callable[[Mapping[str, Any], Context], str]
REPORTERS: dict[str, Reporter] = {
    "text": lambda receipt, context: terminal_report.render(
        receipt, terminal_report.Style(context.width, context.color, context.docs), context.source, context.delta
    ),
    "json": lambda receipt, _context: render_json(receipt),
    "sarif": lambda receipt, context: render_sarif(receipt, context.docs),
}
DEFAULT_FORMAT = "text"


def render(fmt: str, receipt: Mapping[str, Any], context: Context | None = None) -> str:
    """The receipt in the named format; KeyError for a name not in `REPORTERS` (argparse offers only those)."""
    return REPORTERS[fmt](receipt, context or Context())
