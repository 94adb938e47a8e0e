"""Locked-evidence lane (`evidence-path-edited`): any touch of locked evidence between baseline and head.

The lane works from `diff-tree --raw --no-renames` (so a rename is a delete plus an add and a mode-only change still
shows) and reads only the baseline blobs it needs, in batches; its cost follows the size of the change, not of the
repository. Tree ids of locked folders go to the receipt and are cross-checked against the diff.
"""

from __future__ import annotations

import posixpath

from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import NULL_OID, DiffEntry, Repo
from evidence_gate.lanes import import_scan, locked_paths, tree_entries
from evidence_gate.lanes.locked_paths import FIX_LOCKED, display_path, fold, glob_matches
from evidence_gate.model import LaneResult, Violation
from evidence_gate.records import dataclass, field
from evidence_gate.row_ids import EVIDENCE_PATH_EDITED

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

    from evidence_gate.lanes.score_properties import PropertySpec

ROW = EVIDENCE_PATH_EDITED
BUILTIN_GLOBS = (".github/workflows/**",)
MAX_VIOLATIONS = 200
# A patched `.gitattributes` with more checkout-affecting lines than this is not matched line by line (each line is
# tested against every locked path below it): past it the change fails closed instead of stalling the gate.
MAX_ATTR_LINES = 10_000
MODE_NAMES = {
    "100644": "a regular file",
    "100755": "an executable file",
    "120000": "a symlink",
    "160000": "a submodule (gitlink)",
    "040000": "a folder",
    "000000": "nothing",
}
SYMLINK, GITLINK = "120000", "160000"
STARTUP_MODULES = ("sitecustomize", "usercustomize")


@dataclass(frozen=True)
class LockedSet:
    """The locked evidence of one baseline: concrete paths (with why each is locked), globs and import shadows."""

    paths: dict[str, str]
    globs: tuple[str, ...]
    imports: import_scan.ImportScan
    existing: frozenset[str]
    _folded: dict[str, str] = field(init=False, repr=False, compare=False)
    _ancestors: dict[str, str] = field(init=False, repr=False, compare=False)
    _folded_ancestors: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        folded = {fold(p): p for p in self.paths}
        anc: dict[str, str] = {}
        for p in self.paths:
            for a in locked_paths.ancestors(p):
                anc.setdefault(a, p)
        for g in self.globs:
            prefix = locked_paths.literal_prefix(g)
            for a in ([prefix] if prefix else []) + locked_paths.ancestors(prefix):
                anc.setdefault(a, g)
        object.__setattr__(self, "_folded", folded)
        object.__setattr__(self, "_ancestors", anc)
        object.__setattr__(self, "_folded_ancestors", {fold(a): v for a, v in anc.items()})

    def classify(self, path: str) -> str | None:
        """Why `path` is locked evidence (a phrase for the message), or None when it is not."""
        if path in self.paths:
            return f"locked: {self.paths[path]}"
        for g in self.globs:
            if glob_matches(g, path):
                return f"locked by `{g}`"
        name = self.imports.shadowed(path)
        if name is not None:
            return f"it would shadow the module `{name}` that the property run imports"
        cached = self._compiled_source(path)
        if cached is not None:
            return f"a compiled copy that Python may load in place of locked {cached} (unchecked-hash .pyc)"
        anc = self._ancestors
        if path in anc:
            return f"it stands where the folder holding locked `{anc[path]}` is"
        folded = fold(path)
        by_fold = self._folded
        if folded in by_fold:
            return (
                f"it differs from locked {by_fold[folded]} only in letter case or Unicode form, so it shadows it "
                "on case-insensitive or normalising file systems"
            )
        for g in self.globs:
            if glob_matches(fold(g), folded):
                return (
                    f"it matches locked `{g}` once letter case and Unicode form are ignored, so it shadows locked "
                    "evidence on case-insensitive or normalising file systems"
                )
        fanc = self._folded_ancestors
        if folded in fanc:
            return (
                f"it differs only in letter case or Unicode form from the folder holding locked `{fanc[folded]}`, "
                "so it stands in for it on case-insensitive file systems"
            )
        return None

    def _compiled_source(self, path: str) -> str | None:
        """The locked or shadow-guarded module a `__pycache__/NAME.*.pyc` file stands for, else None."""
        cache_dir, base = posixpath.split(path)
        folder, cache = posixpath.split(cache_dir)
        stem, dot, _ = base.partition(".")
        if cache != "__pycache__" or not dot or not base.endswith(".pyc"):
            return None
        source = posixpath.join(folder, stem + ".py")
        if source in self.paths or (folder, stem) in self.imports.shadows:
            return source
        return None


