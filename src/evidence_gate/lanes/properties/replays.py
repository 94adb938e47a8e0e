"""The replays: the baseline's replay of each failure a freeze entry would excuse, the fresh-worker replays of
failing seeds (both launched after the head ran), and the freeze section's and counterexamples' verdicts."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from evidence_gate.lanes.properties.launch import Launched, pytest_job, result_events, worker_problems
from evidence_gate.lanes.properties.plan import EXCUSE_JOB, REPLAY_JOB, Job, Plan, locked_modules
from evidence_gate.model import Violation
from evidence_gate.row_ids import FREEZE_EXPIRED, FREEZE_REMOVED_STILL_FAILING, PROPERTY_TAUTOLOGY, RUN_INTEGRITY
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import WorkerResult, Workspace, run_worker
from evidence_gate.sealed.worker.assertion_hash import matches
from evidence_gate.sealed.worker.protocol import PLAN_KINDS, Kind, ResultEvent, matches_spec


def excuse_stage(ws: Workspace, plan: Plan, launched: Launched) -> tuple[Plan, Launched]:
    """After the head ran: each failure an active freeze entry's hash would excuse is replayed on the baseline (its
    minimal example, through Hypothesis' blob); only a failure the baseline shares is excused (`_failure_fields`)."""
    req = plan.request
    if plan.trees.base is None or not req.active:
        return plan, launched
    # A tree of its own, written from git after the head's code ran: nothing that code did reaches the replay's tree.
    tree = ws.root / EXCUSE_JOB
    job = Job(EXCUSE_JOB, str(tree))
    replays: dict[str, dict[str, str]] = {}
    for result in result_events(
        [w for j, w in zip(plan.jobs, launched.workers, strict=True) if j.name.startswith("head-")]
    ):
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
    if not ws.fresh_scratch():
        return plan, launched  # a process the head's code left survived: nothing is excused (the ledger says why)
    locked = plan.trees.locked
    sealed_tree.build(req.repo, req.baseline, req.baseline, locked, tree, locked_modules(req, locked), ws.runner.owner)
    # The baseline's install site, which only the baseline's install could write (Landlock: workers write home, tmp).
    site = ws.root / "site-base" if req.config.properties.install else None
    body = pytest_job(req.config, tree, job.runs, plan.limit, site=site, trusted=locked)
    body["replays"] = replays
    worker = run_worker(ws, job.name, body, req.config.properties.timeout_s, launched.order)
    return replace(plan, jobs=[*plan.jobs, job]), replace(launched, workers=[*launched.workers, worker])


def replay_stage(ws: Workspace, plan: Plan, launched: Launched) -> tuple[Plan, Launched]:
    """After the head ran: per property, the failing seed its ledger reports (the first in plan order) and its first
    failing fresh seed run once more in fresh workers on the head's tree (no shrink re-runs; the other failing seeds
    already re-ran twice in their worker); `_replays_of` compares each with its first run. Bounded: at most two
    replays per property, spread over `properties.jobs` workers."""
    req = plan.request
    heads = [w for j, w in zip(plan.jobs, launched.workers, strict=True) if j.name.startswith("head-")]
    chosen: dict[tuple[str, str], int] = {}
    for result in sorted(result_events(heads), key=lambda e: _plan_order(plan.seeds, e)):
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


def _plan_order(seeds: list[int], event: ResultEvent) -> tuple[bool, int]:
    """Planned seeds first, in the plan's order; then fresh ones."""
    seed = event.get("seed")
    return (event.get("kind") != Kind.PLAN, seeds.index(seed) if seed in seeds else len(seeds))


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
            for e in result_events([worker])
            if e.get("kind") == kind and matches_spec(str(e.get("node")), node)
        ]
        problems += worker_problems(worker, timeout_s)
    return expected, got, problems


def freeze_replays(plan: Plan, by_job: dict[str, WorkerResult]) -> tuple[list[dict[str, Any]], list[Violation]]:
    """The freeze section's replays of removed and expired entries, and a row for each that did not pass."""
    req, jobs = plan.request, plan.jobs
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


def tautology_rows(plan: Plan, by_job: dict[str, WorkerResult]) -> list[Violation]:
    """A row for each documented counterexample that the baseline accepted, or that did not run cleanly."""
    req, jobs = plan.request, plan.jobs
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
