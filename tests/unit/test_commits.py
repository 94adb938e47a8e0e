"""Which commits are compared: merge heads, --base, merge-base, events, and missing history."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_gate.action.event import EventContext
from evidence_gate.errors import EXIT_PRECONDITION, EXIT_USAGE, GateError
from evidence_gate.gate import resolve_commits
from evidence_gate.git import Repo
from support.repo_builder import PINNED_ENV, GitRepo


def _pr(git_repo: GitRepo) -> tuple[str, str, str, str]:
    """main: c1 -> c2; feature branches at c1 with one commit; merge ref of feature into c2."""
    c1 = git_repo.commit("one", {"a.txt": "1\n"})
    git_repo.branch("feature", c1)
    feature = git_repo.commit("feature", {"b.txt": "b\n"})
    git_repo.checkout("main")
    c2 = git_repo.commit("two", {"a.txt": "2\n"})
    merge = git_repo.merge_ref(c2, feature)
    git_repo.git("branch", "pr-merge", merge)
    return c1, c2, feature, merge


def _event(base: str, head: str, name: str = "pull_request") -> EventContext:
    return EventContext(name, base, head, head, "agent-x", "o/r", 1)


def test_merge_head_compares_with_first_parent(git_repo: GitRepo) -> None:
    """A merge commit with no --base is judged against its first parent."""
    _, c2, _, merge = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), "HEAD", None, None)
    assert (commits.baseline, commits.head, commits.merge_base) == (c2, merge, None)


def test_merge_head_with_base_equal_first_parent(git_repo: GitRepo) -> None:
    """--base naming the first parent (by branch name) is the same as no --base."""
    _, c2, _, merge = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), merge, "main", None)
    assert commits.baseline == c2


def test_merge_head_with_other_base_uses_merge_base(git_repo: GitRepo) -> None:
    """--base that is not H^1 gives merge-base(B, H), recorded as merge_base."""
    c1, _, _, merge = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), merge, c1, None)
    assert commits.baseline == c1
    assert commits.merge_base == c1


def test_branch_head_uses_merge_base(git_repo: GitRepo) -> None:
    """A non-merge head with --base compares against merge-base(base, head), not the base tip."""
    c1, _, feature, _ = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), "feature", "main", None)
    assert (commits.baseline, commits.head, commits.merge_base) == (c1, feature, c1)


def test_swapped_base_and_head_is_usage(git_repo: GitRepo) -> None:
    """A head already contained in the base (base and head swapped) is a usage error, never an empty pass."""
    c1, _, _, _ = _pr(git_repo)
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), c1, "main", None)
    assert info.value.exit_code == EXIT_USAGE
    assert "swapped" in info.value.fix


def test_same_commit_as_base_and_head_is_judged(git_repo: GitRepo) -> None:
    """Naming one commit as both base and head judges that commit against its own evidence (no error)."""
    _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), "main", "main", None)
    assert commits.baseline == commits.head


def test_branch_head_without_base_is_usage(git_repo: GitRepo) -> None:
    """A non-merge head with no --base asks for --base (usage error, exit 2)."""
    _pr(git_repo)
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "feature", None, None)
    assert info.value.exit_code == EXIT_USAGE
    assert "--base" in info.value.fix


@pytest.mark.parametrize(
    ("head", "base", "command"),
    [
        ("f" * 40, None, f"`git fetch --no-tags origin {'f' * 40}`"),
        ("HEAD", "e" * 40, f"`git fetch --no-tags origin {'e' * 40}`"),
        ("HEAD", "trunk", "`git fetch --no-tags origin trunk`"),
        ("feature", "origin/main", "`git fetch --no-tags origin main:refs/remotes/origin/main`"),
        ("feature", "refs/remotes/upstream/dev", "`git fetch --no-tags upstream dev:refs/remotes/upstream/dev`"),
    ],
)
def test_missing_revisions_are_history_missing(git_repo: GitRepo, head: str, base: str | None, command: str) -> None:
    """An absent base or head commit stops the gate with history-missing (exit 11) and a `git fetch` that works:
    a remote-tracking name is fetched by its branch into its ref, never as `origin origin/main`."""
    _pr(git_repo)
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), head, base, None)
    assert info.value.row == "history-missing"
    assert info.value.exit_code == EXIT_PRECONDITION
    assert command in info.value.fix


def test_a_mistyped_head_name_is_not_a_fetch(git_repo: GitRepo) -> None:
    """A head name that resolves to nothing says it does not exist and to check its spelling, with no fetch."""
    _pr(git_repo)
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "no-such-branch", "main", None)
    assert info.value.row == "history-missing"
    assert "'no-such-branch' does not exist" in info.value.message
    assert "spelling of --head" in info.value.fix and "merge ref" in info.value.fix
    assert "fetch" not in info.value.fix


def test_unrelated_base_is_history_missing(git_repo: GitRepo) -> None:
    """A base sharing no history with the head is history-missing, never an empty comparison."""
    _pr(git_repo)
    git_repo.git("checkout", "-q", "--orphan", "other")
    git_repo.commit("unrelated", {"z.txt": "z\n"})
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "feature", "other", None)
    assert info.value.row == "history-missing"


def _check(repo: Path, tmp_path: Path, *args: str) -> tuple[int, dict[str, object]]:
    receipt = tmp_path / "receipt.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(repo),
            "--receipt",
            str(receipt),
            "--no-run",
            "--today",
            "2026-09-20",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, json.loads(receipt.read_text("utf-8"))


def _shallow(git_repo: GitRepo, tmp_path: Path, branch: str) -> Path:
    clone = tmp_path / "shallow"
    subprocess.run(
        ["git", "clone", "-q", "--depth", "1", "--branch", branch, f"file://{git_repo.path}", str(clone)],
        check=True,
        capture_output=True,
        env={**PINNED_ENV, "PATH": "/usr/bin:/bin"},
    )
    return clone


def test_shallow_clone_of_merge_is_history_missing(git_repo: GitRepo, tmp_path: Path) -> None:
    """A depth-1 clone of the merge ref lacks H^1: exit 11 with history-missing, never a pass."""
    _pr(git_repo)
    clone = _shallow(git_repo, tmp_path, "pr-merge")
    code, receipt = _check(clone, tmp_path)
    assert code == EXIT_PRECONDITION
    assert receipt["decision"]["row"] == "history-missing"  # type: ignore[index]
    assert receipt["ok"] is False
    assert "fetch-depth: 0" in json.dumps(receipt["violations"])


def test_shallow_clone_of_branch_is_history_missing(git_repo: GitRepo, tmp_path: Path) -> None:
    """A depth-1 clone of a branch judged against a fetched base finds no merge-base: history-missing."""
    _pr(git_repo)
    clone = _shallow(git_repo, tmp_path, "feature")
    subprocess.run(
        ["git", "fetch", "-q", "--depth", "1", "origin", "main:main"], cwd=clone, check=True, capture_output=True
    )
    code, receipt = _check(clone, tmp_path, "--base", "main")
    assert code == EXIT_PRECONDITION
    assert receipt["decision"]["row"] == "history-missing"  # type: ignore[index]


def test_event_matching_merge_parents(git_repo: GitRepo) -> None:
    """A pull_request event whose base and head are the merge commit's parents compares with the base."""
    _, c2, feature, merge = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), "HEAD", None, _event(c2, feature))
    assert (commits.baseline, commits.head) == (c2, merge)


