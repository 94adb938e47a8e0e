"""`mode: publish` on `workflow_run`: the trusted job that posts a fork pull request's verdict, end to end.

The fork's `pull_request` job is a real action run (read-only token: its check run is refused with 403) that runs the
sealed property lane and uploads its receipt; the publisher is a second action run in a clone of the base branch,
with a real `workflow_run` payload (@octokit/webhooks-examples 7.6.1, `tests/data/workflow_run.completed.json`),
that downloads the receipt from the fake GitHub's artifacts API, re-derives the static lanes and posts the check run.
Every forged or broken receipt below must end in a failing check run, never a success.
"""

from __future__ import annotations

import copy
import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS, EXIT_PRECONDITION
from evidence_gate.github.artifact_upload import build_zip
from evidence_gate.receipt.write import canonical_bytes
from support.action_env import assert_fixed_delta, base_receipt, outputs, runner_env
from support.fake_github import FakeGitHub, Scripted
from support.fake_results_service import FakeResultsService
from support.property_repo import GREEN, base_files
from support.repo_builder import GitRepo

DATA = Path(__file__).parents[1] / "data"
NAME = "evidence-gate-receipt"
RUN_ID = 4711
WORKFLOW = "on: pull_request\njobs: {}\n"


@dataclass
class Fork:
    """A base repository, a fork's pull request #7 in it (refs/pull/7/*) and the publisher's clone of main."""

    root: Path
    origin: GitRepo
    base: str
    head: str
    merge: str
    publisher: GitRepo


def _run(env: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    return code, out.getvalue()


def _fork_pr(root: Path, patch: dict[str, str | bytes | None]) -> Fork:
    return fork_of(root, base_files(fresh_seeds=0), patch)


def fork_of(
    root: Path, base: dict[str, str | bytes | None], patch: dict[str, str | bytes | None], workflow: str = WORKFLOW
) -> Fork:
    """A base repository with `base` committed, a fork's pull request #7 with `patch`, and the publisher's clone."""
    origin = GitRepo(root / "origin")
    base_id = origin.commit("baseline", {**base, ".github/workflows/gate.yml": workflow})
    origin.branch("fork-patch")
    head = origin.commit("patch", patch)
    merge = origin.merge_ref(base_id, head)
    origin.git("update-ref", "refs/pull/7/head", head)
    origin.git("update-ref", "refs/pull/7/merge", merge)
    publisher = GitRepo(root / "publisher")
    publisher.git("remote", "add", "origin", f"file://{origin.path}")
    publisher.git("fetch", "-q", "origin", "main")
    publisher.git("checkout", "-q", "-B", "main", "FETCH_HEAD")
    return Fork(root, origin, base_id, head, merge, publisher)


def _pull_request_event(root: Path, shared_dir: Path, fork: Fork) -> Path:
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = fork.base, fork.head, "agent-smith"
    payload["repository"]["full_name"] = "octo/repo"
    pr["head"]["repo"]["full_name"] = "fork-owner/repo"
    path = root / "pull_request.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    return path


def _fork_job(
    fork: Fork, shared_dir: Path, results: FakeResultsService, github: FakeGitHub, run_properties: str = "true"
) -> bytes:
    """The untrusted job: the gate on the merge commit with a read-only token; returns the zip it uploaded."""
    github.fail("POST", Scripted(403, {}, {"message": "Resource not accessible by integration"}))
    folder = fork.root / "fork-job"
    folder.mkdir()
    event = _pull_request_event(fork.root, shared_dir, fork)
    env = runner_env(folder, fork.origin.path, event, github.url, run_properties=run_properties)
    env.update({"ACTIONS_RUNTIME_TOKEN": results.job_token("fork-job"), "ACTIONS_RESULTS_URL": results.url})
    _code, printed = _run(env)
    assert "cannot create a check run" in printed
    assert github.runs == {}
    data = results.state.blobs[NAME].data
    results.state.blobs.clear()
    results.state.artifacts.clear()
    return data


def _serve_pull(github: FakeGitHub, shared_dir: Path, fork: Fork) -> None:
    pr = copy.deepcopy(
        json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text())["pull_request"]
    )
    pr.update({"number": 7, "state": "open", "auto_merge": None})
    pr["user"]["login"] = "agent-smith"
    pr["head"].update({"sha": fork.head, "ref": "fork-patch"})
    pr["head"]["repo"]["full_name"] = "fork-owner/repo"
    pr["head"]["repo"]["owner"]["login"] = "fork-owner"
    pr["base"].update({"sha": fork.base, "ref": "main"})
    github.pulls[7] = pr


