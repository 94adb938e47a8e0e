"""Every object read tells "absent from the tree" from "named by the tree but unreadable": the second is always
`history-missing` naming the object, never a lane's row (a deleted ledger, a new id, a clean diff)."""

from __future__ import annotations

import gc
import os
import shutil
import warnings
import zlib
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import gate
from evidence_gate.errors import GateError
from evidence_gate.git import Repo
from support import scenario_repo
from support.repo_builder import GitRepo

TODAY = date(2026, 9, 20)
# The patch drops the one entry and adds a comment, so baseline and head hold different ledger blobs.
SHRUNK_LEDGER = "version: 1\nbudget: {max_entries: 12, max_bytes: 4096, max_ttl_days: 14}\nentries: []\n"


def _pr(tmp_path: Path, files: dict[str, Any] | None = None) -> GitRepo:
    recipe = {"patch": {"files": files or {"freeze.yaml": SHRUNK_LEDGER, "src/alloc.py": "X = 1\n"}}}
    return scenario_repo.build(recipe, tmp_path / "repo")


def _loose(repo: GitRepo, oid: str) -> Path:
    path = repo.path / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.exists(), f"{oid} is not a loose object"
    path.chmod(0o644)
    return path


def _gate(repo: GitRepo, tmp_path: Path) -> dict[str, Any]:
    receipt, code = gate.evaluate(gate.CheckOptions(repo=repo.path, today=TODAY, run=False), tmp_path / "r.json")
    assert code == 11, receipt
    return receipt


def _only_history_missing(receipt: dict[str, Any], *needles: str) -> str:
    assert receipt["decision"]["row"] == "history-missing", receipt["violations"]
    (violation,) = receipt["violations"]
    assert violation["row"] == "history-missing"
    for needle in needles:
        assert needle in violation["message"], violation["message"]
    assert "git fsck" in violation["message"] and "fetch-depth: 0" in violation["message"]
    return str(violation["message"])


def test_deleted_baseline_ledger_blob_is_history_missing_not_new_ids(tmp_path: Path) -> None:
    """The baseline ledger's blob gone from the clone: not `freeze-id-added` (old entries called new)."""
    repo = _pr(tmp_path)
    oid = repo.git("rev-parse", "HEAD^1:freeze.yaml")
    _loose(repo, oid).unlink()
    _only_history_missing(_gate(repo, tmp_path), oid, "freeze.yaml")


def test_corrupt_head_ledger_blob_is_history_missing_not_a_deleted_ledger(tmp_path: Path) -> None:
    """The head ledger's loose object overwritten with garbage: not "the patch deletes the ledger file"."""
    repo = _pr(tmp_path)
    oid = repo.git("rev-parse", "HEAD^2:freeze.yaml")
    _loose(repo, oid).write_bytes(b"not zlib at all")
    message = _only_history_missing(_gate(repo, tmp_path), oid)
    assert "deletes" not in message


def test_blob_whose_bytes_do_not_hash_to_its_id_is_history_missing(tmp_path: Path) -> None:
    """A well-formed object holding other bytes than its id says (a silent bit flip) is caught by hashing."""
    repo = _pr(tmp_path)
    oid = repo.git("rev-parse", "HEAD^2:freeze.yaml")
    forged = SHRUNK_LEDGER.replace("[]", "[ ]").encode()
    _loose(repo, oid).write_bytes(zlib.compress(b"blob %d\0" % len(forged) + forged))
    _only_history_missing(_gate(repo, tmp_path), oid, "corrupt")


def test_missing_folder_tree_is_history_missing_not_a_clean_diff(tmp_path: Path) -> None:
    """git's diff skips a changed folder whose tree is absent; the gate must not see an empty change there."""
    repo = _pr(tmp_path, {"fixtures/golden.json": '{"rewritten": true}\n'})
    oid = repo.git("rev-parse", "HEAD^1:fixtures")
    _loose(repo, oid).unlink()
    assert "hint:" not in _only_history_missing(_gate(repo, tmp_path), oid)


def test_missing_subtree_on_a_read_path_is_history_missing(tmp_path: Path) -> None:
    """A trusted path below a folder whose tree object is gone is unreadable, not absent."""
    repo = _pr(tmp_path)
    tree = repo.git("rev-parse", "HEAD^1:properties")
    _loose(repo, tree).unlink()
    reader = Repo(repo.path)
    with pytest.raises(GateError) as info:
        reader.read_blob(repo.git("rev-parse", "HEAD^1"), "properties/test_alloc_properties.py")
    assert info.value.row == "history-missing"
    assert tree in str(info.value)


