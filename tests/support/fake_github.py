"""A stand-in for the GitHub check-runs API: a real HTTP server on 127.0.0.1 in the test process.

Every request body is validated against GitHub's published request schemas (`shared/github-api/check-runs.json`)
and every answer against the response schemas, so a test fails when either side drifts from the real API.
Failures are scripted per method: 502, 429 with Retry-After, rate-limit 403, 422, 403.

For `mode: publish` it also serves a workflow run's artifacts (`GET .../actions/runs/{id}/artifacts`, and the
repository's, `GET .../actions/artifacts`, which the gate's delta reads; the zip as a
302 to a separate blob store that refuses a request carrying the API token) and pull requests (`GET .../pulls/{n}`,
`GET .../pulls?head=owner:branch`); those answers are validated against the response schemas extracted into
`tests/data/github-api-publish.json`.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jsonschema

from support.local_server import LocalServer

PUBLISH_SCHEMAS = Path(__file__).resolve().parents[1] / "data" / "github-api-publish.json"


def row_of(run: dict[str, Any]) -> str:
    """The decision row a posted check run names: the code span that ends its summary's first line."""
    first = run["output"]["summary"].splitlines()[0]
    found = re.findall(r"`([a-z0-9-]+)`", first)
    assert found, f"the check run's summary does not name its row first: {first!r}"
    return str(found[-1])


class BlobStore(LocalServer):
    """Signed-URL blob storage for artifact zips: serves `/zip/{id}?sig=...`, records the auth it was sent."""

    def __init__(self) -> None:
        self.blobs: dict[int, bytes] = {}
        self.auth: list[str | None] = []
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        store = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def do_GET(self) -> None:
                split = urlsplit(self.path)
                store.auth.append(self.headers.get("Authorization"))
                m = re.fullmatch(r"/zip/(\d+)", split.path)
                ok = m is not None and int(m.group(1)) in store.blobs and parse_qs(split.query).get("sig") == ["b10b"]
                data = store.blobs[int(m.group(1))] if ok and m else b"<Error>AuthenticationFailed</Error>"
                # Blob storage refuses a second credential beside the signature, as Azure does.
                status = 200 if ok and not self.headers.get("Authorization") else 403
                self.send_response(status)
                self.send_header("Content-Length", str(len(data) if status == 200 else 0))
                self.end_headers()
                if status == 200:
                    self.wfile.write(data)

        return Handler


