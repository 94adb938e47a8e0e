"""A monorepo of three bounded contexts (alpha, beta, gamma), each with a small Hypothesis property; alpha and
beta lock the shared folder libs/shared/ (a glob anchored at the repository root)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from support.repo_builder import GitRepo

NAMES = ("alpha", "beta", "gamma")
PROPERTY = """\
from hypothesis import given, strategies as st

from {name}_calc import double


@given(st.integers(-10**6, 10**6))
def test_{name}_double(x):
    assert double(x) == x + x
"""
GREEN = "def double(x):\n    return x * 2\n"
BROKEN = "def double(x):\n    return x * 2 if x < 1000 else x\n"
PLAN = {"seeds": [11, 12], "fresh_seeds": 0, "trials": 20, "timeout_s": 60, "jobs": 1}


def monorepo_config() -> str:
    """Three contexts; alpha and beta lock the shared strategies folder (anchored at the repository root)."""
    contexts: dict[str, Any] = {}
    for name in NAMES:
        body: dict[str, Any] = {"root": f"services/{name}", "properties": {**PLAN, "pythonpath": ["src"]}}
        if name != "gamma":
            body["locked"] = ["/libs/shared/**"]
        contexts[name] = body
    return json.dumps({"version": 1, "contexts": contexts})


def monorepo(tmp_path: Path, branch: str = "patch") -> GitRepo:
    """The baseline on `main` (every context green), then branch `patch`."""
    repo = GitRepo(tmp_path / "repo")
    files: dict[str, str | bytes | None] = {
        ".evidence-gate.yml": monorepo_config(),
        "libs/shared/notes.txt": "shared by alpha and beta\n",
        "README.md": "monorepo\n",
    }
    for name in NAMES:
        root = f"services/{name}"
        files[f"{root}/SCORE_PROPERTIES"] = f"{root}/properties/test_{name}.py::test_{name}_double\n"
        files[f"{root}/properties/test_{name}.py"] = PROPERTY.format(name=name)
        files[f"{root}/src/{name}_calc.py"] = GREEN
    repo.commit("baseline", files)
    repo.branch(branch)
    return repo
