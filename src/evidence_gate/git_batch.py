"""Reading objects through a kept-open `git cat-file`: the session, raw tree objects, and what `ls-tree` makes of a
tree entry's mode, with the scrubbed environment and path decoding every git process of the gate shares. `git.Repo`
is the one user (it decides when a session answers and when git itself is asked)."""

from __future__ import annotations

import itertools
import os
import subprocess
import threading
from contextlib import suppress

from evidence_gate.digest import hex_digest

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

TREE_MODE = "040000"
# `--batch`'s own header (type and size): `%(objecttype)` alone reads as present a packed delta whose data is damaged,
# which `--batch` (and `--batch-command`'s `info`) call missing. Answers are given without the size (`without_sizes`).
CHECK_FORMAT = "--batch-check"
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


def object_id(kind: str, data: bytes, length: int) -> str:
    """The id git gives an object of `kind` with these bytes: sha1, or sha256 for a 64-character id."""
    return hex_digest("sha256" if length == 64 else "sha1", f"{kind} {len(data)}\0".encode() + data)


def parse_tree(raw: bytes, oid_len: int = 20) -> list[tuple[bytes, bytes, bytes]] | None:
    """(mode, name, object id) of each entry of a raw tree object (ids of `oid_len` bytes); None when unparsable."""
    entries = []
    pos = 0
    while pos < len(raw):
        space = raw.find(b" ", pos)
        nul = raw.find(b"\0", space + 1) if space >= 0 else -1
        if nul < 0 or nul + 1 + oid_len > len(raw):
            return None
        entries.append((raw[pos:space], raw[space + 1 : nul], raw[nul + 1 : nul + 1 + oid_len]))
        pos = nul + 1 + oid_len
    return entries


def well_formed(entries: list[tuple[bytes, bytes, bytes]]) -> bool:
    """Whether a parsed tree is one `git add` could write: octal modes, plain unique names in git's order."""
    keys = []
    for mode, name, _oid in entries:
        if not mode or mode.strip(b"01234567") or not name or name in (b".", b"..") or b"/" in name:
            return False
        keys.append(name + b"/" if ls_tree_mode(mode)[1] == "tree" else name)
    names = [name for _mode, name, _oid in entries]
    return len(set(names)) == len(names) and all(a < b for a, b in itertools.pairwise(keys))


def ls_tree_mode(raw: bytes) -> tuple[str, str]:
    """The mode and type `ls-tree` prints for a tree entry's raw mode (git's `canon_mode`: any other mode is a
    gitlink, a file is 644 or 755 by its owner's execute bit)."""
    mode = int(raw, 8)
    kind = mode & 0o170000
    if kind == 0o100000:
        return ("100755" if mode & 0o100 else "100644"), "blob"
    if kind == 0o120000:
        return "120000", "blob"
    if kind == 0o040000:
        return TREE_MODE, "tree"
    return "160000", "commit"


def listed(session: BatchSession, commit: str, paths: tuple[str, ...]) -> list[tuple[str, str, str, str]] | None:
    """What `ls-tree --full-tree COMMIT -- PATHS` prints (mode, type, id, path), walking the tree objects as it does
    but through the open session: None (ask `ls-tree` itself) for a path that is not plain (`.`, `..`, empty parts,
    a slash at an end, one path inside another), or when a tree on the way is not readable here or not one `git add`
    could write."""
    plain = [p.split("/") for p in paths]
    if not plain or len(set(paths)) < len(paths) or any(p.startswith(q + "/") for p in paths for q in paths):
        return None
    if any(not all(part not in ("", ".", "..") for part in parts) or "\n" in "".join(parts) for parts in plain):
        return None
    trees: dict[str, dict[bytes, tuple[bytes, bytes]]] = {}
    found = []
    for parts in plain:
        folder, name = "", f"{commit}^{{tree}}"
        for n, part in enumerate(parts):
            if folder not in trees:
                tree = read_tree(session, name)
                if tree is None:
                    return None
                trees[folder] = tree
            entry = trees[folder].get(part.encode("utf-8", "surrogateescape"))
            if entry is None or (n < len(parts) - 1 and ls_tree_mode(entry[0])[1] != "tree"):
                break  # absent: ls-tree does not descend into a file, a link or a gitlink either
            if n == len(parts) - 1:
                found.append((*ls_tree_mode(entry[0]), entry[1].hex(), "/".join(parts)))
            folder, name = "/".join(parts[: n + 1]), entry[1].hex()
    return sorted(found, key=_walk_order)


def _walk_order(row: tuple[str, str, str, str]) -> list[bytes]:
    """The order `ls-tree` walks entries in: by path part, a folder's name compared as if it ended in '/'."""
    parts = [p.encode("utf-8", "surrogateescape") + b"/" for p in row[3].split("/")]
    if row[1] != "tree":
        parts[-1] = parts[-1][:-1]
    return parts


