"""The lists of modules the sealed run names stay true: every module a list names exists, and every module of the
harness or of the gate's worker side is named by one, so that a renamed or added module cannot silently drop out."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import sealed
from evidence_gate.sealed import runner_env
from evidence_gate.sealed.worker import harness_guard

# The distributions whose code is the harness itself (pluggy calls pytest's hooks); what they require besides
# (iniconfig, packaging, Pygments, sortedcontainers, ...) are libraries the harness uses, not the harness.
HARNESS_DISTRIBUTIONS = ("pytest", "hypothesis", "pluggy")
# What the sealed worker imports before any repository path is on sys.path (see worker.main).
WORKER_IMPORTS = ("_hypothesis_pytestplugin", "hypothesis", "hypothesis.strategies", "pytest")

# Runs in the sealed interpreter (`python -I -S -B`, the runner's sys.path only) and prints what it found as JSON.
PROBE = """\
import importlib, importlib.util, json, sys
sys.path[:] = json.loads(sys.argv[1])
private, imports, entries, extra = json.loads(sys.argv[2])
for name in imports:
    importlib.import_module(name)
for name in entries:
    importlib.import_module(private + "." + name)
guard = importlib.import_module(private + ".harness_guard")
snapshot = guard.take()
for name in extra:
    importlib.import_module(name)
