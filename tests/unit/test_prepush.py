"""The pre-push hook: `evidence-gate pre-push` on real clones, and the hook run by the real pre-commit tool."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from evidence_gate import cli
from support.repo_builder import PINNED_ENV, GitRepo
from support.scenario_repo import DEFAULT_BASE

ROOT = Path(__file__).resolve().parents[2]
PRE_COMMIT = Path(sys.executable).with_name("pre-commit")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evidence-gate" / "pre-commit-tests"
ENTRY = (
    "  - id: parser-timeout-large-input\n"
    "    test: tests/test_parser.py::test_large_input\n"
    '    assertion_hash: "e3b0c44298fc1c149afbf4c8996fb924"\n'
    '    added_at: "2026-09-15"\n'
    '    expires: "2026-09-29"\n'
    "    owner: humans\n"
)
NEW_ENTRY = ENTRY.replace("parser-timeout-large-input", "flaky-new-one").replace("test_large_input", "test_other")
LEDGER = "version: 1\nbudget: {max_entries: 12, max_bytes: 4096, max_ttl_days: 14}\nentries:\n" + ENTRY
TODAY = "2026-09-20"


def clone_with_branch(tmp_path: Path, files: dict[str, str | None]) -> GitRepo:
    """A clone of a published `main` (origin/HEAD set by `git clone`) on a branch `feat` that commits `files`."""
    upstream = GitRepo(tmp_path / "upstream")
    upstream.commit("base", {**DEFAULT_BASE, "freeze.yaml": LEDGER})
    subprocess.run(["git", "clone", "-q", str(upstream.path), str(tmp_path / "work")], check=True, env=_git_env())
    work = GitRepo(tmp_path / "work")  # re-initialising a clone keeps it as it is, with the pinned settings
    work.branch("feat")
    if files:
        work.commit("the agent's change", files)
    return work


def _git_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**env, **PINNED_ENV}


def run_hook(repo: GitRepo, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    """`evidence-gate pre-push ARGS` in `repo` (as pre-commit runs it: in the checkout); exit code and stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "evidence_gate", "pre-push", "--today", TODAY, *args],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env={**{k: v for k, v in os.environ.items() if not k.startswith("PRE_COMMIT_")}, **(env or {})},
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_locked_file_edit_fails_naming_the_path(tmp_path: Path) -> None:
    """Editing a locked property fails the push with `evidence-path-edited` and the path, before anything runs."""
    repo = clone_with_branch(
        tmp_path, {"properties/test_alloc_properties.py": "def test_allocation_invariants():\n    assert True\n"}
    )
    code, out = run_hook(repo)
    assert code == 10, out
    assert "properties/test_alloc_properties.py: " in out and "[evidence-path-edited]" in out
    assert "origin's default branch" in out and "FAIL: " in out


def test_honest_change_passes(tmp_path: Path) -> None:
    """A change to code under test only passes, compared with origin/HEAD's merge-base."""
    repo = clone_with_branch(tmp_path, {"src/alloc.py": DEFAULT_BASE["src/alloc.py"] + "\n# a comment\n"})
    code, out = run_hook(repo)
    assert code == 0, out
    assert out.rstrip().endswith("[pass]")


def test_grown_ledger_fails(tmp_path: Path) -> None:
    """A new freeze entry fails the push with `freeze-id-added` on its line."""
    repo = clone_with_branch(tmp_path, {"freeze.yaml": LEDGER + NEW_ENTRY})
    code, out = run_hook(repo)
    assert code == 10, out
    assert "freeze.yaml:10: entry 'flaky-new-one' is new" in out and "[freeze-id-added]" in out


def test_harness_probe_fails(tmp_path: Path) -> None:
    """Code under test that starts walking the interpreter's objects fails the push with `harness-probed`."""
    probe = DEFAULT_BASE["src/alloc.py"] + "\nimport gc\nSEEN = gc.get_objects()\n"
    repo = clone_with_branch(tmp_path, {"src/alloc.py": probe})
    code, out = run_hook(repo)
    assert code == 10, out
    assert "src/alloc.py:6: new `gc.get_objects` in code under test" in out and "[harness-probed]" in out


