"""The lanes that run code: sealed property runs on a seed plan, freeze replays, tautology checks, digest checks.

`run` builds the sealed trees, fans the seed plan out over worker processes (one pytest session each, several
seeds in-process), and turns the workers' event streams into seed ledgers and violations. Every expectation is
checked against what the trusted process saw start and finish; nothing the test process prints is read.
"""

from __future__ import annotations

import ast
import os
import posixpath
import secrets
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

from evidence_gate import visible
from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import Repo
from evidence_gate.lanes import fixtures, import_scan
from evidence_gate.lanes.properties import patch_coverage, seed_ledger, steering
from evidence_gate.lanes.score_properties import PropertySpec
from evidence_gate.model import FreezeEntry, LaneResult, Violation
from evidence_gate.receipt import facts as run_facts
from evidence_gate.row_ids import (
    FIXTURE_DIGEST_MISMATCH,
    FREEZE_EXPIRED,
    FREEZE_REMOVAL_UNVERIFIED,
    FREEZE_REMOVED_STILL_FAILING,
    PROPERTY_TAUTOLOGY,
    RUN_INTEGRITY,
)
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import (
    WorkerResult,
    Workspace,
    count_files,
    limits,
    run_install,
    run_worker,
    runtime_missing,
)
from evidence_gate.sealed.runner_env import Runner, RunnerError
from evidence_gate.sealed.tree import Neutralised
from evidence_gate.sealed.worker import confinement, protocol, provenance
from evidence_gate.sealed.worker.assertion_hash import matches
from evidence_gate.sealed.worker.plugin import matches_spec
from evidence_gate.sealed.worker.protocol import (
    CLOCK_SHIFT_S,
    EV,
    HASH_SEED,
    PLAN_KINDS,
    SHIFTED_HASH_SEED,
    Event,
    Kind,
    Mode,
    is_shrink,
)

INSTALL_HINT = "pip install 'evidence-gate[run]'"


@dataclass(frozen=True)
class DynamicRequest:
    """What the sealed run needs; every path and object comes from git, never the working tree."""

    repo: Repo
    baseline: str
    head: str
    config: Config
    specs: tuple[PropertySpec, ...]
    locked_paths: frozenset[str]
    removed: tuple[FreezeEntry, ...]
    expired: tuple[FreezeEntry, ...]
    active: tuple[FreezeEntry, ...]
    patch_id: str
    today: date
    workdir: Path
    shard: tuple[int, int] | None = None
    # The fixture lane's result and its digest records, when the caller already computed them.
    fixture_records: tuple[LaneResult, list[dict[str, Any]]] | None = None
    # Fresh seeds given rather than drawn (a verification replays a receipt's).
    fresh: tuple[int, ...] | None = None


@dataclass
class Job:
    """One sealed worker: which tree, which nodes, and the (seed, kind) runs per node."""

    name: str
    tree: str
    runs: dict[str, list[list[Any]]] = field(default_factory=dict)
    # The worker's PYTHONHASHSEED and clock shift: the `shifted` replay's differ from every other worker's.
    hash_seed: int = HASH_SEED
    clock_shift_s: float = 0.0

    def add(self, node: str, seed: int, kind: str) -> None:
        """Schedule one run of `node`."""
        self.runs.setdefault(node, []).append([seed, kind])


def plan_slice(seeds: tuple[int, ...], shard: tuple[int, int] | None) -> list[int]:
    """The declared seeds this run owns: all of them, or every N-th starting at K for `--shard K/N`."""
    if shard is None:
        return list(seeds)
    k, n = shard
    return list(seeds)[k - 1 :: n]


def draw_fresh(count: int, avoid: Iterable[int]) -> list[int]:
    """Fresh seeds from the OS's randomness, distinct from the plan and each other."""
    taken = set(avoid)
    out: list[int] = []
    while len(out) < count:
        seed = secrets.randbits(31)
        if seed not in taken:
            taken.add(seed)
            out.append(seed)
    return out


def sealed_locked_set(req: DynamicRequest) -> frozenset[str]:
    """The locked lane's set plus what the property lane itself must take from the baseline."""
    paths = set(req.locked_paths) | {CONFIG_PATH, req.config.properties.list}
    for spec in req.specs:
        paths.add(spec.file)
        if spec.counterexample:
            paths.add(spec.counterexample.split("::", 1)[0])
        parts = spec.file.split("/")
        for depth in range(len(parts)):
            # The conftest chain and the package __init__ files run before the property does.
            for name in ("conftest.py", "__init__.py"):
                paths.add(posixpath.join(*parts[:depth], name) if depth else name)
    paths.add(req.config.fixtures.dir.rstrip("/") + "/")
    return frozenset(paths)


def replay_locked_set(req: DynamicRequest, locked: frozenset[str]) -> frozenset[str]:
    """`locked` plus, for every removed or expired entry, the baseline's copy of its test file, the conftest and
    package files above it and the repository helpers it imports: the patch's copy of a frozen test never proves
    its own removal or clears its expiry."""
    files = {posixpath.normpath(e.test.split("::", 1)[0]) for e in (*req.removed, *req.expired)}
    paths = set(locked) | files
    for file in files:
        parts = file.split("/")
        for depth in range(len(parts)):
            for name in ("conftest.py", "__init__.py"):
                paths.add(posixpath.join(*parts[:depth], name) if depth else name)

    def read(wanted: list[str]) -> dict[str, bytes | None]:
        got = req.repo.read_blobs(f"{req.baseline}:{p}" for p in wanted)
        return {p: got[f"{req.baseline}:{p}"] for p in wanted}

    start = {p: data for p, data in read(sorted(paths - set(locked))).items() if data is not None and p.endswith(".py")}
    return frozenset(paths | import_scan.scan(read, start, req.config.properties.pythonpath).files)


class _Order:
    """Arrival order of start events across workers: `attempted_seeds` is appended as each trial starts."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.starts: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> None:
        if event.get(EV) == Event.START:
            with self.lock:
                self.starts.append(event)


def _paths(tree: Path, config: Config, site: Path | None = None) -> list[str]:
    """A worker's import paths: the tree, its `properties.pythonpath`, then the installed packages (code under test,
    last, so that they cannot shadow what loaded first)."""
    return [str(tree)] + [str(tree / p) for p in config.properties.pythonpath] + ([str(site)] if site else [])


def _first_confined(result: WorkerResult) -> dict[str, Any] | None:
    """The worker's report of its confinement: the first one, sent before any repository code ran."""
    return next((e for e in result.events if e.get(EV) == Event.CONFINED), None)


def _worker_problems(result: WorkerResult, timeout_s: int) -> list[str]:
    problems = list(result.problems)
    unconfined = confinement.shortfall(_first_confined(result), install=False)
    if unconfined:
        problems.append(unconfined)
    if result.timed_out:
        problems.append(f"timed out after {timeout_s}s; the process group was killed")
    # The real cause first: a test module or conftest that failed to import, named with its module and line.
    causes = [
        f"collecting {e.get('node') or 'the tests'} failed: {e.get('message')}"
        for e in result.events
        if e.get(EV) == Event.COLLECT_ERROR
    ]
    problems += causes
    finished = result.finished
    if finished is None:
        if not causes:
            problems.append(f"the session did not complete (exit code {result.exit_code}, no session-finished marker)")
    elif finished.get("exitstatus") == 5:
        problems.append("pytest collected nothing (exit 5)")
    elif result.exit_code not in (0, None) and not result.timed_out and not causes:
        problems.append(f"pytest exited with code {result.exit_code}")
    hooks = sorted({str(h) for e in result.events if e.get(EV) == Event.FOREIGN_HOOKS for h in e.get("hooks") or ()})
    if hooks:
        problems.append(
            f"pytest hooks defined in code under test ({', '.join(hooks[:5])}): a hook sees and can "
            f"rewrite every result; lock that module (`locked:` in {CONFIG_PATH}) or move the hook into "
            "a locked conftest"
        )
    for event in result.events:
        if event.get("tampered"):
            problems.append(
                f"code that is not a locked test (only a locked test may change the harness, through "
                f"pytest's monkeypatch) replaced {', '.join(map(str, event['tampered'][:5]))}"
            )
            break
    return list(dict.fromkeys(problems))


