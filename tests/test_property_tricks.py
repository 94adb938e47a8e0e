"""Each hostile trick on a repository whose property is red must not come out green; the controls pass."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from evidence_gate import property_lane
from evidence_gate.gate import read_trusted
from evidence_gate.git import Repo
from evidence_gate.model import LaneResult
from property_repo import judge, red_repo, rows
from repo_builder import GitRepo

CASES = Path(__file__).parent / "property_cases"


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if (p / "expect.json").is_file())


def _patch_files(case: Path) -> dict[str, str | bytes | None]:
    root = case / "patch"
    return {str(p.relative_to(root))[: -len(".txt")]: p.read_bytes() for p in root.rglob("*.txt") if p.is_file()}


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_trick_is_not_green(case: Path, git_repo: GitRepo, tmp_path: Path) -> None:
    """The trick lands on one of the expected rows (controls: pass), never on a silent pass."""
    expect = json.loads((case / "expect.json").read_text())
    red_repo(git_repo, extra=expect.get("baseline"), **expect.get("config", {}))
    git_repo.commit(case.name, _patch_files(case))
    receipt = judge(git_repo, tmp_path)
    assert receipt["state"] == "final", receipt["errors"]
    found = rows(receipt)
    if not expect["rows"]:
        assert receipt["decision"]["row"] == "pass", receipt["violations"]
        assert receipt["properties"]["counts"]["budget_passes"] == 1
        return
    assert receipt["ok"] is False
    assert receipt["decision"]["row"] in expect["rows"], receipt["violations"]
    assert set(found) & set(expect["rows"]), found
    if receipt["decision"]["row"] == "evidence-path-edited":
        # The locked lane stopped it first; the seal must hold on its own too.
        sealed_rows = {v.row for v in _sealed_only(git_repo, tmp_path).violations}
        assert sealed_rows & (set(expect["rows"]) - {"evidence-path-edited"}), sealed_rows


def _sealed_only(git_repo: GitRepo, tmp_path: Path) -> LaneResult:
    """The property lane alone on main..HEAD, as if no locked-evidence lane had run."""
    repo = Repo(git_repo.path)
    baseline, head = repo.resolve("main"), repo.resolve("HEAD")
    assert baseline is not None and head is not None
    config, _blob, specs, _list = read_trusted(repo, baseline)
    return property_lane.run(property_lane.DynamicRequest(
        repo=repo, baseline=baseline, head=head, config=config, specs=specs, locked_paths=frozenset(), removed=(),
        expired=(), active=(), patch_id=head, today=date(2026, 9, 1), workdir=tmp_path))
