"""The command line: output formats, the exit-code table and the receipt written in every case."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli, contexts, gate
from evidence_gate.model import Violation
from evidence_gate.report import row_docs as report_rows
from evidence_gate.report.registry import render_text
from support import doc_pages, scenario_repo


def _repo(tmp_path: Path, patch: dict[str, Any] | None = None, base: dict[str, Any] | None = None) -> Path:
    recipe = {"patch": {"files": patch or {"src/alloc.py": "def allocate(total, parts):\n    return [total]\n"}}}
    if base:
        recipe["base"] = {"files": base}
    return scenario_repo.build(recipe, tmp_path / "repo").path


def _run(repo: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any] | None]:
    receipt = tmp_path / "out" / "receipt.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(repo),
            "--receipt",
            str(receipt),
            "--today",
            "2026-09-20",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    data = json.loads(receipt.read_text("utf-8")) if receipt.exists() else None
    return proc, data


def test_pass_text_output(tmp_path: Path) -> None:
    """A clean static run exits 0 and ends with the decision line naming the row."""
    proc, receipt = _run(_repo(tmp_path), tmp_path, "--no-run")
    assert proc.returncode == 0, proc.stderr
    assert receipt is not None
    assert receipt["state"] == "final"
    assert receipt["ok"] is True
    assert proc.stdout.splitlines()[-2:] == ["", f"PASS: {report_rows.title('pass')} [pass]"]
    assert "properties: not run (--no-run: static lanes only)" in proc.stdout


def test_json_output_is_the_receipt(tmp_path: Path) -> None:
    """`--format json` prints exactly the receipt that was written."""
    proc, receipt = _run(_repo(tmp_path), tmp_path, "--no-run", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == receipt


def test_decision_fail_is_exit_10_with_located_violation(tmp_path: Path) -> None:
    """A freeze entry added by the patch exits 10 and prints `error[freeze-id-added]`, `--> freeze.yaml:LINE` and
    that line of the head's ledger."""
    ledger = scenario_repo.DEFAULT_BASE["freeze.yaml"] + scenario_repo.FREEZE_ADD
    proc, receipt = _run(_repo(tmp_path, {"freeze.yaml": ledger}), tmp_path, "--no-run")
    assert proc.returncode == 10, proc.stdout + proc.stderr
    assert receipt is not None
    assert receipt["decision"]["row"] == "freeze-id-added"
    assert proc.stdout.startswith("error[freeze-id-added]: "), proc.stdout
    line = int(re.findall(r"--> freeze\.yaml:(\d+)", proc.stdout)[0])
    assert f"{line} | {ledger.splitlines()[line - 1]}" in proc.stdout.splitlines(), proc.stdout
    assert proc.stdout.splitlines()[-1].startswith("FAIL: ")


def test_precondition_is_exit_11(tmp_path: Path) -> None:
    """An invalid baseline configuration exits 11 with a final receipt on config-invalid."""
    proc, receipt = _run(
        _repo(tmp_path, base={".evidence-gate.yml": "version: 1\nagents: yes\n"}), tmp_path, "--no-run"
    )
    assert proc.returncode == 11, proc.stdout + proc.stderr
    assert receipt is not None
    assert receipt["state"] == "final"
    assert receipt["decision"]["row"] == "config-invalid"
    assert "[config-invalid]" in proc.stdout


@pytest.mark.parametrize("args", [["--today", "yesterday"], ["--format", "xml"], ["--shard", "3/2"]])
def test_bad_arguments_are_exit_2(tmp_path: Path, args: list[str]) -> None:
    """Malformed options are usage errors (exit 2)."""
    proc, _ = _run(tmp_path, tmp_path, *args)
    assert proc.returncode == 2


def test_not_a_repository_is_usage(tmp_path: Path) -> None:
    """A --repo that is not a git checkout is a usage error; the receipt still records it, aborted."""
    (tmp_path / "empty").mkdir()
    proc, receipt = _run(tmp_path / "empty", tmp_path, "--no-run")
    assert proc.returncode == 2
    assert "not a git repository" in proc.stderr
    assert receipt is not None
    assert receipt["state"] == "aborted"


