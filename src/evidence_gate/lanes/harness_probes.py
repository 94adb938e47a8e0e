"""Harness-probe lane (`harness-probed`): new references to the harness or to introspection in code under test.

Code under test is what the sealed run can import: the files the locked `.py` files reach by import on each tree
(`probe_reach`: whole top-level packages, the patch's own imports and shadowing names, every new top-level module).
Where either tree may import what the scan cannot name, or nothing is locked, it is every `.py` file below a
`properties.pythonpath` folder that is not a test file (`test_*.py`, `*_test.py`, `conftest.py`) or locked, plus
every other repository module it imports: changed modules found by a backward search from the changed files
(literal imports on the head tree), and every module the changed code can import, followed forward (an unchanged
helper that the patch makes reachable is scanned whole). A reference is old only where the baseline side of the
same file has the same name in the same statement, or where the patch removed that statement from a file that was
code under test on the baseline (a move); counts are never compared. A compiled extension module or a symlink added
below `pythonpath` cannot be read, so it counts too.
"""

from __future__ import annotations

import builtins
import keyword
import posixpath
import re
from collections import Counter

from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import NULL_OID, DiffEntry, Repo
from evidence_gate.lanes import import_scan
from evidence_gate.lanes.locked_paths import display_path, glob_matches
from evidence_gate.lanes.probe_binds import Reference
from evidence_gate.lanes.probe_scan import references
from evidence_gate.model import LaneResult, Violation
from evidence_gate.records import dataclass
from evidence_gate.row_ids import HARNESS_PROBED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

TYPE_CHECKING = False
if TYPE_CHECKING:
    from evidence_gate.lanes import probe_reach

ROW = HARNESS_PROBED
MAX_VIOLATIONS = 200
REGULAR = frozenset({"100644", "100755"})
COMPILED = (".so", ".pyd")
NOTHING_CHANGED = "no Python file changed"


@dataclass(frozen=True)
class Hit:
    """A new probe in one file of the patch."""

    path: str
    ref: Reference

    def allowed_by(self, allow: Iterable[str]) -> str | None:
        """The `probes.allow` entry that lets this probe through, if any: one naming it, or, for a name bound to a
        probe, one naming that probe (allowing `sys._getframe` in a file allows `f = sys._getframe` and `f()`)."""
        names = {self.ref.name, self.ref.bound_to} - {""}
        for entry in allow:
            path, _, name = entry.partition(": ")
            if name.strip() in names and (path == self.path or glob_matches(path, self.path)):
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


def _keyed(source: bytes | None) -> list[tuple[tuple[str, str], Reference]]:
    """((name, statement), reference) for every probe of a source: the statement (its code, positions left out)
    is what the patch must not have written for the probe to be old."""
    if source is None:
        return []
    return [((r.name, r.context), r) for r in references(source)]


def new_references(
    sides: Mapping[str, tuple[bytes | None, bytes | None]], move_from: Iterable[str] | None = None
) -> list[Hit]:
    """The probes in statements each file's head side wrote: a probe is old only where the baseline side of the
    same file has the same name in the same statement (moved within the file or not), or where the patch removed
    that statement from a file in `move_from` (code under test on the baseline; every file when None)."""
    keyed = {path: (_keyed(base), _keyed(head)) for path, (base, head) in sides.items()}
    movable = set(sides) if move_from is None else set(move_from)
    # Statements with a probe that the patch removed from code under test: the same statement elsewhere moved.
    pool: Counter[tuple[str, str]] = Counter()
    for path, (base, head) in keyed.items():
        if path in movable:
            pool.update(Counter(k for k, _ in base) - Counter(k for k, _ in head))
    hits: list[Hit] = []
    for path, (base, head) in keyed.items():
        kept = Counter(k for k, _ in base)
        unmatched = []
        for key, ref in head:
            if kept[key] > 0:
                kept[key] -= 1
            else:
                unmatched.append((key, ref))
        for key, ref in _renamed(sides[path], base, kept, unmatched):
            if pool[key] > 0:
                pool[key] -= 1
            else:
                hits.append(Hit(path, ref))
    return hits


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_QUOTED = re.compile(r"'([A-Za-z_][A-Za-z0-9_]*)'")
_BOUND = " (bound to a probe)"
# Renaming to or from one of these changes what the code means (a builtin shadowed or unshadowed, a module hook).
_MEANINGFUL = frozenset(dir(builtins)) | frozenset(keyword.kwlist) | frozenset(keyword.softkwlist)


