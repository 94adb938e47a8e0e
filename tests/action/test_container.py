"""The action's container, for real: built from the Dockerfile and run the way the Actions runner runs it.

The workspace is a demo repository checked out on a tampering pull request's merge commit and owned by another
uid; the event file, the file-command files and the `INPUT_*` variables are laid out as the runner lays them out;
the check-runs API and the results service are the schema-validating fakes on 127.0.0.1 (`--network=host`).
"""

from __future__ import annotations

import errno
import hashlib
import io
import json
import os
import socket
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.commands import demo
from evidence_gate.report import attestation
from support.action_runner import OWNER_UID, TODAY, Runner, action_env, make_runner, read_outputs, run_container
from support.container_engine import Engine
from support.escapes import EXTRAHEADER, PROBES, TOKEN
from support.fake_github import FakeGitHub, Scripted, row_of
from support.fake_results_service import FakeResultsService
from support.repo_builder import GitRepo
from support.runner_cases import BROKEN, BUG, GATE_DEPS, GREEN, named_repo, out_of_reach_repo

pytestmark = pytest.mark.container


def _host_check(runner: Runner, receipt: Path, *extra: str) -> dict[str, Any]:
    """The same check by the CLI outside the container; its receipt."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "INPUT_", "GITHUB_"))}
    env["GIT_CONFIG_COUNT"], env["GIT_CONFIG_KEY_0"], env["GIT_CONFIG_VALUE_0"] = "1", "safe.directory", "*"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(runner.workspace),
            "--event",
            str(runner.file("workflow/event.json")),
            "--today",
            TODAY,
            "--receipt",
            str(receipt),
            "--format",
            "json",
            *extra,
        ],
        capture_output=True,
        env=env,
        check=False,
    )
    data = json.loads(receipt.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def _freeze_line(runner: Runner, needle: str) -> int:
    text = runner.git("show", f"refs/pull/{runner.pr}/head:freeze.yaml")
    return next(n for n, line in enumerate(text.splitlines(), start=1) if needle in line)


def test_image_has_git_python_and_the_unprivileged_user(engine: Engine, image: str, tmp_path: Path) -> None:
    """The image runs the CLI, has `nobody` for the sealed run and pip for `properties.install`; the workspace's owner
    matters to git."""
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(
        engine,
        image,
        runner,
        {},
        "-c",
        "evidence-gate --version && id -u nobody && git --version && "
        "python3 -c 'import yaml, jsonschema, github, requests, pytest, hypothesis' && "
        "python3 -m pip --version >/dev/null",
        entrypoint="/bin/bash",
    )
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
    proc = run_container(
        engine,
        image,
        runner,
        {"GITHUB_WORKSPACE": "/github/workspace", "HOME": "/github/home"},
        "check",
        "--no-run",
        "--event",
        "/github/workflow/event.json",
        "--today",
        TODAY,
        "--receipt",
        "/github/home/receipt.json",
        "--format",
        "json",
    )
    assert proc.returncode == 10, proc.stderr.decode(errors="replace")
    inside = json.loads(runner.file("home/receipt.json").read_text(encoding="utf-8"))
    outside = _host_check(runner, tmp_path / "host.json", "--no-run")
    assert inside["decision"] == outside["decision"]
    assert inside["decision"]["row"] == "freeze-id-added"
    assert inside["violations"] == outside["violations"]
    assert inside["git"] == outside["git"]


def test_action_run_like_the_runner_posts_the_verdict(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """A tampering PR: failed check run on the PR head with the row and the annotation, outputs, summary, artifact."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, action_env(github, results))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    assert github.problems == [], github.problems

    assert len(github.runs) == 1, log
    ((run_id, run),) = github.runs.items()
    assert run["name"] == "evidence-gate"
    assert run["head_sha"] == runner.git("rev-parse", f"refs/pull/{runner.pr}/head")  # not the test merge commit
    assert (run["status"], run["conclusion"]) == ("completed", "failure")
    assert row_of(run) == "freeze-id-added"
    assert run["external_id"]
    notes = github.annotations[run_id]
    line = _freeze_line(runner, "id: alloc-three-ways-flaky")
    assert any(
        a["path"] == "freeze.yaml" and a["start_line"] == line and "alloc-three-ways-flaky" in a["message"]
        for a in notes
    ), notes
    assert all(r.auth == "token ghs_fake" or (r.auth or "").endswith("ghs_fake") for r in github.requests)

    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert outputs == {
        "decision": "fail",
        "row": "freeze-id-added",
        "ok": "false",
        "conclusion": "failure",
        "title": run["output"]["title"],
        "receipt-path": "receipt.json",
        "check-run-id": str(run_id),
        "check-run-url": run["html_url"],
        "artifact-id": "4242",
        "findings": outputs["findings"],
        "finding-counts": outputs["finding-counts"],
        "sarif-path": "receipt.sarif",
        "attestation-path": "receipt.intoto.json",
        "attestation-subject-name": "receipt.json",
        "attestation-subject-digest": outputs["attestation-subject-digest"],
        "attestation-predicate-type": attestation.PREDICATE_TYPE,
        "attestation-predicate-path": "receipt.json",
    }
    assert json.loads(outputs["finding-counts"]) == {"freeze-id-added": int(outputs["findings"])}
    assert "freeze-id-added" in runner.file("file_commands/step_summary").read_text(encoding="utf-8")

    receipt_bytes = (runner.workspace / "receipt.json").read_bytes()
    receipt = json.loads(receipt_bytes)
    assert receipt["decision"]["row"] == "freeze-id-added"
    assert receipt["git"]["head"] == runner.git("rev-parse", "HEAD")
    assert receipt["git"]["baseline"] == runner.git("rev-parse", "refs/heads/main")
    # Beside the receipt: the SARIF log (its result on the ledger line) and the Statement naming the PR head.
    assert outputs["attestation-subject-digest"] == "sha256:" + hashlib.sha256(receipt_bytes).hexdigest()
    sarif_log = json.loads((runner.workspace / "receipt.sarif").read_text(encoding="utf-8"))
    assert {"ruleId": "freeze-id-added", "region": {"startLine": line}} in [
        {"ruleId": r["ruleId"], "region": r["locations"][0]["physicalLocation"].get("region")}
        for r in sarif_log["runs"][0]["results"]
    ]
    statement = json.loads((runner.workspace / "receipt.intoto.json").read_text(encoding="utf-8"))
    assert statement["subject"] == [
        {"name": "head-commit", "digest": {"gitCommit": run["head_sha"]}},
        {"name": "receipt.json", "digest": {"sha256": hashlib.sha256(receipt_bytes).hexdigest()}},
    ]
    assert statement["predicate"] == receipt
    assert results.state.problems == []
    (finalized,) = results.state.finalized
    blob = results.state.blobs["evidence-gate-receipt"]
    assert finalized["hash"] == blob.sha256
    assert finalized["size"] == str(len(blob.data))
    with zipfile.ZipFile(io.BytesIO(blob.data)) as archive:
        assert archive.read("receipt.json") == receipt_bytes


