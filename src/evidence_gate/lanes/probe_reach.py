"""Which files the sealed run can import: the `harness-probed` lane's code under test, when something is locked.

The sealed run starts pytest on the locked property files only (node ids on the command line, the gate's own ini,
plugin autoload off, `-p` limited to the harness's), so the only repository code it can execute is what those files,
the conftest.py files on their paths and the `pytest_plugins` those name import, transitively. This module follows
those imports over one tree (literal imports, resolved from the tree root, each pythonpath folder and every folder
above a locked file, and relative to the package), counting **whole top-level packages**: a file reached below a
pythonpath folder brings in every file of its top-level package or module there (what `from pkg import *`, a
package's `__getattr__` or a plugin loaded by `import_module(f"pkg.backends.{name}")` can reach). A new top-level
name below a pythonpath folder is reached too: installed code may import it by a name no file spells.

Wherever the reached code can import a name the scan cannot read, there is no bound, and the answer is None with the
reason: a computed import without a dotted literal prefix, `exec`/`eval`/`compile` of anything, `sys.path` and the
import system's other hooks, `importlib` beyond a literal `import_module`, pickling (it imports by `__module__`),
`runpy`, `pkgutil`, `site`, `ctypes`, `unittest.mock`, a package's `__path__`, a computed `pytest_plugins`, a
`.pth` file, a file that does not parse. The lane then keeps its old rule (every file below pythonpath).
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from evidence_gate.git import Repo
from evidence_gate.lanes import import_scan
from evidence_gate.lanes.probe_scan import references

# Probe names (or what a bound name holds) that load code by a name or from a place the scan cannot read.
_LOADER_NAMES = (
    "importlib",
    "__import__",
    "builtins",
    "__builtins__",
    "exec(",
    "eval(",
    "compile(",
    "sys.path",
    "sys.meta_path",
    "sys.path_hooks",
    "sys.path_importer_cache",
    "sys.__dict__",
    "pickle",
    "_pickle",
    "dill",
    "cloudpickle",
    "shelve",
    "runpy",
    "pkgutil",
    "imp",
    "_imp",
    "zipimport",
    "marshal",
    "pydoc",
    "logging.config",
    "code",
    "codeop",
    "timeit",
    "doctest",
    "pdb",
    "bdb",
    "ctypes",
    "_ctypes",
    "cffi",
    "unparsable source",
)
# Modules whose import alone means the file may load what no literal names (`site` runs `.pth` files).
_LOADER_MODULES = frozenset(
    {"dill", "cloudpickle", "site", "imp", "runpy", "pkgutil", "zipimport", "ctypes", "_ctypes", "cffi"}
)
# What `pkg_resources` offers that imports nothing (a version, a distribution, package data); anything else (entry
# points, namespace declarations, the module as a value) loads by name.
_PKG_RESOURCES = frozenset(
    {"get_distribution", "DistributionNotFound", "VersionConflict", "parse_version"}
    | {"resource_string", "resource_filename", "resource_stream", "resource_exists", "resource_listdir"}
)
_MOCKS = frozenset({"mock", "unittest.mock"})
# Pickling imports each object's `__module__` by name (process pools pickle too): bounded by the module names the
# reached code can give its objects, so only a computed one (see `_module_name`) leaves it unbounded.
_PICKLERS = frozenset({"pickle", "_pickle", "cPickle", "copyreg", "shelve", "multiprocessing", "concurrent"})
_DUMPS = frozenset({"dumps", "dump"})
_UNPICKLE = frozenset({"loads", "load", "Unpickler"})
_SUBMODULE_LOADERS = frozenset({("importlib", "util"), ("importlib", "machinery")})
_IMPORTERS = frozenset({"import_module", "__import__"})
# Calls that import their first argument by dotted name (pytest's monkeypatch and importorskip, mock's patch).
_DOTTED = frozenset({"importorskip", "setattr", "delattr", "patch", "import_module", "__import__"})
_RUNNERS = frozenset({"exec", "eval", "compile", "execfile", "__path__", "__builtins__"})
_LOADER_ATTRS = frozenset({"submodule_search_locations", "exec_module", "load_module", "__path__"})


@dataclass(frozen=True)
class Facts:
    """What one file may import: names to resolve, top-level names a computed import may load anything below, whether
    a computed relative import may load anything in its own package, and why nothing bounds it ("" when something
    does)."""

    refs: tuple[Any, ...]
    tops: frozenset[str]
    own: bool
    unbounded: str
    pickles: bool = False  # it pickles: every module name an object may carry is then an import
    renames: str = ""  # where it gives an object a module name the scan cannot read


def _literal(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return "".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))
    return None


def _prefix(node: ast.AST | None) -> str:
    """The literal text a computed string starts with (`f"pkg.{x}"`, `"pkg." + x`, `"pkg.%s" % x`,
    `"pkg.{}".format(x)`), else ""."""
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) or _prefix(node.left)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return (_literal(node.left) or "").split("%", 1)[0]
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        return (_literal(node.func.value) or "").split("{", 1)[0]
    return ""


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr in {"dict", "multiple"} and _name(func.value) == "patch":
        return "patch"  # `patch.dict("pkg.mod.MAPPING")` imports its target by name too
    return _name(func)


def _name(node: ast.AST) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def _computed_import(node: ast.Call, found: dict[str, Any]) -> None:
    """Record what a call of `import_module`/`__import__` with a non-literal name may load: below a dotted literal
    prefix's top-level name, anywhere in the caller's package for a relative one, else anything."""
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    target = node.args[0] if node.args else kwargs.get("name")
    if target is None or _literal(target) is not None:
        return
    head = _prefix(target)
    top = head.split(".", 1)[0]
    if head.startswith("."):
        found["own"] = True
    elif "." in head and top.isidentifier():
        found["tops"].add(top)
    else:
        found["why"] = found["why"] or f"`{_callee(node)}` of a computed name (line {node.lineno})"


_MODULE_NAMES = frozenset({"__module__", "__name__"})
# Class factories that take a `module=` keyword: a `**` mapping given to one may hold it.
_FACTORIES = frozenset(
    {"namedtuple", "NamedTuple", "Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "make_dataclass", "new_class"}
)


def _module_name(value: ast.AST | None, line: int, found: dict[str, Any]) -> None:
    """A module name given to an object (`__module__ = "pkg"`, `module=`): pickling imports it. A literal is an
    import to follow, `__name__` the file's own; anything else is recorded as unreadable."""
    text = _literal(value)
    if text and all(p.isidentifier() for p in text.split(".")):
        found["refs"].append(import_scan.Ref(tuple(text.split("."))))
    elif not (isinstance(value, ast.Name) and value.id == "__name__") and not found["renames"]:
        found["renames"] = f"a computed module name (line {line})"