def _renamable(base: bytes, head: bytes) -> tuple[frozenset[str], frozenset[str]]:
    """The words of the base file gone from the head file, and those of the head file absent from the base one:
    the only names a patch can have renamed consistently through the whole file (builtins, keywords and dunders
    left out). Words, not names: a name left in a string or a comment is not gone."""
    old, new = (set(_WORD.findall(side.decode(errors="replace"))) for side in (base, head))
    plain = {w for w in old ^ new if w not in _MEANINGFUL and not (w.startswith("__") and w.endswith("__"))}
    return frozenset(old - new & plain), frozenset(new - old & plain)


def _canonical(key: tuple[str, str], names: frozenset[str]) -> tuple[str, tuple[str, ...]]:
    """A reference's (name, statement) with each of `names` replaced by its order of first appearance, and those
    names in that order: two references with equal forms differ only by a one-to-one renaming."""
    name, context = key
    if name.endswith(_BOUND):  # `m (bound to a probe)`: the bound name is renamed with the statement
        name = f"'{name.removesuffix(_BOUND)}'{_BOUND}"
    order: dict[str, int] = {}

    def place(match: re.Match[str]) -> str:
        word = match.group(1)
        return f"'\x00{order.setdefault(word, len(order))}'" if word in names else match.group(0)

    form = _QUOTED.sub(place, f"{name}\x01{context}")
    return form, tuple(order)


def _renamed(
    sources: tuple[bytes | None, bytes | None],
    base: list[tuple[tuple[str, str], Reference]],
    kept: Counter[tuple[str, str]],
    unmatched: list[tuple[tuple[str, str], Reference]],
) -> list[tuple[tuple[str, str], Reference]]:
    """`unmatched` without the references whose statement is a baseline one (still unclaimed in `kept`) but for
    names renamed consistently through the whole file: each old name gone from the head file, each new name absent
    from the base file, one old name to one new name across every statement, and the same probe bound."""
    old_source, new_source = sources
    if old_source is None or new_source is None or not unmatched:
        return unmatched
    gone, added = _renamable(old_source, new_source)
    if not gone or not added:
        return unmatched
    left: dict[str, list[tuple[tuple[str, ...], Reference]]] = {}
    for key, ref in base:
        if kept[key] > 0:
            kept[key] -= 1
            form, words = _canonical(key, gone)
            if words:
                left.setdefault(form, []).append((words, ref))
    forward: dict[str, str] = {}
    backward: dict[str, str] = {}
    rest = []
    for key, ref in unmatched:
        form, words = _canonical(key, added)
        candidates = left.get(form, []) if words else []
        match = next(
            (
                i
                for i, (olds, old_ref) in enumerate(candidates)
                if old_ref.bound_to == ref.bound_to
                and all(forward.get(o, n) == n and backward.get(n, o) == o for o, n in zip(olds, words, strict=True))
            ),
            None,
        )
        if match is None:
            rest.append((key, ref))
            continue
        olds, _ = candidates.pop(match)
        forward.update(zip(olds, words, strict=True))
        backward.update(zip(words, olds, strict=True))
    return rest


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


def _unreadable(
    repo: Repo, head: str, diff: list[DiffEntry], roots: tuple[str, ...], locked: frozenset[str]
) -> list[Hit]:
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
        elif e.new_mode == "120000" and (
            e.path.endswith(".py") or ("." not in posixpath.basename(e.path) and not _links_a_file(repo, head, e))
        ):
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


