"""All git plumbing the gate uses: argument lists, NUL-separated output and a scrubbed environment.

Paths come back as `str` decoded with `surrogateescape`, so a path that is not valid UTF-8 survives the round
trip and can be recognised (it contains lone surrogates) instead of being silently replaced.
"""

from __future__ import annotations

import os
import re
import subprocess
from contextlib import contextmanager, suppress
from pathlib import Path

from evidence_gate.errors import GateError
from evidence_gate.git_batch import (
    CHECK_FORMAT,
    TREE_MODE,
    BatchSession,
    SessionDied,
    decode_path,
    encode_path,
    listed,
    object_id,
    scrubbed_env,
    without_sizes,
)
from evidence_gate.git_trouble import FSCK_FIX, failure, unreadable_checkout
from evidence_gate.records import dataclass
from evidence_gate.row_ids import HISTORY_MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

NULL_OID = "0" * 40
# A request small enough to write whole before reading (well under a pipe's buffer) goes to the kept-open batch:
# its names with `contents ` (9 bytes, `info ` 5) before each, as `--batch-command` is written.
_SESSION_MAX_REQUEST = 16 * 1024
FULL_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")  # a whole commit id, sha1 or sha256
_TOPLEVEL = ("rev-parse", "--show-toplevel")
_AMBIGUOUS = "core.warnAmbiguousRefs=true"  # git then warns of a name that is both a ref and a short id
_RESOLVE = ("-c", _AMBIGUOUS, "rev-parse", "--verify", "--end-of-options")  # `resolve`: one revision only


_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


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


def _session_size(stdin: bytes, count: int) -> bool:
    """Whether `count` names (`stdin`) fit a request to the kept-open batch (see _SESSION_MAX_REQUEST)."""
    return len(stdin) + 9 * count <= _SESSION_MAX_REQUEST


def _full_id(line: bytes) -> bool:
    """Whether a line of git's output is a whole object id and nothing else."""
    return FULL_ID.fullmatch(line.decode("latin-1")) is not None


