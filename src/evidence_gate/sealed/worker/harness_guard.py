"""What the code under test may not touch inside the sealed run, and where a discard or a write came from.

Worker-side (standard library only). Two questions are answered here:

- *Identity*: has any module of the harness (hypothesis, _pytest, pytest, pluggy, the gate's plugin) had a
  callable, class, descriptor or constant rebound, or a function's code or defaults replaced, since the worker
  started? `take` records identities, `changed` names what differs.
- *Origin*: which code caused something, judged by the frames that were running: frames of the harness and the
  standard library are transparent; the innermost other frame decides. A frame of a locked file (the property, its
  helpers, the conftest chain) is legitimate only when it runs in that file's own imported module; anything else is
  code under test.
"""

from __future__ import annotations

import operator
import os
import sys
import sysconfig
import types
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

# The gate's worker-side package by the name it has here: `_evidence_gate_runner` inside the sealed run (see
# runner_env), where `evidence_gate` may be the code under test (this repository's own self-test).
GATE = (__package__ or "evidence_gate").split(".", 1)[0]
# Top-level names whose every module is the harness: every top-level module of pytest, Hypothesis and pluggy
# (tests/sealed/test_watched_modules.py fails when a release adds one), and the gate's worker side.
HARNESS = (
    "hypothesis",
    "_hypothesis_pytestplugin",
    "_hypothesis_globals",
    "_hypothesis_ftz_detector",
    "_pytest",
    "pytest",
    "py",  # pytest's shim for the retired `py` library
    "pluggy",
    GATE,
)
# Standard-library modules whose functions the result channel, the digests and imports rely on: their callables are
# watched (the channel itself binds the C functions it signs and encodes with before any repository code runs).
STDLIB_WATCHED = ("__main__", "os", "posix", "json", "json.encoder", "_json", "hashlib", "_hashlib", "builtins")
# Module-level state the harness rebinds itself during an honest run (measured on Hypothesis 6.130-6.170,
# pytest 8.3-9): lower-case data is not watched, so these need no list; constants (UPPER_CASE) and code are.
FUNCTION_PARTS = ("__code__", "__defaults__", "__kwdefaults__")
MAX_WRAPPED = 8  # how deep a chain of `__wrapped__` is followed
# Bound at import, before any test runs: a test may delete or patch these on `sys` (attrs' own suite deletes
# `sys._getframe`), and the worker's judgement must not notice.
GETFRAME = sys._getframe
EXC_INFO = sys.exc_info
MODULES = sys.modules


def is_harness(name: str) -> bool:
    """Whether a module name belongs to the harness."""
    return name.split(".", 1)[0] in HARNESS


def _watched_value(name: str, value: object) -> bool:
    """Code, classes, descriptors and constants are watched; the harness's own lower-case state is not."""
    if isinstance(value, types.ModuleType | type) or callable(value) or hasattr(type(value), "__get__"):
        return True
    return name.isupper()


def function_parts(key: str, value: object) -> Iterator[tuple[str, int]]:
    """Identities of a function's code, defaults and keyword defaults (a property's accessors, a classmethod's or
    staticmethod's function, the functions a wrapper wraps), keyed under `key`."""
    for label, owner, attr in _parts(value):
        yield f"{key}#{label}", id(getattr(owner, attr, None))


def _parts(value: object) -> Iterator[tuple[str, object, str]]:
    """(label, owner, attribute) of each part that decides what a watched callable runs: its function's code and
    defaults, and those of every function it wraps (`__wrapped__`: `functools.wraps`, `lru_cache`, a context
    manager's generator function); a property's accessors and their functions' parts; the function a classmethod or
    staticmethod holds (`classmethod.__init__` re-initialises one in place, with no audited event)."""
    yield from _function_chain("", getattr(value, "__func__", value))  # classmethod / staticmethod / bound method
    if isinstance(value, classmethod | staticmethod):
        yield "__func__", value, "__func__"
    if isinstance(value, property):
        for accessor in ("fget", "fset", "fdel"):
            yield accessor, value, accessor
            yield from _function_chain(f"{accessor}.", getattr(value, accessor, None))


