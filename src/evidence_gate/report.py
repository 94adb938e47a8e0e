"""The reporters, by name: `text` for people (one line per violation, `path:line: message [row]`, then the
decision), `json` (the receipt itself) and `sarif` (SARIF 2.1.0 for code scanning). `--format` offers `REPORTERS`."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evidence_gate import receipt_types
from evidence_gate.locked_paths import display_path
from evidence_gate.model import Violation


def violations_of(receipt: dict[str, Any]) -> list[Violation]:
    """The receipt's violations as values."""
    return [Violation(v["row"], v["message"], v.get("path"), v.get("line")) for v in receipt_types.violations(receipt)]


def render_text(receipt: dict[str, Any]) -> str:
    """The CLI's text output."""
    lines = [v.render() for v in violations_of(receipt)]
    lines += [f"error: {e}" for e in receipt.get("errors", []) if not any(e in line for line in lines)]
    d = receipt["decision"]
    verdict = "PASS" if receipt["ok"] else "FAIL"
    properties = receipt.get("properties", {})
    if properties.get("skipped"):
        lines.append(f"properties: not run ({properties['skipped']})")
    counts = properties.get("counts")
    if counts and properties.get("ledgers"):
        lines.append(
            "seed ledgers: {open} open, {closed_failures} closed failures, {budget_passes} budget passes".format(
                **counts
            )
        )
    lines.append(f"{verdict}: {d['title']} [{d['row']}]")
    # Messages quote test output, paths and ledger text: a newline could forge a `PASS:` line and an ESC could
    # drive the terminal, so every control, format or surrogate character is spelled out.
    return "\n".join(display_path(line) for line in lines) + "\n"


def render_json(receipt: dict[str, Any]) -> str:
    """The receipt itself, for machines."""
    return json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def render_sarif(receipt: dict[str, Any], docs: str | None = None) -> str:
    """SARIF 2.1.0: one rule per decision-table row, one result per violation (see `sarif`)."""
    from evidence_gate import sarif  # noqa: PLC0415 - only `--format sarif` and the action need it

    return json.dumps(sarif.sarif_log(receipt, docs), indent=2, ensure_ascii=False) + "\n"


@dataclass(frozen=True)
class Context:
    """What a reporter may use beside the receipt: the README URL its links point into (None: unknown)."""

    docs: str | None = None


Reporter = Callable[[dict[str, Any], Context], str]
REPORTERS: dict[str, Reporter] = {
    "text": lambda receipt, _context: render_text(receipt),
    "json": lambda receipt, _context: render_json(receipt),
    "sarif": lambda receipt, context: render_sarif(receipt, context.docs),
}
DEFAULT_FORMAT = "text"


def render(fmt: str, receipt: dict[str, Any], context: Context | None = None) -> str:
    """The receipt in the named format; KeyError for a name not in `REPORTERS` (argparse offers only those)."""
    return REPORTERS[fmt](receipt, context or Context())
