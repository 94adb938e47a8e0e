"""Repositories whose code under test is named like the gate's dependencies, the harness or the standard library, and
a property that looks for the gate's own dependencies from inside the sealed run (host and container tests)."""

from __future__ import annotations

from evidence_gate.sealed import runner_env
from support.property_repo import base_files
from support.repo_builder import GitRepo

GATE_DEPS = ("yaml", "jsonschema", "github", "requests", "attr", "attrs", "urllib3", "referencing", "jwt")

OUT_OF_REACH = """\
import importlib.util
import sys

from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == x + x
    reachable = [n for n in {names!r} if importlib.util.find_spec(n) is not None]
    assert reachable == [], reachable
    assert sys.flags.no_site == 1
    assert not [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))], sys.path
    assert "evidence_gate" not in sys.modules
    assert "{private}.plugin" in sys.modules
"""

NAMED_PROPERTY = """\
from hypothesis import given, strategies as st

import {name}
from {name} import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == x + x
    assert {name}.MARK == "the pull request's own {name}"
"""
RED = 'MARK = "the pull request\'s own {name}"\n\n\ndef double(x):\n    return x * 2 if x < 1000 else x\n'
GREEN = 'MARK = "the pull request\'s own {name}"\n\n\ndef double(x):\n    return x * 2\n'
BUG = 'MARK = "the pull request\'s own {name}"\n\n\ndef double(x):\n    return x * 2 if x > -1000 else x\n'
BROKEN = 'raise RuntimeError("{name} is broken at import")\n'


def named_repo(repo: GitRepo, name: str, init: str = RED) -> None:
    """A baseline whose code under test is the package `name` (src/NAME/__init__.py) with a red property."""
    files = base_files(fresh_seeds=0)
    files.update(
        {
            "properties/test_double.py": NAMED_PROPERTY.format(name=name),
            "src/calc.py": None,
            f"src/{name}/__init__.py": init.format(name=name),
        }
    )
    repo.commit("baseline", files)
    repo.branch("patch")


def harness_needs(name: str) -> bool:
    """Whether the harness of this installation itself provides the top-level module `name`."""
    return any(name in runner_env.module_paths(d) for d in runner_env.harness_distributions())


def out_of_reach_repo(repo: GitRepo, names: list[str]) -> None:
    """A baseline whose property fails unless none of `names` can be found inside the sealed run; an honest patch."""
    files = base_files(fresh_seeds=0)
    files["properties/test_double.py"] = OUT_OF_REACH.format(names=names, private=runner_env.PRIVATE_PACKAGE)
    repo.commit("baseline", files)
    repo.branch("patch")
    repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