def _names_module(target: ast.AST) -> bool:
    if isinstance(target, ast.Name):
        return target.id in _MODULE_NAMES
    if isinstance(target, ast.Attribute):
        return target.attr == "__module__"
    return isinstance(target, ast.Subscript) and _literal(target.slice) in _MODULE_NAMES


def _renaming(node: ast.AST, found: dict[str, Any]) -> None:
    """Writes of `__module__` (or a module's `__name__`), by assignment, `setattr`, a class namespace dict or a
    `module=` keyword (`namedtuple`, `Enum`, `type`'s dict)."""
    line = getattr(node, "lineno", 0)
    if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(_names_module(t) for t in targets):
            _module_name(node.value if not isinstance(node, ast.AugAssign) else None, line, found)
    elif isinstance(node, ast.Call):
        if _callee(node) == "setattr" and len(node.args) > 2 and _literal(node.args[1]) in _MODULE_NAMES:
            _module_name(node.args[2], line, found)
        elif _callee(node) == "setattr" and len(node.args) > 1 and _literal(node.args[1]) is None:
            found["renames"] = found["renames"] or f"`setattr` of a computed name (line {line})"
        for k in node.keywords:
            if k.arg in {"module", *_MODULE_NAMES} or (k.arg is None and _callee(node) in _FACTORIES):
                _module_name(k.value, line, found)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values, strict=True):
            if key is not None and _literal(key) in {"module", *_MODULE_NAMES}:
                _module_name(value, line, found)


