"""The failure record names the lines of the patch a failing example's traceback ran: a real sealed run."""

from __future__ import annotations

from pathlib import Path

from support import property_repo
from support.repo_builder import GitRepo


def test_the_failure_record_names_the_changed_lines_its_traceback_ran(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code under test that raises on a line the patch added: `failure.in_patch` is that line, not the unchanged
    `def` above it nor the locked test's assert."""
    files = property_repo.base_files()
    files["src/calc.py"] = property_repo.GREEN
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("patch", {"src/calc.py": property_repo.RAISES_ON_THE_PATCH})
    ledger = property_repo.ledger(property_repo.judge(git_repo, tmp_path))
    assert ledger["failing_seed"] is not None, ledger
    assert ledger["failure"]["path"] == "properties/test_double.py", ledger["failure"]
    assert ledger["failure"]["in_patch"] == [{"path": "src/calc.py", "line": 3}], ledger["failure"]
