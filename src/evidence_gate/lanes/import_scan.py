"""Which repository modules the locked property files import, directly or through each other (parsed with `ast`).

Module names are looked up in the folders pytest and the sealed run put on `sys.path`: every folder between the
importing file and the repository root (pytest's rootdir/basedir insertion), then `properties.pythonpath`. A module
found under `pythonpath` is code under test and stays editable; one found elsewhere is locked, and scanned in turn.
Every place where a *new* file would shadow an imported name (a `hypothesis.py` beside a property file, a root
`alloc.py` in front of `src/alloc.py`) is recorded too, so that adding such a file is caught.
"""

from __future__ import annotations

import ast
import posixpath
from collections.abc import Callable, Iterable, Mapping

from evidence_gate.lanes.locked_paths import ancestors
from evidence_gate.records import dataclass

# Reads repository-relative paths from the baseline; None where there is no blob.
Reader = Callable[[list[str]], dict[str, bytes | None]]
MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")


@dataclass(frozen=True)
class ImportScan:
    """The outcome: locked module files, and (folder, name) pairs where a new module file would shadow an import."""

    files: frozenset[str]
    shadows: frozenset[tuple[str, str]]

    def shadowed(self, path: str) -> str | None:
        """The import name a file at `path` would shadow, else None."""
        folder, base = posixpath.split(path)
        if base in {"__init__.py", "__init__.pyc"}:
            folder, name = posixpath.split(folder)
            return name if (folder, name) in self.shadows else None
        name, dot, ext = base.partition(".")
        if not dot or (folder, name) not in self.shadows:
            return None
        return name if "." + ext in MODULE_SUFFIXES or ext.endswith((".so", ".pyd")) else None


@dataclass(frozen=True)
class _Ref:
    """One imported name: absolute (`level == 0`) or relative to `base` (a folder)."""

    parts: tuple[str, ...]
    level: int = 0
    base: str = ""


Ref = _Ref  # for the lanes that add names of their own to follow


def _join(folder: str, *parts: str) -> str:
    return posixpath.join(folder, *parts) if folder else posixpath.join(*parts)


def _literal_strings(node: ast.AST | None) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr) and all(isinstance(v, ast.Constant) for v in node.values):
        return ["".join(str(v.value) for v in node.values if isinstance(v, ast.Constant))]  # f"helpers"
    if isinstance(node, ast.List | ast.Tuple):
        return [s for e in node.elts for s in _literal_strings(e)]
    return []