def _walk(tree: ast.AST, found: dict[str, Any]) -> None:
    """The calls, names and assignments that import by a name no import statement spells."""
    for node in ast.walk(tree):
        _renaming(node, found)
        if isinstance(node, ast.Call):
            name = _callee(node)
            if name in _IMPORTERS:
                _computed_import(node, found)
            first = node.args[0] if node.args else None
            text = _literal(first)
            if name in _DOTTED and text and all(p.isidentifier() for p in text.split(".")):
                found["refs"].append(import_scan.Ref(tuple(text.split("."))))
            elif name in {"importorskip", "patch"} and first is not None and text is None:
                found["why"] = found["why"] or f"`{name}` of a computed name (line {node.lineno})"
            if isinstance(node.func, ast.Name) and name in {"exec", "eval", "compile"}:
                found["why"] = found["why"] or f"`{name}` (line {node.lineno})"
        elif isinstance(node, ast.Import | ast.ImportFrom):
            _imports_loader(node, tree, found)
        elif isinstance(node, ast.Name) and node.id in _RUNNERS and node.id not in {"compile"}:
            found["why"] = found["why"] or f"`{node.id}` (line {node.lineno})"
        elif isinstance(node, ast.Attribute) and node.attr in _LOADER_ATTRS:
            found["why"] = found["why"] or f"`.{node.attr}` (line {node.lineno})"
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            plugins = any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets)
            if plugins and not _all_literal(node.value):
                found["why"] = found["why"] or f"a computed `pytest_plugins` (line {node.lineno})"


def _imports_loader(node: ast.Import | ast.ImportFrom, tree: ast.AST, found: dict[str, Any]) -> None:
    """`pkg_resources` used beyond versions and package data, or mock's `patch` (imports its target by name) under
    another name, where the computed-name check cannot see the call."""
    line = node.lineno
    if isinstance(node, ast.ImportFrom):
        names = {a.name: a.asname for a in node.names}
        if node.module == "pkg_resources" and not set(names) <= _PKG_RESOURCES:
            found["why"] = found["why"] or f"`pkg_resources` beyond versions and package data (line {line})"
        elif node.module in _MOCKS and names.get("patch"):
            found["why"] = found["why"] or f"mock's `patch` under another name (line {line})"
        return
    for alias in node.names:
        if alias.name == "pkg_resources":
            bound = alias.asname or alias.name
            uses = [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and _name(n.value) == bound]
            bare = sum(isinstance(n, ast.Name) and n.id == bound for n in ast.walk(tree))
            if bare > len(uses) or any(u.attr not in _PKG_RESOURCES for u in uses):
                found["why"] = found["why"] or f"`pkg_resources` beyond versions and package data (line {line})"


def _all_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.List | ast.Tuple):
        return all(_all_literal(e) for e in node.elts)
    return _literal(node) is not None


def _excused_call(node: ast.AST | None, dumped: frozenset[str] = frozenset()) -> bool:
    """`import_module`/`__import__` of a literal name (import_scan follows it) or of one below a literal prefix
    (`_computed_import` bounds it), or an unpickling of what was just
    pickled (`pickle.loads(pickle.dumps(x))`, or of a name bound only to `dumps` results): no name the reach
    cannot bound is imported."""
    if not isinstance(node, ast.Call):
        return False
    if _callee(node) in _UNPICKLE and len(node.args) == 1 and not node.keywords:
        arg = node.args[0]
        return (isinstance(arg, ast.Call) and _callee(arg) in _DUMPS) or (
            isinstance(arg, ast.Name) and arg.id in dumped
        )
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    target = node.args[0] if node.args else kwargs.get("name")
    if _callee(node) not in _IMPORTERS or target is None:
        return False
    head = _prefix(target)
    return _literal(target) is not None or head.startswith(".") or ("." in head and head.split(".")[0].isidentifier())


def _names_loader(node: ast.AST) -> bool:
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    return name in _UNPICKLE | _IMPORTERS


