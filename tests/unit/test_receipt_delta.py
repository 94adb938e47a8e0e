"""The delta against the base branch's last receipt: new and fixed findings and the ledger's entries before → after,
from a file (`check --previous`) or the receipt artifact of a gate run on the baseline (the action); a previous
receipt that cannot be trusted is `no delta (why)`, never a changed verdict."""

from __future__ import annotations

import copy
import io
import json
import os
import zipfile
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli
from evidence_gate.action import main as action
from evidence_gate.receipt import delta as receipt_delta
from support.action_env import runner_env
from support.fake_github import FakeGitHub
from support.history_repo import ledger
from support.repo_builder import GitRepo

CASES = Path(__file__).resolve().parents[1] / "report_cases"
BASE = {
    "SCORE_PROPERTIES": "properties/test_p.py::test_x\n",
    "properties/test_p.py": "def test_x():\n    assert True\n",
    "src/app.py": "x = 1\n",
}


def case(name: str) -> dict[str, Any]:
    """A report case's receipt (a real gate run)."""
    value: dict[str, Any] = json.loads((CASES / name / "receipt.json").read_text("utf-8"))
    return value


def test_new_and_fixed_findings_and_the_entry_counts() -> None:
    """Against the property-failed run, the freeze-entry run has one new finding (the entry) and one fixed (the
    property), and the ledger went from one entry to two."""
    delta = receipt_delta.compare(case("property-failed"), case("freeze-entry-added"), "main's last receipt")
    assert [f.row for f in delta.new] == ["freeze-id-added"] and [f.row for f in delta.fixed] == ["property-failed"]
    assert delta.fixed[0].message == "test_sum_is_preserved"  # the test, not its seeds
    assert delta.entries == (1, 2) and delta.against == "main's last receipt (7a981d4fc7d4)"
    assert receipt_delta.counts(delta) == "1 new finding, 1 fixed; freeze ledger 1 → 2 entries"


def test_a_moved_line_is_the_same_finding_and_a_second_copy_is_new() -> None:
    """A finding whose line moved is neither new nor fixed; the same finding twice where there was one is one new."""
    before = case("freeze-entry-added")
    moved = copy.deepcopy(before)
    moved["violations"][0]["line"] = 40
    assert receipt_delta.counts(receipt_delta.compare(before, moved, "x")).startswith("0 new findings, 0 fixed")
    moved["violations"].append(dict(moved["violations"][0]))
    assert len(receipt_delta.compare(before, moved, "x").new) == 1


def _bytes(value: Any) -> bytes:
    return json.dumps(value).encode()


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"{not json", "the receipt is not strict JSON"),
        (b'{"schema": 1, "schema": 2}', "the receipt is not strict JSON"),
        (b"[]", "the receipt is not a JSON object"),
        (_bytes({**case("pass"), "ok": "yes"}), "the receipt breaks the receipt schema: "),
        (_bytes(case("aborted")), "the previous run did not finish: its receipt is aborted"),
        (b" " * (2 << 20), "the receipt is over the "),
    ],
)
def test_an_untrusted_previous_receipt_is_refused_with_why(data: bytes, why: str) -> None:
    """Not JSON, duplicate keys, not an object, off the schema, aborted, or too large: each is a reason, not a
    receipt."""
    found = receipt_delta.parse(data)
    assert isinstance(found, str) and found.startswith(why), found


def test_a_fifo_or_a_missing_file_is_no_delta(tmp_path: Path) -> None:
    """`--previous` naming a FIFO is refused without blocking; a missing file says it cannot be read."""
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    delta = receipt_delta.from_file(fifo, case("pass"))
    assert delta.why_not == "cannot read it (not a regular file)"
    assert receipt_delta.from_file(tmp_path / "none.json", case("pass")).why_not.startswith("cannot read it (")


def _base(tmp_path: Path) -> tuple[GitRepo, str, str]:
    """A base branch whose ledger shrank from three entries to two; its tip and the tip's parent."""
    repo = GitRepo(tmp_path / "origin")
    repo.commit("base", {**BASE, "freeze.yaml": ledger(1)})
    parent = repo.commit("quarantine", {"freeze.yaml": ledger(3)})
    return repo, parent, repo.commit("one fixed", {"freeze.yaml": ledger(2)})


