"""Each (test, seed) through pytest's full protocol, on a real-world-shaped locked suite (tests/protocol_suite).

The suite has fixtures of every scope (autouse too), parametrize alone and with @given, a test class, a unittest
TestCase, a state machine, @example, locked strategies with .filter, unique, from_regex and assume in composites, a
tiny search space and tests that monkeypatch builtins (one deletes `sys._getframe`, as attrs' suite does). The
honest patch must pass on every seed (three planned seeds plus a fresh one, all in one worker, so every test runs
four times in one session); each injected bug must fail exactly the properties it breaks, on the locked line, with
Hypothesis' example, and disturb no other test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from support.case_files import txt_files
from support.property_repo import judge, ledger, rows
from support.repo_builder import GitRepo

SUITE = Path(__file__).parents[1] / "protocol_suite"
FILES = ("tests/test_cart.py", "tests/test_codec.py", "tests/test_machine.py")
CONFIG = {
    "version": 1,
    "properties": {
        "seeds": [21, 22, 23],
        "fresh_seeds": 1,
        "trials": 20,
        "timeout_s": 120,
        "jobs": 1,
        "pythonpath": ["src"],
    },
}
NODES = {
    "tests/test_cart.py::test_fixtures_are_fresh_for_every_run",
    "tests/test_cart.py::test_single_line_total[apple-3]",
    "tests/test_cart.py::test_single_line_total[pear-5]",
    "tests/test_cart.py::test_single_line_total[fig-7]",
    "tests/test_cart.py::test_total_matches_lines[EUR]",
    "tests/test_cart.py::TestRemoval::test_remove_clears_the_line",
    "tests/test_cart.py::TestRemoval::test_bad_quantity_is_refused",
    "tests/test_codec.py::test_round_trip",
    "tests/test_codec.py::test_mapping_kinds",
    "tests/test_codec.py::test_prompt_reads_a_typed_quantity",
    "tests/test_codec.py::test_prompt_under_a_module_script",
    "tests/test_codec.py::test_prompt_without_frame_introspection",
    "tests/test_machine.py::TestCartMachine::runTest",
    "tests/test_machine.py::TestCartUnit::test_starts_empty",
}


def _suite_repo(git_repo: GitRepo, patch: str) -> None:
    files = txt_files(SUITE / "baseline")
    files.update({".evidence-gate.yml": json.dumps(CONFIG), "SCORE_PROPERTIES": "\n".join(FILES) + "\n"})
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit(patch, txt_files(SUITE / patch))


def test_honest_patch_passes_every_seed_of_every_kind_of_test(git_repo: GitRepo, tmp_path: Path) -> None:
    """Fixtures refilled per seed, parametrized ids as tests of their own, classes, unittest and state machines:
    all pass on every seed; Hypothesis' own counts are recorded, the tiny space as exhausted."""
    _suite_repo(git_repo, "honest")
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    ledgers = {x["property_id"]: x for x in receipt["properties"]["ledgers"]}
    assert set(ledgers) == NODES
    fresh = receipt["properties"]["fresh_seeds"]
    for found in ledgers.values():
        assert sorted(found["attempted_seeds"]) == sorted([21, 22, 23, *fresh]), found
        assert found["status"] == "budget_pass_no_freeze"
        assert found["fixtures"] is False and found["failure"] is None
    kinds = ledgers["tests/test_codec.py::test_mapping_kinds"]
    assert kinds["examples"] == {str(s): 2 for s in [21, 22, 23, *fresh]}
    assert sorted(kinds["exhausted_seeds"]) == sorted([21, 22, 23, *fresh])
    for node in (
        "tests/test_codec.py::test_round_trip",
        "tests/test_cart.py::test_total_matches_lines[EUR]",
        "tests/test_machine.py::TestCartMachine::runTest",
    ):
        assert all(n >= 20 for n in ledgers[node]["examples"].values()), ledgers[node]
    assert ledgers["tests/test_cart.py::test_fixtures_are_fresh_for_every_run"]["examples"] == {}


BUGS = {
    # patch -> the nodes it must fail, and the locked statement each fails on
    "bug-cart": {
        "tests/test_cart.py::test_total_matches_lines[EUR]": "assert cart.total() == sum(catalog[s] * q for s, q in order.items())",
        "tests/test_machine.py::TestCartMachine::runTest": "assert self.cart.total() == sum(PRICES[s] * q for s, q in self.model.items())",
    },
    "bug-codec": {"tests/test_codec.py::test_round_trip": "assert codec.decode(codec.encode(fields)) == fields"},
    "bug-remove": {
        "tests/test_cart.py::TestRemoval::test_remove_clears_the_line": "assert cart.count() == 0",
        "tests/test_machine.py::TestCartMachine::runTest": "assert self.cart.total() == sum(PRICES[s] * q for s, q in self.model.items())",
    },
}


def test_every_suite_folder_is_used() -> None:
    """The folders are exactly the baseline, the honest patch and the bugs above: a new bug folder not named in BUGS
    would never run."""
    assert sorted(p.name for p in SUITE.iterdir() if p.is_dir()) == sorted({"baseline", "honest", *BUGS})


def _line_of(statement: str, path: str) -> int:
    source = (SUITE / "baseline" / (path + ".txt")).read_text().splitlines()
    return next(i for i, line in enumerate(source, 1) if line.strip() == statement)


@pytest.mark.parametrize("patch", sorted(BUGS))
def test_real_bug_fails_only_its_properties_on_the_locked_line(git_repo: GitRepo, tmp_path: Path, patch: str) -> None:
    """The bug is property-failed on the nodes it breaks, with the failing statement, its line and Hypothesis'
    example; a failure, shrink and re-run there leave every other test of the session passing on every seed."""
    _suite_repo(git_repo, patch)
    receipt = judge(git_repo, tmp_path)
    assert set(rows(receipt)) <= {"property-failed", "property-failed-fresh-seed"}, receipt["violations"]
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    failed: dict[str, Any] = {x["property_id"]: x for x in receipt["properties"]["ledgers"] if x["failing_seed"]}
    assert set(failed) == set(BUGS[patch]), sorted(failed)
    for node, statement in BUGS[patch].items():
        record = failed[node]["failure"]
        path = node.split("::", 1)[0]
        assert record["path"] == path and record["statement"] == statement, record
        assert record["line"] == _line_of(statement, path)
        # The bug's own exception where it surfaces: a wrong value fails the assert, a bad escape raises in decode.
        assert record["exception"].startswith(("AssertionError", "ValueError" if patch == "bug-codec" else "-")), record
        [violation] = [v for v in receipt["violations"] if v["message"].startswith(node + " ")]
        assert (violation["path"], violation["line"]) == (path, record["line"])
        example = failed[node]["falsifying"] or ""
        assert example.startswith(("Falsifying", "Failing")), example
        if node.endswith("test_total_matches_lines[EUR]"):
            assert "order={'apple': 10}" in example  # the @example, run first on every seed
        assert failed[node]["reproduced"] is True
    for other in NODES - set(BUGS[patch]):
        assert ledger(receipt, other)["status"] == "budget_pass_no_freeze", ledger(receipt, other)
