"""The action's failure paths in the real container, run the way the Actions runner runs it: a workspace the
container's user cannot read, and a read-only workspace. Each still ends in a failing check run, a receipt on
disk (in the runner's temp folder when the workspace cannot take it), the outputs and a message naming the fix."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from support.action_runner import Runner, action_env, make_runner, read_outputs
from support.container_engine import Engine
from support.fake_github import FakeGitHub, row_of
from support.fake_results_service import FakeResultsService

pytestmark = pytest.mark.container


def _run(
    engine: Engine,
    image: str,
    runner: Runner,
    env: dict[str, str],
    *,
    user: str | None = None,
    workspace_mode: str = "rw",
) -> subprocess.CompletedProcess[bytes]:
    """`docker run` as the runner does it, plus its /github/runner_temp mount (RUNNER_TEMP keeps the host path)."""
    temp = runner.file("runner_temp")
    temp.mkdir(exist_ok=True)
    argv = [
        "run",
        "--rm",
        "--network=host",
        "--workdir",
        "/github/workspace",
        "-v",
        f"{runner.workspace}:/github/workspace:{workspace_mode}",
        "-v",
        f"{temp}:/github/runner_temp",
        "-v",
        f"{runner.file('home')}:/github/home",
        "-v",
        f"{runner.file('workflow')}:/github/workflow",
        "-v",
        f"{runner.file('file_commands')}:/github/file_commands",
        "-e",
        f"RUNNER_TEMP={temp}",
    ]
    if user is not None:
        argv += ["--user", user]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    return engine.run(*argv, image, check=False, timeout=600)


def _open_runner_folders(runner: Runner) -> None:
    """What a runner's own folders look like to a container user other than their owner: writable."""
    for sub in ("home", "file_commands", "runner_temp"):
        folder = runner.file(sub)
        folder.mkdir(exist_ok=True)
        folder.chmod(0o777)
        for child in folder.iterdir():
            child.chmod(0o666)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the checkout to another uid")
def test_a_workspace_the_container_user_cannot_read(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """`--user 65534` on a checkout whose .git only its owner may read: a failing check run naming the uid and
    the fix, a receipt in the runner's temp folder (the workspace is not writable either), every output."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    (runner.workspace / ".git").chmod(0o700)
    _open_runner_folders(runner)
    proc = _run(engine, image, runner, action_env(github, results), user="65534:65534")
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 1, log
    assert "Traceback" not in log
    (run,) = github.runs.values()
    assert (run["status"], run["conclusion"]) == ("completed", "failure"), log
    summary = run["output"]["summary"]
    assert "cannot be read by uid 65534" in summary and "chmod -R a+rX" in summary, summary
    fallback = runner.file("runner_temp") / "evidence-gate" / "receipt.json"
    receipt = json.loads(fallback.read_text(encoding="utf-8"))
    assert receipt["state"] == "aborted" and "uid 65534" in receipt["errors"][0]
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["row"], outputs["conclusion"]) == ("aborted", "failure")
    assert outputs["receipt-path"] == str(fallback)
    assert outputs["check-run-id"] == str(run["id"])


def test_a_read_only_workspace_still_posts_the_verdict(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The workspace mounted read-only: the receipt goes to $RUNNER_TEMP, one warning says where, and the verdict
    (the tampering PR's freeze-id-added) is posted and uploaded as usual."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = _run(engine, image, runner, action_env(github, results), workspace_mode="ro")
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    fallback = runner.file("runner_temp") / "evidence-gate" / "receipt.json"
    assert json.loads(fallback.read_text(encoding="utf-8"))["decision"]["row"] == "freeze-id-added"
    assert not (runner.workspace / "receipt.json").exists()
    warnings = [line for line in log.splitlines() if line.startswith("::warning::cannot write the receipt")]
    assert len(warnings) == 1 and str(fallback) in warnings[0], log
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure" and row_of(run) == "freeze-id-added"
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["row"], outputs["receipt-path"]) == ("freeze-id-added", str(fallback))
    # The side files follow the receipt to the fallback folder, under the names later steps see.
    assert outputs["sarif-path"] == str(fallback.with_name("receipt.sarif"))
    assert outputs["attestation-predicate-path"] == str(fallback)
    assert json.loads(fallback.with_name("receipt.sarif").read_text(encoding="utf-8"))["version"] == "2.1.0"
    assert fallback.with_name("receipt.intoto.json").is_file()
    assert results.state.finalized, "the receipt artifact is uploaded from the fallback file"
