"""attrs from PyPI, gated end to end: its own test files as the locked properties, real pull requests on top.

The project is the pinned sdist (tests/support/real_project.py), its code under test `src/attr` named like a package the
gate's own environment holds. Each pull request is merged like `refs/pull/N/merge` and judged on the host by the
CLI and inside the action's image: the honest and bug PRs through the action itself on a `pull_request` event
(against the fake check-runs API), the others through `check`. The plan is small (two seeds and a fresh one, ten
examples each) so that the module stays within the CI budget.
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support import real_project
from support.action_runner import OWNER_UID, REPOSITORY, Runner, action_env, run_container
from support.container_engine import Engine
from support.fake_github import FakeGitHub, row_of
from support.fake_results_service import FakeResultsService
from support.real_project import BROKEN_IMPORT, BUG, ENTRIES, HONEST, TAMPER, ProjectUnavailable, RealProject
from support.shared_data import EVENTS

SEEDS = [1101, 1102]
TRIALS = 10
# The tests the bug breaks: both compare asdict's output with lists.
BUG_NODES = (
    "tests/test_funcs.py::TestAsDict::test_lists_tuples",
    "tests/test_funcs.py::TestAsDict::test_sets_no_retain",
)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> RealProject:
    """The pinned attrs sdist as a repository gated on its own test files; a failed download fails the module."""
    try:
        return real_project.build(tmp_path_factory.mktemp("attrs") / "repo", seeds=SEEDS, trials=TRIALS)
    except ProjectUnavailable as exc:
        pytest.fail(str(exc))


@dataclass(frozen=True)
class Verdict:
    """What one gate run left: its exit code, its text report and its receipt."""

    code: int
    report: str
    receipt: dict[str, Any]

    @property
    def brief(self) -> str:
        """The report's first findings and its verdict line, for assertion messages."""
        lines = self.report.splitlines()
        return "\n".join(
            lines[:20]
            + ([f"... ({len(lines) - 23} more lines)"] if len(lines) > 23 else [])
            + lines[max(20, len(lines) - 3) :]
        )

    @property
    def rows(self) -> list[str]:
        """The rows of every violation."""
        return [v["row"] for v in self.receipt["violations"]]


def host_check(project: RealProject, merge: str, receipt: Path) -> Verdict:
    """`evidence-gate check` on the merge commit (baseline = its first parent) as an agent's PR."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(project.repo.path),
            "--head",
            merge,
            "--author",
            "agent-attrs",
            "--receipt",
            str(receipt),
        ],
        capture_output=True,
        text=True,
        env=real_project.env_without_git(),
        check=False,
    )
    assert receipt.is_file(), proc.stdout + proc.stderr
    return Verdict(proc.returncode, proc.stdout + proc.stderr, json.loads(receipt.read_text(encoding="utf-8")))


def function_span(project: RealProject, node: str) -> range:
    """The lines of a test method in the baseline's copy of its file (`file::Class::name`)."""
    path, cls, name = node.split("::")
    tree = ast.parse(project.repo.git("show", f"{project.baseline}:{path}"))
    klass = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    func = next(n for n in klass.body if isinstance(n, ast.FunctionDef) and n.name == name)
    assert func.end_lineno is not None
    return range(func.lineno, func.end_lineno + 1)


def assert_honest_pass(verdict: Verdict) -> None:
    """`pass`: no finding, every ledger closed on every planned and fresh seed, attr loaded from the PR's tree."""
    receipt = verdict.receipt
    assert (verdict.code, receipt["decision"]["row"]) == (0, "pass"), verdict.brief
    assert receipt["violations"] == []
    ledgers = receipt["properties"]["ledgers"]
    assert {entry.split("::")[0] for entry in (x["property_id"] for x in ledgers)} == set(ENTRIES)
    assert len(ledgers) > 100  # 152 collected nodes: parametrized ids and classes each have a ledger
    assert receipt["properties"]["counts"]["open"] == 0
    for ledger in ledgers:
        runs = ledger["planned_seeds"] + ledger["fresh_seeds"]
        assert sorted(ledger["attempted_seeds"]) == sorted(runs), ledger
        assert ledger["failing_seeds"] == [], ledger
    assert_code_under_test_from_tree(receipt)


