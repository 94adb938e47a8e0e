"""Each hostile trick on a repository whose property is red must not come out green; the controls pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence_gate import decision
from support.case_files import txt_files
from support.property_repo import judge, red_repo, rows, sealed_only
from support.repo_builder import GitRepo

CASES = Path(__file__).parents[1] / "property_cases"
BEFORE_TESTS = decision.stops_tests()


EXPECT_KEYS = {"doc", "rows", "mentions", "baseline", "config"}


def _cases() -> list[Path]:
    return sorted(p for p in CASES.iterdir() if p.is_dir())


def test_every_case_folder_is_a_whole_case() -> None:
    """Each folder holds exactly expect.json and a non-empty patch/ of `.txt` files, and expect.json names only known
    keys and real rows: a case missing a part, or with a misspelt key, would otherwise be dropped or pass unchecked."""
    assert _cases(), CASES
    row_ids = {r.id for r in decision.table()}
    for case in _cases():
        assert sorted(p.name for p in case.iterdir()) == ["expect.json", "patch"], case
        expect = json.loads((case / "expect.json").read_text())
        assert set(expect) <= EXPECT_KEYS and "rows" in expect and "doc" in expect, (case.name, sorted(expect))
        assert set(expect["rows"]) <= row_ids, (case.name, expect["rows"])
        txt_files(case / "patch")
    assert sorted(p.name for p in CASES.iterdir() if not p.is_dir()) == ["README.md"]


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_trick_is_not_green(case: Path, git_repo: GitRepo, tmp_path: Path) -> None:
    """The trick lands on one of the expected rows (controls: pass), never on a silent pass."""
    expect = json.loads((case / "expect.json").read_text())
    red_repo(git_repo, extra=expect.get("baseline"), **expect.get("config", {}))
    git_repo.commit(case.name, txt_files(case / "patch"))
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
    messages = [str(v["message"]) for v in receipt["violations"]]
    if receipt["decision"]["row"] in BEFORE_TESTS:
        # A static lane stopped it first; the seal must hold on its own too.
        sealed = sealed_only(git_repo, tmp_path).violations
        sealed_rows = {v.row for v in sealed}
        assert sealed_rows & (set(expect["rows"]) - BEFORE_TESTS), sealed_rows
        messages = [v.message for v in sealed]
    if expect.get("mentions"):
        # The trick is caught for what it is, not by luck of another row (by the seal, when it had to run alone).
        assert any(expect["mentions"] in m for m in messages), messages
