"""The action's container, for real: built from the Dockerfile and run the way the Actions runner runs it.

The workspace is a demo repository checked out on a tampering pull request's merge commit and owned by another
uid; the event file, the file-command files and the `INPUT_*` variables are laid out as the runner lays them out;
the check-runs API and the results service are the schema-validating fakes on 127.0.0.1 (`--network=host`).
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from action_runner import TODAY, Runner, action_env, make_runner, read_outputs, run_container
from container_engine import IMAGE, Engine, EngineUnavailable, build_image, find_engine
from fake_github import FakeGitHub, Scripted
from fake_results_service import FakeResultsService, runtime_token

pytestmark = pytest.mark.container


@pytest.fixture(scope="session")
def engine() -> Engine:
    """docker or podman; in CI a missing engine fails the suite, locally it skips these tests."""
    found = find_engine()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but neither docker nor podman is installed; ./dev test installs podman")
        pytest.skip("neither docker nor podman is installed")
    return found


@pytest.fixture(scope="session")
def image(engine: Engine) -> str:
    """The action's image, built once per session (podman: from a debootstrap base cached between runs)."""
    try:
        build_image(engine)
    except (EngineUnavailable, RuntimeError) as exc:
        pytest.fail(f"the action's image could not be built with {engine.name}: {exc}")
    return IMAGE


@pytest.fixture
def servers(shared_dir: Path) -> Iterator[tuple[FakeGitHub, FakeResultsService]]:
    """The fake check-runs API and results service, listening on 127.0.0.1."""
    github = FakeGitHub(shared_dir).start()
    results = FakeResultsService(runtime_token()).start()
    yield github, results
    github.stop()
    results.stop()


def _host_check(runner: Runner, receipt: Path, *extra: str) -> dict[str, Any]:
    """The same check by the CLI outside the container; its receipt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "INPUT_", "GITHUB_"))}
    env["GIT_CONFIG_COUNT"], env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_VALUE_0"] = "1", "safe.directory", "*"
    subprocess.run([sys.executable, "-m", "evidence_gate", "check", "--repo", str(runner.workspace),
                    "--event", str(runner.file("workflow/event.json")), "--today", TODAY,
                    "--receipt", str(receipt), "--format", "json", *extra], capture_output=True, env=env, check=False)
    data = json.loads(receipt.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _freeze_line(runner: Runner, needle: str) -> int:
    text = runner.git("show", f"refs/pull/{runner.pr}/head:freeze.yaml")
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_image_has_git_python_and_the_unprivileged_user(engine: Engine, image: str, tmp_path: Path) -> None:
    """The image runs the CLI, has `nobody` for the sealed run, and no pip; the workspace's owner matters to git."""
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, {}, "-c",
                          "evidence-gate --version && id -u nobody && git --version && "
                          "python3 -c 'import yaml, jsonschema, github, requests, pytest, hypothesis' && "
                          "! python3 -m pip --version 2>/dev/null", entrypoint="/bin/bash")
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")
    out = proc.stdout.decode()
    assert out.startswith("evidence-gate ")
    assert "65534" in out.split()
    if os.geteuid() == 0:
        # Without the entrypoint's safe.directory line git refuses the checkout: the test layout is realistic.
        bare = run_container(engine, image, runner, {"HOME": "/github/home"}, "rev-parse", "HEAD", entrypoint="git")
        assert bare.returncode != 0
        assert b"dubious ownership" in bare.stderr


def test_cli_in_the_container_agrees_with_the_cli_on_the_host(engine: Engine, image: str, tmp_path: Path) -> None:
    """`check --no-run` through the entrypoint names the same row and violations as the host CLI on the same PR."""
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, {"GITHUB_WORKSPACE": "/github/workspace", "HOME": "/github/home"},
                          "check", "--no-run", "--event", "/github/workflow/event.json", "--today", TODAY,
                          "--receipt", "/github/home/receipt.json", "--format", "json")
    assert proc.returncode == 10, proc.stderr.decode(errors="replace")
    inside = json.loads(runner.file("home/receipt.json").read_text(encoding="utf-8"))
    outside = _host_check(runner, tmp_path / "host.json", "--no-run")
    assert inside["decision"] == outside["decision"]
    assert inside["decision"]["row"] == "freeze-id-added"
    assert inside["violations"] == outside["violations"]
    assert inside["git"] == outside["git"]