def assert_code_under_test_from_tree(receipt: dict[str, Any]) -> None:
    """The PR's `src/attr` was what ran: listed in the provenance as loaded from the sealed tree, never neutralised."""
    sealed = receipt["sealed"]
    assert not [n for n in sealed["neutralised"] if n["path"].startswith("src/")], sealed["neutralised"]
    loaded = {p["package"]: p for p in sealed["provenance"]}
    assert "attr" in loaded, sealed["provenance"]
    for name in ("attr", "attrs"):
        if name in loaded:
            assert loaded[name]["from_tree"] is True, loaded[name]
            assert loaded[name]["loaded_from"].startswith(f"src/{name}/"), loaded[name]


def assert_bug_caught(project: RealProject, verdict: Verdict) -> None:
    """`property-failed` on the asdict tests that compare lists, at a line of theirs; nothing else is disturbed."""
    receipt = verdict.receipt
    assert (verdict.code, receipt["decision"]["row"]) == (10, "property-failed"), verdict.brief
    assert set(verdict.rows) == {"property-failed"}, verdict.brief
    failed = {x["property_id"]: x for x in receipt["properties"]["ledgers"] if x["failing_seeds"]}
    assert set(failed) == set(BUG_NODES), sorted(failed)
    for node, ledger in failed.items():
        assert sorted(ledger["failing_seeds"]) == sorted(ledger["planned_seeds"] + ledger["fresh_seeds"]), ledger
        failure = ledger["failure"]
        assert failure["path"] == "tests/test_funcs.py", failure
        assert failure["line"] in function_span(project, node), (node, failure)
        assert failure["exception"].startswith("AssertionError"), failure
    for violation in receipt["violations"]:
        nodes = [n for n in BUG_NODES if n in violation["message"]]
        assert len(nodes) == 1 and violation["path"] == "tests/test_funcs.py", violation
        node = nodes[0]
        assert violation["line"] in function_span(project, node), violation
    assert_code_under_test_from_tree(receipt)


def assert_import_error_fails(verdict: Verdict) -> None:
    """An ImportError raised by the PR's `attr` fails the gate and is named; it is never a pass on other code."""
    receipt = verdict.receipt
    assert verdict.code == 10 and receipt["ok"] is False, verdict.brief
    assert receipt["decision"]["row"] in {"run-integrity", "property-failed"}, verdict.brief
    assert any("ImportError" in v["message"] and "broken by this PR" in v["message"] for v in receipt["violations"]), (
        verdict.brief
    )


def assert_tampering_caught(verdict: Verdict) -> None:
    """The edited locked conftest is `evidence-path-edited`, before any test runs."""
    receipt = verdict.receipt
    assert (verdict.code, receipt["decision"]["row"]) == (10, "evidence-path-edited"), verdict.brief
    assert [(v["row"], v["path"]) for v in receipt["violations"]] == [("evidence-path-edited", "tests/conftest.py")]
    assert receipt["properties"]["ledgers"] == []


def test_the_sdist_is_the_pinned_one_and_ships_hypothesis_tests(project: RealProject) -> None:
    """The cached file has the pinned sha256, and the baseline holds attrs' tests with their Hypothesis strategies."""
    assert real_project.file_sha256(real_project.cached_sdist()) == real_project.ATTRS.sha256
    strategies = project.repo.git("show", f"{project.baseline}:tests/strategies.py")
    assert "from hypothesis import strategies as st" in strategies
    for entry in ENTRIES:
        assert "from hypothesis import" in project.repo.git("show", f"{project.baseline}:{entry}")
    assert project.repo.git("show", f"{project.baseline}:SCORE_PROPERTIES").split() == list(ENTRIES)


