"""The seed ledgers: one per collected node of each property, closed over what the trusted process saw start
and finish (`seed_ledger` closes each in SPEC's order), and the rows for what the head's workers did not show."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from evidence_gate.lanes.properties import seed_ledger, steering
from evidence_gate.lanes.properties.launch import Launched, Order, result_events, worker_problems
from evidence_gate.lanes.properties.plan import (
    EXCUSE_JOB,
    HEAD_PREFIX,
    REPLAY_JOB,
    SHIFTED_JOB,
    STEER_PREFIX,
    DynamicRequest,
    Job,
    Plan,
)
from evidence_gate.lanes.score_properties import PropertySpec
from evidence_gate.model import Violation
from evidence_gate.receipt import facts as run_facts
from evidence_gate.row_ids import RUN_INTEGRITY
from evidence_gate.sealed.run import WorkerResult
from evidence_gate.sealed.worker.assertion_hash import matches
from evidence_gate.sealed.worker.protocol import EV, PLAN_KINDS, Event, Kind, ResultEvent, is_shrink, matches_spec


def _collected(workers: list[WorkerResult]) -> list[str]:
    nodes: list[str] = []
    for w in workers:
        for event in w.events:
            if event.get(EV) == Event.COLLECTED and isinstance(event.get("nodes"), list):
                nodes += [str(n) for n in event["nodes"]]
    return list(dict.fromkeys(nodes))


def _replays_of(
    req: DynamicRequest, node: str, runs: HeadRuns, plan_results: list[ResultEvent]
) -> list[dict[str, Any]]:
    """The ledger's replays: its failing seeds' runs in a fresh worker, and the shifted sample seed's run."""
    records = []
    for job in runs.jobs_all:
        kind = Kind.SHIFTED if job.name == SHIFTED_JOB else Kind.REPLAY if job.name.startswith(REPLAY_JOB) else None
        worker = runs.by_job.get(job.name)
        if kind is None or worker is None:
            continue
        got = {int(e["seed"]): e for e in result_events([worker]) if e.get("node") == node and e.get("kind") == kind}
        scheduled = [seed for key, pairs in job.runs.items() if matches_spec(node, key) for seed, _kind in pairs]
        for seed in scheduled:
            original = next((e for e in plan_results if e.get("seed") == seed and e.get("kind") in PLAN_KINDS), None)
            if original is None:
                continue  # the first run left no result: the ledger already stopped early
            problems = "; ".join(worker_problems(worker, req.config.properties.timeout_s))
            records.append(run_facts.replay_record(kind, int(seed), original, got.get(int(seed)), problems))
    return records


@dataclass(frozen=True)
class HeadRuns:
    """The head trees' property runs, as the ledgers read them."""

    plan: list[int]
    fresh: list[int]
    jobs: list[Job]
    by_job: dict[str, WorkerResult]
    order: Order
    fixture_hash: str | None
    # Every job of the run (the replays' too), for what they scheduled.
    jobs_all: list[Job] = field(default_factory=list)
    # This run compares with the baseline's census (`Plan.compares_steering`) and describes the strategies (the
    # first shard).
    compares: bool = False
    describes: bool = True


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


def collect_ledgers(plan: Plan, launched: Launched) -> tuple[list[dict[str, Any]], list[Violation]]:
    """One seed ledger per collected node of each property, and the rows for what the head's workers did not show."""
    req = plan.request
    props = req.config.properties
    head_jobs = [j for j in plan.jobs if j.name.startswith(HEAD_PREFIX)]
    runs = HeadRuns(
        plan.seeds,
        plan.fresh,
        head_jobs,
        launched.by_job(plan),
        launched.order,
        plan.fixture_hash,
        plan.jobs,
        compares=plan.compares_steering,
        describes=plan.first_shard,
    )
    if req.shard is not None and not runs.jobs:
        return [], []  # a shard that owns no seed (see `_jobs`): nothing to collect, nothing to close
    workers = [runs.by_job[j.name] for j in runs.jobs]
    collected = _collected(workers)
    # What each head worker collected, with the properties it ran (a seed's properties may be spread over two).
    per_worker = [(job.runs, _collected([w])) for job, w in zip(runs.jobs, workers, strict=True)]
    ledgers: list[dict[str, Any]] = []
    found: list[Violation] = []
    for spec in req.specs:
        nodes = [n for n in collected if matches_spec(n, spec.node)]
        causes: list[str] = []
        if not nodes:
            causes = [p for w in workers for p in worker_problems(w, props.timeout_s) if p.startswith("collecting ")]
            why = f": {causes[0]}" if causes else ""
            found.append(
                Violation(RUN_INTEGRITY, f"{spec.node} was not collected in the sealed run{why}", props.list, spec.line)
            )
            nodes = [spec.node]
        source = plan.sources[spec.file] or b""
        # Nothing of the entry was collected because a module failed to import: that one row names the cause, not
        # one more per test the file defines (an adopter saw 17 rows for one missing import).
        for expected in [] if causes else static_tests(source, spec.file, spec.node):
            if any(
                spec.node in ran and not any(n == expected or n.startswith(expected + "[") for n in nodes_of)
                for ran, nodes_of in per_worker
            ):
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
    results = [e for j in runs.jobs for e in result_events([runs.by_job[j.name]]) if e.get("node") == node]
    plan_results = [e for e in results if e.get("kind") in PLAN_KINDS]
    lost = _lost_runs(req, spec, ledger, runs, plan_results)
    issues = lost + _counted(req, ledger, plan_results)
    failing = [e for e in plan_results if e.get("outcome") == "failed"]
    failing.sort(key=lambda e: seed_ledger.failing_rank(e["seed"], runs.plan, runs.fresh, drawn=e["kind"] != Kind.PLAN))
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


