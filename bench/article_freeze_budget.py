"""A reconstruction of the source article's `freeze_budget.py`: the comparison point of bench_speed.py.

    python bench/article_freeze_budget.py REPO BASE HEAD [--libyaml]

The article's script is not in this repository, so this is what such a script does, written plainly: read
`freeze.yaml` at both commits with `git show`, `yaml.safe_load` each (PyYAML's pure-Python loader unless
`--libyaml` picks `CSafeLoader`), and fail when an id is added, an expiry moves later, the budget rises, or the
entry count or canonical size is over budget. No strictness (duplicate keys, tags, anchors), no schema, no lines.
Exit 0 pass, 1 fail.
"""

from __future__ import annotations

import json
import subprocess
import sys

import yaml


def _load(repo: str, rev: str, loader: type) -> dict:
    text = subprocess.run(["git", "-C", repo, "show", f"{rev}:freeze.yaml"], capture_output=True, check=True).stdout
    return yaml.load(text, Loader=loader) or {}  # SafeLoader or CSafeLoader: both safe


def main(argv: list[str]) -> int:
    """Compare the two ledgers and print what grew."""
    repo, base_rev, head_rev = argv[:3]
    loader = yaml.CSafeLoader if "--libyaml" in argv else yaml.SafeLoader
    base, head = _load(repo, base_rev, loader), _load(repo, head_rev, loader)
    old = {e["id"]: e for e in base.get("entries", [])}
    problems = []
    for entry in head.get("entries", []):
        was = old.get(entry["id"])
        if was is None:
            problems.append(f"added: {entry['id']}")
        elif str(entry["expires"]) > str(was["expires"]):
            problems.append(f"extended: {entry['id']}")
    budget, before = head.get("budget", {}), base.get("budget", {})
    problems += [f"budget raised: {k}" for k in budget if k in before and budget[k] > before[k]]
    entries = head.get("entries", [])
    size = len(json.dumps(entries, sort_keys=True, separators=(",", ":"), default=str).encode())
    if len(entries) > budget.get("max_entries", float("inf")) or size > budget.get("max_bytes", float("inf")):
        problems.append("over budget")
    print("\n".join(problems) or "ok")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