@pytest.mark.parametrize("name", ["missing", "a-file"])
def test_repo_that_is_not_a_folder_is_usage(tmp_path: Path, name: str) -> None:
    """A --repo that does not exist (or is a file) is exit 2 naming it, not "git is not installed" and a bug."""
    (tmp_path / "a-file").write_text("x\n")
    proc, receipt = _run(tmp_path / name, tmp_path, "--no-run")
    assert proc.returncode == 2, proc.stderr
    assert f"{tmp_path / name} is not a folder" in proc.stderr
    assert "not installed" not in proc.stderr
    assert receipt is not None


def test_non_merge_head_without_base_is_usage(tmp_path: Path) -> None:
    """A plain branch head with no --base exits 2 and says to pass --base."""
    repo = _repo(tmp_path)
    subprocess.run(["git", "checkout", "-q", "pr"], cwd=repo, check=True)
    proc, receipt = _run(repo, tmp_path, "--no-run")
    assert proc.returncode == 2
    assert "--base" in proc.stderr
    assert receipt is not None


def test_push_event_is_usage_and_writes_receipt(tmp_path: Path, shared_dir: Path) -> None:
    """A push payload exits 2, names the supported events, and still leaves a receipt."""
    event = shared_dir / "github-api" / "events" / "push.default.1.json"
    proc, receipt = _run(_repo(tmp_path), tmp_path, "--no-run", "--event", str(event))
    assert proc.returncode == 2
    assert "pull_request" in proc.stderr
    assert receipt is not None
    assert receipt["state"] == "aborted"


def test_bad_event_sha_is_precondition_with_receipt(tmp_path: Path) -> None:
    """An event whose head sha is malformed exits 11, writes a final event-mismatch receipt and reports it on stdout."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"base": {"sha": "a" * 40}, "head": {"sha": "zz"}}}), "utf-8")
    proc, receipt = _run(_repo(tmp_path), tmp_path, "--no-run", "--event", str(event))
    assert proc.returncode == 11
    assert receipt is not None
    assert receipt["decision"]["row"] == "event-mismatch"
    assert proc.stdout.splitlines()[-1] == "FAIL: Event does not match the commits [event-mismatch]", proc.stdout
    proc, receipt = _run(_repo(tmp_path / "again"), tmp_path, "--no-run", "--event", str(event), "--format", "json")
    assert proc.returncode == 11
    assert json.loads(proc.stdout) == receipt


def test_crash_is_aborted_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A lane that raises leaves an aborted receipt with the traceback, and the command exits 1."""
    repo = _repo(tmp_path)

    def boom(*_args: object) -> None:
        raise RuntimeError("lane exploded")

    monkeypatch.setattr(gate.fixtures, "check_records", boom)
    receipt_path = tmp_path / "receipt.json"
    code = cli.main(["check", "--repo", str(repo), "--receipt", str(receipt_path), "--no-run", "--today", "2026-09-20"])
    assert code == 1
    receipt = json.loads(receipt_path.read_text("utf-8"))
    assert receipt["state"] == "aborted"
    assert receipt["ok"] is False
    assert receipt["git"]["head"]  # what was learned before the crash is kept
    assert any("lane exploded" in e for e in receipt["errors"])
    assert "bug in evidence-gate" in capsys.readouterr().err