def _results(workers: list[WorkerResult]) -> list[dict[str, Any]]:
    return [e for w in workers for e in w.events if e.get(EV) == Event.RESULT]


def _collected(workers: list[WorkerResult]) -> list[str]:
    nodes: list[str] = []
    for w in workers:
        for event in w.events:
            if event.get(EV) == Event.COLLECTED and isinstance(event.get("nodes"), list):
                nodes += [str(n) for n in event["nodes"]]
    return list(dict.fromkeys(nodes))


def run(req: DynamicRequest) -> LaneResult:
    """Run everything sealed and return ledgers, replays, digests and violations."""
    missing = runtime_missing()
    if missing:
        return _not_run(
            req,
            Violation(
                RUN_INTEGRITY,
                f"the gate's interpreter lacks {missing}, so no property can "
                f"run sealed; install the runner with `{INSTALL_HINT}`",
            ),
        )
    ws = Workspace()
    try:
        lacking = confinement.missing()
        if lacking:
            # In every mode: without them the code under test could read the checkout's token or dial out.
            return _not_run(
                req,
                Violation(
                    RUN_INTEGRITY,
                    f"no property ran: {lacking}. Run the gate on a kernel that has it (or in its container action)",
                ),
            )
        try:
            ws.runner  # noqa: B018 - built here, so that an incomplete harness is a finding, not a crash
        except RunnerError as exc:
            return _not_run(
                req,
                Violation(
                    RUN_INTEGRITY,
                    f"the sealed run's runner environment could not be built: "
                    f"{exc}; reinstall the runner with `{INSTALL_HINT}`",
                ),
            )
        return _run(req, ws)
    finally:
        ws.close()


def _not_run(
    req: DynamicRequest, why: Violation | list[Violation], receipt: dict[str, Any] | None = None
) -> LaneResult:
    """Nothing could run: the reason(s), plus every removal and expired entry left unverified."""
    file = req.config.freeze.file
    reasons = why if isinstance(why, list) else [why]
    return LaneResult(
        (
            *reasons,
            *[
                Violation(
                    FREEZE_REMOVAL_UNVERIFIED,
                    f"entry {e.id!r} was removed but its test could not be replayed (no sealed runner)",
                    file,
                    e.line,
                )
                for e in req.removed
            ],
            *[
                Violation(
                    FREEZE_EXPIRED,
                    f"entry {e.id!r} expired on {e.expires} and its test could not be run (no sealed runner)",
                    file,
                    e.line,
                )
                for e in req.expired
            ],
        ),
        receipt or {},
    )


def _isolation(workers: list[WorkerResult]) -> dict[str, Any]:
    """What every worker applied, from each one's first report: the lowest Landlock ABI; network "isolated" only
    when every one had its own empty network namespace, "filtered" when some could not make one but the seccomp
    filter refused every socket, else "shared"; reads "confined" only when every one had the read allow-list;
    seccomp "sockets-denied" only when every one had the filter; how tasks were bounded; the reasons when a
    network namespace could not be made (Docker's default seccomp profile refuses them)."""
    confined = [e for e in (_first_confined(w) for w in workers) if e is not None]
    every = bool(confined) and len(confined) == len(workers)
    notes = sorted({str(e["network_note"]) for e in confined if e.get("network_note")})
    networks = {e.get("network") for e in confined}
    network = (
        "isolated"
        if networks == {"isolated"}
        else "filtered"
        if every and networks <= {"isolated", "filtered"}
        else "shared"
    )
    reads = "confined" if every and all(e.get("reads") is True for e in confined) else "user"
    return {
        "landlock": min((int(e.get("landlock") or 0) for e in confined), default=0),
        "landlock_network": every and all(e.get("landlock_network") is True for e in confined),
        "scoped": every and all(e.get("scoped") is True for e in confined),
        "network": network,
        "reads": reads,
        "seccomp": "sockets-denied" if every and all(e.get("seccomp") == "none" for e in confined) else "off",
        "tasks": sorted({str(e["tasks"]) for e in confined if e.get("tasks")}),
        **({"network_note": "; ".join(notes)} if notes else {}),
    }


def _printable_tail(text: str, limit: int = 600) -> str:
    """The end of an install log as one bounded line: control characters escaped, newlines shown as `\\n`."""
    return visible.line(text[-limit:]).strip()


def _install(
    req: DynamicRequest, ws: Workspace, label: str, tree: Path, limit: protocol.Limits, runs: list[dict[str, Any]]
) -> tuple[Path, Violation | None]:
    """Run `properties.install` for one sealed tree into a fresh site folder; a violation when it did not succeed."""
    props = req.config.properties
    site = ws.site(f"site-{label}")
    result = run_install(ws, f"install-{label}", props.install, tree, site, limit, props.timeout_s)
    runs.append(
        {
            "tree": label,
            "exit_code": result.exit_code,
            "timed_out": result.timed_out,
            "seconds": round(result.seconds, 3),
            "files": count_files(site),
        }
    )
    unconfined = confinement.shortfall(_first_confined(result), install=True)
    if result.exit_code == 0 and not result.timed_out and not unconfined:
        return site, None
    if unconfined:
        return site, Violation(
            RUN_INTEGRITY, f"properties.install on the {label} tree did not run confined: {unconfined}", CONFIG_PATH
        )
    what = (
        f"timed out after {props.timeout_s}s (the process group was killed)"
        if result.timed_out
        else f"exited with code {result.exit_code}"
    )
    tail = _printable_tail(result.log_tail)
    return site, Violation(
        RUN_INTEGRITY,
        f"properties.install {what} on the {label} tree, so no property ran"
        f"{'; output ends: ' + tail if tail else ''}. Fix: run the command "
        "locally in a clean checkout with EVIDENCE_GATE_SITE set to an empty "
        "folder and EVIDENCE_GATE_PYTHON to the gate's interpreter, and correct "
        f"it (or the requirements it installs) in {CONFIG_PATH}",
        CONFIG_PATH,
    )


def pytest_job(
    config: Config,
    tree: Path,
    runs: dict[str, list[list[Any]]],
    limit: protocol.Limits,
    *,
    site: Path | None = None,
    shrink_reruns: int = 2,
    trusted: Iterable[str] = (),
) -> protocol.Job:
    """The job of one sealed pytest worker: the tree, its import paths, the (seed, kind) runs per node.

    The one builder behind the property lane's workers and `freeze hash`. `site` is the tree's `properties.install`
    folder; `trusted` names the locked files (relative to the tree) whose frames may change the harness, through
    pytest's monkeypatch.
    """
    return {
        "mode": Mode.PYTEST,
        "tree": str(tree),
        "paths": _paths(tree, config, site),
        "trials": config.properties.trials,
        "runs": runs,
        "args": sorted({n.split("[", 1)[0] for n in runs}),
        "limits": limit,
        "shrink_reruns": shrink_reruns,
        "trusted_files": sorted(str(tree / p) for p in trusted if p.endswith(".py")),
        "code_under_test": code_under_test(config, tree),
    }


@dataclass(frozen=True)
class Trees:
    """The sealed trees of one run and the locked sets they were built with."""

    head: Path
    # The baseline's own tree, for counterexamples and removal replays; None when neither runs here.
    base: Path | None
    # The head's code with the baseline's copy of each removed or expired test (the head tree when there is none).
    replay: Path
    locked: frozenset[str]
    replay_locked: frozenset[str]
    neutralised: tuple[Neutralised, ...]


