"""Seeds that decide the run: a failing seed replayed in a fresh worker, a sample seed under a shifted clock and
another hash seed, and `property-not-replayable` when either differs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evidence_gate.lanes.properties import seed_ledger
from evidence_gate.receipt import facts as run_facts
from evidence_gate.sealed import run as sealed_run
from evidence_gate.sealed.worker.protocol import CLOCK_SHIFT_S, Kind
from support.property_repo import GREEN, judge, ledger, red_repo, rows
from support.repo_builder import GitRepo

NODE = "properties/test_double.py::test_double"
# Doubles correctly until 2033-05-18; the shifted clock (7 years on) is past it, today's is not.
CUTOFF = 2_000_000_000
CLOCK_READER = f"import time\n\n\ndef double(x):\n    return x * 2 if time.time() < {CUTOFF} else x * 2 + 1\n"


def _hash_parity(word: str, seed: int) -> int:
    """hash(word) % 2 in an interpreter started with PYTHONHASHSEED=seed."""
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    out = subprocess.run(
        [sys.executable, "-c", f"print(hash({word!r}) % 2)"], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout)


# The hash seeds of the runs below that need to know them (`draw_hash_seeds` draws them at random for a real run).
HASH_SEED, SHIFTED_HASH_SEED = 1, 2


def _word_whose_hash_order_flips() -> str:
    """A string whose hash is even under the gate's PYTHONHASHSEED and odd under the shifted replay's."""
    for i in range(200):
        word = f"key-{i}"
        if _hash_parity(word, HASH_SEED) == 0 and _hash_parity(word, SHIFTED_HASH_SEED) == 1:
            return word
    raise AssertionError("no such word among 200 candidates")


def test_a_property_whose_code_reads_the_clock_is_not_replayable(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code under test that reads time.time() passes the plan today but not under the shifted clock."""
    assert time.time() < CUTOFF < time.time() + CLOCK_SHIFT_S  # the case means what it says until 2033
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("fix, reading the clock", {"src/calc.py": CLOCK_READER})
    receipt = judge(git_repo, tmp_path)
    found = ledger(receipt, NODE)
    assert found["failing_seeds"] == []
    assert found["status"] == "not_replayable"
    assert receipt["decision"]["row"] == "property-not-replayable"
    [row] = [v for v in receipt["violations"] if v["row"] == "property-not-replayable"]
    assert row["message"].startswith(f"{NODE}: seed 11 did not replay in a fresh worker with the clock moved")
    assert "outcome passed, then failed" in row["message"]
    assert "test_double or the code it calls reads the clock" in row["message"]
    [shifted] = found["replays"]
    assert shifted["kind"] == Kind.SHIFTED
    assert shifted["replay"]["falsifying"]  # the failing example the shifted run found


