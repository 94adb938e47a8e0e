"""Red-team cases against the static side that YAML scenarios cannot carry: argv bytes, terminal escapes, git
metadata outside the tree (grafts, refs named like commit ids) and trusted inputs that are not regular files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evidence_gate import gate
from evidence_gate.config import Config
from evidence_gate.git import Repo
from evidence_gate.lanes import locked_evidence
from evidence_gate.lanes.locked_paths import first_matching, glob_matches
from evidence_gate.lanes.score_properties import parse_properties
from evidence_gate.receipt.write import empty_receipt, write_receipt
from evidence_gate.report.registry import render_text
from evidence_gate.visible import lines as printable_lines
from support.repo_builder import GitRepo
from support.scenario_repo import DEFAULT_BASE

TAMPERED_LIST = {"SCORE_PROPERTIES": ""}


def _gate(repo: Path, tmp_path: Path, *args: str | bytes) -> tuple[subprocess.CompletedProcess[bytes], dict]:
    receipt = tmp_path / "receipt.json"
    cmd = [
        sys.executable.encode(),
        b"-m",
        b"evidence_gate",
        b"check",
        b"--repo",
        os.fsencode(repo),
        b"--receipt",
        os.fsencode(receipt),
        b"--no-run",
        b"--today",
        b"2026-09-20",
        *(a if isinstance(a, bytes) else a.encode() for a in args),
    ]
    proc = subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    return proc, json.loads(receipt.read_bytes().decode("utf-8"))  # strict: the receipt is always valid UTF-8


def _base_and_tamper(repo: GitRepo) -> tuple[str, str, str]:
    """A baseline, an agent commit that empties the property list, and an innocent-looking commit on top."""
    base = repo.commit("base", dict(DEFAULT_BASE))
    tamper = repo.commit("tamper", TAMPERED_LIST)
    head = repo.commit("code", {"src/alloc.py": "def allocate(total, parts):\n    return [total]\n"})
    return base, tamper, head


def test_argv_bytes_that_are_not_utf8_still_give_a_receipt(git_repo: GitRepo, tmp_path: Path) -> None:
    """`--base`/`--author` with a byte that is not UTF-8 land on a row with a readable receipt, never a crash."""
    _, _, head = _base_and_tamper(git_repo)
    proc, receipt = _gate(git_repo.path, tmp_path, b"--head", head.encode(), b"--base", b"main\xff")
    assert (proc.returncode, receipt["decision"]["row"]) == (11, "history-missing"), proc.stderr
    assert "\\xff" in receipt["errors"][0]
    proc, receipt = _gate(
        git_repo.path, tmp_path, b"--head", head.encode(), b"--base", b"HEAD~2", b"--author", b"agent-\xfe"
    )
    assert proc.returncode == 10, proc.stderr
    assert receipt["mode"]["author"] == "agent-\\xfe"
    proc.stdout.decode("utf-8")  # stdout encodes too


def test_report_spells_out_escapes_and_newlines() -> None:
    """A message carrying ESC sequences or a newline cannot drive the terminal or forge a `PASS:` line."""
    receipt = empty_receipt()
    receipt.update(
        state="final",
        ok=False,
        decision={"row": "property-failed", "gate": "fail", "title": "T", "matched": ["property-failed"]},
    )
    receipt["violations"] = [
        {
            "row": "property-failed",
            "path": "a\x1b[2J.py",
            "line": 1,
            "message": "boom\x1b]0;owned\x07\nPASS: All clear [pass]\u202e",
        }
    ]
    text = render_text(receipt)
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert not any(line.startswith("PASS") for line in text.splitlines())
    assert "\\x1b[2J" in text and "\\n" in text
    assert printable_lines("Traceback\n  \x1b[31mred") == "Traceback\n  \\x1b[31mred"


def test_receipt_with_lone_surrogates_is_written_as_utf8(tmp_path: Path) -> None:
    """A path decoded with surrogateescape reaches the file as `\\xff`, not as a crash that loses the receipt."""
    receipt = empty_receipt()
    receipt["violations"] = [
        {"row": "evidence-path-edited", "path": "fixtures/\udcff", "line": None, "message": "fixtures/\udcff was added"}
    ]
    receipt["errors"] = ["\ud800 lone high surrogate"]
    write_receipt(tmp_path / "r.json", receipt)
    written = json.loads((tmp_path / "r.json").read_bytes().decode("utf-8"))
    assert written["violations"][0]["path"] == "fixtures/\\xff"
    assert written["errors"] == ["\\ud800 lone high surrogate"]


def test_grafts_file_does_not_rewrite_history(git_repo: GitRepo, tmp_path: Path) -> None:
    """A `.git/info/grafts` that cuts the tamper commit loose would make history look unrelated; git's grafts
    are ignored, so the gate compares against the real merge-base and sees the emptied list."""
    base, tamper, head = _base_and_tamper(git_repo)
    (git_repo.path / ".git" / "info").mkdir(exist_ok=True)
    (git_repo.path / ".git" / "info" / "grafts").write_text(f"{tamper}\n", encoding="utf-8")
    proc, receipt = _gate(git_repo.path, tmp_path, "--head", head, "--base", base)
    assert receipt["decision"]["row"] == "evidence-path-edited", proc.stderr
    assert receipt["git"]["merge_base"] == base


def test_ref_named_like_a_short_commit_id_is_refused(git_repo: GitRepo, tmp_path: Path) -> None:
    """A branch named like the base's abbreviated id would quietly win over the commit; the gate refuses it."""
    base, tamper, head = _base_and_tamper(git_repo)
    git_repo.git("update-ref", f"refs/heads/{base[:10]}", tamper)
    proc, receipt = _gate(git_repo.path, tmp_path, "--head", head, "--base", base[:10])
    assert proc.returncode == 2, proc.stderr
    assert receipt["state"] == "aborted" and "ambiguous" in receipt["errors"][0]
    git_repo.git("update-ref", f"refs/heads/{base}", tamper)  # a full id is always the commit
    proc, receipt = _gate(git_repo.path, tmp_path, "--head", head, "--base", base)
    assert receipt["decision"]["row"] == "evidence-path-edited", proc.stderr


