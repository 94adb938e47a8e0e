"""`action.main` end to end: a real repository with a merge commit, a real event payload, fake GitHub and results
service on 127.0.0.1; checks the check run, its annotations, the outputs, the summary and the uploaded receipt."""

from __future__ import annotations

import hashlib
import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS, EXIT_PRECONDITION
from evidence_gate.report import attestation
from support.action_env import FIXTURES, outputs, pull_request, runner_env
from support.fake_github import FakeGitHub, Scripted
from support.fake_results_service import FakeResultsService
from support.repo_builder import GitRepo


def run_action(env: dict[str, str]) -> tuple[int, str]:
    """Run the action with recorded sleeps; return its exit code and what it printed."""
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    return code, out.getvalue()


def test_tampering_pr_fails_with_check_run_annotations_outputs_and_artifact(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """A PR rewriting 60 fixtures: failure on the PR head, 60 annotations in 2 updates, outputs, receipt uploaded."""
    pr = pull_request(tmp_path, shared_dir)
    env = runner_env(tmp_path, pr.repo.path, pr.event, github.url, artifact_name="gate-receipt")
    env.update({"ACTIONS_RUNTIME_TOKEN": results.token, "ACTIONS_RESULTS_URL": results.url})
    code, printed = run_action(env)
    assert code == EXIT_FAIL, printed
    ((run_id, run),) = github.runs.items()
    assert run["head_sha"] == pr.head != pr.merge
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert run["output"]["title"] == "Fail: 60 locked paths touched"
    assert run["output"]["summary"].startswith("❌ **Fail**: Locked evidence touched")
    assert "- ❌ **Locked evidence** — 60 paths touched" in run["output"]["summary"]
    assert "(https://github.example/octo/repo/actions/runs/99/artifacts/4242)" in run["output"]["summary"].replace(
        "<", "("
    ).replace(">", ")")
    text = run["output"]["text"]
    assert "### Every finding (60)" in text and pr.merge[:12] in text  # the identities line: 12-digit prefixes
    assert f"/blob/{pr.head}/fixtures/" in text and f"/blob/{pr.merge}/" not in text  # lines link the PR head
    assert sorted(a["path"] for a in github.annotations[run_id]) == [f"fixtures/f{i:02}.txt" for i in range(FIXTURES)]
    assert [len(p.body["output"].get("annotations", [])) for p in github.calls("PATCH")] == [50, 10]
    assert github.calls("POST")[0].body["details_url"] == "https://github.example/octo/repo/actions/runs/99"
    receipt_path = pr.repo.path / "receipt.json"
    assert outputs(tmp_path / "output") == {
        "decision": "fail",
        "row": "evidence-path-edited",
        "ok": "false",
        "conclusion": "failure",
        "title": "Fail: 60 locked paths touched",
        "receipt-path": "receipt.json",
        "check-run-id": str(run_id),
        "check-run-url": run["html_url"],
        "artifact-id": "4242",
        "findings": str(FIXTURES),
        "finding-counts": '{"evidence-path-edited":60}',
        "sarif-path": "receipt.sarif",
        "attestation-path": "receipt.intoto.json",
        "attestation-subject-name": "receipt.json",
        "attestation-subject-digest": "sha256:" + hashlib.sha256(receipt_path.read_bytes()).hexdigest(),
        "attestation-predicate-type": attestation.PREDICATE_TYPE,
        "attestation-predicate-path": "receipt.json",
    }
    blob = results.state.blobs["gate-receipt"]
    with zipfile.ZipFile(io.BytesIO(blob.data)) as archive:
        assert archive.read("receipt.json") == receipt_path.read_bytes()
    summary = (tmp_path / "summary.md").read_text("utf-8")
    assert summary.startswith(
        "## evidence-gate: Fail\\: 60 locked paths touched\n\n❌ **Fail**: Locked evidence touched"
    )
    assert "`f00.txt`" in summary and "<details><summary>Full detail" in summary
    assert "::error" not in printed  # the check run carries the annotations; no duplicates in the log


def test_rerun_updates_the_same_check_run(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """Running the same job twice leaves one check run, created once, reset and completed by the second run,
    without appending the same annotations a second time."""
    pr = pull_request(tmp_path, shared_dir)
    env = runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false")
    assert run_action(env)[0] == EXIT_FAIL
    assert run_action(env)[0] == EXIT_FAIL
    assert len(github.runs) == 1
    assert len(github.calls("POST")) == 1
    ((run_id, run),) = github.runs.items()
    assert run["conclusion"] == "failure"
    assert len(github.annotations[run_id]) == FIXTURES
    assert [p.path for p in github.calls("PATCH")].count(f"/repos/octo/repo/check-runs/{run_id}") == 4
    assert (tmp_path / "output").read_text().count(f"\n{run_id}\n") == 2


def test_403_on_create_falls_back_to_workflow_commands(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """A read-only token: one warning saying so, ::error annotations per finding, summary written, exit code 10."""
    github.fail("POST", Scripted(403, {}, {"message": "Resource not accessible by integration"}))
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url))
    assert code == EXIT_FAIL
    lines = printed.splitlines()
    assert len([x for x in lines if x.startswith("::warning::") and "workflow commands" in x]) == 1
    assert len([x for x in lines if x.startswith("::error file=fixtures/f")]) == FIXTURES
    assert "::error file=fixtures/f07.txt,line=1,title=Locked evidence touched [evidence-path-edited]::" in printed
    assert github.calls("PATCH") == []
    assert outputs(tmp_path / "output")["check-run-id"] == ""
    summary = (tmp_path / "summary.md").read_text("utf-8")
    assert "Resource not accessible by integration" in summary and "**Locked evidence** — 60 paths touched" in summary
    assert summary.index("Resource not accessible") < summary.index("### What failed")  # the note comes first


def test_human_patch_is_neutral_and_passes(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """A PR by a human is not scored: exit 0, the check run's conclusion is neutral."""
    pr = pull_request(tmp_path, shared_dir, author="octocat")
    code, _ = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_PASS
    (run,) = github.runs.values()
    assert run["conclusion"] == "neutral"
    assert run["output"]["title"] == "Not scored (human patch): 60 locked paths touched"
    assert {a["annotation_level"] for a in github.annotations[next(iter(github.runs))]} == {"notice"}
    assert "ℹ️ **Locked evidence** — 60 paths touched (not scored)" in run["output"]["summary"]
    assert outputs(tmp_path / "output")["ok"] == "true"


def test_honest_agent_patch_succeeds(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """An agent PR that touches only code passes the static lanes: success, no annotations."""
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    code, _ = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_PASS
    ((run_id, run),) = github.runs.items()
    assert run["conclusion"] == "success"
    assert github.annotations[run_id] == []


def shallow_checkout(pr_origin: Path, into: Path) -> GitRepo:
    """What actions/checkout does by default: fetch the merge ref at depth 1 and detach on it."""
    ws = GitRepo(into)
    ws.git("remote", "add", "origin", f"file://{pr_origin}")
    ws.git("fetch", "--depth=1", "origin", "refs/pull/7/merge")
    ws.git("checkout", "-q", "--detach", "FETCH_HEAD")
    return ws


def test_shallow_checkout_fetches_exactly_the_parents(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """A depth-1 checkout of the merge ref is deepened by one level through origin and judged normally."""
    pr = pull_request(tmp_path, shared_dir)
    ws = shallow_checkout(pr.repo.path, tmp_path / "ws")
    assert ws.git("rev-parse", "--is-shallow-repository") == "true"
    code, printed = run_action(runner_env(tmp_path, ws.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_FAIL, printed
    assert json.loads((ws.path / "receipt.json").read_text())["decision"]["row"] == "evidence-path-edited"
    assert sorted(ws.git("cat-file", "--batch-all-objects", "--batch-check=%(objecttype)").split()).count("commit") == 3
    assert "fetched the commits compared" in (tmp_path / "summary.md").read_text()


def test_shallow_checkout_without_origin_is_history_missing(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """When the parents cannot be fetched the gate stops with history-missing and names `fetch-depth: 0`."""
    pr = pull_request(tmp_path, shared_dir)
    ws = shallow_checkout(pr.repo.path, tmp_path / "ws")
    ws.git("remote", "set-url", "origin", f"file://{tmp_path / 'gone'}")
    code, printed = run_action(runner_env(tmp_path, ws.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_PRECONDITION, printed
    receipt = json.loads((ws.path / "receipt.json").read_text())
    assert receipt["decision"]["row"] == "history-missing"
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    assert "fetch-depth: 0" in run["output"]["summary"]


def test_failed_completion_falls_back_and_keeps_the_verdict(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """If completing the check run keeps failing (5 x 500), findings are printed as ::error and the exit code stays."""
    github.fail("PATCH", *[Scripted(500)] * 5)
    pr = pull_request(tmp_path, shared_dir)
    code, printed = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_FAIL
    assert len([x for x in printed.splitlines() if x.startswith("::error file=fixtures/")]) == FIXTURES
    assert "could not be completed" in printed
    assert outputs(tmp_path / "output")["check-run-id"] == ""


def test_without_artifact_service_the_receipt_stays(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """Without ACTIONS_RUNTIME_TOKEN/ACTIONS_RESULTS_URL the action warns once and leaves the receipt on disk."""
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    code, printed = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url, receipt_path="out/r.json"))
    assert code == EXIT_PASS
    warnings = [x for x in printed.splitlines() if x.startswith("::warning::artifact not uploaded")]
    assert len(warnings) == 1 and "for actions/upload-artifact" in warnings[0]
    assert json.loads((pr.repo.path / "out/r.json").read_text())["ok"] is True
    assert outputs(tmp_path / "output")["artifact-id"] == ""


def test_shallow_merge_group_is_deepened_until_the_base(tmp_path: Path, shared_dir: Path, github: FakeGitHub) -> None:
    """A depth-1 checkout of a merge-queue commit 3 commits above its base is deepened until the base is reached."""
    origin = GitRepo(tmp_path / "origin")
    base = origin.commit(
        "base",
        {
            "SCORE_PROPERTIES": "properties/test_p.py::test_x\n",
            "properties/test_p.py": "def test_x():\n    assert True\n",
            "src/app.py": "x = 1\n",
        },
    )
    for i in range(3):
        head = origin.commit(f"queued {i}", {"src/app.py": f"x = {i + 2}\n"})
    origin.git("update-ref", "refs/heads/gh-readonly-queue/main/pr-7", head)
    payload = json.loads((shared_dir / "github-api/events/merge_group.checks_requested.1.json").read_text("utf-8"))
    payload["merge_group"]["base_sha"], payload["merge_group"]["head_sha"] = base, head
    payload["repository"]["full_name"] = "octo/repo"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    ws = GitRepo(tmp_path / "ws")
    ws.git("remote", "add", "origin", f"file://{origin.path}")
    ws.git("fetch", "--depth=1", "origin", "refs/heads/gh-readonly-queue/main/pr-7")
    ws.git("checkout", "-q", "--detach", "FETCH_HEAD")
    env = runner_env(tmp_path, ws.path, event, github.url, upload_artifact="false")
    env["GITHUB_EVENT_NAME"] = "merge_group"
    code, printed = run_action(env)
    assert code == EXIT_PASS, printed
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (head, "success")
    assert "git fetch --depth=16" in (tmp_path / "summary.md").read_text()


def test_cli_action_subcommand_runs_the_action(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """`evidence-gate action` in a real subprocess reads the runner's environment like the container does."""
    pr = pull_request(tmp_path, shared_dir)
    env = runner_env(tmp_path, pr.repo.path, pr.event, github.url)
    env.update(
        {
            "ACTIONS_RUNTIME_TOKEN": results.token,
            "ACTIONS_RESULTS_URL": results.url,
            "PATH": os.environ["PATH"],
            "INPUT_CHECK_NAME": "gate (static)",
        }
    )
    proc = subprocess.run(
        [sys.executable, "-m", "evidence_gate", "action"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == EXIT_FAIL, proc.stdout + proc.stderr
    (run,) = github.runs.values()
    assert (run["name"], run["conclusion"]) == ("gate (static)", "failure")
    assert outputs(tmp_path / "output")["artifact-id"] == "4242"
    assert "FAIL: Locked evidence touched [evidence-path-edited]" in proc.stdout


def test_shallow_checkout_of_the_head_branch_is_not_deepened(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """A shallow checkout of the PR's head instead of the merge ref fetches nothing; the gate's precondition stands."""
    pr = pull_request(tmp_path, shared_dir)
    ws = GitRepo(tmp_path / "ws")
    ws.git("remote", "add", "origin", f"file://{pr.repo.path}")
    ws.git("fetch", "--depth=1", "origin", "refs/heads/pr")
    ws.git("checkout", "-q", "--detach", "FETCH_HEAD")
    code, printed = run_action(runner_env(tmp_path, ws.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_PRECONDITION, printed
    assert json.loads((ws.path / "receipt.json").read_text())["decision"]["row"] in {
        "history-missing",
        "event-mismatch",
    }
    assert "fetched" not in (tmp_path / "summary.md").read_text()
    assert ws.git("cat-file", "--batch-all-objects", "--batch-check=%(objecttype)").split().count("commit") == 1


def test_hostile_paths_cannot_forge_commands_in_the_fallback(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """A PR adding locked files named like workflow commands: the log holds only the action's own commands."""
    from test_action_escaping import runner_commands

    hostile = ["fixtures/a\n::stop-commands::tok", "fixtures/b%0A::error file=x::forged", "fixtures/c,line=9:d"]
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    pr.repo.checkout("pr")
    head = pr.repo.commit("hostile", dict.fromkeys(hostile, "x\n"))
    pr.repo.checkout(pr.base)
    payload = json.loads(pr.event.read_text())
    payload["pull_request"]["head"]["sha"] = head
    pr.event.write_text(json.dumps(payload))
    pr.repo.merge_ref(pr.base, head)
    github.fail("POST", Scripted(403, {}, {"message": "Resource not accessible by integration"}))
    code, printed = run_action(runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false"))
    assert code == EXIT_FAIL, printed
    commands = runner_commands(printed)
    assert {name for name, _, _ in commands} == {"warning", "error"}
    receipt = json.loads((pr.repo.path / "receipt.json").read_text())
    expected = sorted(v["path"] for v in receipt["violations"] if v["path"])
    assert len(expected) >= len(hostile)
    assert sorted(props["file"] for name, props, _ in commands if name == "error" and "file" in props) == expected
    assert all(props.get("line") == "1" for name, props, _ in commands if name == "error")
