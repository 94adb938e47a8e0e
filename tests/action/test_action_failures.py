"""The action's failure paths and its newer inputs, end to end in-process: a real repository and event, the fake
GitHub on 127.0.0.1. Every failure ends in a failing check run (or the fallback), a receipt, outputs and a fix."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import gate
from evidence_gate.action import inputs as action_inputs
from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL, EXIT_INTERNAL, EXIT_PASS, EXIT_PRECONDITION, EXIT_USAGE
from evidence_gate.lanes.properties import lane as property_lane
from evidence_gate.lanes.properties.plan import DynamicRequest
from support.action_env import FIXTURES, PullRequest, outputs, pull_request, runner_env
from support.fake_github import FakeGitHub, Scripted, row_of


def run_action(env: dict[str, str]) -> tuple[int, str]:
    """Run the action with no real sleeps; its exit code and what it printed."""
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    return code, out.getvalue()


def _env(tmp_path: Path, pr: PullRequest, github: FakeGitHub, **inputs: str) -> dict[str, str]:
    return runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false", **inputs)


def _receipt(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text("utf-8"))
    assert isinstance(data, dict)
    return data


def _failed_run(github: FakeGitHub) -> dict[str, Any]:
    (run,) = github.runs.values()
    assert (run["status"], run["conclusion"]) == ("completed", "failure"), run
    assert github.problems == [], github.problems
    return run


def test_a_crash_inside_the_gate_names_where_and_the_fix(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A lane raising a bare AssertionError: failing check run whose summary says the lanes did not finish, an
    error with a reason and the bug-report fix (not a checkout fix), `row: aborted` and exit 1."""

    def boom(*_args: object) -> None:
        raise AssertionError

    monkeypatch.setattr(gate.fixtures, "check_records", boom)
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github))
    assert code == EXIT_INTERNAL, printed
    run = _failed_run(github)
    summary = run["output"]["summary"]
    fixtures_lane = [line for line in summary.splitlines() if "Fixtures" in line]
    assert fixtures_lane and not any(word in line for line in fixtures_lane for word in ("clear", "pass")), summary
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert receipt["state"] == "aborted"
    first = receipt["errors"][0]
    assert "AssertionError: (no message) at test_action_failures.py:" in first and "in boom" in first, first
    assert gate.CRASH_FIX in first and "checkout" not in first
    assert printed.startswith("::error::internal error: AssertionError"), printed
    out = outputs(tmp_path / "output")
    assert (out["row"], out["decision"], out["conclusion"], out["ok"]) == ("aborted", "fail", "failure", "false")
    assert out["title"] == run["output"]["title"] == "Gate crashed: nothing was scored"


def test_an_exception_before_the_gate_starts_is_a_failing_verdict(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No git on PATH: ensure_history fails before the gate; a failing check run, a receipt naming the fix."""
    pr = pull_request(tmp_path, shared_dir)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    code, printed = run_action(_env(tmp_path, pr, github))
    assert code == EXIT_INTERNAL, printed
    run = _failed_run(github)
    assert "git is not installed" in run["output"]["summary"]
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert receipt["state"] == "aborted" and "install git" in receipt["errors"][0]
    assert outputs(tmp_path / "output")["row"] == "aborted"
    assert "Traceback" not in printed


def test_an_unexpected_error_in_ensure_history_is_reported(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Any exception before the gate is recorded like the gate's own crashes, with a traceback in the receipt."""

    def broken(*_args: object) -> list[str]:
        raise OSError(13, "Permission denied", "/github/workspace/.git/shallow")

    monkeypatch.setattr(action, "ensure_history", broken)
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github))
    assert code == EXIT_INTERNAL, printed
    _failed_run(github)
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert "on /github/workspace/.git/shallow: Permission denied" in receipt["errors"][0]
    assert "uid" in receipt["errors"][0] and receipt["errors"][1].startswith("Traceback")


