"""`shard: K/N`, `mode: merge` and `mode: publish` in the real container, run as the Actions runner runs a step.

Two shard containers (each with its own job's runtime token, as matrix jobs have) run the sealed property lane on
their slice of the demo's seed plan and upload their receipts to the fake results service; a third container, the
merge job, lists and downloads them and posts the one check run on the pull request's head. For fork pull
requests, a read-only fork job uploads its receipt and a publisher container on a clone of main posts the verdict.
"""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from support.action_runner import OWNER_UID, REPOSITORY, _git, action_env, make_runner, read_outputs, run_container
from support.container_engine import Engine
from support.fake_github import FakeGitHub, Scripted
from support.fake_results_service import FakeResultsService

pytestmark = pytest.mark.container


def test_two_shard_containers_and_a_merge_container_post_one_check_run(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The honest demo PR over a 2-shard matrix: no check run from the shards, one success from the merge."""
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor")
    merge_sha = runner.git("rev-parse", "HEAD")
    base = action_env(github, results, run_properties="true")
    base["GITHUB_SHA"] = merge_sha
    for k in (1, 2):
        env = {**base, "INPUT_SHARD": f"{k}/2", "ACTIONS_RUNTIME_TOKEN": results.job_token(f"shard-{k}")}
        proc = run_container(engine, image, runner, env)
        log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
        assert proc.returncode == 0, log
        shard = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
        assert shard["mode"]["shard"] == [k, 2]
        assert shard["sealed"]["user"] == "nobody"
    assert github.runs == {}
    assert sorted(a.name for a in results.state.artifacts) == [
        "evidence-gate-receipt-1-of-2",
        "evidence-gate-receipt-2-of-2",
    ]
    plan = shard["properties"]["plan"]
    env = {**base, "INPUT_MODE": "merge", "ACTIONS_RUNTIME_TOKEN": results.job_token("merge")}
    proc = run_container(engine, image, runner, env)
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, log
    merged = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert merged["decision"]["row"] == "pass", merged["violations"]
    assert [m["shard"] for m in merged["merged_from"]] == [[1, 2], [2, 2]]
    for ledger in merged["properties"]["ledgers"]:
        assert sorted(ledger["planned_seeds"]) == sorted(plan)
        assert sorted(s for s in ledger["attempted_seeds"] if s in plan) == sorted(plan)  # each seed once
    ((run_id, run),) = github.runs.items()
    assert (run["head_sha"], run["conclusion"]) == (runner.git("rev-parse", f"refs/pull/{runner.pr}/head"), "success")
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["row"], outputs["check-run-id"]) == ("pass", str(run_id))
    assert "evidence-gate-receipt" in {a.name for a in results.state.artifacts}


def test_publish_container_posts_a_fork_prs_verdict(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The fork's job in one container (read-only token), the trusted `mode: publish` job in another, on a clone of
    main with a real workflow_run payload: the publisher fetches the PR as data and posts success on its head."""
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor", shallow=True)
    assert runner.origin is not None
    github.fail("POST", Scripted(403, body={"message": "Resource not accessible by integration"}))
    fork_env = {
        **action_env(github, results, run_properties="true"),
        "ACTIONS_RUNTIME_TOKEN": results.job_token("fork"),
    }
    proc = run_container(engine, image, runner, fork_env)
    assert proc.returncode == 0, proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert github.runs == {}
    fork_zip = results.state.blobs["evidence-gate-receipt"].data
    results.state.artifacts.clear()

    head = _git(runner.origin, "rev-parse", f"refs/pull/{runner.pr}/head")
    shutil.rmtree(runner.workspace)  # the publisher's checkout: the base branch, full history
    runner.workspace.mkdir()
    _git(runner.workspace, "init", "-q")
    _git(runner.workspace, "remote", "add", "origin", runner.origin.as_uri())
    _git(runner.workspace, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
    _git(runner.workspace, "checkout", "-q", "-B", "main", "refs/remotes/origin/main")
    subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)

    pull_event = json.loads(runner.file("workflow/event.json").read_text(encoding="utf-8"))
    pr = copy.deepcopy(pull_event["pull_request"])
    pr.update({"number": runner.pr, "state": "open", "auto_merge": None})
    pr["head"].update({"ref": "honest-refactor", "sha": head})
    pr["head"]["repo"].update({"full_name": "fork-owner/alloc"})
    pr["head"]["repo"]["owner"]["login"] = "fork-owner"
    pr["base"]["ref"] = "main"
    github.pulls[runner.pr] = pr
    github.add_artifact(4711, "evidence-gate-receipt", fork_zip)
    payload = json.loads((Path(__file__).parents[1] / "data" / "workflow_run.completed.json").read_text("utf-8"))
    payload["workflow_run"].update(
        {"id": 4711, "event": "pull_request", "head_sha": head, "head_branch": "honest-refactor", "pull_requests": []}
    )
    payload["workflow_run"]["head_repository"]["full_name"] = "fork-owner/alloc"
    payload["workflow_run"]["head_repository"]["owner"]["login"] = "fork-owner"
    payload["repository"]["full_name"] = REPOSITORY
    runner.file("workflow/event.json").write_text(json.dumps(payload), encoding="utf-8")

    env = {
        **action_env(github, results, event="workflow_run"),
        "INPUT_MODE": "publish",
        "ACTIONS_RUNTIME_TOKEN": results.job_token("publish"),
    }
    proc = run_container(engine, image, runner, env)
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, log
    published = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert published["published_from"]["accepted"] is True, published["violations"]
    assert published["decision"]["row"] == "pass"
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (head, "success")
    assert github.blob_store.auth == [None]