def _publish(
    fork: Fork,
    github: FakeGitHub,
    results: FakeResultsService,
    *,
    event: str = "pull_request",
    job: str = "publish",
    workflow_path: str = ".github/workflows/gate.yml",
) -> tuple[int, str, dict[str, Any]]:
    """The trusted job: a real workflow_run payload rewritten to this fork's run (of the workflow at `workflow_path`)."""
    payload = json.loads((DATA / "workflow_run.completed.json").read_text("utf-8"))
    run = payload["workflow_run"]
    run.update(
        {
            "id": RUN_ID,
            "event": event,
            "head_sha": fork.head,
            "head_branch": "fork-patch",
            "pull_requests": [],  # GitHub lists no pull request for a fork's run
            "path": workflow_path,
        }
    )
    run["head_repository"]["full_name"] = "fork-owner/repo"
    run["head_repository"]["owner"]["login"] = "fork-owner"
    payload["repository"]["full_name"] = "octo/repo"
    folder = fork.root / job
    folder.mkdir()
    path = folder / "event.json"
    path.write_text(json.dumps(payload), encoding="utf-8")
    env = runner_env(folder, fork.publisher.path, path, github.url, mode="publish")
    env.update(
        {
            "GITHUB_EVENT_NAME": "workflow_run",
            "ACTIONS_RUNTIME_TOKEN": results.job_token(job),
            "ACTIONS_RESULTS_URL": results.url,
        }
    )
    code, printed = _run(env)
    receipt_file = fork.publisher.path / "receipt.json"
    return code, printed, json.loads(receipt_file.read_text("utf-8")) if receipt_file.exists() else {}