@dataclass(frozen=True)
class Plan:
    """What one run will do: its seeds, trees and workers' jobs, and the digest records to re-produce."""

    first_shard: bool
    seeds: list[int]
    fresh: list[int]
    trees: Trees
    jobs: list[Job]
    records: list[dict[str, Any]]
    fixture_hash: str | None
    limit: protocol.Limits
    parallel: int
    # The patch's changed lines of code under test, which the head's property workers record.
    changed_code: tuple[patch_coverage.ChangedFile, ...] = ()


def _run(req: DynamicRequest, ws: Workspace) -> LaneResult:
    """Plan the sealed run, launch its workers, collect their evidence, and write the receipt's sections."""
    locked = sealed_locked_set(req)
    test_files = _test_files(req, locked)
    head_tree = ws.root / "head"
    neutralised = sealed_tree.build(req.repo, req.head, req.baseline, locked, head_tree, test_files, ws.runner.owner)
    unloadable_code = unloadable(req.config, head_tree, ws.runner)
    if unloadable_code:
        return _not_run(
            req,
            unloadable_code,
            {"sealed": {"runner": ws.runner.to_json(), "neutralised": [n.to_json() for n in neutralised]}},
        )
    # The head tree alone so far: the baseline and replay trees are built once the head's code is known to load.
    trees = _other_trees(req, ws, Trees(head_tree, None, head_tree, locked, locked, tuple(neutralised)))
    plan = _plan(req, trees)
    launched = _launch(req, ws, plan)
    if launched.failed:
        return _not_run(req, launched.failed, {"sealed": {**_sandbox(ws, plan), "install": launched.install}})
    plan, launched = _excuse_stage(req, ws, plan, launched)
    plan, launched = _replay_stage(req, ws, plan, launched)
    collected = _collect(req, plan, launched)
    return LaneResult(tuple(collected.violations), _receipt(req, ws, plan, launched, collected))


EXCUSE_JOB = "excuse-base"


def _excuse_stage(req: DynamicRequest, ws: Workspace, plan: Plan, launched: Launched) -> tuple[Plan, Launched]:
    """After the head ran: each failure an active freeze entry's hash would excuse is replayed on the baseline (its
    minimal example, through Hypothesis' blob); only a failure the baseline shares is excused (`_failure_fields`)."""
    if plan.trees.base is None or not req.active:
        return plan, launched
    # A tree of its own, written from git after the head's code ran: nothing that code did reaches the replay's tree.
    tree = ws.root / EXCUSE_JOB
    job = Job(EXCUSE_JOB, str(tree))
    replays: dict[str, dict[str, str]] = {}
    for result in _results([w for j, w in zip(plan.jobs, launched.workers, strict=True) if j.name.startswith("head-")]):
        node, spec = str(result.get("node")), str(result.get("spec"))
        if (
            result.get("kind") not in PLAN_KINDS
            or result.get("outcome") != "failed"
            or not isinstance(result.get("seed"), int)
        ):
            continue
        entry = next((e for e in req.active if e.test in {node, spec}), None)
        if entry is None or not matches(entry.assertion_hash, result.get("assertion_hash")):
            continue
        job.add(node, int(result["seed"]), Kind.EXCUSE_BASE)
        if isinstance(result.get("blob"), str):
            replays.setdefault(node, {})[str(result["seed"])] = str(result["blob"])
    if not job.runs:
        return plan, launched
    locked = plan.trees.locked
    sealed_tree.build(req.repo, req.baseline, req.baseline, locked, tree, _test_files(req, locked), ws.runner.owner)
    # The baseline's install site, which only the baseline's install could write (Landlock: workers write home, tmp).
    site = ws.root / "site-base" if req.config.properties.install else None
    body = pytest_job(req.config, tree, job.runs, plan.limit, site=site, trusted=locked)
    body["replays"] = replays
    worker = run_worker(ws, job.name, body, req.config.properties.timeout_s, launched.order)
    return replace(plan, jobs=[*plan.jobs, job]), replace(launched, workers=[*launched.workers, worker])


def _replay_stage(req: DynamicRequest, ws: Workspace, plan: Plan, launched: Launched) -> tuple[Plan, Launched]:
    """After the head ran: per property, the failing seed its ledger reports (the first in plan order) and its first
    failing fresh seed run once more in fresh workers on the head's tree (no shrink re-runs; the other failing seeds
    already re-ran twice in their worker); `_replays_of` compares each with its first run. Bounded: at most two
    replays per property, spread over `properties.jobs` workers."""
    heads = [w for j, w in zip(plan.jobs, launched.workers, strict=True) if j.name.startswith("head-")]
    chosen: dict[tuple[str, str], int] = {}
    for result in sorted(_results(heads), key=lambda e: _plan_order(plan.seeds, e)):
        seed, kind = result.get("seed"), result.get("kind")
        if kind in PLAN_KINDS and result.get("outcome") == "failed" and isinstance(seed, int):
            chosen.setdefault((str(result.get("node")), str(kind)), seed)
    if not chosen:
        return plan, launched
    n = max(1, min(plan.parallel, len(chosen)))
    jobs = [Job(f"{REPLAY_JOB}-{i}", str(plan.trees.head)) for i in range(n)]
    for i, ((node, _kind), seed) in enumerate(sorted(chosen.items())):
        jobs[i % n].add(node, seed, Kind.REPLAY)
    site = ws.root / "site-head" if req.config.properties.install else None

    def start(job: Job) -> WorkerResult:
        body = pytest_job(req.config, plan.trees.head, job.runs, plan.limit, site=site, trusted=plan.trees.locked)
        return run_worker(ws, job.name, body, req.config.properties.timeout_s, launched.order)

    with ThreadPoolExecutor(max_workers=n) as pool:
        workers = list(pool.map(start, jobs))
    return replace(plan, jobs=[*plan.jobs, *jobs]), replace(launched, workers=[*launched.workers, *workers])


def _plan_order(seeds: list[int], event: dict[str, Any]) -> tuple[bool, int]:
    """Planned seeds first, in the plan's order; then fresh ones."""
    seed = event.get("seed")
    return (event.get("kind") != Kind.PLAN, seeds.index(seed) if seed in seeds else len(seeds))


