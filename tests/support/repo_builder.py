"""Real git repositories for tests: pinned identity and dates, built in a temporary folder."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

PINNED_ENV = {
    "GIT_AUTHOR_NAME": "Test Author",
    "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Committer",
    "GIT_COMMITTER_EMAIL": "committer@example.com",
    "GIT_AUTHOR_DATE": "2026-09-01T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-09-01T12:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}


class GitRepo:
    """A throw-away repository with helpers to write files and commit them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")
        self.git("config", "core.autocrlf", "false")
        self.git("config", "core.symlinks", "true")

    def git(self, *args: str, input: bytes | None = None) -> str:
        """Run git with the pinned identity; return stdout."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        env.update(PINNED_ENV)
        proc = subprocess.run(["git", *args], cwd=self.path, env=env, input=input, capture_output=True, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.decode(errors='replace')}")
        return proc.stdout.decode("utf-8", "surrogateescape").strip()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        """Write (or, for None, delete) files relative to the repository root."""
        for rel, content in files.items():
            target = self.path / rel
            if content is None:
                if target.is_symlink() or target.is_file():
                    target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.is_symlink():
                target.unlink()
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")

    def commit(self, message: str = "change", files: dict[str, str | bytes | None] | None = None) -> str:
        """Stage everything (including deletions) and commit; return the commit id."""
        if files:
            self.write(files)
        self.git("add", "-A")
        self.git("commit", "-q", "--allow-empty", "-m", message)
        return self.git("rev-parse", "HEAD")

    def branch(self, name: str, start: str = "HEAD") -> None:
        """Create and switch to a branch."""
        self.git("checkout", "-q", "-b", name, start)

    def checkout(self, rev: str) -> None:
        """Switch to a branch or commit."""
        self.git("checkout", "-q", rev)

    def merge_ref(self, base: str, head: str) -> str:
        """A merge commit of head into base, like GitHub's refs/pull/N/merge; leaves HEAD detached on it."""
        self.git("checkout", "-q", "--detach", base)
        self.git("merge", "-q", "--no-ff", "--no-edit", head)
        return self.git("rev-parse", "HEAD")
