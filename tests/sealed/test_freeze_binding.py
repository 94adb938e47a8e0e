"""Freeze binding: the assertion hash binds the exception's type, and every leaf of an exception group must match."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.sealed.worker.assertion_hash import exception_hash, matches, statement_hash
from support.property_repo import base_files, judge, rows
from support.repo_builder import GitRepo

MODULE = """\
def same_line(kind):
    value = None if kind == "type" else 1
    assert value(0) if kind == "type" else value == 2


def other_line():
    assert 1 == 3
"""


def _raised(namespace: dict[str, Any], call: str, *args: str) -> BaseException:
    try:
        namespace[call](*args)
    except BaseException as exc:  # noqa: BLE001 - the test wants whatever was raised
        return exc
    raise AssertionError(f"{call} did not raise")


@pytest.fixture
def module(tmp_path: Path) -> dict[str, Any]:
    """MODULE compiled from a real file, so tracebacks name it and the hash can read the statement."""
    path = tmp_path / "frozen_module.py"
    path.write_text(MODULE)
    namespace: dict[str, Any] = {}
    exec(compile(MODULE, str(path), "exec"), namespace)
    return namespace


def test_type_is_bound(module: dict[str, Any]) -> None:
    """A TypeError raised on the frozen line does not hash like the AssertionError frozen there."""
    frozen = exception_hash(_raised(module, "same_line", "assert"))
    other = exception_hash(_raised(module, "same_line", "type"))
    assert frozen is not None and other is not None
    assert frozen == statement_hash(MODULE, 3, "AssertionError")
    assert other == statement_hash(MODULE, 3, "TypeError")
    assert not matches(frozen[:32], other)


def test_group_of_one_failure_hashes_like_it(module: dict[str, Any]) -> None:
    """A group whose leaves are all the frozen failure (nested groups too) keeps the entry's hash."""
    leaf = _raised(module, "same_line", "assert")
    group = ExceptionGroup("two", [leaf, ExceptionGroup("inner", [_raised(module, "same_line", "assert")])])
    assert exception_hash(group) == exception_hash(leaf)


@pytest.mark.parametrize("order", ["frozen-first", "frozen-last"])
def test_group_with_another_failure_matches_no_leaf(module: dict[str, Any], order: str) -> None:
    """One leaf that is not the frozen failure makes the group a new failure, whichever leaf comes first."""
    frozen, other = _raised(module, "same_line", "assert"), _raised(module, "other_line")
    leaves = [frozen, other] if order == "frozen-first" else [other, frozen]
    digest = exception_hash(ExceptionGroup("Hypothesis found 2 distinct failures", leaves))
    assert digest is not None
    for leaf in (frozen, other):
        leaf_digest = exception_hash(leaf)
        assert leaf_digest is not None and not matches(leaf_digest[:32], digest)


def test_group_with_a_leaf_from_elsewhere_has_no_hash(module: dict[str, Any], tmp_path: Path) -> None:
    """A leaf raised outside the property's file has no hash, so neither has the group."""
    frozen = _raised(module, "same_line", "assert")
    group = ExceptionGroup("two", [frozen, ValueError("raised in code under test")])
    assert exception_hash(group, own_file=str(tmp_path / "frozen_module.py")) is None


# ---- in the gate: a frozen property, and a patch whose failure is not the frozen one --------------------------------

FREEZE = """\
version: 1
entries:
  - id: double
    test: properties/test_double.py::test_double
    assertion_hash: "{digest}"
    added_at: "2026-09-10"
    expires: "2026-09-20"
    owner: humans
    reason: timing
"""
TWO_CHECKS = """\
from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    y = double(x)
    if x < 0:
        assert y <= 0
    assert y == x + x
"""
# Wrong for x >= 1000 (the frozen failure, line 11) and now also for negative x (line 10): two distinct failures.
SECOND_BUG = "def double(x):\n    if x < 0:\n        return 1\n    return x * 2 if x < 1000 else x\n"


def _frozen_repo(git_repo: GitRepo, prop: str, line: int) -> None:
    digest = statement_hash(prop, line)
    assert digest is not None
    files = base_files(fresh_seeds=0)
    files.update({"properties/test_double.py": prop, "freeze.yaml": FREEZE.format(digest=digest[:32])})
    git_repo.commit("baseline", files)
    git_repo.branch("patch")


def test_frozen_failure_alone_is_excused(git_repo: GitRepo, tmp_path: Path) -> None:
    """Control: the frozen failure on its own is excused by its entry."""
    _frozen_repo(git_repo, TWO_CHECKS, 11)
    git_repo.commit("noop", {"README.md": "x\n"})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


def test_second_distinct_failure_is_not_excused(git_repo: GitRepo, tmp_path: Path) -> None:
    """Hypothesis reports two distinct failures as a group; the entry for one of them excuses neither."""
    _frozen_repo(git_repo, TWO_CHECKS, 11)
    git_repo.commit("second bug", {"src/calc.py": SECOND_BUG})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert "property-failed" in rows(receipt), receipt["violations"]


def test_type_error_on_the_frozen_line_is_not_excused(git_repo: GitRepo, tmp_path: Path) -> None:
    """`double = None` makes the frozen line raise TypeError: a new failure, not the frozen assertion."""
    prop = base_files()["properties/test_double.py"]
    assert isinstance(prop, str)
    _frozen_repo(git_repo, prop, 8)
    git_repo.commit("not callable", {"src/calc.py": "double = None\n"})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert "property-failed" in rows(receipt), receipt["violations"]