def test_absent_paths_and_gitlinks_still_read_as_absent(tmp_path: Path) -> None:
    """No false alarm: a path not in the tree is None, a gitlink (its commit lives elsewhere) is not a blob."""
    gitlink = "1" * 40
    repo = _pr(tmp_path)
    repo.git("update-index", "--add", "--cacheinfo", f"160000,{gitlink},vendor/lib")
    repo.git("commit", "-q", "-m", "add a submodule")
    reader = Repo(repo.path)
    head = repo.git("rev-parse", "HEAD")
    got = reader.read_blobs([f"{head}:no/such/file", f"{head}:vendor/lib", f"{head}:src", f"{head}:freeze.yaml"])
    assert got[f"{head}:no/such/file"] is None and got[f"{head}:vendor/lib"] is None and got[f"{head}:src"] is None
    assert got[f"{head}:freeze.yaml"] == SHRUNK_LEDGER.encode()
    ids = reader.object_ids([f"{head}:vendor/lib", f"{head}:nothing", f"{head}:src"])
    src = repo.git("rev-parse", "HEAD:src")
    assert ids == {f"{head}:vendor/lib": None, f"{head}:nothing": None, f"{head}:src": src}
    assert gitlink == repo.git("rev-parse", "HEAD:vendor/lib")
    assert reader.tree_oid(head, "no/such/folder") is None


def test_a_bare_object_id_that_is_gone_is_history_missing(tmp_path: Path) -> None:
    """An id read from a tree (a symlink target, a sealed file) that is not in the clone is never "empty"."""
    repo = _pr(tmp_path)
    with pytest.raises(GateError) as info:
        Repo(repo.path).read_blobs(["2" * 40])
    assert info.value.row == "history-missing"


def test_the_kept_open_batch_answers_as_one_process_per_read(tmp_path: Path) -> None:
    """Inside `batch_session` every read (present, absent, a folder, a gitlink-free mix, one large enough to go to
    a process of its own) returns what the one-off `cat-file --batch` returns, and the session's git is collected."""
    repo = _pr(tmp_path)
    big = [f"HEAD^1:no/such/file{i:05d}" for i in range(2000)]  # over the session's request size
    requests = [["HEAD^1:freeze.yaml", "HEAD^2:freeze.yaml"], ["HEAD^1:absent.txt", "HEAD^1:src"], big, ["HEAD^1:"]]
    alone = [Repo(repo.path).read_blobs(r) for r in requests]
    session = Repo(repo.path)
    with session.batch_session():
        inside = [session.read_blobs(r) for r in requests]
        process = session._session.proc if session._session else None
    assert inside == alone
    assert inside[0]["HEAD^1:freeze.yaml"] != inside[0]["HEAD^2:freeze.yaml"]
    assert process is not None and process.returncode == 0


def test_a_corrupt_object_read_in_the_session_is_history_missing(tmp_path: Path) -> None:
    """A damaged loose object read through the kept-open `cat-file` is `history-missing` naming the object, as
    with a process of its own, and the reads after it still answer."""
    repo = _pr(tmp_path)
    oid = repo.git("rev-parse", "HEAD^2:freeze.yaml")
    _loose(repo, oid).write_bytes(b"not zlib at all")
    reader = Repo(repo.path)
    with reader.batch_session():
        assert reader.read_blobs(["HEAD^1:freeze.yaml"])["HEAD^1:freeze.yaml"]
        with pytest.raises(GateError) as caught:
            reader.read_blobs([oid])
        assert caught.value.row == "history-missing"
        assert oid in str(caught.value)
        assert reader.read_blobs(["HEAD^1:freeze.yaml"])["HEAD^1:freeze.yaml"]


def test_a_session_whose_git_ended_fails_the_read_and_later_reads_go_alone(tmp_path: Path) -> None:
    """When the kept-open git is gone (killed), the read that needed it raises instead of answering "absent", and
    the reads after it run in processes of their own."""
    repo = _pr(tmp_path)
    reader = Repo(repo.path)
    with reader.batch_session():
        assert reader._session is not None
        reader._session.proc.kill()  # the test ends the session's git itself
        reader._session.proc.wait()
        with pytest.raises(GateError):
            reader.read_blobs(["HEAD^1:freeze.yaml"])
        assert reader.read_blobs(["HEAD^1:freeze.yaml"])["HEAD^1:freeze.yaml"]


