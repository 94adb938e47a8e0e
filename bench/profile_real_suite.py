"""Where one `evidence-gate check` on the attrs (or natsort) benchmark spends its time: a phase breakdown.

    .venv/bin/python bench/profile_real_suite.py [--project attrs|natsort] [--seeds 4] [--trials 50] [--jobs 0]
        [--cprofile OUT]

Builds the same repository and honest pull request as bench_real_suite.py, then runs the gate's `check` once in this
process (as `evidence-gate check` would), with each phase timed by wrapping the function that does it (wall and
this process's CPU), and every worker event stamped on arrival at the trusted side: a worker's start-up (interpreter,
confinement, trusted imports: spawn to `configured`), its collection (`configured` to `collected`), its seeds
(`collected` to the last `result`) and its teardown (to exit). Nothing in the gate is changed for this; the wrappers
live here. `--cprofile OUT` also writes a cProfile of the gate's process (`python -m pstats OUT`).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import resource
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from evidence_gate import cli, gate  # noqa: E402
from evidence_gate.lanes import fixtures, harness_probes, locked_evidence  # noqa: E402
from evidence_gate.lanes.freeze import ledger as freeze_ledger  # noqa: E402
from evidence_gate.lanes.properties import census, launch, replays  # noqa: E402
from evidence_gate.lanes.properties import lane as property_lane  # noqa: E402
from evidence_gate.sealed import hypothesis_tables, runner_env  # noqa: E402
from evidence_gate.sealed import run as sealed_run  # noqa: E402
from evidence_gate.sealed import tree as sealed_tree  # noqa: E402
from support import real_project  # noqa: E402

PHASES: list[tuple[str, float, float, float]] = []  # (name, start, wall seconds, CPU seconds of this process)
EVENTS: dict[str, list[tuple[float, str]]] = {}
SPAWNED: dict[str, tuple[float, float]] = {}
ACCEPT_CPU: list[float] = []  # CPU seconds of the reader thread per worker event (parse, token, redaction)
_LOCK = threading.Lock()


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def timed(owner: Any, attr: str, label: str) -> None:
    """Replace `owner.attr` by a wrapper that records each call's wall and CPU time under `label`."""
    original: Callable[..., Any] = getattr(owner, attr)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        start, cpu = time.perf_counter(), _cpu()
        try:
            return original(*args, **kwargs)
        finally:
            with _LOCK:
                PHASES.append((label, start, time.perf_counter() - start, _cpu() - cpu))

    setattr(owner, attr, wrapper)


def stamp_workers() -> None:
    """Stamp each worker's events as the trusted side accepts them, and its spawn and end."""
    accept = sealed_run._accept
    run_worker = sealed_run.run_worker

    def stamped(line: bytes, result: sealed_run.WorkerResult, on_event: Any, token: str) -> None:
        before = len(result.events)
        cpu = time.thread_time()
        accept(line, result, on_event, token)
        ACCEPT_CPU.append(time.thread_time() - cpu)
        if len(result.events) > before:
            with _LOCK:
                EVENTS.setdefault(result.name, []).append((time.perf_counter(), str(result.events[-1].get("ev"))))

    def worker(ws: Any, name: str, *args: Any, **kwargs: Any) -> sealed_run.WorkerResult:
        start = time.perf_counter()
        try:
            return run_worker(ws, name, *args, **kwargs)
        finally:
            SPAWNED[name] = (start, time.perf_counter())

    sealed_run._accept = stamped
    sealed_run.run_worker = worker
    launch.run_worker = worker  # imported by name there
    replays.run_worker = worker  # and there
    census.run_worker = worker  # and there


WORKER_BOOTSTRAP = (
    "import sys, json, os, cProfile\n"
    "sys.path[:] = json.loads(sys.argv[1])\n"
    f"from {runner_env.PRIVATE_PACKAGE}.worker import main\n"
    "profile = cProfile.Profile()\n"
    "profile.enable()\n"
    "try:\n"
    "    code = main(sys.argv[2:])\n"
    "finally:\n"
    "    profile.disable()\n"
    "    profile.dump_stats(os.path.join(os.environ['TMPDIR'], f'worker-{os.getpid()}.prof'))\n"
    "sys.exit(code)\n"
)


def profile_workers(out: Path) -> None:
    """Run each worker under cProfile (into the sealed TMPDIR, the one folder it may write) and keep the profiles."""
    out.mkdir(parents=True, exist_ok=True)
    runner_env.BOOTSTRAP = WORKER_BOOTSTRAP
    close = sealed_run.Workspace.close

    def keep(ws: sealed_run.Workspace) -> None:
        for path in ws.root.glob("tmp*/worker-*.prof"):  # tmp.N: moved aside before the baseline's census
            (out / path.name).write_bytes(path.read_bytes())
        close(ws)

    sealed_run.Workspace.close = keep  # type: ignore[method-assign]