def _receipt(data: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        value = json.loads(archive.read("receipt.json"))
    assert isinstance(value, dict)
    return value


def _forged(receipt: dict[str, Any], **git: str) -> bytes:
    """A receipt edited to say `pass` (and, given, other commits), zipped like the action does."""
    forged = copy.deepcopy(receipt)
    forged["git"].update(git)
    forged.update(
        {
            "ok": True,
            "violations": [],
            "decision": {
                "row": "pass",
                "gate": "pass",
                "title": "All clear: score the code diff",
                "matched": ["pass"],
                "exit_code": 0,
                "scored": True,
            },
        }
    )
    return build_zip([("receipt.json", canonical_bytes(forged))])


@pytest.fixture
def honest(tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService) -> tuple[Fork, bytes]:
    """A fork PR fixing the red property, and the receipt its own (untrusted) job uploaded."""
    fork = _fork_pr(tmp_path, {"src/calc.py": GREEN})
    data = _fork_job(fork, shared_dir, results, github)
    _serve_pull(github, shared_dir, fork)
    return fork, data


def test_an_honest_fork_pr_gets_a_success_check_run_on_its_head(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """The fork job's receipt holds up: success on the PR head, its seed ledgers kept, the token never sent to blobs."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    code, printed, receipt = _publish(fork, github, results)
    assert code == EXIT_PASS, printed
    ((run_id, run),) = github.runs.items()
    assert (run["head_sha"], run["conclusion"], run["name"]) == (fork.head, "success", "evidence-gate")
    assert receipt["published_from"]["accepted"] is True
    (ledger,) = receipt["properties"]["ledgers"]
    assert sorted(ledger["attempted_seeds"]) == [11, 12, 13, 14]
    assert receipt["git"] == _receipt(data)["git"]
    assert github.blob_store.auth == [None]
    assert outputs(fork.root / "publish" / "output")["check-run-id"] == str(run_id)
    assert _receipt(results.state.blobs[NAME].data) == receipt


def test_a_rerun_updates_the_same_check_run(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """Re-running the publisher finds its check run by external id and completes it again: one run, one POST."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    assert _publish(fork, github, results)[0] == EXIT_PASS
    results.state.artifacts.clear()
    assert _publish(fork, github, results, job="publish-again")[0] == EXIT_PASS
    assert len(github.runs) == 1 and [c.status for c in github.calls("POST")] == [403, 201]


def test_ok_true_for_another_head_is_refused(
    tmp_path: Path, honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """A passing receipt that judged another PR's merge commit is event-mismatch on this head, not a success."""
    fork, data = honest
    fork.origin.checkout("main")
    fork.origin.branch("other")
    other = fork.origin.commit("other patch", {"src/calc.py": GREEN + "# other\n"})
    other_merge = fork.origin.merge_ref(fork.base, other)
    fork.origin.git("update-ref", "refs/pull/8/merge", other_merge)
    github.add_artifact(RUN_ID, NAME, _forged(_receipt(data), head=other_merge))
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_PRECONDITION
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (fork.head, "failure")
    assert receipt["decision"]["row"] == "event-mismatch"
    assert "not of run 4711's head" in receipt["violations"][0]["message"]


def test_ok_true_beside_a_patch_that_edits_the_workflow_fails(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """The fork rewrote the gate workflow and uploaded a `pass`: the static lanes re-derived here say tampering."""
    fork = _fork_pr(tmp_path, {"src/calc.py": GREEN, ".github/workflows/gate.yml": "on: pull_request\njobs: {x: 1}\n"})
    genuine = _receipt(_fork_job(fork, shared_dir, results, github))
    assert genuine["decision"]["row"] == "evidence-path-edited"  # what the real gate said in the fork's run
    _serve_pull(github, shared_dir, fork)
    github.add_artifact(RUN_ID, NAME, _forged(genuine))
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_FAIL
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    assert receipt["decision"]["row"] == "evidence-path-edited"
    assert receipt["published_from"]["accepted"] is False
    assert any(a["path"] == ".github/workflows/gate.yml" for a in github.annotations[run["id"]])


def test_a_crafted_merge_commit_is_refused(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """An "evil merge" with the right parents but other code (pushed to the fork's network) is not the patch."""
    fork, data = honest
    fork.origin.git("checkout", "-q", "--detach", fork.merge)
    fork.origin.write({"src/calc.py": "def double(x):\n    return 2 * x  # not what the PR says\n"})
    fork.origin.git("add", "-A")
    tree = fork.origin.git("write-tree")
    evil = fork.origin.git("commit-tree", tree, "-p", fork.base, "-p", fork.head, "-m", "Merge")
    fork.origin.git("update-ref", "refs/heads/evil", evil)
    github.add_artifact(RUN_ID, NAME, _forged(_receipt(data), head=evil))
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_PRECONDITION
    assert "is not the clean merge" in receipt["violations"][0]["message"]


def test_a_baseline_outside_the_base_branch_is_refused(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """A receipt judged against the fork's own "baseline" (weaker configuration) is refused: not the base branch's."""
    fork, data = honest
    fork.origin.checkout(fork.base)
    fork.origin.branch("weak-base")
    weak = fork.origin.commit("weaker config", {".evidence-gate.yml": "version: 1\nagents: []\n"})
    fake_merge = fork.origin.merge_ref(weak, fork.head)
    github.add_artifact(RUN_ID, NAME, _forged(_receipt(data), baseline=weak, head=fake_merge))
    fork.origin.git("update-ref", "refs/heads/weak-merge", fake_merge)
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_PRECONDITION
    assert "is not a commit of the base branch" in receipt["violations"][0]["message"]


def test_no_artifact_at_all_fails(honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService) -> None:
    """A fork run that uploaded nothing (its workflow skipped the gate): a failing check run that says so."""
    fork, _ = honest
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_FAIL
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    assert receipt["decision"]["row"] == "run-integrity"
    assert "uploaded no artifact named evidence-gate-receipt" in run["output"]["summary"]


@pytest.mark.parametrize(
    ("label", "data", "size"),
    [
        ("malformed zip", b"PK\x03\x04 this is not really a zip", None),
        ("listed over the cap", b"small", 5 << 20),
        ("zip bomb", None, None),
        ("schema broken", build_zip([("receipt.json", b'{"schema": "evidence-gate/receipt/v1", "ok": true}')]), None),
        ("expired", b"", None),
    ],
)
def test_an_unusable_receipt_artifact_fails(
    honest: tuple[Fork, bytes],
    github: FakeGitHub,
    results: FakeResultsService,
    label: str,
    data: bytes | None,
    size: int | None,
) -> None:
    """Oversized, malformed, bomb-shaped, schema-breaking or expired artifacts never become a success."""
    fork, genuine = honest
    if data is None:
        data = build_zip([("receipt.json", b" " * (64 << 20))])  # deflates to ~64 KiB, inflates to 64 MiB
    if label == "expired":
        github.add_artifact(RUN_ID, NAME, genuine, expired=True)
    else:
        github.add_artifact(RUN_ID, NAME, data, size=size)
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_FAIL, label
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure", label
    assert receipt["decision"]["row"] == "run-integrity", (label, receipt["violations"])


def test_a_patch_to_a_local_action_voids_the_property_results(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """`.github/actions/` is not locked, but the fork's workflow may run it: its property results are not accepted."""
    fork = _fork_pr(tmp_path, {"src/calc.py": GREEN, ".github/actions/setup/action.yml": "runs: {using: node20}\n"})
    data = _fork_job(fork, shared_dir, results, github)
    assert _receipt(data)["ok"] is True
    _serve_pull(github, shared_dir, fork)
    github.add_artifact(RUN_ID, NAME, data)
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_FAIL
    assert receipt["decision"]["row"] == "run-integrity"
    assert ".github/actions/setup/action.yml" in receipt["violations"][0]["message"]


def test_a_merge_group_run_is_not_published(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """workflow_run of a merge-queue run: that run posted its own check with a write token; nothing is posted."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    code, printed, _ = _publish(fork, github, results, event="merge_group")
    assert code == EXIT_PASS
    assert github.runs == {} and "nothing to publish" in printed


@pytest.mark.parametrize(
    ("label", "edit", "message"),
    [
        ("ledgers dropped", lambda r: r["properties"].update(ledgers=[]), "no ledger for properties/test_double.py"),
        (
            "status softened",
            lambda r: r["properties"]["ledgers"][0].update(status="freeze_eligible"),
            "does not close as it says",
        ),
        ("plan shortened", lambda r: r["properties"].update(plan=[11]), "is not the baseline's"),
        (
            "seeds dropped",
            lambda r: r["properties"]["ledgers"][0].update(planned_seeds=[11], attempted_seeds=[11]),
            "the whole plan",
        ),
    ],
)
def test_an_edited_seed_ledger_voids_the_property_results(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService, label: str, edit: Any, message: str
) -> None:
    """A receipt for the right commits whose ledgers were edited is not accepted: run-integrity, never success."""
    fork, data = honest
    receipt = _receipt(data)
    edit(receipt)
    github.add_artifact(RUN_ID, NAME, build_zip([("receipt.json", canonical_bytes(receipt))]))
    code, _, published = _publish(fork, github, results)
    assert code == EXIT_FAIL, label
    assert published["decision"]["row"] == "run-integrity"
    assert message in published["violations"][-1]["message"], published["violations"]
    assert published["published_from"]["accepted"] is False


def test_a_receipt_against_an_older_base_is_stale(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """The base moved on (and GitHub's merge ref with it): re-running an old run cannot publish old evidence."""
    fork, data = honest
    fork.origin.checkout("main")
    newer = fork.origin.commit("base moves on", {"README.md": "newer\n"})
    fork.origin.git("update-ref", "refs/pull/7/merge", fork.origin.merge_ref(newer, fork.head))
    github.add_artifact(RUN_ID, NAME, data)
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_PRECONDITION
    assert "an older commit of the base branch" in receipt["violations"][0]["message"]


def test_a_base_that_moved_before_github_refreshed_the_merge_ref_still_publishes(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """GitHub recomputes refs/pull/N/merge lazily: while it still names the run's baseline, the receipt is current."""
    fork, data = honest
    fork.origin.checkout("main")
    fork.origin.commit("base moves on", {"README.md": "newer\n"})
    github.add_artifact(RUN_ID, NAME, data)
    code, printed, _ = _publish(fork, github, results)
    assert code == EXIT_PASS, printed


def test_no_artifact_and_no_merge_ref_still_fails_with_both_reasons(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """A conflicting PR (GitHub made no merge ref) whose run uploaded nothing: failing, naming both causes."""
    fork, _ = honest
    fork.origin.git("update-ref", "-d", "refs/pull/7/merge")
    code, _, receipt = _publish(fork, github, results)
    assert code == EXIT_PRECONDITION
    messages = [v["message"] for v in receipt["violations"]]
    assert "a pull request with merge conflicts has no merge ref" in messages[0]
    assert "uploaded no artifact named" in messages[1]
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"


def test_api_errors_are_retried_then_fail_closed(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """Two 502s are retried and the verdict still publishes; a 403 on the artifacts list is a failure naming it."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    github.fail("GET", Scripted(502), Scripted(502))
    assert _publish(fork, github, results)[0] == EXIT_PASS
    github.fail(
        "GET",
        Scripted(200, body=[github.pulls[7]]),  # the PR lookup, then the artifacts list refused
        Scripted(403, body={"message": "Resource not accessible by integration"}),
    )
    results.state.artifacts.clear()
    code, _, receipt = _publish(fork, github, results, job="publish-403")
    assert code == EXIT_FAIL
    assert "could not be downloaded" in receipt["violations"][-1]["message"]
    assert "HTTP 403" in receipt["violations"][-1]["message"]


def test_publish_shows_the_delta_against_the_base_branch_s_last_receipt(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """The publisher reads the base repository's receipt artifact on the baseline with its own token: the check run,
    job summary and log say what the fork's PR fixed; the fork's own artifacts never count as the base's."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    github.add_artifact(4712, NAME, base_receipt(fork.base, ok=True), head_sha=fork.base, head_repository_id=2)
    github.add_artifact(4000, NAME, base_receipt(fork.base), head_sha=fork.base, head_repository_id=1)
    code, printed, receipt = _publish(fork, github, results)
    assert code == EXIT_PASS, printed
    (run,) = github.runs.values()
    assert run["conclusion"] == "success" and receipt["published_from"]["accepted"] is True
    assert_fixed_delta(
        (run["output"]["summary"], (fork.root / "publish" / "summary.md").read_text("utf-8")), printed, fork.base
    )


@pytest.mark.parametrize(
    ("label", "why"),
    [
        ("schema broken", "no delta (artifact "),
        ("listed over the cap", "-byte cap"),
        ("another commit", "not the baseline"),
        ("forbidden", "give the job `actions: read`"),
        ("none", ""),
    ],
)
def test_a_hostile_or_missing_base_receipt_is_no_delta_and_the_same_published_verdict(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService, label: str, why: str
) -> None:
    """A base artifact that breaks the schema, is listed over the cap or judged another commit, or a listing the
    token may not read, is `no delta (why)`; none on the baseline is no delta section. The verdict stands."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    hostile = {
        "schema broken": build_zip([("receipt.json", b'{"schema": "evidence-gate/receipt/v1", "ok": true}')]),
        "listed over the cap": b"small",
        "another commit": base_receipt("1" * 40),
    }
    if label in hostile:
        size = 5 << 20 if label == "listed over the cap" else None
        github.add_artifact(4000, NAME, hostile[label], size=size, head_sha=fork.base, head_repository_id=1)
    github.artifacts_forbidden = label == "forbidden"
    code, printed, receipt = _publish(fork, github, results)
    assert code == EXIT_PASS, (label, printed)
    (run,) = github.runs.values()
    assert run["conclusion"] == "success" and receipt["published_from"]["accepted"] is True
    for text in (run["output"]["summary"], (fork.root / "publish" / "summary.md").read_text("utf-8")):
        plain = text.replace("\\", "")
        if why:
            assert "no delta (" in plain and why in plain, (label, plain)
        else:
            assert "Since main" not in plain


def test_an_earlier_publishers_receipt_on_the_baseline_does_not_hide_the_base_s_own(
    honest: tuple[Fork, bytes], github: FakeGitHub, results: FakeResultsService
) -> None:
    """A publisher runs on the base branch's tip and uploads a fork PR's receipt under the same name: that newer
    artifact on the baseline judged a merge commit, so it is passed over for the base's own receipt."""
    fork, data = honest
    github.add_artifact(RUN_ID, NAME, data)
    github.add_artifact(4001, NAME, base_receipt(fork.merge), head_sha=fork.base, head_repository_id=1)
    github.add_artifact(4000, NAME, base_receipt(fork.base), head_sha=fork.base, head_repository_id=1)
    code, printed, _receipt = _publish(fork, github, results)
    assert code == EXIT_PASS, printed
    (run,) = github.runs.values()
    assert "**0 new findings, 1 fixed" in run["output"]["summary"].replace("\\", "")
