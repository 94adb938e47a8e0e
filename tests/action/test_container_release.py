"""The release's action.yml, for real: the image pushed to a registry on 127.0.0.1, action.yml rewritten to its
digest by scripts/release_action.py, and the image that reference names pulled into an empty store and run as the
Actions runner runs a `uses:` step, to the posted verdict."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from support.action_runner import action_env, make_runner, read_outputs, run_container
from support.container_engine import Engine
from support.fake_github import FakeGitHub, row_of
from support.fake_results_service import FakeResultsService
from support.local_registry import RegistryUnavailable, empty_store, local_registry

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import release_action  # noqa: E402 - scripts/ is not a package, so it is imported from its folder

pytestmark = pytest.mark.container


def test_the_released_action_yml_pulls_and_runs_the_pushed_image(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """push -> digest -> rewrite -> pull by that digest into an empty store -> the action posts its verdict."""
    if engine.name != "podman":
        pytest.skip("an empty image store of its own needs podman")
    github, results = servers
    registry_root = tmp_path / "registry"
    registry_root.mkdir()
    runner = make_runner(tmp_path / "runner", "freeze-entry-added")
    try:
        with local_registry(registry_root) as registry:
            digest_file = tmp_path / "digest"
            engine.run(
                "push",
                "--tls-verify=false",
                "--digestfile",
                str(digest_file),
                image,
                f"{registry}/octo-org/evidence-gate:v1.2.3",
                timeout=900,
            )
            pushed = f"{registry}/octo-org/evidence-gate@{digest_file.read_text(encoding='utf-8').strip()}"
            released = release_action.rewrite((ROOT / "action.yml").read_text(encoding="utf-8"), pushed)
            reference = yaml.safe_load(released)["runs"]["image"].removeprefix("docker://")
            assert reference == pushed
            with empty_store(engine, tmp_path / "store") as fresh:
                assert not fresh.image_exists(reference)
                fresh.run("pull", "--tls-verify=false", "--quiet", reference, timeout=900)
                proc = run_container(fresh, reference, runner, action_env(github, results))
    except RegistryUnavailable as exc:
        pytest.fail(str(exc))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    (run,) = github.runs.values()
    assert (run["conclusion"], row_of(run)) == ("failure", "freeze-id-added")
    assert read_outputs(runner.file("file_commands/set_output"))["row"] == "freeze-id-added"
