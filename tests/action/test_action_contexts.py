"""The action on a repository with `contexts:`: one check run per context (`<check-name> / <name>`) with its own
annotations, a neutral one for a context not judged, the step's own run for the index, every receipt in the one
artifact; and shards fail closed. GitHub's API is the schema-validating fake."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS
from support.action_env import outputs, runner_env
from support.context_repo import BROKEN, monorepo
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService
from support.repo_builder import GitRepo


def pull_request(tmp_path: Path, shared_dir: Path, change: dict[str, str | bytes | None]) -> tuple[GitRepo, Path, str]:
    """The monorepo with `change` on a PR branch, GitHub's merge commit checked out, and a pull_request event."""
    repo = monorepo(tmp_path, branch="pr")
    base = repo.git("rev-parse", "main")
    head = repo.commit("patch", change)
    merge = repo.merge_ref(base, head)
    repo.git("update-ref", "refs/pull/7/merge", merge)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, "agent-smith"
    payload["repository"]["full_name"] = pr["head"]["repo"]["full_name"] = "octo/repo"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return repo, event, head


GREEN_AGAIN = "def double(x):\n    return x + x\n"


def run_action(env: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    return code, out.getvalue()


def test_a_check_run_per_context_with_its_own_annotations(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """Editing libs/shared/ (locked by alpha and beta): `evidence-gate / alpha` and `/ beta` fail, each with the
    annotation on the shared file; `/ gamma` is neutral (not judged); `evidence-gate` carries the index."""
    repo, event, head = pull_request(tmp_path, shared_dir, {"libs/shared/notes.txt": "rewritten\n"})
    env = runner_env(tmp_path, repo.path, event, github.url, artifact_name="gate-receipts")
    env.update({"ACTIONS_RUNTIME_TOKEN": results.token, "ACTIONS_RESULTS_URL": results.url})
    code, printed = run_action(env)
    assert code == EXIT_FAIL, printed
    runs = {run["name"]: (run_id, run) for run_id, run in github.runs.items()}
    assert sorted(runs) == [
        "evidence-gate",
        "evidence-gate / alpha",
        "evidence-gate / beta",
        "evidence-gate / gamma",
    ]
    for name, conclusion in [("alpha", "failure"), ("beta", "failure"), ("gamma", "neutral"), ("", "failure")]:
        run_id, run = runs[f"evidence-gate / {name}" if name else "evidence-gate"]
        assert run["head_sha"] == head
        assert (run["status"], run["conclusion"]) == ("completed", conclusion), name
    for name in ("alpha", "beta"):
        run_id, _run = runs[f"evidence-gate / {name}"]
        assert [a["path"] for a in github.annotations[run_id]] == ["libs/shared/notes.txt"]
    assert github.annotations[runs["evidence-gate / gamma"][0]] == []
    assert runs["evidence-gate / gamma"][1]["output"]["title"].startswith(
        "Not judged: the pull request changes nothing"
    )
    main_id, main = runs["evidence-gate"]
    assert github.annotations[main_id] == []
    assert (
        main["output"]["title"]
        == "Fail: 2 failing: alpha (evidence-path-edited), beta (evidence-path-edited); 1 not judged"
    )
    assert "| `gamma` |" in main["output"]["summary"] and "not judged" in main["output"]["summary"]
    found = outputs(tmp_path / "output")
    assert (found["row"], found["ok"], found["check-run-id"]) == ("evidence-path-edited", "false", str(main_id))
    assert found["finding-counts"] == '{"evidence-path-edited":2}' and found["sarif-path"] == "receipt.sarif"
    with zipfile.ZipFile(io.BytesIO(results.state.blobs["gate-receipts"].data)) as archive:
        names = set(archive.namelist())
        assert {"receipt.json", "receipt-alpha.json", "receipt-beta.json", "receipt.sarif"} <= names
        assert "receipt-gamma.json" not in names
        assert archive.read("receipt-alpha.json") == (repo.path / "receipt-alpha.json").read_bytes()
        index = json.loads(archive.read("receipt.json"))
    assert [(r["context"], r["judged"]) for r in index["contexts"]] == [
        ("alpha", True),
        ("beta", True),
        ("gamma", False),
    ]
    sarif = json.loads((repo.path / "receipt.sarif").read_text("utf-8"))
    assert [r["automationDetails"]["id"] for r in sarif["runs"]] == ["evidence-gate/alpha/", "evidence-gate/beta/"]
    summary = (tmp_path / "summary.md").read_text("utf-8")
    assert "## evidence-gate / alpha:" in summary and "## evidence-gate / beta:" in summary


def test_a_patch_in_one_context_posts_only_that_ones_verdict(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub
) -> None:
    repo, event, _head = pull_request(
        tmp_path, shared_dir, {"services/gamma/src/gamma_calc.py": "def double(x):\n    return 2 * x\n"}
    )
    code, printed = run_action(runner_env(tmp_path, repo.path, event, github.url))
    assert code == EXIT_PASS, printed
    conclusions = {run["name"]: run["conclusion"] for run in github.runs.values()}
    assert conclusions == {
        "evidence-gate": "success",
        "evidence-gate / alpha": "neutral",
        "evidence-gate / beta": "neutral",
        "evidence-gate / gamma": "success",
    }


def shard_job(
    tmp_path: Path, repo: GitRepo, event: Path, results: FakeResultsService, github: FakeGitHub, job: str, **inputs: str
) -> tuple[int, str]:
    """One job of the matrix (its own runtime token and output files), with the properties run."""
    folder = tmp_path / job
    folder.mkdir()
    env = runner_env(folder, repo.path, event, github.url, artifact_name="gate", run_properties="true", **inputs)
    env.update(
        {
            "ACTIONS_RUNTIME_TOKEN": results.job_token(f"job-{job}"),
            "ACTIONS_RESULTS_URL": results.url,
            "GITHUB_SHA": repo.git("rev-parse", "HEAD"),
        }
    )
    return run_action(env)


def test_a_shard_matrix_merges_per_context(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    """Two shard jobs upload each touched context's shard receipt beside the index, post nothing; the merge job
    merges beta's two halves of its seed plan and posts a check run per context and one for the index."""
    repo, event, head = pull_request(tmp_path, shared_dir, {"services/beta/src/beta_calc.py": BROKEN})
    for k in (1, 2):
        _code, printed = shard_job(tmp_path, repo, event, results, github, f"shard{k}", shard=f"{k}/2")
        assert "::error" not in printed, printed
    assert github.runs == {}  # a shard posts no check run
    with zipfile.ZipFile(io.BytesIO(results.state.blobs["gate-1-of-2"].data)) as archive:
        assert {"receipt.json", "receipt-beta.json"} <= set(archive.namelist())
    code, printed = shard_job(tmp_path, repo, event, results, github, "merge", mode="merge")
    assert code == EXIT_FAIL, printed
    conclusions = {run["name"]: (run["conclusion"], run["head_sha"]) for run in github.runs.values()}
    assert conclusions == {
        "evidence-gate": ("failure", head),
        "evidence-gate / alpha": ("neutral", head),
        "evidence-gate / beta": ("failure", head),
        "evidence-gate / gamma": ("neutral", head),
    }
    beta = json.loads((repo.path / "receipt-beta.json").read_text("utf-8"))
    assert [m["shard"] for m in beta["merged_from"]] == [[1, 2], [2, 2]]
    [ledger] = beta["properties"]["ledgers"]
    assert sorted(ledger["attempted_seeds"]) == [11, 12]
    assert beta["decision"]["row"] == "property-failed"
    index = json.loads((repo.path / "receipt.json").read_text("utf-8"))
    assert index["shard"] is None and [r["context"] for r in index["contexts"] if r["judged"]] == ["beta"]
    assert outputs(tmp_path / "merge" / "output")["row"] == "property-failed"


def test_a_missing_shard_fails_every_judged_context(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, results: FakeResultsService
) -> None:
    repo, event, _head = pull_request(tmp_path, shared_dir, {"services/beta/src/beta_calc.py": GREEN_AGAIN})
    code, printed = shard_job(tmp_path, repo, event, results, github, "shard1", shard="1/2")
    assert code == EXIT_PASS, printed
    code, printed = shard_job(tmp_path, repo, event, results, github, "merge", mode="merge")
    assert code == EXIT_FAIL, printed
    beta = json.loads((repo.path / "receipt-beta.json").read_text("utf-8"))
    assert beta["decision"]["row"] == "run-integrity"
    assert any("shard 2/2 uploaded no receipt" in v["message"] for v in beta["violations"])
    conclusions = {run["name"]: run["conclusion"] for run in github.runs.values()}
    assert conclusions["evidence-gate / beta"] == conclusions["evidence-gate"] == "failure"
