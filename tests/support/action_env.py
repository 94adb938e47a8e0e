"""Helpers for action tests: a runner-like environment, a pull request repository and output parsing."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.repo_builder import GitRepo

FIXTURES = 60  # locked files the tampering PR touches: more than one batch of annotations


@dataclass
class PullRequest:
    """A repository holding a base, a PR head and GitHub's merge commit (refs/pull/7/merge)."""

    repo: GitRepo
    base: str
    head: str
    merge: str
    event: Path


def pull_request(tmp_path: Path, shared_dir: Path, *, author: str = "agent-smith", tamper: bool = True) -> PullRequest:
    """Build the repository and a real pull_request payload rewritten to its shas."""
    repo = GitRepo(tmp_path / "origin")
    files: dict[str, str | bytes | None] = {
        "SCORE_PROPERTIES": "properties/test_p.py::test_x\n",
        "properties/test_p.py": "def test_x():\n    assert True\n",
        "src/app.py": "x = 1\n",
    }
    files.update({f"fixtures/f{i:02}.txt": f"fixture {i}\n" for i in range(FIXTURES)})
    base = repo.commit("base", files)
    repo.branch("pr")
    change: dict[str, str | bytes | None] = {"src/app.py": "x = 2\n"}
    if tamper:
        change.update({f"fixtures/f{i:02}.txt": f"rewritten {i}\n" for i in range(FIXTURES)})
    head = repo.commit("patch", change)
    merge = repo.merge_ref(base, head)
    repo.git("update-ref", "refs/pull/7/merge", merge)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, author
    payload["repository"]["full_name"] = pr["head"]["repo"]["full_name"] = "octo/repo"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return PullRequest(repo, base, head, merge, event)


def runner_env(tmp_path: Path, workspace: Path, event: Path, api_url: str | None, **inputs: str) -> dict[str, str]:
    """The variables the runner gives a container step (inputs as INPUT_<KEBAB-NAME>)."""
    env = {
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_REPOSITORY": "octo/repo",
        "GITHUB_OUTPUT": str(tmp_path / "output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_SERVER_URL": "https://github.example",
        "GITHUB_RUN_ID": "99",
        "INPUT_RUN-PROPERTIES": "false",
        "INPUT_TODAY": "2026-09-10",
    }
    if api_url:
        env["GITHUB_API_URL"] = api_url
        env["INPUT_GITHUB-TOKEN"] = "t0ken"
    env.update({f"INPUT_{k.upper().replace('_', '-')}": v for k, v in inputs.items()})
    return env


def outputs(path: Path) -> dict[str, str]:
    """Parse a $GITHUB_OUTPUT file written in the heredoc form."""
    text = path.read_text("utf-8")
    found: dict[str, Any] = {}
    for m in re.finditer(r"^([^<\n]+)<<(\S+)\n(.*?)\n\2\n", text, re.MULTILINE | re.DOTALL):
        found[m.group(1)] = m.group(3)
    return found


def base_receipt(head: str, **changes: Any) -> bytes:
    """The base branch's last receipt for the delta, zipped as the action uploads it: a real run's final receipt
    with one failing property (report_cases/property-failed), rewritten to have judged `head` (and `changes`)."""
    from evidence_gate.github.artifact_upload import build_zip
    from evidence_gate.receipt.write import canonical_bytes

    cases = Path(__file__).resolve().parents[1] / "report_cases"
    receipt = json.loads((cases / "property-failed" / "receipt.json").read_text("utf-8"))
    receipt["git"]["head"] = head
    receipt.update(changes)
    return build_zip([("receipt.json", canonical_bytes(receipt))])


def assert_fixed_delta(texts: tuple[str, ...], printed: str, baseline: str) -> None:
    """Each posted text (check run summary, job summary) and the log say, against `base_receipt(baseline)`, that the
    pull request fixed its one failing property and added nothing."""
    for text in texts:
        plain = text.replace("\\", "")
        assert f"### Since main's last receipt ({baseline[:12]})" in plain
        assert "**0 new findings, 1 fixed" in plain
        assert "- ✅ fixed · `property-failed` `properties/test_allocate_properties.py`: test_sum_is_preserved" in plain
    assert f"since main's last receipt ({baseline[:12]}): 0 new findings, 1 fixed" in printed
