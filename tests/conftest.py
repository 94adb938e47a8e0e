"""Shared fixtures: real git repositories in temporary folders."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

from support.container_engine import IMAGE, Engine, EngineUnavailable, build_image, find_engine
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService, runtime_token
from support.repo_builder import GitRepo
from support.shared_data import SHARED

# The suite's own properties judge results, not speed: on 2 shared cores an example can take 250 ms, and a
# deadline then fails a correct test (seen: test_any_history_draws_a_well_formed_picture at load 15).
settings.register_profile("evidence-gate-tests", deadline=None)
settings.load_profile("evidence-gate-tests")

# The kind of a test is its folder: `unit` (pure: values in, values out, real git but no sealed run and no
# container), `sealed` (runs code in the sealed run), `action` (the GitHub Action, its network edges, containers
# and act). `./dev test -m unit` is the fast lane.
KINDS = ("unit", "sealed", "action")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test with the kind of the folder it lives in."""
    tests = Path(__file__).parent
    for item in items:
        parts = item.path.relative_to(tests).parts if item.path.is_relative_to(tests) else ()
        if parts and parts[0] in KINDS:
            item.add_marker(getattr(pytest.mark, parts[0]))


@pytest.fixture
def git_repo(tmp_path: Path) -> GitRepo:
    """An empty repository with a pinned identity."""
    return GitRepo(tmp_path / "repo")


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """`../shared` beside the checkout (or $EVIDENCE_GATE_SHARED): GitHub's schemas and real event payloads."""
    if not SHARED.is_dir():
        pytest.fail(
            f"{SHARED} is missing; lay shared/ beside the checkout, or build it with "
            "scripts/github_api_data.py and set EVIDENCE_GATE_SHARED"
        )
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


@pytest.fixture(scope="session")
def engine() -> Engine:
    """docker or podman; in CI a missing engine fails the suite, locally it skips the container tests."""
    found = find_engine()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but neither docker nor podman is installed; ./dev test installs podman")
        pytest.skip("neither docker nor podman is installed")
    return found


@pytest.fixture(scope="session")
def image(engine: Engine) -> str:
    """The action's image (EVIDENCE_GATE_TEST_IMAGE), built once per session (podman: a cached debootstrap base)."""
    try:
        build_image(engine)
    except (EngineUnavailable, RuntimeError) as exc:
        pytest.fail(f"the action's image could not be built with {engine.name}: {exc}")
    return IMAGE


@pytest.fixture
def servers(shared_dir: Path) -> Iterator[tuple[FakeGitHub, FakeResultsService]]:
    """The fake check-runs API and results service on 127.0.0.1, for a container that reaches them over the host
    network; every request they saw must have been valid."""
    github = FakeGitHub(shared_dir).start()
    results = FakeResultsService(runtime_token()).start()
    yield github, results
    github.stop()
    results.stop()
    assert github.problems == [] and results.state.problems == [], (github.problems, results.state.problems)
