"""Steering a locked property without touching it, and freezes that would excuse funnelled failures: real sealed runs
of real repositories, the baseline's run of the same seeds as the evidence."""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import secrets
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from test_redteam_sealed import _alive_with

from evidence_gate.lanes.properties import steering
from evidence_gate.sealed.worker.assertion_hash import statement_hash
from support.property_repo import PROPERTY, base_files, judge, ledger, red_repo, rows
from support.repo_builder import GitRepo

CASES = json.loads((Path(__file__).parents[1] / "steering_cases" / "cases.json").read_text())


def _params() -> list[Any]:
    return [
        pytest.param(name, patch, id=f"{name}-{patch}") for name, case in CASES.items() for patch in case["patches"]
    ]


@pytest.mark.parametrize(("name", "patch"), _params())
def test_steering_case(name: str, patch: str, git_repo: GitRepo, tmp_path: Path) -> None:
    """Each steering trick lands on property-steered naming what changed; each honest patch passes on every seed,
    its steering section showing the same strategies and discards as the baseline's run."""
    case = CASES[name]
    row, code, mention = case["patches"][patch]
    red_repo(git_repo, extra={"properties/test_double.py": case["property"], "src/calc.py": case["base"]})
    git_repo.commit(patch, {"src/calc.py": code})
    left = Path(case.get("cleanup") or tmp_path / "none")  # a file the patch leaves outside the workspace
    left.unlink(missing_ok=True)
    try:
        receipt = judge(git_repo, tmp_path)
    finally:
        left.unlink(missing_ok=True)
    assert receipt["state"] == "final", receipt["errors"]
    found = ledger(receipt)["steering"]
    assert found is not None
    assert found["seeds"] == [11, 12, 13, 14], found
    # The census counted exactly the seeds whose head discards could be a steered rise, and no other.
    head = found["head"]
    could = [s for s in found["seeds"] if steering.could_be_steered(head["discards"][str(s)], head["examples"][str(s)])]
    # (and the first seed when the description without a run differed from the head's: the recheck runs it)
    censused = {int(s) for s in found["baseline"]["outcomes"]}
    assert set(could) <= censused <= set(could) | {found["seeds"][0]}, found
    assert steering.uncounted(found) == [], found
    if row == "pass":
        assert receipt["decision"]["row"] == "pass", receipt["violations"]
        assert set(could) <= set(found["compared"]), found
        assert found["head"]["strategies"] == found["baseline"]["strategies"], found
        if case.get("census") == "every seed":
            assert could == found["seeds"], found
        return
    assert receipt["decision"]["row"] == row, receipt["violations"]
    messages = [v["message"] for v in receipt["violations"] if v["row"] == row]
    assert any(mention in m for m in messages), messages
    # The row is derived from the recorded section alone: the receipt's facts give the same rows again.
    assert [v.message for v in steering.rows(ledger(receipt)["property_id"], "properties/test_double.py", found)] == (
        messages
    )


OTHER = """\
from hypothesis import assume, given, strategies as st

from calc import double


@given(st.integers(0, 10**6))
def test_other(x):
    assume(x % 3 == 0)
    assert double(x) == x + x
"""


MIXED = """\
import pytest
from hypothesis import assume, given, strategies as st

from calc import double

SETUPS = []


@pytest.fixture(scope="module")
def table():
    SETUPS.append(1)
    yield {"twice": 2}
    SETUPS.pop()


@given(st.integers(0, 10**6))
def test_discarding(table, x):
    assume(x % 3 == 0)
    assert double(x) == table["twice"] * x


@given(st.integers(0, 10**6))
def test_plain(table, x):
    assert double(x) == table["twice"] * x
    assert SETUPS == [1]
"""