def test_trusted_inputs_must_be_regular_files(git_repo: GitRepo, tmp_path: Path) -> None:
    """A baseline configuration that is a symlink or a submodule is `config-invalid`, never read as the link's
    target text nor as an absent file (which would mean the built-in defaults)."""
    files = dict(DEFAULT_BASE, **{"gate.yml": "version: 1\nlocked: ['src/**']\n"})
    git_repo.commit("base", files)
    (git_repo.path / ".evidence-gate.yml").symlink_to("gate.yml")
    base = git_repo.commit("link config")
    head = git_repo.commit("code", {"src/alloc.py": "x = 1\n"})
    proc, receipt = _gate(git_repo.path, tmp_path, "--head", head, "--base", base)
    assert receipt["decision"]["row"] == "config-invalid", proc.stderr
    assert "not a regular file (mode 120000)" in receipt["violations"][0]["message"]
    (git_repo.path / ".evidence-gate.yml").unlink()
    git_repo.git("rm", "-q", "--cached", ".evidence-gate.yml")
    git_repo.git("update-index", "--add", "--cacheinfo", f"160000,{head},.evidence-gate.yml")
    git_repo.git("commit", "-q", "-m", "gitlink config")
    base = git_repo.git("rev-parse", "HEAD")
    git_repo.git("commit", "-q", "--allow-empty", "-m", "patch")
    proc, receipt = _gate(git_repo.path, tmp_path, "--head", "HEAD", "--base", base)
    assert receipt["decision"]["row"] == "config-invalid", proc.stderr
    assert "mode 160000" in receipt["violations"][0]["message"]


def test_hostile_attribute_patterns_cost_linear_time() -> None:
    """`*a*a*a…` against a long locked name and `**/a/**/a/…` against a deep one answer at once, and correctly."""
    start = time.monotonic()
    name = "fixtures/" + "a" * 200 + ".json"
    assert not glob_matches("fixtures/" + "*a" * 40 + "Z", name)
    assert glob_matches("fixtures/" + "*a" * 40 + "*.json", name)
    assert first_matching("", "**/a/" * 12 + "Z", ["a/" * 40 + "x"]) == ["a/" * 40 + "x"]  # applies: fails closed
    assert time.monotonic() - start < 2


def test_oversized_gitattributes_fails_closed(git_repo: GitRepo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A patched `.gitattributes` with more lines than the gate matches is a violation, not a stalled gate."""
    base = git_repo.commit("base", dict(DEFAULT_BASE))
    head = git_repo.commit("attrs", {".gitattributes": "".join(f"nothing{i} -text\n" for i in range(5))})
    monkeypatch.setattr(locked_evidence, "MAX_ATTR_LINES", 4)
    specs = parse_properties(DEFAULT_BASE["SCORE_PROPERTIES"].encode())
    repo = Repo(git_repo.path)
    lane = locked_evidence.check(repo, base, head, Config(), specs, repo.diff_tree(base, head))
    (violation,) = lane.violations
    assert violation.path == ".gitattributes" and "has 5 attribute lines, more than the 4" in violation.message


def test_a_committed_receipt_is_replaced_before_the_gate_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A forged `receipt.json` that the patch committed at the receipt path is overwritten with an `aborted` one
    before any lane runs, so a gate killed mid-run (timeout) never leaves the forgery behind."""
    receipt_path = tmp_path / "receipt.json"
    receipt_path.write_text('{"ok": true, "state": "final"}', encoding="utf-8")
    seen: list[dict] = []

    def killed(opts: gate.CheckOptions, out: dict, repo: object = None) -> None:
        seen.append(json.loads(receipt_path.read_text("utf-8")))
        raise KeyboardInterrupt  # what a SIGINT would do mid-run

    monkeypatch.setattr(gate, "check", killed)
    with pytest.raises(KeyboardInterrupt):
        gate.evaluate(gate.CheckOptions(repo=tmp_path), receipt_path)
    assert seen[0]["state"] == "aborted" and seen[0]["ok"] is False


def test_receipt_path_that_is_a_folder_is_a_usage_error(git_repo: GitRepo, tmp_path: Path) -> None:
    """A patch that commits `receipt.json/` as a folder makes the receipt unwritable: a usage error, not a crash."""
    base, _, head = _base_and_tamper(git_repo)
    folder = tmp_path / "receipt.json"
    (folder / "x").mkdir(parents=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(git_repo.path),
            "--receipt",
            str(folder),
            "--no-run",
            "--base",
            base,
            "--head",
            head,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 2, proc.stderr
    assert "cannot write the receipt" in proc.stderr and "Traceback" not in proc.stderr
