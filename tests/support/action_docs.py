"""The README's input and output tables of the GitHub Action, generated from action.yml.

`python tests/support/action_docs.py` prints them; `--write` rewrites the block between the README's generated markers;
`--check` exits 1 when the README has drifted. tests/test_action_metadata.py runs the check.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
BEGIN = "<!-- generated:action-io (python tests/support/action_docs.py --write) -->"
END = "<!-- /generated:action-io -->"


def _cell(text: str) -> str:
    """One Markdown table cell: whitespace folded, pipes escaped."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(value: Any) -> str:
    if value is None:
        return "—"
    text = str(value)
    return f"`{text}`" if text else '`""`'


def render(action: dict[str, Any]) -> str:
    """The two tables, inputs then outputs, as Markdown."""
    lines = ["| input | default | description |", "|---|---|---|"]
    for name, spec in (action.get("inputs") or {}).items():
        required = " (required)" if spec.get("required") is True else ""
        lines.append(f"| `{name}`{required} | {_cell(_default(spec.get('default')))} | {_cell(spec['description'])} |")
    lines += ["", "| output | description |", "|---|---|"]
    for name, spec in (action.get("outputs") or {}).items():
        lines.append(f"| `{name}` | {_cell(spec['description'])} |")
    return "\n".join(lines)


def block(action: dict[str, Any]) -> str:
    """The generated block with its markers."""
    return f"{BEGIN}\n{render(action)}\n{END}"


def load_action(path: Path = ROOT / "action.yml") -> dict[str, Any]:
    """action.yml as a mapping."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise SystemExit(f"{path} is not a YAML mapping")
    return data


def current_block(readme: str) -> str | None:
    """The generated block as it stands in the README, markers included, or None."""
    start = readme.find(BEGIN)
    end = readme.find(END, start)
    if start < 0 or end < 0:
        return None
    return readme[start : end + len(END)]


def main(argv: list[str] | None = None) -> int:
    """Print, write or check the README's tables."""
    parser = argparse.ArgumentParser(description=__doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="rewrite the README block in place")
    mode.add_argument("--check", action="store_true", help="exit 1 when the README block differs")
    args = parser.parse_args(argv)
    wanted = block(load_action())
    if not (args.write or args.check):
        sys.stdout.write(wanted + "\n")
        return 0
    readme_path = ROOT / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    found = current_block(readme)
    if found is None:
        sys.stderr.write(f"README.md has no {BEGIN} ... {END} block\n")
        return 1
    if args.check:
        if found != wanted:
            sys.stderr.write(
                "README.md's action tables differ from action.yml; run python tests/support/action_docs.py --write\n"
            )
            return 1
        return 0
    readme_path.write_text(readme.replace(found, wanted), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