def test_on_a_git_without_batch_command_the_session_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """git 2.35 and older refuse `cat-file --batch-command` (exit 129): the session then asks a `--batch` and a
    `--batch-check` process, and every read answers as on a newer git (here a `git` on PATH that refuses the
    option the way those versions do, and logs each mode it is started with)."""
    repo = _pr(tmp_path)
    shim, log = tmp_path / "old-git", tmp_path / "modes.log"
    shim.mkdir()
    real = shutil.which("git")
    (shim / "git").write_text(
        "#!/bin/sh\n"
        f'for a in "$@"; do case "$a" in --batch*) echo "$a" >> {log};; esac; done\n'
        'for a in "$@"; do [ "$a" = --batch-command ] && '
        '{ echo "error: unknown option \\`batch-command\'" >&2; exit 129; }; done\n'
        f'exec {real} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    names = ["HEAD^1:freeze.yaml", "HEAD^2:freeze.yaml", "HEAD^1:absent.txt", "HEAD^1:src"]
    newer = Repo(repo.path)
    with newer.batch_session():
        expected = (newer.read_blobs(names), newer.object_ids(names), newer.has_object("1" * 40))
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")
    older = Repo(repo.path)
    with older.batch_session():
        got = (older.read_blobs(names), older.object_ids(names), older.has_object("1" * 40))
        assert older.has_object(repo.git("rev-parse", "HEAD"))
    assert got == expected
    assert log.read_text().splitlines() == ["--batch-command", "--batch", "--batch-check"]


def test_an_ended_session_leaves_no_pipe_open(tmp_path: Path) -> None:
    """Ending the session closes its git's pipes (no `ResourceWarning: unclosed file` when they are collected)."""
    repo = _pr(tmp_path)
    reader = Repo(repo.path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with reader.batch_session():
            assert reader.read_blobs(["HEAD^1:freeze.yaml"])["HEAD^1:freeze.yaml"]
            assert reader.object_ids(["HEAD^1:src"])["HEAD^1:src"]
        gc.collect()
    assert not [w for w in caught if issubclass(w.category, ResourceWarning)], [str(w.message) for w in caught]


def _old_git(tmp_path: Path) -> Path:
    """A folder with a `git` that refuses `cat-file --batch-command` as git 2.35 and older do."""
    shim = tmp_path / "old-git"
    shim.mkdir()
    (shim / "git").write_text(
        "#!/bin/sh\n"
        'for a in "$@"; do [ "$a" = --batch-command ] && '
        '{ echo "error: unknown option \\`batch-command\'" >&2; exit 129; }; done\n'
        f'exec {shutil.which("git")} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    return shim


def _damage_packed_delta(repo: GitRepo, oids: set[str]) -> str:
    """Pack everything and flip the first two bytes of the delta data of the one of `oids` packed as a delta (its
    type still reads, from its base; its size and contents do not); that object's id."""
    repo.git("repack", "-adf", "--window=250")
    (idx,) = (repo.path / ".git" / "objects" / "pack").glob("*.idx")
    rows = [line.split() for line in repo.git("verify-pack", "-v", str(idx)).splitlines()]
    ((oid, offset),) = [(row[0], int(row[4])) for row in rows if row[0] in oids and len(row) == 7]
    pack = idx.with_suffix(".pack")
    pack.chmod(0o644)
    data = bytearray(pack.read_bytes())
    pos, byte = offset + 1, data[offset]
    while byte & 0x80:  # the type and size
        byte, pos = data[pos], pos + 1
    if (data[offset] >> 4) & 7 == 7:  # REF_DELTA: the base's id
        pos += len(oid) // 2
    else:  # OFS_DELTA: the base's offset
        byte, pos = data[pos], pos + 1
        while byte & 0x80:
            byte, pos = data[pos], pos + 1
    data[pos] ^= 0xFF
    data[pos + 1] ^= 0xFF
    pack.write_bytes(bytes(data))
    assert repo.git("cat-file", "-t", oid) == "blob"
    return oid


@pytest.mark.parametrize("git", ["newer", "older"])
def test_a_damaged_packed_delta_ledger_is_history_missing_not_a_deleted_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, git: str
) -> None:
    """A packed delta whose data is damaged has a type (its base's) but no size: `--batch` says missing, and so
    must every presence check, on a git with `--batch-command` or without it, in a session or not."""
    repo = _pr(tmp_path)
    oid = _damage_packed_delta(repo, {repo.git("rev-parse", f"HEAD^{n}:freeze.yaml") for n in (1, 2)})
    if git == "older":
        monkeypatch.setenv("PATH", f"{_old_git(tmp_path)}:{os.environ['PATH']}")
    message = _only_history_missing(_gate(repo, tmp_path), oid)
    assert "deletes" not in message
    assert not Repo(repo.path).has_object(oid)


def _raw_tree(repo: GitRepo, entries: list[tuple[str, str, str]]) -> str:
    """A tree object of (mode, name, id) entries written byte for byte as given (no sorting, no checks)."""
    raw = b"".join(f"{mode} {name}".encode() + b"\0" + bytes.fromhex(oid) for mode, name, oid in entries)
    return repo.git("hash-object", "-t", "tree", "-w", "--literally", "--stdin", input=raw)


def test_listings_inside_the_session_are_what_ls_tree_prints(tmp_path: Path) -> None:
    """`ls_tree` of named paths through the kept-open batch (reading the trees on the way) returns exactly what
    `git ls-tree` prints: files, executables, folders, links, a link or file on the way, a gitlink, absent paths
    and folders, paths it leaves to `ls-tree` itself and malformed trees (out of order, a name twice)."""
    repo = GitRepo(tmp_path / "repo")
    repo.commit("one", {"a.txt": "1\n", "a/b/c.py": "2\n", "a-b/x": "3\n", "run.sh": "4\n"})
    (repo.path / "run.sh").chmod(0o755)
    (repo.path / "link").symlink_to("a")
    good = repo.commit("two", {})
    blob = repo.git("rev-parse", f"{good}:a.txt")
    bad_trees = [
        _raw_tree(repo, [("100644", "z", blob), ("100644", "a", blob)]),
        _raw_tree(repo, [("100644", "a", blob), ("100755", "a", blob)]),
        _raw_tree(repo, [("100664", "a", blob), ("40000", "t", repo.git("rev-parse", f"{good}:a"))]),
    ]
    roots = [
        _raw_tree(repo, [("40000", "bad", tree), ("100644", "ok", blob), ("160000", "sub", "1" * 40)])
        for tree in bad_trees
    ]
    odd = [repo.git("commit-tree", root, "-m", "odd") for root in roots]
    asks = [
        (good, ("a.txt",)),
        (good, ("run.sh", "a.txt", "a-b", "a/b/c.py", "nope", "no/such/folder")),
        (good, ("link", "a.txt/x", "a/b")),
        (good, ("link/b", "a.txt/x/y")),
        (good, ("a", "a/b")),
        (good, ("./a.txt", "a//b", "a/")),
        (odd[-1], ("sub/x",)),
        *((commit, ("ok", "bad/a", "bad/z", "bad/t", "sub")) for commit in odd),
    ]
    alone = [Repo(repo.path).ls_tree(commit, paths) for commit, paths in asks]
    session = Repo(repo.path)
    ran: list[tuple[str, ...]] = []
    original = Repo.run

    def counting(self: Repo, *args: str, stdin: bytes | None = None, check: bool = True) -> Any:
        ran.append(args)
        return original(self, *args, stdin=stdin, check=check)

    with pytest.MonkeyPatch.context() as patch, session.batch_session():
        patch.setattr(Repo, "run", counting)
        inside = [session.ls_tree(commit, paths) for commit, paths in asks]
    assert inside == alone
    # ls-tree itself only for the nested paths, the unplain ones and the two malformed trees
    assert len([a for a in ran if "ls-tree" in a]) == 4, [a[4:] for a in ran]
    assert [(e.mode, e.type, e.path) for e in alone[1]] == [
        ("040000", "tree", "a-b"),
        ("100644", "blob", "a.txt"),
        ("100644", "blob", "a/b/c.py"),
        ("100755", "blob", "run.sh"),
    ]
    assert [(e.mode, e.type) for e in alone[2]] == [("040000", "tree"), ("120000", "blob")]
    assert [(e.mode, e.type, e.path) for e in alone[-1]] == [
        ("100644", "blob", "bad/a"),
        ("040000", "tree", "bad/t"),
        ("100644", "blob", "ok"),
        ("160000", "commit", "sub"),
    ]
