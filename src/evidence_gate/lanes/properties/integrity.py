"""The run's integrity over every worker: where code under test loaded from, hooks the gate did not install,
locked files changed on disk, the fixture digests re-produced, and the isolation each worker applied."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evidence_gate.lanes.properties.launch import first_confined, worker_problems
from evidence_gate.lanes.properties.plan import Plan
from evidence_gate.model import Violation
from evidence_gate.receipt import facts as run_facts
from evidence_gate.row_ids import FIXTURE_DIGEST_MISMATCH, RUN_INTEGRITY
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import WorkerResult
from evidence_gate.sealed.worker.protocol import EV, Event


def isolation(workers: list[WorkerResult]) -> dict[str, Any]:
    """What every worker applied, from each one's first report: the lowest Landlock ABI; network "isolated" only
    when every one had its own empty network namespace, "filtered" when some could not make one but the seccomp
    filter refused every socket, else "shared"; reads "confined" only when every one had the read allow-list;
    seccomp "sockets-denied" only when every one had the filter; how tasks were bounded; the reasons when a
    network namespace could not be made (Docker's default seccomp profile refuses them)."""
    confined = [e for e in (first_confined(w) for w in workers) if e is not None]
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


def hooks_found(workers: list[WorkerResult]) -> list[Violation]:
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


def changed_locked(plan: Plan) -> list[Violation]:
    """Every locked file the workers could read is re-hashed, not only fixtures: a property may read any of them."""
    req, trees = plan.request, plan.trees
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


def _unlocked(module: str, file: str, head_tree: Path) -> Violation:
    """A module of the tree that the tests loaded although it is neither locked nor code under test."""
    shown = _shown(file, head_tree)
    return Violation(
        RUN_INTEGRITY,
        f"the tests loaded {module} from {shown}, which is neither locked evidence nor code under test (below "
        "properties.pythonpath): the gate found no literal import of it from a locked file (a computed sys.path, an "
        "extended __path__, pytest.importorskip or an aliased import_module reach it), so the patch could change it. "
        "Fix: import it with a literal import statement from the locked file that uses it, list it under "
        "`locked:` in .evidence-gate.yml, or, when it is code under test, add its folder to properties.pythonpath",
        None if Path(shown).is_absolute() else shown,
    )


def code_provenance(workers: list[WorkerResult], head_tree: Path) -> tuple[list[dict[str, Any]], list[Violation]]:
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
        if item.get("unlocked"):
            violations.append(_unlocked(module, item.get("file", ""), head_tree))
            continue
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


def digest_checks(plan: Plan, worker: WorkerResult | None) -> tuple[list[dict[str, Any]] | None, list[Violation]]:
    """The fixtures section's digest checks (None when there are no records), a row for each mismatch, and one
    `run-integrity` row for the records the worker never produced: nothing was compared, so nothing mismatched."""
    req, records = plan.request, plan.records
    if not records:
        return None, []
    path = req.config.fixtures.digests
    produced = {e.get("id"): e for e in (worker.events if worker else []) if e.get(EV) == Event.DIGEST}
    failure = next((e for e in (worker.events if worker else []) if e.get(EV) == Event.PRODUCER_MISSING), None)
    problems = worker_problems(worker, req.config.properties.timeout_s) if worker else ["not run"]
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
