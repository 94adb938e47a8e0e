"""What the steering comparison costs: the whole gate with it against the same gate without the baseline's census.

    .venv/bin/python bench/bench_steering.py [--seeds 4] [--trials 50] [--repeat 3]

The steering comparison (row 18, `property-steered`) runs every planned seed of every property on the baseline tree
too, so the gate can compare discard rates and strategy descriptions. This bench measures that cost on the pinned
attrs sdist (tests/support/real_project.py, gated on its own tests/test_funcs.py and tests/test_dunders.py) with an
honest pull request merged like refs/pull/N/merge: `gate.evaluate` as shipped, against the same call with
`lane_plan._steer_jobs` returning no jobs (the census left out, nothing else changed), interleaved in one run,
median of --repeat. CPU is user+sys of the gate process and every worker it waited for (getrusage), the figure that
moves least with the machine's load; wall is printed beside it. A bench, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from evidence_gate import gate  # noqa: E402
from evidence_gate.lanes.properties import plan as lane_plan  # noqa: E402
from support import real_project  # noqa: E402


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _once(repo: Path, head: str, out: Path) -> tuple[float, float, str]:
    """(cpu, wall, row) of one whole gate run on the merge commit."""
    opts = gate.CheckOptions(repo=repo, base="main", head=head, author="agent-x")
    cpu, wall = _cpu(), time.monotonic()
    receipt, _code = gate.evaluate(opts, out)
    return _cpu() - cpu, time.monotonic() - wall, str(receipt["decision"]["row"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    shipped: Callable[..., Any] = lane_plan._steer_jobs
    with tempfile.TemporaryDirectory(prefix="evidence-gate-bench-steering-") as tmp:
        project = real_project.build(
            Path(tmp) / "attrs", seeds=list(range(1, args.seeds + 1)), trials=args.trials, fresh_seeds=0
        )
        head = real_project.pull_request(project, "honest", real_project.HONEST)
        figures: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
        for i in range(args.repeat):
            for variant in ("with", "without"):
                lane_plan._steer_jobs = shipped if variant == "with" else (lambda *_a, **_k: [])  # type: ignore[assignment]
                cpu, wall, row = _once(project.repo.path, head, Path(tmp) / f"r-{variant}-{i}.json")
                if row != "pass":
                    print(f"bench_steering: the honest pull request landed on {row}, not pass", file=sys.stderr)
                    return 1
                figures[variant].append((cpu, wall))
        lane_plan._steer_jobs = shipped  # type: ignore[assignment]
    cpu = {k: statistics.median(c for c, _ in v) for k, v in figures.items()}
    wall = {k: statistics.median(w for _, w in v) for k, v in figures.items()}
    print(f"attrs {real_project.ATTRS.version}, {args.seeds} seeds x {args.trials} examples, median of {args.repeat}")
    for k in ("without", "with"):
        print(f"  gate {k:7} the census: cpu {cpu[k]:6.2f} s  wall {wall[k]:6.2f} s")
    print(f"  steering costs cpu x{cpu['with'] / cpu['without']:.2f}, wall x{wall['with'] / wall['without']:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
