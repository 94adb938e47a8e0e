"""`mode: gate`'s check run on the pull request's head: created beside the gate (on a thread, so PyGithub's import
and the API round trips overlap git's work), completed once the receipt is written, and when either cannot be, one
warning that says why and that the annotations fall back to workflow commands.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from evidence_gate.action.event import EventContext
from evidence_gate.action.inputs import Inputs
from evidence_gate.action.verdict import Reporter
from evidence_gate.report import check_run as check_report

FALLBACK = "annotations are printed as workflow commands and the verdict is this step's exit code"


class Clocked(Reporter, Protocol):
    """An action run that also tells the time (the check run's start and completion)."""

    now: Callable[[], datetime]


@dataclass
class Started:
    """The check run created beside the gate (None when the token may not, or there is no event)."""

    checks: Any = None
    run_id: int | None = None
    thread: threading.Thread | None = field(default=None, repr=False)

    def join(self) -> Started:
        """Wait for the creation to finish (it may have failed: then `run_id` is None)."""
        if self.thread is not None:
            self.thread.join()
        return self


def start_beside(run: Clocked, inputs: Inputs, event: EventContext) -> Started:
    """Start creating the check run on a thread; `join` the result before completing it."""
    started = Started()
    repository = run.env.get("GITHUB_REPOSITORY") or event.repository or ""

    def go() -> None:
        started.checks, started.run_id = _start(run, inputs, event, repository)

    started.thread = threading.Thread(target=go, name="check-run-start", daemon=True)
    started.thread.start()
    return started


def _start(run: Clocked, inputs: Inputs, event: EventContext, repository: str) -> tuple[Any, int | None]:
    """Create (or reset) the check run; when it cannot be, say once why and that annotations fall back."""
    if not inputs.token:
        run.warn_once(
            f"no check run: the github-token input is empty; {FALLBACK}; fix: keep its default "
            "(`${{ github.token }}`) and give the job `permissions: {checks: write}`"
        )
        return None, None
    if not repository:
        run.warn_once(f"no check run: GITHUB_REPOSITORY is not set and the event names no repository; {FALLBACK}")
        return None, None
    details = None
    if run.env.get("GITHUB_SERVER_URL") and run.env.get("GITHUB_RUN_ID"):
        details = f"{run.env['GITHUB_SERVER_URL']}/{repository}/actions/runs/{run.env['GITHUB_RUN_ID']}"
    try:
        from evidence_gate.github import checks_api  # noqa: PLC0415 - PyGithub loads only when the API is used

        client = checks_api.ChecksClient(
            inputs.token, run.env.get("GITHUB_API_URL") or "https://api.github.com", repository, sleep=run.sleep
        )
        ext = checks_api.external_id(repository, event.check_sha, inputs.check_name)
        return client, client.start(inputs.check_name, event.check_sha, ext, run.now(), details)
    except Exception as exc:  # noqa: BLE001 - 403, API failures or a client bug: the exit code carries the verdict
        forbidden = type(exc).__name__ == "ChecksForbidden"
        what = str(exc) if type(exc).__name__.startswith("Checks") else f"{type(exc).__name__}: {exc}"
        if forbidden:
            run.warn_once(
                f"cannot create a check run ({what}); {FALLBACK} (a fork pull request, or a token without "
                "`checks: write`: add `permissions: {checks: write}` to the job)"
            )
        else:
            run.warn_once(f"could not create a check run ({what}); {FALLBACK}")
    return None, None


def complete(run: Clocked, checks: Any, run_id: int, report: check_report.CheckReport) -> int | None:
    """Complete the check run with `report`; None (after one warning) when that fails."""
    from evidence_gate.github import checks_api  # noqa: PLC0415

    try:
        checks.complete(
            run_id, report.conclusion, report.title, report.summary, report.annotations, run.now(), text=report.text
        )
    except Exception as exc:  # noqa: BLE001 - ChecksError or a client bug: fall back, the exit code carries the verdict
        what = str(exc) if isinstance(exc, checks_api.ChecksError) else f"{type(exc).__name__}: {exc}"
        run.warn_once(f"the check run {run_id} could not be completed ({what}); {FALLBACK}")
        return None
    return run_id
