"""Launching a plan's sealed workers: each tree's `properties.install`, then the pytest and digest workers.

Also what the launch itself needs to know about a worker's report (`first_confined`, `worker_problems`,
`result_events`), the job body every sealed pytest worker gets (`pytest_job`, shared with `freeze hash`), and
`unloadable`: the code under test the sealed interpreter could not load from its tree, checked before any launch.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evidence_gate import visible
from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.lanes import locked_paths
from evidence_gate.lanes.properties import patch_coverage
from evidence_gate.lanes.properties.plan import HEAD_PREFIX, SHIFTED_JOB, Job, Plan
from evidence_gate.model import Violation
from evidence_gate.row_ids import RUN_INTEGRITY
from evidence_gate.sealed.run import WorkerResult, Workspace, count_files, run_install, run_worker
from evidence_gate.sealed.runner_env import Runner
from evidence_gate.sealed.worker import confinement, protocol, provenance
from evidence_gate.sealed.worker.protocol import EV, Event, Mode, ResultEvent


class Order:
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


def first_confined(result: WorkerResult) -> dict[str, Any] | None:
    """The worker's report of its confinement: the first one, sent before any repository code ran."""
    return next((e for e in result.events if e.get(EV) == Event.CONFINED), None)


def worker_problems(result: WorkerResult, timeout_s: int) -> list[str]:
    problems = list(result.problems)
    unconfined = confinement.shortfall(first_confined(result), install=False)
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


def result_events(workers: list[WorkerResult]) -> list[ResultEvent]:
    return [e for w in workers for e in w.results()]


def _printable_tail(text: str, limit: int = 600) -> str:
    """The end of an install log as one bounded line: control characters escaped, newlines shown as `\\n`."""
    return visible.line(text[-limit:]).strip()


def _install(
    config: Config, ws: Workspace, label: str, tree: Path, limit: protocol.Limits, runs: list[dict[str, Any]]
) -> tuple[Path, Violation | None]:
    """Run `properties.install` for one sealed tree into a fresh site folder; a violation when it did not succeed."""
    props = config.properties
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
    unconfined = confinement.shortfall(first_confined(result), install=True)
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
class Launched:
    """What the workers produced: one result per planned job (in the plan's order) and the digest worker's."""

    workers: list[WorkerResult]
    digests: WorkerResult | None
    order: Order
    install: dict[str, Any] | None
    # The install step that failed, in which case no worker ran.
    failed: Violation | None = None

    @property
    def every(self) -> list[WorkerResult]:
        """The job workers and the digest worker."""
        return [*self.workers, *([self.digests] if self.digests else [])]

    def by_job(self, plan: Plan) -> dict[str, WorkerResult]:
        """Each job worker by its job's name (`plan` is the plan these workers ran, replays included)."""
        return dict(zip([j.name for j in plan.jobs], self.workers, strict=True))


class _Launcher:
    """Starts the workers of one plan, each with its tree's import paths (and install site, once installed)."""

    def __init__(self, ws: Workspace, plan: Plan) -> None:
        self.config, self.ws, self.plan = plan.request.config, ws, plan
        self.order = Order()
        self.sites: dict[str, Path] = {}
        self.install_runs: list[dict[str, Any]] = []
        self.glob_locked: frozenset[str] | None = None

    def _glob_locked(self) -> frozenset[str]:
        """The head's `.py` files a `locked:` glob of the configuration names (the static lane fails a patch that
        changes one, so they are the baseline's): trusted like the named locked files."""
        if not self.config.locked:
            return frozenset()
        globs = [g.strip().strip("/") for g in self.config.locked]
        req = self.plan.request
        files = [e.path for e in req.repo.ls_tree(req.head, recursive=True) if e.path.endswith(".py")]
        return frozenset(f for f in files if any(locked_paths.glob_matches(g, f) for g in globs))

    def pytest(self, job: Job) -> WorkerResult:
        """Run one planned job."""
        tree = Path(job.tree)
        if self.glob_locked is None:
            self.glob_locked = self._glob_locked()
        body = pytest_job(
            self.config,
            tree,
            job.runs,
            self.plan.limit,
            site=self.sites.get(job.tree),
            trusted=self.plan.trees.locked | self.glob_locked,
        )
        body["hash_seed"] = self.ws.hash_seeds[1 if job.other_hash_seed else 0]
        body["clock_shift_s"] = job.clock_shift_s
        # The head's property workers load nothing of the tree but locked files and code under test (a helper the
        # import scan could not see is unlocked, so the patch could have changed it).
        body["bounded"] = job.name.startswith(HEAD_PREFIX) or job.name == SHIFTED_JOB
        if job.name.startswith(HEAD_PREFIX) and self.plan.changed_code:
            # Only the head's property workers record which changed lines run (the gate's own trace function).
            body["record_lines"] = patch_coverage.job_field(list(self.plan.changed_code), job.tree)
        return run_worker(self.ws, job.name, body, self.config.properties.timeout_s, self.order)

    def digests(self) -> WorkerResult:
        """Re-produce the digest records on the head tree."""
        head = self.plan.trees.head
        body: protocol.Job = {
            "mode": Mode.DIGEST,
            "tree": str(head),
            "paths": _paths(head, self.config, self.sites.get(str(head))),
            "limits": self.plan.limit,
            "code_under_test": code_under_test(self.config, head),
            "producer": self.config.fixtures.producer,
            "records": [{"id": r["id"], "input": r["input"]} for r in self.plan.records],
        }
        return run_worker(self.ws, "digests", body, self.config.properties.timeout_s, self.order)

    def install(self, label: str, tree: Path) -> Violation | None:
        """`properties.install` into a fresh site for `tree`, which that tree's workers then import from."""
        self.sites[str(tree)], failed = _install(self.config, self.ws, label, tree, self.plan.limit, self.install_runs)
        return failed


def launch(ws: Workspace, plan: Plan) -> Launched:
    """The baseline's install and replays first and alone, then the head's install, then every other worker."""
    props = plan.request.config.properties
    launcher = _Launcher(ws, plan)
    trees, jobs = plan.trees, plan.jobs
    # Once the patch's code has run, it may have rewritten any tree the sealed user can write to (the gate's own user
    # when it cannot drop root), the baseline tree included. So each tree gets its own install (the head's installs
    # the patch's requirements), the baseline's before its replays and before the head: the steering census after
    # the head (census.py) imports from that install too.
    first: dict[str, WorkerResult] = {}
    failed: Violation | None = None
    base_runs = any(j.name == "base" for j in jobs) or bool(plan.seeds and plan.request.specs)
    stages = ([("base", trees.base, ["base"])] if trees.base is not None and base_runs else []) + [
        ("head", trees.head, [])
    ]
    for label, tree, names in stages:
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
