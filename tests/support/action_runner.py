"""A container step laid out and run the way the Actions runner does it, on the demo repository.

The workspace is the demo repository checked out on one pull request's merge commit (`refs/pull/N/merge`) and,
when running as root, owned by another uid; the event file, the file-command files and the `INPUT_*` variables
(hyphens kept) are where the runner puts them; `--network=host` lets the container reach fakes on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from evidence_gate.commands import demo
from support import shared_data
from support.container_engine import Engine
from support.escapes import listening, persist_token
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService

TODAY = "2026-09-20"  # the demo's date: its freeze entries are unexpired then
REPOSITORY = "octo-org/alloc"
OWNER_UID = 1001  # the checkout belongs to the host's `runner` user, as on GitHub's hosted runners
EVENTS = shared_data.EVENTS
# What GitHub's runner gives a container action (CONTAINERS.md): Docker's default seccomp profile and capability
# set, no --privileged, no --user; podman's own defaults are more permissive, so both are passed explicitly.
DOCKER_SECCOMP = shared_data.SHARED / "containers" / "docker-default-seccomp.json"
DOCKER_CAPS = (
    "CHOWN",
    "DAC_OVERRIDE",
    "FSETID",
    "FOWNER",
    "MKNOD",
    "NET_RAW",
    "SETGID",
    "SETUID",
    "SETFCAP",
    "SETPCAP",
    "NET_BIND_SERVICE",
    "SYS_CHROOT",
    "KILL",
    "AUDIT_WRITE",
)


def pr_number(name: str) -> int:
    """The demo pull request's number (its position in demo.patches)."""
    names = [p.name for p in demo.patches(demo.example_files())]
    return names.index(name) + 1


@dataclass
class Runner:
    """The folders the Actions runner mounts into a container step, and the demo checkout in the workspace."""

    root: Path
    pr: int
    origin: Path | None = None  # the repository a shallow workspace was cloned from, mounted at the same path
    # Who connected to the socket mounted at /var/run/docker.sock, and to `tcp_port` on 127.0.0.1, over all runs.
    reached: list[str] = field(default_factory=list)
    tcp_port: int | None = None

    @property
    def workspace(self) -> Path:
        """The checkout, mounted at /github/workspace."""
        return self.root / "workspace"

    def git(self, *args: str) -> str:
        """git in the checkout (which may belong to another uid); stdout."""
        return _git(self.workspace, *args)

    def file(self, rel: str) -> Path:
        """A path under the runner's folders, e.g. `file_commands/set_output`."""
        return self.root / rel


