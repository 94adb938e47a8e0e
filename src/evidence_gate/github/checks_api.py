"""Check runs through PyGithub against `GITHUB_API_URL`: find-or-create, complete, annotations 50 at a time.

The only module that imports PyGithub (so the CLI stays fast). PyGithub's own retry and throttling are switched
off; `_call` retries instead, with a schedule the tests can observe through the injected `sleep`: 5xx, 429 and
rate-limit 403 are retried (honouring `Retry-After`), 422 and other 4xx never are.
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import partial
from typing import Any, TypeVar

import requests
from github import Auth, Github, GithubException

from evidence_gate.report.check_run import Annotation

ANNOTATIONS_PER_REQUEST = 50
MAX_ATTEMPTS = 5
MAX_WAIT_S = 60.0
T = TypeVar("T")


class ChecksError(Exception):
    """The API refused or kept failing; `status` is the last HTTP status (0 for a network error)."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


class ChecksForbidden(ChecksError):
    """403 without a rate limit: a fork PR's or read-only token; the caller falls back to workflow commands."""


def external_id(repository: str, check_sha: str, check_name: str) -> str:
    """Stable per (repository, commit, check name), so a re-run finds and updates its own check run."""
    digest = hashlib.sha256(f"{repository}\0{check_sha}\0{check_name}".encode()).hexdigest()[:32]
    return f"evidence-gate:{digest}"


def _is_rate_limited(status: int, headers: dict[str, str], message: str) -> bool:
    """429, or a 403 that is a primary or secondary rate limit rather than a missing permission."""
    lower = {k.lower(): v for k, v in headers.items()}
    if status == 429:
        return True
    return status == 403 and (
        lower.get("x-ratelimit-remaining") == "0" or "retry-after" in lower or "rate limit" in message.lower()
    )


def _wait_for(headers: dict[str, str], attempt: int, now: float, message: str) -> float:
    """Seconds to wait: `Retry-After`, else the rate-limit reset, else a minute for a secondary rate limit (GitHub's
    advice), else exponential backoff 1, 2, 4, 8 s."""
    lower = {k.lower(): v for k, v in headers.items()}
    retry_after = lower.get("retry-after", "")
    if retry_after.strip().isdigit():
        return min(float(retry_after), MAX_WAIT_S)
    reset = lower.get("x-ratelimit-reset", "")
    if lower.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        return min(max(float(reset) - now, 1.0), MAX_WAIT_S)
    if "secondary rate limit" in message.lower():
        return MAX_WAIT_S
    return float(2 ** (attempt - 1))


