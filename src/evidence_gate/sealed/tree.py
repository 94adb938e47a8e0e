"""The tree a sealed run executes: built from git objects, never from the working copy.

Locked paths come from the baseline's blobs, everything else from the commit under test. The code under test is
never left out: only files that would let the patch steer pytest or the interpreter (configuration, caches,
start-up hooks, installed-package metadata) and modules the patch adds that would shadow the test harness, the
standard library or a locked test module are, each listed as neutralised.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import posixpath
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from evidence_gate.git import Repo, TreeEntry

# pytest's configuration files stay in the tree as the checkout has them: the worker names the gate's own ini with
# `-c` and the tree as `--rootdir`, so pytest reads none of them, and code that reads its own settings from
# `pyproject.toml` or `setup.cfg` finds them (red team: a patch whose buggy path was switched on in a pyproject it
# added passed, the file being left out).
# Standard-library names that are also common folder names for tests: a patch may add them.
_STDLIB_ALLOWED = frozenset({"test", "this", "antigravity", "idlelib", "turtledemo"})
_STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})
_MAX_BATCH = 2000
# Who owns a top-level module name in the sealed interpreter ("the standard library", "the test harness (...)").
Owner = Callable[[str], str | None]


def stdlib_only(name: str) -> str | None:
    """The owner lookup without a runner: the standard library's names."""
    return "the standard library" if name in sys.stdlib_module_names else None


@dataclass(frozen=True)
class Neutralised:
    """A path of the patch's tree that the sealed run left out, and why."""

    path: str
    reason: str

    def to_json(self) -> dict[str, str]:
        """The receipt's form."""
        return {"path": self.path, "reason": self.reason}


def _module_name(name: str) -> str:
    return name.split(".", 1)[0]


def hook_reason(path: str) -> str | None:
    """Why `path` never takes effect, whoever wrote it: configuration, caches, start-up hooks, metadata."""
    parts = path.split("/")
    base = parts[-1]
    for part in parts[:-1]:
        if part in {".pytest_cache", "__pycache__"}:
            return f"{part} is never read from the repository"
        if part.endswith((".dist-info", ".egg-info")):
            return "installed-package metadata (entry points, plugins) in the repository is ignored"
    if base == "conftest.py":
        return "conftest outside the locked set"
    if base.endswith((".pyc", ".pyo")) or base in {".pytest_cache", "__pycache__"}:
        return "bytecode and caches are never read from the repository"
    if base.endswith(".pth"):
        return "*.pth files run code at interpreter start-up"
    if base.endswith((".dist-info", ".egg-info")):
        return "installed-package metadata (entry points, plugins) in the repository is ignored"
    return None


def startup_reason(path: str, package_dirs: frozenset[str]) -> str | None:
    """A `sitecustomize`/`usercustomize` module outside any package: a start-up hook, whoever wrote it."""
    name = posixpath.basename(path).removesuffix(".py")
    if name in _STARTUP_HOOKS and path.endswith(".py") and posixpath.dirname(path) not in package_dirs:
        return f"{name} is a start-up hook of the interpreter"
    return None


def shadow_reason(
    path: str, package_dirs: frozenset[str], reserved: frozenset[str] = frozenset(), owner: Owner = stdlib_only
) -> str | None:
    """Why `path`, were the patch to add it, would shadow a module the run relies on, or None.

    A module or package reachable by its top-level name (in no package) named like something `owner` knows (the
    harness, the standard library) or like a locked test module (`reserved`).
    """
    parts = path.split("/")
    for depth, part in enumerate(parts):
        # Anything below a folder that is not a package may be imported by its top-level name.
        if "/".join(parts[:depth]) in package_dirs:
            continue
        name = _module_name(part)
        what = "a locked test module" if name in reserved else (None if name in _STDLIB_ALLOWED else owner(name))
        if what is None:
            continue
        is_file = depth == len(parts) - 1
        if is_file and (part == name + ".py" or part.endswith((".so", ".pyd"))):
            return f"{name!r} would shadow {what}"
        if not is_file and part == name and "/".join(parts[: depth + 1]) in package_dirs:
            return f"package {name!r} would shadow {what}"
    return None


