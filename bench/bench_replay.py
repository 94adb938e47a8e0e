"""What replaying seeds costs: the gate with its replays against the same gate with them left out, same run.

    .venv/bin/python bench/bench_replay.py [--seeds 8] [--trials 200] [--repeat 3] [--red]

On the property-lane benchmark's repository (bench_property_lane.py: three properties, a plan of --seeds seeds),
times (median of --repeat, interleaved) the whole `gate.evaluate` in-process, once as shipped and once with the
replays removed (no `replay-shifted` worker, no fresh-worker replay of failing seeds), and reports the wall time and
the CPU time of the sealed workers (the children's user + system time). `--red` makes `test_total_is_kept` fail on every seed, so the
fresh-worker replay of every failing seed is measured too.
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_property_lane import build  # noqa: E402

from evidence_gate import gate  # noqa: E402
from evidence_gate.lanes.properties import lane as property_lane  # noqa: E402
from evidence_gate.lanes.properties import plan as lane_plan  # noqa: E402

RED_ALLOC = "def allocate(total, weights):\n    return [total] + [0] * (len(weights) - 1) if total > 50 else [0] * len(weights)\n"


@contextlib.contextmanager
def without_replays() -> Iterator[None]:
    """The lane as it was before replays: no shifted worker, no replay stage."""
    jobs, stage = lane_plan._jobs, property_lane.replay_stage

    def no_shifted(*args: Any) -> list[lane_plan.Job]:
        return [j for j in jobs(*args) if j.name != lane_plan.SHIFTED_JOB]

    lane_plan._jobs = no_shifted  # type: ignore[assignment]
    property_lane.replay_stage = lambda _ws, plan, launched: (plan, launched)  # type: ignore[assignment]
    try:
        yield
    finally:
        lane_plan._jobs, property_lane.replay_stage = jobs, stage  # type: ignore[assignment]


def run_once(repo_path: Path, out: Path) -> tuple[float, float, str]:
    """Wall and children's CPU seconds of one gate run, and its row."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    opts = gate.CheckOptions(repo=repo_path, base="main", head="HEAD", author="agent-bench")
    receipt, _code = gate.evaluate(opts, out)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, str(receipt["decision"]["row"])


def main() -> int:
    """Run the comparison and print a Markdown table."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--red", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repo = build(Path(tmp) / "repo", list(range(1, args.seeds + 1)), args.trials)
        if args.red:
            repo.commit("red", {"src/alloc.py": RED_ALLOC})
        figures: dict[str, list[tuple[float, float, str]]] = {"with replays": [], "without replays": []}
        for _ in range(args.repeat):
            figures["with replays"].append(run_once(repo.path, Path(tmp) / "a.json"))
            with without_replays():
                figures["without replays"].append(run_once(repo.path, Path(tmp) / "b.json"))
    print("| run | row | median wall | median worker CPU |\n|---|---|---:|---:|")
    medians = {}
    for name, runs in figures.items():
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        medians[name] = (wall, cpu)
        print(f"| {name} | `{runs[0][2]}` | {wall:.2f} s | {cpu:.2f} s |")
    (w1, c1), (w0, c0) = medians["with replays"], medians["without replays"]
    print(
        f"\nextra: wall {w1 - w0:+.2f} s ({(w1 / w0 - 1) * 100:+.0f} %), CPU {c1 - c0:+.2f} s ({(c1 / c0 - 1) * 100:+.0f} %)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
