"""`evidence-gate freeze hash` and `freeze propose`."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest

from evidence_gate import cli
from evidence_gate.commands.freeze import failing_hash, propose
from evidence_gate.errors import EXIT_FAIL, GateError
from evidence_gate.git import Repo
from evidence_gate.sealed.worker.assertion_hash import statement_hash
from support.property_repo import PROPERTY, judge, red_repo
from support.repo_builder import GitRepo


def test_freeze_hash_prints_the_failing_assertions_hash(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """The hash printed is the normalized failing assert of the property, as the gate computes it."""
    red_repo(git_repo)
    code = cli.main(["freeze", "hash", "properties/test_double.py::test_double", "--repo", str(git_repo.path)])
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out.strip() == statement_hash(PROPERTY, 8)
    assert "binds: AssertionError at properties/test_double.py:8" in captured.err


NEEDS_DEPENDENCY = PROPERTY.replace("from calc import double", "from calc import double\nimport helperdep")
WRITE_DEPENDENCY = 'printf "VALUE = 1\\n" > "$EVIDENCE_GATE_SITE/helperdep.py"'


def test_freeze_hash_runs_properties_install_first(git_repo: GitRepo, capsys: pytest.CaptureFixture[str]) -> None:
    """A property importing a module only `properties.install` provides is hashed like the gate would run it."""
    red_repo(git_repo, {"properties/test_double.py": NEEDS_DEPENDENCY}, install=WRITE_DEPENDENCY)
    code = cli.main(["freeze", "hash", "properties/test_double.py::test_double", "--repo", str(git_repo.path)])
    assert code == 0
    assert capsys.readouterr().out.strip() == statement_hash(NEEDS_DEPENDENCY, 9)


def test_freeze_hash_reports_a_failing_install(git_repo: GitRepo) -> None:
    """An install that fails stops `freeze hash` with run-integrity instead of a misleading collection error."""
    red_repo(git_repo, install="echo broken-install >&2; exit 3")
    with pytest.raises(GateError, match=r"properties\.install exited 3 on HEAD.*broken-install") as raised:
        failing_hash(Repo(git_repo.path), "properties/test_double.py::test_double")
    assert raised.value.row == "run-integrity"


def test_freeze_hash_refuses_a_passing_test(git_repo: GitRepo) -> None:
    """No failure, nothing to hash: a usage error (exit 2)."""
    red_repo(git_repo)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    with pytest.raises(GateError, match="did not fail") as raised:
        failing_hash(Repo(git_repo.path), "properties/test_double.py::test_double")
    assert raised.value.exit_code == 2


def test_freeze_hash_of_an_unknown_node_is_a_usage_error(git_repo: GitRepo) -> None:
    """A node id that collects nothing is exit 2 asking to check the id, not "run it where it fails"."""
    red_repo(git_repo)
    with pytest.raises(GateError, match="was not collected on HEAD") as raised:
        failing_hash(Repo(git_repo.path), "properties/test_double.py::test_typo")
    assert raised.value.exit_code == 2
    assert "check the node id" in str(raised.value)


def test_propose_only_for_freeze_eligible(git_repo: GitRepo, tmp_path: Path) -> None:
    """A red property bound to fixtures is freeze_eligible and gets an entry; a passing one is refused."""
    red_repo(git_repo, extra={"fixtures/a.txt": "x\n"}, fresh_seeds=0)
    git_repo.commit("noop", {"README.md": "x\n"})
    receipt = judge(git_repo, tmp_path)
    entry = propose(receipt, "properties/test_double.py::test_double", date(2026, 9, 1))
    assert 'expires: "2026-09-15"' in entry and receipt["properties"]["ledgers"][0]["assertion_hash"] in entry
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    passing = judge(git_repo, tmp_path)
    with pytest.raises(GateError, match="budget_pass_no_freeze"):
        propose(passing, "properties/test_double.py::test_double", date(2026, 9, 1))
    (tmp_path / "r.json").write_text(json.dumps(passing))
    assert (
        cli.main(
            [
                "freeze",
                "propose",
                "--receipt",
                str(tmp_path / "r.json"),
                "--test",
                "properties/test_double.py::test_double",
            ]
        )
        == EXIT_FAIL
    )  # a refusal, not a crash


def test_propose_from_a_file_that_is_not_a_receipt_names_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A receipt path holding a JSON array is exit 2 with a fix naming the receipt `check` writes."""
    (tmp_path / "r.json").write_text("[]\n")
    code = cli.main(["freeze", "propose", "--receipt", str(tmp_path / "r.json"), "--test", "p.py::t"])
    assert code == 2
    assert "fix: pass the receipt.json written by `evidence-gate check`" in capsys.readouterr().err
