"""Tree entries git refuses to check out are evidence-path-edited; the sealed tree never lands outside its folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from evidence_gate.git import Repo, TreeEntry
from evidence_gate.lanes.tree_entries import check_tree, name_problem
from evidence_gate.sealed import tree as sealed_tree
from support.property_repo import judge, red_repo, rows
from support.repo_builder import GitRepo

BLOB = bytes(20)


def _raw(*entries: tuple[bytes, bytes]) -> bytes:
    return b"".join(mode + b" " + name + b"\0" + BLOB for mode, name in entries)


@pytest.mark.parametrize("name", [b"", b".", b"..", b"a/b", b"../x"])
def test_refused_names(name: bytes) -> None:
    """Empty, `.`, `..` and names holding `/` are refused wherever they occur."""
    assert name_problem(name) is not None
    [bad] = check_tree(
        "src", _raw((b"100644", b"a"), (b"100644", name)) if name > b"a" else _raw((b"100644", name), (b"100644", b"z"))
    )
    assert bad.name == name


def test_duplicates_and_order() -> None:
    """A second entry of the same name, and entries out of git's order, are refused; a normal tree is not."""
    assert check_tree("", _raw((b"100644", b"a"), (b"40000", b"b"), (b"100644", b"c"))) == []
    assert [b.problem for b in check_tree("", _raw((b"100644", b"a"), (b"40000", b"a")))] == [
        "another entry of its folder has the same name"
    ]
    assert "order" in check_tree("", _raw((b"100644", b"b"), (b"100644", b"a")))[0].problem
    # git's order: a subtree sorts as if its name ended in '/', so `a.txt` < `a/` and `a-b` < `a/`.
    assert check_tree("", _raw((b"100644", b"a-b"), (b"100644", b"a.txt"), (b"40000", b"a"))) == []


def test_truncated_tree_is_refused() -> None:
    """A tree object that does not parse is refused, not skipped."""
    assert check_tree("x", b"100644 a\0" + bytes(5))[0].problem == "the tree object does not parse"


# ---- real repositories: trees made with `git mktree` and raw `hash-object --literally` ---------------------------


def _blob(repo: GitRepo, data: bytes) -> str:
    return repo.git("hash-object", "-w", "--stdin", input=data)


def _tree(repo: GitRepo, entries: list[tuple[str, str, str, bytes]]) -> str:
    """A tree object from (mode, type, oid, name) rows, written raw so that git does not vet the names."""
    raw = b"".join(f"{mode} ".encode() + name + b"\0" + bytes.fromhex(oid) for mode, _t, oid, name in entries)
    return repo.git("hash-object", "-t", "tree", "-w", "--literally", "--stdin", input=raw)


def _commit_tree(repo: GitRepo, tree: str, message: str) -> str:
    commit = repo.git("commit-tree", tree, "-p", "HEAD", "-m", message)
    repo.git("update-ref", "refs/heads/patch", commit)  # HEAD is on `patch`
    return commit


def _head_entries(repo: GitRepo) -> list[tuple[str, str, str, bytes]]:
    rows_ = []
    for line in repo.git("ls-tree", "HEAD").splitlines():
        meta, name = line.split("\t", 1)
        mode, type_, oid = meta.split()
        rows_.append((mode.lstrip("0") if type_ == "tree" else mode, type_, oid, name.encode()))
    return rows_


def _with_root_entries(repo: GitRepo, extra: list[tuple[str, str, str, bytes]]) -> str:
    entries = sorted(_head_entries(repo) + extra, key=lambda e: e[3] + (b"/" if e[1] == "tree" else b""))
    return _tree(repo, entries)


@pytest.mark.parametrize("name", [b"..", b".", b"fixtures/golden.json", b"calc.py"])
def test_hostile_entry_in_src_is_evidence_path_edited(git_repo: GitRepo, tmp_path: Path, name: bytes) -> None:
    """`src/..`, `src/.`, `src/fixtures/golden.json` (a name with '/'), a duplicate `src/calc.py`: refused first."""
    red_repo(git_repo)
    payload = _blob(git_repo, b"def double(x):\n    return x * 2\n")
    src = [("100644", "blob", payload, b"calc.py")]
    if name == b"calc.py":
        src.append(("100644", "blob", _blob(git_repo, b"x = 1\n"), b"calc.py"))
    else:
        src.append(("100644", "blob", payload, name))
    src.sort(key=lambda e: e[3])
    src_tree = _tree(git_repo, src)
    root = [e for e in _head_entries(git_repo) if e[3] != b"src"] + [("40000", "tree", src_tree, b"src")]
    root.sort(key=lambda e: e[3] + (b"/" if e[1] == "tree" else b""))
    _commit_tree(git_repo, _tree(git_repo, root), "hostile entry")
    receipt = judge(git_repo, tmp_path, run=False)
    assert receipt["decision"]["row"] == "evidence-path-edited", receipt["violations"]
    [hit] = [v for v in receipt["violations"] if "refuses to check out" in v["message"]]
    assert hit["path"] == "src/" + name.decode()