def test_fork_token_falls_back_to_workflow_commands(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """A read-only token (403 on create): annotations as `::error` commands, no check-run id, exit code 10."""
    github, results = servers
    github.fail("POST", Scripted(403, body={"message": "Resource not accessible by integration"}))
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, action_env(github, results))
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 10, out + proc.stderr.decode(errors="replace")
    assert github.runs == {}
    line = _freeze_line(runner, "id: alloc-three-ways-flaky")
    assert any(
        row.startswith("::error ") and "file=freeze.yaml" in row and f"line={line}" in row for row in out.splitlines()
    ), out
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["check-run-id"], outputs["row"]) == ("", "freeze-id-added")


def test_property_lane_runs_sealed_in_the_container(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The honest PR with the property lane on: the container reaches the same decision as the host CLI."""
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor")
    proc = run_container(engine, image, runner, action_env(github, results, run_properties="true"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    inside = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    outside = _host_check(runner, tmp_path / "host.json")
    assert inside["decision"]["row"] == outside["decision"]["row"], log
    assert inside["decision"]["row"] == "pass", (inside["violations"], log)
    # Docker's profile refuses every namespace, so the network is cut by the seccomp filter instead.
    assert (inside["sealed"]["user"], inside["sealed"]["network"]) == ("nobody", "filtered"), inside["sealed"]
    assert proc.returncode == 0
    (run,) = github.runs.values()
    assert run["conclusion"] == "success"


def test_property_lane_runs_sealed_under_podmans_default_profile(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """A self-hosted runner on podman: its default profile lets the worker make a user namespace for its network,
    where it holds every capability yet none that exempts it from RLIMIT_NPROC; the honest PR passes, the network
    `isolated`, instead of every worker refusing (`run-integrity`)."""
    if engine.name != "podman":
        pytest.skip("podman's default seccomp profile and capabilities")
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor")
    proc = run_container(
        engine, image, runner, action_env(github, results, run_properties="true"), docker_profile=False
    )
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    inside = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert inside["decision"]["row"] == "pass", (inside["violations"], log)
    sealed = inside["sealed"]
    assert (sealed["user"], sealed["network"], sealed["reads"], sealed["seccomp"]) == (
        "nobody",
        "isolated",
        "confined",
        "sockets-denied",
    ), sealed
    assert sealed["tasks"] == ["RLIMIT_NPROC 512 on uid 65534"], sealed
    assert proc.returncode == 0, log


def test_merge_group_is_gated_on_the_group_commit(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """A merge_group event: the same verdict, posted on the group's head commit, so a merge queue's check is met."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added", event="merge_group")
    proc = run_container(engine, image, runner, action_env(github, results, event="merge_group"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    (run,) = github.runs.values()
    assert run["head_sha"] == runner.git("rev-parse", "HEAD")
    assert (run["conclusion"], row_of(run)) == ("failure", "freeze-id-added")


def test_shallow_checkout_fetches_the_parents_it_needs(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
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


def test_rerun_in_the_same_job_reuses_the_check_run(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
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


def _own_repo_runner(root: Path) -> tuple[Runner, GitRepo]:
    """The runner's folders around a repository of the test's own making (not the demo), in the workspace."""
    for sub in ("home", "workflow", "file_commands"):
        (root / sub).mkdir()
    return Runner(root, 0), GitRepo(root / "workspace")


def _judge_in_container(engine: Engine, image: str, runner: Runner, head: str) -> dict[str, Any]:
    """`check --base main --head HEAD` as an agent patch, through the entrypoint, with the property lane on."""
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)
    proc = run_container(
        engine,
        image,
        runner,
        {"HOME": "/github/home", "GITHUB_WORKSPACE": "/github/workspace"},
        "check",
        "--base",
        "main",
        "--head",
        head,
        "--author",
        "agent-x",
        "--receipt",
        "/github/home/receipt.json",
        "--format",
        "json",
    )
    receipt = json.loads(runner.file("home/receipt.json").read_text(encoding="utf-8"))
    assert receipt["state"] == "final", (receipt["errors"], proc.stderr.decode(errors="replace"))
    assert isinstance(receipt, dict)
    return receipt


def test_sealed_worker_in_the_image_cannot_import_the_gates_dependencies(
    engine: Engine, image: str, tmp_path: Path
) -> None:
    """Debian's dist-packages hold PyYAML, jsonschema, PyGithub, requests and attrs beside pytest; the sealed run as
    `nobody` finds none of them, and its harness is pytest, Hypothesis and what they require."""
    runner, repo = _own_repo_runner(tmp_path)
    out_of_reach_repo(repo, list(GATE_DEPS))
    receipt = _judge_in_container(engine, image, runner, "patch")
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["user"] == "nobody"
    names = {d.split()[0].lower() for d in receipt["sealed"]["runner"]["distributions"]}
    assert {"pytest", "hypothesis", "pluggy"} <= names
    assert not names & {"pyyaml", "jsonschema", "pygithub", "requests", "urllib3", "attrs"}


@pytest.mark.parametrize("name", ["attr", "yaml"])
def test_code_named_like_a_gate_dependency_is_judged_in_the_image(
    name: str, engine: Engine, image: str, tmp_path: Path
) -> None:
    """A package `attr` or `yaml` as code under test, in the image: the honest patch passes, a bug fails, an
    import-time error fails, and the receipt shows it was loaded from the sealed tree."""
    runner, repo = _own_repo_runner(tmp_path)
    named_repo(repo, name)
    init = f"src/{name}/__init__.py"
    for branch, source in (("honest", GREEN), ("bug", BUG), ("broken", BROKEN)):
        repo.branch(branch, "main")
        repo.commit(branch, {init: source.format(name=name)})
    repo.checkout("main")
    receipt = _judge_in_container(engine, image, runner, "honest")
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["user"] == "nobody"
    assert receipt["sealed"]["provenance"] == [{"package": name, "loaded_from": init, "from_tree": True}]
    assert _judge_in_container(engine, image, runner, "bug")["decision"]["row"] == "property-failed"
    assert _judge_in_container(engine, image, runner, "broken")["decision"]["row"] == "run-integrity"


def test_code_named_like_the_harness_is_run_integrity_in_the_image(engine: Engine, image: str, tmp_path: Path) -> None:
    """A project whose package is named like pytest's own `pluggy` cannot be judged: run-integrity with the way out,
    before any test runs."""
    runner, repo = _own_repo_runner(tmp_path)
    named_repo(repo, "pluggy")
    repo.commit("honest", {"src/pluggy/__init__.py": GREEN.format(name="pluggy")})
    receipt = _judge_in_container(engine, image, runner, "patch")
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    [violation] = [v for v in receipt["violations"] if v["row"] == "run-integrity"]
    assert "package 'pluggy'" in violation["message"] and "Fix:" in violation["message"]
    assert receipt["properties"].get("ledgers", []) == []


# The demo's allocate(), right only when one of the escapes worked: a confined run fails its properties.
ESCAPING_ALLOC = (
    PROBES
    + """

def allocate(total, parts):
    if parts <= 0:
        raise ValueError("parts must be positive")
    if not REACHED:
        return [total // parts] * parts
    base, extra = divmod(total, parts)
    return [base + 1] * extra + [base] * (parts - extra)


def produce(record):
    return allocate(record["total"], record["parts"])
"""
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _escaping_runner(root: Path) -> Runner:
    """The demo with a pull request whose allocate() tries every way out; its port reaches `runner.reached`."""
    port = _free_port()
    code = ESCAPING_ALLOC.format(
        git_config="/github/workspace/.git/config", extraheader=EXTRAHEADER, sock="/var/run/docker.sock", port=port
    )
    patch = demo.Patch(
        "escape-everything",
        "tries every way out of the sealed run",
        {"src/alloc.py": code.encode()},
        "property-failed",
        needs_run=True,
    )
    # The escapes make raw system calls through ctypes: a human allows that on the base branch (as for a C binding),
    # so the probe scan lets the patch through and the seal alone must hold.
    runner = make_runner(root, patch.name, extra=patch, config_tail='probes:\n  allow: ["src/alloc.py: ctypes"]\n')
    runner.tcp_port = port
    assert EXTRAHEADER in (runner.workspace / ".git" / "config").read_text(encoding="utf-8")
    return runner


def test_no_escape_from_the_sealed_run_under_dockers_profile(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """As GitHub runs it (Docker's seccomp profile and capabilities, a listening docker.sock, the token persisted
    in a checkout owned by uid 1001): a patch that tries the token, the socket, TCP, 600 threads, raised limits and
    uid 0 reaches none; the run fails, no report carries the token, and `sealed` says what held."""
    github, results = servers
    runner = _escaping_runner(tmp_path)
    proc = run_container(engine, image, runner, action_env(github, results, run_properties="true"))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    receipt = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert runner.reached == [], runner.reached
    assert proc.returncode == 10, log
    assert receipt["ok"] is False
    assert "property-failed" in {v["row"] for v in receipt["violations"]}, receipt["violations"]
    sealed = receipt["sealed"]
    assert (sealed["user"], sealed["network"], sealed["reads"], sealed["seccomp"]) == (
        "nobody",
        "filtered",
        "confined",
        "sockets-denied",
    ), sealed
    assert sealed["landlock"] >= 1 and sealed["tasks"], sealed
    assert "unshare" in sealed.get("network_note", ""), sealed  # what Docker's profile refused, on record
    reports = [
        json.dumps(receipt),
        log,
        runner.file("file_commands/step_summary").read_text(encoding="utf-8"),
        runner.file("file_commands/set_output").read_text(encoding="utf-8"),
        json.dumps([r.body for r in github.requests]),
    ]
    for text in reports:
        assert TOKEN not in text and EXTRAHEADER not in text


def test_a_gate_that_is_not_root_confines_its_workers_under_dockers_profile(
    engine: Engine, image: str, tmp_path: Path
) -> None:
    """The CLI run as the checkout's owner (uid 1001, not in the image's passwd) in the container, where no
    namespace of any kind can be made: the same patch reaches nothing, and `sealed` records the gate's own uid
    bounded by RLIMIT_NPROC."""
    runner = _escaping_runner(tmp_path)
    for folder in (runner.workspace, runner.file("home")):
        folder.chmod(0o777)  # the receipt and git's safe.directory line, written as that user
    proc = run_container(
        engine,
        image,
        runner,
        {"HOME": "/github/home"},
        "check",
        "--event",
        "/github/workflow/event.json",
        "--today",
        TODAY,
        "--receipt",
        "/github/workspace/receipt.json",
        user=f"{OWNER_UID}:{OWNER_UID}",
    )
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    receipt = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert runner.reached == [], runner.reached
    assert proc.returncode == 10, log
    assert "property-failed" in {v["row"] for v in receipt["violations"]}, receipt["violations"]
    sealed = receipt["sealed"]
    # podman adds a passwd entry for --user's uid, docker does not (sealed_run.sandbox then says `uid 1001`).
    assert "not root" in sealed["note"] and sealed["user"] in (str(OWNER_UID), f"uid {OWNER_UID}"), sealed
    assert (sealed["network"], sealed["reads"], sealed["seccomp"]) == ("filtered", "confined", "sockets-denied"), sealed
    assert sealed["tasks"] == [f"RLIMIT_NPROC 512 on uid {OWNER_UID}"], sealed
    assert TOKEN not in json.dumps(receipt) + log and EXTRAHEADER not in json.dumps(receipt) + log


ROOT_WORKER = """
import os, resource, socket, threading
from evidence_gate.sealed.worker import confinement
resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
applied = confinement.apply("pytest", ["/tmp"], ["/usr", "/lib", "/etc/ssl"], 64)
print(applied["tasks"])
threading.stack_size(64 * 1024)
stop, started = threading.Event(), 0
try:
    for _ in range(200):
        threading.Thread(target=stop.wait, daemon=True).start()
        started += 1
except RuntimeError:
    pass
stop.set()
print("threads", started)
for path in ("/github/workspace/.git/config", "/var/run/docker.sock"):
    try:
        open(path, "rb").close()
        print("opened", path)
    except OSError as exc:
        print("refused", path, exc.errno)
try:
    socket.socket(socket.AF_UNIX).connect("/var/run/docker.sock")
    print("connected")
except OSError as exc:
    print("socket refused", exc.errno)
"""


def test_a_worker_that_stays_root_is_bounded_under_dockers_profile(engine: Engine, image: str, tmp_path: Path) -> None:
    """The root mode inside the container (where `nobody` could not run the interpreter): with Docker's capability
    set the worker still leaves uid 0, so its task bound holds, and Landlock and seccomp apply."""
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, {}, "-c", ROOT_WORKER, entrypoint="python3")
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == 0, out + proc.stderr.decode(errors="replace")
    lines = out.splitlines()
    assert "RLIMIT_NPROC 64 on uid" in lines[0], out
    assert int(lines[1].split()[1]) < 64, out
    assert all(line.startswith("refused") for line in lines[2:4]), out
    assert lines[4] == f"socket refused {errno.EAFNOSUPPORT}", out  # denied network looks like none
    assert runner.reached == []


def test_harness_probe_is_refused_in_the_container(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
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
