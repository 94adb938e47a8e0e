"""The one generator of the docs pages' tables: `python -m evidence_gate.docs [ROOT] [--check]`.

Each generated block sits between its markers on its page under `docs/` and is rendered from its source: the
decision table (`docs/decision-rows.md`) from the package data `data/decision_table.json`, the action's inputs and
outputs (`docs/action.md`) from `action.yml` at the root. ROOT is the checkout (default: the current folder).
Without `--check` the pages are rewritten in place; with it, exit 1 names every block that drifted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evidence_gate import decision
from evidence_gate.report import row_docs

START = "<!-- section:decision-table -->"
END = "<!-- /section:decision-table -->"
ACTION_START = "<!-- generated:action-io -->"
ACTION_END = "<!-- /generated:action-io -->"
REGENERATE = "python -m evidence_gate.docs"
ACTION_PAGE = "docs/action.md"


def cell(text: object) -> str:
    """One Markdown table cell: whitespace folded to single spaces, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def decision_table_markdown() -> str:
    """The decision-table page's body, rendered from `data/decision_table.json`."""
    lines = [
        "# Decision table",
        "",
        "Generated from `src/evidence_gate/data/decision_table.json` by `" + REGENERATE + "`; do not edit by hand.",
        "The first matching row names the verdict (the check run's summary leads with `title · ROW-ID`); every matching row is listed",
        "in `decision.matched`. *Decided by* is the lane that finds the row (`replays`, `fixtures` and `properties`",
        "are the sealed run, whose rows a [publisher](forks.md#pull-requests-from-forks) takes from the run's receipt and",
        "re-derives from its facts); *stops tests* marks the rows after which no test runs.",
        "",
        "| # | row id | title | when | gate | exit | decided by | stops tests |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in decision.table():
        gate = r.gate if r.scored or r.gate == "fail" else f"{r.gate}, not scored"
        # The anchor is what SARIF rules' helpUri and other links point at (`#row-ID`; GitHub resolves it).
        anchor = f'<a id="{row_docs.row_anchor(r.id)}"></a>'
        stops = "yes" if r.stops_tests else ""
        lines.append(
            f"| {r.number} | `{r.id}` | {anchor}{cell(r.title)} | {cell(r.when)} | {gate} | {r.exit_code} "
            f"| {r.decided_by} | {stops} |"
        )
    return "\n".join(lines) + "\n"


def _default(value: object) -> str:
    if value is None:
        return "—"
    text = str(value)
    return f"`{text}`" if text else '`""`'


def action_io_markdown(action: dict[str, Any]) -> str:
    """The action's inputs table, then its outputs table, rendered from the mapping `action.yml` holds."""
    lines = ["| input | default | description |", "|---|---|---|"]
    for name, spec in (action.get("inputs") or {}).items():
        required = " (required)" if spec.get("required") is True else ""
        lines.append(f"| `{name}`{required} | {cell(_default(spec.get('default')))} | {cell(spec['description'])} |")
    lines += ["", "| output | description |", "|---|---|"]
    for name, spec in (action.get("outputs") or {}).items():
        lines.append(f"| `{name}` | {cell(spec['description'])} |")
    return "\n".join(lines) + "\n"


def load_action(path: Path) -> dict[str, Any]:
    """`action.yml` as a mapping; ValueError when it is not one."""
    data = yaml.safe_load(path.read_text("utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a YAML mapping")
    return data


@dataclass(frozen=True)
class Block:
    """One generated part of a docs page: the page, its markers and how to render it from the repository root."""

    name: str
    page: str  # relative to the repository root
    start: str
    end: str
    source: str
    render: Callable[[Path], str]


BLOCKS = (
    Block(
        "decision table",
        row_docs.DECISION_ROWS,
        START,
        END,
        "src/evidence_gate/data/decision_table.json",
        lambda _r: decision_table_markdown(),
    ),
    Block(
        "action inputs and outputs",
        ACTION_PAGE,
        ACTION_START,
        ACTION_END,
        "action.yml",
        lambda root: action_io_markdown(load_action(root / "action.yml")),
    ),
)


def _replace(text: str, block: Block, body: str) -> str:
    start = text.find(block.start)
    end = text.find(block.end, start + 1)
    if start < 0 or end < 0:
        raise ValueError(f"{block.page} lacks the {block.name} markers {block.start} ... {block.end}")
    start += len(block.start)
    return text[:start] + "\n" + body + text[end:]


def _root(root: Path | None) -> Path:
    return root or Path(__file__).resolve().parents[2]


def pages() -> tuple[str, ...]:
    """The pages that hold generated blocks, relative to the repository root."""
    return tuple(dict.fromkeys(b.page for b in BLOCKS))


def render(page: str, text: str, root: Path | None = None) -> str:
    """`text`, the page `page`, with each of its generated blocks re-rendered; `root` holds `action.yml` (default:
    this checkout)."""
    for block in BLOCKS:
        if block.page == page:
            text = _replace(text, block, block.render(_root(root)))
    return text


def drifted(root: Path | None = None) -> list[str]:
    """The blocks whose text on their page under `root` differs from what their source renders, each as
    'name on page (from source)'."""
    where = _root(root)
    out = []
    for block in BLOCKS:
        text = (where / block.page).read_text("utf-8")
        if _replace(text, block, block.render(where)) != text:
            out.append(f"{block.name} on {block.page} (from {block.source})")
    return out


def main(argv: list[str] | None = None) -> int:
    """Rewrite the pages in place (exit 0), or with `--check` exit 1 naming every block that drifted."""
    args = sys.argv[1:] if argv is None else argv
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    root = Path(paths[0] if paths else ".").resolve()
    if check:
        stale = drifted(root)
        for name in stale:
            sys.stderr.write(f"{root}: the {name} is out of date; run `{REGENERATE}`\n")
        return 1 if stale else 0
    for page in pages():
        path = root / page
        text = path.read_text("utf-8")
        new = render(page, text, root)
        if new != text:
            path.write_text(new, "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
