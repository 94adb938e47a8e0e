"""`--shard K/N` runs one slice of the plan; `evidence-gate merge` closes the ledgers over all shards."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli
from evidence_gate.errors import GateError
from evidence_gate.lanes.properties import steering
from evidence_gate.receipt.shard_merge import merge
from support.property_repo import judge, ledger, red_repo
from support.repo_builder import GitRepo


def _shards(git_repo: GitRepo, tmp_path: Path, honest: bool) -> list[Path]:
    red_repo(git_repo, fresh_seeds=0)
    if honest:
        git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    paths = []
    for k in (1, 2):
        folder = tmp_path / f"shard{k}"
        folder.mkdir()
        receipt = judge(git_repo, folder, shard=(k, 2))
        assert ledger(receipt)["planned_seeds"] == ([11, 13] if k == 1 else [12, 14])
        paths.append(folder / "receipt.json")
    return paths


def test_merge_closes_ledgers_over_shards(
    git_repo: GitRepo, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two shards of a plan of four merge into one ledger that attempted each planned seed once."""
    paths = _shards(git_repo, tmp_path, honest=True)
    code = cli.main(["merge", *map(str, paths), "--receipt", str(tmp_path / "merged.json")])
    merged = json.loads((tmp_path / "merged.json").read_text())
    assert code == 0, merged["violations"]
    assert sorted(ledger(merged)["attempted_seeds"]) == [11, 12, 13, 14]
    assert ledger(merged)["status"] == "budget_pass_no_freeze"
    # The first shard's census described the property on the baseline (strategies do not depend on the seed); each
    # shard counts the seeds its head discards could have been steered on (none here), so the second starts no
    # census worker. The merged ledger keeps all four head counts and needs no other.
    steer = ledger(merged)["steering"]
    assert sorted(steer["head"]["outcomes"]) == sorted(steer["head"]["discards"]) == ["11", "12", "13", "14"]
    assert steer["baseline"]["strategies"] == steer["head"]["strategies"] is not None, steer
    assert steer["compared"] == [] and steering.uncounted(steer) == [], steer
    census = [
        [w["name"] for w in json.loads(p.read_text())["sealed"]["workers"] if w["name"].startswith("steer")]
        for p in paths
    ]
    assert census == [["steer-describe"], []], census
    # The shifted-clock replay of the plan's first seed runs once, in the first shard, as in an unsharded run.
    assert [(r["kind"], r["seed"]) for r in ledger(merged)["replays"]] == [("shifted", 11)]
    shards = [json.loads(p.read_text()) for p in paths]
    assert [[w["name"] for w in r["sealed"]["workers"] if w["name"] == "replay-shifted"] for r in shards] == [
        ["replay-shifted"],
        [],
    ]
    assert "PASS" in capsys.readouterr().out


def test_merge_of_a_red_property_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """A failure in any shard is the merged decision."""
    paths = _shards(git_repo, tmp_path, honest=False)
    merged = merge([json.loads(p.read_text()) for p in paths], [str(p) for p in paths])
    assert merged["decision"]["row"] == "property-failed"


def test_merge_sees_a_seed_gap(git_repo: GitRepo, tmp_path: Path) -> None:
    """A shard whose ledger lost a seed leaves the merged ledger open."""
    paths = _shards(git_repo, tmp_path, honest=True)
    receipts: list[dict[str, Any]] = [json.loads(p.read_text()) for p in paths]
    receipts[1]["properties"]["ledgers"][0]["attempted_seeds"] = [12]
    merged = merge(receipts, ["a", "b"])
    assert merged["decision"]["row"] == "seed-ledger-open"
    assert ledger(merged)["status"] == "seed_gap"


def test_merge_refuses_incomplete_shard_sets(git_repo: GitRepo, tmp_path: Path) -> None:
    """Shards 1..N must each be present exactly once."""
    paths = _shards(git_repo, tmp_path, honest=True)
    receipt = json.loads(paths[0].read_text())
    with pytest.raises(GateError, match=r"shards 1/2, 1/2 \(missing 2/2\), not 1\.\.N exactly once"):
        merge([receipt, receipt], ["a", "b"])


@pytest.mark.parametrize("honest", [True, False], ids=["honest", "red"])
def test_more_shards_than_planned_seeds_merge_to_the_unsharded_verdict(
    git_repo: GitRepo, tmp_path: Path, honest: bool
) -> None:
    """Three shards over a plan of two (the README's matrix over a small plan): the third owns no seed, starts no
    property worker and writes no ledger, and the merge gives what one unsharded run gives."""
    red_repo(git_repo, fresh_seeds=0, seeds=[11, 12])
    if honest:
        git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipts = []
    for k in (1, 2, 3):
        folder = tmp_path / f"shard{k}"
        folder.mkdir()
        receipts.append(judge(git_repo, folder, shard=(k, 3)))
    empty = receipts[2]
    assert empty["properties"]["ledgers"] == [] and empty["decision"]["row"] == "pass", empty["violations"]
    assert not [w for w in empty["sealed"]["workers"] if w["name"].startswith(("head-", "steer"))]
    merged = merge(receipts, ["1", "2", "3"])
    assert merged["decision"]["row"] == ("pass" if honest else "property-failed"), merged["violations"]
    assert sorted(ledger(merged)["attempted_seeds"]) == [11, 12]
