"""What `check --no-run` imports: only the static lanes on a clean run, jsonschema only to word a schema failure."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli
from evidence_gate.errors import GateError
from evidence_gate.git import Repo
from support import scenario_repo
from support.repo_builder import GitRepo

# Run the real CLI in a fresh interpreter and report, after it returns, every module it had loaded.
PROBE = """
import json, sys
from evidence_gate import cli
code = cli.main(sys.argv[1:])
sys.stdout.flush()
print("\\nMODULES " + json.dumps(sorted(sys.modules)))
raise SystemExit(code)
"""

# The package's modules a passing `check --no-run` loads. A new import on this path must be added here on purpose
# (it costs every CI run its start-up): the property run, the reporters of other formats, the action and the event
# parser stay out, and so do the text report's wording of findings, seed ledgers, patch coverage and a delta.
STATIC_RUN = frozenset(
    {
        "evidence_gate",
        "evidence_gate.cli",
        "evidence_gate.config",
        "evidence_gate.contexts",
        "evidence_gate.decision",
        "evidence_gate.digest",
        "evidence_gate.errors",
        "evidence_gate.gate",
        "evidence_gate.git",
        "evidence_gate.git_batch",
        "evidence_gate.git_trouble",
        "evidence_gate.lanes",
        "evidence_gate.lanes.fixtures",
        "evidence_gate.lanes.freeze",
        "evidence_gate.lanes.freeze.formats",
        "evidence_gate.lanes.freeze.ledger",
        "evidence_gate.lanes.harness_probes",
        "evidence_gate.lanes.import_scan",
        "evidence_gate.lanes.literal_fold",
        "evidence_gate.lanes.locked_evidence",
        "evidence_gate.lanes.locked_paths",
        "evidence_gate.lanes.probe_binds",
        "evidence_gate.lanes.probe_rules",
        "evidence_gate.lanes.probe_scan",
        "evidence_gate.lanes.score_properties",
        "evidence_gate.lanes.tree_entries",
        "evidence_gate.model",
        "evidence_gate.package_data",
        "evidence_gate.receipt",
        "evidence_gate.receipt.access",
        "evidence_gate.receipt.write",
        "evidence_gate.records",
        "evidence_gate.report",
        "evidence_gate.report.attestation",
        "evidence_gate.report.registry",
        "evidence_gate.report.row_docs",
        "evidence_gate.report.terminal",
        "evidence_gate.row_ids",
        "evidence_gate.schema_check",
        "evidence_gate.strict_parse",
        "evidence_gate.visible",
    }
)
# Libraries a clean static run has no use for: jsonschema (and what it pulls in) words an invalid file's errors,
# tempfile and difflib serve the property run and a changed attributes file, traceback records a crash (and brings
# textwrap, which the text report loads only for a line that does not fit), shlex quotes a failing seed's command, shutil (with bz2 and
# lzma) asks a terminal's width, which argparse's help formatter reads without it here. dataclasses brings inspect
# (with dis, tokenize and linecache) and compiles six methods a class: `records` makes the gate's value classes.
# hashlib loads OpenSSL: `digest` hashes a run's first 64 KiB with CPython's own sha1 and sha256. typing (and the
# receipt's TypedDicts, which need it) serve mypy only: those imports sit under `TYPE_CHECKING = False`.
NOT_ON_A_CLEAN_RUN = (
    "typing",
    "textwrap",
    "hashlib",
    "_hashlib",
    "dataclasses",
    "inspect",
    "dis",
    "tokenize",
    "linecache",
    "jsonschema",
    "referencing",
    "rpds",
    "attrs",
    "tempfile",
    "difflib",
    "zipfile",
    "traceback",
    "shlex",
    "shutil",
)


def _check(tmp_path: Path, recipe: dict[str, Any], *args: str) -> tuple[int, str, set[str], dict[str, Any]]:
    """Exit code, stdout, loaded modules and receipt of `check --no-run` on the recipe's pull request."""
    repo = scenario_repo.build(recipe, tmp_path / "repo").path
    receipt = tmp_path / "receipt.json"
    argv = ["check", "--repo", str(repo), "--receipt", str(receipt), "--today", "2026-09-20", "--no-run", *args]
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, timeout=120, check=False
    )
    head, _, listed = proc.stdout.rpartition("\nMODULES ")
    assert listed, proc.stdout + proc.stderr
    return proc.returncode, head, set(json.loads(listed)), json.loads(receipt.read_text("utf-8"))