def _steering(node: str, runs: HeadRuns, plan_results: list[ResultEvent]) -> dict[str, Any] | None:
    """The recorded steering comparison of one node: its planned head runs against the baseline's census."""
    steer = [w for name, w in runs.by_job.items() if name.startswith(STEER_PREFIX)]
    if not runs.compares:
        return None  # nothing to compare: only fresh seeds (or a shard that owns no seed)
    census = (Kind.STEER_BASE, Kind.DESCRIBE)
    # A census that could not run (a process the head left survived) leaves `base` empty: the section then shows
    # no baseline strategies and no count, and `steering.rows` fails the property closed.
    base = [e for e in result_events(steer) if e.get("node") == node and e.get("kind") in census]
    head = [e for e in plan_results if e.get("kind") == Kind.PLAN]
    recorded = steering.section(head, base, runs.plan)
    if not steer:
        recorded["census"] = steering.CENSUS_NOT_RUN
    if not runs.describes and recorded["baseline"]["strategies"] is None:
        # A later shard: the strategies do not depend on the seed, and the first shard compares them (its census
        # describes every node); this one records its seeds' counts, which the merge adds to the first's.
        recorded["head"]["strategies"] = None
    return recorded


def _excuse(
    req: DynamicRequest, spec: PropertySpec, node: str, failing: list[ResultEvent], runs: HeadRuns
) -> dict[str, Any] | None:
    """Whether the freeze entry whose hash every failure carries may excuse them: only when the baseline, replaying
    each failing seed's minimal example, fails the same way. None when no active entry's hash matches."""
    entry = next((e for e in req.active if e.test in {node, spec.node}), None)
    if entry is None or not all(matches(entry.assertion_hash, e.get("assertion_hash")) for e in failing):
        return None
    worker = runs.by_job.get(EXCUSE_JOB)
    replayed = {
        int(e["seed"]): e
        for e in (result_events([worker]) if worker else [])
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
                f"the baseline replay of seed {seed} did not run ({'; '.join(worker_problems(worker, req.config.properties.timeout_s)) if worker else 'not scheduled'})"
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
    req: DynamicRequest, spec: PropertySpec, ledger: dict[str, Any], runs: HeadRuns, plan_results: list[ResultEvent]
) -> list[str]:
    """Per head worker: the planned runs it reported no result for (the ledger then stopped early), or its problems."""
    issues: list[str] = []
    got = {(e.get("seed"), e.get("kind")) for e in plan_results}
    for job in runs.jobs:
        expected = [(int(s), str(k)) for s, k in job.runs.get(spec.node, []) if k in PLAN_KINDS]
        problems = "; ".join(worker_problems(runs.by_job[job.name], req.config.properties.timeout_s))
        lost = [s for s, k in expected if (s, k) not in got]
        if lost:
            ledger["stopped_early"] = True
            issues.append(f"no result for seed(s) {', '.join(map(str, lost))} ({problems or 'no result reported'})")
        elif problems:
            issues.append(problems)
    return issues


def _counted(req: DynamicRequest, ledger: dict[str, Any], plan_results: list[ResultEvent]) -> list[str]:
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
    results: list[ResultEvent],
    failing: list[ResultEvent],
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


def _minimal(event: ResultEvent) -> Any:
    return event.get("falsifying") or event.get("assertion_hash")