def _links_a_file(repo: Repo, head: str, entry: DiffEntry) -> bool:
    """Whether a symlink points at a regular file of the head tree (`README` → `README.rst`): Python imports a file
    only by a suffix the link's name lacks, and a file is no package. A link to a folder, to another link, out of
    the repository or to nothing may be a package in the sealed run."""
    target = repo.read_blobs([entry.new_oid]).get(entry.new_oid)
    text = target.decode(errors="replace") if target else "/"
    path = posixpath.normpath(posixpath.join(posixpath.dirname(entry.path), text))
    if text.startswith("/") or path == ".." or path.startswith("../"):
        return False
    found = repo.ls_tree(head, [path])
    return [(t.path, t.type, t.mode in REGULAR) for t in found] == [(path, "blob", True)]


def _is_cut(path: str, roots: tuple[str, ...]) -> bool:
    return in_pythonpath(path, roots) and not is_test_file(path)


def _added(entry: DiffEntry) -> bool:
    return entry.old_oid == NULL_OID or entry.old_mode not in REGULAR


def _old_blob(entry: DiffEntry) -> bool:
    return entry.old_oid != NULL_OID and entry.old_mode in REGULAR


_IMPORTS: dict[tuple[str, str], list[Any]] = {}  # (blob id, path) → the imports it names; blobs never change
_MAX_REACH = 5000


def _reach(
    repo: Repo,
    tree: Mapping[str, Any],
    start: set[str],
    changed: set[str],
    roots: tuple[str, ...],
    extra_roots: set[str],
) -> set[str]:
    """Every repository module the sealed run can import from the `start` files (the patch's code under test),
    followed through modules that are not unchanged code under test (those were reachable before the patch):
    literal imports resolved against the tree root, each pythonpath folder, the folders pytest puts on `sys.path`
    for the locked files, and relative to the package. Bounded by the tree's own size; parses are cached by blob."""
    search = tuple(dict.fromkeys(("", *roots, *sorted(extra_roots))))
    out: set[str] = set()
    frontier = set(start)
    while frontier and len(out) < _MAX_REACH:
        missing = [tree[p].oid for p in frontier if p in tree and (tree[p].oid, p) not in _IMPORTS]
        blobs = repo.read_blobs(dict.fromkeys(missing)) if missing else {}
        following: set[str] = set()
        for path in sorted(frontier):
            entry = tree.get(path)
            if entry is None:
                continue
            key = (entry.oid, path)
            if key not in _IMPORTS:
                _IMPORTS[key] = import_scan.imported_names(blobs.get(entry.oid) or b"", path)
            for ref in _IMPORTS[key]:
                for cand in _resolve_in(ref, search):
                    if cand in tree and cand not in out and cand not in start:
                        out.add(cand)
                        if cand in changed or not _is_cut(cand, roots):
                            following.add(cand)
        frontier = following
    return out


def _resolve_in(ref: Any, search: tuple[str, ...]) -> list[str]:
    if ref.level:
        return _resolve(ref, ())
    return [c for root in search for c in import_scan.candidates(root, ref.parts)]


def _by_place(
    repo: Repo,
    baseline: str,
    head: str,
    diff: list[DiffEntry],
    changed: list[DiffEntry],
    roots: tuple[str, ...],
    locked: frozenset[str],
) -> tuple[dict[str, tuple[bytes | None, bytes | None]], set[str]]:
    """Each file's (baseline, head) sides when code under test is every file below pythonpath (and what such a file
    imports), and the files on the baseline side that were code under test."""
    scanned = _scanned(repo, head, changed, roots, locked) if changed else set()
    by_path = {e.path: e for e in diff}
    tree = {t.path: t for t in repo.ls_tree(head, recursive=True) if t.type == "blob"} if scanned else {}
    extra_roots = {a for path in locked for a in import_scan.search_roots(path)}
    reached = _reach(repo, tree, scanned, set(by_path), roots, extra_roots)
    scanned |= {p for p in reached if p in by_path and by_path[p].status != "D" and p not in locked}
    # Code under test on the baseline: below pythonpath and not test code, or imported by such a file there. Only
    # there may a probe already have been (kept in its statement) or have moved from (a deleted module).
    deleted = {e.path for e in diff if e.status == "D" and e.path.endswith(".py") and e.old_mode in REGULAR}
    # Unchanged modules the changed code reaches that were not code under test by their place (maybe by import).
    fresh = {p for p in reached if p not in by_path and not _is_cut(p, roots)}
    ask = {
        p for p in (scanned | deleted | fresh) if not _is_cut(p, roots) and not (p in by_path and _added(by_path[p]))
    }
    was_cut = {p for p in scanned | deleted if _is_cut(p, roots)}
    was_cut |= _imported_from_cut(repo, baseline, ask, roots, locked) if ask else set()
    fresh -= was_cut
    return _sides(repo, by_path, tree, scanned, deleted, fresh, was_cut), was_cut


