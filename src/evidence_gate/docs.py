"""Generates the README's decision table from the package data: `python -m evidence_gate.docs [README]`."""

from __future__ import annotations

import sys
from pathlib import Path

from evidence_gate import decision, sarif

START = "<!-- section:decision-table -->"
END = "<!-- /section:decision-table -->"
REGENERATE = "python -m evidence_gate.docs README.md"


def decision_table_markdown() -> str:
    """The README's decision-table section body, rendered from `data/decision_table.json`."""
    lines = [
        "## Decision table",
        "",
        "Generated from `src/evidence_gate/data/decision_table.json` by `" + REGENERATE + "`; do not edit by hand.",
        "The first matching row names the verdict and the check run (`ROW-ID: title`); every matching row is listed",
        "in `decision.matched`.",
        "",
        "| # | row id | title | when | gate | exit |",
        "|---|---|---|---|---|---|",
    ]
    for r in decision.table():
        gate = r.gate if r.scored or r.gate == "fail" else f"{r.gate}, not scored"
        when = r.when.replace("|", r"\|")
        # The anchor is what SARIF rules' helpUri and other links point at (`#row-ID`; GitHub resolves it).
        anchor = f'<a id="{sarif.row_anchor(r.id)}"></a>'
        lines.append(f"| {r.number} | `{r.id}` | {anchor}{r.title} | {when} | {gate} | {r.exit_code} |")
    return "\n".join(lines) + "\n"


def render(readme: str) -> str:
    """The README text with the section between the markers replaced by the generated table."""
    start = readme.index(START) + len(START)
    end = readme.index(END, start)
    return readme[:start] + "\n" + decision_table_markdown() + readme[end:]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the README in place; exit 0."""
    args = sys.argv[1:] if argv is None else argv
    path = Path(args[0] if args else "README.md")
    text = path.read_text("utf-8")
    new = render(text)
    if new != text:
        path.write_text(new, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
