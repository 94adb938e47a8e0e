"""Harness-probe lane (`harness-probed`): new references to the harness or to introspection in code under test.

Code under test is every `.py` file below a `properties.pythonpath` folder that is not a test file (`test_*.py`,
`*_test.py`, `conftest.py`) or locked, plus every other unlocked repository module it imports (literal imports,
followed transitively on the head tree, searched backwards from the changed files: a computed import is itself a
probe). Each changed file is scanned on both
sides; a name counts as many times as the head has it beyond the baseline, and a reference whose line was removed
from another code-under-test file (or a deleted module that is not test code) in the same patch is a move, not a
new probe. A compiled extension module or a
symlink added below `pythonpath` cannot be read, so it counts too.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from evidence_gate import import_scan
from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import NULL_OID, DiffEntry, Repo
from evidence_gate.locked_paths import display_path, glob_matches
from evidence_gate.model import LaneResult, Violation
from evidence_gate.probe_scan import Reference, references

ROW = "harness-probed"
MAX_VIOLATIONS = 200
REGULAR = frozenset({"100644", "100755"})
COMPILED = (".so", ".pyd")


@dataclass(frozen=True)
class Hit:
    """A new probe in one file of the patch."""

    path: str
    ref: Reference

    def allowed_by(self, allow: Iterable[str]) -> str | None:
        """The `probes.allow` entry that lets this probe through, if any."""
        for entry in allow:
            path, _, name = entry.partition(": ")
            if name.strip() == self.ref.name and (path == self.path or glob_matches(path, self.path)):
                return entry
        return None


def _roots(config: Config) -> tuple[str, ...]:
    return tuple("" if (n := posixpath.normpath(p).strip("/")) == "." else n for p in config.properties.pythonpath)


def is_test_file(path: str) -> bool:
    """Whether pytest would collect `path` as a test module (or it is a conftest): test code, not code under test."""
    base = posixpath.basename(path)
    return base == "conftest.py" or (base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py")))


def in_pythonpath(path: str, roots: tuple[str, ...]) -> bool:
    """Whether `path` lies below one of the `pythonpath` folders (`""` is the whole repository)."""
    return any(not r or path.startswith(r + "/") for r in roots)


def _lines(source: bytes) -> list[str]:
    return source.decode("utf-8", "replace").splitlines()


def _keyed(source: bytes | None) -> list[tuple[str, str, Reference]]:
    """(name, stripped line text, reference) for every probe of a source; the text identifies a moved line."""
    if source is None:
        return []
    lines = _lines(source)
    return [(r.name, lines[r.line - 1].strip() if 0 < r.line <= len(lines) else "", r) for r in references(source)]


def new_references(sides: Mapping[str, tuple[bytes | None, bytes | None]]) -> list[Hit]:
    """The probes each file's head side adds over its baseline side, moves between the files not counted."""
    keyed = {path: (_keyed(base), _keyed(head)) for path, (base, head) in sides.items()}
    # Lines with a probe that the patch removed somewhere: a head line with the same text and name was moved.
    pool: Counter[tuple[str, str]] = Counter()
    for base, head in keyed.values():
        pool.update(Counter((n, t) for n, t, _ in base) - Counter((n, t) for n, t, _ in head))
    hits: list[Hit] = []
    for path, (base, head) in keyed.items():
        before = Counter(n for n, _t, _r in base)
        base_texts = Counter((n, t) for n, t, _ in base)
        excess = Counter(n for n, _t, _r in head)
        excess.subtract(before)
        for name, extra in sorted(excess.items()):
            if extra <= 0:
                continue
            mine = [(t, r) for n, t, r in head if n == name]
            # The occurrences on lines the baseline did not have are the new ones.
            fresh = sorted(mine, key=lambda tr: (base_texts[(name, tr[0])] > 0, -tr[1].line))
            for text, ref in sorted(fresh[:extra], key=lambda tr: tr[1].line):
                if pool[(name, text)] > 0 and base_texts[(name, text)] == 0:
                    pool[(name, text)] -= 1
                    continue
                hits.append(Hit(path, ref))
    return hits


def _scanned(
    repo: Repo, head: str, changed: list[DiffEntry], roots: tuple[str, ...], locked: frozenset[str]
) -> set[str]:
    """The changed `.py` files that are code under test on the head tree."""
    cut = {e.path for e in changed if in_pythonpath(e.path, roots) and not is_test_file(e.path)}
    outside = {e.path for e in changed} - cut
    return cut | (_imported_from_cut(repo, head, outside, roots, locked) if outside else set())