def test_removal_is_left_to_ci_and_does_not_block(tmp_path: Path) -> None:
    """Deleting an entry needs the sealed replay: the hook says CI settles it, and lets the push through."""
    repo = clone_with_branch(tmp_path, {"freeze.yaml": LEDGER.replace(ENTRY, "") + "  []\n"})
    code, out = run_hook(repo)
    assert code == 0, out
    assert "left to CI (the sealed run settles it): freeze.yaml:" in out and "[freeze-removal-unverified]" in out


def test_against_overrides_and_pre_commit_refs_pick_the_pushed_commit(tmp_path: Path) -> None:
    """`--against` names the baseline; PRE_COMMIT_TO_REF (not HEAD) is the commit judged."""
    repo = clone_with_branch(tmp_path, {"fixtures/golden.json": "{}\n"})
    tampered = repo.git("rev-parse", "HEAD")
    repo.checkout("main")
    code, out = run_hook(repo, "--against", "main")
    assert code == 0, out  # HEAD is main itself: nothing of the branch is judged
    code, out = run_hook(repo, "--against", "main", env={"PRE_COMMIT_TO_REF": tampered})
    assert code == 10 and "fixtures/golden.json: " in out, out
    code, out = run_hook(repo, env={"PRE_COMMIT_TO_REF": "0" * 40})
    assert code == 0 and "deletes a branch" in out, out


def test_a_commit_already_on_the_base_branch_passes(tmp_path: Path) -> None:
    """Pushing an older commit of the base branch (a new branch at main~1) has nothing of its own to judge."""
    repo = clone_with_branch(tmp_path, {})
    repo.git("checkout", "-q", "main")
    repo.commit("a second commit on main", {"README.md": "x\n"})
    repo.git("update-ref", "refs/remotes/origin/main", "HEAD")
    code, out = run_hook(repo, env={"PRE_COMMIT_TO_REF": repo.git("rev-parse", "HEAD~1")})
    assert code == 0 and "is already on refs/remotes/origin/HEAD; nothing to judge" in out, out


def test_missing_base_object_is_a_precondition_not_advice(tmp_path: Path) -> None:
    """A baseline whose SCORE_PROPERTIES blob is gone stops the push with `history-missing` (exit 11) and the fsck fix,
    without the 'undo the change to the evidence' advice meant for findings."""
    repo = clone_with_branch(tmp_path, {"src/alloc.py": "x = 1\n"})
    oid = repo.git("rev-parse", "origin/main:SCORE_PROPERTIES")
    loose = repo.path / ".git" / "objects" / oid[:2] / oid[2:]  # a local clone links the loose objects
    loose.unlink()
    code, out = run_hook(repo)
    assert code == 11, out
    assert "[history-missing]" in out and "undo the change" not in out


@pytest.mark.parametrize(
    ("args", "said", "fix"),
    [
        (("--against", "nosuchref"), "'nosuchref' to compare the push with (--against) does not exist", "`git fetch "),
        (("--against", "origin/nosuch"), "'origin/nosuch'", "`git fetch --no-tags origin nosuch:refs/remotes/origin/"),
        (("--head", "nosuchref"), "the pushed revision 'nosuchref' does not exist", "spelling of --head"),
    ],
)
def test_a_ref_that_does_not_resolve_is_named_with_local_advice(
    tmp_path: Path, args: tuple[str, ...], said: str, fix: str
) -> None:
    """A mistyped --against or --head names the ref and gives local git advice, not `None judged against None` and
    actions/checkout's fetch-depth."""
    repo = clone_with_branch(tmp_path, {"src/alloc.py": "x = 1\n"})
    code, out = run_hook(repo, *args)
    assert code == 11, out
    assert said in out and fix in out, out
    assert "None" not in out and "actions/checkout" not in out and "fetch-depth" not in out, out