def _function_chain(prefix: str, func: object) -> Iterator[tuple[str, object, str]]:
    seen: set[int] = set()
    while func is not None and id(func) not in seen and len(seen) < MAX_WRAPPED:
        seen.add(id(func))
        if isinstance(func, types.FunctionType):
            for part in FUNCTION_PARTS:
                yield f"{prefix}{part}", func, part
        try:
            func = vars(func).get("__wrapped__")  # set by functools.update_wrapper, in the wrapper's own dict
        except TypeError:  # no __dict__
            return
        prefix += "__wrapped__."


_missing = object()  # lower-case: not itself a watched constant


class Snapshot:
    """Live references to the watched namespaces and the identity each watched name held when it was taken.

    Checking re-reads each name from the namespace itself (a module's dict, a class's mappingproxy, a function), so
    a check costs one lookup per watched name; a class that gained a watched attribute (a descriptor that shadows an
    inherited one, say `TestReport.passed`) is found by its size. The lookups run in C, one `itemgetter` per
    namespace and one `attrgetter` per function part (see `_same_objects`); only when one of them finds a difference
    are the names judged one by one. Every object watched is also held here, so that its id cannot be reused by a
    replacement after the original was freed.
    """

    def __init__(self) -> None:
        # (key, namespace, name, identity): looked up in a mapping (a module's dict, a class's mappingproxy)...
        self.entries: list[tuple[str, Any, str, int]] = []
        # ...or read with getattr (a function's code and defaults, a property's accessors).
        self.parts: list[tuple[str, Any, str, int]] = []
        self.classes: list[tuple[str, Any, frozenset[str]]] = []
        self.modules: set[str] = set()
        self.seen: set[str] = set()  # every sys.modules name `extend` has judged (harness or not)
        self.held: dict[int, object] = {}  # identity -> the object watched
        # The same entries, grouped for the C-level check: (namespace, getter, objects, one name only)...
        self._mapped: list[tuple[Any, Any, tuple[object, ...], bool]] = []
        # ...(owners, getter, objects) per property part, the same per function part (whose reads are audited
        # events: see `changed`), and (class namespaces, their sizes).
        self._read: list[tuple[tuple[Any, ...], Any, tuple[object, ...]]] = []
        self._audited: list[tuple[tuple[Any, ...], Any, tuple[object, ...]]] = []
        # ...the functions' keyword-only defaults, one flat group read in C: (dicts, names, objects), and the ids of
        # those dicts (a few hundred, each with a name or two: one group each would double the check's cost).
        self._defaults: tuple[tuple[Any, ...], tuple[str, ...], tuple[object, ...]] = ((), (), ())
        self._kwdicts: set[int] = set()
        # Whether every function part has been compared once, and the ids of the functions whose parts are watched.
        self._parts_seen = False
        self._functions: set[int] = set()
        self._sizes: tuple[tuple[Any, ...], tuple[int, ...]] = ((), ())
        self._grouped = (0, 0, 0)  # how many entries, parts and classes the groups cover

    def add_module(self, name: str, module: types.ModuleType) -> None:
        """Watch one module: all of it for the harness, only its callables for the standard library."""
        self.modules.add(name)
        self.seen.add(name)
        self.held[id(module)] = module
        self.entries.append((f"sys.modules:{name}", MODULES, name, id(module)))
        code_only = not is_harness(name)
        namespace = vars(module)
        for key, value in list(namespace.items()):
            if key.startswith("__") and key not in {"__import__", "__build_class__", "__getattr__"}:
                continue
            if not (callable(value) if code_only else _watched_value(key, value)):
                continue
            self.entries.append((f"{name}:{key}", namespace, key, id(value)))
            self.held[id(value)] = value
            if code_only:
                continue
            self._add_parts(f"{name}:{key}", value)
            if isinstance(value, type) and value.__module__ == name:
                self._add_class(f"{name}:{key}", value)

    def _add_class(self, key: str, cls: type) -> None:
        members = cls.__dict__
        self.classes.append((key, members, frozenset(members)))
        for attr, member in list(members.items()):
            if attr in {"__dict__", "__weakref__", "__doc__"} or not _watched_value(attr, member):
                continue
            self.entries.append((f"{key}.{attr}", members, attr, id(member)))
            self.held[id(member)] = member
            self._add_parts(f"{key}.{attr}", member)

    def _add_parts(self, key: str, value: object) -> None:
        for label, owner, attr in _parts(value):
            current = getattr(owner, attr, None)
            self.held[id(current)] = current
            self.parts.append((f"{key}#{label}", owner, attr, id(current)))
            if attr == "__kwdefaults__" and isinstance(current, dict):
                # `f.__kwdefaults__` is the function's own dict: a default written into it is no audited event and
                # leaves the dict's identity as it was, so each default is watched as a name of that dict.
                self._kwdicts.add(id(current))
                for name, default in list(current.items()):
                    self.entries.append((f"{key}#{label}[{name}]", current, name, id(default)))
                    self.held[id(default)] = default

    def _group(self) -> None:
        """Extend the C-level groups to the entries, parts and classes added since they were last built."""
        done_entries, done_parts, _classes = self._grouped
        namespaces: dict[int, tuple[Any, list[str], list[int]]] = {}
        dicts, names_, defaults = (list(x) for x in self._defaults)
        for _key, namespace, name, ident in self.entries[done_entries:]:
            if id(namespace) in self._kwdicts:
                dicts.append(namespace)
                names_.append(name)
                defaults.append(self.held[ident])
                continue
            group = namespaces.setdefault(id(namespace), (namespace, [], []))
            group[1].append(name)
            group[2].append(ident)
        for namespace, names, idents in namespaces.values():
            originals = tuple(self.held[i] for i in idents)
            self._mapped.append((namespace, operator.itemgetter(*names), originals, len(names) == 1))
        self._defaults = (tuple(dicts), tuple(names_), tuple(defaults))
        owners: dict[str, tuple[list[Any], list[int]]] = {}
        for _key, owner, part, ident in self.parts[done_parts:]:
            group_ = owners.setdefault(part, ([], []))
            group_[0].append(owner)
            group_[1].append(ident)
        for part, (owned, idents) in owners.items():
            read = (tuple(owned), operator.attrgetter(part), tuple(self.held[i] for i in idents))
            (self._audited if part in FUNCTION_PARTS else self._read).append(read)
            if part in FUNCTION_PARTS:
                self._functions.update(map(id, owned))  # held by the snapshot: these ids are never reused
        self._sizes = (
            tuple(members for _key, members, _names in self.classes),
            tuple(len(names) for _key, _members, names in self.classes),
        )
        self._grouped = (len(self.entries), len(self.parts), len(self.classes))

    def _same_objects(self, function_parts: bool = True) -> bool:
        """True when every watched name still holds its object (the common case), checked in C; False when anything
        differs or cannot be read, and `changed` then judges name by name. `function_parts=False` leaves out the
        functions' code and defaults (see `changed`)."""
        if self._grouped != (len(self.entries), len(self.parts), len(self.classes)):
            self._group()
        same = operator.is_  # identity only: an object's own __eq__ never takes part
        try:
            for namespace, getter, originals, single in self._mapped:
                found = getter(namespace)
                if not (found is originals[0] if single else all(map(same, found, originals))):
                    return False
            for owned, getter, originals in (*self._read, *(self._audited if function_parts else ())):
                if not all(map(same, map(getter, owned), originals)):
                    return False
            dicts, names, defaults = self._defaults
            if not all(map(same, map(operator.getitem, dicts, names), defaults)):
                return False
        except (KeyError, AttributeError, TypeError):
            return False
        return True

    def _grown(self, allowed: dict[str, int | None]) -> list[str]:
        """Watched attributes that classes gained; only classes whose size changed are looked at (the harness's own
        classes gain unwatched data attributes during an honest run, so some always have)."""
        if tuple(map(len, self._sizes[0])) == self._sizes[1]:
            return []
        out: list[str] = []
        for key, members, names in self.classes:
            if len(members) != len(names):
                out += [
                    f"{key}.{attr}"
                    for attr in set(members) - names
                    if _watched_value(attr, members[attr]) and f"{key}.{attr}" not in allowed
                ]
        return out

    def changed(self, excused: dict[str, int | None] | None = None, written: set[int] | None = None) -> list[str]:
        """Watched names whose object differs now; a name in `excused` holding the object a legitimate write set
        (None: deleted) is not a change. A replaced function is named once, not also its code and defaults.

        `written`: the ids of the functions whose `__code__`, `__defaults__` or `__kwdefaults__` the worker's audit
        hook saw written since the last check (`Effects.part_writes`; CPython audits every such write, as
        `object.__setattr__` or `object.__delattr__`, and every such read too). Once every part was compared, the
        parts are read again only when a watched function is among them: each read is an audited event through the
        hook, a few ms a check for the ~13,000 parts, where the rest of the check costs about one. None: always."""
        allowed = excused or {}
        if self._grouped != (len(self.entries), len(self.parts), len(self.classes)):
            self._group()
        skip = written is not None and self._parts_seen and self._functions.isdisjoint(written)
        # Whatever follows reads every part unless it skips them: the fast path, or the judgement name by name.
        self._parts_seen = self._parts_seen or written is not None
        if self._same_objects(function_parts=not skip):
            return sorted(k.replace(":", ".", 1) for k in self._grown(allowed))
        # Something differs: every watched name is judged, and the hits are named.
        hits = [e for e in self.entries if id(e[1].get(e[2], _missing)) != e[3]]
        hits += [e for e in self.parts if id(getattr(e[1], e[2], None)) != e[3]]
        out: list[str] = []
        for key, namespace, name, _ident in hits:
            value = namespace.get(name, _missing) if isinstance(namespace, Mapping) else getattr(namespace, name, None)
            current = None if value is _missing else id(value)
            if not (key in allowed and allowed[key] == current):
                out.append(key)
        if not out:
            self._rebase()
        out += self._grown(allowed)
        return sorted(k.replace(":", ".", 1) for k in out if "#" not in k or k.split("#", 1)[0] not in out)

    def _rebase(self) -> None:
        """After a judgement that found every difference legitimate (an excused monkeypatch: pytest's own
        legacypath plugin keeps one on `Config` for the whole session), the C-level check compares with the objects
        held now, so that the next checks stay fast. Any later write differs from those and is judged name by name
        again, against the identities taken at the start; a name that cannot be read keeps its old comparison."""
        mapped = []
        for namespace, getter, originals, single in self._mapped:
            try:
                found = getter(namespace)
            except (KeyError, AttributeError, TypeError):
                mapped.append((namespace, getter, originals, single))
                continue
            mapped.append((namespace, getter, (found,) if single else tuple(found), single))
        self._mapped, self._read, self._audited = mapped, _reread(self._read), _reread(self._audited)
        dicts, names, defaults = self._defaults
        now = tuple(d.get(n, _missing) for d, n in zip(dicts, names, strict=True))
        self._defaults = (dicts, names, tuple(o if v is _missing else v for v, o in zip(now, defaults, strict=True)))

    def extend(self) -> None:
        """Watch harness modules imported since (a lazy import), leaving the known ones as they were.

        Only names not judged before are looked at: a name that was not the harness's stays so, and a module
        replaced under a watched name is the `sys.modules:` entry's change."""
        for name in sorted(MODULES.keys() - self.seen, key=str):
            if not isinstance(name, str) or not is_harness(name):
                self.seen.add(name)
                continue
            module = MODULES.get(name)
            if isinstance(module, types.ModuleType) and name not in self.modules:
                self.add_module(name, module)