def test_action_run_like_the_runner_posts_the_verdict(engine: Engine, image: str, tmp_path: Path,
                                                      servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """A tampering PR: failed check run on the PR head with the row and the annotation, outputs, summary, artifact."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, action_env(github, results))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    assert github.problems == [], github.problems

    assert len(github.runs) == 1, log
    (run_id, run), = github.runs.items()
    assert run["name"] == "evidence-gate"
    assert run["head_sha"] == runner.git("rev-parse", f"refs/pull/{runner.pr}/head")  # not the test merge commit
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert run["output"]["title"].startswith("freeze-id-added")
    assert run["external_id"]
    notes = github.annotations[run_id]
    line = _freeze_line(runner, "id: alloc-three-ways-flaky")
    assert any(a["path"] == "freeze.yaml" and a["start_line"] == line and "alloc-three-ways-flaky" in a["message"]
               for a in notes), notes
    assert all(r.auth == "token ghs_fake" or (r.auth or "").endswith("ghs_fake") for r in github.requests)

    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert outputs == {"decision": "fail", "row": "freeze-id-added", "ok": "false",
                       "receipt-path": "receipt.json", "check-run-id": str(run_id),
                       "artifact-id": "4242"}
    assert "freeze-id-added" in runner.file("file_commands/step_summary").read_text(encoding="utf-8")

    receipt_bytes = (runner.workspace / "receipt.json").read_bytes()
    receipt = json.loads(receipt_bytes)
    assert receipt["decision"]["row"] == "freeze-id-added"
    assert receipt["git"]["head"] == runner.git("rev-parse", "HEAD")
    assert receipt["git"]["baseline"] == runner.git("rev-parse", "refs/heads/main")
    assert results.state.problems == []
    (finalized,) = results.state.finalized
    blob = results.state.blobs["evidence-gate-receipt"]
    assert finalized["hash"] == blob.sha256
    assert finalized["size"] == str(len(blob.data))
    with zipfile.ZipFile(io.BytesIO(blob.data)) as archive:
        assert archive.read("receipt.json") == receipt_bytes


def test_fork_token_falls_back_to_workflow_commands(engine: Engine, image: str, tmp_path: Path,
                                                    servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """A read-only token (403 on create): annotations as `::error` commands, no check-run id, exit code 10."""
    github, results = servers
    github.fail("POST", Scripted(403, body={"message": "Resource not accessible by integration"}))
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, action_env(github, results))
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 10, out + proc.stderr.decode(errors="replace")
    assert github.runs == {}
    line = _freeze_line(runner, "id: alloc-three-ways-flaky")
    assert any(row.startswith("::error ") and "file=freeze.yaml" in row and f"line={line}" in row
               for row in out.splitlines()), out
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["check-run-id"], outputs["row"]) == ("", "freeze-id-added")


def test_property_lane_runs_sealed_in_the_container(engine: Engine, image: str, tmp_path: Path,
                                                    servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """The honest PR with the property lane on: the container reaches the same decision as the host CLI."""
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor")
    proc = run_container(engine, image, runner, action_env(github, results, run_properties="true"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    inside = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    outside = _host_check(runner, tmp_path / "host.json")
    assert inside["decision"]["row"] == outside["decision"]["row"], log
    assert inside["decision"]["row"] == "pass", (inside["violations"], log)
    assert (inside["sealed"]["user"], inside["sealed"]["network"]) == ("nobody", "isolated"), inside["sealed"]
    assert proc.returncode == 0
    (run,) = github.runs.values()
    assert run["conclusion"] == "success"


def test_merge_group_is_gated_on_the_group_commit(engine: Engine, image: str, tmp_path: Path,
                                                  servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """A merge_group event: the same verdict, posted on the group's head commit, so a merge queue's check is met."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added", event="merge_group")
    proc = run_container(engine, image, runner, action_env(github, results, event="merge_group"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    (run,) = github.runs.values()
    assert run["head_sha"] == runner.git("rev-parse", "HEAD")
    assert (run["conclusion"], run["output"]["title"].split(":")[0]) == ("failure", "freeze-id-added")


def test_shallow_checkout_fetches_the_parents_it_needs(engine: Engine, image: str, tmp_path: Path,
                                                       servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """checkout's default depth 1: the action fetches the merge commit's parents from origin and still decides."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added", shallow=True)
    assert runner.git("rev-parse", "--is-shallow-repository") == "true"
    proc = run_container(engine, image, runner, action_env(github, results))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    assert read_outputs(runner.file("file_commands/set_output"))["row"] == "freeze-id-added"
    (run,) = github.runs.values()
    assert "fetched the commits compared" in run["output"]["summary"], run["output"]["summary"]


def test_rerun_in_the_same_job_reuses_the_check_run(engine: Engine, image: str, tmp_path: Path,
                                                    servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """A re-run with the same home and head updates its check run and adds no second safe.directory line."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    for _ in range(2):
        proc = run_container(engine, image, runner, action_env(github, results))
        assert proc.returncode == 10, proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert len(github.runs) == 1
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    gitconfig = runner.file("home/.gitconfig").read_text(encoding="utf-8")
    assert gitconfig.count("directory = /github/workspace") == 1, gitconfig


def test_harness_probe_is_refused_in_the_container(engine: Engine, image: str, tmp_path: Path,
                                                   servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """Code that asks `sys.modules` whether it is tested is harness-probed in the container, as on the host."""
    github, results = servers
    runner = make_runner(tmp_path, "tells-it-is-tested")
    proc = run_container(engine, image, runner, action_env(github, results, run_properties="true"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    inside = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    outside = _host_check(runner, tmp_path / "host.json")
    assert inside["decision"]["row"] == outside["decision"]["row"] == "harness-probed", (inside["violations"], log)
    assert inside["violations"] == outside["violations"]
    assert "probes the harness" in inside["properties"]["skipped"]
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
