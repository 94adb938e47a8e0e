"""What the sealed tree leaves out (never the code under test), and the assertion hash it binds freezes to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_gate.git import Repo, TreeEntry
from evidence_gate.sealed import runner_env
from evidence_gate.sealed.runner_env import Runner
from evidence_gate.sealed.tree import changed_files, neutralise_reason, plan_tree
from evidence_gate.sealed.worker.assertion_hash import matches, statement_hash


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Runner:
    """The runner environment this gate would give a sealed run (real links to the installed harness)."""
    return runner_env.build(tmp_path_factory.mktemp("runner") / "runner")


def _entry(path: str, oid: str) -> TreeEntry:
    return TreeEntry("100644", "blob", oid, path)


def _plan(head: list[str], base: list[str], runner: Runner) -> tuple[set[str], set[str]]:
    entries, neutralised = plan_tree(
        [_entry(p, "b" * 40) for p in head], [_entry(p, "a" * 40) for p in base], frozenset(), owner=runner.owner
    )
    return set(entries), {n.path for n in neutralised}


HOOKS = [
    ".pytest_cache/v/cache/lastfailed",
    "src/sitecustomize.py",
    "usercustomize.py",
    "src/x.pth",
    "src/evil-1.0.dist-info/entry_points.txt",
    "evil.egg-info/PKG-INFO",
    "src/__pycache__/calc.cpython-311.pyc",
]


@pytest.mark.parametrize("path", HOOKS)
def test_configuration_caches_and_startup_hooks_are_neutralised_whoever_wrote_them(path: str, runner: Runner) -> None:
    """Configuration, caches, start-up hooks and metadata never reach the run, even when the baseline has them."""
    for base in ([], [path]):
        kept, neutralised = _plan([path, "src/calc.py"], base, runner)
        assert path in neutralised and path not in kept
        assert "src/calc.py" in kept


@pytest.mark.parametrize("path", ["pytest.ini", "sub/tox.ini", "setup.cfg", "pyproject.toml", ".pytest.toml"])
def test_pytest_configuration_files_stay_in_the_tree_as_the_checkout_has_them(path: str, runner: Runner) -> None:
    """pytest reads none of them (the worker passes the gate's ini with `-c` and the tree as `--rootdir`); code that
    reads its own settings finds them, added or changed by the patch or not, as in a checkout."""
    for base in ([], [path]):
        kept, neutralised = _plan([path, "src/calc.py"], base, runner)
        assert path in kept and path not in neutralised


SHADOWS = [
    "pytest.py",
    "hypothesis/__init__.py",
    "src/_pytest/__init__.py",
    "src/pluggy.py",
    "src/json/__init__.py",
    "src/typing.py",
    "tests/unit/random.py",
]


@pytest.mark.parametrize("path", SHADOWS)
def test_shadows_of_the_harness_or_stdlib_that_the_patch_adds_are_neutralised(path: str, runner: Runner) -> None:
    """A module the patch adds under a name the harness or the standard library owns is left out."""
    kept, neutralised = _plan([path, "src/calc.py"], ["src/calc.py"], runner)
    assert path in neutralised and path not in kept


@pytest.mark.parametrize("path", SHADOWS)
def test_a_colliding_file_the_baseline_has_is_the_projects_code_and_stays(path: str, runner: Runner) -> None:
    """The same file on the baseline is the project's own code: kept (the property lane then says run-integrity)."""
    kept, neutralised = _plan([path], [path], runner)
    assert path in kept and not neutralised


@pytest.mark.parametrize(
    "path",
    [
        "src/yaml.py",
        "src/attr/__init__.py",
        "src/attrs/__init__.py",
        "src/evidence_gate/__init__.py",
        "src/jsonschema/__init__.py",
        "src/github.py",
        "src/requests/__init__.py",
        "src/urllib3/__init__.py",
    ],
)
def test_code_named_like_the_gates_own_dependencies_is_code_under_test(path: str, runner: Runner) -> None:
    """The gate's own dependencies are not in the sealed run, so a patch's package with their name stays."""
    if runner.owner(path.split("/")[1].removesuffix(".py")) is not None:
        pytest.skip(f"this installation's harness itself needs {path}")
    kept, neutralised = _plan([path], [], runner)
    assert path in kept and not neutralised


@pytest.mark.parametrize(
    "path",
    [
        "src/calc.py",
        "src/mypkg/json.py",
        "test/test_x.py",
        "docs/index.md",
        "fixtures/yaml.txt",
        "src/mypkg/sitecustomize.py",
    ],
)
def test_ordinary_paths_stay(path: str, runner: Runner) -> None:
    """Code under test, modules inside packages and data files are kept."""
    kept, neutralised = _plan([path, "src/mypkg/__init__.py"], [], runner)
    assert path in kept and not neutralised


def test_harness_and_stdlib_owners_are_named(runner: Runner) -> None:
    """The owner lookup names the harness distribution or the standard library, and leaves other names free."""
    assert "pytest" in str(runner.owner("_pytest"))
    assert "pluggy" in str(runner.owner("pluggy"))
    assert runner.owner("json") == runner.owner("_socket") == "the standard library"
    assert runner.owner("calc") is None
    assert runner.owner("yaml") is None
    assert runner.owner("evidence_gate") is None


WORKER_IMPORT = """\
import json, sys
import importlib._bootstrap_external as external
compiled = []
original = external.SourceLoader.source_to_code
def counted(self, data, path, *args, **kwargs):
    compiled.append(str(path))
    return original(self, data, path, *args, **kwargs)
external.SourceLoader.source_to_code = counted
sys.path[:] = json.loads(sys.argv[1])
import _evidence_gate_runner.worker, _evidence_gate_runner.plugin
print(json.dumps({"compiled": [p for p in compiled if "_evidence_gate_runner" in p],
                  "file": _evidence_gate_runner.worker.main.__code__.co_filename}))
"""


def test_a_worker_imports_the_gates_modules_from_bytecode_the_gate_compiled(runner: Runner) -> None:
    """A worker runs with `-B` (it writes no bytecode): the runner folder holds the worker-side modules' bytecode,
    read-only to the sandbox user, so no worker compiles them from source; their code keeps the runner's file names."""
    private = runner.folder / runner_env.PRIVATE_PACKAGE
    cache = private / "__pycache__"
    assert cache.stat().st_mode & 0o777 == 0o755
    for source in private.glob("*.py"):
        pyc = cache / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        assert pyc.stat().st_mode & 0o777 == 0o644, pyc
    argv = [sys.executable, "-s", "-P", "-S", "-B", "-c", WORKER_IMPORT, json.dumps(runner.sys_path)]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got == {"compiled": [], "file": str(private / "worker.py")}, got


def test_locked_files_come_from_the_baseline_and_conftests_from_the_baseline_copy() -> None:
    """A locked path takes the baseline's blob; a patched conftest is replaced by the baseline's."""
    base = [_entry("properties/test_a.py", "a" * 40), _entry("tests/conftest.py", "c" * 40)]
    head = [
        _entry("properties/test_a.py", "b" * 40),
        _entry("tests/conftest.py", "d" * 40),
        _entry("conftest.py", "e" * 40),
    ]
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


def test_module_named_like_a_locked_test_is_neutralised_when_the_patch_adds_it() -> None:
    """A module the patch adds with a locked test file's name would be imported in its place; it is left out."""
    assert neutralise_reason("src/test_double.py", frozenset(), frozenset({"test_double"})) is not None
    assert neutralise_reason("src/mypkg/test_double.py", frozenset({"src/mypkg"}), frozenset({"test_double"})) is None
    entries, neutralised = plan_tree(
        [_entry("src/test_double.py", "b" * 40)],
        [_entry("src/test_double.py", "a" * 40)],
        frozenset(),
        reserved=frozenset({"test_double"}),
    )
    assert "src/test_double.py" in entries and not neutralised


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_changed_files_rehashes_in_both_object_formats(tmp_path: Path, object_format: str) -> None:
    """A fixture rewritten during the run is reported, in sha1 and sha256 repositories alike (no id is skipped)."""
    repo_dir = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", f"--object-format={object_format}", str(repo_dir)], check=True)
    (repo_dir / "fixtures").mkdir()
    (repo_dir / "fixtures" / "a.txt").write_text("golden\n")
    (repo_dir / "fixtures" / "b.txt").write_text("kept\n")
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@e",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@e",
        "PATH": "/usr/bin:/bin",
    }
    subprocess.run(["git", "add", "-A"], cwd=repo_dir, check=True)
    subprocess.run(["git", "commit", "-qm", "x"], cwd=repo_dir, check=True, env=env)
    dest = tmp_path / "sealed"
    (dest / "fixtures").mkdir(parents=True)
    (dest / "fixtures" / "a.txt").write_text("rewritten\n")
    (dest / "fixtures" / "b.txt").write_text("kept\n")
    assert changed_files(Repo(repo_dir), "HEAD", "fixtures", dest) == ["fixtures/a.txt"]