def test_no_branch_to_compare_is_a_usage_error_naming_against(tmp_path: Path) -> None:
    """Without origin/HEAD, an upstream or pre-commit's refs, the hook stops (exit 2) and says to pass --against."""
    repo = GitRepo(tmp_path / "lonely")
    repo.commit("base", DEFAULT_BASE)
    code, out = run_hook(repo)
    assert code == 2, out
    assert "--against" in out


def test_cli_lists_the_subcommand() -> None:
    """`pre-push` is a subcommand of the CLI, with `--against`."""
    parser = cli.build_parser()
    args = parser.parse_args(["pre-push", "--against", "origin/main"])
    assert args.command == "pre-push" and args.against == "origin/main"


# The real pre-commit tool. It installs the hook's environment with pip from a git repository of this checkout.

HOOK_SOURCES = (".pre-commit-hooks.yaml", "pyproject.toml", "README.md", "src")  # the hook manifest and the package
needs_pre_commit = pytest.mark.skipif(not PRE_COMMIT.exists(), reason="pre-commit is in the test extras")


def hook_source() -> tuple[Path, str]:
    """What pre-commit installs from this checkout as it is now (HOOK_SOURCES, tracked and untracked, .gitignore
    honoured), committed with pinned identity and date into a repository under ~/.cache: the same sources give
    the same commit id, so pre-commit's environment for it (PRE_COMMIT_HOME, keyed by repository and rev) is
    installed once, and editing a test does not reinstall it."""
    source = CACHE / "hook-source.git"
    env = {**_git_env(), "GIT_DIR": str(source), "GIT_WORK_TREE": str(ROOT), "GIT_INDEX_FILE": str(source / "idx")}
    if not (source / "HEAD").exists():
        subprocess.run(["git", "init", "-q", "--bare", str(source)], check=True, env=_git_env())

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], env=env, cwd=ROOT, capture_output=True, text=True, check=True).stdout

    git("read-tree", "--empty")
    git("add", "-A", "--", *HOOK_SOURCES)
    tree = git("write-tree").strip()
    commit = git("commit-tree", tree, "-m", "evidence-gate sources under test").strip()
    git("update-ref", "refs/heads/main", commit)
    return source, commit


def pre_commit_env() -> dict[str, str]:
    """The environment pre-commit runs in: its cache under ~/.cache, no PRE_COMMIT_* or GIT_* of the caller's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PRE_COMMIT", "GIT_"))}
    return {**env, "PRE_COMMIT_HOME": str(CACHE / "home"), "PATH": f"{PRE_COMMIT.parent}:{env.get('PATH', '')}"}


def push_refs(repo: GitRepo) -> list[str]:
    """What pre-commit's own pre-push hook passes for pushing `feat` as a new branch to origin."""
    base = repo.git("rev-parse", "origin/main")
    return [
        "--from-ref",
        base,
        "--to-ref",
        repo.git("rev-parse", "HEAD"),
        "--remote-name",
        "origin",
        "--remote-url",
        str(repo.path.parent / "upstream"),
        "--remote-branch",
        "refs/heads/feat",
        "--local-branch",
        "refs/heads/feat",
    ]