def _ours(modules: set[str]) -> set[str]:
    return {m for m in modules if m == "evidence_gate" or m.startswith("evidence_gate.")}


def _loaded(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in names)


def test_clean_run_imports_only_the_static_lanes(tmp_path: Path) -> None:
    """A passing `check --no-run` loads exactly the static lanes' modules, and neither jsonschema nor the property
    run, SARIF, the check run, the job summary, the action or the event parser."""
    code, out, modules, receipt = _check(tmp_path, {"patch": {"files": {"README.md": "docs\n"}}})
    assert (code, receipt["decision"]["row"]) == (0, "pass"), out
    assert _ours(modules) == STATIC_RUN, (
        f"new: {sorted(_ours(modules) - STATIC_RUN)}; gone: {sorted(STATIC_RUN - _ours(modules))}"
    )
    assert _loaded(modules, NOT_ON_A_CLEAN_RUN) == []


@pytest.mark.parametrize(
    ("recipe", "row", "words"),
    [
        ({"base": {"files": {".evidence-gate.yml": "version: 1\nagents: yes\n"}}}, "config-invalid", "agents"),
        (
            {"base": {"files": {".evidence-gate.yml": "version: 1\nfreeze: {mode: grow}\n"}}},
            "config-invalid",
            "grow",
        ),
        (
            {"patch": {"files": {"freeze.yaml": "version: 1\nbudget: {max_entries: 12}\nentries: [{id: 7}]\n"}}},
            "freeze-ledger-invalid",
            "entries",
        ),
    ],
    ids=["config-wrong-type", "config-unknown-mode", "ledger-entry-wrong-shape"],
)
def test_the_lazy_path_still_validates(tmp_path: Path, recipe: dict[str, Any], row: str, words: str) -> None:
    """A configuration or ledger that fails its schema still fails the static run (the compiled check rejects it),
    and only then is jsonschema imported, to word the error."""
    code, out, modules, receipt = _check(tmp_path, recipe)
    assert receipt["decision"]["row"] == row, out
    assert code != 0
    assert words in out, out
    assert _loaded(modules, ("jsonschema",)) == [
        "jsonschema",
        *sorted(m for m in modules if m.startswith("jsonschema.")),
    ]


def test_a_pinned_repository_asks_each_revision_once_and_keeps_its_answer(tmp_path: Path) -> None:
    """`contexts.evaluate`'s one repository for the plan and the judgement: a revision name, the root, a commit's
    parents, merge-base and presence are asked of git once (a ref that moves meanwhile keeps its first answer);
    an unpinned repository asks every time, as before."""
    repo = GitRepo(tmp_path / "repo")
    first = repo.commit("one", {"a.txt": "1\n"})
    pinned, plain = Repo(repo.path, pin_revisions=True), Repo(repo.path)
    asked: list[tuple[str, ...]] = []
    original = Repo.run

    def counting(self: Repo, *args: str, stdin: bytes | None = None, check: bool = True) -> Any:
        asked.append(args)
        return original(self, *args, stdin=stdin, check=check)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Repo, "run", counting)
        for r in (pinned, plain):
            assert (r.resolve("main"), r.parents(first), r.has_object(first)) == (first, [], True)
        second = repo.commit("two", {"a.txt": "2\n"})
        assert (pinned.resolve("main"), plain.resolve("main")) == (first, second)
        assert pinned.merge_base(first, first) == pinned.merge_base(first, first) == first
        assert pinned.toplevel() == pinned.toplevel() == plain.toplevel()
    # pinned: resolve, cat-file commit, cat-file -s, merge-base, toplevel once each; plain: resolve twice, ...
    assert len(asked) == 5 + 5
    assert not pinned.has_object("0" * 40) and not pinned.has_object("0" * 40)