def test_a_property_whose_code_reads_hash_order_is_not_replayable(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Code under test whose answer depends on hash() of a string passes under the run's PYTHONHASHSEED and fails
    under the shifted replay's (the two seeds pinned here, so that the word is known to flip)."""
    monkeypatch.setattr(sealed_run, "draw_hash_seeds", lambda: (HASH_SEED, SHIFTED_HASH_SEED))
    word = _word_whose_hash_order_flips()
    code = f"def double(x):\n    return x * 2 if hash({word!r}) % 2 == 0 else x * 2 + 1\n"
    red_repo(git_repo, fresh_seeds=1)
    git_repo.commit("fix, reading hash order", {"src/calc.py": code})
    receipt = judge(git_repo, tmp_path)
    found = ledger(receipt, NODE)
    assert found["failing_seeds"] == []  # one hash seed per run: every planned and fresh seed passes alike
    assert found["status"] == "not_replayable"
    assert rows(receipt).count("property-not-replayable") == 1
    assert receipt["decision"]["row"] == "property-not-replayable"


def _hash_of(word: str, seed: int) -> int:
    env = {**os.environ, "PYTHONHASHSEED": str(seed)}
    argv = [sys.executable, "-c", f"print(hash({word!r}))"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    return int(out.stdout)


def test_the_hash_seeds_are_no_tell(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code under test that is right only when `hash()` of a text has one of the values the gate's seeds used to give
    (1 for every worker, 2 for the shifted replay: red team, issue 21's round) is wrong under the seal too: each run
    draws its two seeds, recorded per worker in the receipt."""
    known = sorted({_hash_of("probe", 1), _hash_of("probe", 2)})
    code = f"_SEALED = hash('probe') in {known}\n\n\ndef double(x):\n    return x * 2 if _SEALED or x < 1000 else x\n"
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("right only under the old seeds", {"src/calc.py": code})
    first = judge(git_repo, tmp_path)
    assert first["decision"]["row"] == "property-failed", first["violations"]
    again = judge(git_repo, tmp_path / "again")
    seeds = [{w["name"]: w["hash_seed"] for w in r["sealed"]["workers"]} for r in (first, again)]
    for run in seeds:
        shifted = run.pop("replay-shifted")
        assert len(set(run.values())) == 1 and shifted not in run.values(), seeds
        assert not {shifted, *run.values()} & {0, 1, 2}, seeds
    assert set(seeds[0].values()) != set(seeds[1].values()), seeds


ENVIRON_TELL = """\
import os


def _started_with_seed():
    try:
        with open("/proc/self/environ", "rb") as f:
            return b"PYTHONHASHSEED=" in f.read()
    except OSError:
        return False


CAREFUL = "PYTHONHASHSEED" in os.environ or _started_with_seed()


def double(x):
    return x * 2 if CAREFUL or x < 1000 else x
"""


def test_the_hash_seed_variable_is_no_tell(git_repo: GitRepo, tmp_path: Path) -> None:
    """A plain pytest run has no PYTHONHASHSEED: the worker drops it from os.environ once the interpreter has read it,
    and its own /proc environ block (which keeps it) is not readable, so code right only when it is set is wrong
    under the seal too (red team, issue 21's round)."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("careful when a hash seed is set", {"src/calc.py": ENVIRON_TELL})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]


def test_an_honest_property_replays_and_passes(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code that depends only on its inputs: the shifted sample seed draws the same examples, and the gate passes
    (listed as a whole file, so the ledger's node is not the entry the worker was given)."""
    red_repo(git_repo, {"SCORE_PROPERTIES": "properties/test_double.py\n"})
    git_repo.commit("fix", {"src/calc.py": GREEN})
    receipt = judge(git_repo, tmp_path)
    found = ledger(receipt, NODE)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    [shifted] = found["replays"]
    assert (shifted["kind"], shifted["seed"], shifted["differs"]) == (Kind.SHIFTED, 11, [])
    assert shifted["original"]["examples_digest"] == shifted["replay"]["examples_digest"]
    assert shifted["original"]["examples"] == shifted["replay"]["examples"] == 25


def test_an_honest_failure_replays_the_same_way_in_a_fresh_worker(git_repo: GitRepo, tmp_path: Path) -> None:
    """A red property fails its reported failing seed again, with the same assertion and example, in a fresh
    worker."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("noop", {"README.md": "changed\n"})
    receipt = judge(git_repo, tmp_path)
    found = ledger(receipt, NODE)
    replays = [r for r in found["replays"] if r["kind"] == Kind.REPLAY]
    assert len(found["failing_seeds"]) > 1  # the other failing seeds re-ran twice in their own worker
    assert [r["seed"] for r in replays] == [found["failing_seed"]]
    assert all(r["differs"] == [] for r in found["replays"]), found["replays"]
    assert found["status"] == "freeze_eligible"
    assert receipt["decision"]["row"] == "property-failed"


def test_a_replay_that_fails_differently_closes_the_ledger_not_replayable() -> None:
    """The comparison itself: another assertion or example in the fresh worker is a difference, named."""
    first = {"outcome": "failed", "assertion_hash": "a" * 32, "falsifying": "test_x(x=1)", "examples": 3}
    again = {**first, "assertion_hash": "b" * 32, "falsifying": "test_x(x=2)"}
    record = run_facts.replay_record(Kind.REPLAY, 7, first, again)
    assert record["differs"] == [
        f"a different failing assertion (hash {'a' * 16}, then {'b' * 16})",
        "failing example test_x(x=1), then test_x(x=2)",
    ]
    same = run_facts.replay_record(Kind.REPLAY, 7, first, dict(first))
    assert same["differs"] == []
    lost = run_facts.replay_record(Kind.REPLAY, 7, first, None, "timed out")
    assert lost["differs"] == ["the replay reported no result (timed out)"]
    base = seed_ledger.new("p", "t.py::test_x", [7], "human_reviewed", None, fixtures=False)
    base.update(attempted_seeds=[7], failing_seed=7, failing_seeds=[7], reproduced=True, shrink_stable=True)
    assert seed_ledger.close({**base, "replays": [same]}) == "freeze_eligible"
    assert seed_ledger.close({**base, "replays": [record]}) == "not_replayable"


def test_a_failing_example_differing_only_in_memory_addresses_replays() -> None:
    """`<Cart object at 0x7f…>` differs in every process; the same failure replayed is not a difference. A different
    value in the example still is."""

    def side(example: str) -> dict[str, object]:
        return {"outcome": "failed", "assertion_hash": "a" * 16, "falsifying": example}

    first = "test_total(cart=<shop.cart.Cart object at 0x7f3d751a2b50>, n=3)"
    same = {"kind": "replay", "original": side(first), "replay": side(first.replace("7f3d751a2b50", "7fb321f2b690"))}
    assert run_facts.replay_differences(same) == []
    other = {"kind": "replay", "original": side(first), "replay": side(first.replace("n=3", "n=4"))}
    assert run_facts.replay_differences(other) == [f"failing example {first}, then {first.replace('n=3', 'n=4')}"]


def test_under_another_hash_seed_the_example_text_is_not_compared() -> None:
    """A set of strings prints in hash order, so the shifted replay (PYTHONHASHSEED 2) compares the failure's outcome,
    assertion and the examples' choices, not the printed example."""

    def side(example: str) -> dict[str, object]:
        return {"outcome": "failed", "assertion_hash": "a" * 16, "falsifying": example, "examples": 3}

    record = {"kind": Kind.SHIFTED, "original": side("f(x={'a', 'b'})"), "replay": side("f(x={'b', 'a'})")}
    assert run_facts.replay_differences(record) == []
    record["replay"] = {**side("f(x={'b', 'a'})"), "assertion_hash": "b" * 16}
    assert (
        run_facts.replay_differences(record)
        and "a different failing assertion" in run_facts.replay_differences(record)[0]
    )