def test_an_unwritable_receipt_path_falls_back_to_runner_temp(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """receipt-path under a file (not a folder): the receipt goes to $RUNNER_TEMP, a warning and the output say
    where, and the verdict is posted as usual."""
    pr = pull_request(tmp_path, shared_dir)
    (pr.repo.path / "blocker").write_text("a file, not a folder\n")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = _env(tmp_path, pr, github, receipt_path="blocker/receipt.json")
    env["RUNNER_TEMP"] = str(temp)
    code, printed = run_action(env)
    assert code == EXIT_FAIL, printed
    fallback = temp / "evidence-gate" / "receipt.json"
    assert _receipt(fallback)["decision"]["row"] == "evidence-path-edited"
    assert outputs(tmp_path / "output")["receipt-path"] == str(fallback)
    (warning,) = [line for line in printed.splitlines() if "cannot write the receipt" in line]
    assert warning.startswith("::warning::") and str(fallback) in warning and "runner.temp" in warning
    assert row_of(_failed_run(github)) == "evidence-path-edited"


def test_a_usage_error_still_posts_a_failing_check_and_writes_outputs(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """A malformed input once the event is known: exit 2, a failing check run naming the input, every output."""
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github, fail_on="sometimes"))
    assert code == EXIT_USAGE, printed
    run = _failed_run(github)
    assert "fail-on" in run["output"]["summary"]
    out = outputs(tmp_path / "output")
    assert (out["row"], out["decision"], out["findings"], out["finding-counts"]) == ("aborted", "fail", "0", "{}")
    assert "fail-on: failure" in _receipt(pr.repo.path / "receipt.json")["errors"][0]


def test_fail_on_never_reports_without_failing_the_step(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """`fail-on: never`: exit 0, while the check run and the outputs keep the failing verdict."""
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github, fail_on="never"))
    assert code == EXIT_PASS, printed
    assert row_of(_failed_run(github)) == "evidence-path-edited"
    out = outputs(tmp_path / "output")
    assert (out["decision"], out["row"], out["conclusion"]) == ("fail", "evidence-path-edited", "failure")


def test_max_annotations_caps_the_check_run_and_the_fallback(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """`max-annotations: 7`: seven annotations, one warning counting the rest; the summary still lists all 60."""
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github, max_annotations="7"))
    assert code == EXIT_FAIL
    ((run_id, run),) = github.runs.items()
    assert len(github.annotations[run_id]) == 7
    assert len([x for x in printed.splitlines() if x.startswith("::warning::53 of 60 annotations were left out")]) == 1
    assert "fixtures/f59.txt" in run["output"]["text"]
    assert outputs(tmp_path / "output")["findings"] == str(FIXTURES)