@pytest.mark.parametrize("swap", ["base", "head", "both"])
def test_event_disagreeing_with_parents(git_repo: GitRepo, swap: str) -> None:
    """An event naming a different base or head than the merge commit's parents is event-mismatch."""
    c1, c2, feature, _ = _pr(git_repo)
    base, head = {"base": (c1, feature), "head": (c2, c1), "both": (feature, c2)}[swap]
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "HEAD", None, _event(base, head))
    assert info.value.row == "event-mismatch"
    assert info.value.exit_code == EXIT_PRECONDITION


def test_event_on_non_merge_checkout(git_repo: GitRepo) -> None:
    """A pull_request event with the head branch checked out (no merge commit) is event-mismatch."""
    c1, _, feature, _ = _pr(git_repo)
    git_repo.checkout("feature")
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "HEAD", None, _event(c1, feature))
    assert info.value.row == "event-mismatch"
    assert "refs/pull/N/merge" in info.value.fix


def test_merge_group_event(git_repo: GitRepo) -> None:
    """A merge_group checkout at the group's head compares against the group's base."""
    _, c2, _, merge = _pr(git_repo)
    commits = resolve_commits(Repo(git_repo.path), "HEAD", None, _event(c2, merge, "merge_group"))
    assert (commits.baseline, commits.head) == (c2, merge)


def test_merge_group_wrong_head(git_repo: GitRepo) -> None:
    """A merge_group event whose head is not the checked-out commit is event-mismatch."""
    _, c2, feature, _ = _pr(git_repo)
    with pytest.raises(GateError) as info:
        resolve_commits(Repo(git_repo.path), "HEAD", None, _event(c2, feature, "merge_group"))
    assert info.value.row == "event-mismatch"


def test_event_mismatch_through_cli(git_repo: GitRepo, tmp_path: Path, shared_dir: Path) -> None:
    """A real pull_request payload against an unrelated merge commit: exit 11, receipt row event-mismatch."""
    _pr(git_repo)
    event = sorted((shared_dir / "github-api" / "events").glob("pull_request.opened.*.json"))[0]
    code, receipt = _check(git_repo.path, tmp_path, "--event", str(event))
    assert code == EXIT_PRECONDITION
    assert receipt["decision"]["row"] == "event-mismatch"  # type: ignore[index]
    assert receipt["state"] == "final"
