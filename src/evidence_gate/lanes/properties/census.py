"""The baseline's census for the steering comparison, launched after the head ran.

Every collected property node's strategies are described on the baseline (collection, no example; in the first
shard only, since they do not depend on the seed), and each planned seed whose head run of that node discarded enough examples to be a steered rise (`steering.needed`) runs
again on the baseline as a census (`steer-N` workers; `steer-describe` when nothing needs a count). The census runs in a tree of its own, written from git once the
head's code has finished, with a home and temporary folder the head's code never saw, its leftovers in /dev/shm
removed and every process it left killed (or no census: every property then fails closed).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from evidence_gate.lanes.properties import steering
from evidence_gate.lanes.properties.launch import Launched, pytest_job, result_events
from evidence_gate.lanes.properties.plan import HEAD_PREFIX, STEER_PREFIX, Job, Plan, locked_modules
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import WorkerResult, Workspace, run_worker
from evidence_gate.sealed.worker.protocol import Kind

CENSUS_TREE = "census"
DESCRIBE_JOB = f"{STEER_PREFIX}describe"


def census_jobs(plan: Plan, heads: list[WorkerResult], tree: str) -> list[Job]:
    """The census' workers, by collected node (a whole-file entry has many): each needed (node, seed), and a
    `describe` of every node that needs none. One worker, or one per core once the census has at least one seed's
    worth of runs of every node: below that a second collection costs more CPU than the wall time it saves."""
    if not plan.compares_steering:
        return []  # only fresh seeds, or a shard that owns none: there is no planned seed to compare
    planned = [e for e in result_events(heads) if e.get("kind") == Kind.PLAN]
    nodes = sorted({str(e.get("node")) for e in planned})
    counted: list[tuple[str, int]] = []
    described: list[str] = []
    for node in nodes:
        seeds = steering.needed([e for e in planned if e.get("node") == node], plan.seeds)
        counted += [(node, s) for s in seeds]
        if not seeds:
            described.append(node)
    if not plan.first_shard:
        described = []  # the strategies do not depend on the seed: the first shard describes every node
    n = max(1, min(plan.parallel, len(counted) // max(1, len(nodes))))
    jobs = [Job(f"{STEER_PREFIX}{i}", tree) for i in range(n)]
    for i, (node, seed) in enumerate(counted):
        jobs[i % n].add(node, seed, Kind.STEER_BASE)
    if not counted:
        jobs = [Job(DESCRIBE_JOB, tree)]
    for node in described:
        # A node described in a worker that also runs others: the plugin sets nothing up for it (plugin.py).
        jobs[0].add(node, plan.seeds[0], Kind.DESCRIBE)
    return [j for j in jobs if j.runs]


def census_stage(ws: Workspace, plan: Plan, launched: Launched) -> tuple[Plan, Launched]:
    """After the head ran: the baseline's census (its own tree and scratch folders), appended to the plan's jobs."""
    req = plan.request
    heads = [w for j, w in zip(plan.jobs, launched.workers, strict=True) if j.name.startswith(HEAD_PREFIX)]
    tree = ws.root / CENSUS_TREE
    jobs = census_jobs(plan, heads, str(tree))
    if not jobs:
        return plan, launched
    if not ws.fresh_scratch():
        # A process the head's code left survived every sweep: no census, so every property fails closed on its
        # baseline strategies and needed seeds (steering.rows), rather than trusting a baseline it could reach.
        return plan, launched
    locked = plan.trees.locked
    sealed_tree.build(req.repo, req.baseline, req.baseline, locked, tree, locked_modules(req, locked), ws.runner.owner)
    # The baseline's install site, which only the baseline's install wrote (Landlock: workers write home and tmp).
    site = ws.root / "site-base" if req.config.properties.install else None

    def start(job: Job) -> WorkerResult:
        body = pytest_job(req.config, tree, job.runs, plan.limit, site=site, trusted=locked)
        return run_worker(ws, job.name, body, req.config.properties.timeout_s, launched.order)

    with ThreadPoolExecutor(max_workers=max(1, plan.parallel)) as pool:
        workers = list(pool.map(start, jobs))
    again = recheck_job(plan, heads, workers, str(tree))
    if again is not None:
        jobs, workers = [*jobs, again], [*workers, start(again)]
    return replace(plan, jobs=[*plan.jobs, *jobs]), replace(launched, workers=[*launched.workers, *workers])


RECHECK_JOB = f"{STEER_PREFIX}recheck"


def recheck_job(plan: Plan, heads: list[WorkerResult], census: list[WorkerResult], tree: str) -> Job | None:
    """A census run of the first planned seed for each node whose description without a run differs from the head's
    after its runs: a strategy can read differently once it has drawn (a `deferred` nested where validation does not
    reach), so only a run on the baseline tells a changed strategy from one that was not drawn from yet."""
    drawn = {
        str(e.get("node")): e.get("strategies")
        for e in result_events(heads)
        if e.get("kind") == Kind.PLAN and e.get("strategies") is not None
    }
    job = Job(RECHECK_JOB, tree)
    for event in result_events(census):
        node = str(event.get("node"))
        if event.get("kind") == Kind.DESCRIBE and node in drawn and event.get("strategies") != drawn[node]:
            job.add(node, plan.seeds[0], Kind.STEER_BASE)
    return job if job.runs else None