def test_dotdot_tree_overwriting_locked_data_is_caught(git_repo: GitRepo, tmp_path: Path) -> None:
    """A tree `src/..` holding `properties/test_double.py` cannot stand in for the locked file, and is named."""
    red_repo(git_repo)
    prop = _blob(git_repo, b"def test_double():\n    assert True\n")
    inner = _tree(git_repo, [("100644", "blob", prop, b"test_double.py")])
    up = _tree(git_repo, [("40000", "tree", inner, b"properties")])
    src_entries = git_repo.git("ls-tree", "HEAD:src").splitlines()
    src = [("100644", "blob", line.split()[2], line.split("\t")[1].encode()) for line in src_entries]
    src_tree = _tree(git_repo, sorted([*src, ("40000", "tree", up, b"..")], key=lambda e: e[3]))
    root = [e for e in _head_entries(git_repo) if e[3] != b"src"] + [("40000", "tree", src_tree, b"src")]
    root.sort(key=lambda e: e[3] + (b"/" if e[1] == "tree" else b""))
    _commit_tree(git_repo, _tree(git_repo, root), "climb")
    receipt = judge(git_repo, tmp_path, run=False)
    assert "evidence-path-edited" in rows(receipt), receipt["violations"]
    paths = {v["path"] for v in receipt["violations"]}
    assert "src/.." in paths and "src/../properties/test_double.py" in paths, paths


def test_materialise_never_writes_outside_its_folder(git_repo: GitRepo, tmp_path: Path) -> None:
    """A planned `src/../../escape.txt`, a file below a symlinked folder and a link chain that climbs out are
    dropped; nothing appears outside the destination."""
    red_repo(git_repo)
    repo = Repo(git_repo.path)
    blob = _blob(git_repo, b"written\n")
    up = _blob(git_repo, b"../..")
    link_dir = _blob(git_repo, b"..")
    dest = tmp_path / "sealed" / "tree"
    entries = {
        "src/../../escape.txt": TreeEntry("100644", "blob", blob, "src/../../escape.txt"),
        "a": TreeEntry("120000", "blob", link_dir, "a"),  # `..` from the root: outside
        "d1/d2/y": TreeEntry("120000", "blob", up, "d1/d2/y"),  # `../..` from d1/d2 is the root: inside
        "d1/d2/x": TreeEntry("120000", "blob", _blob(git_repo, b"y/.."), "d1/d2/x"),  # root/.. : outside
        "lnk": TreeEntry("120000", "blob", _blob(git_repo, b"d1"), "lnk"),
        "lnk/inner.txt": TreeEntry("100644", "blob", blob, "lnk/inner.txt"),  # would land in d1/ through the link
        "ok/file.txt": TreeEntry("100644", "blob", blob, "ok/file.txt"),
    }
    dropped = {n.path for n in sealed_tree.materialise(repo, entries, dest)}
    assert dropped == {"src/../../escape.txt", "a", "d1/d2/x", "lnk/inner.txt"}, dropped
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path / "sealed" / "escape.txt").exists()
    assert not (dest / "d1" / "inner.txt").exists()
    assert (dest / "ok" / "file.txt").read_bytes() == b"written\n"
    assert str((dest / "d1" / "d2" / "y").readlink()) == "../.."


def test_changed_files_covers_every_locked_path(git_repo: GitRepo, tmp_path: Path) -> None:
    """After a run, locked files outside fixtures/ (a property, a locked data folder) are re-hashed too."""
    red_repo(git_repo, extra={"data/expected.json": "[1]\n", "fixtures/a.txt": "a\n"})
    repo = Repo(git_repo.path)
    dest = tmp_path / "tree"
    sealed_tree.build(repo, "HEAD", "HEAD", set(), dest)
    (dest / "data" / "expected.json").write_text("[2]\n")
    (dest / "properties" / "test_double.py").write_text("def test_double():\n    pass\n")
    got = sealed_tree.changed_files(repo, "HEAD", ["data/", "properties/test_double.py", "fixtures/"], dest)
    assert got == ["data/expected.json", "properties/test_double.py"]
