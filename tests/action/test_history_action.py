"""The action draws the base branch's ledger history beside the receipt, uploads it and links it in the summary."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest

from evidence_gate.action import main as action
from support.action_env import runner_env
from support.action_runner import action_env, make_runner, run_container
from support.container_engine import Engine
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService
from support.history_repo import ledger
from support.repo_builder import GitRepo

BASE = {
    "SCORE_PROPERTIES": "properties/test_p.py::test_x\n",
    "properties/test_p.py": "def test_x():\n    assert True\n",
    "src/app.py": "x = 1\n",
}


def pull_request(tmp_path: Path, shared_dir: Path, patch: dict[str, str | bytes | None]) -> tuple[GitRepo, Path]:
    """A base branch whose ledger grew to three entries and shrank to two, and GitHub's merge commit of a PR."""
    repo = GitRepo(tmp_path / "origin")
    repo.commit("base", {**BASE, "freeze.yaml": ledger(1)})
    repo.commit("quarantine", {"freeze.yaml": ledger(3)})
    base = repo.commit("one fixed", {"freeze.yaml": ledger(2)})
    repo.branch("pr")
    head = repo.commit("patch", patch)
    repo.merge_ref(base, head)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, "agent-smith"
    payload["repository"]["full_name"] = pr["head"]["repo"]["full_name"] = "octo/repo"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return repo, event


def test_summary_links_the_picture_in_the_artifact(
    tmp_path: Path, shared_dir: Path, results: FakeResultsService
) -> None:
    """The SVG lands beside the receipt and in the artifact; the job summary says what it shows and links it."""
    repo, event = pull_request(tmp_path, shared_dir, {"src/app.py": "x = 2\n"})
    env = runner_env(tmp_path, repo.path, event, None)
    env.update({"ACTIONS_RUNTIME_TOKEN": results.token, "ACTIONS_RESULTS_URL": results.url, "GITHUB_BASE_REF": "main"})
    assert action.main(env, stdout=io.StringIO()) == 0
    svg = (repo.path / "ledger-history.svg").read_text("utf-8")
    assert ET.fromstring(svg).get("width") == "960" and "Freeze ledger on main" in svg
    (stored,) = results.state.artifacts
    with zipfile.ZipFile(io.BytesIO(stored.data)) as archive:
        names = {"receipt.json", "report.txt", "ledger-history.svg", "receipt.sarif", "receipt.intoto.json"}
        assert set(archive.namelist()) == names
        assert archive.read("ledger-history.svg").decode("utf-8") == svg
        # The SARIF log and the Statement travel with the receipt they describe, byte for byte as on disk.
        for name in ("receipt.sarif", "receipt.intoto.json", "receipt.json"):
            assert archive.read(name) == (repo.path / name).read_bytes(), name
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")
    line = next(x for x in summary.splitlines() if x.startswith("**Freeze ledger over the base branch**"))
    plain = line.replace("\\", "")  # gfm.text escapes punctuation that could start markup
    assert "3 first-parent commits of main: at the baseline freeze.yaml: 2 entries (max 6)" in plain
    assert "peak 3 entries" in plain
    url = f"https://github.example/octo/repo/actions/runs/99/artifacts/{stored.database_id}"
    assert f"[ledger-history.svg in the receipt artifact](<{url}>)" in line


def test_the_picture_shows_the_entry_the_pull_request_adds(
    tmp_path: Path, shared_dir: Path, results: FakeResultsService
) -> None:
    """A PR that adds a freeze entry fails the gate, and its picture and summary line show that entry against the
    base branch's history: the band labelled `this PR`, the added and removed counts, the entry's id."""
    repo, event = pull_request(tmp_path, shared_dir, {"freeze.yaml": ledger(3)})
    env = runner_env(tmp_path, repo.path, event, None)
    env.update({"ACTIONS_RUNTIME_TOKEN": results.token, "ACTIONS_RESULTS_URL": results.url, "GITHUB_BASE_REF": "main"})
    assert action.main(env, stdout=io.StringIO()) != 0
    svg = (repo.path / "ledger-history.svg").read_text("utf-8")
    texts = {t.text for t in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}text")}
    assert {"this PR", "+1 −0 → 3"} <= texts
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8").replace("\\", "")
    line = next(x for x in summary.splitlines() if x.startswith("**Freeze ledger over the base branch**"))
    assert "this PR: freeze.yaml: 3 entries (max 6)" in line and "(entries +1 (flaky-3), −0)" in line


def test_a_symlink_committed_at_the_pictures_path_is_replaced_not_followed(tmp_path: Path, shared_dir: Path) -> None:
    """A patch that commits `ledger-history.svg` as a link to a file outside the checkout cannot make the action
    write there: the picture replaces the link."""
    outside = tmp_path / "outside.txt"
    outside.write_text("keep me\n", "utf-8")
    repo, event = pull_request(tmp_path, shared_dir, {"src/app.py": "x = 2\n"})
    link = repo.path / "ledger-history.svg"
    link.symlink_to(outside)
    env = runner_env(tmp_path, repo.path, event, None)
    assert action.main(env, stdout=io.StringIO()) == 0
    assert outside.read_text("utf-8") == "keep me\n"
    assert not link.is_symlink() and link.read_text("utf-8").startswith("<svg ")
    summary = Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")
    assert "picture: `ledger-history.svg` beside the receipt" in summary  # no artifact: the file is named


def test_no_ledger_in_the_history_means_no_picture(tmp_path: Path, shared_dir: Path) -> None:
    """A base branch that never had a ledger gets no picture and no summary line."""
    repo = GitRepo(tmp_path / "origin")
    base = repo.commit("base", BASE)
    repo.branch("pr")
    head = repo.commit("patch", {"src/app.py": "x = 2\n"})
    repo.merge_ref(base, head)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, "agent-smith"
    event = tmp_path / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    env = runner_env(tmp_path, repo.path, event, None)
    assert action.main(env, stdout=io.StringIO()) == 0
    assert not (repo.path / "ledger-history.svg").exists()
    assert "Freeze ledger over the base branch" not in Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")


@pytest.mark.container
def test_the_container_draws_and_uploads_the_picture(
    engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """In the action's image, run as the runner runs it on the demo's PR that adds a freeze entry: the SVG is beside
    the receipt (in a checkout owned by another uid), in the artifact, and linked from the job summary."""
    github, results = servers
    runner = make_runner(tmp_path, "freeze-entry-added")
    proc = run_container(engine, image, runner, action_env(github, results))
    log = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    assert proc.returncode == 10, log
    svg = (runner.workspace / "ledger-history.svg").read_text("utf-8")
    assert ET.fromstring(svg).get("width") == "960"
    (stored,) = results.state.artifacts
    with zipfile.ZipFile(io.BytesIO(stored.data)) as archive:
        assert archive.read("ledger-history.svg").decode("utf-8") == svg
    summary = runner.file("file_commands/step_summary").read_text("utf-8")
    assert (
        "**Freeze ledger over the base branch**" in summary and "ledger-history.svg in the receipt artifact" in summary
    )
