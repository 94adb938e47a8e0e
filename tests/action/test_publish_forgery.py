"""The fork publisher re-derives the property-lane rows from a receipt's own facts and refuses one edited after the run.

Each forgery starts from a genuine failing receipt made by a real fork job (the sealed property lane on a red
property: `property-failed` on every planned seed, a `freeze_eligible` ledger), is edited the way a fork that wants a
green check would edit it, and is published through the fake Checks API (bodies validated against GitHub's schema).
The receipt's facts and claims then disagree, so the check run is a failure that names what disagreed, never a success.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_action_publish import NAME, RUN_ID, Fork, _fork_job, _publish, _receipt, _serve_pull, fork_of

from evidence_gate.action import publish as action_publish
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS
from evidence_gate.git import Repo
from evidence_gate.github.artifact_upload import build_zip
from evidence_gate.receipt import facts as run_facts
from evidence_gate.receipt.write import canonical_bytes
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService
from support.property_repo import base_files
from support.repo_builder import GitRepo

PASS = {"row": "pass", "gate": "pass", "title": "All clear: score the code diff", "matched": ["pass"], "exit_code": 0}
DIGEST_PRODUCER = "\n\ndef produce(value):\n    return {'doubled': [x * 2 for x in value]}\n"


@pytest.fixture
def failing(tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService) -> tuple[Fork, dict]:
    """A fork PR that leaves the red property red, and the genuine receipt its own job uploaded."""
    fork = fork_of(tmp_path, base_files(fresh_seeds=1), {"README.md": "a fork's change that fixes nothing\n"})
    receipt = _receipt(_fork_job(fork, shared_dir, results, github))
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    assert receipt["properties"]["ledgers"][0]["status"] == "freeze_eligible"
    _serve_pull(github, shared_dir, fork)
    return fork, receipt


def _claim_pass(receipt: dict[str, Any]) -> None:
    receipt.update(ok=True, violations=[], decision={**PASS, "scored": True})


def _hide_failure(receipt: dict[str, Any]) -> None:
    """Every ledger field that names the failure is cleared, the counts made whole; the per-seed runs are left."""
    _claim_pass(receipt)
    for ledger in receipt["properties"]["ledgers"]:
        ledger.update(
            failing_seed=None,
            failing_seeds=[],
            shrink_stable=None,
            reproduced=None,
            assertion_hash=None,
            falsifying=None,
            failure=None,
            status="budget_pass_no_freeze",
            examples=dict.fromkeys(ledger["examples"], 25),
        )
    receipt["properties"]["counts"] = {"open": 0, "closed_failures": 0, "budget_passes": 1}


def _drop_seeds(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    receipt["properties"]["plan"] = [11, 12]
    for ledger in receipt["properties"]["ledgers"]:
        ledger.update(planned_seeds=[11, 12])


def _shard(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    receipt["properties"]["shard"] = [2, 2]


def _other_commit(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    for ledger in receipt["properties"]["ledgers"]:
        ledger["patch_id"] = receipt["git"]["baseline"]


def _run_false(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    receipt["mode"]["run"] = False
    receipt["properties"].update(ledgers=[], counts={"open": 0, "closed_failures": 0, "budget_passes": 0})


def _decision_only(receipt: dict[str, Any]) -> None:
    receipt["decision"] = {**PASS, "scored": True}
    receipt["ok"] = True


FORGERIES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("violations emptied, decision pass", _claim_pass, "its facts show property-failed"),
    ("decision alone set to pass", _decision_only, "its decision row 'pass' is not 'property-failed'"),
    ("ledgers dropped", lambda r: (_claim_pass(r), r["properties"].update(ledgers=[])), "no ledger for"),
    ("example counts edited", lambda r: r["properties"]["ledgers"][0]["examples"].update({"11": 25}), "example counts"),
    ("freeze_eligible property hidden", _hide_failure, "names failing seeds [], but its runs failed on"),
    ("seeds removed from the plan", _drop_seeds, "is not the baseline's [11, 12, 13, 14]"),
    ("run: false claimed", _run_false, "says the properties were not run (`run: false`)"),
    ("a shard's properties", _shard, "its properties are shard [2, 2]'s"),
    ("ledgers for another commit", _other_commit, "is not for"),
    ("runs dropped from a ledger", lambda r: r["properties"]["ledgers"][0].pop("runs"), "records no runs"),
    ("excused by no entry", lambda r: r["properties"]["ledgers"][0].update(excused_by="x"), "no active entry"),
]


@pytest.mark.parametrize(("label", "forge", "message"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_forged_receipt_is_a_failing_check_run(
    failing: tuple[Fork, dict[str, Any]],
    github: FakeGitHub,
    results: FakeResultsService,
    label: str,
    forge: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    """The edited receipt is not accepted: a failing check run on the PR head, run-integrity naming the disagreement."""
    fork, genuine = failing
    forged = copy.deepcopy(genuine)
    forge(forged)
    assert forged != genuine, label
    github.add_artifact(RUN_ID, NAME, build_zip([("receipt.json", canonical_bytes(forged))]))
    code, printed, published = _publish(fork, github, results)
    assert code == EXIT_FAIL, (label, printed)
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (fork.head, "failure"), label
    assert published["decision"]["row"] == "run-integrity", (label, published["violations"])
    assert published["published_from"]["accepted"] is False, label
    assert any(message in v["message"] for v in published["violations"]), (label, published["violations"])


def test_the_genuine_failing_receipt_is_accepted_and_fails(
    failing: tuple[Fork, dict[str, Any]], github: FakeGitHub, results: FakeResultsService
) -> None:
    """The control: unedited, the same receipt holds up (its facts derive exactly its rows) and posts its own failure."""
    fork, genuine = failing
    assert run_facts.contradictions(genuine) == []
    assert [v.to_json() for v in run_facts.derived_rows(genuine)] == genuine["violations"]
    github.add_artifact(RUN_ID, NAME, build_zip([("receipt.json", canonical_bytes(genuine))]))
    code, _, published = _publish(fork, github, results)
    assert code == EXIT_FAIL
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    assert published["published_from"]["accepted"] is True
    assert published["decision"]["row"] == "property-failed"
    assert published["violations"] == genuine["violations"]


def _digest_base() -> dict[str, str | bytes | None]:
    expected = hashlib.sha256(json.dumps({"doubled": [2, 4]}, separators=(",", ":")).encode()).hexdigest()
    files = base_files(fresh_seeds=0)
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["fixtures"] = {"producer": "calc:produce"}
    files.update(
        {
            ".evidence-gate.yml": json.dumps(config),
            "fixtures/digests.json": json.dumps(
                {"version": 1, "records": [{"id": "two", "input": [1, 2], "output_sha256": expected}]}
            ),
            "src/calc.py": "def double(x):\n    return x * 2\n" + DIGEST_PRODUCER,
        }
    )
    return files


def _match(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    receipt["fixtures"]["digests"][0]["status"] = "match"


def _rebind(receipt: dict[str, Any]) -> None:
    _claim_pass(receipt)
    record = receipt["fixtures"]["digests"][0]
    record.update(status="match", output_sha256=record["produced_sha256"])


@pytest.mark.parametrize(
    ("forge", "message"),
    [(_match, "says 'match' of its hashes"), (_rebind, "its digest records are not the baseline's")],
    ids=["status set to match", "recorded output rebound to the produced one"],
)
def test_an_edited_digest_record_is_refused(
    tmp_path: Path,
    shared_dir: Path,
    github: FakeGitHub,
    results: FakeResultsService,
    forge: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    """A genuine fixture-digest-mismatch whose record is edited to match: refused, not published as a pass."""
    patch = {"src/calc.py": "def double(x):\n    return x * 2\n" + DIGEST_PRODUCER.replace("x * 2", "x + 2")}
    fork = fork_of(tmp_path, _digest_base(), patch)
    genuine = _receipt(_fork_job(fork, shared_dir, results, github))
    assert genuine["decision"]["row"] == "fixture-digest-mismatch", genuine["violations"]
    assert run_facts.contradictions(genuine) == []
    _serve_pull(github, shared_dir, fork)
    forged = copy.deepcopy(genuine)
    forge(forged)
    github.add_artifact(RUN_ID, NAME, build_zip([("receipt.json", canonical_bytes(forged))]))
    code, _, published = _publish(fork, github, results)
    assert code == EXIT_FAIL
    assert published["decision"]["row"] == "run-integrity", published["violations"]
    assert any(message in v["message"] for v in published["violations"]), published["violations"]


GATE_STEP = "      - uses: evidence-gate/evidence-gate@v1\n"


@pytest.mark.parametrize(
    ("workflow", "runs"),
    [
        (
            f"on: pull_request\njobs:\n  gate:\n    steps:\n{GATE_STEP}        with: {{run-properties: 'false'}}\n",
            False,
        ),
        (f"on: pull_request\njobs:\n  gate:\n    steps:\n{GATE_STEP}        with: {{run-properties: false}}\n", False),
        (f"on: pull_request\njobs:\n  gate:\n    steps:\n{GATE_STEP}", True),
        (f"on: pull_request\njobs:\n  gate:\n    steps:\n{GATE_STEP}        with: {{run-properties: 'true'}}\n", True),
        ("on: pull_request\njobs: {}\n", True),
        ("jobs: [unclosed\n", True),
    ],
    ids=["false", "false unquoted", "default", "true", "no gate step", "unparsable"],
)
def test_a_run_false_claim_rests_on_the_base_workflow(git_repo: GitRepo, workflow: str, runs: bool) -> None:
    """`run: false` is believed only when the base branch's workflow says `run-properties: false` on its gate step."""
    base = git_repo.commit("base", {".github/workflows/gate.yml": workflow})
    why = action_publish._runs_properties(Repo(git_repo.path), base, ".github/workflows/gate.yml")
    assert (why is not None) == runs, why
    assert action_publish._runs_properties(Repo(git_repo.path), base, ".github/workflows/other.yml") is not None


def test_an_honest_static_only_run_still_publishes(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """A base workflow with `run-properties: false`: the fork's static-only receipt is accepted (and judged statically)."""
    workflow = f"on: pull_request\njobs:\n  gate:\n    steps:\n{GATE_STEP}        with: {{run-properties: 'false'}}\n"
    fork = fork_of(tmp_path, base_files(fresh_seeds=0), {"README.md": "docs\n"}, workflow)
    receipt = _receipt(_fork_job(fork, shared_dir, results, github, run_properties="false"))
    assert receipt["mode"]["run"] is False
    _serve_pull(github, shared_dir, fork)
    github.add_artifact(RUN_ID, NAME, build_zip([("receipt.json", canonical_bytes(receipt))]))
    code, printed, published = _publish(fork, github, results, workflow_path=".github/workflows/gate.yml")
    assert code == EXIT_PASS, printed
    assert published["published_from"]["accepted"] is True