def _norm(path: str) -> str:
    """A configured path as git spells it (`./fixtures/` → `fixtures`; `.` → ``)."""
    norm = posixpath.normpath(path.strip().lstrip("/"))
    return "" if norm == "." else norm


def locked_set(repo: Repo, baseline: str, config: Config, specs: tuple[PropertySpec, ...]) -> LockedSet:
    """The built-in locked set plus `locked:` globs, with every baseline blob it needs read in batches."""
    paths: dict[str, str] = {
        CONFIG_PATH: "the gate's configuration",
        _norm(config.properties.list): "the property list",
    }
    if config.freeze.mode == "locked":
        paths[_norm(config.freeze.file)] = "the freeze ledger (freeze.mode: locked)"
    named = {_norm(s.file) for s in specs} | {
        _norm(s.counterexample.split("::", 1)[0]) for s in specs if s.counterexample
    }
    for file in sorted(named):
        paths.setdefault(file, f"named in {config.properties.list}")
        for folder in import_scan.search_roots(file):
            paths.setdefault(posixpath.join(folder, "conftest.py"), f"a conftest.py above {file}")
            paths.setdefault(posixpath.join(folder, "__init__.py"), f"decides how {file} is imported")

    def read(wanted: list[str]) -> dict[str, bytes | None]:
        got = repo.read_blobs(f"{baseline}:{p}" for p in wanted)
        return {p: got[f"{baseline}:{p}"] for p in wanted}

    content = read(list(paths))
    start = {p: data for p, data in content.items() if data is not None and p.endswith(".py")}
    scan = import_scan.scan(read, start, config.properties.pythonpath)
    # Python imports these at start-up from any sys.path folder, before a single test runs.
    roots = {"", *(_norm(p) for p in config.properties.pythonpath), *(posixpath.dirname(f) for f in named)}
    # pytest imports a test file by its module name from its own folder: a package or extension module of that name
    # beside it would be imported instead.
    own = {(posixpath.dirname(f), posixpath.basename(f).removesuffix(".py")) for f in named}
    scan = import_scan.ImportScan(scan.files, scan.shadows | own | {(r, n) for r in roots for n in STARTUP_MODULES})
    imported = "a module imported by a locked property file"
    if scan.files:
        imported += _absent_pythonpath_note(repo, baseline, config.properties.pythonpath)
    for module in sorted(scan.files):
        paths.setdefault(module, imported)
    existing = frozenset({p for p, data in content.items() if data is not None} | scan.files)
    fixtures = _norm(config.fixtures.dir)
    # `./tools/**`, `tools//**`, `src/../tools/**` and ` tools/** ` mean `tools/**`; a trailing `/` keeps its sense.
    configured = (_norm(g) + ("/" if g.strip().endswith("/") and _norm(g) else "") for g in config.locked)
    globs = tuple(dict.fromkeys((f"{fixtures}/**" if fixtures else "**", *BUILTIN_GLOBS, *configured)))
    return LockedSet(paths, globs, scan, existing)