@needs_pre_commit
def test_pre_commit_try_repo_fails_a_locked_edit(tmp_path: Path) -> None:
    """`pre-commit try-repo <this checkout> evidence-gate --hook-stage pre-push` fails a push that edits a locked
    file, naming the path (try-repo installs a fresh environment every time: about a minute)."""
    repo = clone_with_branch(tmp_path, {"SCORE_PROPERTIES": "# nothing to see\n"})
    source, commit = hook_source()
    started = time.monotonic()
    try_repo = [str(PRE_COMMIT), "try-repo", str(source), "evidence-gate", "--ref", commit, "--hook-stage", "pre-push"]
    proc = subprocess.run(
        [*try_repo, *push_refs(repo)],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env=pre_commit_env(),
        check=False,
        timeout=900,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "SCORE_PROPERTIES: " in out and "[evidence-path-edited]" in out and "exit code: 10" in out
    print(f"pre-commit try-repo took {time.monotonic() - started:.1f}s")


def run_configured(repo: GitRepo, source: Path, commit: str) -> subprocess.CompletedProcess[str]:
    """`pre-commit run --hook-stage pre-push` with a .pre-commit-config.yaml naming the hook, as a project has it."""
    config = f"repos:\n  - repo: {source}\n    rev: {commit}\n    hooks:\n      - id: evidence-gate\n"
    (repo.path / ".pre-commit-config.yaml").write_text(config, "utf-8")
    repo.git("add", ".pre-commit-config.yaml")  # pre-commit refuses an unstaged configuration
    return subprocess.run(
        [str(PRE_COMMIT), "run", "--hook-stage", "pre-push", *push_refs(repo)],
        cwd=repo.path,
        capture_output=True,
        text=True,
        env=pre_commit_env(),
        check=False,
        timeout=900,
    )


@needs_pre_commit
def test_pre_commit_run_passes_an_honest_push_and_fails_a_grown_ledger(tmp_path: Path) -> None:
    """With the hook in .pre-commit-config.yaml (environment cached in ~/.cache): an honest push passes, a new
    freeze entry fails with its line."""
    source, commit = hook_source()
    honest = clone_with_branch(tmp_path / "honest", {"src/alloc.py": DEFAULT_BASE["src/alloc.py"] + "# ok\n"})
    started = time.monotonic()
    proc = run_configured(honest, source, commit)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "evidence-gate (locked evidence and freeze ledger)" in proc.stdout and "Passed" in proc.stdout
    grown = clone_with_branch(tmp_path / "grown", {"freeze.yaml": LEDGER + NEW_ENTRY})
    proc = run_configured(grown, source, commit)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert "entry 'flaky-new-one' is new" in out and "[freeze-id-added]" in out
    print(f"two pre-commit runs took {time.monotonic() - started:.1f}s")


@needs_pre_commit
def test_git_push_through_the_installed_hook(tmp_path: Path) -> None:
    """`pre-commit install --hook-type pre-push`, then a real `git push`: the tampering branch is refused and never
    reaches the remote; after the fix, the push goes through (git hands the hook its refs on stdin)."""
    source, commit = hook_source()
    repo = clone_with_branch(tmp_path, {"fixtures/golden.json": "{}\n"})
    config = f"repos:\n  - repo: {source}\n    rev: {commit}\n    hooks:\n      - id: evidence-gate\n"
    (repo.path / ".pre-commit-config.yaml").write_text(config, "utf-8")
    env = pre_commit_env()
    subprocess.run([str(PRE_COMMIT), "install", "--hook-type", "pre-push"], cwd=repo.path, env=env, check=True)
    push = ["git", "push", "-q", "origin", "feat"]
    refused = subprocess.run(push, cwd=repo.path, env=env, capture_output=True, text=True, check=False)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "fixtures/golden.json: " in refused.stdout + refused.stderr
    remote = repo.path.parent / "upstream"

    def on_remote() -> bool:
        proc = subprocess.run(
            ["git", "rev-parse", "--verify", "-q", "feat"], cwd=remote, capture_output=True, check=False
        )
        return proc.returncode == 0

    assert not on_remote()
    repo.commit("undo the fixture change", {"fixtures/golden.json": DEFAULT_BASE["fixtures/golden.json"]})
    accepted = subprocess.run(push, cwd=repo.path, env=env, capture_output=True, text=True, check=False)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert on_remote()


def test_hook_manifest_is_what_pre_commit_reads() -> None:
    """The manifest declares the pre-push hook as the issue asks, and pre-commit's own schema accepts it."""
    hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text("utf-8"))
    (hook,) = hooks
    assert hook["id"] == "evidence-gate" and hook["stages"] == ["pre-push"] and hook["language"] == "python"
    assert hook["pass_filenames"] is False and hook["always_run"] is True
    assert hook["entry"].split() == ["evidence-gate", "pre-push"]
    if shutil.which("pre-commit") or PRE_COMMIT.exists():
        proc = subprocess.run(
            [str(PRE_COMMIT), "validate-manifest", str(ROOT / ".pre-commit-hooks.yaml")],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
