"""Event payloads: every real GitHub payload in ../shared/github-api/events either parses or is a usage error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence_gate.action.event import load_event, parse_event
from evidence_gate.errors import EXIT_USAGE, GateError
from support import shared_data

EVENTS = shared_data.EVENTS


def _events(prefix: str) -> list[Path]:
    return sorted(EVENTS.glob(f"{prefix}.*.json"))


def test_payloads_are_present(shared_dir: Path) -> None:
    """The shared payloads exist, so the parametrized tests below are not vacuous."""
    assert _events("pull_request")
    assert _events("merge_group")
    assert _events("push")


@pytest.mark.parametrize("path", _events("pull_request"), ids=lambda p: p.name)
def test_pull_request_payloads_parse(path: Path) -> None:
    """A pull_request payload gives its base and head shas, the PR author and number."""
    payload = json.loads(path.read_text("utf-8"))
    ctx = load_event(path)
    pr = payload["pull_request"]
    assert ctx.event_name == "pull_request"
    assert ctx.base_sha == pr["base"]["sha"]
    assert ctx.head_sha == pr["head"]["sha"]
    assert ctx.check_sha == pr["head"]["sha"]
    assert ctx.author == pr["user"]["login"]
    assert ctx.number == pr["number"]
    assert ctx.repository == payload["repository"]["full_name"]


@pytest.mark.parametrize("path", _events("pull_request")[:1], ids=lambda p: p.name)
def test_pull_request_target_by_name(path: Path) -> None:
    """The same payload under the pull_request_target event name parses with that name."""
    ctx = load_event(path, "pull_request_target")
    assert ctx.event_name == "pull_request_target"


@pytest.mark.parametrize("path", _events("merge_group"), ids=lambda p: p.name)
def test_merge_group_payloads_parse(path: Path) -> None:
    """A merge_group payload names the group's base and head and no author (so it is scored)."""
    group = json.loads(path.read_text("utf-8"))["merge_group"]
    ctx = load_event(path)
    assert ctx.event_name == "merge_group"
    assert ctx.base_sha == group["base_sha"]
    assert ctx.head_sha == group["head_sha"]
    assert ctx.author is None


@pytest.mark.parametrize("path", _events("push"), ids=lambda p: p.name)
def test_push_payloads_are_usage_errors(path: Path) -> None:
    """A push has no pull request: a usage error (exit 2) that says which events to run on."""
    with pytest.raises(GateError) as info:
        load_event(path)
    assert info.value.exit_code == EXIT_USAGE
    assert "push" in info.value.message
    assert "pull_request" in info.value.fix


def test_bad_sha_is_event_mismatch() -> None:
    """A pull request whose head sha is not a hex object id is an event-mismatch precondition."""
    payload = {"pull_request": {"base": {"sha": "a" * 40}, "head": {"sha": "not-a-sha"}, "user": {"login": "x"}}}
    with pytest.raises(GateError) as info:
        parse_event(payload)
    assert info.value.row == "event-mismatch"


GOOD = {"base": {"sha": "a" * 40}, "head": {"sha": "b" * 40}}


@pytest.mark.parametrize(
    "payload",
    [
        {"pull_request": 3},
        {"pull_request": {"base": {"sha": "a" * 40}, "head": "b" * 40}},
        {"merge_group": ["x"]},
    ],
)
def test_wrongly_typed_sha_containers_are_event_mismatch(payload: dict[str, object]) -> None:
    """A pull_request/head/merge_group that is not a JSON object is a missing sha (event-mismatch), not a crash."""
    with pytest.raises(GateError) as info:
        parse_event(payload)
    assert info.value.row == "event-mismatch"


@pytest.mark.parametrize(
    "payload",
    [
        {"pull_request": GOOD, "repository": "owner/name"},
        {"pull_request": {**GOOD, "user": "someone", "head": {"sha": "b" * 40, "repo": 1}}},
        {"pull_request": {**GOOD, "user": {"login": 7}}, "repository": {"full_name": ["x"]}},
    ],
)
def test_wrongly_typed_optional_fields_read_as_absent(payload: dict[str, object]) -> None:
    """A user, repository or head repo of the wrong JSON type reads as absent (author None: scored)."""
    context = parse_event(payload)
    assert (context.author, context.repository) == (None, None)


@pytest.mark.parametrize("content", [b"[1, 2]", b"{not json", b'{"a": 1, "a": 2}'])
def test_unusable_files_are_usage_errors(tmp_path: Path, content: bytes) -> None:
    """A payload that is not a JSON object (or repeats a key) is a usage error, not a crash."""
    path = tmp_path / "event.json"
    path.write_bytes(content)
    with pytest.raises(GateError) as info:
        load_event(path)
    assert info.value.exit_code == EXIT_USAGE


def test_missing_file_is_usage_error(tmp_path: Path) -> None:
    """A missing event file is a usage error naming the option."""
    with pytest.raises(GateError) as info:
        load_event(tmp_path / "nope.json")
    assert info.value.exit_code == EXIT_USAGE
    assert "--event" in info.value.fix
