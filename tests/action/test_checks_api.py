"""Check runs through the real PyGithub against a fake API that validates every body against GitHub's schema."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from evidence_gate.github import checks_api
from evidence_gate.github.checks_api import Annotation, ChecksClient, ChecksError, ChecksForbidden
from support.fake_github import FakeGitHub, Scripted

SHA = "a" * 40
WHEN = datetime(2026, 9, 1, 12, 0, tzinfo=UTC)


def client(fake: FakeGitHub, sleeps: list[float]) -> ChecksClient:
    """A client whose sleeps are recorded instead of slept."""
    return ChecksClient("t0ken", fake.url, "octo/repo", sleep=sleeps.append, clock=lambda: 1_000_000.0)


def test_start_creates_in_progress_run_on_the_given_sha(github: FakeGitHub) -> None:
    """The first start creates one in_progress check run with the external id, authenticated with the token."""
    ext = checks_api.external_id("octo/repo", SHA, "evidence-gate")
    run_id = client(github, []).start("evidence-gate", SHA, ext, WHEN, "https://example/run/1")
    run = github.runs[run_id]
    assert (run["status"], run["head_sha"], run["external_id"]) == ("in_progress", SHA, ext)
    post = github.calls("POST")[0]
    assert post.auth in {"token t0ken", "Bearer t0ken"}
    assert post.body["started_at"] == "2026-09-01T12:00:00Z"


def test_annotations_above_50_are_sent_in_batches(github: FakeGitHub) -> None:
    """120 annotations go out as 50 with the completion and 50 + 20 in two more updates, all kept by the server."""
    c = client(github, [])
    run_id = c.start("evidence-gate", SHA, "ext", WHEN, None)
    notes = [Annotation(f"fixtures/f{i}.txt", i + 1, f"changed {i}", "evidence-gate") for i in range(120)]
    sent = c.complete(run_id, "failure", "evidence-path-edited: Locked evidence touched", "summary", notes, WHEN)
    patches = github.calls("PATCH")
    assert sent == 3
    assert [len(p.body["output"].get("annotations", [])) for p in patches] == [50, 50, 20]
    assert patches[0].body["conclusion"] == "failure"
    assert [a["path"] for a in github.annotations[run_id]] == [f"fixtures/f{i}.txt" for i in range(120)]
    assert github.runs[run_id]["status"] == "completed"


def test_rerun_updates_its_own_check_run(github: FakeGitHub) -> None:
    """A second start with the same external id PATCHes the existing run instead of creating a duplicate."""
    ext = checks_api.external_id("octo/repo", SHA, "evidence-gate")
    first = client(github, []).start("evidence-gate", SHA, ext, WHEN, None)
    client(github, []).complete(first, "success", "pass: All clear", "ok", [], WHEN)
    # Another tool's run with the same name but another external id must not be taken over.
    github.runs[first + 50] = {**github.runs[first], "id": first + 50, "external_id": "someone-else"}
    github.annotations[first + 50] = []
    second = client(github, []).start("evidence-gate", SHA, ext, WHEN, None)
    assert second == first
    assert len(github.calls("POST")) == 1
    assert github.runs[first]["status"] == "in_progress"
    assert github.runs[first]["conclusion"] is None


def test_external_id_is_stable_and_distinct() -> None:
    """The external id depends on repository, sha and check name only."""
    a = checks_api.external_id("o/r", SHA, "evidence-gate")
    assert a == checks_api.external_id("o/r", SHA, "evidence-gate")
    assert (
        len(
            {
                a,
                checks_api.external_id("o/r", "b" * 40, "evidence-gate"),
                checks_api.external_id("o/r", SHA, "other"),
                checks_api.external_id("o/s", SHA, "evidence-gate"),
            }
        )
        == 4
    )


def test_retries_502_502_then_created(github: FakeGitHub) -> None:
    """Two 502s on create are retried after 1 s and 2 s; the third attempt creates the run."""
    github.fail("POST", Scripted(502), Scripted(502))
    sleeps: list[float] = []
    run_id = client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert [r.status for r in github.calls("POST")] == [502, 502, 201]
    assert sleeps == [1.0, 2.0]
    assert run_id in github.runs


def test_429_honours_retry_after(github: FakeGitHub) -> None:
    """A 429 with Retry-After: 7 waits exactly 7 s before the retry."""
    github.fail("PATCH", Scripted(429, {"Retry-After": "7"}))
    sleeps: list[float] = []
    c = client(github, sleeps)
    run_id = c.start("evidence-gate", SHA, "ext", WHEN, None)
    c.complete(run_id, "success", "pass: All clear", "ok", [], WHEN)
    assert sleeps == [7.0]
    assert [r.status for r in github.calls("PATCH")] == [429, 200]


def test_rate_limit_403_waits_for_the_reset(github: FakeGitHub) -> None:
    """A primary rate-limit 403 (remaining 0) waits until x-ratelimit-reset, then succeeds."""
    github.fail(
        "POST",
        Scripted(
            403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000012"}, {"message": "API rate limit exceeded"}
        ),
    )
    sleeps: list[float] = []
    client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert sleeps == [12.0]
    assert [r.status for r in github.calls("POST")] == [403, 201]


def test_secondary_rate_limit_403_waits_a_minute(github: FakeGitHub) -> None:
    """A secondary rate-limit 403 without headers is retried after 60 s, not taken for a missing permission."""
    github.fail("POST", Scripted(403, {}, {"message": "You have exceeded a secondary rate limit. Please wait."}))
    sleeps: list[float] = []
    client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert sleeps == [60.0]
    assert [r.status for r in github.calls("POST")] == [403, 201]


def test_422_is_never_retried(github: FakeGitHub) -> None:
    """A 422 fails at once with one request and no sleep."""
    github.fail("POST", Scripted(422, {}, {"message": "Validation Failed"}))
    sleeps: list[float] = []
    with pytest.raises(ChecksError) as info:
        client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert info.value.status == 422
    assert not isinstance(info.value, ChecksForbidden)
    assert len(github.calls("POST")) == 1
    assert sleeps == []


def test_403_on_create_is_forbidden_not_retried(github: FakeGitHub) -> None:
    """A plain 403 (fork PR, read-only token) raises ChecksForbidden after one request."""
    github.fail("POST", Scripted(403, {}, {"message": "Resource not accessible by integration"}))
    sleeps: list[float] = []
    with pytest.raises(ChecksForbidden):
        client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert len(github.calls("POST")) == 1
    assert sleeps == []


def test_persistent_5xx_gives_up_after_the_schedule(github: FakeGitHub) -> None:
    """Five 503s in a row end in ChecksError after waits of 1, 2, 4 and 8 s."""
    github.fail("POST", *[Scripted(503)] * 5)
    sleeps: list[float] = []
    with pytest.raises(ChecksError) as info:
        client(github, sleeps).start("evidence-gate", SHA, "ext", WHEN, None)
    assert info.value.status == 503
    assert sleeps == [1.0, 2.0, 4.0, 8.0]


def test_enterprise_api_url_with_a_path_prefix(shared_dir: Path) -> None:
    """Against GITHUB_API_URL=https://host/api/v3 (GHES) every request, including the listing, keeps the prefix."""
    fake = FakeGitHub(shared_dir, prefix="/api/v3").start()
    try:
        c = ChecksClient("t0ken", fake.url, "octo/repo", sleep=lambda _s: None)
        run_id = c.start("evidence-gate", SHA, "ext", WHEN, None)
        c.complete(run_id, "success", "pass: All clear", "ok", [Annotation("a.py", 1, "m", "t")], WHEN)
        assert c.start("evidence-gate", SHA, "ext", WHEN, None) == run_id
        assert [r.method for r in fake.requests].count("POST") == 1
        assert len(fake.calls("PATCH")) == 2
    finally:
        fake.stop()
    assert fake.problems == []