def test_crash_while_planning_contexts_records_its_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The contexts planner's own failure is recorded like a lane's: an aborted receipt with the traceback (whose
    module that path imports only then), exit 1."""
    repo = _repo(tmp_path)

    def boom(*_args: object) -> None:
        raise RuntimeError("planner exploded")

    monkeypatch.setattr(contexts, "_plan", boom)
    receipt_path = tmp_path / "receipt.json"
    code = cli.main(["check", "--repo", str(repo), "--receipt", str(receipt_path), "--no-run", "--today", "2026-09-20"])
    assert code == 1
    receipt = json.loads(receipt_path.read_text("utf-8"))
    assert (receipt["state"], receipt["ok"]) == ("aborted", False)
    assert any("Traceback (most recent call last)" in e and "planner exploded" in e for e in receipt["errors"])


def test_missing_tree_object_is_never_a_pass(tmp_path: Path) -> None:
    """A baseline whose tree object is gone from the clone stops the gate on a precondition, not a pass."""
    repo = _repo(tmp_path)
    tree = subprocess.run(
        ["git", "rev-parse", "HEAD^1^{tree}"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    loose = repo / ".git" / "objects" / tree[:2] / tree[2:]
    loose.chmod(0o644)
    loose.unlink()
    proc, receipt = _run(repo, tmp_path, "--no-run")
    assert receipt is not None
    assert receipt["ok"] is False
    assert proc.returncode == 11, proc.stdout + proc.stderr
    assert receipt["decision"]["row"] == "history-missing"


def test_render_text_shape() -> None:
    """Each violation prints as a compiler diagnostic, `error[row]: message` then `--> path:line`, help once per
    row, and a blank line before the verdict."""
    receipt = {
        "ok": False,
        "errors": [],
        "decision": {"row": "freeze-id-added", "title": "Freeze entry added", "gate": "fail", "matched": []},
        "violations": [
            Violation("freeze-id-added", "entry 'x' is new", "freeze.yaml", 12).to_json(),
            Violation("evidence-path-edited", "touched", "fixtures/a.json").to_json(),
            Violation("run-integrity", "no runner").to_json(),
        ],
    }
    lines = render_text(receipt).splitlines()
    assert lines[:2] == ["error[freeze-id-added]: entry 'x' is new", " --> freeze.yaml:12"]
    assert "error[evidence-path-edited]: touched" in lines and " --> fixtures/a.json" in lines
    assert "error[run-integrity]: no runner" in lines
    assert sum(line.startswith("help: ") for line in lines) == 3
    assert lines[-2:] == ["", "FAIL: Freeze entry added [freeze-id-added]"]


@pytest.mark.parametrize("path", ["SCORE_PROPERTIES", ".evidence-gate.yml"])
def test_missing_trusted_blob_is_history_missing(tmp_path: Path, path: str) -> None:
    """A trusted file whose blob is absent from the clone is history-missing, not an invalid configuration."""
    repo = _repo(tmp_path, base={".evidence-gate.yml": "version: 1\n"})
    blob = subprocess.run(
        ["git", "rev-parse", f"HEAD^1:{path}"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()
    loose = repo / ".git" / "objects" / blob[:2] / blob[2:]
    loose.chmod(0o644)
    loose.unlink()
    proc, receipt = _run(repo, tmp_path, "--no-run")
    assert receipt is not None
    assert proc.returncode == 11, proc.stdout + proc.stderr
    assert receipt["decision"]["row"] == "history-missing"


def _leaf_options(parser: Any, prefix: str = "") -> dict[str, set[str]]:
    """Visible long options of every leaf subcommand (`check`, `freeze hash`, ...), help and hidden ones left out."""
    found: dict[str, set[str]] = {}
    own: set[str] = set()
    for action in parser._actions:  # argparse has no public list of a parser's actions
        if isinstance(action.choices, dict):  # the subcommands
            for name, sub in action.choices.items():
                found.update(_leaf_options(sub, f"{prefix} {name}".strip()))
        elif action.help != argparse.SUPPRESS:
            own.update(o for o in action.option_strings if o.startswith("--") and o not in {"--help", "--version"})
    if prefix and not found:
        found[prefix] = own
    return found


def test_readme_cli_synopsis_lists_every_option() -> None:
    """The CLI page's synopsis names, per subcommand, exactly the long options the parser accepts."""
    block = doc_pages.read("docs/cli.md").split("<!-- section:cli -->", 1)[1].split("```", 2)[1]
    documented: dict[str, set[str]] = {}
    command = ""
    for line in (text.split("#", 1)[0] for text in block.splitlines()):
        if line.startswith("evidence-gate "):
            command = " ".join(re.findall(r"\s([a-z][a-z-]*)(?=\s|$)", line.split("[", 1)[0].split("--", 1)[0]))
            documented[command] = set()
        if line.strip():
            documented[command].update(re.findall(r"--[a-z][a-z-]*", line))
    assert documented == _leaf_options(cli.build_parser())


