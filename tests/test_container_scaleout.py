"""`shard: K/N` and `mode: merge` in the real container, run the way the Actions runner runs a container step.

Two shard containers (each with its own job's runtime token, as matrix jobs have) run the sealed property lane on
their slice of the demo's seed plan and upload their receipts to the fake results service; a third container, the
merge job, lists and downloads them and posts the one check run on the pull request's head.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from action_runner import action_env, make_runner, read_outputs, run_container
from container_engine import Engine
from fake_github import FakeGitHub
from fake_results_service import FakeResultsService, runtime_token
from test_container import engine, image  # noqa: F401 - the session fixtures that find the engine and build the image

pytestmark = pytest.mark.container


@pytest.fixture
def servers(shared_dir: Path) -> Iterator[tuple[FakeGitHub, FakeResultsService]]:
    """The fake check-runs API and results service, listening on 127.0.0.1."""
    github = FakeGitHub(shared_dir).start()
    results = FakeResultsService(runtime_token()).start()
    yield github, results
    github.stop()
    results.stop()
    assert github.problems == [] and results.state.problems == [], (github.problems, results.state.problems)


def test_two_shard_containers_and_a_merge_container_post_one_check_run(
        engine: Engine, image: str, tmp_path: Path,  # noqa: F811 - pytest fixtures imported above
        servers: tuple[FakeGitHub, FakeResultsService]) -> None:
    """The honest demo PR over a 2-shard matrix: no check run from the shards, one success from the merge."""
    github, results = servers
    runner = make_runner(tmp_path, "honest-refactor")
    merge_sha = runner.git("rev-parse", "HEAD")
    base = action_env(github, results, run_properties="true")
    base["GITHUB_SHA"] = merge_sha
    for k in (1, 2):
        env = {**base, "INPUT_SHARD": f"{k}/2", "ACTIONS_RUNTIME_TOKEN": results.job_token(f"shard-{k}")}
        proc = run_container(engine, image, runner, env)
        log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
        assert proc.returncode == 0, log
        shard = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
        assert shard["mode"]["shard"] == [k, 2]
        assert shard["sealed"]["user"] == "nobody"
    assert github.runs == {}
    assert sorted(a.name for a in results.state.artifacts) == ["evidence-gate-receipt-1-of-2",
                                                               "evidence-gate-receipt-2-of-2"]
    plan = shard["properties"]["plan"]
    env = {**base, "INPUT_MODE": "merge", "ACTIONS_RUNTIME_TOKEN": results.job_token("merge")}
    proc = run_container(engine, image, runner, env)
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 0, log
    merged = json.loads((runner.workspace / "receipt.json").read_text(encoding="utf-8"))
    assert merged["decision"]["row"] == "pass", merged["violations"]
    assert [m["shard"] for m in merged["merged_from"]] == [[1, 2], [2, 2]]
    for ledger in merged["properties"]["ledgers"]:
        assert sorted(ledger["planned_seeds"]) == sorted(plan)
        assert sorted(s for s in ledger["attempted_seeds"] if s in plan) == sorted(plan)  # each seed once
    (run_id, run), = github.runs.items()
    assert (run["head_sha"], run["conclusion"]) == (runner.git("rev-parse", f"refs/pull/{runner.pr}/head"), "success")
    outputs = read_outputs(runner.file("file_commands/set_output"))
    assert (outputs["row"], outputs["check-run-id"]) == ("pass", str(run_id))
    assert "evidence-gate-receipt" in {a.name for a in results.state.artifacts}