def _words(path: str, roots: tuple[str, ...]) -> set[str]:
    """Names an import of `path` must spell: its top-level name below each root, and its own module name."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    words = {parts[-1]} if parts else set()
    for root in ("", *roots):
        rel = parts[len(root.split("/")) :] if root else parts
        if rel and (not root or path.startswith(root + "/")):
            words.add(rel[0])
    return {w for w in words if w.isidentifier()}


def _imported_from_cut(
    repo: Repo, head: str, targets: set[str], roots: tuple[str, ...], locked: frozenset[str]
) -> set[str]:
    """The `targets` that code under test imports, directly or through other modules.

    Searched backwards, so the cost follows the change: one `git grep` per round finds the files that spell a
    frontier module's name, and only those are parsed.
    """
    leads = {t: {t} for t in targets}  # a file on the frontier → the targets it is imported on the way to
    reached: set[str] = set()
    frontier, seen = set(targets), set(targets)
    while frontier:
        words = set().union(*(_words(f, roots) for f in frontier))
        candidates = [p for p in repo.grep_files(head, words) if p not in locked]
        sources = repo.read_blobs(f"{head}:{p}" for p in candidates)
        following: set[str] = set()
        for path in candidates:
            imported = {
                c
                for ref in import_scan.imported_names(sources.get(f"{head}:{path}") or b"", path)
                for c in _resolve(ref, roots)
            } & frontier
            if not imported:
                continue
            carried = set().union(*(leads[f] for f in imported))
            if in_pythonpath(path, roots) and not is_test_file(path):
                reached |= carried
            elif path not in seen or not carried <= leads.get(path, set()):
                leads[path] = leads.get(path, set()) | carried
                following.add(path)
        seen |= following
        frontier = following
    return reached


def _resolve(ref: Any, roots: tuple[str, ...]) -> list[str]:
    """Files an import may load: relative to its package, else from the tree root and every pythonpath folder."""
    if ref.level:
        base = ref.base
        for _ in range(ref.level - 1):
            base = posixpath.dirname(base)
        return import_scan.candidates(base, ref.parts) if ref.parts else [posixpath.join(base, "__init__.py")]
    return [c for root in dict.fromkeys(("", *roots)) for c in import_scan.candidates(root, ref.parts)]


def _unreadable(diff: list[DiffEntry], roots: tuple[str, ...], locked: frozenset[str]) -> list[Hit]:
    """Compiled modules and symlinks the patch puts below pythonpath: the scan cannot vouch for them."""
    out = []
    for e in diff:
        if e.status == "D" or e.path in locked or not in_pythonpath(e.path, roots):
            continue
        if e.new_mode in REGULAR and e.path.endswith(COMPILED):
            ref = Reference(
                "compiled module",
                0,
                "a compiled extension module the scan cannot read; commit its Python source instead",
            )
        elif e.new_mode == "120000" and (e.path.endswith(".py") or "." not in posixpath.basename(e.path)):
            ref = Reference(
                "symlink",
                0,
                "a symlink the scan does not follow, while the sealed run imports what it "
                "points to; commit the module as a regular file",
            )
        else:
            continue
        out.append(Hit(e.path, ref))
    return out


def check(
    repo: Repo, baseline: str, head: str, config: Config, diff: list[DiffEntry], locked: frozenset[str]
) -> LaneResult:
    """New harness probes in code under test; each is a violation on its line unless `probes.allow` names it."""
    roots = _roots(config)
    changed = [
        e for e in diff if e.path.endswith(".py") and e.path not in locked and e.status != "D" and e.new_mode in REGULAR
    ]
    scanned = _scanned(repo, head, changed, roots, locked) if changed else set()
    # Baseline sides of every code-under-test file the patch touched, deleted ones included (moves start there).
    # A deleted module that is not test code may have moved into code under test (`attr/` → `src/attr/`).
    sources = [
        e
        for e in diff
        if e.path.endswith(".py") and (e.path in scanned or (e.status == "D" and not is_test_file(e.path)))
    ]
    blobs = repo.read_blobs(
        [
            *(e.old_oid for e in sources if e.old_oid != NULL_OID and e.old_mode in REGULAR),
            *(e.new_oid for e in sources if e.path in scanned),
        ]
    )
    sides = {
        e.path: (
            blobs.get(e.old_oid) if e.old_mode in REGULAR else None,
            blobs.get(e.new_oid) if e.path in scanned else None,
        )
        for e in sources
    }
    violations: list[Violation] = []
    allowed: list[dict[str, Any]] = []
    for hit in [*_unreadable(diff, roots, locked), *new_references(sides)]:
        entry = hit.allowed_by(config.probes.allow)
        disp = display_path(hit.path)
        line = hit.ref.line or None
        if entry is not None:
            allowed.append({"path": disp, "line": line, "name": hit.ref.name, "allowed_by": entry})
            continue
        violations.append(
            Violation(
                ROW,
                f"new `{hit.ref.name}` in code under test ({hit.ref.why}); remove it: code "
                "under test must not look at the harness, the gate or other frames. If a "
                f'human agrees it is needed, add "{disp}: {hit.ref.name}" to '
                f"probes.allow in {CONFIG_PATH} on the base branch",
                disp,
                line,
            )
        )
    if len(violations) > MAX_VIOLATIONS:
        rest = len(violations) - MAX_VIOLATIONS
        violations = [*violations[:MAX_VIOLATIONS], Violation(ROW, f"and {rest} more harness probes")]
    receipt = {"scanned": sorted(display_path(p) for p in scanned), "allowed": allowed, "found": len(violations)}
    return LaneResult(tuple(violations), receipt)
