"""The whole gate on a real suite (attrs or natsort from PyPI) against a plain per-seed pytest loop: wall time and memory.

    .venv/bin/python bench/bench_real_suite.py [--project attrs|natsort] [--seeds 4] [--trials 50] [--repeat 3]
        [--jobs 0] [--other-src DIR] [--shards N]

Builds the pinned sdist's repository (tests/support/real_project.py: cached under ~/.cache/evidence-gate; attrs is
gated on its own tests/test_funcs.py and tests/test_dunders.py, natsort on four of its test files, see
`real_project.SUITES`) with a plan of --seeds seeds, --trials examples per seed and no fresh seeds, and an honest
pull request merged like refs/pull/N/merge. In the same run, interleaved, median of --repeat: the whole
`evidence-gate check` on that merge commit against a sequential loop of `pytest --hypothesis-seed=S FILES` over the
same seeds, on the same checkout, with the same examples per seed (a Hypothesis profile loaded after the project's
own conftest loads its profile). The
loop's checkout gets one untimed run first, as a developer's would have had: Hypothesis keeps its Unicode table in
`.hypothesis/` and rebuilds it (about 200 MiB and 2 s of CPU) where that folder is new or unwritable.

Time: wall, and CPU (user+sys of each process tree, from wait4), which moves less with the machine's load.
`--other-src DIR` also times the gate from another copy of its `src/` folder (`git archive REV src | tar -x`),
interleaved in the same run, for before/after figures under the same load. `--shards N` also runs the plan as N
shards (`check --shard K/N`, one after the other) in each repeat: their CPU together against one run's, and the
slowest shard's wall (the critical path on N runners).

Memory: the peak resident set of one plain pytest run, against the gate's (a) largest single process (what
`wait4`/GNU time report: the gate or one of its workers), (b) the gate's own process, and (c) the peak of the sum
over the gate and all its workers at once (sampled from /proc every 20 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import real_project  # noqa: E402

# Issue 21's goals: wall on a quiet machine, CPU, the largest process and the sum at once, against the plain loop.
TARGET_RATIO = 0.45
TARGET_CPU = 0.7
TARGET_RSS = 1.5
TARGET_SUM = 2.0
PAGE = os.sysconf("SC_PAGE_SIZE")
# Loaded with `-p`; `trylast` so it runs after the project's conftest (attrs': its "patience" profile).
PLUGIN = """\
import pytest
from hypothesis import HealthCheck, settings


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    settings.register_profile("bench", max_examples={trials}, derandomize=False, database=None, deadline=None,
                              suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("bench")
"""


@dataclass(frozen=True)
class Measured:
    """One process tree's wall time and memory (KiB)."""

    wall: float
    code: int
    largest_kib: int  # ru_maxrss from wait4: the largest single process of the tree
    root_kib: int  # the started process alone (sampled)
    total_kib: int  # the tree's summed resident set at its peak (sampled)
    cpu: float = 0.0  # user + system seconds of the process and every descendant it waited for (wait4)


def _rss_tree(root: int) -> tuple[int, int]:
    """(resident KiB of `root`, summed resident KiB of `root` and every descendant) right now."""
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(entry.path, "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == pid and p not in tree]
        tree.update(kids)
        frontier += kids
    sizes: dict[int, int] = {}
    for pid in tree:
        try:
            sizes[pid] = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE // 1024
        except (OSError, IndexError, ValueError):
            continue
    return sizes.get(root, 0), sum(sizes.values())


def measure(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> Measured:
    """Run `argv` to completion; its wall time, exit code and memory."""
    peaks = [0, 0]
    with log.open("wb") as out:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.02):
                own, total = _rss_tree(proc.pid)
                peaks[0], peaks[1] = max(peaks[0], own), max(peaks[1], total)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    return Measured(wall, proc.returncode, usage.ru_maxrss, peaks[0], peaks[1], cpu)


def gate_run(
    project: real_project.RealProject, merge: str, out: Path, src: Path | None = None, shard: str | None = None
) -> Measured:
    """`evidence-gate check` on the merge commit, as an agent's PR (`src`: another copy of the gate's `src/` folder,
    e.g. an earlier release's, put first on the path; `shard`: `K/N`, one shard of the plan)."""
    name = "receipt" if src is None else "receipt-other"
    if shard is not None:
        name += "-shard" + shard.replace("/", "of")
    argv = [
        sys.executable,
        "-m",
        "evidence_gate",
        "check",
        "--repo",
        str(project.repo.path),
        "--head",
        merge,
        "--author",
        "agent-bench",
        "--receipt",
        str(out / f"{name}.json"),
        *(["--shard", shard] if shard else []),
    ]
    env = real_project.env_without_git()
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return measure(argv, out, env, out / f"{name.replace('receipt', 'gate')}.log")


def loop_run(
    project: real_project.RealProject, suite: real_project.Suite, seeds: list[int], plugin_dir: Path, out: Path
) -> list[Measured]:
    """One plain pytest per seed, one after the other, on the checked-out merge commit."""
    env = {**real_project.env_without_git(), "PYTHONPATH": os.pathsep.join([str(plugin_dir), *suite.pythonpath])}
    runs = []
    for seed in seeds:
        argv = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "bench_profile",
            f"--hypothesis-seed={seed}",
            *suite.entries,
        ]
        runs.append(measure(argv, project.repo.path, env, out / f"pytest-{seed}.log"))
        if runs[-1].code != 0:
            raise SystemExit(f"plain pytest failed on seed {seed}:\n{(out / f'pytest-{seed}.log').read_text()[-3000:]}")
    return runs


def mib(kib: float) -> str:
    """KiB as MiB, one decimal."""
    return f"{kib / 1024:.1f} MiB"


def report(
    args: argparse.Namespace,
    gates: list[Measured],
    loops: list[list[Measured]],
    cold: Measured,
    receipt: dict[str, object],
) -> int:
    """Print the figures; 1 when the gate did not pass (then nothing is comparable)."""
    n = args.seeds
    suite = real_project.SUITES[args.project]
    gate = statistics.median(g.wall for g in gates)
    loop = statistics.median(sum(r.wall for r in runs) for runs in loops)
    one = max(r.largest_kib for runs in loops for r in runs)
    largest = max(g.largest_kib for g in gates)
    own = max(g.root_kib for g in gates)
    total = max(g.total_kib for g in gates)
    props = receipt.get("properties") or {}
    ledgers = props.get("ledgers", []) if isinstance(props, dict) else []
    row = receipt.get("decision", {}).get("row") if isinstance(receipt.get("decision"), dict) else None
    print(
        f"project: {suite.sdist.name} {suite.sdist.version} (sdist sha256 "
        f"{suite.sdist.sha256[:12]}), files: {' '.join(suite.entries)}"
    )
    print(
        f"cores: {os.cpu_count()}  seeds: {n}  trials: {args.trials}  jobs: {args.jobs}  repeat: {args.repeat}  "
        f"ledgers: {len(ledgers)}  gate decision: {row}"
    )
    print(f"plain loop (one pytest per seed):  median {loop:.2f}s  ({loop / n:.2f}s per seed)")
    print(f"evidence-gate check:               median {gate:.2f}s  ({gate / n:.2f}s per seed)")
    print(f"ratio gate/loop: {gate / loop:.2f}  (target <= {TARGET_RATIO})")
    gate_cpu = statistics.median(g.cpu for g in gates)
    loop_cpu = statistics.median(sum(r.cpu for r in runs) for runs in loops)
    print(
        f"CPU (user+sys, the whole process tree): loop median {loop_cpu:.2f}s, gate median {gate_cpu:.2f}s, "
        f"ratio {gate_cpu / loop_cpu:.2f} (target <= {TARGET_CPU})"
    )
    walls = ", ".join(f"{sum(r.wall for r in runs):.2f}/{g.wall:.2f}" for runs, g in zip(loops, gates, strict=True))
    print(f"each repeat, loop/gate wall: {walls}; load average at the end: {os.getloadavg()[0]:.1f}")
    print(
        f"peak RSS, one plain pytest run:          {mib(one)}  (the first run in a fresh checkout: "
        f"{mib(cold.largest_kib)}, when Hypothesis builds its Unicode table)"
    )
    print(f"peak RSS, gate's largest process:        {mib(largest)}  ({largest / one:.2f}x, target <= {TARGET_RSS}x)")
    print(f"peak RSS, the gate's own process:        {mib(own)}  ({own / one:.2f}x)")
    print(f"peak RSS, gate + workers at once (sum):  {mib(total)}  ({total / one:.2f}x, target <= {TARGET_SUM}x)")
    if row != "pass" or any(g.code != 0 for g in gates):
        print(
            f"the gate did not pass the honest PR (decision {row}, exit codes {[g.code for g in gates]}): its "
            "figures are not comparable with the loop",
            file=sys.stderr,
        )
        return 1
    return 0


def report_other(
    args: argparse.Namespace, others: list[Measured], loops: list[list[Measured]], receipt: dict[str, object]
) -> None:
    """The gate from --other-src, against the same loop runs."""
    wall = statistics.median(g.wall for g in others)
    cpu = statistics.median(g.cpu for g in others)
    loop = statistics.median(sum(r.wall for r in runs) for runs in loops)
    loop_cpu = statistics.median(sum(r.cpu for r in runs) for runs in loops)
    row = receipt.get("decision", {}).get("row") if isinstance(receipt.get("decision"), dict) else None
    print(
        f"gate from {args.other_src} (decision {row}): median {wall:.2f}s, ratio {wall / loop:.2f}; "
        f"CPU median {cpu:.2f}s, ratio {cpu / loop_cpu:.2f}; largest process {mib(max(g.largest_kib for g in others))}"
    )
    print("each repeat, its wall: " + ", ".join(f"{g.wall:.2f}" for g in others))


def report_shards(args: argparse.Namespace, gates: list[Measured], shards: list[list[Measured]]) -> None:
    """N shards of the plan, run one after the other: their CPU together against one unsharded run's, and the
    critical path (the slowest shard's wall, as on N runners) against its wall."""
    cpu = statistics.median(g.cpu for g in gates)
    wall = statistics.median(g.wall for g in gates)
    total = statistics.median(sum(r.cpu for r in runs) for runs in shards)
    slowest = statistics.median(max(r.wall for r in runs) for runs in shards)
    print(
        f"{args.shards} shards: CPU of all shards median {total:.2f}s ({total / cpu:.2f}x one run's {cpu:.2f}s, "
        f"{(total - cpu) / args.shards:.2f}s extra per shard), slowest shard's wall median {slowest:.2f}s "
        f"({slowest / wall:.2f}x one run's)"
    )


def main() -> int:
    """Build the repository, run both sides interleaved and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", choices=sorted(real_project.SUITES), default="attrs")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=0, help="the gate's properties.jobs (0: one per core)")
    parser.add_argument(
        "--other-src",
        type=Path,
        help="also time the gate from this copy of its src/ folder (e.g. `git archive` of an earlier commit), "
        "interleaved in the same run",
    )
    parser.add_argument(
        "--shards", type=int, default=0, help="also run the plan as N shards (`--shard K/N`), one after the other"
    )
    args = parser.parse_args()
    seeds = [1101 + i for i in range(args.seeds)]
    suite = real_project.SUITES[args.project]
    with tempfile.TemporaryDirectory(prefix="bench-real-suite-") as tmp:
        work = Path(tmp)
        project = real_project.build(
            work / "repo",
            seeds=seeds,
            trials=args.trials,
            fresh_seeds=0,
            jobs=args.jobs,
            entries=suite.entries,
            sdist=suite.sdist,
            pythonpath=suite.pythonpath,
        )
        merge = real_project.pull_request(project, "honest", suite.honest)
        plugin_dir = work / "plugin"
        plugin_dir.mkdir()
        (plugin_dir / "bench_profile.py").write_text(PLUGIN.format(trials=args.trials), encoding="utf-8")
        # One untimed run first, as on a developer's checkout: Hypothesis caches its Unicode table in .hypothesis/.
        (cold,) = loop_run(project, suite, [1100], plugin_dir, work)
        gates: list[Measured] = []
        others: list[Measured] = []
        loops: list[list[Measured]] = []
        sharded: list[list[Measured]] = []
        for i in range(args.repeat):
            out = work / f"run{i}"
            out.mkdir()
            loops.append(loop_run(project, suite, seeds, plugin_dir, out))
            gates.append(gate_run(project, merge, out))
            if args.other_src:
                others.append(gate_run(project, merge, out, args.other_src.resolve()))
            if args.shards:
                sharded.append(
                    [gate_run(project, merge, out, shard=f"{k}/{args.shards}") for k in range(1, args.shards + 1)]
                )
        receipt = json.loads((work / "run0" / "receipt.json").read_text(encoding="utf-8"))
        if receipt.get("decision", {}).get("row") != "pass":
            print((work / "run0" / "gate.log").read_text(encoding="utf-8")[-3000:], file=sys.stderr)
        code = report(args, gates, loops, cold, receipt)
        if others:
            other = json.loads((work / "run0" / "receipt-other.json").read_text(encoding="utf-8"))
            report_other(args, others, loops, other)
        if sharded:
            report_shards(args, gates, sharded)
        return code


if __name__ == "__main__":
    sys.exit(main())
