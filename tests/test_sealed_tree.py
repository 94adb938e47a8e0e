"""What the sealed tree leaves out, and the assertion hash it binds freezes to."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from evidence_gate.assertion_hash import matches, statement_hash
from evidence_gate.git import Repo, TreeEntry
from evidence_gate.sealed_tree import changed_files, neutralise_reason, plan_tree


@pytest.mark.parametrize("path", [
    "pytest.ini", "sub/tox.ini", "setup.cfg", "pyproject.toml", "tests/conftest.py", ".pytest_cache/v/cache/lastfailed",
    "src/sitecustomize.py", "usercustomize.py", "src/x.pth", "src/evil-1.0.dist-info/entry_points.txt",
    "evil.egg-info/PKG-INFO", "pytest.py", "hypothesis/__init__.py", "src/yaml.py", "src/json/__init__.py",
    "src/__pycache__/calc.cpython-311.pyc",
])
def test_subverting_paths_are_neutralised(path: str) -> None:
    """Configuration, caches, start-up hooks, metadata and shadowing modules never reach the run."""
    packages = frozenset({"hypothesis", "src/json"})
    assert neutralise_reason(path, packages) is not None


@pytest.mark.parametrize("path", ["src/calc.py", "src/mypkg/json.py", "test/test_x.py", "docs/index.md",
                                  "fixtures/yaml.txt"])
def test_ordinary_paths_stay(path: str) -> None:
    """Code under test, modules inside packages and data files are kept."""
    assert neutralise_reason(path, frozenset({"src/mypkg"})) is None


def _entry(path: str, oid: str) -> TreeEntry:
    return TreeEntry("100644", "blob", oid, path)


def test_locked_files_come_from_the_baseline_and_conftests_from_the_baseline_copy() -> None:
    """A locked path takes the baseline's blob; a patched conftest is replaced by the baseline's."""
    base = [_entry("properties/test_a.py", "a" * 40), _entry("tests/conftest.py", "c" * 40)]
    head = [_entry("properties/test_a.py", "b" * 40), _entry("tests/conftest.py", "d" * 40),
            _entry("conftest.py", "e" * 40)]
    entries, neutralised = plan_tree(head, base, {"properties/test_a.py"})
    assert entries["properties/test_a.py"].oid == "a" * 40
    assert entries["tests/conftest.py"].oid == "c" * 40
    assert "conftest.py" not in entries
    assert {n.path for n in neutralised} == {"tests/conftest.py", "conftest.py"}


def test_assertion_hash_ignores_layout_not_meaning() -> None:
    """Whitespace and comments do not change the hash; the statement does."""
    one = statement_hash("def t():\n    assert f(x) == 2  # note\n", 2)
    two = statement_hash("def t():\n    assert   f( x )==2\n", 2)
    three = statement_hash("def t():\n    assert f(x) == 3\n", 2)
    assert one == two != three
    assert one is not None and matches(one[:32], one) and not matches(one[:31], one)


def test_module_named_like_a_locked_test_is_neutralised() -> None:
    """A repository module with a locked test file's name would be imported in its place; it is left out."""
    assert neutralise_reason("src/test_double.py", frozenset(), frozenset({"test_double"})) is not None
    assert neutralise_reason("src/mypkg/test_double.py", frozenset({"src/mypkg"}), frozenset({"test_double"})) is None


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_changed_files_rehashes_in_both_object_formats(tmp_path: Path, object_format: str) -> None:
    """A fixture rewritten during the run is reported, in sha1 and sha256 repositories alike (no id is skipped)."""
    repo_dir = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", f"--object-format={object_format}", str(repo_dir)], check=True)
    (repo_dir / "fixtures").mkdir()
    (repo_dir / "fixtures" / "a.txt").write_text("golden\n")
    (repo_dir / "fixtures" / "b.txt").write_text("kept\n")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "PATH": "/usr/bin:/bin"}
    subprocess.run(["git", "add", "-A"], cwd=repo_dir, check=True)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=repo_dir, check=True, env=env)
    dest = tmp_path / "sealed"
    (dest / "fixtures").mkdir(parents=True)
    (dest / "fixtures" / "a.txt").write_text("rewritten\n")
    (dest / "fixtures" / "b.txt").write_text("kept\n")
    assert changed_files(Repo(repo_dir), "HEAD", "fixtures", dest) == ["fixtures/a.txt"]
