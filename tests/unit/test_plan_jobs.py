"""How a plan spreads its seed runs over the head workers, so that the pool's threads end together."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from evidence_gate.config import Config
from evidence_gate.lanes.properties import plan as plan_module
from evidence_gate.lanes.properties.plan import SHIFTED_JOB, DynamicRequest, Trees

SPECS = tuple(SimpleNamespace(node=f"tests/test_p.py::test_{i}", counterexample=None) for i in range(10))


def _jobs(seeds: list[int], parallel: int) -> dict[str, Any]:
    req = cast(DynamicRequest, SimpleNamespace(specs=SPECS, shard=None, removed=(), expired=(), config=Config()))
    trees = Trees(Path("/head"), None, Path("/head"), frozenset(), frozenset(), ())
    return {job.name: job for job in plan_module._jobs(req, trees, seeds, [], parallel)}


def _runs(job: Any) -> list[tuple[str, int]]:
    return [(node, seed) for node, runs in job.runs.items() for seed, _kind in runs]


@pytest.mark.parametrize(
    ("seeds", "parallel", "sizes"),
    [
        # 40 runs and a replay of 10 after the lightest head (its start counted as 5 runs): 55 over two threads.
        ([1, 2, 3, 4], 2, [28, 12]),
        # Over three, the last head's 2 runs are not worth its start: two heads, and the replay on the third thread.
        ([1, 2, 3, 4], 3, [20, 20]),
        # A shard's two seeds: 20 runs and 15 after the last, 18 and 2: one head, the replay beside it.
        ([1, 3], 2, [20]),
        # One thread: one head runs everything, the replay after it.
        ([1, 2, 3, 4], 1, [40]),
    ],
)
def test_when_the_heads_take_every_thread_the_last_is_lighter_by_the_shifted_replay(
    seeds: list[int], parallel: int, sizes: list[int]
) -> None:
    jobs = _jobs(seeds, parallel)
    heads = [job for name, job in jobs.items() if name.startswith("head-")]
    assert [len(_runs(h)) for h in heads] == sizes
    every = [run for head in heads for run in _runs(head)]
    assert sorted(every) == sorted((s.node, seed) for seed in seeds for s in SPECS)
    assert len(_runs(jobs[SHIFTED_JOB])) == 10


def test_with_a_thread_to_spare_the_seeds_go_round_the_heads() -> None:
    jobs = _jobs([1, 2], 4)
    assert [sorted({seed for _node, seed in _runs(jobs[f"head-{i}"])}) for i in range(2)] == [[1], [2]]