def _sides(
    repo: Repo,
    by_path: Mapping[str, DiffEntry],
    tree: Mapping[str, Any],
    scanned: set[str],
    deleted: set[str],
    fresh: set[str],
    was_cut: set[str],
) -> dict[str, tuple[bytes | None, bytes | None]]:
    """(baseline, head) sources: a baseline side only for a file that was code under test there, no head side for
    a deleted one, and an unchanged file that is newly code under test has only a head side (all of it is new)."""
    blobs = repo.read_blobs(
        [
            *(by_path[p].old_oid for p in (scanned | deleted) & was_cut if _old_blob(by_path[p])),
            *(by_path[p].new_oid for p in scanned),
            *(tree[p].oid for p in fresh),
        ]
    )

    def old(p: str) -> bytes | None:
        return blobs.get(by_path[p].old_oid) if p in was_cut and _old_blob(by_path[p]) else None

    sides: dict[str, tuple[bytes | None, bytes | None]] = {p: (old(p), None) for p in deleted}
    sides |= {p: (old(p), blobs.get(by_path[p].new_oid)) for p in scanned}
    # An unchanged module outside code under test that the patch now imports: everything in it is new here.
    return sides | {p: (None, blobs.get(tree[p].oid)) for p in fresh}


def _imported(reached: probe_reach.Reach, locked: frozenset[str]) -> set[str]:
    """Code under test among the files a tree's locked files reach: those that are not locked and not test code,
    and every module such a file imports, a test-named or locked one too (a locked helper that code under test
    imports runs as code under test: its probes count, as they do by place)."""
    files = reached.files or frozenset()
    cut = {p for p in files if p not in locked and not is_test_file(p)}
    frontier = set(cut)
    while frontier:
        frontier = {t for p in frontier for t in reached.imports.get(p, ())} - cut
        cut |= frontier
    return cut


def _narrowed(
    repo: Repo, baseline: str, head: str, diff: list[DiffEntry], roots: tuple[str, ...], locked: frozenset[str]
) -> tuple[set[str], set[str], dict[str, Any], probe_reach.Reach]:
    """Code under test on the head and the baseline tree when both are what their locked files can import (empty
    sets when either is not), the head tree, and what the head tree's locked files reach (or why nothing bounds it:
    the reason names the tree)."""
    from evidence_gate.lanes import probe_reach  # noqa: PLC0415 - only a hit to acquit needs the reach

    if not any((e.path.endswith((".py", *COMPILED)) or e.new_mode == "120000") and e.path not in locked for e in diff):
        return set(), set(), {}, probe_reach.Reach(None, NOTHING_CHANGED)
    trees = [{t.path: t for t in repo.ls_tree(c, recursive=True) if t.type == "blob"} for c in (baseline, head)]
    new_tops = probe_reach.top_names(trees[1], roots) - probe_reach.top_names(trees[0], roots)
    on_head = probe_reach.reach(repo, trees[1], locked, roots, new_tops)
    if on_head.files is None:
        why = on_head.why if on_head.why == probe_reach.NOTHING_LOCKED else f"on the head: {on_head.why}"
        return set(), set(), trees[1], probe_reach.Reach(None, why)
    on_base = probe_reach.reach(repo, trees[0], locked, roots)
    if on_base.files is None:
        return set(), set(), trees[1], probe_reach.Reach(None, f"on the baseline: {on_base.why}")
    return _imported(on_head, locked), _imported(on_base, locked), trees[1], on_head


