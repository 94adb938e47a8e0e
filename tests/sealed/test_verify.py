"""`evidence-gate verify`: a demo receipt re-derived from git objects and its seeds, and every hand edit named."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli, gate
from evidence_gate.commands import demo, verify
from evidence_gate.git import Repo

BROKEN = "broken-allocate"


@pytest.fixture(scope="module")
def demo_receipt(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, Any]]:
    """The demo repository (with one fresh seed) and the receipt of its broken-allocate pull request (a property
    that fails)."""
    root = tmp_path_factory.mktemp("demo")
    files = demo.example_files()
    # One fresh seed too (the demo draws none), so that replaying a recorded fresh seed is part of the case.
    files[".evidence-gate.yml"] = files[".evidence-gate.yml"].replace(b"fresh_seeds: 0", b"fresh_seeds: 1")
    prs = demo.patches(files)
    demo.build_repository(root / "repo", files, prs)
    n = next(i for i, p in enumerate(prs, start=1) if p.name == BROKEN)
    opts = gate.CheckOptions(
        repo=root / "repo", head=f"refs/pull/{n}/merge", author=prs[n - 1].author, today=demo.TODAY
    )
    receipt, _code = gate.evaluate(opts, root / "receipt.json")
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    return root / "repo", root / "receipt.json", receipt


def test_a_demo_receipt_is_reproduced(
    demo_receipt: tuple[Path, Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The receipt's commits and seeds (planned and fresh) give the same rows, ledgers, counts and examples."""
    repo, path, receipt = demo_receipt
    assert receipt["properties"]["fresh_seeds"]  # the fresh draw is replayed, not drawn again
    assert cli.main(["verify", str(path), "--repo", str(repo)]) == 0
    assert capsys.readouterr().out == "reproduced\n"


def _edited(receipt: dict[str, Any], edit: str) -> dict[str, Any]:
    out = copy.deepcopy(receipt)
    ledger = next(x for x in out["properties"]["ledgers"] if x["failing_seed"] is not None)
    if edit == "row":
        out["decision"]["row"] = "pass"
    elif edit == "status":
        ledger["status"] = "budget_pass_no_freeze"
    elif edit == "examples":
        seed = next(iter(ledger["examples"]))
        ledger["examples"][seed] += 1
    elif edit == "falsifying":
        ledger["falsifying"] = "Falsifying example: test_x(total=1)"
    return out


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ("row", "decision.row: the receipt says 'pass', re-derived 'property-failed'"),
        ("status", "status: the receipt says 'budget_pass_no_freeze', re-derived"),
        ("examples", "examples: the receipt says"),
        ("falsifying", "falsifying: the receipt says 'Falsifying example: test_x(total=1)'"),
    ],
)
def test_a_hand_edit_is_named(demo_receipt: tuple[Path, Path, dict[str, Any]], edit: str, named: str) -> None:
    """An edited conclusion changes nothing verify runs (its inputs are the receipt's commits and seeds) and is
    named against the re-derived receipt."""
    repo, path, receipt = demo_receipt
    edited = _edited(receipt, edit)
    assert verify._inputs(edited, repo) == verify._inputs(receipt, repo)
    derived = json.loads(path.read_text())  # the derivation is the gate's run on the same inputs (reproduced above)
    found = verify.differences(edited, derived)
    assert len(found) >= 1 and any(named in line for line in found), found
    assert verify.differences(receipt, derived) == []


def test_a_changed_commit_id_is_named(
    demo_receipt: tuple[Path, Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A receipt whose head is edited to the honest pull request's commit: re-derived there, the verdict differs."""
    repo, _path, receipt = demo_receipt
    edited = copy.deepcopy(receipt)
    honest = demo.patches(demo.example_files())[0]
    assert honest.name == "honest-refactor"
    edited["git"]["head"] = Repo(repo).resolve("refs/pull/1/merge")
    (tmp_path / "edited.json").write_text(json.dumps(edited))
    assert cli.main(["verify", str(tmp_path / "edited.json"), "--repo", str(repo)]) == 10
    out = capsys.readouterr().out
    assert "differs: decision.row: the receipt says 'property-failed', re-derived 'pass'" in out, out
    assert "differs: ledger " in out