def test_a_download_that_does_not_match_the_pin_fails_loudly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An index serving another file under the pinned name: pip refuses it, the error names the pin and the fix, and
    a corrupt copy in the cache is removed rather than used."""
    links = tmp_path / "links"
    source = tmp_path / "src" / "attrs-26.1.0"
    source.mkdir(parents=True)
    (source / "setup.py").write_text("raise SystemExit('not attrs')\n", encoding="utf-8")
    links.mkdir()
    with tarfile.open(links / real_project.ATTRS.filename, "w:gz") as archive:
        archive.add(source, arcname="attrs-26.1.0")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(links))
    cached = tmp_path / "cache" / "evidence-gate" / "sdists" / real_project.ATTRS.filename
    cached.parent.mkdir(parents=True)
    cached.write_bytes(b"corrupt")
    with pytest.raises(ProjectUnavailable) as caught:
        real_project.cached_sdist()
    assert "DO NOT MATCH THE HASHES" in str(caught.value)
    assert real_project.ATTRS.sha256 in str(caught.value)
    assert not cached.exists()


def test_unpack_refuses_a_member_that_leaves_the_folder(tmp_path: Path) -> None:
    """An sdist whose archive climbs out of the extraction folder is refused before anything is written."""
    bad = tmp_path / "bad.tar.gz"
    payload = tmp_path / "payload"
    payload.write_text("x\n", encoding="utf-8")
    with tarfile.open(bad, "w:gz") as archive:
        archive.add(payload, arcname="attrs-26.1.0/../../escaped")
    (tmp_path / "out").mkdir()
    with pytest.raises(ProjectUnavailable, match="unexpected member"):
        real_project.unpack(bad, tmp_path / "out")
    assert not (tmp_path / "escaped").exists()


def test_honest_patch_passes_on_every_seed(project: RealProject, tmp_path: Path) -> None:
    """A behaviour-preserving refactor of asdict: `pass`, with the PR's own attr loaded from the sealed tree, and
    the locked properties executed its changed line."""
    merge = real_project.pull_request(project, "honest", HONEST)
    verdict = host_check(project, merge, tmp_path / "receipt.json")
    assert_honest_pass(verdict)
    # The refactor's one changed line of asdict (`for a in fields(...)`; the rest is a deletion) runs: it is covered.
    coverage = verdict.receipt["patch_coverage"]
    assert [(f["path"], len(f["lines"])) for f in coverage["files"]] == [(real_project.FUNCS, 1)], coverage
    assert (coverage["percent"], coverage["unreached"]) == (100.0, []), coverage


def test_bug_in_asdict_fails_the_asdict_properties(project: RealProject, tmp_path: Path) -> None:
    """A real bug in the PR's attr.asdict: `property-failed` on exactly the tests it breaks, at their lines."""
    merge = real_project.pull_request(project, "bug", BUG)
    assert_bug_caught(project, host_check(project, merge, tmp_path / "receipt.json"))


def test_import_error_in_the_package_fails(project: RealProject, tmp_path: Path) -> None:
    """The PR's `attr` raises at import: the gate fails and says so (proof that the PR's code is what ran)."""
    merge = real_project.pull_request(project, "broken-import", BROKEN_IMPORT)
    assert_import_error_fails(host_check(project, merge, tmp_path / "receipt.json"))


def test_tampering_conftest_is_caught_before_any_test(project: RealProject, tmp_path: Path) -> None:
    """The bug plus `max_examples=1` in the locked conftest's profile: `evidence-path-edited`, nothing runs."""
    merge = real_project.pull_request(project, "tamper", TAMPER)
    assert_tampering_caught(host_check(project, merge, tmp_path / "receipt.json"))


# The same pull requests inside the action's image, where Debian's dist-packages hold attrs beside pytest and
# the sealed run drops to `nobody`. The image has no network and no package index: the repository built on the
# host from the cached sdist is what gets mounted, owned by another uid as a runner's checkout is.


def checkout(project: RealProject, merge: str, root: Path) -> Runner:
    """The runner's folders, with a copy of the repository checked out on `merge` and owned by another uid."""
    runner = Runner(root, pr=1)
    shutil.copytree(project.repo.path, runner.workspace, symlinks=True)
    for sub in ("home", "workflow", "file_commands"):
        (root / sub).mkdir()
    runner.git("checkout", "-q", "--detach", merge)
    (root / "file_commands" / "set_output").touch()
    (root / "file_commands" / "step_summary").touch()
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)
    return runner


def container_check(engine: Engine, image: str, project: RealProject, merge: str, root: Path) -> Verdict:
    """`evidence-gate check` through the image's entrypoint, on a checkout of `merge`."""
    runner = checkout(project, merge, root)
    proc = run_container(
        engine,
        image,
        runner,
        {"GITHUB_WORKSPACE": "/github/workspace", "HOME": "/github/home"},
        "check",
        "--author",
        "agent-attrs",
        "--receipt",
        "/github/home/receipt.json",
    )
    report = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    receipt = runner.file("home/receipt.json")
    assert receipt.is_file(), report
    return Verdict(proc.returncode, report, json.loads(receipt.read_text(encoding="utf-8")))


