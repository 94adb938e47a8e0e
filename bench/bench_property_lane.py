"""Property lane vs a shell loop of `pytest --hypothesis-seed=S`: 8 seeds, same examples, same run.

    .venv/bin/python bench/bench_property_lane.py [--seeds 8] [--trials 200] [--repeat 3]

Builds a throw-away repository with a small property file, then times (median of --repeat) the whole
`evidence-gate check` (static lanes + sealed property lane, plan of N seeds, no fresh seeds) against a
sequential loop of one `pytest --hypothesis-seed=S` per seed with the same example count. The per-seed overhead
subtracts the time the examples themselves take (measured in-process, no pytest) from the time per seed of the
gate with one worker (`jobs: 1`) and of the loop.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support.repo_builder import GitRepo  # noqa: E402

PROPERTIES = """\
from hypothesis import given, strategies as st

from alloc import allocate


@given(st.integers(0, 10_000), st.lists(st.integers(1, 100), min_size=1, max_size=20))
def test_total_is_kept(total, weights):
    assert sum(allocate(total, weights)) == total


@given(st.integers(0, 10_000), st.lists(st.integers(1, 100), min_size=1, max_size=20))
def test_no_negative_share(total, weights):
    assert all(share >= 0 for share in allocate(total, weights))


@given(st.integers(0, 10_000), st.lists(st.integers(1, 100), min_size=1, max_size=20))
def test_one_share_per_weight(total, weights):
    assert len(allocate(total, weights)) == len(weights)
"""
ALLOC = """\
def allocate(total, weights):
    whole = sum(weights)
    shares = [total * w // whole for w in weights]
    for i in range(total - sum(shares)):
        shares[i % len(shares)] += 1
    return shares
"""
CONFTEST = """\
from hypothesis import settings

settings.register_profile("bench", max_examples={trials}, derandomize=False, database=None, deadline=None)
"""


def build(path: Path, seeds: list[int], trials: int, jobs: int = 0) -> GitRepo:
    """The benchmark repository: a baseline and a trivial agent patch."""
    repo = GitRepo(path)
    config = {
        "version": 1,
        "properties": {
            "seeds": seeds,
            "fresh_seeds": 0,
            "trials": trials,
            "jobs": jobs,
            "pythonpath": ["src"],
            "timeout_s": 600,
        },
    }
    repo.commit(
        "baseline",
        {
            ".evidence-gate.yml": json.dumps(config),
            "SCORE_PROPERTIES": "properties/test_alloc.py\n",
            "properties/test_alloc.py": PROPERTIES,
            "src/alloc.py": ALLOC,
            "conftest.py": CONFTEST.format(trials=trials),
        },
    )
    repo.branch("patch")
    repo.commit("patch", {"README.md": "patched\n"})
    return repo


def time_gate(repo: GitRepo, out: Path) -> float:
    """Wall time of `evidence-gate check` (one run)."""
    start = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "check",
            "--repo",
            str(repo.path),
            "--base",
            "main",
            "--head",
            "HEAD",
            "--author",
            "agent-bench",
            "--receipt",
            str(out),
        ],
        capture_output=True,
        check=False,
    )
    took = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"gate failed:\n{proc.stdout.decode()}{proc.stderr.decode()}")
    return took


def time_loop(repo: GitRepo, seeds: list[int]) -> float:
    """Wall time of the shell loop: one pytest per seed."""
    script = (
        "for S in " + " ".join(map(str, seeds)) + "; do "
        f"PYTHONPATH=src {sys.executable} -m pytest -q -p no:cacheprovider --hypothesis-profile=bench "
        "--hypothesis-seed=$S properties/test_alloc.py >/dev/null || exit 1; done"
    )
    start = time.perf_counter()
    subprocess.run(["sh", "-c", script], cwd=repo.path, check=True)
    return time.perf_counter() - start


def time_examples(repo: GitRepo, seeds: list[int], trials: int) -> float:
    """The examples alone: the three properties per seed in-process, no pytest, no start-up."""
    code = f"""
import sys, time
sys.path[:0] = ["src", "properties"]
from hypothesis import settings
import test_alloc as t
tests = [t.test_total_is_kept, t.test_no_negative_share, t.test_one_share_per_weight]
start = time.perf_counter()
for seed in {seeds!r}:
    for fn in tests:
        fn._hypothesis_internal_use_settings = settings(max_examples={trials}, derandomize=False, database=None,
                                                        deadline=None)
        fn._hypothesis_internal_use_seed = seed
        fn()
print(time.perf_counter() - start)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=repo.path, capture_output=True, check=True)
    return float(out.stdout.decode().strip())


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    seeds = [1101 + i for i in range(args.seeds)]
    with tempfile.TemporaryDirectory(prefix="bench-property-lane-") as tmp:
        repo = build(Path(tmp) / "repo", seeds, args.trials)
        serial = build(Path(tmp) / "serial", seeds, args.trials, jobs=1)
        gate_times, loop_times, serial_times = [], [], []
        for i in range(args.repeat):
            loop_times.append(time_loop(repo, seeds))
            gate_times.append(time_gate(repo, Path(tmp) / f"receipt{i}.json"))
            serial_times.append(time_gate(serial, Path(tmp) / f"serial{i}.json"))
        examples = time_examples(repo, seeds, args.trials)
    gate, loop = statistics.median(gate_times), statistics.median(loop_times)
    one = statistics.median(serial_times)
    n = len(seeds)
    print(f"cores: {os.cpu_count()}  seeds: {n}  trials: {args.trials}  properties: 3  repeat: {args.repeat}")
    print(f"shell loop (pytest --hypothesis-seed=S per seed): median {loop:.2f}s  ({loop / n:.3f}s per seed)")
    print(f"evidence-gate check (sealed property lane):       median {gate:.2f}s  ({gate / n:.3f}s per seed)")
    print(f"evidence-gate check, jobs: 1 (one worker):        median {one:.2f}s  ({one / n:.3f}s per seed)")
    print(f"examples alone, in-process:                       {examples:.2f}s  ({examples / n:.3f}s per seed)")
    print(f"ratio gate/loop: {gate / loop:.2f}  (target <= 0.70)")
    print(
        f"per-seed overhead over the examples: gate with one worker {(one - examples) / n * 1000:.0f} ms, "
        f"shell loop {(loop - examples) / n * 1000:.0f} ms"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