class ChecksClient:
    """Check runs of one repository."""

    def __init__(
        self,
        token: str,
        api_url: str,
        repository: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.time,
        timeout: int = 30,
    ) -> None:
        self._gh = Github(
            auth=Auth.Token(token),
            base_url=api_url.rstrip("/"),
            timeout=timeout,
            retry=None,
            lazy=True,
            seconds_between_requests=None,
            seconds_between_writes=None,
            user_agent="evidence-gate",
        )
        with warnings.catch_warnings():
            # `get_repo(lazy=True)` is how PyGithub 2.6 (Debian's) avoids a GET; 2.10 deprecates the argument.
            warnings.simplefilter("ignore", DeprecationWarning)
            self._repo = self._gh.get_repo(repository, lazy=True)
        self._api_url = api_url.rstrip("/")
        self.repository = repository
        self._sleep = sleep
        self._clock = clock
        self.requests = 0
        # Annotations an earlier attempt already attached to a reused run: GitHub appends, never replaces.
        self._already: set[tuple[str, int, str]] = set()

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one API call with the retry schedule; raise ChecksForbidden/ChecksError when it gives up."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            self.requests += 1
            try:
                return fn()
            except GithubException as exc:
                headers = dict(exc.headers or {})
                status = exc.status
                detail = exc.data.get("message") if isinstance(exc.data, dict) else exc.data
                message = str(detail or "")
                limited = _is_rate_limited(status, headers, message)
                if not (status >= 500 or limited) or attempt == MAX_ATTEMPTS:
                    cls = ChecksForbidden if status == 403 and not limited else ChecksError
                    raise cls(f"{what}: HTTP {status}: {message}", status) from exc
                wait = _wait_for(headers, attempt, self._clock(), message)
            except requests.RequestException as exc:
                if attempt == MAX_ATTEMPTS:
                    raise ChecksError(f"{what}: {type(exc).__name__}: {exc}", 0) from exc
                wait = float(2 ** (attempt - 1))
            self._sleep(wait)
        raise AssertionError("unreachable")

    def find(self, check_sha: str, name: str, ext_id: str) -> int | None:
        """The id of this job's earlier check run on `check_sha` (same name and external id), if any."""
        url = f"{self._api_url}/repos/{self.repository}/commits/{check_sha}/check-runs"
        params = {"check_name": name, "filter": "all", "per_page": 100}
        _headers, data = self._call(
            "list check runs", lambda: self._gh.requester.requestJsonAndCheck("GET", url, parameters=params)
        )
        runs = data.get("check_runs", []) if isinstance(data, dict) else []
        ids = [
            r["id"]
            for r in runs
            if r.get("name") == name and r.get("external_id") == ext_id and isinstance(r.get("id"), int)
        ]
        return max(ids) if ids else None

    def start(self, name: str, check_sha: str, ext_id: str, started_at: datetime, details_url: str | None) -> int:
        """Create the check run `in_progress`, or reset this job's earlier one; returns its id."""
        output: dict[str, Any] = {
            "title": "evidence-gate is running",
            "summary": "The gate is evaluating this pull request.",
        }
        existing = self.find(check_sha, name, ext_id)
        extra: dict[str, Any] = {"details_url": details_url} if details_url else {}
        if existing is not None:
            run = self._repo.get_check_run(existing)
            self._call(
                "update check run",
                lambda: run.edit(
                    status="in_progress", started_at=started_at, external_id=ext_id, output=output, **extra
                ),
            )
            kept = self._call("list annotations", lambda: list(run.get_annotations()))
            self._already = {(a.path, a.start_line, a.message) for a in kept}
            return existing
        created = self._call(
            "create check run",
            lambda: self._repo.create_check_run(
                name=name,
                head_sha=check_sha,
                external_id=ext_id,
                status="in_progress",
                started_at=started_at,
                output=output,
                **extra,
            ),
        )
        return int(created.id)

    def complete(
        self,
        run_id: int,
        conclusion: str,
        title: str,
        summary: str,
        annotations: Sequence[Annotation],
        completed_at: datetime,
        text: str = "",
    ) -> int:
        """Complete the run with the first 50 annotations, then append the rest 50 per update; returns the updates sent.

        Every update repeats title, summary and text (the API requires title and summary with annotations).

        Annotations a reused run already shows (from an earlier attempt of the same job) are not sent again.
        """
        run = self._repo.get_check_run(run_id)
        annotations = [a for a in annotations if (a.path, a.line, a.to_json()["message"]) not in self._already]
        batches = [
            annotations[i : i + ANNOTATIONS_PER_REQUEST] for i in range(0, len(annotations), ANNOTATIONS_PER_REQUEST)
        ] or [[]]
        sent = 0
        for index, batch in enumerate(batches):
            output: dict[str, Any] = {"title": title, "summary": summary}
            if text:
                output["text"] = text
            if batch:
                output["annotations"] = [a.to_json() for a in batch]
            if index == 0:
                self._call(
                    "complete check run",
                    partial(
                        run.edit, status="completed", conclusion=conclusion, completed_at=completed_at, output=output
                    ),
                )
            else:
                self._call("append annotations", partial(run.edit, output=output))
            sent += 1
        return sent