def _bound_only_to(tree: ast.AST, test: Callable[[ast.AST | None], bool]) -> frozenset[str]:
    """Names that every binding in the file binds to a value passing `test`: plain assignments only (a parameter,
    loop target, import, `with` target or unpacking of the name disqualifies it)."""
    good: set[str] = set()
    bad: set[str] = set()
    plain: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            named = [t for t in targets if isinstance(t, ast.Name)]
            plain.update(id(t) for t in named)
            (good if test(node.value) else bad).update(t.id for t in named)
        elif isinstance(node, ast.arg | ast.alias):
            bad.add(node.arg if isinstance(node, ast.arg) else (node.asname or node.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and id(node) not in plain:
            bad.add(node.id)
    return frozenset(good - bad)


def _only_import_module(node: ast.ImportFrom) -> bool:
    return [a.name for a in node.names] == ["import_module"]


def _excused(tree: ast.AST) -> tuple[set[int], set[str]]:
    """The lines of excused calls (and of `from importlib import import_module`), and the names bound only to
    their results (`y = pickle.loads(pickle.dumps(x))` binds `y` to the probe, but `y` loads nothing)."""
    lines = set()
    good: set[str] = set()
    bad: set[str] = set()
    dumped = _bound_only_to(tree, lambda v: isinstance(v, ast.Call) and _callee(v) in _DUMPS)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _excused_call(node, dumped):
            lines.add(node.func.lineno)
        elif isinstance(node, ast.ImportFrom) and node.module == "importlib" and _only_import_module(node):
            lines.add(node.lineno)
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.NamedExpr):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = {t.id for t in targets if isinstance(t, ast.Name)}
            if _excused_call(node.value, dumped):
                good |= names
            elif node.value is not None and any(_names_loader(n) for n in ast.walk(node.value)):
                bad |= names
    return lines, good - bad


_EXCUSED = frozenset({"importlib.import_module", "__import__"} | {f"{m}.{f}" for m in _PICKLERS for f in _UNPICKLE})


def _is_loader(name: str) -> bool:
    return any(
        name == p or name.startswith(p if p.endswith("(") else (p + ".", p + " ", p + "(")) for p in _LOADER_NAMES
    )


def facts(source: bytes, path: str) -> Facts:
    """What `source` (the file at `path`) may import, and whether anything bounds it."""
    found: dict[str, Any] = {"refs": list(import_scan.imported_names(source, path)), "tops": set(), "own": False}
    found |= {"why": "", "renames": ""}
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return Facts((), frozenset(), False, "it does not parse")
    _walk(tree, found)
    for ref in found["refs"]:
        if ref.parts and (ref.parts[0] in _LOADER_MODULES or tuple(ref.parts[:2]) in _SUBMODULE_LOADERS):
            found["why"] = found["why"] or f"it imports `{'.'.join(ref.parts)}`"
    loaders = [] if found["why"] else [r for r in references(source) if _is_loader(r.name) or _is_loader(r.bound_to)]
    excused, results = _excused(tree) if loaders else (set(), frozenset())
    for ref in loaders:
        held = ref.bound_to or ref.name
        bound = ref.name.removesuffix(" (bound to a probe)")
        if not (ref.bound_to and bound in results) and not (ref.line in excused and held in _EXCUSED):
            found["why"] = f"`{ref.name}` (line {ref.line})"
            break
    pickles = any(r.parts and r.parts[0] in _PICKLERS for r in found["refs"])
    return Facts(tuple(found["refs"]), frozenset(found["tops"]), found["own"], found["why"], pickles, found["renames"])


NOTHING_LOCKED = "nothing is locked: no property file to follow imports from"
_FACTS: dict[tuple[str, str], Facts] = {}  # (blob id, path) → what it may import; blobs never change


@dataclass(frozen=True)
class Reach:
    """The files the sealed run can import from one tree, or None with the reason nothing bounds them."""

    files: frozenset[str] | None
    why: str
    imports: Mapping[str, frozenset[str]] = field(default_factory=dict)  # file → the files its imports resolve to
    wanted: frozenset[str] = frozenset()  # every file an import looked for, found or not
    units: frozenset[tuple[str, str]] = frozenset()  # the top-level packages counted whole

    def could_load(self, path: str, roots: tuple[str, ...]) -> bool:
        """Whether an import could load `path`, a file the scan cannot read (a compiled module, a symlink that may
        be a package): it is in a package counted whole, or an import looked for it, for a file below it, or for the
        module it would be (`pkg/_speed.cpython-312.so` is `pkg/_speed`)."""
        if self.files is None or _unit(path, roots) in self.units:
            return True
        folder, base = posixpath.split(path)
        module = _join(folder, base.split(".", 1)[0])
        stems = {path, module, posixpath.join(module, "__init__")}
        return any(
            w.removesuffix(".py") in stems or w.startswith(path + "/") or (w.endswith("/*") and path.startswith(w[:-1]))
            for w in self.wanted
        )


def _unit(path: str, roots: Iterable[str]) -> tuple[str, str] | None:
    """(pythonpath folder, top-level name) of a file below one (the deepest folder holding it), else None."""
    holding = [r for r in roots if not r or path.startswith(r + "/")]
    if not holding:
        return None
    root = max(holding, key=len)
    return root, _top(path[len(root) + 1 :] if root else path)


def _top(rel: str) -> str:
    """The top-level name of a path below a folder: its first folder, or the module a file there is
    (`calc.py` and `calc.cpython-312.so` are `calc`)."""
    first, slash, _ = rel.partition("/")
    return first if slash else first.split(".", 1)[0]


def _index(paths: Iterable[str], folders: Iterable[str]) -> dict[tuple[str, str], list[str]]:
    """(folder, top-level name) → the `.py` files of that top-level package or module below that folder."""
    out: dict[tuple[str, str], list[str]] = {}
    folders = tuple(folders)
    for path in paths:
        for root in folders:
            if not root or path.startswith(root + "/"):
                out.setdefault((root, _top(path[len(root) + 1 :] if root else path)), []).append(path)
    return out


def top_names(tree: Mapping[str, Any], roots: Iterable[str]) -> set[tuple[str, str]]:
    """Every (pythonpath folder, top-level name) a tree has a file for (a module, a compiled module, a symlink, a
    folder: `fast.cpython-312.so` is `fast`)."""
    return set(_index(tree, roots))


def reach(
    repo: Repo,
    tree: Mapping[str, Any],
    locked: Iterable[str],
    roots: tuple[str, ...],
    new_tops: Iterable[tuple[str, str]] = (),
) -> Reach:
    """The `.py` files of `tree` (path → ls-tree entry) the sealed run can import, starting from the locked `.py`
    files and the conftest.py files above them; whole top-level packages below `roots`, and the `new_tops`."""
    start = {p for p in locked if p.endswith(".py") and p in tree}
    if not start:
        return Reach(None, NOTHING_LOCKED)
    start |= {c for p in sorted(start) for a in import_scan.search_roots(p) if (c := _join(a, "conftest.py")) in tree}
    search = tuple(dict.fromkeys(("", *roots, *sorted({a for p in start for a in import_scan.search_roots(p)}))))
    pth = next((p for p in tree if p.endswith(".pth") and posixpath.dirname(p) in search), None)
    if pth is not None:
        return Reach(None, f"{pth} runs code at interpreter start-up")
    py = [p for p in tree if p.endswith(".py")]
    members = _index(py, search)
    units = _index(py, roots)
    startup = {p for p in py if posixpath.basename(p) in {"sitecustomize.py", "usercustomize.py"}}
    reached: set[str] = set()
    edges: dict[str, frozenset[str]] = {}
    wanted: set[str] = set()
    pickles = renames = ""
    frontier = start | startup | {p for t in new_tops for p in units.get(t, [])}
    while frontier:
        reached |= frontier
        missing = {tree[p].oid for p in frontier if (tree[p].oid, p) not in _FACTS}
        blobs = repo.read_blobs(sorted(missing)) if missing else {}
        following: set[str] = set()
        for path in sorted(frontier):
            key = (tree[path].oid, path)
            if key not in _FACTS:
                _FACTS[key] = facts(blobs.get(tree[path].oid) or b"", path)
            found = _FACTS[key]
            if found.unbounded:
                return Reach(None, f"{path} may import what the scan cannot name: {found.unbounded}")
            pickles = pickles or (path if found.pickles else "")
            renames = renames or (f"{path}: {found.renames}" if found.renames else "")
            if pickles and renames:
                return Reach(None, f"{pickles} pickles, which imports the module an object names; {renames}")
            if path not in start and not _test_named(path) and (unit := _unit(path, roots)) is not None:
                following.update(units.get(unit, []))
            for top in found.tops:
                following.update(p for root in search for p in members.get((root, top), []))
                wanted.update(_join(root, top) + "/*" for root in search)
            if found.own and (unit := _unit(path, search)) is not None:
                following.update(members.get(unit, []))
                wanted.add(_join(*unit) + "/*")
            looked = {c for ref in found.refs for c in _resolve(ref, search)}
            wanted |= looked
            edges[path] = frozenset(c for c in looked if c in tree)
            following |= edges[path]
        frontier = following - reached
    whole = {u for p in reached if p not in start and not _test_named(p) and (u := _unit(p, roots)) is not None}
    return Reach(frozenset(reached), "", edges, frozenset(wanted), frozenset(whole | set(new_tops)))


def _test_named(path: str) -> bool:
    base = posixpath.basename(path)
    return base == "conftest.py" or base.startswith("test_") or base.endswith("_test.py")


def _join(folder: str, name: str) -> str:
    return posixpath.join(folder, name) if folder else name


def _resolve(ref: Any, search: tuple[str, ...]) -> list[str]:
    """Files an import may load: relative to its package, else from each search folder."""
    if ref.level:
        base = ref.base
        for _ in range(ref.level - 1):
            base = posixpath.dirname(base)
        return import_scan.candidates(base, ref.parts) if ref.parts else [_join(base, "__init__.py")]
    return [c for root in search for c in import_scan.candidates(root, ref.parts)]
