"""The sealed run's runner environment of its own: the harness only, the gate's plugin under a private name, and
proof (provenance) that the code under test was loaded from the sealed tree."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.commands.freeze import failing_hash
from evidence_gate.errors import GateError
from evidence_gate.git import Repo
from evidence_gate.receipt import write as receipt
from evidence_gate.sealed import runner_env
from evidence_gate.sealed.worker import provenance
from support.property_repo import base_files, judge, rows
from support.repo_builder import GitRepo
from support.runner_cases import BROKEN, BUG, GATE_DEPS, GREEN, harness_needs, named_repo, out_of_reach_repo


def test_a_worker_cannot_import_the_gates_own_dependencies(git_repo: GitRepo, tmp_path: Path) -> None:
    """Inside the sealed run yaml, jsonschema, github, requests, urllib3 (and attrs where the harness does not need
    it) cannot even be found, no site-packages folder is on sys.path, and the plugin has its private name."""
    names = [n for n in GATE_DEPS if not harness_needs(n)]
    assert {"yaml", "jsonschema", "github", "requests", "urllib3"} <= set(names)
    out_of_reach_repo(git_repo, names)
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    runner = receipt["sealed"]["runner"]
    names = {d.split()[0].lower() for d in runner["distributions"]}
    assert {"pytest", "hypothesis", "pluggy"} <= names
    assert not names & {"pyyaml", "jsonschema", "pygithub", "requests", "urllib3", "evidence-gate"}
    assert receipt["sealed"]["provenance"] == [{"package": "calc", "loaded_from": "src/calc.py", "from_tree": True}]


@pytest.mark.parametrize("name", ["attr", "yaml", "evidence_gate"])
def test_code_named_like_a_gate_dependency_is_the_pull_requests_own(
    name: str, git_repo: GitRepo, tmp_path: Path
) -> None:
    """A package named like one of the gate's dependencies (or the gate itself) is judged as the PR wrote it: the
    honest patch passes, a bug fails, an import-time error fails; the receipt shows where it was loaded from."""
    if harness_needs(name):
        pytest.skip(f"this installation's harness itself needs {name!r} (see the run-integrity test)")
    named_repo(git_repo, name)
    init = f"src/{name}/__init__.py"
    git_repo.commit("honest", {init: GREEN.format(name=name)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["provenance"] == [{"package": name, "loaded_from": init, "from_tree": True}]
    assert receipt["sealed"]["neutralised"] == []
    git_repo.commit("bug", {init: BUG.format(name=name)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    git_repo.commit("broken", {init: BROKEN.format(name=name)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "was not collected" in json.dumps(receipt["violations"])


@pytest.mark.parametrize(
    ("name", "owner"),
    [("pluggy", "the test harness"), ("_pytest", "the test harness"), ("json", "the standard library")],
)
def test_code_the_harness_or_stdlib_already_owns_is_run_integrity_before_any_test(
    name: str, owner: str, git_repo: GitRepo, tmp_path: Path
) -> None:
    """A project whose package is named like something the harness needs or like a standard module cannot be
    loaded from the sealed tree: run-integrity naming the package and the way out, and no test runs."""
    named_repo(git_repo, name)
    git_repo.commit("honest", {f"src/{name}/__init__.py": GREEN.format(name=name)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    [violation] = [v for v in receipt["violations"] if v["row"] == "run-integrity"]
    assert violation["path"] == f"src/{name}"
    assert f"package {name!r}" in violation["message"] and owner in violation["message"]
    assert "Fix:" in violation["message"]
    assert "docs/sealed-run.md" in violation["message"]
    assert receipt["properties"].get("ledgers", []) == []


def test_a_shadow_the_patch_adds_is_neutralised_and_the_run_goes_on(git_repo: GitRepo, tmp_path: Path) -> None:
    """A new src/pytest.py or src/pluggy/ from the patch is left out (listed), and the real harness runs the test."""
    files = base_files(fresh_seeds=0)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit(
        "honest plus shadows",
        {
            "src/calc.py": "def double(x):\n    return x * 2\n",
            "src/pytest.py": "raise SystemExit('shadowed pytest')\n",
            "src/pluggy/__init__.py": "raise SystemExit('shadowed pluggy')\n",
        },
    )
    receipt = judge(git_repo, tmp_path)
    assert {"src/pytest.py", "src/pluggy/__init__.py"} <= {n["path"] for n in receipt["sealed"]["neutralised"]}
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


SYS_PATH_HACK = """\
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vendor"))