def neutralise_reason(
    path: str, package_dirs: frozenset[str], reserved: frozenset[str] = frozenset(), owner: Owner = stdlib_only
) -> str | None:
    """Why `path`, added by the patch, must not take effect in a sealed run, or None when it may."""
    return hook_reason(path) or startup_reason(path, package_dirs) or shadow_reason(path, package_dirs, reserved, owner)


def plan_tree(
    head: list[TreeEntry],
    baseline: list[TreeEntry],
    locked: Iterable[str],
    reserved: frozenset[str] = frozenset(),
    owner: Owner = stdlib_only,
) -> tuple[dict[str, TreeEntry], list[Neutralised]]:
    """The entries of the sealed tree and the neutralised paths of `head`.

    Locked paths take the baseline's entry (or are absent when the baseline has none); a conftest outside the
    locked set takes the baseline's copy (or is left out), so the patch's conftests never take effect. A shadow is
    left out only when the patch adds it: a path the baseline has too is the project's own code, never neutralised
    (when it cannot load from the tree, the property lane stops with run-integrity instead).
    """
    locked_set = frozenset(locked)
    base_by_path = {e.path: e for e in baseline}
    chosen: dict[str, TreeEntry] = {}
    neutralised: list[Neutralised] = []
    for entry in head:
        if entry.path in locked_set or _under_locked(entry.path, locked_set):
            continue
        chosen[entry.path] = entry
    for path in locked_set:
        if path in base_by_path:
            chosen[path] = base_by_path[path]
    for entry in baseline:
        if _under_locked(entry.path, locked_set):
            chosen[entry.path] = entry
    trusted_conftests = {p: e for p, e in base_by_path.items() if posixpath.basename(p) == "conftest.py"}
    package_dirs = frozenset(posixpath.dirname(p) for p in chosen if posixpath.basename(p) == "__init__.py")
    result: dict[str, TreeEntry] = {}
    for path, entry in sorted(chosen.items()):
        if entry.type == "commit":
            neutralised.append(Neutralised(path, "submodule (gitlink): not part of the sealed tree"))
            continue
        trusted = path in locked_set or _under_locked(path, locked_set)
        reason = None if trusted else hook_reason(path) or startup_reason(path, package_dirs)
        if reason is None and not trusted and path not in base_by_path:
            reason = shadow_reason(path, package_dirs, reserved, owner)
        if reason == "conftest outside the locked set" and path in trusted_conftests:
            if trusted_conftests[path].oid != entry.oid:
                neutralised.append(Neutralised(path, "the patch's conftest is replaced by the baseline's copy"))
            result[path] = trusted_conftests[path]
            continue
        if reason is not None:
            neutralised.append(Neutralised(path, reason))
            continue
        result[path] = entry
    return result, neutralised


def _under_locked(path: str, locked: frozenset[str]) -> bool:
    return any(path.startswith(d.rstrip("/") + "/") for d in locked if d.endswith("/"))


def _inside(path: str, target: str) -> bool:
    """Whether a link's target stays in the tree however other links resolve: it may climb (`../`) only through
    the real folders above it and then descend by plain names, and must not climb above the root."""
    segments = [s for s in target.split("/") if s not in {"", "."}]
    climb = 0
    while climb < len(segments) and segments[climb] == "..":
        climb += 1
    if target.startswith("/") or ".." in segments[climb:] or "\0" in target:
        return False
    return climb <= path.count("/")


def safe_parts(path: str) -> list[str] | None:
    """The segments of a tree path, or None when one is empty, `.`, `..` or holds a NUL (git refuses those)."""
    parts = path.split("/")
    return None if any(p in {"", ".", ".."} or "\0" in p for p in parts) else parts


