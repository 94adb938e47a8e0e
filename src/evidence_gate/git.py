"""All git plumbing the gate uses: argument lists, NUL-separated output and a scrubbed environment.

Paths come back as `str` decoded with `surrogateescape`, so a path that is not valid UTF-8 survives the round
trip and can be recognised (it contains lone surrogates) instead of being silently replaced.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from evidence_gate.errors import GateError

NULL_OID = "0" * 40
# GIT_* variables that may legitimately steer how git is found, never what it reads.
_KEPT_GIT_VARS = frozenset({"GIT_EXEC_PATH", "GIT_SSH", "GIT_SSH_COMMAND", "GIT_ASKPASS", "GIT_TERMINAL_PROMPT"})


def scrubbed_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The process environment without GIT_* variables that would redirect git (GIT_DIR, GIT_INDEX_FILE...)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEPT_GIT_VARS}
    env["GIT_TERMINAL_PROMPT"] = "0"
    env["LC_ALL"] = "C"
    # Replace-objects and grafts would let a repository rewrite history under the gate's feet.
    env["GIT_NO_REPLACE_OBJECTS"] = "1"
    env["GIT_GRAFT_FILE"] = os.devnull  # `.git/info/grafts` still rewrites parents; a shallow clone's cut is kept
    if extra:
        env.update(extra)
    return env


def decode_path(raw: bytes) -> str:
    """A git path as text; invalid UTF-8 becomes lone surrogates."""
    return raw.decode("utf-8", "surrogateescape")


def encode_path(path: str) -> bytes:
    """The inverse of `decode_path`."""
    return path.encode("utf-8", "surrogateescape")


@dataclass(frozen=True)
class TreeEntry:
    """One row of `git ls-tree`."""

    mode: str
    type: str
    oid: str
    path: str


@dataclass(frozen=True)
class DiffEntry:
    """One row of `git diff-tree --raw --no-renames`; status is A, D, M or T."""

    old_mode: str
    new_mode: str
    old_oid: str
    new_oid: str
    status: str
    path: str


class Repo:
    """A git repository the gate reads by object id, never through its working tree."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run `git ARGS` in the repository and return the completed process."""
        cmd = ["git", "-c", "core.quotepath=off", "-c", "safe.directory=*", *args]
        try:
            proc = subprocess.run(cmd, cwd=self.path, input=stdin, capture_output=True, env=scrubbed_env(), check=False)
        except (FileNotFoundError, NotADirectoryError) as exc:  # also raised for a missing working folder
            if not self.path.is_dir():
                raise GateError(f"{self.path} is not a folder", usage=True,
                                fix="pass --repo pointing at a checkout of the pull request") from exc
            raise GateError("git is not installed or not on PATH", fix="install git 2.30 or newer") from exc
        if check and proc.returncode != 0:
            raise GateError(
                f"`git {' '.join(args)}` failed in {self.path}: {proc.stderr.decode(errors='replace').strip()}",
                fix="run the gate inside a git checkout of the pull request",
            )
        return proc

    def out(self, *args: str) -> str:
        """Stdout of `git ARGS`, stripped."""
        return self.run(*args).stdout.decode("utf-8", "surrogateescape").strip()

    def toplevel(self) -> Path:
        """The work tree root; raises when `path` is not in a repository."""
        proc = self.run("rev-parse", "--show-toplevel", check=False)
        if proc.returncode != 0:
            raise GateError(
                f"{self.path} is not a git repository",
                fix="pass --repo pointing at a checkout of the pull request",
                usage=True,
            )
        return Path(proc.stdout.decode().strip())

    def resolve(self, rev: str) -> str | None:
        """The commit id `rev` names, or None when it is not present in this clone."""
        proc = self.run("-c", "core.warnAmbiguousRefs=true", "rev-parse", "--verify", "--end-of-options",
                        f"{rev}^{{commit}}", check=False)
        full_id = len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)  # git reads these as ids
        if b"is ambiguous" in proc.stderr and not full_id:  # git would quietly prefer a ref named like a short id
            raise GateError(f"the revision {rev!r} is ambiguous: it names both a ref and an abbreviated commit id",
                            fix="pass the full 40-character commit id or a full ref name (refs/heads/...)", usage=True)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def has_object(self, oid: str) -> bool:
        """Whether the object is present (not merely referenced)."""
        return self.run("cat-file", "-e", oid, check=False).returncode == 0

    def is_shallow(self) -> bool:
        """Whether this clone has cut-off history."""
        return self.out("rev-parse", "--is-shallow-repository") == "true"

    def parents(self, commit: str) -> list[str]:
        """The parent ids recorded in the commit object, in order.

        Read from the object itself: `rev-list` hides the parents of a shallow clone's boundary commit, which
        would make a merge commit look like a plain one.
        """
        header = self.run("cat-file", "commit", commit).stdout.split(b"\n\n", 1)[0]
        return [line[7:].decode() for line in header.split(b"\n") if line.startswith(b"parent ")]

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor, or None when history does not connect them here."""
        proc = self.run("merge-base", a, b, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def tree_oid(self, commit: str, path: str = "") -> str | None:
        """The object id at `commit:path` (a tree, blob or gitlink), or None when absent."""
        proc = self.run("rev-parse", "--verify", "--quiet", f"{commit}:{path}", check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def ls_tree(self, commit: str, paths: Iterable[str] = (), *, recursive: bool = False) -> list[TreeEntry]:
        """Entries of `commit`'s tree, limited to `paths` when given (literal pathspecs)."""
        args = ["--literal-pathspecs", "ls-tree", "-z", "--full-tree"]
        if recursive:
            args.append("-r")
        args += [commit, "--", *paths]
        raw = self.run(*args).stdout
        entries = []
        for rec in raw.split(b"\0"):
            if not rec:
                continue
            meta, _, path = rec.partition(b"\t")
            mode, type_, oid = meta.decode().split()
            entries.append(TreeEntry(mode, type_, oid, decode_path(path)))
        return entries

    def diff_tree(self, base: str, head: str) -> list[DiffEntry]:
        """Every changed path between two commits, renames shown as delete plus add."""
        raw = self.run("diff-tree", "-r", "-z", "--no-renames", "--raw", "--no-ext-diff", "--no-textconv",
                       base, head).stdout
        fields = raw.split(b"\0")
        entries = []
        i = 0
        while i + 1 < len(fields):
            meta = fields[i].decode()
            if not meta.startswith(":"):
                i += 1
                continue
            old_mode, new_mode, old_oid, new_oid, status = meta[1:].split()
            entries.append(DiffEntry(old_mode, new_mode, old_oid, new_oid, status[0], decode_path(fields[i + 1])))
            i += 2
        return entries

    def changed_trees(self, base: str, head: str) -> list[tuple[str, str]]:
        """(object id, path) of every tree the head adds or changes against the base (`diff-tree -r -t`)."""
        raw = self.run("diff-tree", "-r", "-t", "-z", "--no-renames", "--raw", base, head).stdout
        fields = raw.split(b"\0")
        out = []
        for meta, path in zip(fields[::2], fields[1::2], strict=False):
            parts = meta.decode().lstrip(":").split()
            if len(parts) == 5 and parts[1] == "040000":
                out.append((parts[3], decode_path(path)))
        return out

    def grep_files(self, rev: str, words: Iterable[str], pathspec: str = "*.py") -> list[str]:
        """Paths of `rev`'s files (matching `pathspec`) that contain one of `words` as a whole word."""
        patterns = [arg for w in sorted(set(words)) for arg in ("-e", w)]
        if not patterns:
            return []
        proc = self.run("grep", "-l", "-z", "-F", "-w", "-I", *patterns, rev, "--", pathspec, check=False)
        if proc.returncode not in (0, 1):
            raise GateError(f"`git grep` failed: {proc.stderr.decode(errors='replace').strip()}",
                            fix="run the gate inside a git checkout of the pull request")
        prefix = f"{rev}:".encode()
        return [decode_path(p.removeprefix(prefix)) for p in proc.stdout.split(b"\0") if p]

    def read_blobs(self, specs: Iterable[str]) -> dict[str, bytes | None]:
        """Contents of many `rev:path` or object ids through one `cat-file --batch`; None where missing."""
        return self.read_objects(specs, "blob")

    def read_objects(self, specs: Iterable[str], kind: str) -> dict[str, bytes | None]:
        """Contents of many objects of type `kind` through one `cat-file --batch`; None where missing or another
        type."""
        keys = list(dict.fromkeys(specs))
        if not keys:
            return {}
        for key in keys:
            if "\n" in key:
                raise GateError(f"cannot read an object named with a newline: {key!r}")
        stdin = b"".join(encode_path(k) + b"\n" for k in keys)
        data = self.run("cat-file", "--batch", stdin=stdin).stdout
        result: dict[str, bytes | None] = {}
        pos = 0
        for key in keys:
            end = data.index(b"\n", pos)
            header = data[pos:end].decode("utf-8", "surrogateescape")
            pos = end + 1
            if header.endswith((" missing", " ambiguous")):
                result[key] = None
                continue
            _oid, type_, size = header.rsplit(" ", 2)
            n = int(size)
            result[key] = data[pos:pos + n] if type_ == kind else None
            pos += n + 1
        return result

    def object_ids(self, specs: Iterable[str]) -> dict[str, str | None]:
        """The object id each `rev:path` names (any type), None where absent; one `cat-file --batch-check`."""
        keys = list(dict.fromkeys(specs))
        if any("\n" in k for k in keys):
            raise GateError(f"cannot look up an object named with a newline: {keys!r}")
        if not keys:
            return {}
        stdin = b"".join(encode_path(k) + b"\n" for k in keys)
        lines = self.run("cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=stdin).stdout.splitlines()
        return {k: None if line.endswith((b" missing", b" ambiguous")) else line.split(b" ", 1)[0].decode()
                for k, line in zip(keys, lines, strict=True)}

    def read_blob(self, commit: str, path: str) -> bytes | None:
        """The bytes of `commit:path` when it is a blob, else None."""
        return self.read_blobs([f"{commit}:{path}"])[f"{commit}:{path}"]

    def fetch(self, remote: str, revs: Sequence[str], *, depth: int | None = None) -> tuple[bool, str]:
        """`git fetch` of exact commits through the clone's own credentials; (ok, git's stderr)."""
        args = ["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"]
        if depth is not None:
            args.append(f"--depth={depth}")
        proc = self.run(*args, remote, *revs, check=False)
        return proc.returncode == 0, proc.stderr.decode("utf-8", "replace").strip()