def _absent_pythonpath_note(repo: Repo, baseline: str, pythonpath: tuple[str, ...]) -> str:
    """A note naming `properties.pythonpath` folders the baseline lacks: then nothing imported is code under test.

    The default `[src]` on a flat layout (packages at the root) locks every module a property imports.
    """
    absent = [p for p in pythonpath if _norm(p) and repo.tree_oid(baseline, _norm(p)) is None]
    if not absent:
        return ""
    return (
        f"; properties.pythonpath names {', '.join(f'`{p}`' for p in absent)}, which the baseline does not have, so "
        'no imported module counts as code under test: for a flat layout set `properties: pythonpath: ["."]`'
    )


def _describe(entry: DiffEntry, moved_to: dict[str, str]) -> str:
    old, new = MODE_NAMES.get(entry.old_mode, entry.old_mode), MODE_NAMES.get(entry.new_mode, entry.new_mode)
    if entry.status == "A":
        return "was added" + ("" if entry.new_mode == "100644" else f" as {new}")
    if entry.status == "D":
        target = moved_to.get(entry.path)
        return f"was moved to {display_path(target)}" if target else "was deleted"
    if entry.status == "T" or (
        entry.old_mode != entry.new_mode and {entry.old_mode, entry.new_mode} & {SYMLINK, GITLINK}
    ):
        return f"was replaced by {new} (it was {old})"
    if entry.old_mode != entry.new_mode:
        edit = "was modified and its" if entry.old_oid != entry.new_oid else "had its"
        return f"{edit} mode changed from {entry.old_mode} to {entry.new_mode}"
    return "was modified"


def _moves(diff: list[DiffEntry]) -> dict[str, str]:
    added: dict[str, str] = {}
    for e in diff:
        if e.status == "A":
            added.setdefault(e.new_oid, e.path)
    return {e.path: added[e.old_oid] for e in diff if e.status == "D" and e.old_oid in added}


def _path_violations(repo: Repo, diff: list[DiffEntry], locked: LockedSet) -> list[Violation]:
    moved_to = _moves(diff)
    links = [e for e in diff if e.new_mode == SYMLINK and e.new_oid != NULL_OID]
    targets = repo.read_blobs(e.new_oid for e in links) if links else {}
    out = []
    for e in diff:
        disp = display_path(e.path)
        change = _describe(e, moved_to)
        # Deleting a badly named file is a clean-up; every other change to one is a violation.
        hostile = locked_paths.hostile_chars(e.path) if e.status != "D" else []
        if hostile:
            out.append(
                Violation(
                    ROW,
                    f"{disp} {change}, and its name contains {', '.join(hostile)}; such names "
                    "exist to mislead reviewers and tools; rename it using printable UTF-8 only",
                    disp,
                )
            )
            continue
        alias = locked_paths.git_dir_alias(e.path) if e.status != "D" else None
        if alias is not None:
            out.append(
                Violation(
                    ROW,
                    f"{disp} {change}, and its folder {display_path(alias)} is the repository's own "
                    "`.git` on some file systems (it could plant hooks or config); rename it",
                    disp,
                )
            )
            continue
        if e.new_mode == SYMLINK:
            raw = targets.get(e.new_oid) or b""
            target = raw.decode("utf-8", "surrogateescape")
            bad_target = locked_paths.hostile_chars(target)
            if bad_target or locked_paths.symlink_escapes(e.path, target):
                where = (
                    f"whose target contains {', '.join(bad_target)}"
                    if bad_target
                    else "which leaves the repository (or enters .git)"
                )
                out.append(
                    Violation(
                        ROW,
                        f"{disp} {change}: a symlink to {display_path(target)}, {where}; commit a "
                        "regular file, or a link that stays inside the repository",
                        disp,
                    )
                )
                continue
        norm = posixpath.normpath(e.path)
        # `src/../fixtures/x` (an entry named `..`) is caught above; it must not dodge the lookup either.
        why = locked.classify(e.path) or (locked.classify(norm) if norm != e.path else None)
        if why is not None:
            out.append(Violation(ROW, f"{disp} {change} ({why}); {FIX_LOCKED}", disp))
    return out