def instrument() -> None:
    """The phases of one check, by the functions that do them."""
    timed(gate, "resolve_commits", "commits: resolve base and head")
    timed(gate, "read_trusted", "config, SCORE_PROPERTIES, ledger (baseline)")
    timed(locked_evidence, "check", "lane: locked evidence")
    timed(harness_probes, "check", "lane: harness probes")
    timed(freeze_ledger, "check", "lane: freeze ledger")
    timed(fixtures, "check_records", "lane: fixtures (records)")
    timed(property_lane, "run", "property lane (all of it)")
    timed(sealed_run, "sandbox", "  sandbox user probe (python as nobody)")
    timed(runner_env, "build", "  runner folder (links + tables)")
    timed(runner_env, "harness_distributions", "    harness distributions (metadata)")
    timed(runner_env, "stdlib_path", "    stdlib path (python -I -S)")
    timed(hypothesis_tables, "provide", "    Hypothesis tables (verify + copy)")
    timed(sealed_tree, "build", "  sealed tree(s) from git objects")
    timed(sealed_tree, "changed_files", "  locked files re-hashed after the run")
    timed(property_lane, "unloadable", "  code-under-test names vs harness")
    timed(sealed_run.Workspace, "close", "  workspace removal")
    timed(gate, "write_receipt", "receipt write")


def worker_table(t0: float) -> list[str]:
    """Per worker: start-up, collection, seeds, end."""
    out = []
    for name, (start, end) in sorted(SPAWNED.items()):
        events = EVENTS.get(name, [])
        first = {ev: t for t, ev in reversed(events)}
        last = {ev: t for t, ev in events}
        configured = first.get("configured", start)
        collected = first.get("collected", configured)
        done = last.get("finished", end)
        results = sum(1 for _t, ev in events if ev == "result")
        out.append(
            f"  {name:<12} spawned +{start - t0:6.2f}s  start-up {configured - start:5.2f}s  "
            f"collection {collected - configured:5.2f}s  seeds {done - collected:6.2f}s ({results} results)  "
            f"exit {end - done:5.2f}s  total {end - start:6.2f}s"
        )
    return out


def main() -> int:
    """Build the repository, run one instrumented check and print the breakdown."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--project", choices=sorted(real_project.SUITES), default="attrs")
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--cprofile", type=Path)
    parser.add_argument("--worker-profiles", type=Path, help="a folder for a cProfile of each worker")
    args = parser.parse_args()
    seeds = [1101 + i for i in range(args.seeds)]
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as tmp:
        work = Path(tmp)
        suite = real_project.SUITES[args.project]
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
        for key in [k for k in os.environ if k.startswith("GIT_")]:
            del os.environ[key]
        instrument()
        if args.worker_profiles:
            profile_workers(args.worker_profiles)
        stamp_workers()
        argv = ["check", "--repo", str(project.repo.path), "--head", merge, "--author", "agent-bench"]
        argv += ["--receipt", str(work / "receipt.json")]
        profiler = cProfile.Profile() if args.cprofile else None
        t0, cpu0 = time.perf_counter(), _cpu()
        children0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if profiler:
            profiler.enable()
        try:
            code = cli.main(argv)
        except SystemExit as exc:
            code = int(exc.code or 0)
        if profiler:
            profiler.disable()
            profiler.dump_stats(str(args.cprofile))
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        child_cpu = (children.ru_utime - children0.ru_utime) + (children.ru_stime - children0.ru_stime)
        decision = json.loads((work / "receipt.json").read_text(encoding="utf-8"))["decision"]["row"]
    print(f"exit {code}, decision {decision}; load average {os.getloadavg()[0]:.1f}")
    print(f"whole check: {wall:.2f}s wall; CPU: gate process {cpu:.2f}s, its children (git, workers) {child_cpu:.2f}s")
    print("phases (wall, gate-process CPU; nested phases are indented, parallel ones overlap):")
    for name, start, seconds, cpu_s in sorted(PHASES, key=lambda p: p[1]):
        print(f"  +{start - t0:6.2f}s  {seconds:6.2f}s  cpu {cpu_s:5.2f}s  {name}")
    print(f"worker events accepted: {len(ACCEPT_CPU)}, reader CPU {sum(ACCEPT_CPU):.2f}s in all")
    print("workers (times from the trusted side's clock):")
    print("\n".join(worker_table(t0)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