def _replays_of(
    req: DynamicRequest, node: str, runs: HeadRuns, plan_results: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The ledger's replays: its failing seeds' runs in a fresh worker, and the shifted sample seed's run."""
    records = []
    for job in runs.jobs_all:
        kind = Kind.SHIFTED if job.name == SHIFTED_JOB else Kind.REPLAY if job.name.startswith(REPLAY_JOB) else None
        worker = runs.by_job.get(job.name)
        if kind is None or worker is None:
            continue
        got = {int(e["seed"]): e for e in _results([worker]) if e.get("node") == node and e.get("kind") == kind}
        scheduled = [seed for key, pairs in job.runs.items() if matches_spec(node, key) for seed, _kind in pairs]
        for seed in scheduled:
            original = next((e for e in plan_results if e.get("seed") == seed and e.get("kind") in PLAN_KINDS), None)
            if original is None:
                continue  # the first run left no result: the ledger already stopped early
            problems = "; ".join(_worker_problems(worker, req.config.properties.timeout_s))
            records.append(run_facts.replay_record(kind, int(seed), original, got.get(int(seed)), problems))
    return records


def _test_files(req: DynamicRequest, locked: frozenset[str]) -> list[str]:
    """Every locked module (tests, and the helpers they import): each keeps its import name, since a repository
    module of the same top-level name is left out of the tree, or the by-name import would find the patch's copy."""
    return (
        [s.file for s in req.specs]
        + [s.counterexample.split("::", 1)[0] for s in req.specs if s.counterexample]
        + sorted(p for p in locked if p.endswith(".py"))
    )


def _first_shard(req: DynamicRequest) -> bool:
    """Counterexamples, freeze replays and digests run once, in the first shard (or the only run)."""
    return req.shard is None or req.shard[0] == 1


def _other_trees(req: DynamicRequest, ws: Workspace, trees: Trees) -> Trees:
    """`trees` (the head tree built) plus the baseline tree and the replay tree, where this run needs them."""
    first_shard = _first_shard(req)
    test_files = _test_files(req, trees.locked)
    owner = ws.runner.owner
    base: Path | None = None
    # The baseline runs the same planned seeds in every shard (steering), and the first shard's replays.
    if req.specs or (first_shard and bool(req.removed)):
        base = ws.root / "base"
        sealed_tree.build(req.repo, req.baseline, req.baseline, trees.locked, base, test_files, owner)
    replay, replay_locked = trees.head, trees.locked
    if first_shard and (req.removed or req.expired):
        # Removal and expiry replays: the head's code with the baseline's copy of each frozen test and its helpers.
        replay, replay_locked = ws.root / "replay", replay_locked_set(req, trees.locked)
        files = [*test_files, *sorted(p for p in replay_locked if p.endswith(".py"))]
        sealed_tree.build(req.repo, req.head, req.baseline, replay_locked, replay, files, owner)
    return Trees(trees.head, base, replay, trees.locked, replay_locked, trees.neutralised)


def _plan(req: DynamicRequest, trees: Trees) -> Plan:
    """The seeds this run owns, a fresh draw, the workers' jobs and the digest records (read from the baseline)."""
    props = req.config.properties
    seeds = plan_slice(props.seeds, req.shard)
    fresh = list(req.fresh) if req.fresh is not None else draw_fresh(props.fresh_seeds, props.seeds)
    parallel = props.jobs or (os.cpu_count() or 1)
    fixture_lane, raw = req.fixture_records or fixtures.check_records(req.repo, req.baseline, req.head, req.config)
    records: list[dict[str, Any]] = []
    if _first_shard(req) and raw:
        records = fixtures.resolve_inputs(req.repo, req.baseline, req.config.fixtures.dir, raw)
    jobs = _jobs(req, trees, seeds, fresh, parallel)
    limit = limits(props.memory_mb, props.timeout_s)
    fixture_hash = fixtures.fixture_hash(fixture_lane.receipt)
    changed = patch_coverage.changed_code(req.repo, req.baseline, req.head, req.config, trees.locked)
    return Plan(_first_shard(req), seeds, fresh, trees, jobs, records, fixture_hash, limit, parallel, tuple(changed))


def _owns_no_seed(req: DynamicRequest, seed_runs: list[tuple[int, Kind]]) -> bool:
    """Whether this run is a shard whose slice of the plan is empty and which draws no fresh seed."""
    return req.shard is not None and not seed_runs


def _jobs(req: DynamicRequest, trees: Trees, seeds: list[int], fresh: list[int], parallel: int) -> list[Job]:
    """The seed runs spread over `head-N` workers, then the frozen tests' and the baseline's own workers."""
    props = req.config.properties
    seed_runs = [(s, Kind.PLAN) for s in seeds] + [(s, Kind.FRESH) for s in fresh]
    # A shard past the end of the plan (4 shards over 2 planned seeds, no fresh draw) owns no seed: it starts no
    # property worker and writes no ledger, and the merge closes every ledger over the shards that own seeds.
    n_prop = 0 if _owns_no_seed(req, seed_runs) else max(1, min(parallel, len(seed_runs)))
    jobs = [Job(f"{HEAD_PREFIX}{i}", str(trees.head)) for i in range(n_prop)]
    for i, (seed, kind) in enumerate(seed_runs if n_prop else []):
        for spec in req.specs:
            jobs[i % n_prop].add(spec.node, seed, kind)
    sample = (seeds or fresh)[:1]
    if n_prop and sample:
        # One sample seed per property, run again under another clock and hash seed: its examples must not change.
        shifted = Job(SHIFTED_JOB, str(trees.head), hash_seed=SHIFTED_HASH_SEED, clock_shift_s=CLOCK_SHIFT_S)
        for spec in req.specs:
            shifted.add(spec.node, sample[0], Kind.SHIFTED)
        jobs.append(shifted)
    replay_seed = seeds[0] if seeds else (props.seeds[0] if props.seeds else 0)
    if _first_shard(req):
        # Frozen tests run in their own worker: a test file the patch deleted must not take the properties down.
        freeze_job = Job("freeze-head", str(trees.replay))
        for entry in req.removed:
            for _ in range(req.config.freeze.removal_runs):
                freeze_job.add(entry.test, replay_seed, Kind.FREEZE_HEAD)
        for entry in req.expired:
            freeze_job.add(entry.test, replay_seed, Kind.FREEZE_EXPIRED)
        jobs.append(freeze_job)
    if trees.base is not None:
        base_job = Job("base", str(trees.base))
        if _first_shard(req):
            for spec in req.specs:
                if spec.counterexample:
                    base_job.add(spec.counterexample, replay_seed, Kind.COUNTEREXAMPLE)
            for entry in req.removed:
                for _ in range(req.config.freeze.removal_runs):
                    base_job.add(entry.test, replay_seed, Kind.FREEZE_BASE)
        jobs.append(base_job)
        jobs += _steer_jobs(req, trees.base, seeds, n_prop)
    return [j for j in jobs if j.runs]


STEER_PREFIX = "steer-"
SHIFTED_JOB = "replay-shifted"
REPLAY_JOB = "replay-failing"
HEAD_PREFIX = "head-"


def _steer_jobs(req: DynamicRequest, base: Path, seeds: list[int], parallel: int) -> list[Job]:
    """The baseline's census of the planned seeds (every property, as on the head), for the steering comparison."""
    if not seeds:
        return []  # only fresh seeds, or a shard that owns none: there is no planned seed to compare
    n = max(1, min(parallel, len(seeds)))
    jobs = [Job(f"{STEER_PREFIX}{i}", str(base)) for i in range(n)]
    for i, seed in enumerate(seeds):
        for spec in req.specs:
            jobs[i % n].add(spec.node, seed, Kind.STEER_BASE)
    return jobs


@dataclass(frozen=True)
class Launched:
    """What the workers produced: one result per planned job (in the plan's order) and the digest worker's."""

    workers: list[WorkerResult]
    digests: WorkerResult | None
    order: _Order
    install: dict[str, Any] | None
    # The install step that failed, in which case no worker ran.
    failed: Violation | None = None

    @property
    def every(self) -> list[WorkerResult]:
        """The job workers and the digest worker."""
        return [*self.workers, *([self.digests] if self.digests else [])]


class _Launcher:
    """Starts the workers of one plan, each with its tree's import paths (and install site, once installed)."""

    def __init__(self, req: DynamicRequest, ws: Workspace, plan: Plan) -> None:
        self.req, self.ws, self.plan = req, ws, plan
        self.order = _Order()
        self.sites: dict[str, Path] = {}
        self.install_runs: list[dict[str, Any]] = []

    def pytest(self, job: Job) -> WorkerResult:
        """Run one planned job."""
        tree = Path(job.tree)
        body = pytest_job(
            self.req.config,
            tree,
            job.runs,
            self.plan.limit,
            site=self.sites.get(job.tree),
            trusted=self.plan.trees.locked,
        )
        body["hash_seed"], body["clock_shift_s"] = job.hash_seed, job.clock_shift_s
        if job.name.startswith(HEAD_PREFIX) and self.plan.changed_code:
            # Only the head's property workers record which changed lines run (the gate's own trace function).
            body["record_lines"] = patch_coverage.job_field(list(self.plan.changed_code), job.tree)
        return run_worker(self.ws, job.name, body, self.req.config.properties.timeout_s, self.order)

    def digests(self) -> WorkerResult:
        """Re-produce the digest records on the head tree."""
        head = self.plan.trees.head
        body: protocol.Job = {
            "mode": Mode.DIGEST,
            "tree": str(head),
            "paths": _paths(head, self.req.config, self.sites.get(str(head))),
            "limits": self.plan.limit,
            "code_under_test": code_under_test(self.req.config, head),
            "producer": self.req.config.fixtures.producer,
            "records": [{"id": r["id"], "input": r["input"]} for r in self.plan.records],
        }
        return run_worker(self.ws, "digests", body, self.req.config.properties.timeout_s, self.order)

    def install(self, label: str, tree: Path) -> Violation | None:
        """`properties.install` into a fresh site for `tree`, which that tree's workers then import from."""
        self.sites[str(tree)], failed = _install(self.req, self.ws, label, tree, self.plan.limit, self.install_runs)
        return failed


def _launch(req: DynamicRequest, ws: Workspace, plan: Plan) -> Launched:
    """The baseline's install and replays first and alone, then the head's install, then every other worker."""
    props = req.config.properties
    launcher = _Launcher(req, ws, plan)
    trees, jobs = plan.trees, plan.jobs
    # Once the patch's code has run, it may have rewritten any tree the sealed user can write to (the gate's own user
    # when it cannot drop root), the baseline tree included. So each tree gets its own install (the head's installs
    # the patch's requirements), the baseline's before its replays.
    first: dict[str, WorkerResult] = {}
    failed: Violation | None = None
    base_names = [j.name for j in jobs if j.name == "base" or j.name.startswith(STEER_PREFIX)]
    stages = ([("base", trees.base, base_names)] if trees.base is not None else []) + [("head", trees.head, [])]
    for label, tree, names in stages:
        if names and not any(j.name in names for j in jobs):
            continue
        if props.install:
            failed = launcher.install(label, tree)
            if failed:
                break
        with ThreadPoolExecutor(max_workers=max(1, plan.parallel)) as stage:
            started = {j.name: stage.submit(launcher.pytest, j) for j in jobs if j.name in names}
            first.update({name: future.result() for name, future in started.items()})
    if str(trees.head) in launcher.sites:
        launcher.sites[str(trees.replay)] = launcher.sites[str(trees.head)]  # the replay tree runs the head's code
    install = {"command": props.install, "runs": launcher.install_runs} if props.install else None
    if failed:
        return Launched([], None, launcher.order, install, failed)
    with ThreadPoolExecutor(max_workers=max(1, plan.parallel)) as pool:
        futures = [pool.submit(launcher.pytest, job) for job in jobs if job.name not in first]
        digest_future = pool.submit(launcher.digests) if plan.records else None
        rest = iter([f.result() for f in futures])
        workers = [first[j.name] if j.name in first else next(rest) for j in jobs]
        digest_worker = digest_future.result() if digest_future else None
    return Launched(workers, digest_worker, launcher.order, install)


@dataclass(frozen=True)
class HeadRuns:
    """The head trees' property runs, as the ledgers read them."""

    plan: list[int]
    fresh: list[int]
    jobs: list[Job]
    by_job: dict[str, WorkerResult]
    order: _Order
    fixture_hash: str | None
    # Every job of the run (the replays' too), for what they scheduled.
    jobs_all: list[Job] = field(default_factory=list)


@dataclass(frozen=True)
class Collected:
    """What the workers' evidence shows: violations, and the values the receipt records."""

    violations: list[Violation]
    origins: list[dict[str, Any]]
    ledgers: list[dict[str, Any]]
    replays: list[dict[str, Any]]
    digests: list[dict[str, Any]] | None
    patch_coverage: dict[str, Any] | None = None


def _collect(req: DynamicRequest, plan: Plan, launched: Launched) -> Collected:
    """Each check over the workers' events returns its rows; together they are this lane's violations."""
    jobs = plan.jobs
    by_job = dict(zip([j.name for j in jobs], launched.workers, strict=True))
    changed = _changed_locked(req, plan.trees)
    origins, misloaded = _provenance(launched.every, plan.trees.head)
    head_jobs = [j for j in jobs if j.name.startswith(HEAD_PREFIX)]
    runs = HeadRuns(plan.seeds, plan.fresh, head_jobs, by_job, launched.order, plan.fixture_hash, jobs)
    ledgers, unclosed = _ledgers(req, runs)
    replays, unreplayed = _replays(req, jobs, by_job) if plan.first_shard else ([], [])
    tautologies = _tautologies(req, jobs, by_job)
    digests, mismatched = _digests(plan.records, launched.digests, req)
    hooked = _hooks_found(launched.every)
    coverage = _patch_coverage(req, plan, [by_job[j.name] for j in head_jobs])
    # A shard records its lines; the merge of every shard's lines decides `patch-not-covered` (shard_merge).
    uncovered = patch_coverage.violations(coverage) if req.shard is None else []
    violations = [*changed, *misloaded, *hooked, *unclosed, *unreplayed, *tautologies, *mismatched, *uncovered]
    return Collected(violations, origins, ledgers, replays, digests, coverage)


def _patch_coverage(req: DynamicRequest, plan: Plan, head_workers: list[WorkerResult]) -> dict[str, Any]:
    """Which changed lines of code under test the head's property workers reported running (`lines` events)."""
    if not head_workers:
        return patch_coverage.not_measured("no property worker ran on the head in this run")
    wanted = {f.path: set(f.lines) for f in plan.changed_code}
    executed: dict[str, set[int]] = {}
    for worker in head_workers:
        for event in worker.events:
            path, line = event.get("path"), event.get("line")
            if event.get(EV) == Event.LINES and isinstance(path, str) and line in wanted.get(path, ()):
                executed.setdefault(path, set()).add(int(str(line)))
    return patch_coverage.section(list(plan.changed_code), executed, req.config.properties.min_patch_coverage)


def _hooks_found(workers: list[WorkerResult]) -> list[Violation]:
    """A trace, profile or monitoring hook (or a gc callback, a signal handler) the gate did not install, in any
    worker (head, baseline, replay, digest): what it was and where the code under test installed it."""
    found: dict[str, list[str]] = {}
    for worker in workers:
        for event in worker.events:
            if event.get(EV) == Event.EFFECTS:
                for what in event.get("found") or ():
                    found.setdefault(str(what), []).append(worker.name)
    return [
        Violation(
            RUN_INTEGRITY,
            f"{what} (worker {', '.join(dict.fromkeys(names))}): the gate did not install it, so no outcome of this "
            "run is evidence; remove it from the code under test",
        )
        for what, names in found.items()
    ]


def _changed_locked(req: DynamicRequest, trees: Trees) -> list[Violation]:
    """Every locked file the workers could read is re-hashed, not only fixtures: a property may read any of them."""
    fixture_dir = req.config.fixtures.dir.strip("/") + "/"
    found: list[Violation] = []
    for path in sealed_tree.changed_files(req.repo, req.baseline, sorted(trees.locked), trees.head):
        if path.startswith(fixture_dir):
            found.append(
                Violation(
                    FIXTURE_DIGEST_MISMATCH,
                    f"{path} changed on disk during the sealed run; fixtures are read-only evidence",
                    path,
                )
            )
        else:
            found.append(
                Violation(
                    RUN_INTEGRITY,
                    f"locked {path} changed on disk during the sealed run, so "
                    "what the properties read was not the baseline's evidence; find the code "
                    "under test that writes to it",
                    path,
                )
            )
    return found


def _sandbox(ws: Workspace, plan: Plan) -> dict[str, Any]:
    return {"user": ws.sandbox.user, "note": ws.sandbox.note, "limits": plan.limit}


def _receipt(
    req: DynamicRequest, ws: Workspace, plan: Plan, launched: Launched, collected: Collected
) -> dict[str, Any]:
    """The receipt's `properties` and `sealed` sections, and `freeze` and `fixtures` where this run re-checked them."""
    props = req.config.properties
    receipt: dict[str, Any] = {
        "properties": {
            "ledgers": collected.ledgers,
            "counts": seed_ledger.counts(collected.ledgers),
            "plan": list(props.seeds),
            "shard": list(req.shard) if req.shard else None,
            "fresh_seeds": plan.fresh,
            "trials": props.trials,
        },
        "sealed": {
            **_sandbox(ws, plan),
            **_isolation(launched.every),
            "neutralised": [n.to_json() for n in plan.trees.neutralised],
            "runner": ws.runner.to_json(),
            "provenance": collected.origins,
            "workers": [
                {
                    "name": w.name,
                    "exit_code": w.exit_code,
                    "timed_out": w.timed_out,
                    "seconds": round(w.seconds, 3),
                    "problems": _worker_problems(w, props.timeout_s),
                }
                for w in launched.every
            ],
        },
    }
    if launched.install:
        receipt["sealed"]["install"] = launched.install
    trees = plan.trees
    if plan.first_shard:
        receipt["freeze"] = {
            "replays": collected.replays,
            "replayed_from_baseline": sorted(
                p for p in trees.replay_locked - trees.locked if (trees.replay / p).is_file()
            ),
        }
    if collected.digests is not None:
        receipt["fixtures"] = {"digests": collected.digests}
    if collected.patch_coverage is not None:
        receipt["patch_coverage"] = collected.patch_coverage
    return receipt


def code_under_test(config: Config, tree: Path) -> dict[str, str]:
    """Top-level modules and packages under `properties.pythonpath` in `tree`, each with where it must be loaded
    from. Namespace folders are left out: a regular module of the same name anywhere on sys.path rightly wins."""
    return provenance.regular(provenance.code_under_test([str(tree / p) for p in config.properties.pythonpath]))


# pytest and Hypothesis are built on these; any other harness distribution is one a pytest or Hypothesis release needs.
HARNESS_CORE = ("pytest ", "hypothesis ", "pluggy ")
CORE_WAY_OUT = (
    "a harness built on pytest and Hypothesis cannot judge its own parts; leave this package out of "
    "properties.pythonpath and SCORE_PROPERTIES and test it in its own CI (docs/sealed-run.md: names the "
    "harness cannot judge)"
)
HARNESS_WAY_OUT = (
    "run the gate on a pytest and Hypothesis whose releases do not require {name!r} (for attr/attrs: "
    "Hypothesis 6.150 or later, as in the published image and `pip install 'evidence-gate[run]'`), "
    "or leave this package out of properties.pythonpath and SCORE_PROPERTIES (docs/sealed-run.md: names "
    "the harness cannot judge)"
)
STDLIB_WAY_OUT = (
    "a package named like a standard module is shadowed by it in every Python; rename the package "
    "(docs/sealed-run.md: names the harness cannot judge)"
)


def _way_out(name: str, owner: str) -> str:
    if owner == "the standard library":
        return STDLIB_WAY_OUT
    core = any(f"({dist}" in owner for dist in HARNESS_CORE) or "worker-side" in owner
    return CORE_WAY_OUT if core else HARNESS_WAY_OUT.format(name=name)


def unloadable(config: Config, tree: Path, runner: Runner) -> list[Violation]:
    """Code under test that the sealed interpreter cannot load from the tree, because the harness or the standard
    library already owns its name: run-integrity before any test, naming the package and the way out."""
    found = []
    for name, where in code_under_test(config, tree).items():
        owner = runner.owner(name)
        if owner is None:
            continue
        path = os.path.relpath(where, tree)
        way_out = _way_out(name, owner)
        found.append(
            Violation(
                RUN_INTEGRITY,
                f"the code under test {path} is the package {name!r}, but {owner} "
                f"already provides {name!r} in the sealed run, so the pull "
                f"request's copy could not be loaded and no property ran. Fix: "
                f"{way_out}",
                path,
            )
        )
    return found


def _provenance(workers: list[WorkerResult], head_tree: Path) -> tuple[list[dict[str, Any]], list[Violation]]:
    """The receipt's `sealed.provenance` (each code-under-test package the head's workers loaded, and from where);
    every module loaded from elsewhere, in any worker, is run-integrity."""
    violations: list[Violation] = []
    loaded: dict[str, str] = {}
    wrong: dict[str, dict[str, str]] = {}
    for worker in workers:
        events = [e for e in worker.events if e.get(EV) == Event.PROVENANCE]
        finals = [e for e in events if e.get("final")]
        if worker.finished is not None and not finals:
            violations.append(
                Violation(
                    RUN_INTEGRITY,
                    f"worker {worker.name} finished without reporting where "
                    "the code under test was loaded from, so the run cannot "
                    "show it judged the pull request's code",
                )
            )
        for event in events:
            for item in event.get("mismatches") or []:
                if isinstance(item, dict):
                    wrong.setdefault(str(item.get("module")), {k: str(v) for k, v in item.items()})
            if worker.name.startswith(("head-", "digests")) and isinstance(event.get("loaded"), dict):
                for name, file in event["loaded"].items():
                    loaded.setdefault(str(name), str(file))
    for module, item in sorted(wrong.items()):
        expected = _shown(item.get("expected", ""), head_tree)
        violations.append(
            Violation(
                RUN_INTEGRITY,
                f"{module} was loaded from {item.get('file')}, not from the "
                f"sealed tree's {expected}, so the run judged other code than "
                "the pull request's. Fix: make sure nothing the tests import "
                "puts another copy first on sys.path",
                None if Path(expected).is_absolute() else expected,
            )
        )
    tops = {m.partition(".")[0] for m in wrong}
    origins = [
        {"package": name, "loaded_from": _shown(file, head_tree), "from_tree": name not in tops}
        for name, file in sorted(loaded.items())
    ]
    return origins, violations


def _shown(path: str, tree: Path) -> str:
    """A path relative to the sealed tree when it is inside, else as it is."""
    inside = path.startswith(str(tree) + os.sep)
    return os.path.relpath(path, tree) if inside else path


def static_tests(source: bytes, file: str, spec: str) -> list[str]:
    """Node ids of the test functions a locked file defines at top level or in `Test*` classes, under `spec`.

    Collection runs after the code under test is imported, so the collected set alone could have been pruned.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []

    def is_test(node: ast.stmt) -> bool:
        return (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test")
            and not any("fixture" in ast.unparse(d) for d in node.decorator_list)
        )

    found = [f"{file}::{n.name}" for n in tree.body if is_test(n)]  # type: ignore[attr-defined]
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef) and cls.name.startswith("Test"):
            found += [f"{file}::{cls.name}::{n.name}" for n in cls.body if is_test(n)]  # type: ignore[attr-defined]
    return [n for n in found if n == spec or matches_spec(n, spec) or "::" not in spec]


def _ledgers(req: DynamicRequest, runs: HeadRuns) -> tuple[list[dict[str, Any]], list[Violation]]:
    """One seed ledger per collected node of each property, and the rows for what the head's workers did not show."""
    props = req.config.properties
    if req.shard is not None and not runs.jobs:
        return [], []  # a shard that owns no seed (see `_jobs`): nothing to collect, nothing to close
    workers = [runs.by_job[j.name] for j in runs.jobs]
    collected = _collected(workers)
    per_worker = [_collected([w]) for w in workers]
    sources = req.repo.read_blobs(f"{req.baseline}:{s.file}" for s in req.specs)
    ledgers: list[dict[str, Any]] = []
    found: list[Violation] = []
    for spec in req.specs:
        nodes = [n for n in collected if matches_spec(n, spec.node)]
        if not nodes:
            causes = [p for w in workers for p in _worker_problems(w, props.timeout_s) if p.startswith("collecting ")]
            why = f": {causes[0]}" if causes else ""
            found.append(
                Violation(RUN_INTEGRITY, f"{spec.node} was not collected in the sealed run{why}", props.list, spec.line)
            )
            nodes = [spec.node]
        source = sources[f"{req.baseline}:{spec.file}"] or b""
        for expected in static_tests(source, spec.file, spec.node):
            if any(not any(n == expected or n.startswith(expected + "[") for n in nodes_of) for nodes_of in per_worker):
                found.append(
                    Violation(
                        RUN_INTEGRITY,
                        f"{expected} is defined in the locked file but was not collected in the sealed run",
                        spec.file,
                    )
                )
        for node in nodes:
            ledger, rows = _ledger(req, spec, node, runs)
            ledgers.append(ledger)
            found += rows
    return ledgers, found


def _ledger(
    req: DynamicRequest, spec: PropertySpec, node: str, runs: HeadRuns
) -> tuple[dict[str, Any], list[Violation]]:
    """The seed ledger of one node, closed over what the trusted process saw, and its rows."""
    fixture_hash = runs.fixture_hash
    ledger = seed_ledger.new(
        req.patch_id, node, runs.plan, spec.oracle, fixture_hash, fixtures=fixture_hash is not None
    )
    ledger["fresh_seeds"] = list(runs.fresh)
    with runs.order.lock:
        starts = [e for e in runs.order.starts if e.get("node") == node and e.get("kind") in PLAN_KINDS]
    ledger["attempted_seeds"] = [int(e["seed"]) for e in starts if isinstance(e.get("seed"), int)]
    results = [e for j in runs.jobs for e in _results([runs.by_job[j.name]]) if e.get("node") == node]
    plan_results = [e for e in results if e.get("kind") in PLAN_KINDS]
    lost = _lost_runs(req, spec, ledger, runs, plan_results)
    issues = lost + _counted(req, ledger, plan_results)
    failing = [e for e in plan_results if e.get("outcome") == "failed"]
    failing.sort(key=lambda e: (e["kind"] != Kind.PLAN, runs.plan.index(e["seed"]) if e["seed"] in runs.plan else 0))
    ledger["failing_seeds"] = [int(e["seed"]) for e in failing]
    first = failing[0] if failing else None
    ledger["excused_by"] = _failure_fields(req, spec, node, ledger, results, failing) if first is not None else None
    ledger["excuse"] = _excuse(req, spec, node, failing, runs) if first is not None else None
    if ledger["excuse"] is not None and not ledger["excuse"]["excused"]:
        ledger["excused_by"] = None
    ledger["replays"] = _replays_of(req, node, runs, plan_results)
    ledger["status"] = seed_ledger.close(ledger)
    ledger["status_reason"] = seed_ledger.reason(ledger, "; ".join(dict.fromkeys(issues)))
    ledger["steering"] = _steering(node, runs, plan_results)
    # What the workers failed to show is this lane's; every other row comes from the ledger's facts, as a publisher
    # re-derives them from the receipt.
    rows = [Violation(RUN_INTEGRITY, f"{node}: {issue}", spec.file) for issue in run_facts.grouped(lost)]
    return ledger, rows + run_facts.ledger_rows(ledger, req.config.properties.trials)


def _steering(node: str, runs: HeadRuns, plan_results: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The recorded steering comparison of one node: its planned head runs against the baseline's census."""
    steer = [w for name, w in runs.by_job.items() if name.startswith(STEER_PREFIX)]
    if not steer:
        return None
    base = [e for e in _results(steer) if e.get("node") == node and e.get("kind") == Kind.STEER_BASE]
    head = [e for e in plan_results if e.get("kind") == Kind.PLAN]
    return steering.section(head, base, runs.plan)


def _excuse(
    req: DynamicRequest, spec: PropertySpec, node: str, failing: list[dict[str, Any]], runs: HeadRuns
) -> dict[str, Any] | None:
    """Whether the freeze entry whose hash every failure carries may excuse them: only when the baseline, replaying
    each failing seed's minimal example, fails the same way. None when no active entry's hash matches."""
    entry = next((e for e in req.active if e.test in {node, spec.node}), None)
    if entry is None or not all(matches(entry.assertion_hash, e.get("assertion_hash")) for e in failing):
        return None
    worker = runs.by_job.get(EXCUSE_JOB)
    replayed = {
        int(e["seed"]): e
        for e in (_results([worker]) if worker else [])
        if e.get("node") == node and e.get("kind") == Kind.EXCUSE_BASE and isinstance(e.get("seed"), int)
    }
    record: list[dict[str, Any]] = []
    why: list[str] = []
    for failure in failing:
        seed = int(failure["seed"])
        base = replayed.get(seed)
        same = (
            base is not None
            and base.get("outcome") == "failed"
            and matches(entry.assertion_hash, base.get("assertion_hash"))
        )
        record.append(
            {
                "seed": seed,
                "blob": failure.get("blob"),
                "baseline_outcome": None if base is None else base.get("outcome"),
                "baseline_assertion_hash": None if base is None else base.get("assertion_hash"),
                "same_failure": same,
            }
        )
        if same:
            continue
        example = run_facts.one_line(str(failure.get("falsifying") or f"seed {seed}"), 160)
        if base is None:
            why.append(
                f"the baseline replay of seed {seed} did not run ({'; '.join(_worker_problems(worker, req.config.properties.timeout_s)) if worker else 'not scheduled'})"
            )
        elif "DidNotReproduce" in str(base.get("message")):
            why.append(f"the baseline passes the minimal example ({example})")
        elif base.get("outcome") == "failed":
            why.append(
                f"the baseline fails the minimal example ({example}) differently: {run_facts.one_line(str(base.get('message') or ''), 160)}"
            )
        else:
            why.append(f"the baseline {base.get('outcome')} the minimal example ({example})")
    excused = not why
    return {
        "entry": entry.id,
        "replays": record,
        "excused": excused,
        "why": (
            f"freeze entry {entry.id!r}: the baseline fails each minimal example with the frozen assertion"
            if excused
            else f"freeze entry {entry.id!r} does not excuse it: {'; '.join(why)}, so the failure is the patch's, "
            "not the frozen flake's"
        ),
    }


def _lost_runs(
    req: DynamicRequest, spec: PropertySpec, ledger: dict[str, Any], runs: HeadRuns, plan_results: list[dict[str, Any]]
) -> list[str]:
    """Per head worker: the planned runs it reported no result for (the ledger then stopped early), or its problems."""
    issues: list[str] = []
    got = {(e.get("seed"), e.get("kind")) for e in plan_results}
    for job in runs.jobs:
        expected = [(int(s), str(k)) for s, k in job.runs.get(spec.node, []) if k in PLAN_KINDS]
        problems = "; ".join(_worker_problems(runs.by_job[job.name], req.config.properties.timeout_s))
        lost = [s for s, k in expected if (s, k) not in got]
        if lost:
            ledger["stopped_early"] = True
            issues.append(f"no result for seed(s) {', '.join(map(str, lost))} ({problems or 'no result reported'})")
        elif problems:
            issues.append(problems)
    return issues


def _counted(req: DynamicRequest, ledger: dict[str, Any], plan_results: list[dict[str, Any]]) -> list[str]:
    """Hypothesis' counts per seed into the ledger; the seeds whose run does not count as clean."""
    issues: list[str] = []
    for event in plan_results:
        ledger[run_facts.RUNS][str(event.get("seed"))] = record = run_facts.seed_record(event)
        issue = run_facts.seed_issue(event.get("seed"), record, req.config.properties.trials)
        if issue:
            issues.append(issue)
        if isinstance(event.get("examples"), int):
            ledger["examples"][str(event["seed"])] = event["examples"]
        if event.get("stopped_because"):
            ledger["stopped_because"][str(event["seed"])] = str(event["stopped_because"])
        if event.get("stop") == "finished" and event.get("outcome") == "passed":
            ledger["exhausted_seeds"].append(int(event["seed"]))
    return issues


def _failure_fields(
    req: DynamicRequest,
    spec: PropertySpec,
    node: str,
    ledger: dict[str, Any],
    results: list[dict[str, Any]],
    failing: list[dict[str, Any]],
) -> str | None:
    """The first failure into the ledger (seed, hash, example, whether two shrink re-runs agree); the id of the
    active freeze entry that excuses every failure, if one does."""
    first = failing[0]
    seed = int(first["seed"])
    ledger["failing_seed"] = seed
    ledger["assertion_hash"] = first.get("assertion_hash")
    ledger["falsifying"] = first.get("falsifying")
    ledger["failure"] = _in_patch(req, _failure(first.get("failure")), first.get("failure"))
    reruns = [e for e in results if e.get("seed") == seed and is_shrink(e.get("kind"))]
    ledger["reproduced"] = bool(reruns) and reruns[0].get("outcome") == "failed"
    ledger["shrink_stable"] = (
        len(reruns) >= 2
        and all(r.get("outcome") == "failed" for r in reruns[:2])
        and _minimal(reruns[0]) == _minimal(reruns[1])
    )
    entry = next((e for e in req.active if e.test in {node, spec.node}), None)
    if entry is not None and all(matches(entry.assertion_hash, e.get("assertion_hash")) for e in failing):
        return entry.id
    return None


def _failure(record: Any) -> dict[str, Any] | None:
    """The worker's failure record in the interface's shape, or None when it is not one (no locked frame failed)."""
    if not isinstance(record, dict) or not isinstance(record.get("path"), str):
        return None
    if not isinstance(record.get("line"), int) or isinstance(record["line"], bool) or record["line"] < 1:
        return None
    return {
        "path": record["path"],
        "line": record["line"],
        "statement": str(record.get("statement") or "")[:200],
        "exception": str(record.get("exception") or "")[:500],
    }


def _in_patch(req: DynamicRequest, failure: dict[str, Any] | None, record: Any) -> dict[str, Any] | None:
    """The failure plus `in_patch`: the worker's traceback frames that lie on lines the patch added or changed,
    so the report can show the failure where the pull request's diff is."""
    frames = record.get("frames") if isinstance(record, dict) else None
    if failure is None or not isinstance(frames, list):
        return failure
    pairs = [
        (f[0], f[1])
        for f in frames[:20]
        if isinstance(f, list) and len(f) == 2 and isinstance(f[0], str) and type(f[1]) is int and f[1] >= 1
    ]
    changed = req.repo.changed_lines(req.baseline, req.head, {p for p, _ in pairs})
    hits = [{"path": p, "line": n} for p, n in pairs if n in changed.get(p, set())]
    return {**failure, "in_patch": [h for i, h in enumerate(hits) if h not in hits[:i]]}


def _minimal(event: dict[str, Any]) -> Any:
    return event.get("falsifying") or event.get("assertion_hash")


def _outcomes_for(
    jobs: list[Job], by_job: dict[str, WorkerResult], node: str, kind: str, timeout_s: int
) -> tuple[int, list[str], list[str]]:
    """How many `kind` runs of `node` were scheduled, their outcomes, and the problems of the workers that ran them."""
    expected = sum(1 for j in jobs for _s, k in j.runs.get(node, []) if k == kind)
    got: list[str] = []
    problems: list[str] = []
    for job in jobs:
        if not any(k == kind for _s, k in job.runs.get(node, [])):
            continue
        worker = by_job[job.name]
        got += [
            str(e.get("outcome"))
            for e in _results([worker])
            if e.get("kind") == kind and matches_spec(str(e.get("node")), node)
        ]
        problems += _worker_problems(worker, timeout_s)
    return expected, got, problems


def _replays(
    req: DynamicRequest, jobs: list[Job], by_job: dict[str, WorkerResult]
) -> tuple[list[dict[str, Any]], list[Violation]]:
    """The freeze section's replays of removed and expired entries, and a row for each that did not pass."""
    replays: list[dict[str, Any]] = []
    violations: list[Violation] = []
    freeze_file = req.config.freeze.file
    timeout_s = req.config.properties.timeout_s
    for entry in req.removed:
        record: dict[str, Any] = {
            "id": entry.id,
            "test": entry.test,
            "kind": "removed",
            "runs": req.config.freeze.removal_runs,
        }
        bad = []
        for tree, kind in (("baseline", Kind.FREEZE_BASE), ("head", Kind.FREEZE_HEAD)):
            expected, got, problems = _outcomes_for(jobs, by_job, entry.test, kind, timeout_s)
            record[tree] = got
            if len(got) < expected or not got or any(o != "passed" for o in got):
                bad.append(
                    f"on the {tree} tree: {', '.join(got) or 'not run'}"
                    + (f" ({'; '.join(dict.fromkeys(problems))})" if problems and len(got) < expected else "")
                )
        record["ok"] = not bad
        replays.append(record)
        if bad:
            violations.append(
                Violation(
                    FREEZE_REMOVED_STILL_FAILING,
                    f"removed entry {entry.id!r}: {entry.test} "
                    f"did not pass {req.config.freeze.removal_runs} times "
                    f"{' and '.join(bad)}",
                    freeze_file,
                    entry.line,
                )
            )
    for entry in req.expired:
        expected, got, problems = _outcomes_for(jobs, by_job, entry.test, Kind.FREEZE_EXPIRED, timeout_s)
        ok = bool(got) and len(got) >= expected and all(o == "passed" for o in got)
        replays.append({"id": entry.id, "test": entry.test, "kind": "expired", "head": got, "ok": ok})
        if not ok:
            violations.append(
                Violation(
                    FREEZE_EXPIRED,
                    f"entry {entry.id!r} expired on {entry.expires} and "
                    f"{entry.test} still {'fails' if got else 'could not be run'} "
                    f"({', '.join(got) or '; '.join(problems) or 'not collected'})",
                    freeze_file,
                    entry.line,
                )
            )
    return replays, violations


def _tautologies(req: DynamicRequest, jobs: list[Job], by_job: dict[str, WorkerResult]) -> list[Violation]:
    """A row for each documented counterexample that the baseline accepted, or that did not run cleanly."""
    violations: list[Violation] = []
    for spec in req.specs:
        if not spec.counterexample or not any(j.name == "base" for j in jobs):
            continue
        _expected, got, problems = _outcomes_for(
            jobs, by_job, spec.counterexample, Kind.COUNTEREXAMPLE, req.config.properties.timeout_s
        )
        if got and all(o == "passed" for o in got):
            violations.append(
                Violation(
                    PROPERTY_TAUTOLOGY,
                    f"{spec.node} accepted its documented counterexample {spec.counterexample} on the baseline tree",
                    req.config.properties.list,
                    spec.line,
                )
            )
        elif not got or any(o not in {"passed", "failed"} for o in got):
            violations.append(
                Violation(
                    RUN_INTEGRITY,
                    f"counterexample {spec.counterexample} did not run cleanly "
                    f"on the baseline tree ({', '.join(got) or '; '.join(problems) or 'missing'})",
                    req.config.properties.list,
                    spec.line,
                )
            )
    return violations


def _digests(
    records: list[dict[str, Any]], worker: WorkerResult | None, req: DynamicRequest
) -> tuple[list[dict[str, Any]] | None, list[Violation]]:
    """The fixtures section's digest checks (None when there are no records), a row for each mismatch, and one
    `run-integrity` row for the records the worker never produced: nothing was compared, so nothing mismatched."""
    if not records:
        return None, []
    path = req.config.fixtures.digests
    produced = {e.get("id"): e for e in (worker.events if worker else []) if e.get(EV) == Event.DIGEST}
    failure = next((e for e in (worker.events if worker else []) if e.get(EV) == Event.PRODUCER_MISSING), None)
    problems = _worker_problems(worker, req.config.properties.timeout_s) if worker else ["not run"]
    out, unproduced = [], []
    for record in records:
        event = produced.get(record["id"])
        actual = event.get("sha256") if event else None
        if event is None and failure is None:
            status = "unproduced"  # the worker refused, crashed or timed out before this record
            unproduced.append(record["id"])
        else:
            status = "match" if actual == record["output_sha256"] else "mismatch"
        out.append(
            {
                "id": record["id"],
                "input_sha256": record["input_sha256"],
                "output_sha256": record["output_sha256"],
                "produced_sha256": actual,
                "status": status,
            }
        )
        if status in {"mismatch", "unproduced"} and not actual:
            out[-1]["problem"] = str(
                (event or {}).get("message") or (failure or {}).get("message") or "; ".join(problems) or "not run"
            )[: run_facts.MESSAGE_LIMIT]
    return out, run_facts.digest_rows(out, path)
