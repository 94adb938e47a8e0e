"""The property lane's plan: what one sealed run will do, fixed before any worker starts.

`head_trees`, `other_trees` and `make_plan` turn the request into a frozen `Plan`: the seeds this run owns and its
fresh draw, the sealed trees (built from git objects, with the locked sets they were built with), every worker's
`Job`, the digest records to re-produce and the baseline's copy of each property's file, all read from git before
any worker starts. Every later stage takes the plan (and the request through `Plan.request`). What can only be read
once the head ran stays with the stage that needs it: the excuse replay's fresh baseline tree, the re-hash of the
locked files, the changed lines under a failure's frames.
"""

from __future__ import annotations

import os
import posixpath
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import Repo
from evidence_gate.lanes import fixtures, import_scan
from evidence_gate.lanes.properties import patch_coverage
from evidence_gate.lanes.score_properties import PropertySpec
from evidence_gate.model import FreezeEntry, LaneResult
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import Workspace, limits
from evidence_gate.sealed.tree import Neutralised
from evidence_gate.sealed.worker import protocol
from evidence_gate.sealed.worker.protocol import CLOCK_SHIFT_S, Kind


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
    # Whether the worker runs under the run's second PYTHONHASHSEED, and its clock shift: the `shifted` replay's
    # differ from every other worker's (the seeds themselves are drawn per run: `Workspace.hash_seeds`).
    other_hash_seed: bool = False
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

    # The request it was made from: every later stage reads the request through its plan.
    request: DynamicRequest
    first_shard: bool
    seeds: list[int]
    fresh: list[int]
    trees: Trees
    jobs: list[Job]
    records: list[dict[str, Any]]
    fixture_hash: str | None
    limit: protocol.Limits
    parallel: int
    # The baseline's copy of each property's file, by path (None when the baseline has none), for `static_tests`.
    sources: dict[str, bytes | None]
    # The patch's changed lines of code under test, which the head's property workers record.
    changed_code: tuple[patch_coverage.ChangedFile, ...] = ()

    @property
    def compares_steering(self) -> bool:
        """Whether this run compares its planned seeds with the baseline's (the steering census): not with fresh
        seeds only, nor in a shard that owns none. Every such run records a steering section per property, whether
        its census ran or not (a census that could not run leaves the property failing closed)."""
        return self.trees.base is not None and bool(self.seeds) and bool(self.request.specs)


EXCUSE_JOB = "excuse-base"


def locked_modules(req: DynamicRequest, locked: frozenset[str]) -> list[str]:
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


def head_trees(req: DynamicRequest, ws: Workspace) -> Trees:
    """The head tree alone: the baseline and replay trees are built (`other_trees`) once its code is known to load."""
    locked = sealed_locked_set(req)
    head = ws.root / "head"
    neutralised = sealed_tree.build(
        req.repo, req.head, req.baseline, locked, head, locked_modules(req, locked), ws.runner.owner
    )
    return Trees(head, None, head, locked, locked, tuple(neutralised))


def other_trees(req: DynamicRequest, ws: Workspace, trees: Trees) -> Trees:
    """`trees` (the head tree built) plus the baseline tree and the replay tree, where this run needs them."""
    first_shard = _first_shard(req)
    test_files = locked_modules(req, trees.locked)
    owner = ws.runner.owner
    base: Path | None = None
    # The baseline counts discards in every shard, describes strategies in the first (steering, after the head, in a
    # tree of its own) and
    # runs the first shard's counterexamples and removal replays.
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


def make_plan(req: DynamicRequest, trees: Trees) -> Plan:
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
    got = req.repo.read_blobs(f"{req.baseline}:{s.file}" for s in req.specs)
    sources = {s.file: got[f"{req.baseline}:{s.file}"] for s in req.specs}
    first = _first_shard(req)
    return Plan(req, first, seeds, fresh, trees, jobs, records, fixture_hash, limit, parallel, sources, tuple(changed))


def _shares(count: int, workers: int, after_last: int, start: int) -> list[int]:
    """How many of `count` runs each head worker takes, in order: an even share of the runs and `after_last` (the
    runs the last worker's thread goes on to), so the last takes that much less. A last share smaller than `start`
    (a worker's start-up and collection, in runs) is not worth a worker: the others share the runs, and the thread
    left free starts the replay at once. A worker left none is not started."""
    if workers < 1:
        return []
    each = -(-(count + after_last) // workers)
    shares = [min(each, max(0, count - each * i)) for i in range(workers - 1)]
    last = count - sum(shares)
    if workers > 1 and 0 < last < start:
        return [*_shares(count, workers - 1, 0, start), 0]
    return [*shares, last]


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
    sample = (seeds or fresh)[:1]
    shifted_runs = len(req.specs) if n_prop and sample and _first_shard(req) else 0
    # The runs in seed order, in even shares. When every thread of the pool starts a head worker, the shifted replay
    # waits for the first one free: the last head gets less, by the replay's runs and its start (a start-up and
    # collection cost about half a seed's runs on attrs' suite), so that the threads end together instead of one
    # idling through the replay.
    units = [(spec.node, seed, kind) for seed, kind in seed_runs for spec in req.specs] if n_prop else []
    queued = shifted_runs if n_prop == parallel else 0
    for job, share in zip(jobs, _shares(len(units), n_prop, queued + queued // 2, queued // 2), strict=True):
        for node, seed, kind in units[:share]:
            job.add(node, seed, kind)
        units = units[share:]
    if shifted_runs:
        # One sample seed per property, run again under another clock and hash seed: its examples must not change.
        # Once per plan: the first shard owns the plan's first seed, so shards merge to the unsharded replays.
        shifted = Job(SHIFTED_JOB, str(trees.head), other_hash_seed=True, clock_shift_s=CLOCK_SHIFT_S)
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
    return [j for j in jobs if j.runs]


STEER_PREFIX = "steer-"


SHIFTED_JOB = "replay-shifted"


REPLAY_JOB = "replay-failing"


HEAD_PREFIX = "head-"
