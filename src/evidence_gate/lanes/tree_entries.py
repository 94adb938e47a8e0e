"""Tree entries git refuses to check out: `.`, `..`, empty names, names with `/` or NUL, duplicates, bad order.

`git mktree` and raw tree objects can hold them; `ls-tree -r` then prints paths such as `src/../X` that climb out
of their folder or stand for a locked path under another spelling. Every tree the patch adds or changes (the head's
root included) is read raw and checked entry by entry, so the cost follows the size of the change.
"""

from __future__ import annotations

from evidence_gate.git import Repo
from evidence_gate.git_batch import decode_path, parse_tree
from evidence_gate.lanes.locked_paths import display_path
from evidence_gate.records import dataclass

FIX = (
    "rebuild the commit from a normal checkout (`git add` never records such entries); git refuses to check it "
    "out and tools disagree on what it contains"
)
TREE_MODE = b"40000"


@dataclass(frozen=True)
class BadEntry:
    """One refused entry: the folder it is in, its raw name and what is wrong with it."""

    folder: str
    name: bytes
    problem: str

    def path(self) -> str:
        """The entry's path as text, hostile characters spelled out."""
        name = decode_path(self.name)
        return display_path(f"{self.folder}/{name}" if self.folder else name)


def name_problem(name: bytes) -> str | None:
    """Why git refuses a tree entry with this name, or None when it is an ordinary name."""
    if name == b"":
        return "its name is empty"
    if name in {b".", b".."}:
        return f"it is named {name.decode()!r}, which climbs out of (or stands for) its folder"
    if b"/" in name:
        return "its name contains '/', so it poses as a path in another folder"
    if b"\0" in name:
        return "its name contains a NUL byte"
    return None


def _sort_key(name: bytes, mode: bytes) -> bytes:
    # git orders a tree's entries by name, a subtree compared as if its name ended in '/'.
    return name + b"/" if mode == TREE_MODE else name


def check_tree(folder: str, raw: bytes, oid_len: int = 20) -> list[BadEntry]:
    """Every refused entry of one raw tree object (unparsable trees are one refused entry)."""
    entries = parse_tree(raw, oid_len)
    if entries is None:
        return [BadEntry(folder, b"", "the tree object does not parse")]
    bad = []
    seen: set[bytes] = set()
    previous: bytes | None = None
    for mode, name, _oid in entries:
        problem = name_problem(name)
        if problem is None and name in seen:
            problem = "another entry of its folder has the same name"
        key = _sort_key(name, mode)
        if problem is None and previous is not None and key < previous:
            problem = "its folder's entries are not in git's order, so diffs can miss entries"
        if problem is not None:
            bad.append(BadEntry(folder, name, problem))
        seen.add(name)
        previous = key
    return bad


def refused_entries(repo: Repo, baseline: str, head: str) -> list[BadEntry]:
    """Refused entries in every tree the head adds or changes against the baseline (the root tree included)."""
    trees = {"": repo.root_tree(head)}
    for oid, path in repo.changed_trees(baseline, head):
        trees.setdefault(path, oid)
    raw = repo.read_objects(trees.values(), "tree")
    oid_len = len(head) // 2  # sha1 or sha256 repository
    bad = []
    for folder, oid in sorted(trees.items()):
        data = raw.get(oid)
        if data is None:
            bad.append(BadEntry(folder, b"", "the tree object is missing"))
            continue
        bad += check_tree(folder, data, oid_len)
    return bad


__all__ = ["FIX", "BadEntry", "check_tree", "name_problem", "parse_tree", "refused_entries"]
