"""Where the code under test was loaded from: every imported module whose top-level name exists under a
`properties.pythonpath` folder of the sealed tree must come from that folder, never from the harness, the
standard library or an install site; and every module with code loaded from the tree is a locked file or below
one of those folders (a helper the import scan could not see, so never locked, is no evidence: red team).

Imported inside the sealed run (standard library only) and by the trusted side, which lists the names before the run.
"""

from __future__ import annotations

import importlib.machinery
import operator
import os
import sys
from typing import Any

from .protocol import EV, Event

MAX_MISMATCHES = 20
_FIRST, _SECOND = operator.itemgetter(0), operator.itemgetter(1)


def code_under_test(roots: list[str]) -> dict[str, str]:
    """Top-level module names in `roots` (in sys.path order; the first folder that has a name wins), each with the
    file (a module, an extension) or folder (a package, a namespace portion) it would be imported from."""
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    names: dict[str, str] = {}
    for root in roots:
        try:
            entries = sorted(os.scandir(root), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            name = None
            if entry.is_dir(follow_symlinks=False) and entry.name.isidentifier():
                name = entry.name
            elif entry.name.endswith(".py") and entry.name[:-3].isidentifier():
                name = entry.name[:-3]
            elif entry.name.endswith(suffixes):
                name = entry.name.split(".", 1)[0]
            if name and name.isidentifier() and name != "__pycache__" and name not in names:
                names[name] = os.path.join(root, entry.name)  # noqa: PTH118 - plain strings, minimal imports
    return names


def regular(names: dict[str, str]) -> dict[str, str]:
    """The names a plain import would take from the tree first: modules, extensions and packages with `__init__.py`
    (a namespace folder yields to a module of the same name anywhere else on sys.path)."""
    return {n: p for n, p in names.items() if not os.path.isdir(p) or os.path.isfile(os.path.join(p, "__init__.py"))}  # noqa: PTH112, PTH113, PTH118


def _inside(file: str, where: str) -> bool:
    return file == where or file.startswith(where + os.sep)


def _files(module: Any) -> list[str]:
    try:
        file = getattr(module, "__file__", None)
        if isinstance(file, str):
            return [os.path.abspath(file)]  # noqa: PTH100
        path = getattr(module, "__path__", None)
        return [os.path.abspath(str(p)) for p in list(path or [])]  # noqa: PTH100 - a namespace package
    except Exception:  # noqa: BLE001 - any object can sit in sys.modules; one without a location is judged below
        return []


def _location(module: Any) -> tuple[Any, ...]:
    """A module's `__file__` and `__path__` entries as plain strings (anything else: a fresh object, never equal)."""
    try:
        file = getattr(module, "__file__", None)
        path = tuple(getattr(module, "__path__", None) or ())
    except Exception:  # noqa: BLE001 - any object can sit in sys.modules
        return (object(),)
    parts = (file, *path)
    return parts if all(type(p) is str or p is None for p in parts) else (object(),)


class Bounds:
    """What a module of the sealed tree may be: a locked file (`trusted`, absolute) or code below `roots` (the
    `properties.pythonpath` folders and the install site; the tree itself when a folder is the tree)."""

    def __init__(self, tree: str, roots: list[str], trusted: frozenset[str]) -> None:
        self.tree = os.path.abspath(tree)  # noqa: PTH100
        self.roots = tuple(os.path.abspath(r) for r in roots)  # noqa: PTH100
        self.trusted = frozenset(os.path.abspath(t) for t in trusted)  # noqa: PTH100
        # A locked file reached through a symlinked folder of the tree (`properties/shared -> ../common`, review).
        self.real_trusted = frozenset(os.path.realpath(t) for t in trusted)

    def unlocked(self, module: Any) -> str | None:
        """The file of a module with code from the tree that is neither locked nor below a root, else None (a
        namespace package has no code of its own)."""
        try:
            file = getattr(module, "__file__", None)
        except Exception:  # noqa: BLE001 - any object can sit in sys.modules
            return None
        if type(file) is not str:
            return None
        file = os.path.abspath(file)  # noqa: PTH100
        if not _inside(file, self.tree) or file in self.trusted or any(_inside(file, r) for r in self.roots):
            return None
        return None if os.path.realpath(file) in self.real_trusted else file


def check(
    expected: dict[str, str], modules: dict[str, Any] | None = None, bounds: Bounds | None = None
) -> dict[str, Any]:
    """The loaded code-under-test packages (`loaded`: name -> file) and the modules that came from elsewhere (or,
    with `bounds`, from the tree but neither locked nor code under test: `unlocked`)."""
    loaded: dict[str, str] = {}
    mismatches: list[dict[str, str]] = []
    for name, module in list((sys.modules if modules is None else modules).items()):
        top = name.partition(".")[0]
        where = expected.get(top)
        if where is None:
            outside = bounds.unlocked(module) if bounds is not None and type(name) is str else None
            if outside is not None and len(mismatches) < MAX_MISMATCHES:
                mismatches.append({"module": name, "file": outside, "expected": "", "unlocked": "1"})
            continue
        files = _files(module)
        ok = bool(files) and all(_inside(f, where) for f in files)
        if name == top:
            loaded[top] = files[0] if files else "(built in)"
        if not ok and len(mismatches) < MAX_MISMATCHES:
            mismatches.append(
                {"module": name, "file": files[0] if files else "(no file: built in or frozen)", "expected": where}
            )
    return {"loaded": loaded, "mismatches": mismatches}


class ProvenancePlugin:
    """Checks provenance after each test's teardown, reporting each mismatch once, and at the end of the session."""

    def __init__(self, expected: dict[str, str], emit: Any, bounds: Bounds | None = None) -> None:
        self.expected = expected
        self.emit = emit
        self.bounds = bounds
        self.reported: set[str] = set()
        # What the last full check judged: sys.modules' names and modules, and each code-under-test module's location.
        self._judged: tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]] | None = None

    def _state(self, items: list[tuple[Any, Any]]) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[Any, ...]]:
        """What a check of `items` (one copy of sys.modules' items) judges: the names, the modules, and the working
        folder with each code-under-test module's location."""
        names, modules = tuple(map(_FIRST, items)), tuple(map(_SECOND, items))
        expected = self.expected
        located = [_location(m) for n, m in items if type(n) is str and n.partition(".")[0] in expected]
        try:
            cwd: Any = os.getcwd()  # noqa: PTH109 - a relative `__file__` is judged from here
        except OSError:
            cwd = object()
        return names, modules, (cwd, *located)

    def _unchanged(self) -> bool:
        """Whether sys.modules holds the same names and modules as at the last full check (identities, compared in
        C), each code-under-test module the same `__file__` and `__path__`, and the working folder is the same: then
        there is nothing new to judge. A test that swaps a module in and out between two checks is seen by the full
        check at the next change."""
        judged = self._judged
        if judged is None:
            return False
        names, modules, located = judged
        try:
            items = list(sys.modules.items())  # one copy, in C: a thread that imports meanwhile changes none of it
            if len(items) != len(names):
                return False
            now_names, now_modules, now_located = self._state(items)
            same = operator.is_
            return all(map(same, now_names, names)) and all(map(same, now_modules, modules)) and now_located == located
        except Exception:  # noqa: BLE001 - an object that cannot say where it is: judge everything
            return False

    def report(self, final: bool) -> None:
        """Emit new mismatches (and, at the end, everything loaded)."""
        if not final and self._unchanged():
            return
        items = list(sys.modules.items())
        found = check(self.expected, dict(items), self.bounds)
        try:
            self._judged = None if final else self._state(items)
        except Exception:  # noqa: BLE001 - judged in full again next time
            self._judged = None
        fresh = [m for m in found["mismatches"] if m["module"] not in self.reported]
        self.reported.update(m["module"] for m in fresh)
        if final or fresh:
            self.emit(
                {EV: Event.PROVENANCE, "final": final, "loaded": found["loaded"] if final else {}, "mismatches": fresh}
            )

    def pytest_runtest_teardown(self) -> None:
        """After each item: a module swapped in and out of sys.modules during one test is still seen."""
        self.report(final=False)