class _Folders:
    """Folder descriptors below one root, each opened without following a link: nothing is written outside it."""

    def __init__(self, root: Path) -> None:
        self.fds: dict[tuple[str, ...], int] = {(): os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)}

    def get(self, parts: tuple[str, ...]) -> int:
        """The descriptor of the folder `parts` (created 0755 where missing); OSError where a link stands."""
        if parts not in self.fds:
            parent = self.get(parts[:-1])
            with contextlib.suppress(FileExistsError):
                os.mkdir(parts[-1], 0o755, dir_fd=parent)
            fd = os.open(parts[-1], os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=parent)
            os.fchmod(fd, 0o755)  # whatever the umask: world-readable, writable by the gate only
            self.fds[parts] = fd
        return self.fds[parts]

    def close(self) -> None:
        """Close every descriptor."""
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def _write(folders: _Folders, parts: list[str], entry: TreeEntry, data: bytes) -> None:
    folder = folders.get(tuple(parts[:-1]))
    if entry.mode == "120000":
        os.symlink(os.fsdecode(data), parts[-1], dir_fd=folder)
        return
    mode = 0o755 if entry.mode == "100755" else 0o644
    fd = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=folder)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        os.fchmod(handle.fileno(), mode)


def materialise(repo: Repo, entries: dict[str, TreeEntry], dest: Path) -> list[Neutralised]:
    """Write the entries under `dest` (world-readable, not writable by the sealed user); returns what was dropped.

    Every folder is opened relative to its parent without following links and every file is created exclusively,
    so no entry (`..`, a name posing as a path, a duplicate, a file below a symlinked folder) lands outside `dest`
    or on top of another one.
    """
    dropped: list[Neutralised] = []
    dest.mkdir(parents=True, exist_ok=True)
    dest.chmod(0o755)
    items = sorted(entries.items())
    folders = _Folders(dest)
    try:
        for start in range(0, len(items), _MAX_BATCH):
            chunk = items[start : start + _MAX_BATCH]
            blobs = repo.read_blobs(e.oid for _, e in chunk)
            for path, entry in chunk:
                data = blobs.get(entry.oid)
                parts = safe_parts(path)
                if data is None:
                    continue
                if parts is None:
                    dropped.append(Neutralised(path, "a tree entry git refuses to check out (`.`, `..` or empty)"))
                elif entry.mode == "120000" and not _inside(path, os.fsdecode(data)):
                    dropped.append(
                        Neutralised(
                            path, f"symlink leaves the tree ({os.fsdecode(data)!r}), or could through another link"
                        )
                    )
                else:
                    try:
                        _write(folders, parts, entry, data)
                    except OSError as exc:
                        dropped.append(
                            Neutralised(
                                path, f"not written: {exc.strerror} (a link or another entry stands in its way)"
                            )
                        )
    finally:
        folders.close()
    return dropped


def build(
    repo: Repo,
    commit: str,
    baseline: str,
    locked: Iterable[str],
    dest: Path,
    test_files: Iterable[str] = (),
    owner: Owner = stdlib_only,
) -> list[Neutralised]:
    """Build the sealed tree of `commit` (locked paths from `baseline`) in `dest`; returns what was neutralised."""
    head_entries = repo.ls_tree(commit, recursive=True)
    base_entries = head_entries if baseline == commit else repo.ls_tree(baseline, recursive=True)
    reserved = frozenset(posixpath.basename(f).removesuffix(".py") for f in test_files) - {"__init__", "conftest"}
    entries, neutralised = plan_tree(head_entries, base_entries, locked, reserved=reserved, owner=owner)
    neutralised += materialise(repo, entries, dest)
    return neutralised


def changed_files(repo: Repo, commit: str, paths: str | Iterable[str], dest: Path) -> list[str]:
    """Files of `commit` at or below `paths` whose bytes under `dest` no longer match their blob (changed during a
    run); a path ending in `/` names a folder."""
    wanted = [paths] if isinstance(paths, str) else list(paths)
    specs = sorted({p.rstrip("/") for p in wanted if p.rstrip("/")})
    if not specs:
        return []
    changed = []
    for entry in repo.ls_tree(commit, specs, recursive=True):
        if entry.type != "blob" or entry.mode == "120000":
            continue
        target = dest / entry.path
        try:
            data = target.read_bytes() if not target.is_symlink() else None
        except OSError:
            data = None
        # The object id is the hash of "blob SIZE\0" + bytes: sha1 in most repositories, sha256 in the others.
        algorithm = hashlib.sha256 if len(entry.oid) == 64 else hashlib.sha1
        header = f"blob {len(data)}\0".encode() if data is not None else b""
        if data is None or algorithm(header + data, usedforsecurity=False).hexdigest() != entry.oid:
            changed.append(entry.path)
    return changed