def test_census_by_node_in_one_worker(git_repo: GitRepo, tmp_path: Path) -> None:
    """Whole-file entries whose properties discard heavily but one: only those nodes' seeds are counted on the
    baseline, the other is described in the same worker with nothing set up for it, and the first module's fixture
    is still torn down before the next module's test runs (pytest refuses a setup over a stack left behind);
    every node passes with the same strategies on both trees."""
    red_repo(
        git_repo,
        extra={
            "SCORE_PROPERTIES": "properties/test_mixed.py\nproperties/test_other.py\n",
            "properties/test_mixed.py": MIXED,
            "properties/test_other.py": OTHER,
            "src/calc.py": "def double(x):\n    return x * 2\n",
        },
    )
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x + x\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    census = [w for w in receipt["sealed"]["workers"] if w["name"].startswith("steer-")]
    # 8 counted runs of 3 nodes: two workers; steer-0 runs test_discarding, describes test_plain, runs test_other.
    assert [w["name"] for w in census] == ["steer-0", "steer-1"], census
    assert not [w["problems"] for w in census if w["problems"]], census
    counted = {}
    for name in ("test_mixed.py::test_discarding", "test_mixed.py::test_plain", "test_other.py::test_other"):
        found = ledger(receipt, f"properties/{name}")["steering"]
        assert found["baseline"]["strategies"] == found["head"]["strategies"] is not None, found
        assert steering.uncounted(found) == [], found
        counted[name] = sorted(int(s) for s, o in found["baseline"]["outcomes"].items() if o == "passed")
        assert found["compared"] == counted[name], found
    every = [11, 12, 13, 14]
    assert counted == {
        "test_mixed.py::test_discarding": every,
        "test_mixed.py::test_plain": [],
        "test_other.py::test_other": every,
    }, counted


def _section(base: dict[str, int], head: dict[str, int], examples: int = 50) -> dict[str, Any]:
    strategies = {"x": "integers(0, 10)"}
    return {
        "seeds": [int(s) for s in base],
        "baseline": {
            "strategies": strategies,
            "discards": base,
            "examples": dict.fromkeys(base, examples),
            "outcomes": dict.fromkeys(base, "passed"),
        },
        "head": {"strategies": strategies, "discards": head, "examples": dict.fromkeys(head, examples)},
        "compared": [int(s) for s in base],
        "margin": {"min_rise": steering.MIN_RISE, "share": steering.RISE_SHARE},
    }


@pytest.mark.parametrize(
    ("base", "head", "steered"),
    [
        ({"1": 0, "2": 0}, {"1": 13, "2": 0}, True),  # 13 more with 50 kept on seed 1: over a quarter
        ({"1": 0, "2": 0}, {"1": 12, "2": 12}, False),  # a quarter on each seed is not over it
        ({"1": 0}, {"1": 4}, False),  # fewer than five more, whatever the share
        ({"1": 40}, {"1": 52}, False),  # 12 more with 50 kept: under a quarter
        ({"1": 40}, {"1": 53}, True),
    ],
)
def test_discard_margin(base: dict[str, int], head: dict[str, int], steered: bool) -> None:
    """A seed's rise counts when it is at least MIN_RISE discards and more than RISE_SHARE of the examples it kept."""
    found = steering.rows("p::t", "p.py", _section(base, head))
    assert bool(found) is steered, found


def test_changed_strategy_and_missing_baseline_are_rows() -> None:
    """A strategy that differs is a row naming both descriptions; a baseline that reported none fails closed."""
    recorded = _section({"1": 0}, {"1": 0})
    recorded["head"]["strategies"] = {"x": "integers(0, 0)"}
    [found] = steering.rows("p::t", "p.py", recorded)
    assert "integers(0, 10) → integers(0, 0)" in found.message
    recorded["baseline"]["strategies"] = None
    [found] = steering.rows("p::t", "p.py", recorded)
    assert "did not report the property's strategies" in found.message
    assert steering.rows("p::t", "p.py", None) == []


def test_a_seed_the_census_had_to_count_but_did_not_is_a_row() -> None:
    """The census counts only the seeds whose head discards could be a steered rise; a receipt that shows such a seed
    with no baseline run (a census worker lost, or a forger dropping the baseline's counts) fails closed, and so
    does one whose head outcomes were dropped too. A seed the head discarded too little on needs no count."""
    recorded = _section({"1": 0}, {"1": 20})
    for side in ("discards", "examples"):
        del recorded["baseline"][side]["1"]
    recorded["compared"] = []
    recorded["baseline"]["outcomes"] = {}
    recorded["head"]["outcomes"] = {"1": "passed"}
    [found] = steering.rows("p::t", "p.py", recorded)
    assert "seed 1: 20 discarded, 50 kept" in found.message and "did not count" in found.message
    del recorded["head"]["outcomes"]
    assert len(steering.rows("p::t", "p.py", recorded)) == 1
    recorded["head"]["outcomes"] = {"1": "failed"}  # a failing head seed is not compared, so not counted either
    assert steering.rows("p::t", "p.py", recorded) == []
    quiet = _section({"1": 0}, {"1": 12})
    quiet["baseline"] = {**quiet["baseline"], "discards": {}, "examples": {}, "outcomes": {}}
    quiet["compared"] = []
    assert steering.rows("p::t", "p.py", quiet) == []