def container_action(
    engine: Engine,
    image: str,
    project: RealProject,
    branch: str,
    merge: str,
    root: Path,
    servers: tuple[FakeGitHub, FakeResultsService],
) -> Verdict:
    """The action run the way the Actions runner runs it, on a `pull_request` event for the PR `branch`."""
    runner = checkout(project, merge, root)
    payload = json.loads((EVENTS / "pull_request.opened.1.json").read_text(encoding="utf-8"))
    pull = payload["pull_request"]
    pull["number"] = payload["number"] = runner.pr
    pull["base"]["sha"], pull["head"]["sha"] = project.baseline, project.repo.git("rev-parse", branch)
    pull["merge_commit_sha"] = merge
    pull["user"]["login"] = "agent-attrs"
    pull["base"]["repo"]["full_name"] = pull["head"]["repo"]["full_name"] = REPOSITORY
    payload["repository"]["full_name"] = REPOSITORY
    runner.file("workflow/event.json").write_text(json.dumps(payload), encoding="utf-8")
    proc = run_container(engine, image, runner, action_env(*servers, run_properties="true"))
    report = proc.stdout.decode(errors="replace") + proc.stderr.decode(errors="replace")
    receipt = runner.workspace / "receipt.json"
    assert receipt.is_file(), report
    return Verdict(proc.returncode, report, json.loads(receipt.read_text(encoding="utf-8")))


@pytest.mark.container
def test_honest_patch_passes_the_action_in_the_container(
    project: RealProject, engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The action in the image, sealed as `nobody`: the honest refactor passes with the PR's attr, not Debian's,
    and the check run on the PR's head succeeds."""
    github, _results = servers
    merge = real_project.pull_request(project, "honest", HONEST)
    verdict = container_action(engine, image, project, "honest", merge, tmp_path, servers)
    assert verdict.receipt["sealed"]["user"] == "nobody", verdict.receipt["sealed"]
    assert_honest_pass(verdict)
    assert github.problems == [], github.problems
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (project.repo.git("rev-parse", "honest"), "success")


@pytest.mark.container
def test_bug_in_asdict_fails_the_action_in_the_container(
    project: RealProject, engine: Engine, image: str, tmp_path: Path, servers: tuple[FakeGitHub, FakeResultsService]
) -> None:
    """The action on a `pull_request` event: `property-failed` on the same tests and lines as on the host, and a
    failed check run on the PR's head with annotations on those lines."""
    github, _results = servers
    merge = real_project.pull_request(project, "bug", BUG)
    verdict = container_action(engine, image, project, "bug", merge, tmp_path, servers)
    assert verdict.receipt["sealed"]["user"] == "nobody", verdict.receipt["sealed"]
    assert_bug_caught(project, verdict)
    assert github.problems == [], github.problems
    ((run_id, run),) = github.runs.items()
    assert run["head_sha"] == project.repo.git("rev-parse", "bug")
    assert (run["conclusion"], row_of(run)) == ("failure", "property-failed"), run
    notes = [a for a in github.annotations[run_id] if a["path"] == "tests/test_funcs.py"]
    for node in BUG_NODES:
        assert any(a["start_line"] in function_span(project, node) for a in notes), (node, notes)


@pytest.mark.container
def test_import_error_fails_in_the_container(project: RealProject, engine: Engine, image: str, tmp_path: Path) -> None:
    """In the image: the PR's failing import is named, Debian's attrs does not stand in for it."""
    merge = real_project.pull_request(project, "broken-import", BROKEN_IMPORT)
    assert_import_error_fails(container_check(engine, image, project, merge, tmp_path))


@pytest.mark.container
def test_tampering_conftest_is_caught_in_the_container(
    project: RealProject, engine: Engine, image: str, tmp_path: Path
) -> None:
    """In the image: the edited locked conftest is `evidence-path-edited`, as on the host."""
    merge = real_project.pull_request(project, "tamper", TAMPER)
    verdict = container_check(engine, image, project, merge, tmp_path)
    assert_tampering_caught(verdict)