# ---- .gitattributes ---------------------------------------------------------------------------------------------


def _is_attributes(path: str) -> bool:
    return fold(posixpath.basename(path)) == ".gitattributes"


def _in_scope(attr_dir: str, path: str) -> bool:
    return not attr_dir or path.startswith(attr_dir + "/")


class _LockedFiles:
    """Locked files on the baseline below a folder, listed lazily (only when a changed `.gitattributes` needs it)."""

    def __init__(self, repo: Repo, baseline: str, locked: LockedSet) -> None:
        self.repo, self.baseline, self.locked = repo, baseline, locked
        self._listed: dict[str, list[str]] = {}

    def _list(self, folder: str) -> list[str]:
        if folder not in self._listed:
            entries = self.repo.ls_tree(self.baseline, [folder] if folder else [], recursive=True)
            self._listed[folder] = [t.path for t in entries]
        return self._listed[folder]

    def under(self, attr_dir: str) -> list[str]:
        found = {p for p in self.locked.existing if _in_scope(attr_dir, p)}
        for g in self.locked.globs:
            prefix = locked_paths.literal_prefix(g)
            if _in_scope(attr_dir, prefix) or prefix == attr_dir:
                root = prefix
            elif _in_scope(prefix, attr_dir):
                root = attr_dir
            else:
                continue
            found.update(p for p in self._list(root) if glob_matches(g, p) and _in_scope(attr_dir, p))
        return sorted(found)


def _attr_lines(repo: Repo, entries: list[DiffEntry]) -> dict[str, bytes]:
    """Blob contents of both sides; a symlinked or gitlinked `.gitattributes` is not read by git, so it is empty."""
    wanted = {
        oid
        for e in entries
        for oid, mode in ((e.old_oid, e.old_mode), (e.new_oid, e.new_mode))
        if oid != NULL_OID and mode not in {SYMLINK, GITLINK}
    }
    got = repo.read_blobs(sorted(wanted)) if wanted else {}
    return {oid: data for oid, data in got.items() if data is not None}


def _meta_violations(
    repo: Repo, baseline: str, diff: list[DiffEntry], locked: LockedSet, flagged: set[str]
) -> list[Violation]:
    entries = [e for e in diff if _is_attributes(e.path) and display_path(e.path) not in flagged]
    if not entries:
        return []
    blobs = _attr_lines(repo, entries)
    files = _LockedFiles(repo, baseline, locked)
    out = []
    for e in entries:
        attr_dir = posixpath.dirname(e.path)
        candidates = files.under(attr_dir)
        if not candidates:
            continue
        old = locked_paths.parse_attributes(blobs.get(e.old_oid, b""))
        new = locked_paths.parse_attributes(blobs.get(e.new_oid, b""))
        if len(new) > MAX_ATTR_LINES:
            out.append(
                Violation(
                    ROW,
                    f"has {len(new)} attribute lines, more than the {MAX_ATTR_LINES} the gate "
                    f"matches against locked paths such as {display_path(candidates[0])}; "
                    f"{FIX_LOCKED}",
                    display_path(e.path),
                )
            )
            continue
        hits: dict[tuple[str, tuple[str, ...], bool], list[str]] = {}
        before = _relevant(old, attr_dir, candidates, hits)
        after = _relevant(new, attr_dir, candidates, hits)
        import difflib  # noqa: PLC0415 - only a changed attributes file is compared line by line

        matcher = difflib.SequenceMatcher(a=[x.key for x in before], b=[x.key for x in after], autojunk=False)
        disp = display_path(e.path)
        for op, a0, a1, b0, b1 in matcher.get_opcodes():
            if op == "equal":
                continue
            for line in after[b0:b1]:
                out.append(Violation(ROW, _attr_message("sets", line, hits[line.key]), disp, line.line))
            for line in before[a0:a1]:
                out.append(
                    Violation(
                        ROW, _attr_message(f"drops (baseline line {line.line})", line, hits[line.key]), disp, None
                    )
                )
    return out