def _reread(groups: list[tuple[tuple[Any, ...], Any, tuple[object, ...]]]) -> list[Any]:
    """`_rebase` for the getattr groups: each compared with the objects held now (unreadable: as before)."""
    read = []
    for owned, getter, originals in groups:
        try:
            read.append((owned, getter, tuple(map(getter, owned))))
        except (AttributeError, TypeError):
            read.append((owned, getter, originals))
    return read


def take() -> Snapshot:
    """Identity of everything watched in the harness modules loaded now (plus the watched standard library)."""
    snap = Snapshot()
    for name in [*[n for n in list(MODULES) if is_harness(n)], *STDLIB_WATCHED]:
        module = MODULES.get(name)
        if isinstance(module, types.ModuleType) and name not in snap.modules:
            snap.add_module(name, module)
    return snap


def _dirs(*paths: str | None) -> tuple[str, ...]:
    return tuple(sorted({os.path.dirname(os.path.abspath(p)) + os.sep for p in paths if p}))  # noqa: PTH100, PTH120


class Origins:
    """Judges frames: transparent (harness, standard library), locked (a trusted file in its own module), or not."""

    def __init__(self, trusted_files: Iterable[str]) -> None:
        paths = sysconfig.get_paths()
        self.stdlib = _dirs(os.path.join(paths["stdlib"], "x"), os.path.join(paths["platstdlib"], "x"))  # noqa: PTH118
        # The names watched are the names judged: a package's whole folder, a single-file module's file.
        loaded = [m for m in (MODULES.get(n) for n in HARNESS) if getattr(m, "__file__", None)]
        files = [(str(m.__file__), hasattr(m, "__path__")) for m in loaded if m is not None]
        self.harness = _dirs(*(f for f, package in files if package)) + tuple(
            os.path.abspath(f)  # noqa: PTH100
            for f, package in files
            if not package
        )
        self.trusted = frozenset(trusted_files)
        # Hypothesis compiles the wrappers of @given tests in temporary modules under the test file's name.
        from hypothesis.internal import reflection  # noqa: PLC0415

        self.hypothesis_modules: dict[Any, Any] = getattr(reflection, "eval_cache", {})

    def harness_frame(self, frame: types.FrameType) -> bool:
        """Harness code: by file, or one of Hypothesis' own generated wrappers (its globals are a module Hypothesis
        compiled, whatever file name the code carries)."""
        if self.transparent(frame.f_code.co_filename):
            return True
        if frame.f_back is None and frame.f_code.co_filename == "<string>":
            return True  # the worker's own bootstrap (`python -c`), the outermost frame of every stack
        globals_ = frame.f_globals
        return str(globals_.get("__name__", "")).startswith("hypothesis_temporary_module_") and any(
            vars(module) is globals_ for module in list(self.hypothesis_modules.values())
        )

    def transparent(self, filename: str) -> bool:
        """Harness or standard-library code (site-packages under the standard library's folder are not)."""
        if filename.startswith(("<frozen ", *self.harness)):
            return True
        return filename.startswith(self.stdlib) and not any(
            part in filename for part in (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
        )

    def locked(self, frame: types.FrameType) -> bool:
        """A frame of a locked file, running in that file's own module (a code object compiled under a locked
        file's name by the code under test runs with other globals)."""
        filename = frame.f_code.co_filename
        if filename not in self.trusted:
            return False
        module = MODULES.get(str(frame.f_globals.get("__name__", "")))
        return module is not None and vars(module) is frame.f_globals and getattr(module, "__file__", None) == filename

    def culprit(self, frames: Iterable[types.FrameType]) -> str | None:
        """The file of the innermost frame (frames listed innermost first) that is neither transparent nor locked;
        None when the innermost such frame is locked or there is none."""
        for frame in frames:
            if self.harness_frame(frame):
                continue
            return None if self.locked(frame) else frame.f_code.co_filename
        return None


def stack(frame: types.FrameType | None) -> Iterator[types.FrameType]:
    """`frame` and its callers, innermost first."""
    while frame is not None:
        yield frame
        frame = frame.f_back


def traceback_frames(exc: BaseException | None) -> list[types.FrameType]:
    """The frames an exception passed through, innermost first."""
    frames: list[Any] = []
    tb = exc.__traceback__ if exc is not None else None
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames[::-1]