@pytest.mark.parametrize("outcome", ["failed", "error", "None"])
def test_a_needed_seed_whose_census_run_did_not_pass_is_a_row(outcome: str) -> None:
    """The census runs after the head now, so what the head's code left can end the baseline's run of a needed seed
    in something other than a pass: a process that outlived sweep_orphans (a chain of more than 50 sessions) sending
    SIGINT to the census worker (same uid, Landlock ABI < 6: no signal scope) makes that run `error`, "interrupted";
    a file in /dev/shm the baseline reads can make it fail. Such a seed is neither compared nor uncounted on main:
    its head discards (20 of 50 kept, past the margin) are never judged. It must fail closed, as a seed with no
    baseline run does."""
    recorded = _section({"1": 0}, {"1": 20})
    for side in ("discards", "examples"):
        del recorded["baseline"][side]["1"]
    recorded["compared"] = []
    recorded["baseline"]["outcomes"] = {"1": outcome}
    recorded["head"]["outcomes"] = {"1": "passed"}
    [found] = steering.rows("p::t", "p.py", recorded)
    assert "seed 1: 20 discarded, 50 kept" in found.message, found.message


@pytest.mark.parametrize(
    ("discards", "examples", "needed"), [(5, 10, True), (4, 0, False), (12, 50, False), (13, 50, True)]
)
def test_needed_is_the_margin_on_the_heads_own_count(discards: int, examples: int, needed: bool) -> None:
    """A rise can never exceed the head's own count, so only a head count past the margin needs the baseline's."""
    head = [{"seed": 7, "outcome": "passed", "discards": discards, "examples": examples}]
    assert steering.needed(head, [7]) == ([7] if needed else [])
    assert steering.needed([{**head[0], "outcome": "failed"}], [7]) == []


def test_shard_sections_merge_into_the_rows_of_the_whole_plan() -> None:
    """A shard whose seed was steered keeps that seed's counts in the merge, so the merged ledger gives its row."""
    one, two = _section({"1": 0}, {"1": 20}), _section({"2": 0}, {"2": 0})
    merged = steering.merge([one, two, None])
    assert merged is not None
    assert merged["compared"] == [1, 2] and merged["head"]["discards"] == {"1": 20, "2": 0}
    [found] = steering.rows("p::t", "p.py", merged)
    assert "seed 1: 20 discarded against 0, 50 kept" in found.message
    assert steering.merge([None]) is None


# Production code whose import leaves a chain of `sleep`s behind, each in a session of its own: sweep_orphans kills one
# generation per round (a killed link's child is handed to the gate only then) and stops after 50 rounds, so a chain
# deeper than the rounds of every sweep between the head and the census outlives "the head's workers are gone".
CHAIN = """\
import os


def _chain(depth, tag):
    try:  # one chain per run: the first worker to import this makes it (the head's workers share their home)
        os.close(os.open(os.path.join(os.path.expanduser("~"), ".chain"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except OSError:
        return
    if os.fork():
        return
    try:
        for _ in range(depth):
            os.setsid()
            if os.fork():
                break
        os.execv("/bin/sleep", ["sleep", tag])
    finally:
        os._exit(0)


_chain({depth}, {tag!r})


def double(x):
    return x * 2
"""


def test_no_process_of_the_head_outlives_into_the_census(git_repo: GitRepo, tmp_path: Path) -> None:
    """The census runs baseline code after the head's: a process the head's code left (here a chain of 300 sessions)
    must not be alive then, or it can signal the census worker (same uid; Landlock scopes signals only from ABI 6)
    or write what it reads (/dev/shm). On main the chain outlives every sweep, the run's own close included."""
    tag = f"{600 + secrets.randbelow(10**6) / 10**7:.7f}"
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("chain", {"src/calc.py": CHAIN.format(depth=300, tag=tag)})
    try:
        judge(git_repo, tmp_path)
        time.sleep(1)
    finally:
        survivors = _alive_with(tag)
        for pid in survivors:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    assert not survivors, f"{len(survivors)} processes of the head's chain outlived the run"