def _by_import(
    repo: Repo, diff: list[DiffEntry], changed: list[DiffEntry], tree: Mapping[str, Any], cut: set[str], was: set[str]
) -> tuple[dict[str, tuple[bytes | None, bytes | None]], set[str]]:
    """Each file's sides when code under test is what the locked files can import (`cut` on the head tree, `was`
    on the baseline tree), and the files that were code under test on the baseline."""
    by_path = {e.path: e for e in diff}
    scanned = {e.path for e in changed if e.path in cut}
    deleted = {e.path for e in diff if e.status == "D" and e.path.endswith(".py") and e.old_mode in REGULAR}
    fresh = {p for p in cut if p not in by_path} - was
    was_cut = (scanned | deleted) & was
    return _sides(repo, by_path, tree, scanned, deleted, fresh, was_cut), was_cut


def _rule(why: str) -> str:
    """The receipt's words for which rule chose the code under test."""
    if why == NOTHING_CHANGED:
        return why
    return f"every file below pythonpath ({why})" if why else "what the locked files can import"


NOTHING_FOUND = "every file below pythonpath (no probe found there, so the locked files' reach was not needed)"


def _hits(
    repo: Repo, baseline: str, head: str, config: Config, diff: list[DiffEntry], locked: frozenset[str]
) -> tuple[list[Hit], set[str], str]:
    """The new probes, the files scanned and why code under test is what it is.

    Every file below pythonpath first, whose cost follows the change. Only a probe that `probes.allow` does not let
    through makes the locked files' reach worth computing (both trees listed, every reached file parsed): then a hit
    stands only where the reach finds it too, so the reach acquits what the sealed run cannot import and never adds
    a hit of its own; where the reach cannot be bounded, every hit stands.
    """
    roots = _roots(config)
    changed = [
        e for e in diff if e.path.endswith(".py") and e.path not in locked and e.status != "D" and e.new_mode in REGULAR
    ]
    sides, was_cut = _by_place(repo, baseline, head, diff, changed, roots, locked)
    unreadable = _unreadable(repo, head, diff, roots, locked)
    hits = [*unreadable, *new_references(sides, move_from=was_cut)]
    scanned = {p for p, (_, new) in sides.items() if new is not None}
    if all(h.allowed_by(config.probes.allow) is not None for h in hits):
        return hits, scanned, NOTHING_CHANGED if not changed and not unreadable else NOTHING_FOUND
    cut, was, tree, on_head = _narrowed(repo, baseline, head, diff, roots, locked)
    if on_head.why:
        return hits, scanned, _rule(on_head.why)
    sides, was_cut = _by_import(repo, diff, changed, tree, cut, was)
    found = [*(h for h in unreadable if on_head.could_load(h.path, roots)), *new_references(sides, move_from=was_cut)]
    keys = {(h.path, h.ref.line, h.ref.name) for h in found}
    kept = [h for h in hits if (h.path, h.ref.line, h.ref.name) in keys]
    return kept, scanned | {p for p, (_, new) in sides.items() if new is not None}, _rule("")


def check(
    repo: Repo, baseline: str, head: str, config: Config, diff: list[DiffEntry], locked: frozenset[str]
) -> LaneResult:
    """New harness probes in code under test; each is a violation on its line unless `probes.allow` names it."""
    hits, scanned, why = _hits(repo, baseline, head, config, diff, locked)
    violations: list[Violation] = []
    allowed: list[dict[str, Any]] = []
    for hit in hits:
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
    receipt = {
        "scanned": sorted(display_path(p) for p in scanned),
        "allowed": allowed,
        "found": len(violations),
        "code_under_test": why,
    }
    return LaneResult(tuple(violations), receipt)
