"""(Re)make the receipts under tests/report_cases from real gate runs: `python scripts/make_report_cases.py`.

Run it only to refresh the inputs (commit ids and hashes change); `render_reports.py` then rewrites the goldens.
The demo's pull requests give the passing, human, freeze-ledger, tampering, static-only and failing-property
receipts; a repository built here gives the many-findings one (a patch rewriting 100 fixtures in three folders,
including hostile names, adding 20 freeze entries and editing a workflow). Until the sealed run records it itself,
the failing property's `failure` (path, line, statement, exception) is added from the locked test file's source,
as the interface between the property lane and the report specifies.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from evidence_gate import gate
from evidence_gate.errors import GateError
from evidence_gate.receipt.write import empty_receipt

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "report_cases"
ENV = {
    "GITHUB_SERVER_URL": "https://github.com",
    "GITHUB_REPOSITORY": "octo-org/alloc",
    "GITHUB_RUN_ID": "12345678901",
    "GITHUB_ACTION_REPOSITORY": "evidence-gate/evidence-gate",
    "GITHUB_ACTION_REF": "v1",
}
FROM_DEMO = {
    "pass": "01-honest-refactor",
    "human-patch": "02-human-fixture-edit",
    "freeze-entry-added": "03-freeze-entry-added",
    "tampering": "05-fixture-via-symlink",
    "property-failed": "08-broken-allocate",
}
PINNED = {
    "GIT_AUTHOR_NAME": "A",
    "GIT_AUTHOR_EMAIL": "a@example.com",
    "GIT_COMMITTER_NAME": "C",
    "GIT_COMMITTER_EMAIL": "c@example.com",
    "GIT_AUTHOR_DATE": "2026-09-01T12:00:00Z",
    "GIT_COMMITTER_DATE": "2026-09-01T12:00:00Z",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _write(case: str, receipt: dict[str, Any], context: dict[str, Any]) -> None:
    folder = CASES / case
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "receipt.json").write_text(
        json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False) + "\n", "utf-8"
    )
    (folder / "context.json").write_text(json.dumps(context, indent=2, sort_keys=True) + "\n", "utf-8")


def _demo(workdir: Path, *extra: str) -> Path:
    subprocess.run(
        [sys.executable, "-m", "evidence_gate", "demo", "--workdir", str(workdir), *extra],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return workdir / "receipts"


def _with_failure(receipt: dict[str, Any], repo: Path) -> dict[str, Any]:
    """The failing ledger's `failure`, read from the locked test file at the head (the assert that failed)."""
    for ledger in receipt["properties"]["ledgers"]:
        if ledger.get("failing_seed") is None:
            continue
        path = ledger["property_id"].split("::", 1)[0]
        source = subprocess.run(
            ["git", "-C", str(repo), "show", f"{receipt['git']['head']}:{path}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.splitlines()
        line = next(i for i, text in enumerate(source, 1) if text.strip().startswith("assert "))
        ledger["failure"] = {
            "path": path,
            "line": line,
            "statement": source[line - 1].strip()[:200],
            "exception": "AssertionError: assert 0 == 1\n +  where 0 = sum([0, 0])\n"
            " +    where [0, 0] = allocate(1, 2)",
        }
        for v in receipt["violations"]:
            if v["row"].startswith("property-failed") and v["message"].startswith(ledger["property_id"]):
                v["line"] = line
    return receipt


def _git(repo: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | PINNED
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()


def _many_findings(tmp: Path) -> dict[str, Any]:
    """A real gate run on a patch with 122 findings: 100 fixtures, 20 freeze entries, a workflow, a hostile name."""
    repo = tmp / "many"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    files = {
        f"fixtures/{folder}/case-{i:03}.json": f'{{"case": {i}}}\n'
        for folder, n in (("golden", 60), ("api/v2", 30), ("images", 8))
        for i in range(n)
    }
    files[".github/workflows/ci.yml"] = "on: pull_request\njobs: {}\n"
    files["freeze.yaml"] = "version: 1\nbudget: {max_entries: 40}\nentries: []\n"
    files["SCORE_PROPERTIES"] = "properties/test_p.py::test_x\n"
    files["properties/test_p.py"] = "def test_x():\n    assert True\n"
    for rel, content in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(content, "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "patch")
    for rel in list(files)[:98]:
        (repo / rel).write_text('{"case": "rewritten"}\n', "utf-8")
    (repo / "fixtures/golden/new `@octocat` www.example.com.json").write_text("{}\n", "utf-8")
    (repo / "fixtures/images/evil\n::error::x.png").write_text("x\n", "utf-8")
    (repo / ".github/workflows/ci.yml").write_text("on: pull_request_target\njobs: {}\n", "utf-8")
    entries = "".join(
        f"  - id: flaky-{i:02}\n    test: tests/test_flaky.py::test_{i:02}\n"
        f'    assertion_hash: "{"ab" * 16}"\n    added_at: "2026-09-15"\n'
        f'    expires: "2026-09-29"\n    owner: humans\n'
        for i in range(20)
    )
    (repo / "freeze.yaml").write_text(f"version: 1\nbudget: {{max_entries: 40}}\nentries:\n{entries}", "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "patch")
    opts = gate.CheckOptions(
        repo=repo, base="main", head="HEAD", author="agent-x[bot]", today=date(2026, 9, 20), run=False
    )
    receipt, _code = gate.evaluate(opts, tmp / "many.json")
    return receipt


def _run_problem(tmp: Path) -> dict[str, Any]:
    """A real gate run whose patch breaks the import of the code under test: the property cannot run cleanly."""
    repo = tmp / "broken"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    files = {
        ".evidence-gate.yml": json.dumps(
            {
                "version": 1,
                "properties": {
                    "seeds": [11, 12],
                    "fresh_seeds": 0,
                    "trials": 20,
                    "timeout_s": 60,
                    "jobs": 1,
                    "pythonpath": ["src"],
                },
            }
        ),
        "SCORE_PROPERTIES": "properties/test_double.py::test_double\n",
        "properties/test_double.py": "from hypothesis import given, strategies as st\n\nfrom calc import double\n\n\n"
        "@given(st.integers())\ndef test_double(x):\n    assert double(x) == x + x\n",
        "src/calc.py": "def double(x):\n    return x * 2\n",
    }
    for rel, content in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(content, "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "patch")
    (repo / "src/calc.py").write_text(
        "import fastmath  # not installed\n\n\ndef double(x):\n    return x * 2\n", "utf-8"
    )
    _git(repo, "commit", "-q", "-am", "patch")
    opts = gate.CheckOptions(repo=repo, base="main", head="HEAD", author="agent-x[bot]", today=date(2026, 9, 20))
    receipt, _code = gate.evaluate(opts, tmp / "broken.json")
    return receipt


def _config_invalid(tmp: Path) -> dict[str, Any]:
    """A real gate run whose base branch's configuration has a key the gate does not know."""
    repo = tmp / "config"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    files = {
        ".evidence-gate.yml": "version: 1\nproperties:\n  seeds: [11, 12]\n  trails: 20\n",
        "SCORE_PROPERTIES": "properties/test_p.py::test_x\n",
        "properties/test_p.py": "def test_x():\n    assert True\n",
        "src/calc.py": "def double(x):\n    return x * 2\n",
    }
    for rel, content in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(content, "utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _git(repo, "checkout", "-q", "-b", "patch")
    (repo / "src/calc.py").write_text("def double(x):\n    return x + x\n", "utf-8")
    _git(repo, "commit", "-q", "-am", "patch")
    opts = gate.CheckOptions(repo=repo, base="main", head="HEAD", author="agent-x[bot]", today=date(2026, 9, 20))
    receipt, _code = gate.evaluate(opts, tmp / "config.json")
    return receipt


SINGLE = {"run-problem": _run_problem, "config-invalid": _config_invalid}  # re-made alone: `make_report_cases.py NAME`


def main(argv: list[str] | None = None) -> int:
    """Rewrite every case's receipt.json and context.json (one of SINGLE alone with its name as the argument)."""
    args = argv if argv is not None else sys.argv[1:]
    if len(args) == 1 and args[0] in SINGLE:
        with tempfile.TemporaryDirectory(prefix="report-cases-") as tmp_name:
            _write(args[0], SINGLE[args[0]](Path(tmp_name)), {"env": ENV, "artifact_id": "987654321"})
        return 0
    with tempfile.TemporaryDirectory(prefix="report-cases-") as tmp_name:
        tmp = Path(tmp_name)
        for name, make in SINGLE.items():
            _write(name, make(tmp), {"env": ENV, "artifact_id": "987654321"})
        receipts = _demo(tmp / "demo")
        for case, name in FROM_DEMO.items():
            receipt = json.loads((receipts / f"{name}.json").read_text("utf-8"))
            if case == "property-failed":
                receipt = _with_failure(receipt, tmp / "demo" / "repo")
            _write(case, receipt, {"env": ENV, "artifact_id": "987654321"})
        static = _demo(tmp / "static", "--no-run")
        _write(
            "static-only",
            json.loads((static / f"{FROM_DEMO['pass']}.json").read_text("utf-8")),
            {"env": ENV, "artifact_id": "987654321"},
        )
        _write("many-findings", _many_findings(tmp), {"env": ENV, "artifact_id": "987654321"})
        fork = json.loads((receipts / f"{FROM_DEMO['tampering']}.json").read_text("utf-8"))
        _write(
            "fork-fallback",
            fork,
            {
                "env": ENV,
                "notes": [
                    "cannot create a check run (create check run: HTTP 403: Resource not accessible by integration); "
                    "annotations are printed as workflow commands and the verdict is this step's exit code (a fork pull "
                    "request or a token without `checks: write`)"
                ],
            },
        )
        missing = empty_receipt()
        gate.precondition(
            missing,
            GateError(
                "the baseline commit 3f2a9c1e0b7d is not in this clone",
                row="history-missing",
                fix="add `fetch-depth: 0` to actions/checkout (with: {fetch-depth: 0}), or run `git fetch origin "
                "3f2a9c1e0b7d`",
            ),
        )
        _write("history-missing", missing, {"env": ENV})
        crashed = empty_receipt()
        crashed["errors"] += [  # as gate.evaluate records a crash: describe_crash's line, then the traceback
            f"internal error: KeyError: 'entries' at gate.py:201 in check; fix: {gate.CRASH_FIX}",
            'Traceback (most recent call last):\n  File "gate.py", line 201, in check\n'
            "    ledger = freeze_ledger.check(...)\nKeyError: 'entries'\n",
        ]
        _write("aborted", crashed, {"env": ENV})
    shutil.rmtree(CASES / "__pycache__", ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