def _git(path: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        ["git", "-c", f"safe.directory={path}", "-C", str(path), *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()


def _shallow_checkout(origin: Path, workspace: Path, ref: str) -> None:
    """What actions/checkout does by default: fetch one commit, depth 1, and detach on it."""
    workspace.mkdir()
    _git(workspace, "init", "-q")
    _git(workspace, "remote", "add", "origin", origin.as_uri())
    local = f"refs/remotes/{ref.removeprefix('refs/')}"
    _git(workspace, "fetch", "-q", "--no-tags", "--depth=1", "origin", f"+{ref}:{local}")
    _git(workspace, "checkout", "-q", "--detach", local)


def make_runner(
    root: Path,
    pr_name: str,
    login: str = demo.AGENT_LOGIN,
    *,
    event: str = "pull_request",
    shallow: bool = False,
    extra: demo.Patch | None = None,
    config_tail: str = "",
) -> Runner:
    """The demo repository on the merge commit of pull request `pr_name` (one of the demo's, or `extra`), and an
    event (pull_request or merge_group) naming it; `shallow` checks it out like actions/checkout's default depth
    of 1. Like actions/checkout, the job token is persisted in the checkout's .git/config. `config_tail` is appended
    to the baseline's configuration (e.g. a `probes:` section a human wrote)."""
    files = demo.example_files()
    if config_tail:
        files[".evidence-gate.yml"] += config_tail.encode()
    prs = demo.patches(files) + ([extra] if extra else [])
    runner = Runner(root, len(prs) if extra and extra.name == pr_name else pr_number(pr_name))
    merge_ref = f"refs/pull/{runner.pr}/merge"
    if shallow:
        runner.origin = root / "origin"
        demo.build_repository(runner.origin, files, prs)
        _shallow_checkout(runner.origin, runner.workspace, merge_ref)
        source = runner.origin
    else:
        demo.build_repository(runner.workspace, files, prs)
        runner.git("checkout", "-q", "--detach", merge_ref)
        source = runner.workspace
    for sub in ("home", "workflow", "file_commands"):
        (root / sub).mkdir()
    base_sha = _git(source, "rev-parse", "refs/heads/main")
    merge_sha = _git(source, "rev-parse", merge_ref)
    if event == "merge_group":
        payload = json.loads((EVENTS / "merge_group.checks_requested.1.json").read_text(encoding="utf-8"))
        payload["merge_group"].update(head_sha=merge_sha, base_sha=base_sha)
        payload["merge_group"]["head_commit"]["id"] = merge_sha
    else:
        payload = json.loads((EVENTS / "pull_request.opened.1.json").read_text(encoding="utf-8"))
        pull = payload["pull_request"]
        pull["number"] = payload["number"] = runner.pr
        pull["base"]["sha"] = base_sha
        pull["head"]["sha"] = _git(source, "rev-parse", f"refs/pull/{runner.pr}/head")
        pull["merge_commit_sha"] = merge_sha
        pull["user"]["login"] = login
        pull["base"]["repo"]["full_name"] = pull["head"]["repo"]["full_name"] = REPOSITORY
    payload["repository"]["full_name"] = REPOSITORY
    (root / "workflow" / "event.json").write_text(json.dumps(payload), encoding="utf-8")
    (root / "file_commands" / "set_output").touch()
    (root / "file_commands" / "step_summary").touch()
    persist_token(runner.workspace)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)
    return runner


def run_container(
    engine: Engine,
    image: str,
    runner: Runner,
    env: dict[str, str],
    *args: str,
    entrypoint: str | None = None,
    user: str | None = None,
    docker_profile: bool = True,
) -> subprocess.CompletedProcess[bytes]:
    """`docker run` as GitHub's runner does it: its mounts (a listening socket at /var/run/docker.sock included),
    working directory, Docker's seccomp profile and capabilities (the engine's own defaults with
    `docker_profile=False`, as a self-hosted runner on podman has them), and the network; never raises on a non-zero
    exit. Whatever connects to the socket (or to `runner.tcp_port`) is appended to `runner.reached`."""
    with listening(runner.tcp_port) as (seen, _port, docker_sock):
        argv = [
            "run",
            "--rm",
            "--network=host",
            "--workdir",
            "/github/workspace",
            *(("--security-opt", f"seccomp={DOCKER_SECCOMP}", "--cap-drop=all") if docker_profile else ()),
            *((f"--cap-add={','.join(DOCKER_CAPS)}",) if docker_profile else ()),
            "-v",
            f"{docker_sock}:/var/run/docker.sock",
            "-v",
            f"{runner.workspace}:/github/workspace",
            "-v",
            f"{runner.file('home')}:/github/home",
            "-v",
            f"{runner.file('workflow')}:/github/workflow",
            "-v",
            f"{runner.file('file_commands')}:/github/file_commands",
        ]
        if runner.origin is not None:
            argv += ["-v", f"{runner.origin}:{runner.origin}:ro"]
        for key, value in env.items():
            argv += ["-e", f"{key}={value}"]
        if entrypoint is not None:
            argv += ["--entrypoint", entrypoint]
        if user is not None:  # not what the runner does; for the tests of a gate that is not root
            argv += ["--user", user]
        try:
            return engine.run(*argv, image, *args, check=False, timeout=600)
        finally:
            runner.reached += seen


def action_env(
    github: FakeGitHub, results: FakeResultsService, run_properties: str = "false", event: str = "pull_request"
) -> dict[str, str]:
    """The variables the runner sets for a container step, pointed at the fakes."""
    return {
        "HOME": "/github/home",
        "CI": "true",
        "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": "/github/workspace",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": "/github/workflow/event.json",
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_OUTPUT": "/github/file_commands/set_output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
        "GITHUB_API_URL": github.url,
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "7",
        "ACTIONS_RUNTIME_TOKEN": results.token,
        "ACTIONS_RESULTS_URL": results.url,
        # The runner keeps the hyphen (INPUT_CHECK-NAME); the action also reads INPUT_CHECK_NAME.
        "INPUT_GITHUB-TOKEN": "ghs_fake",
        "INPUT_CHECK-NAME": "evidence-gate",
        "INPUT_RUN-PROPERTIES": run_properties,
        "INPUT_UPLOAD-ARTIFACT": "true",
        "INPUT_ARTIFACT-NAME": "evidence-gate-receipt",
        "INPUT_RECEIPT-PATH": "receipt.json",
        "INPUT_TODAY": TODAY,
    }


def read_outputs(path: Path) -> dict[str, str]:
    """`$GITHUB_OUTPUT` parsed like the runner does: `name=value` lines and `name<<DELIM` heredocs."""
    lines = path.read_text(encoding="utf-8").split("\n")
    out: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delim = line.split("<<", 1)
            end = lines.index(delim, i + 1)
            out[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            out[name] = value
        i += 1
    return out