def _nullable(schema: Any) -> Any:
    """OpenAPI 3.0 `nullable: true` as JSON Schema (allow null)."""
    if isinstance(schema, list):
        return [_nullable(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: _nullable(v) for k, v in schema.items() if k != "nullable"}
    if schema.get("nullable") is True:
        return {"anyOf": [out, {"type": "null"}]}
    return out


@dataclass
class Recorded:
    """One request as the server saw it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    status: int
    auth: str | None


@dataclass
class Scripted:
    """An answer to send instead of the real one, for the next request with this method."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None


class FakeGitHub(LocalServer):
    """Check runs for any repository; start() before use, stop() after."""

    def __init__(self, shared_dir: Path, prefix: str = "") -> None:
        self.prefix = prefix  # e.g. "/api/v3", as on GitHub Enterprise Server
        spec = json.loads((shared_dir / "github-api" / "check-runs.json").read_text(encoding="utf-8"))
        self._validators = {
            "create": jsonschema.Draft7Validator(spec["create_check_run"]["request"]),
            "update": jsonschema.Draft7Validator(spec["update_check_run"]["request"]),
            "response_201": jsonschema.Draft7Validator(_nullable(spec["create_check_run"]["response_201"])),
            "response_200": jsonschema.Draft7Validator(_nullable(spec["update_check_run"]["response_200"])),
        }
        self.requests: list[Recorded] = []
        self.problems: list[str] = []
        self.runs: dict[int, dict[str, Any]] = {}
        self.annotations: dict[int, list[dict[str, Any]]] = {}
        self.script: dict[str, list[Scripted]] = {}
        publish = json.loads(PUBLISH_SCHEMAS.read_text(encoding="utf-8"))
        self._validators["artifacts_200"] = jsonschema.Draft7Validator(
            _nullable(publish["list_workflow_run_artifacts"]["response_200"])
        )
        self._validators["pull_200"] = jsonschema.Draft7Validator(
            _nullable(publish["get_pull_request"]["response_200"])
        )
        self.run_artifacts: dict[int, list[dict[str, Any]]] = {}
        self.artifacts_forbidden = (
            False  # the repository's artifact list answers 403, as to a job without actions: read
        )
        self.pulls: dict[int, dict[str, Any]] = {}
        self.blob_store = BlobStore()
        self._next_id = 1000
        self._lock = threading.Lock()
        super().__init__()

    @property
    def url(self) -> str:
        """The API base URL (what GITHUB_API_URL would be)."""
        return self.origin + self.prefix

    def start(self) -> FakeGitHub:
        """Serve the API and its blob store."""
        self.blob_store.start()
        return super().start()

    def stop(self) -> None:
        """Stop both servers."""
        self.blob_store.stop()
        super().stop()

    def add_artifact(
        self,
        run_id: int,
        name: str,
        data: bytes,
        *,
        expired: bool = False,
        size: int | None = None,
        head_sha: str = "0" * 40,
        head_repository_id: int = 2,
    ) -> dict[str, Any]:
        """An artifact of workflow run `run_id` holding `data` (its listed size can be made to lie), of a run on
        `head_sha` from the repository `head_repository_id` (1 is this repository itself, 2 a fork)."""
        import hashlib

        self._next_id += 1
        art_id = self._next_id
        self.blob_store.blobs[art_id] = data
        artifact = {
            "id": art_id,
            "node_id": f"MDg6QXJ0aWZhY3Q{art_id}",
            "name": name,
            "size_in_bytes": len(data) if size is None else size,
            "url": f"{self.url}/repos/octo/repo/actions/artifacts/{art_id}",
            "archive_download_url": f"{self.url}/repos/octo/repo/actions/artifacts/{art_id}/zip",
            "expired": expired,
            "created_at": "2026-09-10T12:00:00Z",
            "expires_at": "2026-12-09T12:00:00Z",
            "updated_at": "2026-09-10T12:00:00Z",
            "digest": "sha256:" + hashlib.sha256(data).hexdigest(),
            "workflow_run": {
                "id": run_id,
                "repository_id": 1,
                "head_repository_id": head_repository_id,
                "head_branch": "patch",
                "head_sha": head_sha,
            },
        }
        self.run_artifacts.setdefault(run_id, []).append(artifact)
        return artifact

    def _route_publish(self, method: str, path: str, query: dict[str, list[str]]) -> tuple[int, dict[str, str], Any]:
        """The artifacts and pulls endpoints `mode: publish` reads."""
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/runs/(\d+)/artifacts", path)
        if method == "GET" and m:
            name = (query.get("name") or [None])[0]
            found = [a for a in self.run_artifacts.get(int(m.group(2)), []) if name is None or a["name"] == name]
            answer = {"total_count": len(found), "artifacts": found}
            self.problems += self._check("artifacts_200", answer)
            return 200, {}, answer
        if method == "GET" and re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/artifacts", path):
            if self.artifacts_forbidden:
                return 403, {}, {"message": "Resource not accessible by integration"}
            name = (query.get("name") or [None])[0]
            every = [a for found in self.run_artifacts.values() for a in found]
            found = [a for a in every if name is None or a["name"] == name]
            answer = {"total_count": len(found), "artifacts": found}
            self.problems += self._check("artifacts_200", answer)
            return 200, {}, answer
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/actions/artifacts/(\d+)/zip", path)
        if method == "GET" and m:
            if int(m.group(2)) not in self.blob_store.blobs:
                return 404, {}, {"message": "Not Found"}
            return 302, {"Location": f"{self.blob_store.origin}/zip/{m.group(2)}?sig=b10b"}, {}
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls/(\d+)", path)
        if method == "GET" and m:
            pr = self.pulls.get(int(m.group(2)))
            if pr is None:
                return 404, {}, {"message": "Not Found"}
            self.problems += self._check("pull_200", pr)
            return 200, {}, pr
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/pulls", path)
        if method == "GET" and m:
            head = (query.get("head") or [""])[0]
            found = [
                pr
                for pr in self.pulls.values()
                if pr["state"] == "open" and f"{pr['head']['repo']['owner']['login']}:{pr['head']['ref']}" == head
            ]
            return 200, {}, found
        return 404, {}, {"message": "Not Found"}

    def fail(self, method: str, *answers: Scripted) -> None:
        """Answer the next requests with this method with `answers`, in order."""
        self.script.setdefault(method, []).extend(answers)

    def calls(self, method: str | None = None) -> list[Recorded]:
        """The recorded requests, optionally of one method."""
        return [r for r in self.requests if method is None or r.method == method]

    def _check(self, which: str, body: Any) -> list[str]:
        return [f"{which}: {e.message} at {list(e.absolute_path)}" for e in self._validators[which].iter_errors(body)]

    def _run_body(self, run_id: int) -> dict[str, Any]:
        run = self.runs[run_id]
        out = copy.deepcopy(run)
        out["output"]["annotations_count"] = len(self.annotations[run_id])
        return out

    def _new_run(self, owner_repo: str, body: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        run_id = self._next_id
        output = body.get("output") or {}
        app_owner = {
            "login": "github",
            "id": 9919,
            "node_id": "MDEyOk9yZ2FuaXphdGlvbjk5MTk=",
            "avatar_url": "https://avatars.example/u/9919",
            "gravatar_id": "",
            "url": "https://api.example/users/github",
            "html_url": "https://github.example/github",
            "followers_url": "https://api.example/f",
            "following_url": "https://api.example/g",
            "gists_url": "https://api.example/h",
            "starred_url": "https://api.example/s",
            "subscriptions_url": "https://api.example/sub",
            "organizations_url": "https://api.example/o",
            "repos_url": "https://api.example/r",
            "events_url": "https://api.example/e",
            "received_events_url": "https://api.example/re",
            "type": "Organization",
            "site_admin": False,
        }
        run = {
            "id": run_id,
            "node_id": f"CR_{run_id}",
            "head_sha": body["head_sha"],
            "name": body["name"],
            "url": f"{self.url}/repos/{owner_repo}/check-runs/{run_id}",
            "html_url": f"https://github.example/{owner_repo}/runs/{run_id}",
            "details_url": body.get("details_url", "https://github.example/details"),
            "status": body.get("status", "queued"),
            "conclusion": body.get("conclusion"),
            "started_at": body.get("started_at", "2026-09-01T12:00:00Z"),
            "completed_at": body.get("completed_at"),
            "external_id": body.get("external_id", ""),
            "check_suite": {"id": 5},
            "output": {
                "title": output.get("title"),
                "summary": output.get("summary"),
                "text": output.get("text"),
                "annotations_count": 0,
                "annotations_url": f"{self.url}/repos/{owner_repo}/check-runs/{run_id}/annotations",
            },
            "app": {
                "id": 15368,
                "slug": "github-actions",
                "node_id": "MDM6QXBwMTUzNjg=",
                "owner": app_owner,
                "name": "GitHub Actions",
                "description": "Automate your workflow",
                "external_url": "https://help.github.example/actions",
                "html_url": "https://github.example/apps/github-actions",
                "created_at": "2018-07-30T09:30:17Z",
                "updated_at": "2019-12-10T19:04:12Z",
                "permissions": {"checks": "write"},
                "events": ["check_run"],
            },
            "pull_requests": [],
        }
        self.runs[run_id] = run
        self.annotations[run_id] = list(output.get("annotations") or [])
        return run

    def _apply(self, run_id: int, body: dict[str, Any]) -> None:
        run = self.runs[run_id]
        for key in ("name", "details_url", "external_id", "started_at", "status", "conclusion", "completed_at"):
            if key in body:
                run[key] = body[key]
        if "conclusion" in body:
            run["status"] = "completed"
        if body.get("status") == "in_progress":
            run["conclusion"] = None
            run["completed_at"] = None
        output = body.get("output")
        if output:
            for key in ("title", "summary", "text"):
                if key in output:
                    run["output"][key] = output[key]
            self.annotations[run_id].extend(output.get("annotations") or [])

    def _route(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[int, dict[str, str], Any]:
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/check-runs", path)
        if method == "POST" and m:
            problems = self._check("create", body)
            if problems:
                self.problems += problems
                return 422, {}, {"message": "Invalid request.", "errors": problems}
            run = self._new_run(m.group(1), body)
            answer = self._run_body(run["id"])
            self.problems += self._check("response_201", answer)
            return 201, {}, answer
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)", path)
        if m and int(m.group(2)) not in self.runs:
            return 404, {}, {"message": "Not Found"}
        if method == "PATCH" and m:
            problems = self._check("update", body)
            if problems:
                self.problems += problems
                return 422, {}, {"message": "Invalid request.", "errors": problems}
            self._apply(int(m.group(2)), body)
            answer = self._run_body(int(m.group(2)))
            self.problems += self._check("response_200", answer)
            return 200, {}, answer
        if method == "GET" and m:
            return 200, {}, self._run_body(int(m.group(2)))
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/check-runs/(\d+)/annotations", path)
        if method == "GET" and m:
            return (
                200,
                {},
                [
                    {
                        **a,
                        "blob_href": "https://github.example/blob",
                        "start_column": None,
                        "end_column": None,
                        "raw_details": a.get("raw_details"),
                        "title": a.get("title"),
                    }
                    for a in self.annotations[int(m.group(2))]
                ],
            )
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)/check-runs", path)
        if method == "GET" and m:
            name = (query.get("check_name") or [None])[0]
            runs = [
                self._run_body(i)
                for i, r in self.runs.items()
                if r["head_sha"] == m.group(2) and (name is None or r["name"] == name)
            ]
            return 200, {}, {"total_count": len(runs), "check_runs": runs}
        return self._route_publish(method, path, query)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode(errors="replace")
                split = urlsplit(self.path)
                path = split.path
                if fake.prefix:
                    if not path.startswith(fake.prefix + "/"):
                        fake.problems.append(f"request outside the API prefix: {path}")
                    path = path.removeprefix(fake.prefix)
                with fake._lock:
                    queue = fake.script.get(self.command) or []
                    if queue:
                        answer = queue.pop(0)
                        status, headers, out = answer.status, answer.headers, answer.body or {"message": "scripted"}
                    else:
                        status, headers, out = fake._route(self.command, path, parse_qs(split.query), body)
                    fake.requests.append(
                        Recorded(
                            self.command, path, parse_qs(split.query), body, status, self.headers.get("Authorization")
                        )
                    )
                data = json.dumps(out).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = _serve

        return Handler
