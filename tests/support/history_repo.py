"""A base branch whose freeze ledger grows, breaks, shrinks, moves and loses an object: the `history` case.

Commit dates are one day apart from 2026-09-01 (with a quiet fortnight in the middle), identities pinned, so every commit id (and the picture) is the same
on every run.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from support.repo_builder import PINNED_ENV, GitRepo

CONFIG = "version: 1\n"
MOVED_CONFIG = "version: 1\nfreeze:\n  file: ci/freeze.json\n"


def entry(n: int) -> str:
    """One YAML ledger entry, numbered."""
    return (
        f"  - id: flaky-{n}\n"
        f"    test: tests/test_net.py::test_case_{n}\n"
        '    assertion_hash: "e3b0c44298fc1c149afbf4c8996fb924"\n'
        '    added_at: "2026-09-01"\n'
        '    expires: "2026-09-14"\n'
        "    owner: humans\n"
    )


def ledger(count: int, max_entries: int = 6, max_bytes: int = 1500) -> str:
    """A YAML ledger of `count` entries under a budget."""
    body = "".join(entry(n) for n in range(1, count + 1)) or "  []\n"
    return f"version: 1\nbudget: {{max_entries: {max_entries}, max_bytes: {max_bytes}}}\nentries:\n{body}"


def json_ledger(count: int, max_entries: int) -> str:
    """A JSON ledger (`freeze.json` format) of `count` entries."""
    frozen = [
        {"id": f"tests/test_net.py::test_case_{n}", "added": "2026-09-01", "expires": "2026-09-14", "owner": "humans"}
        for n in range(1, count + 1)
    ]
    return json.dumps({"version": 1, "budget": {"max_entries": max_entries}, "frozen": frozen}, indent=1) + "\n"


class DatedRepo(GitRepo):
    """A GitRepo whose commits are a day apart."""

    day = 0

    def commit(self, message: str = "change", files: dict[str, str | bytes | None] | None = None) -> str:
        """Commit on the next day."""
        if files:
            self.write(files)
        self.git("add", "-A")
        self.day += 1
        when = f"2026-09-{self.day:02d}T12:00:00Z"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({**PINNED_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        subprocess.run(["git", "commit", "-q", "--allow-empty", "-m", message], cwd=self.path, env=env, check=True)
        return self.git("rev-parse", "HEAD")

    def merge(self, branch: str, message: str) -> str:
        """A --no-ff merge of `branch`, dated the next day."""
        self.day += 1
        when = f"2026-09-{self.day:02d}T12:00:00Z"
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update({**PINNED_ENV, "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when})
        subprocess.run(["git", "merge", "-q", "--no-ff", "-m", message, branch], cwd=self.path, env=env, check=True)
        return self.git("rev-parse", "HEAD")


def build(path: Path) -> tuple[DatedRepo, dict[str, str]]:
    """The repository and its notable commits by name (`garbled`, `lost`, the side branch's `side-peak`, and
    `proposed`: a pull request's head on branch `pr` that adds an entry after the tip)."""
    repo = DatedRepo(path)
    marks = {"start": repo.commit("project without a ledger", {".evidence-gate.yml": CONFIG, "README": "x\n"})}
    repo.commit("quarantine two flaky tests", {"freeze.yaml": ledger(2)})
    repo.commit("quarantine two more", {"freeze.yaml": ledger(4)})
    marks["garbled"] = repo.commit("a bad merge of the ledger", {"freeze.yaml": ledger(4) + "version: 1\n"})
    repo.commit("repair the ledger, one more entry", {"freeze.yaml": ledger(5)})
    repo.commit("tighten the budget", {"freeze.yaml": ledger(5, max_entries=5, max_bytes=1200)})
    repo.branch("side")
    marks["side-peak"] = repo.commit("side: nine entries", {"freeze.yaml": ledger(9, 9, 4000)})
    repo.commit("side: back to three", {"freeze.yaml": ledger(3, 5, 1200)})
    repo.checkout("main")
    marks["merge"] = repo.merge("side", "Merge the side branch: three tests fixed")
    repo.day += 14  # a quiet fortnight: the picture's time axis shows it as wide as it was
    repo.commit("an unrelated change", {"README": "y\n"})
    lost = ledger(2, max_entries=4, max_bytes=1200)
    marks["lost"] = repo.commit("two entries left", {"freeze.yaml": lost})
    repo.commit(
        "move the ledger to ci/freeze.json",
        {"freeze.yaml": None, ".evidence-gate.yml": MOVED_CONFIG, "ci/freeze.json": json_ledger(2, 4)},
    )
    repo.commit("one fixed", {"ci/freeze.json": json_ledger(1, 4)})
    marks["tip"] = repo.commit("ledger <empty> & \u202eevil", {"ci/freeze.json": json_ledger(0, 3)})
    repo.branch("pr")
    marks["proposed"] = repo.commit("quarantine one more", {"ci/freeze.json": json_ledger(1, 3)})
    repo.checkout("main")
    oid = repo.git("rev-parse", f"{marks['lost']}:freeze.yaml")
    (path / ".git" / "objects" / oid[:2] / oid[2:]).unlink()  # that commit's ledger blob is gone from the clone
    return repo, marks