origins = guard.Origins([])
loaded = sorted(n for n in sys.modules if n.partition(".")[0] in {*guard.HARNESS, *extra})
print(json.dumps({
    "gate": guard.GATE,
    "missing": [n for n in [*guard.HARNESS, *guard.STDLIB_WATCHED]
                if n not in sys.modules and importlib.util.find_spec(n) is None],
    "snapshot": sorted(snapshot.modules),
    "private": sorted(n.partition(".")[2] for n in sys.modules if n.startswith(private + ".")),
    "opaque": [n for n in loaded if getattr(sys.modules[n], "__file__", None)
               and not origins.transparent(sys.modules[n].__file__)],
}))
"""


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> runner_env.Runner:
    """A runner folder built as a sealed run builds it."""
    return runner_env.build(tmp_path_factory.mktemp("watched") / "runner")


def _sealed(runner: runner_env.Runner, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    """What the probe finds in a sealed interpreter that imported what a worker imports (then `extra`)."""
    spec = [runner_env.PRIVATE_PACKAGE, list(WORKER_IMPORTS), list(runner_env.WORKER_ENTRIES), list(extra)]
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-B", "-c", PROBE, json.dumps(runner.sys_path), json.dumps(spec)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=runner.folder,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, Any] = json.loads(proc.stdout)
    return found


def _harness_modules() -> set[str]:
    return {
        name
        for dist in runner_env.harness_distributions()
        if runner_env._normal(dist.metadata["Name"]) in HARNESS_DISTRIBUTIONS
        for name in runner_env.module_paths(dist)
    }


def test_every_listed_worker_module_exists_and_is_linked(runner: runner_env.Runner) -> None:
    """The worker's entry modules and everything they import relatively are files of the gate, and the runner's
    private package links exactly those (each link resolving to its file)."""
    modules = runner_env.worker_modules()
    assert set(runner_env.WORKER_ENTRIES) <= set(modules)
    for name in modules:
        assert (runner_env.WORKER_DIR / f"{name}.py").is_file(), name
    private = runner.folder / runner_env.PRIVATE_PACKAGE
    links = {p.name.removesuffix(".py"): p for p in private.iterdir() if p.is_symlink()}
    assert set(links) == set(modules)
    for name, link in links.items():
        assert link.resolve() == (runner_env.WORKER_DIR / f"{name}.py").resolve(), name


def test_the_sealed_worker_loads_exactly_the_linked_modules(runner: runner_env.Runner) -> None:
    """A real sealed interpreter that imports what a worker imports loads every linked worker-side module and no
    other module of the private package: a module the import walk missed would be an ImportError in every run, one
    it found but nothing loads is dead weight in the trust boundary."""
    found = _sealed(runner)
    assert found["private"] == sorted(runner_env.worker_modules())
    assert found["gate"] == runner_env.PRIVATE_PACKAGE


def test_worker_side_imports_are_all_visible_to_the_import_walk() -> None:
    """worker_modules() follows `from . import x` and `from .x import y`; any other way for a worker-side module to
    reach a module of the gate (`from .. import`, import_module, __import__) would load a module no list covers."""
    for name in runner_env.worker_modules():
        tree = ast.parse((runner_env.WORKER_DIR / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level in {0, 1}, (name, ast.unparse(node))
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith(("import_module", "__import__")):
                # Absolute names are the code under test's (the fixture producer); a package or a relative name
                # would be a module of the gate's.
                first = node.args[0] if node.args else None
                relative = isinstance(first, ast.Constant) and str(first.value).startswith(".")
                assert not relative and len(node.args) == 1 and not node.keywords, (name, ast.unparse(node))


def test_every_watched_name_exists_in_the_sealed_interpreter(runner: runner_env.Runner) -> None:
    """Every top-level name harness_guard watches and every standard-library module whose callables it watches can
    be found in the sealed interpreter, and each of the latter is loaded when the worker takes its snapshot (a
    name that is absent then is skipped by `take` without a word)."""
    found = _sealed(runner)
    assert found["missing"] == []
    assert set(harness_guard.STDLIB_WATCHED) <= set(found["snapshot"])


def test_every_module_of_the_harness_is_watched() -> None:
    """Each top-level module that pytest, Hypothesis and pluggy install here is harness to harness_guard (watched,
    its frames transparent); a release that adds one (`_hypothesis_ftz_detector`, pytest's `py` shim) must not
    leave it open to the code under test."""
    assert _harness_modules() - set(harness_guard.HARNESS) == set()
    assert set(harness_guard.HARNESS) - {harness_guard.GATE} <= _harness_modules()


def test_every_loaded_harness_module_is_transparent(runner: runner_env.Runner) -> None:
    """Origins treats the frames of every watched module as the harness's, including those loaded only on demand:
    the list it judges frames by is the list harness_guard watches."""
    found = _sealed(runner, extra=tuple(sorted(_harness_modules())))
    assert found["opaque"] == []


# What a worker-side module may import by absolute name: the standard library and the harness.
HARNESS_IMPORTS = frozenset({"pytest", "_pytest", "hypothesis", "_hypothesis_pytestplugin"})


def boundary_problems(name: str, source: str, worker_side: frozenset[str]) -> list[str]:
    """The imports of a worker-side module that leave the trust boundary: an absolute import of anything but the
    standard library and the harness, a relative one of a module that is not worker-side, or one from above the
    package."""
    allowed = set(sys.stdlib_module_names) | HARNESS_IMPORTS
    problems = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            bad = [a.name for a in node.names if a.name.split(".")[0] not in allowed]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            bad = [str(node.module)] if str(node.module).split(".")[0] not in allowed else []
        elif isinstance(node, ast.ImportFrom):
            targets = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
            bad = [ast.unparse(node)] if node.level != 1 else [t for t in targets if t not in worker_side]
        else:
            continue
        problems += [f"{name}.py:{node.lineno}: {b}" for b in bad]
    return problems


def _worker_side() -> frozenset[str]:
    """The worker side: the modules of `sealed/worker/` (the folder is the boundary)."""
    return frozenset(p.stem for p in runner_env.WORKER_DIR.glob("*.py") if p.name != "__init__.py")


def test_the_worker_side_is_what_the_runner_links() -> None:
    """The worker folder holds exactly the modules the runner links (its import walk from the entries): a module
    in the folder that nothing links is dead weight inside the boundary, one linked from outside it is impossible."""
    assert _worker_side() == set(runner_env.worker_modules())
    assert set(runner_env.WORKER_ENTRIES) <= _worker_side()


def test_no_gate_side_module_sits_in_the_worker_folder_and_no_worker_module_outside_it() -> None:
    """The sealed folder's own modules are gate-side: none of them is reached by the worker's import walk."""
    gate_side = {p.stem for p in Path(sealed.__file__).parent.glob("*.py") if p.name != "__init__.py"}
    assert gate_side == {"run", "tree", "runner_env", "hypothesis_tables", "prebuild"}
    assert not gate_side & set(runner_env.worker_modules())


def test_worker_side_modules_import_only_the_standard_library_the_harness_and_each_other() -> None:
    """The trust boundary, over the package's sources: no worker-side module imports the gate's other modules, its
    dependencies or anything else the sealed interpreter does not have."""
    worker_side = _worker_side()
    problems = [
        p
        for name in sorted(worker_side)
        for p in boundary_problems(
            name, (runner_env.WORKER_DIR / f"{name}.py").read_text(encoding="utf-8"), worker_side
        )
    ]
    assert problems == []


@pytest.mark.parametrize(
    "source",
    [
        "import yaml\n",
        "from evidence_gate import redact\n",
        "from evidence_gate.sealed.worker import protocol\n",
        "def f():\n    import jsonschema\n",
        "from .. import redact\n",
        "from . import run\n",
        "from .tree import build\n",
        "import packaging.version\n",
    ],
)
def test_the_boundary_check_catches_each_way_out(source: str) -> None:
    """Each way out of the boundary is found: a dependency, the gate by name, a gate-side module relatively, an
    import from above the package, a harness dependency that is not the harness (even inside a function)."""
    assert boundary_problems("planted", source, _worker_side()) != []
