"""A container step laid out and run the way the Actions runner does it, on the demo repository.

The workspace is the demo repository checked out on one pull request's merge commit (`refs/pull/N/merge`) and,
when running as root, owned by another uid; the event file, the file-command files and the `INPUT_*` variables
(hyphens kept) are where the runner puts them; `--network=host` lets the container reach fakes on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from container_engine import Engine
from evidence_gate import demo
from fake_github import FakeGitHub
from fake_results_service import FakeResultsService

TODAY = "2026-09-20"  # the demo's date: its freeze entries are unexpired then
REPOSITORY = "octo-org/alloc"
OWNER_UID = 4242  # the checkout belongs to someone else, as on a runner
EVENTS = Path(__file__).resolve().parents[2] / "shared" / "github-api" / "events"


def pr_number(name: str) -> int:
    """The demo pull request's number (its position in demo.patches)."""
    names = [p.name for p in demo.patches(demo.example_files())]
    return names.index(name) + 1


@dataclass
class Runner:
    """The folders the Actions runner mounts into a container step, and the demo checkout in the workspace."""

    root: Path
    pr: int

    @property
    def workspace(self) -> Path:
        """The checkout, mounted at /github/workspace."""
        return self.root / "workspace"

    def git(self, *args: str) -> str:
        """git in the checkout (which may belong to another uid); stdout."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
        return subprocess.run(["git", "-c", f"safe.directory={self.workspace}", "-C", str(self.workspace), *args],
                              capture_output=True, text=True, check=True, env=env).stdout.strip()

    def file(self, rel: str) -> Path:
        """A path under the runner's folders, e.g. `file_commands/set_output`."""
        return self.root / rel


def make_runner(root: Path, pr_name: str, login: str = demo.AGENT_LOGIN) -> Runner:
    """The demo repository on the merge commit of pull request `pr_name`, and a pull_request event naming it."""
    files = demo.example_files()
    prs = demo.patches(files)
    runner = Runner(root, pr_number(pr_name))
    demo.build_repository(runner.workspace, files, prs)
    runner.git("checkout", "-q", "--detach", f"refs/pull/{runner.pr}/merge")
    for sub in ("home", "workflow", "file_commands"):
        (root / sub).mkdir()
    payload = json.loads((EVENTS / "pull_request.opened.1.json").read_text(encoding="utf-8"))
    pull = payload["pull_request"]
    pull["number"] = payload["number"] = runner.pr
    pull["base"]["sha"] = runner.git("rev-parse", "refs/heads/main")
    pull["head"]["sha"] = runner.git("rev-parse", f"refs/pull/{runner.pr}/head")
    pull["merge_commit_sha"] = runner.git("rev-parse", "HEAD")
    pull["user"]["login"] = login
    payload["repository"]["full_name"] = pull["base"]["repo"]["full_name"] = pull["head"]["repo"]["full_name"] = \
        REPOSITORY
    (root / "workflow" / "event.json").write_text(json.dumps(payload), encoding="utf-8")
    (root / "file_commands" / "set_output").touch()
    (root / "file_commands" / "step_summary").touch()
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)
    return runner


def run_container(engine: Engine, image: str, runner: Runner, env: dict[str, str], *args: str,
                   entrypoint: str | None = None) -> subprocess.CompletedProcess[bytes]:
    """`docker run` with the runner's mounts, working directory and network; never raises on a non-zero exit."""
    argv = ["run", "--rm", "--network=host", "--workdir", "/github/workspace",
            "-v", f"{runner.workspace}:/github/workspace", "-v", f"{runner.file('home')}:/github/home",
            "-v", f"{runner.file('workflow')}:/github/workflow",
            "-v", f"{runner.file('file_commands')}:/github/file_commands"]
    for key, value in env.items():
        argv += ["-e", f"{key}={value}"]
    if entrypoint is not None:
        argv += ["--entrypoint", entrypoint]
    return engine.run(*argv, image, *args, check=False, timeout=600)


def action_env(github: FakeGitHub, results: FakeResultsService, run_properties: str = "false") -> dict[str, str]:
    """The variables the runner sets for a container step, pointed at the fakes."""
    return {
        "HOME": "/github/home", "CI": "true", "GITHUB_ACTIONS": "true",
        "GITHUB_WORKSPACE": "/github/workspace", "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": "/github/workflow/event.json", "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_OUTPUT": "/github/file_commands/set_output",
        "GITHUB_STEP_SUMMARY": "/github/file_commands/step_summary",
        "GITHUB_API_URL": github.url, "GITHUB_SERVER_URL": "https://github.example", "GITHUB_RUN_ID": "7",
        "ACTIONS_RUNTIME_TOKEN": results.token, "ACTIONS_RESULTS_URL": results.url,
        # The runner keeps the hyphen (INPUT_CHECK-NAME); the action also reads INPUT_CHECK_NAME.
        "INPUT_GITHUB-TOKEN": "ghs_fake", "INPUT_CHECK-NAME": "evidence-gate", "INPUT_RUN-PROPERTIES": run_properties,
        "INPUT_UPLOAD-ARTIFACT": "true", "INPUT_ARTIFACT-NAME": "evidence-gate-receipt",
        "INPUT_RECEIPT-PATH": "receipt.json", "INPUT_TODAY": TODAY,
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
            out[name] = "\n".join(lines[i + 1:end])
            i = end + 1
            continue
        if line:
            name, _, value = line.partition("=")
            out[name] = value
        i += 1
    return out
