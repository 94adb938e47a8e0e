"""What a GitHub event payload says about the pull request: base, head, author and where to post the check."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evidence_gate.errors import GateError, InputInvalid
from evidence_gate.row_ids import EVENT_MISMATCH
from evidence_gate.strict_parse import load_json

SUPPORTED = ("pull_request", "pull_request_target", "merge_group")


@dataclass(frozen=True)
class EventContext:
    """The parts of an event the gate uses."""

    event_name: str
    base_sha: str
    head_sha: str  # the PR's head commit (pull_request) or the merge-group commit
    check_sha: str  # where the check run is posted: the PR head, never the test merge commit
    author: str | None  # None when the event does not name one (merge_group): scored, fail closed
    repository: str | None
    number: int | None


def _sha(value: Any, what: str) -> str:
    if not isinstance(value, str) or len(value) not in (40, 64) or any(c not in "0123456789abcdef" for c in value):
        raise GateError(
            f"the event payload has no valid {what}", fix="pass the runner's $GITHUB_EVENT_PATH", row=EVENT_MISMATCH
        )
    return value


def _obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a malformed payload is a missing field, not a crash."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _guess_name(payload: dict[str, Any]) -> str:
    if "merge_group" in payload:
        return "merge_group"
    if "pull_request" in payload:
        return "pull_request"
    if "pusher" in payload or ("ref" in payload and "before" in payload):
        return "push"
    return "unknown"


def parse_event(payload: Any, event_name: str | None = None) -> EventContext:
    """An EventContext from a payload; other events are a usage error naming the supported ones."""
    if not isinstance(payload, dict):
        raise GateError(
            "the event payload is not a JSON object", fix="pass the runner's $GITHUB_EVENT_PATH", usage=True
        )
    name = event_name or _guess_name(payload)
    if name not in SUPPORTED:
        raise GateError(
            f"evidence-gate judges pull requests; a {name!r} event has no pull request to judge",
            fix="run it on: pull_request (or merge_group for merge queues); see the README's workflow",
            usage=True,
        )
    repo = _text(_obj(payload.get("repository")).get("full_name"))
    if name == "merge_group":
        group = _obj(payload.get("merge_group"))
        head = _sha(group.get("head_sha"), "merge_group.head_sha")
        return EventContext(name, _sha(group.get("base_sha"), "merge_group.base_sha"), head, head, None, repo, None)
    pr = _obj(payload.get("pull_request"))
    head_sha = _sha(_obj(pr.get("head")).get("sha"), "pull_request.head.sha")
    base_sha = _sha(_obj(pr.get("base")).get("sha"), "pull_request.base.sha")
    login = _text(_obj(pr.get("user")).get("login"))
    number = pr.get("number") if isinstance(pr.get("number"), int) else None
    return EventContext(name, base_sha, head_sha, head_sha, login, repo, number)


def load_event(path: Path, event_name: str | None = None) -> EventContext:
    """Read and parse an event file."""
    try:
        payload = load_json(path.read_bytes())
    except OSError as exc:
        raise GateError(f"cannot read the event file {path}: {exc.strerror}", fix="check --event", usage=True) from exc
    except InputInvalid as exc:
        raise GateError(
            f"the event file {path} does not parse: {exc.message}", fix="check --event", usage=True
        ) from exc
    return parse_event(payload, event_name)
