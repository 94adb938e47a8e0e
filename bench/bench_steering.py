"""What the steering comparison costs: the gate as shipped against the census of every seed, and against none.

    .venv/bin/python bench/bench_steering.py [--project attrs|natsort] [--seeds 4] [--trials 50] [--repeat 3]

The steering comparison (row 18, `property-steered`) asks the baseline, after the head ran, for every property's
strategies (one `describe` worker, no example) and runs again only the planned seeds on which the head's discards
could be a steered rise (`steering.needed`). This bench measures that on a pinned real sdist
(tests/support/real_project.py: attrs on tests/test_funcs.py and tests/test_dunders.py, or natsort on four of its
test files) with an honest pull request merged like refs/pull/N/merge: `gate.evaluate` as shipped, against the
same call with `steering.needed` answering every planned seed (the census of every seed, as before the census was
made lazy) and with `census.census_jobs` answering no job (no comparison at all), interleaved in one run, median
of --repeat. CPU is user+sys of the gate process and every worker it waited for (getrusage), the figure that moves
least with the machine's load; wall is printed beside it. A bench, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from evidence_gate import gate  # noqa: E402
from evidence_gate.lanes.properties import census, steering  # noqa: E402
from support import real_project  # noqa: E402

VARIANTS = ("none", "shipped", "every seed")


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _once(repo: Path, head: str, out: Path) -> tuple[float, float, str, int]:
    """(cpu, wall, row, baseline seeds counted) of one whole gate run on the merge commit."""
    opts = gate.CheckOptions(repo=repo, base="main", head=head, author="agent-x")
    cpu, wall = _cpu(), time.monotonic()
    receipt, _code = gate.evaluate(opts, out)
    counted = sum(
        len(((ledger.get("steering") or {}).get("baseline") or {}).get("outcomes") or {})
        for ledger in receipt.get("properties", {}).get("ledgers", [])
    )
    return _cpu() - cpu, time.monotonic() - wall, str(receipt["decision"]["row"]), counted


def _every_seed(_head: Iterable[Any], seeds: Iterable[int]) -> list[int]:
    return list(seeds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--project", choices=sorted(real_project.SUITES), default="attrs")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    suite = real_project.SUITES[args.project]
    needed: Callable[..., Any] = steering.needed
    jobs: Callable[..., Any] = census.census_jobs
    figures: dict[str, list[tuple[float, float, int]]] = {v: [] for v in VARIANTS}
    with tempfile.TemporaryDirectory(prefix="evidence-gate-bench-steering-") as tmp:
        project = real_project.build(
            Path(tmp) / "repo",
            seeds=list(range(1, args.seeds + 1)),
            trials=args.trials,
            fresh_seeds=0,
            entries=suite.entries,
            sdist=suite.sdist,
            pythonpath=suite.pythonpath,
        )
        head = real_project.pull_request(project, "honest", suite.honest)
        try:
            for i in range(args.repeat):
                for variant in VARIANTS:
                    steering.needed = _every_seed if variant == "every seed" else needed  # type: ignore[assignment]
                    census.census_jobs = (lambda *_a, **_k: []) if variant == "none" else jobs  # type: ignore[assignment]
                    cpu, wall, row, counted = _once(project.repo.path, head, Path(tmp) / f"r-{i}-{variant}.json")
                    if row != "pass":
                        print(f"bench_steering: the honest pull request landed on {row}, not pass", file=sys.stderr)
                        return 1
                    figures[variant].append((cpu, wall, counted))
        finally:
            steering.needed = needed  # type: ignore[assignment]
            census.census_jobs = jobs  # type: ignore[assignment]
    cpu = {k: statistics.median(c for c, _, _ in v) for k, v in figures.items()}
    wall = {k: statistics.median(w for _, w, _ in v) for k, v in figures.items()}
    print(
        f"{suite.sdist.name} {suite.sdist.version}, {args.seeds} seeds x {args.trials} examples, median of {args.repeat}"
    )
    for k in VARIANTS:
        counted = figures[k][-1][2]
        print(
            f"  census {k:10}: cpu {cpu[k]:6.2f} s (x{cpu[k] / cpu['none']:.2f})  wall {wall[k]:6.2f} s "
            f"(x{wall[k] / wall['none']:.2f})  baseline (property, seed) runs counted: {counted}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
