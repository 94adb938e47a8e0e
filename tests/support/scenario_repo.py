"""Builds a pull-request repository from a scenario folder's `scenario.yml` recipe.

A recipe lists the baseline's files (merged over a small default project) and the patch's changes; the PR is
merged like GitHub's `refs/pull/N/merge`, so the gate compares the merge commit against its first parent.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

from support.repo_builder import GitRepo

# An entry appended to DEFAULT_BASE's ledger: a new quarantine, the one thing the ledger may never gain.
FREEZE_ADD = (
    "  - id: a-new-quarantine\n"
    "    test: tests/test_parser.py::test_large_input\n"
    '    assertion_hash: "0123456789abcdef0123456789abcdef0123456789abcdef"\n'
    '    added_at: "2026-09-19"\n'
    '    expires: "2026-09-26"\n'
    "    owner: humans\n"
)

DEFAULT_BASE: dict[str, Any] = {
    "SCORE_PROPERTIES": "properties/test_alloc_properties.py::test_allocation_invariants\n",
    "properties/test_alloc_properties.py": (
        "from alloc import allocate\n\n\ndef test_allocation_invariants():\n    assert sum(allocate(10, 3)) == 10\n"
    ),
    "src/alloc.py": (
        "def allocate(total, parts):\n"
        "    base, extra = divmod(total, parts)\n"
        "    return [base + (1 if i < extra else 0) for i in range(parts)]\n"
    ),
    "fixtures/golden.json": '{"total": 10, "parts": 3, "expected": [4, 3, 3]}\n',
    "freeze.yaml": (
        "version: 1\n"
        "budget: {max_entries: 12, max_bytes: 4096, max_ttl_days: 14}\n"
        "entries:\n"
        "  - id: parser-timeout-large-input\n"
        "    test: tests/test_parser.py::test_large_input\n"
        '    assertion_hash: "e3b0c44298fc1c149afbf4c8996fb924"\n'
        '    added_at: "2026-09-15"\n'
        '    expires: "2026-09-29"\n'
        "    owner: humans\n"
        "    reason: timing\n"
    ),
    "tests/test_parser.py": "def test_large_input():\n    assert True\n",
}


def _apply(repo: GitRepo, files: dict[str, Any]) -> None:
    """Write each entry: text, None (delete), {symlink}, {text, mode}, {base64}, {gitlink}."""
    for path, spec in files.items():
        target = repo.path / path
        if spec is None:
            repo.git("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", path)
            if target.is_symlink() or target.is_file():
                target.unlink()
            continue
        if isinstance(spec, str):
            repo.write({path: spec})
            continue
        if "symlink" in spec:
            if target.is_symlink() or target.is_file():
                target.unlink()
            elif target.is_dir() and not any(target.iterdir()):
                target.rmdir()  # a folder emptied earlier in the recipe, now replaced by a link
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(spec["symlink"])
        elif "gitlink" in spec:
            repo.git("update-index", "--add", "--cacheinfo", f"160000,{spec['gitlink']},{path}")
            continue
        elif "base64" in spec:
            repo.write({path: base64.b64decode(spec["base64"])})
        else:
            repo.write({path: spec.get("text", "")})
        if "mode" in spec:
            target.chmod(0o755 if spec["mode"] == "100755" else 0o644)  # so the later `git add -A` keeps it
            repo.git("add", "--", path)
            repo.git("update-index", "--chmod=" + ("+x" if spec["mode"] == "100755" else "-x"), "--", path)
        repo.git("add", "--", path)


def build(recipe: dict[str, Any], root: Path) -> GitRepo:
    """The repository with HEAD detached on the PR's merge commit."""
    repo = GitRepo(root)
    base_files = dict(DEFAULT_BASE) if recipe.get("default_base", True) else {}
    base_files.update(recipe.get("base", {}).get("files", {}))
    _apply(repo, {k: v for k, v in base_files.items() if v is not None})
    repo.git("add", "-A")
    repo.git("commit", "-q", "--allow-empty", "-m", "baseline")
    base = repo.git("rev-parse", "HEAD")
    repo.branch("pr")
    patch = recipe.get("patch", {})
    for old, new in patch.get("rename", {}).items():
        (repo.path / new).parent.mkdir(parents=True, exist_ok=True)
        repo.git("mv", "--", old, new)
    _apply(repo, patch.get("files", {}))
    repo.git("add", "-A")
    repo.git("commit", "-q", "--allow-empty", "-m", "patch")
    head = repo.git("rev-parse", "HEAD")
    repo.merge_ref(base, head)
    return repo


# Every key a recipe may use; a misspelt one (`expects:`, `violation:`) would otherwise be ignored and check nothing.
RECIPE_KEYS = {"description", "author", "today", "args", "default_base", "base", "patch", "expect"}
PART_KEYS = {"base": {"files"}, "patch": {"files", "rename"}}
EXPECT_KEYS = {"row", "exit", "matched", "not_matched", "violations", "stdout_contains", "receipt"}
FILE_KEYS = {"symlink", "gitlink", "base64", "text", "mode"}


def _unknown_keys(recipe: dict[str, Any]) -> list[str]:
    unknown = sorted(set(recipe) - RECIPE_KEYS)
    for part, keys in PART_KEYS.items():
        unknown += [f"{part}.{k}" for k in sorted(set(recipe.get(part) or {}) - keys)]
        for path, spec in ((recipe.get(part) or {}).get("files") or {}).items():
            if isinstance(spec, dict):
                unknown += [f"{part}.files[{path}].{k}" for k in sorted(set(spec) - FILE_KEYS)]
    return unknown + [f"expect.{k}" for k in sorted(set(recipe.get("expect") or {}) - EXPECT_KEYS)]


def load(folder: Path) -> dict[str, Any]:
    """A scenario's recipe, refused when it names a key the runner does not read or lacks the expected row and exit."""
    recipe: dict[str, Any] = yaml.safe_load((folder / "scenario.yml").read_text("utf-8"))
    assert isinstance(recipe, dict), f"{folder}: scenario.yml is not a mapping"
    unknown = _unknown_keys(recipe)
    assert not unknown, f"{folder}: unknown keys {unknown}; the runner reads only {sorted(RECIPE_KEYS)}"
    expect = recipe.get("expect") or {}
    assert {"row", "exit"} <= set(expect) and "description" in recipe, f"{folder}: needs description, expect.row/exit"
    return recipe