def test_max_annotations_caps_the_workflow_command_fallback(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """With a read-only token the `::error` lines are capped the same way."""
    github.fail("POST", Scripted(403, {}, {"message": "Resource not accessible by integration"}))
    pr = pull_request(tmp_path, shared_dir)
    _, printed = run_action(_env(tmp_path, pr, github, max_annotations="3"))
    assert len([x for x in printed.splitlines() if x.startswith("::error file=")]) == 3


@pytest.mark.parametrize("value", ["-1", "many", "10001"])
def test_max_annotations_must_be_a_bounded_count(value: str) -> None:
    """A negative, non-numeric or huge max-annotations is a usage error naming the input."""
    with pytest.raises(action.GateError) as info:
        action_inputs.read_inputs({"INPUT_MAX-ANNOTATIONS": value})
    assert info.value.usage and "max-annotations" in str(info.value)


def test_job_summary_off_leaves_the_summary_to_the_check_run(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """`job-summary: false`: nothing appended to $GITHUB_STEP_SUMMARY; the check run still has the report."""
    pr = pull_request(tmp_path, shared_dir)
    assert run_action(_env(tmp_path, pr, github, job_summary="false"))[0] == EXIT_FAIL
    assert not (tmp_path / "summary.md").exists()
    assert "fixtures/f00.txt" in _failed_run(github)["output"]["text"]


def test_working_directory_judges_a_checkout_made_with_path(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """The checkout at `<workspace>/src-repo` (actions/checkout `path:`): judged there, receipt at the workspace."""
    pr = pull_request(tmp_path, shared_dir)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    shutil.move(pr.repo.path, workspace / "src-repo")
    env = runner_env(tmp_path, workspace, pr.event, github.url, upload_artifact="false", working_directory="src-repo")
    code, printed = run_action(env)
    assert code == EXIT_FAIL, printed
    assert _receipt(workspace / "receipt.json")["decision"]["row"] == "evidence-path-edited"
    assert _failed_run(github)["head_sha"] == pr.head


@pytest.mark.parametrize("folder", ["../elsewhere", "/etc", "missing"])
def test_working_directory_outside_the_workspace_is_a_usage_error(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, folder: str
) -> None:
    """A working-directory that leaves the workspace or does not exist: exit 2 and a failing check run."""
    pr = pull_request(tmp_path, shared_dir)
    (tmp_path / "elsewhere").mkdir()
    code, printed = run_action(_env(tmp_path, pr, github, working_directory=folder))
    assert code == EXIT_USAGE, printed
    assert "working-directory" in _failed_run(github)["output"]["summary"]
    assert outputs(tmp_path / "output")["row"] == "aborted"


def _target_env(tmp_path: Path, pr: PullRequest, github: FakeGitHub, **inputs: str) -> dict[str, str]:
    env = _env(tmp_path, pr, github, run_properties="true", **inputs)
    env["GITHUB_EVENT_NAME"] = "pull_request_target"
    return env


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    calls: list[object] = []
    real = property_lane.run

    def spy(request: DynamicRequest) -> Any:
        calls.append(request)
        return real(request)

    monkeypatch.setattr(property_lane, "run", spy)
    return calls


def test_pull_request_target_refuses_to_run_the_pr_code(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pull_request_target on the PR's merge commit: the property lane never starts, the verdict fails with
    run-integrity, and one warning explains the risk, the safe pattern and the opt-in."""
    calls = _spy(monkeypatch)
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    code, printed = run_action(_target_env(tmp_path, pr, github))
    assert calls == []
    assert code == EXIT_FAIL, printed
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert receipt["decision"]["row"] == "run-integrity"
    assert "pull_request_target" in receipt["properties"]["skipped"]
    warnings = [x for x in printed.splitlines() if x.startswith("::warning::pull_request_target")]
    assert len(warnings) == 1, printed
    assert "on: pull_request" in warnings[0] and "mode: publish" in warnings[0]
    assert action_inputs.UNSAFE_INPUT in warnings[0]
    assert "refs/pull" not in printed
    _failed_run(github)


def test_pull_request_target_with_the_opt_in_runs_and_warns(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`unsafe-run-pr-code-with-write-token: true`: the property lane runs, under one warning naming the risk."""
    calls = _spy(monkeypatch)
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    env = _target_env(tmp_path, pr, github, unsafe_run_pr_code_with_write_token="true")
    code, printed = run_action(env)
    assert len(calls) == 1, printed
    warnings = [x for x in printed.splitlines() if x.startswith("::warning::") and "write token" in x]
    assert len(warnings) == 1 and "secrets" in warnings[0]
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert (code, receipt["decision"]["row"]) == (EXIT_PASS, "pass"), receipt["violations"]
    assert "skipped" not in receipt["properties"]


def test_pull_request_target_on_the_base_checkout_never_advises_checking_out_the_pr(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """checkout's default under pull_request_target is the base branch: event-mismatch, and the fix is the safe
    pattern, never "check out refs/pull/N/merge"."""
    pr = pull_request(tmp_path, shared_dir)
    pr.repo.git("checkout", "-q", "--detach", pr.base)
    code, printed = run_action(_target_env(tmp_path, pr, github))
    assert code == EXIT_PRECONDITION, printed
    (violation,) = _receipt(pr.repo.path / "receipt.json")["violations"]
    assert violation["row"] == "event-mismatch"
    assert "refs/pull" not in violation["message"] and "`pull_request`" in violation["message"]
    assert "mode: publish" in violation["message"]
    assert "refs/pull" not in _failed_run(github)["output"]["summary"]


def test_pull_request_target_static_only_warns_without_failing(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run-properties: false` under pull_request_target: nothing to refuse, an honest PR passes, one warning."""
    calls = _spy(monkeypatch)
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    env = _target_env(tmp_path, pr, github)
    env["INPUT_RUN-PROPERTIES"] = "false"
    code, printed = run_action(env)
    assert (code, calls) == (EXIT_PASS, []), printed
    warnings = [x for x in printed.splitlines() if x.startswith("::warning::pull_request_target")]
    assert len(warnings) == 1 and "executes nothing" in warnings[0] and "mode: publish" in warnings[0]


def test_a_receipt_path_the_patch_made_a_folder_falls_back(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """The patch commits `receipt.json/` as a folder so the receipt cannot be written: the verdict on the patch is
    still posted, and the receipt goes to the runner's temp folder (a trick kept as a test)."""
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    pr.repo.checkout("pr")
    head = pr.repo.commit("plant a folder where the receipt goes", {"receipt.json/keep": "x\n"})
    payload = json.loads(pr.event.read_text())
    payload["pull_request"]["head"]["sha"] = head
    pr.event.write_text(json.dumps(payload))
    pr.repo.merge_ref(pr.base, head)
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = _env(tmp_path, pr, github)
    env["RUNNER_TEMP"] = str(temp)
    code, printed = run_action(env)
    assert code == EXIT_PASS, printed
    assert _receipt(temp / "evidence-gate" / "receipt.json")["git"]["head"] == pr.repo.git("rev-parse", "HEAD")
    assert "cannot write the receipt at receipt.json" in printed
    (run,) = github.runs.values()
    assert run["conclusion"] == "success"


def test_a_failure_outside_the_gate_still_names_the_fix_and_writes_outputs(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report itself raising (after the gate decided): one ::error line with the cause, outputs, exit 1."""

    def broken(_receipt: dict[str, Any], **_context: Any) -> str:  # the action passes the delta by name
        raise ValueError("renderer exploded")

    monkeypatch.setattr(action, "render_text", broken)
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(_env(tmp_path, pr, github))
    assert code == EXIT_INTERNAL
    assert printed.splitlines()[-1].startswith("::error::internal error: ValueError: renderer exploded at ")
    assert gate.CRASH_FIX.split(":")[0] in printed
    run = _failed_run(github)  # completed, not left in_progress
    assert "renderer exploded" in run["output"]["summary"]
    out = outputs(tmp_path / "output")
    assert (out["row"], out["check-run-id"]) == ("aborted", str(run["id"]))
    assert "renderer exploded" in (tmp_path / "summary.md").read_text()


def test_a_push_event_is_a_usage_error_with_outputs_and_a_receipt(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """An event without a pull request: nothing to post a check run on, yet a receipt and every output."""
    pr = pull_request(tmp_path, shared_dir)
    push = shared_dir / "github-api" / "events" / "push.default.1.json"
    env = runner_env(tmp_path, pr.repo.path, push, github.url, upload_artifact="false")
    env["GITHUB_EVENT_NAME"] = "push"
    code, printed = run_action(env)
    assert code == EXIT_USAGE, printed
    assert github.requests == []
    out = outputs(tmp_path / "output")
    assert set(out) == set(action.outputs_of({}, ""))
    assert (out["row"], out["conclusion"], out["check-run-id"]) == ("aborted", "failure", "")
    receipt = _receipt(pr.repo.path / "receipt.json")
    assert receipt["state"] == "aborted" and "pull_request" in receipt["errors"][0]


def test_a_receipt_path_under_runner_temp_maps_to_the_containers_mount(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`receipt-path: ${{ runner.temp }}/r.json` names the host's folder; in the container it is the mount, and
    the output keeps the host path later steps use."""
    mount = tmp_path / "github-runner-temp"
    mount.mkdir()
    monkeypatch.setattr(action, "TEMP_MOUNT", mount)
    host = "/home/runner/work/_temp"  # what the runner passes as RUNNER_TEMP: not a folder inside the container
    pr = pull_request(tmp_path, shared_dir)
    env = _env(tmp_path, pr, github, receipt_path=f"{host}/gate/r.json")
    env["RUNNER_TEMP"] = host
    code, printed = run_action(env)
    assert code == EXIT_FAIL, printed
    assert _receipt(mount / "gate" / "r.json")["decision"]["row"] == "evidence-path-edited"
    assert outputs(tmp_path / "output")["receipt-path"] == f"{host}/gate/r.json"
    assert "cannot write the receipt" not in printed


@pytest.mark.parametrize("usage", [True, False])
def test_an_unwritable_step_summary_is_a_warning_not_another_exit_code(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, usage: bool
) -> None:
    """$GITHUB_STEP_SUMMARY that cannot be appended to (here a folder): a usage error still exits 2, a verdict keeps
    its code, every output is still written, and a `::warning::` names the file and the fix."""
    pr = pull_request(tmp_path, shared_dir)
    env = _env(tmp_path, pr, github, **({"fail_on": "sometimes"} if usage else {}))
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path)
    code, printed = run_action(env)
    assert code == (EXIT_USAGE if usage else EXIT_FAIL), printed
    out = outputs(tmp_path / "output")
    assert out["row"] == ("aborted" if usage else "evidence-path-edited"), out
    (warning,) = [line for line in printed.splitlines() if "GITHUB_STEP_SUMMARY" in line]
    assert warning.startswith("::warning::") and str(tmp_path) in warning, warning
    assert _failed_run(github)["output"]["summary"]