def _relevant(
    lines: Iterable[locked_paths.AttrLine],
    attr_dir: str,
    candidates: list[str],
    hits: dict[tuple[str, tuple[str, ...], bool], list[str]],
) -> list[locked_paths.AttrLine]:
    """The lines that apply to at least one locked path (a macro applies wherever it is used); fills `hits`."""
    kept = []
    for line in lines:
        if line.key not in hits:
            hits[line.key] = (
                candidates if line.macro else locked_paths.first_matching(attr_dir, line.pattern, candidates)
            )
        if hits[line.key]:
            kept.append(line)
    return kept


def _attr_message(verb: str, line: locked_paths.AttrLine, paths: list[str]) -> str:
    what = (
        f"`[attr]{line.pattern} {' '.join(line.tokens)}`"
        if line.macro
        else f"`{' '.join(line.tokens)}` for `{line.pattern}`"
    )
    more = f" (and {len(paths) - 1} more locked paths)" if len(paths) > 1 else ""
    return (
        f"{verb} {what}, which changes how locked {display_path(paths[0])}{more} checks out; attribute changes "
        f"for locked paths may only land in a human-reviewed PR to the base branch"
    )


def _trees(repo: Repo, baseline: str, head: str, globs: tuple[str, ...]) -> dict[str, dict[str, str | None]]:
    folders = sorted({f for g in globs if (f := locked_paths.locked_folder(g))})
    ids = repo.object_ids(f"{commit}:{f}" for f in folders for commit in (baseline, head))
    return {f: {"baseline": ids[f"{baseline}:{f}"], "head": ids[f"{head}:{f}"]} for f in folders}


def check(
    repo: Repo, baseline: str, head: str, config: Config, specs: tuple[PropertySpec, ...], diff: list[DiffEntry]
) -> LaneResult:
    """Every touch of locked evidence between baseline and head; the receipt lists the locked set (files, globs,
    folder trees, imports, watched paths)."""
    locked = locked_set(repo, baseline, config, specs)
    # First: entries git refuses to check out (`..`, `a/b`, duplicates) make every path below them meaningless.
    violations = [
        Violation(ROW, f"is a tree entry git refuses to check out: {bad.problem}; {tree_entries.FIX}", bad.path())
        for bad in tree_entries.refused_entries(repo, baseline, head)
    ]
    violations += _path_violations(repo, diff, locked)
    flagged = {v.path for v in violations if v.path is not None}
    violations += _meta_violations(repo, baseline, diff, locked, flagged)
    trees = _trees(repo, baseline, head, locked.globs)
    for folder, ids in trees.items():
        # Fail closed: a locked folder whose tree id moved must have shown up in the diff.
        if ids["baseline"] != ids["head"] and not any(
            v.path is not None and (v.path == folder or v.path.startswith(folder + "/")) for v in violations
        ):
            violations.append(
                Violation(
                    ROW,
                    f"the tree of locked {folder}/ changed ({ids['baseline']} → "
                    f"{ids['head']}) but the diff did not show how; {FIX_LOCKED}",
                    folder,
                )
            )
    if len(violations) > MAX_VIOLATIONS:
        rest = len(violations) - MAX_VIOLATIONS
        violations = [
            *violations[:MAX_VIOLATIONS],
            Violation(ROW, f"and {rest} more locked paths were touched; {FIX_LOCKED}"),
        ]
    receipt: dict[str, Any] = {
        "files": sorted(locked.existing),
        "globs": list(locked.globs),
        "trees": trees,
        "imports": sorted(locked.imports.files),
        "watched": sorted(locked.paths),
    }
    return LaneResult(tuple(violations), receipt)
