"""A small repository whose locked property is red on the baseline, for the property-lane tests."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from evidence_gate import gate
from evidence_gate.git import Repo
from evidence_gate.lanes.properties import lane as property_lane
from evidence_gate.lanes.properties.plan import DynamicRequest
from evidence_gate.model import LaneResult
from support.repo_builder import GitRepo

PROPERTY = """\
from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == x + x
"""
RED = "def double(x):\n    return x * 2 if x < 1000 else x\n"
GREEN = "def double(x):\n    return x * 2\n"
# A patch to GREEN whose new line 3 raises for large inputs: the failure's traceback runs through the patch.
RAISES_ON_THE_PATCH = "def double(x):\n    if x > 1000:\n        raise ValueError('too big')\n    return x * 2\n"


def config(**properties: Any) -> str:
    """A configuration with a small, fast seed plan."""
    props = {
        "seeds": [11, 12, 13, 14],
        "fresh_seeds": 1,
        "trials": 25,
        "timeout_s": 60,
        "jobs": 2,
        "pythonpath": ["src"],
        **properties,
    }
    return json.dumps({"version": 1, "properties": props})


def red_repo(repo: GitRepo, extra: dict[str, str | bytes | None] | None = None, **properties: Any) -> str:
    """Commit the baseline (red property) on `main`, switch to branch `patch`; return the baseline id."""
    files: dict[str, str | bytes | None] = {
        ".evidence-gate.yml": config(**properties),
        "SCORE_PROPERTIES": "properties/test_double.py::test_double\n",
        "properties/test_double.py": PROPERTY,
        "src/calc.py": RED,
        "README.md": "demo\n",
    }
    files.update(extra or {})
    base = repo.commit("baseline", files)
    repo.branch("patch")
    return base


def judge(repo: GitRepo, tmp: Path, **kw: Any) -> dict[str, Any]:
    """Run the gate (with tests) on main..HEAD as an agent patch and return the receipt."""
    opts = gate.CheckOptions(repo=repo.path, base="main", head="HEAD", author="agent-x", **kw)
    receipt, _code = gate.evaluate(opts, tmp / "receipt.json")
    return receipt


def rows(receipt: dict[str, Any]) -> list[str]:
    """Rows of all violations."""
    return [v["row"] for v in receipt["violations"]]


def base_files(**properties: Any) -> dict[str, str | bytes | None]:
    """The red baseline's files, for tests that want to change a few of them before committing."""
    return {
        ".evidence-gate.yml": config(**properties),
        "SCORE_PROPERTIES": "properties/test_double.py::test_double\n",
        "properties/test_double.py": PROPERTY,
        "src/calc.py": RED,
        "README.md": "demo\n",
    }


def ledger(receipt: dict[str, Any], node: str = "properties/test_double.py::test_double") -> dict[str, Any]:
    """The seed ledger of one property."""
    found = [x for x in receipt["properties"]["ledgers"] if x["property_id"] == node]
    assert len(found) == 1, receipt["properties"]["ledgers"]
    return found[0]


def sealed_only(repo: GitRepo, tmp: Path, locked: frozenset[str] = frozenset()) -> LaneResult:
    """The property lane alone on main..HEAD, with `locked` as the locked lane would have computed it."""
    git = Repo(repo.path)
    baseline, head = git.resolve("main"), git.resolve("HEAD")
    assert baseline is not None and head is not None
    config, _blob, specs, _list = gate.read_trusted(git, baseline)
    return property_lane.run(
        DynamicRequest(
            repo=git,
            baseline=baseline,
            head=head,
            config=config,
            specs=specs,
            locked_paths=locked,
            removed=(),
            expired=(),
            active=(),
            patch_id=head,
            today=date(2026, 9, 1),
            workdir=tmp,
        )
    )
