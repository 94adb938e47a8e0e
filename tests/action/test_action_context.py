"""The action's reading of its context: every real event payload, both input spellings, usage errors."""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path

import pytest

from evidence_gate.action import inputs as action_inputs
from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_PRECONDITION, EXIT_USAGE, GateError
from support import shared_data
from support.action_env import outputs, runner_env
from support.fake_github import FakeGitHub
from support.repo_builder import GitRepo

EVENTS = sorted(shared_data.EVENTS.glob("*.json"))


def test_every_kind_of_payload_is_present(shared_dir: Path) -> None:
    """The shared payloads include pull_request, merge_group and push, so the test below covers each."""
    kinds = {p.name.split(".")[0] for p in EVENTS}
    assert kinds == {"pull_request", "merge_group", "push"}


@pytest.mark.parametrize("event", EVENTS, ids=lambda p: p.name)
def test_payload_decides_where_the_check_goes(event: Path, tmp_path: Path, github: FakeGitHub) -> None:
    """PR payloads post on the PR head, merge_group on the group head; push is a usage error with no check run."""
    kind = event.name.split(".")[0]
    payload = json.loads(event.read_text("utf-8"))
    workspace = GitRepo(tmp_path / "ws").path  # no commits: the gate itself stops at history-missing
    env = runner_env(tmp_path, workspace, event, github.url, upload_artifact="false")
    env["GITHUB_EVENT_NAME"] = kind
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    if kind == "push":
        assert code == EXIT_USAGE
        assert out.getvalue().startswith("::error::evidence-gate judges pull requests; a 'push' event")
        assert github.requests == []
        assert "usage error" in (tmp_path / "summary.md").read_text()
        return
    expected = payload["pull_request"]["head"]["sha"] if kind == "pull_request" else payload["merge_group"]["head_sha"]
    assert code == EXIT_PRECONDITION
    (run,) = github.runs.values()
    assert run["head_sha"] == expected
    assert run["conclusion"] == "failure"
    assert outputs(tmp_path / "output")["row"] == "history-missing"


def test_inputs_read_under_both_spellings() -> None:
    """INPUT_CHECK-NAME and INPUT_CHECK_NAME both set the input; defaults fill the rest."""
    dashed = action_inputs.read_inputs({"INPUT_CHECK-NAME": "gate-a", "INPUT_RUN-PROPERTIES": "false"})
    underscored = action_inputs.read_inputs(
        {"INPUT_CHECK_NAME": "gate-b", "INPUT_UPLOAD_ARTIFACT": "false", "INPUT_TODAY": "2026-09-10"}
    )
    assert (dashed.check_name, dashed.run, dashed.upload) == ("gate-a", False, True)
    assert (underscored.check_name, underscored.upload, underscored.today) == ("gate-b", False, date(2026, 9, 10))
    defaults = action_inputs.read_inputs({})
    assert (defaults.check_name, defaults.artifact_name, defaults.receipt_path, defaults.today) == (
        "evidence-gate",
        "evidence-gate-receipt",
        "receipt.json",
        None,
    )


@pytest.mark.parametrize(
    ("key", "value"), [("INPUT_RUN-PROPERTIES", "maybe"), ("INPUT_TODAY", "10/09/2026"), ("INPUT_CHECK-NAME", "a\nb")]
)
def test_malformed_inputs_are_usage_errors(key: str, value: str) -> None:
    """A malformed input is a usage error naming the input."""
    with pytest.raises(GateError) as info:
        action_inputs.read_inputs({key: value})
    assert info.value.usage


def test_missing_event_path_is_a_usage_error(tmp_path: Path) -> None:
    """Outside a runner (no GITHUB_EVENT_PATH) the action exits 2 with an escaped ::error:: line."""
    out = io.StringIO()
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "s.md"), "GITHUB_WORKSPACE": str(tmp_path)}
    assert action.main(env, stdout=out) == EXIT_USAGE
    assert out.getvalue().startswith("::error::GITHUB_EVENT_PATH is not set")
    assert (tmp_path / "receipt.json").is_file() and (tmp_path / "receipt.sarif").is_file()