@pytest.mark.parametrize("columns", [None, "57", "0", "wide"])
def test_help_is_laid_out_as_argparse_lays_it_out(columns: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The help formatter that reads the width without shutil prints every page exactly as argparse's own does,
    with `COLUMNS` set, unusable or unset."""
    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    ours = cli.build_parser()
    monkeypatch.setattr(cli, "_Parser", argparse.ArgumentParser)
    stock = cli.build_parser()

    def pages(parser: argparse.ArgumentParser) -> list[str]:
        found = [parser.format_help()]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found += [page for child in action.choices.values() for page in pages(child)]
        return found

    assert pages(ours) == pages(stock)
    assert len(pages(ours)) == 11


@pytest.mark.parametrize("command", ["check", "demo", "verify", "action", "merge", "freeze", "pre-push", "history"])
def test_a_parser_for_one_command_is_that_commands_parser(command: str) -> None:
    """`build_parser(command)` (what `main` builds when the first word names a subcommand) prints the same
    top-level page and the same page for `command` as the whole parser; the other subcommands are named only."""

    def pages(parser: argparse.ArgumentParser) -> dict[str, str]:
        found = {"": parser.format_help()}
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                found |= {
                    f"{name} {k}".strip(): v for name, child in action.choices.items() for k, v in pages(child).items()
                }
        return found

    whole, one = pages(cli.build_parser()), pages(cli.build_parser(command))
    assert one[""] == whole[""]
    mine = {k for k in whole if k.split(" ")[0] == command}
    assert {k: one.get(k) for k in mine} == {k: whole[k] for k in mine}


def test_the_command_ends_without_teardown_but_flushed_and_with_its_handlers(tmp_path: Path) -> None:
    """`entry` (the `evidence-gate` command) skips the interpreter's teardown, not what an exit owes: exit handlers
    run, a thread that is no daemon is waited for (the exit is then Python's own), the output is flushed whole."""
    script = f"""
import atexit, sys, threading, time
from pathlib import Path
from evidence_gate import cli

def slow():
    time.sleep(0.3)
    Path({str(tmp_path / "thread")!r}).write_text("done")

def main():
    atexit.register(lambda: Path({str(tmp_path / "atexit")!r}).write_text("ran"))
    if sys.argv[1] == "thread":
        threading.Thread(target=slow).start()
    print("x" * 5000)
    return 7

cli.main = main
cli.entry()
"""
    for mode in ("plain", "thread"):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        proc = subprocess.run(
            [sys.executable, "-c", script, mode], capture_output=True, text=True, env=env, check=False
        )
        assert (proc.returncode, proc.stdout, proc.stderr) == (7, "x" * 5000 + "\n", "")
        assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "done"


def test_output_that_cannot_be_flushed_is_exit_120_as_python_s_own(tmp_path: Path) -> None:
    """A reader that went away before the report was written (`evidence-gate check | head`, in the text report or
    when the exit flushes it): exit 120, as Python's own exit gives, with one line on stderr naming the fix, never
    a traceback; the receipt is written."""
    argv = [sys.executable, "-m", "evidence_gate", "check", "--repo", str(_repo(tmp_path)), "--no-run"]
    argv += ["--receipt", str(tmp_path / "r.json"), "--today", "2026-09-20"]
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # the report waits for the exit's flush
    for extra, env in [([], plain), (["--format", "json"], plain), ([], plain | {"PYTHONUNBUFFERED": "1"})]:
        proc = subprocess.Popen([*argv, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # before the child writes
        assert proc.wait(timeout=120) == 120
        said = proc.stderr.read().decode()
        assert said.startswith("evidence-gate: error: standard output was closed") and said.count("\n") == 1, said
        assert json.loads((tmp_path / "r.json").read_text("utf-8"))["decision"]["row"] == "pass"


def test_help_whose_reader_went_away_is_exit_120_with_one_line() -> None:
    """argparse's own exits (`--help`, `--version`) leave through `entry` too: one line, never "Exception ignored"."""
    plain = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    for argv in (["check", "--help"], ["--version"]):
        proc = subprocess.Popen(
            [sys.executable, "-m", "evidence_gate", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=plain
        )
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()
        assert proc.wait(timeout=60) == 120
        said = proc.stderr.read().decode()
        assert said.startswith("evidence-gate: error: standard output was closed") and said.count("\n") == 1, said
