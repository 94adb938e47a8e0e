"""The locked-evidence lane on real repositories, including byte-level paths YAML recipes cannot carry."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from evidence_gate.config import Config, FixturesConfig, FreezeConfig, PropertiesConfig
from evidence_gate.gate import CheckOptions, evaluate
from evidence_gate.git import Repo
from evidence_gate.lanes import locked_evidence
from evidence_gate.lanes.score_properties import parse_properties
from evidence_gate.model import LaneResult
from support.repo_builder import GitRepo

BASE_FILES: dict[str, str | bytes | None] = {
    "SCORE_PROPERTIES": "properties/test_p.py::test_sum\n",
    "properties/test_p.py": "from alloc import allocate\nfrom strategies import totals\n\n\n"
    "def test_sum():\n    assert sum(allocate(totals[0], 3)) == totals[0]\n",
    "properties/strategies.py": "totals = [10]\n",
    "properties/conftest.py": "",
    "src/alloc.py": "def allocate(total, parts):\n    return [total] + [0] * (parts - 1)\n",
    "fixtures/golden.json": "{}\n",
    "docs/readme.md": "hello\n",
}


class RecordingRepo(Repo):
    """A real Repo that remembers the git commands it ran (to show the lane's cost follows the change)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path)
        self.calls: list[tuple[str, ...]] = []

    def run(self, *args: str, stdin: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Record, then run git for real."""
        self.calls.append(args)
        return super().run(*args, stdin=stdin, check=check)


def _base(git_repo: GitRepo, extra: dict[str, str | bytes | None] | None = None) -> str:
    return git_repo.commit("baseline", {**BASE_FILES, **(extra or {})})


def _head_with_raw_path(git_repo: GitRepo, base: str, raw_path: bytes, content: bytes = b"x\n") -> str:
    """A child of `base` that adds one blob at a raw byte path, built with plumbing (no file system involved)."""
    oid = git_repo.git("hash-object", "-w", "--stdin", input=content)
    git_repo.git("read-tree", base)
    git_repo.git("update-index", "-z", "--index-info", input=b"100644 " + oid.encode() + b"\t" + raw_path + b"\0")
    tree = git_repo.git("write-tree")
    head = git_repo.git("commit-tree", tree, "-p", base, "-m", "raw path")
    git_repo.git("read-tree", base)
    return head


def _head_with_tree_entry(git_repo: GitRepo, base: str, name: bytes, subpath: list[bytes]) -> str:
    """A child of `base` with a new top-level folder `name` holding `subpath`, built with `mktree`, which (unlike
    `git add`) does not refuse names such as `.GIT`."""
    oid = git_repo.git("hash-object", "-w", "--stdin", input=b"#!/bin/sh\necho pwned\n")
    entry = b"100755 blob " + oid.encode() + b"\t" + subpath[-1]
    for folder in reversed(subpath[:-1]):
        tree = git_repo.git("mktree", "-z", input=entry + b"\0")
        entry = b"040000 tree " + tree.encode() + b"\t" + folder
    sub = git_repo.git("mktree", "-z", input=entry + b"\0")
    root = subprocess.run(["git", "ls-tree", "-z", base], cwd=git_repo.path, capture_output=True, check=True).stdout
    tree = git_repo.git("mktree", "-z", input=root + b"040000 tree " + sub.encode() + b"\t" + name + b"\0")
    return git_repo.git("commit-tree", tree, "-p", base, "-m", "alias")


@pytest.mark.parametrize("name", [b".GIT", b".git.", b"GIT~1"])
def test_git_dir_alias_is_a_violation(git_repo: GitRepo, name: bytes) -> None:
    """A tree entry a checkout could take for `.git` (hooks!) fails, though `git add` would refuse to make it."""
    base = _base(git_repo)
    head = _head_with_tree_entry(git_repo, base, name, [b"hooks", b"post-checkout"])
    (violation,) = _lane(git_repo.path, base, head).violations
    assert violation.path == name.decode() + "/hooks/post-checkout"
    assert "is the repository's own `.git` on some file systems" in violation.message


def _lane(path: Path, base: str, head: str, config: Config | None = None) -> LaneResult:
    repo = Repo(path)
    config = config or Config()
    specs = parse_properties(repo.read_blob(base, config.properties.list) or b"")
    return locked_evidence.check(repo, base, head, config, specs, repo.diff_tree(base, head))


@pytest.mark.parametrize(
    ("raw", "shown", "what"),
    [
        (b"docs/a\nb.md", "docs/a\\nb.md", "U+000A"),
        (b"docs/\xff\xfe.md", "docs/\\xff\\xfe.md", "byte 0xFF that is not valid UTF-8"),
        (b"docs/a\x1b[31m.md", "docs/a\\x1b[31m.md", "U+001B"),
        (b"fixtures\xe2\x80\x8b/golden.json", "fixtures\\u200b/golden.json", "U+200B ZERO WIDTH SPACE"),
    ],
)
def test_hostile_byte_paths_anywhere_are_violations(git_repo: GitRepo, raw: bytes, shown: str, what: str) -> None:
    """Newlines, escape sequences, invisible characters and invalid UTF-8 fail even outside locked folders."""
    base = _base(git_repo)
    head = _head_with_raw_path(git_repo, base, raw)
    result = _lane(git_repo.path, base, head)
    assert [v.path for v in result.violations] == [shown]
    assert what in result.violations[0].message
    assert result.violations[0].message.endswith("rename it using printable UTF-8 only")


def test_deleting_a_hostile_path_is_a_clean_up(git_repo: GitRepo) -> None:
    """Removing a file whose name the baseline already carried (U+200B) is not held against the patch."""
    first = _base(git_repo)
    base = _head_with_raw_path(git_repo, first, b"docs/a\xe2\x80\x8b.md")
    git_repo.git("read-tree", first)
    head = git_repo.git("commit-tree", git_repo.git("write-tree"), "-p", base, "-m", "clean up")
    assert _lane(git_repo.path, base, head).violations == ()


def test_hostile_path_receipt_is_written_and_printable(git_repo: GitRepo, tmp_path: Path) -> None:
    """Through the whole gate, a newline path yields a valid receipt whose violation path is one escaped line."""
    base = _base(git_repo)
    head = _head_with_raw_path(git_repo, base, b"docs/evil\n::error::ok.md")
    receipt_path = tmp_path / "receipt.json"
    receipt, code = evaluate(CheckOptions(git_repo.path, head=head, base=base, run=False), receipt_path)
    assert code == 10, receipt["errors"]
    assert receipt["decision"]["row"] == "evidence-path-edited"
    on_disk = json.loads(receipt_path.read_text("utf-8"))
    assert on_disk["violations"][0]["path"] == "docs/evil\\n::error::ok.md"


@pytest.mark.parametrize(
    ("target", "fragment"),
    [
        (b"../../etc/passwd", "which leaves the repository"),
        (b"../.git/hooks/pre-commit", "enters .git"),
        (b"ok\n../../x", "whose target contains U+000A"),
    ],
)
def test_symlink_targets_are_checked_anywhere(git_repo: GitRepo, target: bytes, fragment: str) -> None:
    """A new symlink outside locked folders still fails when its target escapes or hides characters."""
    base = _base(git_repo)
    oid = git_repo.git("hash-object", "-w", "--stdin", input=target)
    git_repo.git("read-tree", base)
    git_repo.git("update-index", "--add", "--cacheinfo", f"120000,{oid},docs/link")
    head = git_repo.git("commit-tree", git_repo.git("write-tree"), "-p", base, "-m", "link")
    git_repo.git("read-tree", base)
    (violation,) = _lane(git_repo.path, base, head).violations
    assert violation.path == "docs/link" and fragment in violation.message


def test_honest_edit_passes_and_receipt_lists_locked_files(git_repo: GitRepo) -> None:
    """Control: a code edit under pythonpath touches nothing locked; the receipt names the baseline's locked files."""
    base = _base(git_repo)
    head = git_repo.commit("fix", {"src/alloc.py": "def allocate(total, parts):\n    return [total]\n"})
    result = _lane(git_repo.path, base, head)
    assert result.violations == ()
    assert result.receipt["files"] == [
        "SCORE_PROPERTIES",
        "properties/conftest.py",
        "properties/strategies.py",
        "properties/test_p.py",
    ]
    assert result.receipt["imports"] == ["properties/strategies.py"]
    assert result.receipt["globs"] == ["fixtures/**", ".github/workflows/**"]
    fixtures_tree = git_repo.git("rev-parse", f"{base}:fixtures")
    assert result.receipt["trees"] == {
        "fixtures": {"baseline": fixtures_tree, "head": fixtures_tree},
        ".github/workflows": {"baseline": None, "head": None},
    }


def test_helper_edit_fails_and_names_the_path(git_repo: GitRepo) -> None:
    """Editing a helper a property imports (outside pythonpath) is a violation with the fix in the message."""
    base = _base(git_repo)
    head = git_repo.commit("tamper", {"properties/strategies.py": "totals = [0]\n"})
    (violation,) = _lane(git_repo.path, base, head).violations
    assert violation.path == "properties/strategies.py"
    assert violation.message.startswith("properties/strategies.py was modified")
    assert violation.message.endswith("locked evidence may only change in a human-reviewed PR to the base branch")
    assert "pythonpath" not in violation.message  # src/ exists: no note about the layout


def test_a_flat_layout_under_the_default_pythonpath_names_the_fix(git_repo: GitRepo) -> None:
    """With no `src/` folder, the default pythonpath locks the package a property imports: the message says the
    folder is absent and names `pythonpath: ["."]`, which makes the same edit code under test (same row id)."""
    base = git_repo.commit(
        "flat",
        {
            "SCORE_PROPERTIES": "properties/test_p.py::test_key\n",
            "properties/test_p.py": "from natsort.utils import key\n\n\ndef test_key():\n    assert key('a') == 'a'\n",
            "natsort/__init__.py": "",
            "natsort/utils.py": "def key(s):\n    return s\n",
        },
    )
    head = git_repo.commit("honest fix", {"natsort/utils.py": "def key(s):\n    return str(s)\n"})
    (violation,) = _lane(git_repo.path, base, head).violations
    assert violation.row == "evidence-path-edited" and violation.path == "natsort/utils.py"
    assert "properties.pythonpath names `src`, which the baseline does not have" in violation.message
    assert 'pythonpath: ["."]' in violation.message
    flat = Config(properties=PropertiesConfig(pythonpath=(".",)))
    assert _lane(git_repo.path, base, head, flat).violations == ()


def test_gitattributes_violation_names_line_and_locked_path(git_repo: GitRepo) -> None:
    """An attribute line that reaches a locked fixture is reported at that line, naming the fixture."""
    base = _base(git_repo)
    head = git_repo.commit("attrs", {".gitattributes": "*.md diff\n*.json ident\n"})
    (violation,) = _lane(git_repo.path, base, head).violations
    assert (violation.path, violation.line) == (".gitattributes", 2)
    assert "locked fixtures/golden.json checks out" in violation.message


def test_gitattributes_macro_definition_counts(git_repo: GitRepo) -> None:
    """A new `[attr]` macro that carries `-text` can reach any locked path, so it is reported."""
    base = _base(git_repo)
    head = git_repo.commit("attrs", {".gitattributes": "[attr]raw -text\n"})
    (violation,) = _lane(git_repo.path, base, head).violations
    assert violation.line == 1 and "[attr]raw -text" in violation.message


def test_freeze_ledger_locked_only_in_locked_mode(git_repo: GitRepo) -> None:
    """The ledger is locked evidence exactly when freeze.mode is `locked`."""
    base = _base(git_repo, {"freeze.yaml": "version: 1\nentries: []\n"})
    head = git_repo.commit("ledger", {"freeze.yaml": "version: 1\nentries: []\n# note\n"})
    assert _lane(git_repo.path, base, head).violations == ()
    locked_mode = Config(freeze=FreezeConfig(mode="locked"))
    assert [v.path for v in _lane(git_repo.path, base, head, locked_mode).violations] == ["freeze.yaml"]


def test_configured_paths_are_normalised(git_repo: GitRepo) -> None:
    """`fixtures.dir: ./data/` and `locked: ["./tools/**"]` lock `data/**` and `tools/**` as git spells them."""
    base = _base(git_repo, {"data/golden.json": "{}\n", "tools/run.sh": "true\n"})
    head = git_repo.commit("tamper", {"data/golden.json": "[]\n", "tools/run.sh": "false\n"})
    config = Config(fixtures=FixturesConfig(dir="./data/"), locked=("./tools/**",))
    result = _lane(git_repo.path, base, head, config)
    assert [v.path for v in result.violations] == ["data/golden.json", "tools/run.sh"]
    assert result.receipt["globs"] == ["data/**", ".github/workflows/**", "tools/**"]


def test_pythonpath_decides_what_is_code_under_test(git_repo: GitRepo) -> None:
    """With pythonpath emptied, src/alloc.py becomes a locked import of the property file."""
    base = _base(git_repo, {"alloc.py": "from src.alloc import allocate\n"})
    head = git_repo.commit("fix", {"src/alloc.py": "def allocate(total, parts):\n    return [total]\n"})
    assert _lane(git_repo.path, base, head).violations == ()
    config = Config(properties=PropertiesConfig(pythonpath=()))
    assert [v.path for v in _lane(git_repo.path, base, head, config).violations] == ["src/alloc.py"]


def test_tree_id_moved_without_diff_entry_fails_closed(git_repo: GitRepo) -> None:
    """If the diff handed to the lane misses a change inside a locked folder, the tree ids still catch it."""
    base = _base(git_repo)
    head = git_repo.commit("tamper", {"fixtures/golden.json": "[]\n"})
    repo = Repo(git_repo.path)
    specs = parse_properties(repo.read_blob(base, "SCORE_PROPERTIES") or b"")
    (violation,) = locked_evidence.check(repo, base, head, Config(), specs, []).violations
    assert violation.path == "fixtures" and "the diff did not show how" in violation.message


def test_many_touched_fixtures_are_capped(git_repo: GitRepo) -> None:
    """Thousands of touched locked files give a bounded list plus a summary, never an unbounded receipt."""
    count = locked_evidence.MAX_VIOLATIONS + 5
    many: dict[str, str | bytes | None] = {f"fixtures/f{i}.json": "{}\n" for i in range(count)}
    base = _base(git_repo)
    head = git_repo.commit("flood", many)
    violations = _lane(git_repo.path, base, head).violations
    assert len(violations) == locked_evidence.MAX_VIOLATIONS + 1
    assert violations[-1].message.startswith("and 5 more locked paths were touched")


def test_cost_follows_the_change_not_the_repository(git_repo: GitRepo) -> None:
    """Without a changed .gitattributes the lane never lists a tree, and its git calls do not grow with the repo.

    The only ls-tree calls are limited to the paths a read found absent (absent, or named but unreadable?).
    """
    many: dict[str, str | bytes | None] = {f"bulk/d{i % 20}/f{i}.txt": f"{i}\n" for i in range(2000)}
    base = _base(git_repo, many)
    head = git_repo.commit(
        "fix", {"src/alloc.py": "def allocate(total, parts):\n    return [total]\n", "bulk/d1/f1.txt": "changed\n"}
    )
    repo = RecordingRepo(git_repo.path)
    config = Config()
    specs = parse_properties(repo.read_blob(base, "SCORE_PROPERTIES") or b"")
    diff = repo.diff_tree(base, head)
    repo.calls.clear()
    assert locked_evidence.check(repo, base, head, config, specs, diff).violations == ()
    listings = [call for call in repo.calls if "ls-tree" in call]
    assert all("-r" not in call and call.index("--") < len(call) - 1 for call in listings), listings
    assert not any("bulk" in path for call in listings for path in call), listings
    # A fixed number: the reads, the absent-path confirmations and the tree-entry check (diff-tree -t, one batch).
    assert len(repo.calls) <= 10, repo.calls