FREEZE = """\
version: 1
entries:
  - id: double
    test: properties/test_double.py::test_double
    assertion_hash: "{hash}"
    added_at: "2026-09-10"
    expires: "2026-09-20"
    owner: humans
    reason: timing
"""


def _frozen_repo(git_repo: GitRepo) -> None:
    files = base_files(fresh_seeds=0)
    digest = statement_hash(PROPERTY, 8)
    assert digest is not None
    files["freeze.yaml"] = FREEZE.format(hash=digest[:32])
    git_repo.commit("baseline", files)
    git_repo.branch("patch")


def test_freeze_does_not_excuse_a_failure_funnelled_into_its_assertion(git_repo: GitRepo, tmp_path: Path) -> None:
    """The patch is wrong everywhere and fails the frozen assertion too: the baseline passes the minimal example, so
    the freeze does not excuse it, and the receipt says why."""
    _frozen_repo(git_repo)
    git_repo.commit("wrong everywhere", {"src/calc.py": "def double(x):\n    return x * 3\n"})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    found = ledger(receipt)
    assert found["excused_by"] is None
    assert found["excuse"]["excused"] is False, found["excuse"]
    assert "the baseline passes the minimal example" in found["excuse"]["why"], found["excuse"]
    [failed] = [v for v in receipt["violations"] if v["row"] == "property-failed"]
    assert "does not excuse it" in failed["message"], failed["message"]


@pytest.mark.parametrize(
    "patch",
    [
        {"README.md": "unrelated\n"},
        # The same bug, written another way: its minimal example fails on the baseline the same way.
        {"src/calc.py": "def double(x):\n    if x >= 1000:\n        return x\n    return x + x\n"},
    ],
    ids=["unrelated", "same-bug"],
)
def test_freeze_still_excuses_the_real_failure(patch: dict[str, str], git_repo: GitRepo, tmp_path: Path) -> None:
    """The frozen failure itself, replayed on the baseline, fails there with the same assertion: still excused."""
    _frozen_repo(git_repo)
    git_repo.commit("patch", patch)
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    found = ledger(receipt)
    assert found["excused_by"] == "double"
    assert found["excuse"]["excused"] is True
    assert all(r["same_failure"] and r["blob"] for r in found["excuse"]["replays"]), found["excuse"]
    assert "property-failed" not in rows(receipt)


def test_a_census_that_could_not_run_fails_every_property_closed(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process the head's code left that no sweep could kill means no census (nothing after it is the baseline's
    alone): every property is `property-steered` for want of the baseline's strategies, never a silent pass."""
    from evidence_gate.sealed import run as sealed_run

    monkeypatch.setattr(sealed_run.Workspace, "fresh_scratch", lambda self: False)
    red_repo(git_repo, fresh_seeds=0, seeds=[11, 12], jobs=1)
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-steered", receipt["violations"]
    assert not [w for w in receipt["sealed"]["workers"] if w["name"].startswith("steer")], receipt["sealed"]["workers"]
    found = ledger(receipt)["steering"]
    assert found is not None and found["baseline"]["strategies"] is None, found
    messages = [v["message"] for v in receipt["violations"] if v["row"] == "property-steered"]
    assert found["census"] == steering.CENSUS_NOT_RUN, found
    assert any("census did not run" in m and "end every process it starts" in m for m in messages), messages


def test_a_head_that_reported_no_strategies_against_a_baseline_that_did_is_a_row() -> None:
    """The property is locked, so both trees run it through Hypothesis; code under test that blanks the test's
    `hypothesis._given_kwargs` (or removes the handle) makes the head report no strategies. That compares nothing
    and must fail closed, as a baseline that reported none does, not pass as a property without strategies."""
    recorded = _section({"1": 0}, {"1": 0})
    recorded["head"]["strategies"] = None
    [found] = steering.rows("p::t", "p.py", recorded)
    assert "head's runs did not report the property's strategies" in found.message
    recorded["baseline"]["strategies"] = None  # neither runs it through Hypothesis: nothing to compare
    assert steering.rows("p::t", "p.py", recorded) == []