def _call_refs(node: ast.Call, folder: str) -> list[_Ref]:
    """`import_module(NAME[, PACKAGE])` and `__import__(NAME, g, l, FROMLIST)`, positional or by keyword; a
    relative NAME resolves against a literal PACKAGE, else against the calling file's folder; `fromlist` names
    submodules that `__import__` imports too."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in {"import_module", "__import__"}:
        return []
    kwargs = {k.arg: k.value for k in node.keywords if k.arg}
    target = node.args[0] if node.args else kwargs.get("name")
    refs: list[_Ref] = []
    for text in _literal_strings(target):
        rest = text.lstrip(".")
        level = len(text) - len(rest)
        parts = tuple(p for p in rest.split(".") if p)
        package = _literal_strings(node.args[1] if len(node.args) > 1 else kwargs.get("package"))
        if level and name == "import_module" and package:
            anchor = package[0].split(".")
            refs.append(_Ref((*anchor[: len(anchor) - level + 1], *parts)))
        elif parts or level:
            refs.append(_Ref(parts, level, folder))
    if name == "__import__" and refs:
        fromlist = node.args[3] if len(node.args) > 3 else kwargs.get("fromlist")
        first = refs[0]
        refs += [
            _Ref((*first.parts, sub), first.level, first.base)
            for sub in _literal_strings(fromlist)
            if sub and sub != "*"
        ]
    return refs


def imported_names(source: bytes, path: str) -> list[_Ref]:
    """Every module name `source` may import: import statements anywhere (functions included), literal
    `importlib.import_module`/`__import__` calls and a conftest's `pytest_plugins`."""
    try:
        tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError):
        return []  # the property run reports a file that does not compile
    folder = posixpath.dirname(path)
    refs: list[_Ref] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            refs += [_Ref(tuple(a.name.split("."))) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            mod = tuple(node.module.split(".")) if node.module else ()
            refs.append(_Ref(mod, node.level, folder))
            # `from pkg import name` may name a submodule.
            refs += [_Ref((*mod, a.name), node.level, folder) for a in node.names if a.name != "*"]
        elif isinstance(node, ast.Call):
            refs += _call_refs(node, folder)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is not None and any(isinstance(t, ast.Name) and t.id == "pytest_plugins" for t in targets):
                refs += [_Ref(tuple(s.split("."))) for s in _literal_strings(node.value) if s]
    return [r for r in refs if r.parts or r.level]


def candidates(root: str, parts: tuple[str, ...]) -> list[str]:
    """Files that importing `parts` from `root` may execute: each package's `__init__.py` and the module itself."""
    out = []
    for k in range(1, len(parts) + 1):
        out += [_join(root, *parts[:k]) + ".py", _join(root, *parts[:k], "__init__.py")]
    return out


def search_roots(path: str) -> list[str]:
    """The folders from `path`'s own up to the root, nearest first (`a/b/c.py` → `a/b`, `a`, ``)."""
    return [*ancestors(path), ""]


def _under(path: str, folders: Iterable[str]) -> bool:
    return any(not f or path == f or path.startswith(f + "/") for f in folders)


def scan(read: Reader, start: Mapping[str, bytes | None], pythonpath: tuple[str, ...]) -> ImportScan:
    """Follow imports from the `start` files (path → baseline bytes) to every repository module they reach."""
    pyroots = tuple("" if (n := posixpath.normpath(p).strip("/")) == "." else n for p in pythonpath)
    # A file below a pythonpath folder is code under test whichever sys.path entry finds it (`src.alloc` from
    # the root is still `src/alloc.py`); the root itself as a pythonpath entry only frees modules found through it.
    pyfolders = tuple(r for r in pyroots if r)
    locked: set[str] = set()
    shadows: set[tuple[str, str]] = set()
    seen: set[str] = set(start)
    resolved_in_pythonpath: set[tuple[str, str]] = set()
    todo: dict[str, bytes] = {p: data for p, data in start.items() if data is not None}
    while todo:
        # (candidate file, locked?) for this round; one batched read per round.
        wanted: dict[str, bool] = {}
        for path, source in todo.items():
            roots = search_roots(path)
            for ref in imported_names(source, path):
                if ref.level:
                    base = ref.base
                    for _ in range(ref.level - 1):
                        base = posixpath.dirname(base)
                    for cand in candidates(base, ref.parts) if ref.parts else [_join(base, "__init__.py")]:
                        wanted.setdefault(cand, not _under(cand, pyfolders))
                    continue
                top = ref.parts[0]
                for root in roots:
                    if root not in pyroots:
                        shadows.add((root, top))
                        for cand in candidates(root, ref.parts):
                            wanted.setdefault(cand, not _under(cand, pyfolders))
                for root in pyroots:
                    for cand in candidates(root, ref.parts):
                        wanted[cand] = False
                    # A module not found anywhere (stdlib, third party) must not be shadowed from pythonpath either.
                    shadows.add((root, top))
        found = read(sorted(p for p in wanted if p not in seen))
        seen.update(wanted)
        todo = {}
        for cand, blob in found.items():
            if blob is None:
                continue
            if wanted[cand]:
                locked.add(cand)
                todo[cand] = blob
            else:
                # A module that resolves under pythonpath is code under test: new files beside it are ordinary edits.
                for root in pyroots:
                    if _under(cand, [root]):
                        rel = cand[len(root) + 1 :] if root else cand
                        resolved_in_pythonpath.add((root, rel.split("/")[0].removesuffix(".py")))
    shadows -= resolved_in_pythonpath
    return ImportScan(frozenset(locked), frozenset(shadows))
