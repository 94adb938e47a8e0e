"""natsort from PyPI, gated end to end on the host: the second real suite, so that no claim rests on attrs alone.

The project is the pinned sdist (tests/support/real_project.py, `NATSORT`): a flat layout whose code under test is
the top-level package `natsort/` (`pythonpath: ["."]`), gated on four of its own test files (75 tests, 20 of them
`@given` properties). Each pull request is merged like `refs/pull/N/merge` and judged by the CLI's `check`. The plan
is small (two seeds and a fresh one, ten examples each) so that the module stays within the CI budget.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from support import real_project
from support.real_project import ProjectUnavailable, RealProject

SUITE = real_project.SUITES["natsort"]
SEEDS = [1101, 1102]
TRIALS = 10
# The one test the bug breaks: the property over lists of three or more (the examples have at most two elements).
BUG_NODE = "tests/test_utils.py::test_sep_inserter_inserts_separator_between_two_numbers"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> RealProject:
    """The pinned natsort sdist as a repository gated on its own test files; a failed download fails the module."""
    try:
        return real_project.build(
            tmp_path_factory.mktemp("natsort") / "repo",
            seeds=SEEDS,
            trials=TRIALS,
            entries=SUITE.entries,
            sdist=SUITE.sdist,
            pythonpath=SUITE.pythonpath,
        )
    except ProjectUnavailable as exc:
        pytest.fail(str(exc))


def check(project: RealProject, merge: str, receipt: Path) -> tuple[int, str, dict[str, Any]]:
    """`evidence-gate check` on the merge commit as an agent's PR: exit code, report, receipt."""
    argv = [sys.executable, "-m", "evidence_gate", "check", "--repo", str(project.repo.path), "--head", merge]
    proc = subprocess.run(
        [*argv, "--author", "agent-natsort", "--receipt", str(receipt)],
        capture_output=True,
        text=True,
        env=real_project.env_without_git(),
        check=False,
    )
    assert receipt.is_file(), proc.stdout + proc.stderr
    return proc.returncode, proc.stdout + proc.stderr, json.loads(receipt.read_text(encoding="utf-8"))


def assert_natsort_from_tree(receipt: dict[str, Any]) -> None:
    """The PR's `natsort/` is what ran: loaded from the sealed tree's top folder, nothing of it neutralised."""
    sealed = receipt["sealed"]
    assert not [n for n in sealed["neutralised"] if n["path"].startswith("natsort/")], sealed["neutralised"]
    loaded = {p["package"]: p for p in sealed["provenance"]}
    assert loaded["natsort"]["from_tree"] is True, loaded["natsort"]
    assert loaded["natsort"]["loaded_from"].startswith("natsort/"), loaded["natsort"]


def test_the_sdist_is_the_pinned_one_and_ships_hypothesis_tests(project: RealProject) -> None:
    """The cached file has the pinned sha256, and every gated file of the baseline has Hypothesis properties."""
    assert real_project.file_sha256(real_project.cached_sdist(SUITE.sdist)) == SUITE.sdist.sha256
    for entry in SUITE.entries:
        assert "from hypothesis import given" in project.repo.git("show", f"{project.baseline}:{entry}")
    assert project.repo.git("show", f"{project.baseline}:SCORE_PROPERTIES").split() == list(SUITE.entries)


def test_honest_refactor_passes(project: RealProject, tmp_path: Path) -> None:
    """`pass`: every ledger closed on every planned and fresh seed, with the PR's natsort."""
    merge = real_project.pull_request(project, "honest", SUITE.honest)
    code, report, receipt = check(project, merge, tmp_path / "receipt.json")
    assert (code, receipt["decision"]["row"]) == (0, "pass"), report[-3000:]
    assert receipt["violations"] == []
    ledgers = receipt["properties"]["ledgers"]
    assert {x["property_id"].split("::")[0] for x in ledgers} == set(SUITE.entries)
    assert len(ledgers) == 75
    for ledger in ledgers:
        assert sorted(ledger["attempted_seeds"]) == sorted(ledger["planned_seeds"] + ledger["fresh_seeds"]), ledger
        assert ledger["failing_seeds"] == [], ledger
    assert_natsort_from_tree(receipt)


def test_bug_in_sep_inserter_fails_its_property_and_nothing_else(project: RealProject, tmp_path: Path) -> None:
    """`property-failed` on the one property that sees lists of three, at an assertion of its own, on every seed."""
    merge = real_project.pull_request(project, "bug", SUITE.bug)
    code, report, receipt = check(project, merge, tmp_path / "receipt.json")
    assert (code, receipt["decision"]["row"]) == (10, "property-failed"), report[-3000:]
    failed = {x["property_id"]: x for x in receipt["properties"]["ledgers"] if x["failing_seeds"]}
    assert set(failed) == {BUG_NODE}, sorted(failed)
    ledger = failed[BUG_NODE]
    assert sorted(ledger["failing_seeds"]) == sorted(ledger["planned_seeds"] + ledger["fresh_seeds"]), ledger
    tree = ast.parse(project.repo.git("show", f"{project.baseline}:tests/test_utils.py"))
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == BUG_NODE.split("::")[1])
    assert func.end_lineno is not None
    assert ledger["failure"]["path"] == "tests/test_utils.py", ledger["failure"]
    assert func.lineno <= ledger["failure"]["line"] <= func.end_lineno, ledger["failure"]
    assert ledger["failure"]["exception"].startswith("AssertionError"), ledger["failure"]
    assert [(v["row"], v["path"]) for v in receipt["violations"]] == [("property-failed", "tests/test_utils.py")]
    assert_natsort_from_tree(receipt)
