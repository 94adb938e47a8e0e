"""Shared fixtures: real git repositories in temporary folders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from repo_builder import GitRepo

SHARED = Path(__file__).resolve().parents[1].parent / "shared"


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    """An empty repository with a pinned identity."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout: GitHub's schemas and real event payloads."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing; CI lays shared/ beside the checkout")
    return SHARED
