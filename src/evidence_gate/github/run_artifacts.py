"""The REST calls `mode: publish` makes: the triggering run's artifacts, an artifact's zip, the pull request.

The zip endpoint answers a redirect to blob storage; it is followed by hand, without the token (the signed URL
carries its own authorisation, and the token must not leave GitHub), and read up to a byte cap.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import requests

MAX_ATTEMPTS = 4


class RestError(Exception):
    """GitHub refused or kept failing; the message names the call and the status."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Rest:
    """A few GET calls against GITHUB_API_URL with retries on 5xx, 429 and network errors."""

    def __init__(
        self, api_url: str, token: str, *, sleep: Callable[[float], None] = time.sleep, timeout: float = 30.0
    ) -> None:
        self._api = api_url.rstrip("/")
        self._token = token
        self._sleep = sleep
        self._timeout = timeout
        self._session = requests.Session()

    def _get(
        self,
        what: str,
        url: str,
        *,
        params: dict[str, str] | None = None,
        auth: bool = True,
        redirects: bool = True,
        limit: int | None = None,
    ) -> tuple[requests.Response, bytes]:
        headers = {
            "Accept": "application/vnd.github+json",
            "X-GitHub-Api-Version": "2022-11-28",
            "User-Agent": "evidence-gate",
        }
        if auth and self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with self._session.get(
                    url, params=params, headers=headers, timeout=self._timeout, allow_redirects=redirects, stream=True
                ) as response:
                    body = response.raw.read(limit + 1, decode_content=True) if limit is not None else response.content
                    if response.status_code < 500 and response.status_code != 429:
                        if response.status_code >= 400:
                            raise RestError(
                                f"{what}: HTTP {response.status_code}: {body[:200]!r}", response.status_code
                            )
                        return response, body
                    if attempt == MAX_ATTEMPTS:
                        raise RestError(f"{what}: HTTP {response.status_code}", response.status_code)
            except requests.RequestException as exc:
                if attempt == MAX_ATTEMPTS:
                    raise RestError(f"{what}: {type(exc).__name__}: {exc}") from exc
            self._sleep(float(2 ** (attempt - 1)))
        raise AssertionError("unreachable")

    def _json(self, what: str, path: str, params: dict[str, str] | None = None) -> Any:
        _response, body = self._get(what, self._api + path, params=params)
        try:
            return json.loads(body)
        except ValueError as exc:
            raise RestError(f"{what}: the answer is not JSON") from exc

    def run_artifacts(self, repository: str, run_id: int, name: str) -> list[dict[str, Any]]:
        """The unexpired artifacts named `name` of workflow run `run_id`, newest first."""
        return self._named_artifacts(
            "list the run's artifacts", f"/repos/{repository}/actions/runs/{run_id}/artifacts", name
        )

    def repository_artifacts(self, repository: str, name: str) -> list[dict[str, Any]]:
        """The repository's newest 100 unexpired artifacts named `name`, across its workflow runs, newest first."""
        return self._named_artifacts("list the repository's artifacts", f"/repos/{repository}/actions/artifacts", name)

    def _named_artifacts(self, what: str, path: str, name: str) -> list[dict[str, Any]]:
        """One page (100) of an artifact listing, kept to the unexpired artifacts named `name`, newest first; the
        service's own name filter is asked for and checked again."""
        data = self._json(what, path, {"name": name, "per_page": "100"})
        found = data.get("artifacts") if isinstance(data, dict) else None
        if not isinstance(found, list):
            raise RestError(f"{what}: the answer has no artifact list")
        named = [
            a
            for a in found
            if isinstance(a, dict) and a.get("name") == name and not a.get("expired") and isinstance(a.get("id"), int)
        ]
        return sorted(named, key=lambda a: -int(a["id"]))

    def artifact_zip(self, repository: str, artifact_id: int, limit: int) -> bytes:
        """The artifact's zip, through the redirect, at most `limit` bytes (RestError when it is larger)."""
        response, _ = self._get(
            "download the artifact",
            f"{self._api}/repos/{repository}/actions/artifacts/{artifact_id}/zip",
            redirects=False,
        )
        location = response.headers.get("Location", "")
        if response.status_code not in (301, 302, 303, 307, 308) or not location.startswith(("https://", "http://")):
            raise RestError(
                f"download the artifact: expected a redirect to blob storage, got HTTP {response.status_code}",
                response.status_code,
            )
        _, body = self._get("download the artifact's blob", location, auth=False, limit=limit)
        if len(body) > limit:
            raise RestError(f"the artifact's zip is larger than the {limit}-byte cap")
        return body

    def pull(self, repository: str, number: int) -> dict[str, Any]:
        """One pull request."""
        data = self._json("get the pull request", f"/repos/{repository}/pulls/{number}")
        if not isinstance(data, dict):
            raise RestError("get the pull request: the answer is not an object")
        return data

    def pulls_with_head(self, repository: str, owner: str, branch: str) -> list[dict[str, Any]]:
        """Open pull requests whose head is `owner:branch` (how a fork's PR is found: its run names none)."""
        data = self._json(
            "list pull requests",
            f"/repos/{repository}/pulls",
            {"head": f"{owner}:{branch}", "state": "open", "per_page": "100"},
        )
        return [p for p in data if isinstance(p, dict)] if isinstance(data, list) else []
