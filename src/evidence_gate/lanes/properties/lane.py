"""The lanes that run code: sealed property runs on a seed plan, freeze replays, tautology checks, digest checks.

`run` builds the sealed trees, fans the seed plan out over worker processes (one pytest session each, several
seeds in-process), and turns the workers' event streams into seed ledgers and violations. Every expectation is
checked against what the trusted process saw start and finish; nothing the test process prints is read.

This module is the orchestration alone; each stage takes the one before it: `plan` (trees, seeds, jobs), `launch`
(the sealed workers), `census` (the baseline's steering census after the head ran), `replays` (the replays after the
head ran, the freeze and counterexample verdicts), `ledgers`
(the seed ledgers) and `integrity` (provenance, hooks, locked files, digests, isolation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from evidence_gate.lanes.properties import patch_coverage, seed_ledger
from evidence_gate.lanes.properties.census import census_stage
from evidence_gate.lanes.properties.integrity import (
    changed_locked,
    code_provenance,
    digest_checks,
    hooks_found,
    isolation,
)
from evidence_gate.lanes.properties.launch import Launched, launch, unloadable, worker_problems
from evidence_gate.lanes.properties.ledgers import collect_ledgers
from evidence_gate.lanes.properties.plan import (
    HEAD_PREFIX,
    DynamicRequest,
    Plan,
    head_trees,
    make_plan,
    other_trees,
)
from evidence_gate.lanes.properties.replays import excuse_stage, freeze_replays, replay_stage, tautology_rows
from evidence_gate.model import LaneResult, Violation
from evidence_gate.receipt.types import PatchCoverageJson
from evidence_gate.row_ids import FREEZE_EXPIRED, FREEZE_REMOVAL_UNVERIFIED, RUN_INTEGRITY
from evidence_gate.sealed.run import WorkerResult, Workspace, runtime_missing
from evidence_gate.sealed.runner_env import RunnerError
from evidence_gate.sealed.worker import confinement
from evidence_gate.sealed.worker.protocol import EV, Event

INSTALL_HINT = "pip install 'evidence-gate[run]'"


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


def _run(req: DynamicRequest, ws: Workspace) -> LaneResult:
    """Plan the sealed run, launch its workers, collect their evidence, and write the receipt's sections."""
    head = head_trees(req, ws)
    unloadable_code = unloadable(req.config, head.head, ws.runner)
    if unloadable_code:
        return _not_run(
            req,
            unloadable_code,
            {"sealed": {"runner": ws.runner.to_json(), "neutralised": [n.to_json() for n in head.neutralised]}},
        )
    plan = make_plan(req, other_trees(req, ws, head))
    launched = launch(ws, plan)
    if launched.failed:
        return _not_run(req, launched.failed, {"sealed": {**_sandbox(ws, plan), "install": launched.install}})
    plan, launched = census_stage(ws, plan, launched)
    plan, launched = excuse_stage(ws, plan, launched)
    plan, launched = replay_stage(ws, plan, launched)
    collected = _collect(plan, launched)
    return LaneResult(tuple(collected.violations), _receipt(ws, plan, launched, collected))


@dataclass(frozen=True)
class Collected:
    """What the workers' evidence shows: violations, and the values the receipt records."""

    violations: list[Violation]
    origins: list[dict[str, Any]]
    ledgers: list[dict[str, Any]]
    replays: list[dict[str, Any]]
    digests: list[dict[str, Any]] | None
    patch_coverage: PatchCoverageJson | None = None


def _collect(plan: Plan, launched: Launched) -> Collected:
    """Each check over the workers' events returns its rows; together they are this lane's violations."""
    req = plan.request
    by_job = launched.by_job(plan)
    changed = changed_locked(plan)
    origins, misloaded = code_provenance(launched.every, plan.trees.head)
    ledgers, unclosed = collect_ledgers(plan, launched)
    replays, unreplayed = freeze_replays(plan, by_job) if plan.first_shard else ([], [])
    tautologies = tautology_rows(plan, by_job)
    digests, mismatched = digest_checks(plan, launched.digests)
    hooked = hooks_found(launched.every)
    coverage = _patch_coverage(plan, [by_job[j.name] for j in plan.jobs if j.name.startswith(HEAD_PREFIX)])
    # A shard records its lines; the merge of every shard's lines decides `patch-not-covered` (shard_merge).
    uncovered = patch_coverage.violations(coverage) if req.shard is None else []
    violations = [*changed, *misloaded, *hooked, *unclosed, *unreplayed, *tautologies, *mismatched, *uncovered]
    return Collected(violations, origins, ledgers, replays, digests, coverage)


def _patch_coverage(plan: Plan, head_workers: list[WorkerResult]) -> PatchCoverageJson:
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
    return patch_coverage.section(list(plan.changed_code), executed, plan.request.config.properties.min_patch_coverage)


def _sandbox(ws: Workspace, plan: Plan) -> dict[str, Any]:
    return {"user": ws.sandbox.user, "note": ws.sandbox.note, "limits": plan.limit}


def _receipt(ws: Workspace, plan: Plan, launched: Launched, collected: Collected) -> dict[str, Any]:
    """The receipt's `properties` and `sealed` sections, and `freeze` and `fixtures` where this run re-checked them."""
    req = plan.request
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
            **isolation(launched.every),
            "neutralised": [n.to_json() for n in plan.trees.neutralised],
            "runner": ws.runner.to_json(),
            "provenance": collected.origins,
            "workers": [
                {
                    "name": w.name,
                    "exit_code": w.exit_code,
                    "timed_out": w.timed_out,
                    "seconds": round(w.seconds, 3),
                    "hash_seed": w.hash_seed,
                    "problems": worker_problems(w, props.timeout_s),
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
