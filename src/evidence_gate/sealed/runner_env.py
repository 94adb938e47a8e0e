"""The sealed run's runner environment: the test harness and nothing else, as one folder of links.

Sealed workers start as `python -s -P -S -B` with the standard library and this folder as their whole `sys.path`: pytest,
Hypothesis and exactly the distributions they require (read from their installed metadata, markers evaluated), and
the gate's worker-side modules under a private top-level name, so that `evidence_gate` and every other name under
`properties.pythonpath` is the pull request's code. The gate's own dependencies (PyYAML, jsonschema, PyGithub,
requests, attrs, ...) are not in it, wherever the gate is installed (a venv, Debian's dist-packages).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib.machinery
import importlib.metadata
import json
import os
import py_compile
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from evidence_gate.sealed import hypothesis_tables

HARNESS = ("pytest", "hypothesis")
# The top-level name the gate's worker-side modules take inside the sealed run; never a name a project uses.
PRIVATE_PACKAGE = "_evidence_gate_runner"
# Where the worker-side modules start; everything they import relatively (`from . import x`) comes along.
WORKER_ENTRIES = ("worker", "plugin")
# The sealed package's folder, where the worker-side modules live (linked from here into the runner folder).
WORKER_DIR = Path(__file__).resolve().parent / "worker"  # the worker side: the folder is the boundary
PIP_FOLDER = "install-tools"
# The workers' HYPOTHESIS_STORAGE_DIRECTORY: only the Unicode tables, read-only to the sandbox user.
STORAGE_FOLDER = "hypothesis-storage"
# `python -s -P -S -B -c BOOTSTRAP SYS_PATH JOB FD`: no site-packages, an allow-listed environment, an explicit sys.path.
BOOTSTRAP = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    f"from {PRIVATE_PACKAGE}.worker import leave, main; leave(main(sys.argv[2:]))"
)


class RunnerError(RuntimeError):
    """The runner environment cannot be built from this installation (a harness distribution is incomplete)."""


@dataclass(frozen=True)
class Runner:
    """A built runner folder: what it holds and the sys.path a sealed worker starts with."""

    folder: Path
    distributions: tuple[tuple[str, str], ...]
    modules: dict[str, str]
    stdlib_path: tuple[str, ...]
    tables: hypothesis_tables.Tables = hypothesis_tables.NONE

    @property
    def storage(self) -> Path:
        """Hypothesis' storage folder in the workers (HYPOTHESIS_STORAGE_DIRECTORY): the Unicode tables only."""
        return self.folder / STORAGE_FOLDER

    @property
    def sys_path(self) -> list[str]:
        """The worker's whole sys.path before the sealed tree's folders are appended."""
        return [*self.stdlib_path, str(self.folder)]

    def links(self) -> list[str]:
        """Every link in the folder: a Landlock rule on a link applies to its target."""
        folders = [self.folder, self.folder / PRIVATE_PACKAGE, self.folder / PIP_FOLDER]  # pip: for the install
        return sorted(str(p) for folder in folders if folder.is_dir() for p in folder.iterdir() if p.is_symlink())

    def owner(self, name: str) -> str | None:
        """What already owns the top-level module `name` in the sealed interpreter, or None when it is free."""
        if name in self.modules:
            return f"the test harness ({self.modules[name]})"
        return stdlib_owner(name, self.stdlib_path)

    def to_json(self) -> dict[str, object]:
        """The receipt's form."""
        return {
            "python": sys.version.split()[0],
            "distributions": [f"{n} {v}" for n, v in self.distributions],
            "sys_path": self.sys_path,
            "hypothesis_tables": self.tables.to_json(),
        }


