"""Hypothesis' "local constants" inside the sealed run: drawn from the project's code, never from the harness.

Hypothesis mixes the literals of every module it judges local (outside site-packages and the standard library) into
what it generates. A worker starts with `-S`, so its interpreter's site-packages is not the folder the harness is
installed in; unless the worker says otherwise, pytest's, pluggy's and the gate's own modules would count as the
project's code (their literals steering the examples, some 140 files parsed per worker). A real sealed run checks
it from inside a locked property.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from support.property_repo import base_files, judge
from support.repo_builder import GitRepo

MARK = "calc-constant-7319"
PROPERTY = f"""\
import _pytest.main
import pluggy
from hypothesis import given, strategies as st
from hypothesis.internal.conjecture.providers import _get_local_constants
from hypothesis.internal.constants_ast import is_local_module_file

import calc
from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == x + x
    assert is_local_module_file(calc.__file__), calc.__file__
    harness = [m.__file__ for m in (_pytest.main, pluggy) if is_local_module_file(m.__file__)]
    assert harness == [], harness
    strings = _get_local_constants().strings
    assert "{MARK}" in strings
    assert "--confcutdir" not in strings  # a literal of _pytest/main.py
"""


@pytest.mark.skipif(
    importlib.util.find_spec("hypothesis.internal.constants_ast") is None,
    reason="this Hypothesis draws no local constants",
)
def test_the_harness_is_not_the_projects_code_for_hypothesis(git_repo: GitRepo, tmp_path: Path) -> None:
    files = base_files(fresh_seeds=0, seeds=[1], trials=5, jobs=1)
    files["properties/test_double.py"] = PROPERTY
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("honest", {"src/calc.py": f'MARK = "{MARK}"\n\n\ndef double(x):\n    return x * 2\n'})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