from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == x + x
"""


def test_code_under_test_loaded_from_elsewhere_is_run_integrity(git_repo: GitRepo, tmp_path: Path) -> None:
    """A locked test that puts another copy of the code under test first on sys.path judged other code than the
    PR's: provenance shows it, and the row is run-integrity, never a pass."""
    files = base_files(fresh_seeds=0)
    files.update({"properties/test_double.py": SYS_PATH_HACK, "vendor/calc.py": "def double(x):\n    return x * 2\n"})
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("still red", {"README.md": "touched\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    [found] = [v for v in receipt["violations"] if "was loaded from" in v["message"]]
    assert "vendor/calc.py" in found["message"] and "src/calc.py" in found["message"]
    assert found["path"] == "src/calc.py"
    [entry] = receipt["sealed"]["provenance"]
    assert entry["package"] == "calc" and entry["from_tree"] is False
    assert entry["loaded_from"].endswith("vendor/calc.py")
    assert "run-integrity" in rows(receipt)


def test_install_python_sees_the_runner_not_the_gates_site_packages(git_repo: GitRepo, tmp_path: Path) -> None:
    """`$EVIDENCE_GATE_PYTHON` in `properties.install` imports pytest and Hypothesis, but not the gate's yaml."""
    check = (
        '"$EVIDENCE_GATE_PYTHON" -c "import pytest, hypothesis" && '
        '! "$EVIDENCE_GATE_PYTHON" -c "import yaml" && ! "$EVIDENCE_GATE_PYTHON" -c "import jsonschema"'
    )
    files = base_files(fresh_seeds=0, install=check)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


def test_harness_is_pytest_hypothesis_and_what_they_require() -> None:
    """The harness is computed from installed metadata: pytest, Hypothesis, their requirements (markers evaluated,
    no extras), and never one of the gate's own dependencies unless the harness itself requires it."""
    dists = {runner_env._normal(d.metadata["Name"]): d for d in runner_env.harness_distributions()}
    assert {"pytest", "hypothesis", "pluggy", "iniconfig", "packaging"} <= set(dists)
    required = {
        runner_env._normal(r.split(";")[0].split(">")[0].split("<")[0].split("=")[0].split("!")[0].strip())
        for d in dists.values()
        for r in d.requires or ()
        if "extra ==" not in r
    }
    assert set(dists) - {"pytest", "hypothesis"} <= required
    assert not {"pyyaml", "jsonschema", "pygithub", "requests", "urllib3", "evidence-gate"} & set(dists)
    assert ("attrs" in dists) == ("attrs" in required)


def test_worker_side_modules_import_only_stdlib_the_harness_and_each_other() -> None:
    """The trust boundary: what runs inside the sealed interpreter imports the standard library, pytest,
    Hypothesis and other worker-side modules (relatively), never the gate's other modules or its dependencies."""
    modules = runner_env.worker_modules()
    assert {"worker", "plugin", "landlock", "assertion_hash", "provenance"} <= set(modules)
    allowed = set(sys.stdlib_module_names) | {"pytest", "_pytest", "hypothesis", "_hypothesis_pytestplugin"}
    for name in modules:
        tree = ast.parse((runner_env.WORKER_DIR / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                assert {a.name.split(".")[0] for a in node.names} <= allowed, (name, ast.unparse(node))
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                assert str(node.module).split(".")[0] in allowed, (name, ast.unparse(node))
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 1 and (node.module or "") in {"", *modules}, (name, ast.unparse(node))


def test_provenance_check_names_modules_from_elsewhere(tmp_path: Path) -> None:
    """The check accepts modules inside their folder and reports those loaded from anywhere else."""
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "__init__.py").write_text("")
    (tmp_path / "src" / "mod.py").write_text("")
    (tmp_path / "src" / "ns").mkdir()
    expected = provenance.code_under_test([str(tmp_path / "src")])
    assert set(expected) == {"pkg", "mod", "ns"}
    assert set(provenance.regular(expected)) == {"pkg", "mod"}

    class Fake:
        def __init__(self, file: str | None) -> None:
            self.__file__ = file

    modules: dict[str, Any] = {
        "pkg": Fake(str(tmp_path / "src" / "pkg" / "__init__.py")),
        "pkg.sub": Fake("/elsewhere/pkg/sub.py"),
        "mod": Fake(None),
        "other": Fake("/x.py"),
    }
    found = provenance.check(expected, modules)
    assert found["loaded"] == {"pkg": str(tmp_path / "src" / "pkg" / "__init__.py"), "mod": "(built in)"}
    assert [m["module"] for m in found["mismatches"]] == ["pkg.sub", "mod"]


@pytest.mark.parametrize(
    ("provenance_item", "valid"),
    [
        ({"package": "attr", "loaded_from": "src/attr/__init__.py", "from_tree": True}, True),
        (
            {"package": "attr", "loaded_from": "/usr/lib/python3/dist-packages/attr/__init__.py", "from_tree": False},
            True,
        ),
        ({"package": "attr", "loaded_from": "src/attr/__init__.py"}, False),
        ({"package": "attr", "loaded_from": "src/attr/__init__.py", "from_tree": "yes"}, False),
    ],
)
def test_receipt_schema_describes_sealed_provenance(provenance_item: dict[str, Any], valid: bool) -> None:
    """`sealed.provenance` items carry package, loaded_from and a boolean from_tree; the schema says so."""
    out = receipt.empty_receipt()
    out["sealed"] = {
        "provenance": [provenance_item],
        "runner": {"python": "3.13.5", "distributions": ["pytest 8.3.5"], "sys_path": ["/usr/lib"]},
    }
    assert (receipt.validate(out) == []) is valid


def test_freeze_hash_judges_heads_own_package_and_refuses_one_it_cannot_load(git_repo: GitRepo) -> None:
    """`freeze hash` runs on the runner environment too: a red package named `yaml` is hashed from HEAD's tree, and
    a package named like the standard library stops with run-integrity instead of hashing other code."""
    named_repo(git_repo, "yaml")
    digest, event = failing_hash(Repo(git_repo.path), "properties/test_double.py::test_double")
    assert len(digest) == 64 and event["outcome"] == "failed"
    named = GitRepo(git_repo.path.parent / "json-project")
    named_repo(named, "json")
    with pytest.raises(GateError, match=r"package 'json'.*the standard library") as raised:
        failing_hash(Repo(named.path), "properties/test_double.py::test_double")
    assert raised.value.row == "run-integrity"