def stdlib_owner(name: str, stdlib_path: tuple[str, ...]) -> str | None:
    """ "the standard library" when `name` is a standard module of this interpreter (or of Python at large)."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return "the standard library"
    if importlib.machinery.FrozenImporter.find_spec(name) is not None:
        return "the standard library"
    if importlib.machinery.PathFinder.find_spec(name, list(stdlib_path)) is not None:
        return "the standard library"
    return None


@cache
def stdlib_path() -> tuple[str, ...]:
    """The sys.path of this interpreter started with `-I -S`: the standard library only."""
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", "import sys, json; print(json.dumps(sys.path))"],
        capture_output=True,
        check=True,
        timeout=60,
        env={"PATH": os.environ.get("PATH", "")},
    )
    return tuple(str(p) for p in json.loads(proc.stdout) if p)


def _search_path() -> list[str]:
    # Not the working directory: a checkout's own `pytest-99.dist-info` must not decide what the harness is.
    here = Path.cwd()
    return [p for p in sys.path if p and Path(p).absolute() != here]


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def harness_distributions() -> list[importlib.metadata.Distribution]:
    """pytest, Hypothesis and, transitively, every distribution they require here (markers evaluated, no extras)."""
    from packaging.requirements import InvalidRequirement, Requirement  # noqa: PLC0415 - a dependency of pytest

    path = _search_path()
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(HARNESS)
    while todo:
        name = _normal(todo.pop())
        if name in found:
            continue
        dist = next(iter(importlib.metadata.distributions(name=name, path=path)), None)
        if dist is None:
            raise RunnerError(f"the distribution {name!r}, which the test harness requires, is not installed")
        found[name] = dist
        for text in dist.requires or ():
            try:
                req = Requirement(text)
            except InvalidRequirement as exc:
                raise RunnerError(f"{name} declares a requirement that cannot be read: {text!r}") from exc
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return [found[n] for n in sorted(found)]


def _top_level_names(dist: importlib.metadata.Distribution) -> list[str]:
    listed = dist.read_text("top_level.txt")
    if listed:
        return [line.strip() for line in listed.splitlines() if line.strip()]
    names = set()
    for file in dist.files or ():
        first = file.parts[0]
        if first in {"..", "__pycache__"} or first.endswith((".dist-info", ".egg-info", ".data")):
            continue
        names.add(first.removesuffix(".py") if len(file.parts) == 1 else first)
    return sorted(n for n in names if n.isidentifier()) or [_normal(dist.metadata["Name"]).replace("-", "_")]


def module_paths(dist: importlib.metadata.Distribution) -> dict[str, Path]:
    """Each top-level module of `dist` and the file or folder it lives in."""
    root = Path(str(dist.locate_file("")))
    out: dict[str, Path] = {}
    for name in _top_level_names(dist):
        candidates = [
            root / name,
            root / f"{name}.py",
            *(root / f"{name}{s}" for s in importlib.machinery.EXTENSION_SUFFIXES),
        ]
        hit = next((c for c in candidates if c.is_dir() or c.is_file()), None)
        if hit is not None:
            out[name] = hit
    if not out:
        raise RunnerError(f"no module of {dist.metadata['Name']} {dist.version} was found in {root}")
    return out


def worker_modules() -> list[str]:
    """The gate's worker-side modules: the entries and, transitively, what they import relatively."""
    seen: list[str] = []
    todo = list(WORKER_ENTRIES)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.append(name)
        tree = ast.parse((WORKER_DIR / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                absolute = node.module if isinstance(node, ast.ImportFrom) and node.level == 0 else None
                named = [a.name for a in node.names] if isinstance(node, ast.Import) else [absolute or ""]
                if any(n.split(".")[0] == "evidence_gate" for n in named):
                    raise RunnerError(
                        f"{name}.py imports evidence_gate by name; worker-side modules import each "
                        "other relatively (`from . import x`), or the sealed run would load the "
                        "code under test's copy"
                    )
            if isinstance(node, ast.ImportFrom) and node.level > 1:
                raise RunnerError(
                    f"{name}.py imports from outside the sealed package (`{ast.unparse(node)}`); worker-side "
                    "modules import only the standard library, pytest, Hypothesis and each other"
                )
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                todo += [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
    return sorted(seen)


def build(dest: Path) -> Runner:
    """Fill `dest` (a fresh folder) with links to the harness's modules and the gate's worker-side modules."""
    dest.mkdir(mode=0o755)
    dest.chmod(0o755)
    modules: dict[str, str] = {}
    dists = harness_distributions()
    for dist in dists:
        label = f"{dist.metadata['Name']} {dist.version}"
        for name, path in module_paths(dist).items():
            if name not in modules:
                (dest / path.name).symlink_to(path)
                modules[name] = label
    private = dest / PRIVATE_PACKAGE
    private.mkdir(mode=0o755)
    private.chmod(0o755)
    (private / "__init__.py").write_text(
        '"""The gate\'s worker-side modules, under a private name."""\n', encoding="utf-8"
    )
    (private / "__init__.py").chmod(0o644)
    for name in worker_modules():
        (private / f"{name}.py").symlink_to(WORKER_DIR / f"{name}.py")
    compile_private(private)
    modules[PRIVATE_PACKAGE] = "evidence-gate's worker-side modules"
    runner = Runner(dest, tuple((str(d.metadata["Name"]), str(d.version)) for d in dists), modules, stdlib_path())
    version = next(v for n, v in runner.distributions if _normal(n) == "hypothesis")
    tables = hypothesis_tables.provide(runner.sys_path, version, runner.storage)
    return dataclasses.replace(runner, tables=tables)


def compile_private(private: Path) -> None:
    """Byte-compile the worker-side modules where the workers look for them (`__pycache__` beside the links), read-only
    to them: a worker starts with `-B`, so without these each one compiled them again from source (about 40 ms of CPU
    a worker on this 2-core machine). Compiled by the trusted process from the gate's own files, never from a tree."""
    cache = private / "__pycache__"
    cache.mkdir(mode=0o755, exist_ok=True)
    cache.chmod(0o755)
    for source in sorted(private.glob("*.py")):
        # `dfile` defaults to the link's path: the code's file names are the ones an import from source would give.
        compiled = py_compile.compile(str(source), doraise=True)
        if compiled is not None:  # None only when compile errors are not raised
            Path(compiled).chmod(0o644)


def install_python(runner: Runner) -> Path:
    """A `python` for `properties.install` (`$EVIDENCE_GATE_PYTHON`): the runner's sys.path, plus pip when the gate's
    interpreter has it; no site-packages."""
    tools = runner.folder / PIP_FOLDER
    tools.mkdir(mode=0o755, exist_ok=True)
    tools.chmod(0o755)
    spec = importlib.machinery.PathFinder.find_spec("pip", _search_path())
    if spec is not None and spec.submodule_search_locations and not (tools / "pip").is_symlink():
        (tools / "pip").symlink_to(next(iter(spec.submodule_search_locations)))
    script = tools / "python"
    pythonpath = os.pathsep.join([str(runner.folder), str(tools)])
    script.write_text(
        f'#!/bin/sh\nPYTHONPATH={_quote(pythonpath)} exec {_quote(sys.executable)} -S "$@"\n', encoding="utf-8"
    )
    script.chmod(0o755)
    return script


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"
