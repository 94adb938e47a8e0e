"""Shared fixtures: real git repositories in temporary folders."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from fake_github import FakeGitHub
from fake_results_service import FakeResultsService, runtime_token
from repo_builder import GitRepo
from shared_data import SHARED


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    """An empty repository with a pinned identity."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout (or $EVIDENCE_GATE_SHARED): GitHub's schemas and real event payloads."""
    if not SHARED.is_dir():
        pytest.fail(f"{SHARED} is missing; lay shared/ beside the checkout, or build it with "
                    "scripts/github_api_data.py and set EVIDENCE_GATE_SHARED")
    return SHARED


@pytest.fixture
def github(shared_dir: Path) -> Iterator[FakeGitHub]:
    """A running fake GitHub API."""
    fake = FakeGitHub(shared_dir).start()
    yield fake
    fake.stop()
    assert fake.problems == [], fake.problems


@pytest.fixture
def results() -> Iterator[FakeResultsService]:
    """A running fake results service."""
    fake = FakeResultsService(runtime_token()).start()
    yield fake
    fake.stop()
    assert fake.state.problems == [], fake.state.problems