class Repo:
    """A git repository the gate reads by object id, never through its working tree.

    With `pin_revisions`, the work tree root, what each revision name resolves to, and the parents, merge-bases and
    presence of commits are asked of git once and remembered: one judgement (`contexts.evaluate`'s plan, then each
    receipt) sees one commit per name even if a ref moves meanwhile, and does not start those git processes again.
    """

    def __init__(self, path: Path | str, *, pin_revisions: bool = False) -> None:
        self.path = Path(path)
        self._env: dict[str, str] | None = None
        self._pinned: dict[tuple[str, ...], subprocess.CompletedProcess[bytes]] | None = {} if pin_revisions else None
        # What a commit named by its full id holds never changes: its listings and object ids are asked once.
        self._listings: dict[tuple[str, tuple[str, ...], bool], tuple[TreeEntry, ...]] = {}
        self._ids: dict[str, str | None] = {}
        self._diffs: dict[tuple[str, str], tuple[DiffEntry, ...]] = {}
        self._session: BatchSession | None = None

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run `git ARGS` in the repository and return the completed process."""
        cmd = ["git", "-c", "core.quotepath=off", "-c", "safe.directory=*", *args]
        try:
            if self._env is None:  # read once per repository: 30-odd git calls a run
                self._env = scrubbed_env()
            proc = subprocess.run(cmd, cwd=self.path, input=stdin, capture_output=True, env=self._env, check=False)
        except (FileNotFoundError, NotADirectoryError) as exc:  # also raised for a missing working folder
            if not self.path.is_dir():
                raise GateError(
                    f"{self.path} is not a folder",
                    usage=True,
                    fix="pass --repo pointing at a checkout of the pull request",
                ) from exc
            raise GateError("git is not installed or not on PATH", fix="install git 2.30 or newer") from exc
        except PermissionError as exc:  # the working folder itself cannot be entered
            raise unreadable_checkout(self.path, exc.strerror or "permission denied") from exc
        if check and proc.returncode != 0:
            raise self._failure(args, proc.stderr)
        return proc

    def _ask(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """`run` for the questions a pinned repository answers once (see the class); the same as `run` otherwise."""
        if self._pinned is None:
            return self.run(*args, check=check)
        proc = self._pinned.get(args)
        if proc is None:
            proc = self._pinned[args] = self.run(*args, check=False)
        if check and proc.returncode != 0:
            raise self._failure(args, proc.stderr)
        return proc

    def _failure(self, args: Sequence[str], raw_stderr: bytes) -> GateError:
        """The error for a git command that failed, from what it printed."""
        return failure(self.path, args, raw_stderr)

    @contextmanager
    def batch_session(self) -> Iterator[None]:
        """Within the block, small object reads go to one `git cat-file --batch` kept open: a run asks for a few
        objects at a time, a dozen times, and each new git process costs more CPU than the reading."""
        if self._session is not None:
            yield
            return
        self.start_batch_session()
        try:
            yield
        finally:
            self.end_batch_session()

    def start_batch_session(self) -> None:
        """Open the kept-open `cat-file --batch` until `end_batch_session` (a `batch_session` block inside uses it
        and leaves it open); nothing when one is open."""
        if self._session is None:
            with suppress(OSError):  # reads then go one process each, which report the trouble in their own words
                self._session = BatchSession(self.path, self._env or scrubbed_env())

    def end_batch_session(self) -> None:
        """End the kept-open processes now (an enclosing `batch_session` block then has nothing left to end)."""
        if self._session is not None:  # None when its git ended early (the read that saw it raised)
            self._session.close()
        self._session = None

    def _cat_file_batch(self, stdin: bytes, count: int) -> bytes:
        """`git cat-file --batch`'s output for `count` names (`stdin`, one a line): from the open session when the
        request is small, else from a process of its own."""
        if self._session is not None and _session_size(stdin, count):
            try:
                return self._session.ask(stdin, count)
            except SessionDied as died:
                self._session = None
                raise self._failure(("cat-file", "--batch"), died.stderr) from None
        return self.run("cat-file", "--batch", stdin=stdin).stdout

    def _batch_check(self, stdin: bytes, count: int) -> bytes:
        """`git cat-file --batch-check=%(objectname) %(objecttype)`'s output for `count` names, from the open session
        when the request is small, else from a process of its own."""
        if self._session is not None and _session_size(stdin, count):
            try:
                return self._session.info(stdin, count)
            except SessionDied as died:
                self._session = None
                raise self._failure(("cat-file", CHECK_FORMAT), died.stderr) from None
        return without_sizes(self.run("cat-file", CHECK_FORMAT, stdin=stdin).stdout)

    def _checked(self, name: str) -> bytes | None:
        """The kept-open `--batch-check` line for `name` (`ID TYPE`, or ending in ` missing`), or None outside a
        batch session, for a name it cannot take, or when its git ended (the process the caller then starts says
        why in its own words)."""
        if self._session is None or "\n" in name:
            return None
        try:
            return self._batch_check(encode_path(name) + b"\n", 1).rstrip(b"\n")
        except GateError:
            return None

    def out(self, *args: str) -> str:
        """Stdout of `git ARGS`, stripped."""
        return self.run(*args).stdout.decode("utf-8", "surrogateescape").strip()

    def toplevel(self) -> Path:
        """The work tree root; raises when `path` is not in a repository."""
        proc = self._ask(*_TOPLEVEL, check=False)
        if proc.returncode != 0:
            # git says "not a git repository" also when it may not read the `.git` that is there.
            for folder in (self.path, *self.path.absolute().parents):
                dot_git = folder / ".git"
                mode = os.R_OK | (os.X_OK if dot_git.is_dir() else 0)
                if dot_git.exists() and not os.access(dot_git, mode):
                    raise unreadable_checkout(dot_git, "no read access to it")
            raise GateError(
                f"{self.path} is not a git repository",
                fix="pass --repo pointing at a checkout of the pull request",
                usage=True,
            )
        return Path(proc.stdout.decode().strip())

    def ask_revisions(self, names: Iterable[str], merge_base_of: tuple[str, str] | None = None) -> None:
        """Pinned: the root, the commits `names` resolve to, and with `merge_base_of` (two names) their merge-base
        from one `rev-parse` (not one process each: `A...B` prints both ids and `^` before each merge-base), kept
        only when git answers plainly (exit 0, only hints on stderr, a full id a name, one merge-base); else
        `toplevel`, `resolve` and `merge_base` ask."""
        if self._pinned is None:
            return
        # A name like an option (rev-parse passes those through, `--end-of-options` too) is left to `resolve`.
        specs = [f"{n}^{{commit}}" for n in dict.fromkeys(names) if not (FULL_ID.fullmatch(n) or n.startswith("-"))]
        plain = merge_base_of and not any(n.startswith("-") or ".." in n for n in (*merge_base_of, *specs))
        pair = ["{}^{{commit}}...{}^{{commit}}".format(*merge_base_of)] if merge_base_of and plain else []
        try:
            proc = self.run("-c", _AMBIGUOUS, *_TOPLEVEL, *specs, *pair, check=False)
        except GateError:
            return  # `toplevel` raises it again, in its own words
        said = [line for line in proc.stderr.splitlines() if not line.startswith(b"hint:")]  # hints: a graft file
        # The root, an id a name, the pair's two ids (HEAD's, then BASE's), a `^` line a merge-base, and the empty
        # rest after the last newline. Only merge-base lines may start with `^`: a name's `^ID` (a name like
        # `^main`) is no commit, and a root holding a newline shifts the pair's ids into the merge-base lines.
        lines = proc.stdout.split(b"\n")
        named, ends = lines[1 : len(specs) + 1], lines[len(specs) + 1 : len(specs) + 1 + 2 * len(pair)]
        bases = lines[len(specs) + 1 + 2 * len(pair) : -1]
        if proc.returncode or said or len(named) + len(ends) != len(specs) + 2 * len(pair) or (bases and not pair):
            return
        if lines[0] == b"" or lines[-1] != b"" or not all(_full_id(oid) for oid in (*named, *ends)):
            return
        if not all(b.startswith(b"^") and _full_id(b[1:]) for b in bases):
            return
        ids = dict(zip(specs, named, strict=True))
        pair_names = merge_base_of[::-1] if merge_base_of and pair else ()  # `BASE...HEAD` prints HEAD's id first
        if any(ids.get(f"{n}^{{commit}}", end) != end for n, end in zip(pair_names, ends, strict=True)):
            return
        self._pinned[_TOPLEVEL] = subprocess.CompletedProcess(_TOPLEVEL, 0, lines[0] + b"\n", b"")
        for spec, oid in ids.items():
            self._pinned[(*_RESOLVE, spec)] = subprocess.CompletedProcess((*_RESOLVE, spec), 0, oid + b"\n", b"")
        if len(bases) == 1:  # several: `merge-base` itself picks the best
            for a, b in (ends, ends[::-1]):
                key = ("merge-base", a.decode(), b.decode())
                self._pinned[key] = subprocess.CompletedProcess(key, 0, bases[0][1:] + b"\n", b"")

    def resolve(self, rev: str) -> str | None:
        """The commit id `rev` names, or None when it is not present in this clone."""
        if FULL_ID.fullmatch(rev):  # an id names the same commit however it is asked: the open batch answers
            line = self._checked(f"{rev}^{{commit}}")
            if line is not None:
                oid, _, type_ = line.decode().partition(" ")
                return oid if type_ == "commit" else None
        proc = self._ask(*_RESOLVE, f"{rev}^{{commit}}", check=False)
        full_id = len(rev) in (40, 64) and all(c in "0123456789abcdef" for c in rev)  # git reads these as ids
        if b"is ambiguous" in proc.stderr and not full_id:  # git would quietly prefer a ref named like a short id
            raise GateError(
                f"the revision {rev!r} is ambiguous: it names both a ref and an abbreviated commit id",
                fix="pass the full 40-character commit id or a full ref name (refs/heads/...)",
                usage=True,
            )
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def has_object(self, oid: str) -> bool:
        """Whether the object is present and its header readable (`-e` would accept a damaged loose file)."""
        line = self._checked(oid)  # `--batch-check` reads the header as `--batch` does: missing where it fails
        if line is not None:
            return not line.endswith((b" missing", b" ambiguous"))
        # `-s`, not `-t`: a packed delta whose data is damaged has a type (its base's) but no size, and `--batch` says
        # missing for it.
        return self._ask("cat-file", "-s", oid, check=False).returncode == 0

    def is_shallow(self) -> bool:
        """Whether this clone has cut-off history."""
        return self.out("rev-parse", "--is-shallow-repository") == "true"

    def parents(self, commit: str) -> list[str]:
        """The parent ids recorded in the commit object, in order.

        Read from the object itself: `rev-list` hides the parents of a shallow clone's boundary commit, which
        would make a merge commit look like a plain one.
        """
        body = self._commit_object(commit)
        if body is None:
            body = self._ask("cat-file", "commit", commit).stdout
        header = body.split(b"\n\n", 1)[0]
        return [line[7:].decode() for line in header.split(b"\n") if line.startswith(b"parent ")]

    def _commit_object(self, commit: str) -> bytes | None:
        """A commit object named by its full id, read (and hashed) through the open batch; None outside a session,
        or when it is not a readable commit there (the caller's own process then says why)."""
        if self._session is None or not FULL_ID.fullmatch(commit):
            return None
        session = self._session
        try:
            data = session.ask(commit.encode() + b"\n", 1)
        except SessionDied:
            self._session = None
            return None
        header, _, body = data.partition(b"\n")
        if (
            header != f"{commit} commit {len(body) - 1}".encode()
            or object_id("commit", body[:-1], len(commit)) != commit
        ):
            return None
        return body[:-1]

    def root_tree(self, commit: str) -> str:
        """The id of `commit`'s root tree (`COMMIT^{tree}`); `history-missing` when it is not in this clone."""
        name = f"{commit}^{{tree}}"
        oid = self.object_ids([name])[name]
        if oid is None:  # object_ids raises first for an id that is absent
            raise GateError(f"the object {name} is not in this clone", fix=FSCK_FIX, row=HISTORY_MISSING)
        return oid

    def merge_base(self, a: str, b: str) -> str | None:
        """The best common ancestor, or None when history does not connect them here."""
        proc = self._ask("merge-base", a, b, check=False)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def tree_oid(self, commit: str, path: str = "") -> str | None:
        """The object id at `commit:path` (a tree, blob or gitlink), or None when absent; see `object_ids`."""
        return self.object_ids([f"{commit}:{path}"])[f"{commit}:{path}"]

    def ls_tree(self, commit: str, paths: Iterable[str] = (), *, recursive: bool = False) -> list[TreeEntry]:
        """Entries of `commit`'s tree, limited to `paths` when given (literal pathspecs)."""
        key = (commit, tuple(paths), recursive)
        if key in self._listings:
            return list(self._listings[key])
        listed = None if recursive else self._listed_from_trees(commit, key[1])
        entries = self._ls_tree(commit, key[1], recursive) if listed is None else listed
        if FULL_ID.fullmatch(commit):
            self._listings[key] = tuple(entries)
        return entries

    def _ls_tree(self, commit: str, paths: tuple[str, ...], recursive: bool) -> list[TreeEntry]:
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

    def _listed_from_trees(self, commit: str, paths: tuple[str, ...]) -> list[TreeEntry] | None:
        """`git_batch.listed` through the open session: None to ask `ls-tree` itself (also when its git ended)."""
        if self._session is None or not FULL_ID.fullmatch(commit):
            return None
        try:
            rows = listed(self._session, commit, paths)
        except SessionDied:
            self._session = None
            return None
        return None if rows is None else [TreeEntry(*row) for row in rows]

    def diff_tree(self, base: str, head: str) -> list[DiffEntry]:
        """Every changed path between two commits, renames shown as delete plus add.

        git skips, without an error, a changed folder whose tree object is absent, which would hide every change
        below it; `-t` lists the changed folders too, and each must be readable or the diff is `history-missing`.
        """
        entries = self._diff(base, head)
        folders = [e for e in entries if TREE_MODE in (e.old_mode, e.new_mode)]
        self._require_trees(
            {
                oid: e.path
                for e in folders
                for oid, mode in ((e.old_oid, e.old_mode), (e.new_oid, e.new_mode))
                if mode == TREE_MODE and oid != NULL_OID
            }
        )
        return [e for e in entries if TREE_MODE not in (e.old_mode, e.new_mode)]

    def _diff(self, base: str, head: str) -> tuple[DiffEntry, ...]:
        """`git diff-tree -r -t --raw` between two commits, folders included; asked once for two full ids."""
        key = (base, head)
        if key in self._diffs:
            return self._diffs[key]
        raw = self.run(
            "diff-tree", "-r", "-t", "-z", "--no-renames", "--raw", "--no-ext-diff", "--no-textconv", base, head
        ).stdout
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
        if FULL_ID.fullmatch(base) and FULL_ID.fullmatch(head):
            self._diffs[key] = tuple(entries)
        return tuple(entries)

    def changed_lines(self, base: str, head: str, paths: Iterable[str]) -> dict[str, set[int]]:
        """Per path, the head's line numbers the patch added or changed (`diff -U0` hunks), for the files named."""
        wanted = sorted(set(paths))
        if not wanted:
            return {}
        raw = self.run(
            "diff", "-U0", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames", base, head, "--", *wanted
        ).stdout
        out: dict[str, set[int]] = {}
        current = None
        for row in raw.split(b"\n"):
            if row.startswith(b"+++ "):
                name = row[4:]
                current = decode_path(name[2:]) if name.startswith(b"b/") else None
            elif current is not None and row.startswith(b"@@ "):
                found = _HUNK.match(row)
                if found:
                    start, count = int(found.group(1)), int(found.group(2) or 1)
                    out.setdefault(current, set()).update(range(start, start + count))
        return out

    def _require_trees(self, trees: Mapping[str, str]) -> None:
        """Raise `history-missing` naming the first tree (oid -> path) that is not in this clone."""
        if not trees:
            return
        stdin = b"".join(oid.encode() + b"\n" for oid in trees)
        lines = self._batch_check(stdin, len(trees)).splitlines()
        for (oid, path), line in zip(trees.items(), lines, strict=True):
            if not line.endswith(b" tree"):
                raise GateError(
                    f"the tree object {oid} of the folder {path!r} is not in this clone",
                    fix=FSCK_FIX,
                    row=HISTORY_MISSING,
                )

    def changed_trees(self, base: str, head: str) -> list[tuple[str, str]]:
        """(object id, path) of every tree the head adds or changes against the base (`diff-tree -r -t`)."""
        return [(e.new_oid, e.path) for e in self._diff(base, head) if e.new_mode == TREE_MODE]

    def grep_files(self, rev: str, words: Iterable[str], pathspec: str = "*.py") -> list[str]:
        """Paths of `rev`'s files (matching `pathspec`) that contain one of `words` as a whole word."""
        patterns = [arg for w in sorted(set(words)) for arg in ("-e", w)]
        if not patterns:
            return []
        proc = self.run("grep", "-l", "-z", "-F", "-w", "-I", *patterns, rev, "--", pathspec, check=False)
        if proc.returncode not in (0, 1):
            raise GateError(
                f"`git grep` failed: {proc.stderr.decode(errors='replace').strip()}",
                fix="run the gate inside a git checkout of the pull request",
            )
        prefix = f"{rev}:".encode()
        return [decode_path(p.removeprefix(prefix)) for p in proc.stdout.split(b"\0") if p]

    def read_blobs(self, specs: Iterable[str]) -> dict[str, bytes | None]:
        """Contents of many `rev:path` or object ids through one `cat-file --batch`.

        None means *absent*: no such path in the tree, or not a blob there (a folder, a gitlink). An object that is
        named (an id, or a path the tree lists) but cannot be read, or whose bytes do not hash to its id, raises
        `history-missing` naming it: a lane must never read an unreadable ledger as a deleted or a new one.
        """
        return self.read_objects(specs, "blob")

    def read_objects(self, specs: Iterable[str], kind: str) -> dict[str, bytes | None]:
        """Contents of many objects of type `kind` through one `cat-file --batch`; None where absent or of another
        type, and `history-missing` where named but unreadable or corrupt, as `read_blobs` says."""
        keys = list(dict.fromkeys(specs))
        if not keys:
            return {}
        for key in keys:
            if "\n" in key:
                raise GateError(f"cannot read an object named with a newline: {key!r}")
        stdin = b"".join(encode_path(k) + b"\n" for k in keys)
        data = self._cat_file_batch(stdin, len(keys))
        result: dict[str, bytes | None] = {}
        pos = 0
        for key in keys:
            end = data.index(b"\n", pos)
            header = data[pos:end].decode("utf-8", "surrogateescape")
            pos = end + 1
            if header.endswith((" missing", " ambiguous")):
                result[key] = None
                continue
            oid, type_, size = header.rsplit(" ", 2)
            n = int(size)
            result[key] = data[pos : pos + n] if type_ == kind else None
            if type_ == kind and object_id(kind, data[pos : pos + n], len(oid)) != oid:
                raise GateError(
                    f"the {kind} {oid} ({key}) is corrupt: its bytes do not hash to its id",
                    fix=FSCK_FIX,
                    row=HISTORY_MISSING,
                )
            pos += n + 1
        self._absent_or_raise([k for k, v in result.items() if v is None])
        return result

    def _absent_or_raise(self, missing: Iterable[str]) -> None:
        """Raise `history-missing` unless every key (`rev:path` or an id) that came back missing is truly absent.

        A bare id always names an object someone read from a tree, so its absence is missing history. For
        `rev:path` the path's own tree is listed: no entry is absent; a blob or tree entry whose object cat-file
        could not read is missing (a gitlink's commit lives in another repository and is fine); a folder on the
        way that cannot be read fails `ls-tree` itself, which `run` reports as `history-missing`.
        """
        by_rev: dict[str, list[str]] = {}
        for key in missing:
            rev, colon, path = key.partition(":")
            if not colon:
                raise GateError(f"the object {key} is not in this clone", fix=FSCK_FIX, row=HISTORY_MISSING)
            if path:
                by_rev.setdefault(rev, []).append(path)
        for rev, paths in by_rev.items():
            wanted = set(paths)
            for entry in self.ls_tree(rev, paths):
                if entry.path in wanted and entry.type != "commit" and not self.has_object(entry.oid):
                    raise GateError(
                        f"{entry.path} on {rev[:12]} names the {entry.type} {entry.oid}, which is not "
                        "in this clone (or is damaged)",
                        fix=FSCK_FIX,
                        row=HISTORY_MISSING,
                    )

    def object_ids(self, specs: Iterable[str]) -> dict[str, str | None]:
        """The object id each `rev:path` names (tree or blob), None where absent or a gitlink; see `read_blobs`."""
        wanted = list(dict.fromkeys(specs))
        known = {k: self._ids[k] for k in wanted if k in self._ids}
        keys = [k for k in wanted if k not in known]
        if any("\n" in k for k in keys):
            raise GateError(f"cannot look up an object named with a newline: {keys!r}")
        if not keys:
            return known
        stdin = b"".join(encode_path(k) + b"\n" for k in keys)
        lines = self._batch_check(stdin, len(keys)).splitlines()
        ids = {
            k: None if line.endswith((b" missing", b" ambiguous")) else line.split(b" ", 1)[0].decode()
            for k, line in zip(keys, lines, strict=True)
        }
        # None stays "absent" (a gitlink too: its commit lives in another repository); a named object that is gone
        # raises instead.
        self._absent_or_raise([k for k, v in ids.items() if v is None])
        self._ids.update((k, v) for k, v in ids.items() if FULL_ID.fullmatch(k.partition(":")[0]))
        return {k: known[k] if k in known else ids[k] for k in wanted}

    def read_blob(self, commit: str, path: str) -> bytes | None:
        """The bytes of `commit:path` when it is a blob, else None."""
        return self.read_blobs([f"{commit}:{path}"])[f"{commit}:{path}"]

    def fetch(
        self, remote: str, revs: Sequence[str], *, depth: int | None = None, config: Sequence[str] = ()
    ) -> tuple[bool, str]:
        """`git fetch` of exact commits (or refspecs) through the clone's own credentials, plus `-c` settings such as
        an auth header; (ok, git's stderr)."""
        args = [a for setting in config for a in ("-c", setting)]
        args += ["fetch", "--no-tags", "--no-recurse-submodules", "--quiet"]
        if depth is not None:
            args.append(f"--depth={depth}")
        proc = self.run(*args, remote, *revs, check=False)
        return proc.returncode == 0, proc.stderr.decode("utf-8", "replace").strip()

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """Whether `ancestor` is reachable from `descendant` (a commit is its own ancestor)."""
        return self.run("merge-base", "--is-ancestor", ancestor, descendant, check=False).returncode == 0

    def merge_tree(self, base: str, head: str) -> str | None:
        """The tree id of merging `head` into `base` as a clean merge would (git 2.38+), None on a conflict."""
        proc = self.run("merge-tree", "--write-tree", "--no-messages", base, head, check=False)
        first = proc.stdout.decode().split("\n", 1)[0].strip()
        return first if proc.returncode == 0 and first else None