def _record_git(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """Every git command the gate runs from now on, by its arguments."""
    asked: list[tuple[str, ...]] = []
    original = Repo.run

    def counting(self: Repo, *args: str, stdin: bytes | None = None, check: bool = True) -> Any:
        asked.append(args)
        return original(self, *args, stdin=stdin, check=check)

    monkeypatch.setattr(Repo, "run", counting)
    return asked


def test_check_asks_git_the_plan_questions_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` plans contexts and then judges on one pinned repository: the root, each revision and the commits'
    parents and merge-base are asked once for the whole run, not once by the plan and again by the judgement."""
    repo = scenario_repo.build({"patch": {"files": {"README.md": "docs\n"}}}, tmp_path / "repo").path
    asked = _record_git(monkeypatch)
    receipt = tmp_path / "receipt.json"
    argv = ["check", "--repo", str(repo), "--receipt", str(receipt), "--today", "2026-09-20", "--no-run"]
    assert cli.main([*argv, "--format", "json"]) == 0
    assert json.loads(receipt.read_text("utf-8"))["decision"]["row"] == "pass"
    once = [a for a in asked if "rev-parse" in a or a[0] == "merge-base" or a[:2] == ("cat-file", "-s")]
    assert once, asked
    assert len(once) == len(set(once)), asked


def test_check_writes_its_receipt_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`check` writes `aborted` once before judging (not again when `gate.evaluate` takes the same path) and the
    verdict once: two synced writes of the receipt, not three (the attestation beside it is a file of its own)."""
    repo = scenario_repo.build({"patch": {"files": {"README.md": "docs\n"}}}, tmp_path / "repo").path
    synced: list[str] = []
    fsync = os.fsync

    def counting(fd: int) -> None:
        synced.append(Path(f"/proc/self/fd/{fd}").readlink().name)  # the temporary file's name
        fsync(fd)

    monkeypatch.setattr(os, "fsync", counting)
    receipt = tmp_path / "receipt.json"
    argv = ["check", "--repo", str(repo), "--receipt", str(receipt), "--today", "2026-09-20", "--no-run"]
    assert cli.main([*argv, "--format", "json"]) == 0
    assert json.loads(receipt.read_text("utf-8"))["decision"]["row"] == "pass"
    assert [name.rsplit(".", 1)[0] for name in synced if name.startswith(".receipt.json.")] == [".receipt.json"] * 2


@pytest.mark.parametrize("base", [None, "HEAD^1", "-HEAD"], ids=["merge-head", "named-base", "option-like-base"])
def test_the_root_and_named_revisions_are_one_rev_parse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, base: str | None
) -> None:
    """`check` asks git for the work tree root and every revision it was named by in one `rev-parse` (where it
    started one each); a name that looks like an option is asked on its own, with `--verify`, as before."""
    repo = scenario_repo.build({"patch": {"files": {"README.md": "docs\n"}}}, tmp_path / "repo").path
    asked = _record_git(monkeypatch)
    argv = ["check", "--repo", str(repo), "--receipt", str(tmp_path / "r.json"), "--today", "2026-09-20", "--no-run"]
    code = cli.main([*argv, "--format", "json", *([f"--base={base}"] if base else [])])
    rev_parse = [a for a in asked if "rev-parse" in a]
    if base == "-HEAD":
        assert code == 11  # history-missing: no such revision
        assert rev_parse[1:] == [
            ("-c", "core.warnAmbiguousRefs=true", "rev-parse", "--verify", "--end-of-options", "-HEAD^{commit}")
        ]
    else:
        assert code == 0
        assert len(rev_parse) == 1, rev_parse
    assert "--show-toplevel" in rev_parse[0]


def test_one_rev_parse_is_kept_only_when_git_answers_plainly(tmp_path: Path) -> None:
    """`ask_revisions` keeps the root and the ids only from a clean answer: not from a folder that is no repository,
    a name git does not know, or a ref named like a short id (git warns); `toplevel` and `resolve` then ask again,
    in git's own words. A full id is left to `resolve` (which reads it from cat-file in a batch session)."""
    repo = GitRepo(tmp_path / "repo")
    first = repo.commit("one", {"a.txt": "1\n"})
    repo.git("update-ref", f"refs/heads/{first[:10]}", first)
    (tmp_path / "empty").mkdir()
    # (folder, name) -> git processes `toplevel()` then `resolve(name)` start afterwards (outside a batch session)
    cases = {
        (tmp_path / "empty", "main"): 1,  # toplevel raises
        (repo.path, "nope"): 2,
        (repo.path, first[:10]): 2,  # resolve raises: ambiguous
        (repo.path, first): 1,
        (repo.path, "main"): 0,
    }
    original = Repo.run
    asked: list[tuple[str, ...]] = []

    def counting(self: Repo, *args: str, stdin: bytes | None = None, check: bool = True) -> Any:
        asked.append(args)
        return original(self, *args, stdin=stdin, check=check)

    for (path, name), expected in cases.items():
        pinned = Repo(path, pin_revisions=True)
        pinned.ask_revisions([name])
        asked.clear()
        with pytest.MonkeyPatch.context() as patch, contextlib.suppress(GateError):
            patch.setattr(Repo, "run", counting)
            pinned.toplevel()
            assert pinned.resolve(name) == (first if name in ("main", first) else None)
        assert len(asked) == expected, (name, asked)


def test_the_merge_base_comes_from_the_one_rev_parse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a base and a head named, their one merge-base is read from the same `rev-parse` (`BASE...HEAD`): no
    `merge-base` process, and the answer git's `merge-base` gives; where there are two merge-bases (a criss-cross)
    or none (unrelated histories), `merge-base` itself is asked, as before."""
    repo = GitRepo(tmp_path / "repo")
    root = repo.commit("root", {"a.txt": "0\n"})
    repo.branch("feature")
    repo.commit("f1", {"f.txt": "1\n"})
    repo.checkout("main")
    repo.commit("m1", {"m.txt": "1\n"})
    repo.git("merge", "-q", "--no-edit", "feature")  # main has seen feature's first commit
    repo.checkout("feature")
    repo.git("merge", "-q", "--no-edit", "main~1")  # ... and feature main's: two merge-bases from here on
    repo.git("checkout", "-q", "--orphan", "other")
    repo.commit("unrelated", {"o.txt": "1\n"})
    asked = _record_git(monkeypatch)
    cases = {("main~1", "feature~1"): 0, ("main", "feature"): 1, ("main", "other"): 1, ("main", "main"): 0}
    for (base, head), processes in cases.items():
        pinned = Repo(repo.path, pin_revisions=True)
        pinned.ask_revisions([head, base], merge_base_of=(base, head))
        ids = pinned.resolve(base), pinned.resolve(head)
        assert None not in ids
        asked.clear()
        got = pinned.merge_base(*ids)  # type: ignore[arg-type]
        merge_bases = [a for a in asked if a[0] == "merge-base"]
        expected = subprocess.run(
            ["git", "merge-base", *ids], cwd=repo.path, capture_output=True, text=True, check=False
        )
        assert (got, len(merge_bases)) == (expected.stdout.strip() or None, processes), (base, head, asked)
    assert root == Repo(repo.path).merge_base(repo.git("rev-parse", "main~1"), repo.git("rev-parse", "feature~1"))


def test_the_pinned_answers_are_what_each_question_alone_answers(tmp_path: Path) -> None:
    """Only a merge-base line of the one `rev-parse` may start with `^`: a name like `^feature` (which git
    answers with `^ID`) is not pinned as that commit, and a work tree root holding a newline followed by an id
    shifts no answer onto the wrong question."""
    for root in (tmp_path / "plain", tmp_path / ("x\n" + "0123456789abcdef" * 2 + "01234567")):
        repo = GitRepo(root)
        repo.commit("root", {"a.txt": "0\n"})
        repo.branch("feature")
        repo.commit("f1", {"f.txt": "1\n"})
        repo.checkout("main")
        repo.commit("m1", {"m.txt": "1\n"})
        for names, pair in [(["feature", "main"], ("main", "feature")), (["^feature"], None)]:
            pinned, alone = Repo(root, pin_revisions=True), Repo(root)
            pinned.ask_revisions(names, merge_base_of=pair)
            ids = [pinned.resolve(n) for n in names]
            assert ids == [alone.resolve(n) for n in names], (root, names)
            assert pinned.toplevel() == alone.toplevel()
            if pair:
                assert pinned.merge_base(*ids) == alone.merge_base(*ids)  # type: ignore[arg-type]


def test_the_trusted_side_of_the_property_run_never_imports_the_harness() -> None:
    """The gate's own process plans, launches and judges the sealed run: pytest, Hypothesis and pluggy belong to the
    workers. Imported here they cost the gate's process (alive beside every worker) about 7 MiB and their start-up."""
    code = (
        "import sys\n"
        "import evidence_gate.gate, evidence_gate.commands.freeze\n"
        "from evidence_gate.lanes.properties import census, lane, ledgers, replays\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in {'pytest', '_pytest', 'hypothesis', 'pluggy'}))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout
