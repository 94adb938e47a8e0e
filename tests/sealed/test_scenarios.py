"""Runs every scenario folder under tests/scenarios through the real `evidence-gate check` command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import decision
from support import scenario_repo

SCENARIOS = Path(__file__).parents[1] / "scenarios"
CASES = sorted(p.parent for p in SCENARIOS.rglob("scenario.yml"))


def _subset(expected: dict[str, Any], actual: dict[str, Any]) -> bool:
    return all(actual.get(k) == v for k, v in expected.items())


@pytest.mark.parametrize("folder", CASES, ids=[str(c.relative_to(SCENARIOS)) for c in CASES])
def test_scenario(folder: Path, tmp_path: Path) -> None:
    """The scenario's repository lands on the expected row, exit code and violations."""
    recipe = scenario_repo.load(folder)
    repo = scenario_repo.build(recipe, tmp_path / "repo")
    receipt_path = tmp_path / "receipt.json"
    cmd = [
        sys.executable,
        "-m",
        "evidence_gate",
        "check",
        "--repo",
        str(repo.path),
        "--receipt",
        str(receipt_path),
        "--today",
        str(recipe.get("today", "2026-09-20")),
        *recipe.get("args", ["--no-run"]),
    ]
    if "author" in recipe:
        cmd += ["--author", recipe["author"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    receipt = json.loads(receipt_path.read_text("utf-8"))
    expect = recipe["expect"]
    context = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert receipt["decision"]["row"] == expect["row"], context
    assert proc.returncode == expect["exit"], context
    for row in expect.get("matched", []):
        assert row in receipt["decision"]["matched"], context
    for row in expect.get("not_matched", []):
        assert row not in receipt["decision"]["matched"], context
    for wanted in expect.get("violations", []):
        assert any(_subset(wanted, v) for v in receipt["violations"]), f"{wanted} not in {receipt['violations']}"
    flat = " ".join(proc.stdout.split())  # the report wraps at the terminal's width
    for fragment in expect.get("stdout_contains", []):
        # `path:line: message` is printed as a diagnostic: the message, then `--> path:line` under it.
        located = re.match(r"^([^\s:]+:\d+): (.*)$", fragment)
        parts = [f"--> {located.group(1)}", located.group(2)] if located else [fragment]
        assert all(" ".join(part.split()) in flat for part in parts), context
    for section, wanted in expect.get("receipt", {}).items():  # e.g. receipt: {freeze: {added: [x]}}
        assert _subset(wanted, receipt[section]), f"{section}: {wanted} not in {receipt[section]}"


def test_every_scenario_folder_is_a_case() -> None:
    """The parametrized cases are exactly the folders two levels down (group/case), each holding only its
    scenario.yml with known keys and a real row: a misnamed file or a stray folder is never silently skipped."""
    groups = sorted(SCENARIOS.iterdir())
    assert groups and all(g.is_dir() for g in groups), groups
    folders = sorted(c for g in groups for c in g.iterdir())
    assert folders == CASES, sorted(set(folders) ^ set(CASES))
    row_ids = {r.id for r in decision.table()}
    for folder in CASES:
        assert [p.name for p in folder.iterdir()] == ["scenario.yml"], folder
        expect = scenario_repo.load(folder)["expect"]
        assert expect["row"] in row_ids and expect["exit"] == decision.row(expect["row"]).exit_code, (folder, expect)
        named = [expect["row"], *expect.get("matched", []), *expect.get("not_matched", [])]
        named += [v["row"] for v in expect.get("violations", []) if "row" in v]
        assert set(named) <= row_ids, (folder, sorted(set(named) - row_ids))