def test_cli_previous_prints_the_delta_and_keeps_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`check --previous` on the base tip's own receipt: the patch's new entry is one new finding, the base's
    unverified removal one fixed, the ledger 2 → 3;
    an unusable previous receipt prints `no delta (why)` and the exit code is the same."""
    repo, parent, base = _base(tmp_path)
    previous = tmp_path / "previous.json"
    args = ["check", "--repo", str(repo.path), "--no-run", "--today", "2026-09-10"]
    assert cli.main([*args, "--base", parent, "--head", base, "--receipt", str(previous)]) == 10  # unverified removal
    repo.branch("pr")
    head = repo.commit("patch", {"freeze.yaml": ledger(3)})
    capsys.readouterr()
    code = cli.main(
        [*args, "--base", base, "--head", head, "--receipt", str(tmp_path / "r.json"), "--previous", str(previous)]
    )
    out = " ".join(capsys.readouterr().out.split())  # wrapped at 80 columns
    assert code == 10
    assert f"since --previous {previous} ({base[:12]}): 1 new finding, 1 fixed; freeze ledger 2 → 3" in out
    assert "new: freeze-id-added freeze.yaml: entry 'flaky-3' is new" in out
    previous.write_text("{}", "utf-8")
    again = cli.main(
        [*args, "--base", base, "--head", head, "--receipt", str(tmp_path / "r.json"), "--previous", str(previous)]
    )
    assert again == code and "no delta (the receipt breaks the receipt schema: " in " ".join(
        capsys.readouterr().out.split()
    )


def _zip(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("receipt.json", data)
    return buffer.getvalue()


def _pull_request(tmp_path: Path, shared_dir: Path) -> tuple[GitRepo, Path, str, bytes]:
    """GitHub's merge commit of a PR that adds a freeze entry, its event, the baseline and the baseline's receipt."""
    repo, parent, base = _base(tmp_path)
    previous = tmp_path / "previous.json"
    cli.main(
        [
            "check",
            "--repo",
            str(repo.path),
            "--no-run",
            "--base",
            parent,
            "--head",
            base,
            "--receipt",
            str(previous),
            "--today",
            "2026-09-10",
        ]
    )
    repo.branch("pr")
    head = repo.commit("patch", {"freeze.yaml": ledger(3)})
    repo.merge_ref(base, head)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, "agent-smith"
    payload["repository"]["full_name"] = pr["head"]["repo"]["full_name"] = "octo/repo"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return repo, event, base, previous.read_bytes()


def _posted(tmp_path: Path, repo: GitRepo, event: Path, github: FakeGitHub) -> tuple[int, str, str]:
    env = runner_env(tmp_path, repo.path, event, github.url, upload_artifact="false")
    env["GITHUB_BASE_REF"] = "main"
    code = action.main(env, stdout=io.StringIO())
    (run,) = github.runs.values()
    return code, run["output"]["summary"], Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")


def test_the_action_shows_the_delta_against_the_baselines_receipt(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """The receipt artifact of a run of this repository on the baseline is the previous receipt: the check run and
    the job summary both say what the PR adds and fixes; a fork's artifact on the same commit is never used."""
    repo, event, base, previous = _pull_request(tmp_path, shared_dir)
    github.add_artifact(7, "evidence-gate-receipt", _zip(b"{}"), head_sha=base, head_repository_id=2)  # a fork's
    github.add_artifact(8, "evidence-gate-receipt", _zip(previous), head_sha=base, head_repository_id=1)
    code, summary, job = _posted(tmp_path, repo, event, github)
    assert code == 10
    for text in (summary, job):
        plain = text.replace("\\", "")
        assert f"### Since main's last receipt ({base[:12]})" in plain
        assert "**1 new finding, 1 fixed; freeze ledger 2 → 3 entries**" in plain
        assert "- ✅ fixed · `freeze-removal-unverified` `freeze.yaml`: entry 'flaky-3' was removed" in plain
        assert "- 🆕 new · `freeze-id-added` `freeze.yaml`: entry 'flaky-3' is new" in plain


def test_the_action_without_a_receipt_on_the_baseline_shows_no_delta(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """Only a fork's artifact names the baseline: there is no previous receipt, and no delta section at all."""
    repo, event, base, previous = _pull_request(tmp_path, shared_dir)
    github.add_artifact(7, "evidence-gate-receipt", _zip(previous), head_sha=base, head_repository_id=2)
    github.add_artifact(8, "evidence-gate-receipt", _zip(previous), head_sha="1" * 40, head_repository_id=1)
    _code, summary, _job = _posted(tmp_path, repo, event, github)
    assert "Since main" not in summary


def test_a_broken_previous_receipt_is_no_delta_and_the_same_verdict(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """A receipt artifact on the baseline that breaks the schema is said as `no delta (why)`; the verdict stands."""
    repo, event, base, previous = _pull_request(tmp_path, shared_dir)
    broken = json.loads(previous)
    broken["ok"] = "yes"
    github.add_artifact(
        8, "evidence-gate-receipt", _zip(json.dumps(broken).encode()), head_sha=base, head_repository_id=1
    )
    code, summary, _job = _posted(tmp_path, repo, event, github)
    assert code == 10
    assert "no delta (artifact " in summary and "breaks the receipt schema" in summary.replace("\\", "")


def test_a_token_that_may_not_list_artifacts_is_no_delta_with_the_fix(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    """A 403 on the artifacts listing (a job without `actions: read`) says so and names the permission."""
    repo, event, _base_sha, _previous = _pull_request(tmp_path, shared_dir)
    github.artifacts_forbidden = True
    code, summary, _job = _posted(tmp_path, repo, event, github)
    assert code == 10
    assert "no delta (the receipt artifacts could not be listed: " in summary.replace("\\", "")
    assert "give the job `actions: read`" in summary