def read_tree(session: BatchSession, name: str) -> dict[bytes, tuple[bytes, bytes]] | None:
    """The entries (name -> raw mode, raw id) of the tree `name` read through the open batch, or None unless it
    is a tree here whose bytes hash to its id, with octal modes and plain unique names in git's order."""
    data = session.ask(name.encode() + b"\n", 1)
    header, _, body = data.partition(b"\n")
    oid, _, rest = header.decode("utf-8", "surrogateescape").partition(" ")
    type_, _, size = rest.partition(" ")
    body = body[:-1]
    if type_ != "tree" or size != str(len(body)) or object_id("tree", body, len(oid)) != oid:
        return None
    entries = parse_tree(body, len(oid) // 2)
    if entries is None or not well_formed(entries):
        return None
    return {entry_name: (mode, raw_id) for mode, entry_name, raw_id in entries}


class SessionDied(Exception):
    """The kept-open `cat-file --batch` ended before answering; carries what it printed on stderr."""

    def __init__(self, stderr: bytes) -> None:
        super().__init__("git cat-file --batch ended")
        self.stderr = stderr


class _CatFile:
    """One kept-open `git cat-file MODE`, its stderr drained as it comes (git flushes after each answer)."""

    def __init__(self, cwd: Path, env: dict[str, str], mode: str) -> None:
        cmd = ["git", "-c", "core.quotepath=off", "-c", "safe.directory=*", "cat-file", mode]
        self.proc = subprocess.Popen(
            cmd,
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        if self.proc.stdin is None or self.proc.stdout is None or self.proc.stderr is None:
            raise OSError("git cat-file started without its pipes")
        self._in, self._out, self._err = self.proc.stdin, self.proc.stdout, self.proc.stderr
        self._stderr: list[bytes] = []
        # Drained as it comes, so git can never block on a full stderr pipe while the gate waits for its stdout.
        self._drain = threading.Thread(target=self._read_stderr, daemon=True)
        self._drain.start()

    def _read_stderr(self) -> None:
        self._stderr.append(self._err.read())

    def exchange(self, stdin: bytes, count: int, *, bodies: bool) -> bytes:
        """The `count` answers to `stdin`: header lines, each followed by the object and a newline when `bodies`."""
        out = self._out
        try:
            self._in.write(stdin)  # small: fits the pipe whole, so writing first cannot deadlock
            self._in.flush()
        except BrokenPipeError:
            raise self._died() from None
        chunks: list[bytes] = []
        for _ in range(count):
            header = out.readline()
            if not header.endswith(b"\n"):
                raise self._died()
            chunks.append(header)
            if not bodies or header.endswith((b" missing\n", b" ambiguous\n")):
                continue
            size = int(header.rsplit(b" ", 1)[1])
            body = out.read(size + 1)  # the object and its trailing newline
            if len(body) != size + 1:
                raise self._died()
            chunks.append(body)
        return b"".join(chunks)

    def _died(self) -> SessionDied:
        self.close()
        return SessionDied(b"".join(self._stderr))

    def close(self) -> None:
        """End the process (EOF on its input) and collect it, with all it printed on stderr."""
        if not self._in.closed:
            with suppress(BrokenPipeError):
                self._in.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain.join(timeout=5)
        self._out.close()
        if not self._drain.is_alive():  # a process git left holding stderr keeps the thread reading it
            self._err.close()


class BatchSession:
    """Object reads through kept-open `git cat-file`: one `--batch-command` process answering contents and types
    alike (git 2.36+); on an older git, which refuses that option, a `--batch` and a `--batch-check` process, each
    started on its first question. Each answer is exactly what a one-off `cat-file --batch` (`ask`) or
    `--batch-check=%(objectname) %(objecttype)` (`info`) prints for the same names."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self._cwd, self._env = cwd, env
        self._commands: _CatFile | None = _CatFile(cwd, env, "--batch-command")
        self._older: dict[str, _CatFile] = {}  # by mode, on a git without --batch-command

    @property
    def proc(self) -> subprocess.Popen[bytes]:
        """The git process that answered contents."""
        return self._commands.proc if self._commands is not None else self._older["--batch"].proc

    def ask(self, stdin: bytes, count: int) -> bytes:
        """`cat-file --batch`'s answers to `count` names (`stdin`, one a line)."""
        return self._exchange(stdin, count, info=False)

    def info(self, stdin: bytes, count: int) -> bytes:
        """`cat-file --batch-check=%(objectname) %(objecttype)`'s answers to `count` names."""
        return self._exchange(stdin, count, info=True)

    def _exchange(self, stdin: bytes, count: int, *, info: bool) -> bytes:
        if self._commands is not None:
            verb = b"info " if info else b"contents "
            names = stdin.split(b"\n")[:-1]  # not splitlines: a name may hold a carriage return
            try:
                out = self._commands.exchange(b"".join(verb + n + b"\n" for n in names), count, bodies=not info)
            except SessionDied as died:
                if b"batch-command" not in died.stderr:  # git 2.35 and older: "unknown option `batch-command'"
                    raise
                self._commands = None
            else:
                return without_sizes(out) if info else out
        out = self._cat_file(CHECK_FORMAT if info else "--batch").exchange(stdin, count, bodies=not info)
        return without_sizes(out) if info else out

    def _cat_file(self, mode: str) -> _CatFile:
        if mode not in self._older:
            try:
                self._older[mode] = _CatFile(self._cwd, self._env, mode)
            except OSError as exc:  # as if it had ended: the caller's own process says why
                raise SessionDied(str(exc).encode()) from None
        return self._older[mode]

    def close(self) -> None:
        """End every process of the session."""
        for process in (self._commands, *self._older.values()):
            if process is not None:
                process.close()


def without_sizes(headers: bytes) -> bytes:
    """`ID TYPE SIZE` header lines as `ID TYPE`, what `Repo` asks of `info` (`NAME missing` and `NAME ambiguous` as
    they are)."""
    lines = headers.split(b"\n")[:-1]
    return b"".join(
        (line if line.endswith((b" missing", b" ambiguous")) else line.rsplit(b" ", 1)[0]) + b"\n" for line in lines
    )
