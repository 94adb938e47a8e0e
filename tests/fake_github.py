"""A stand-in for the GitHub check-runs API: a real HTTP server on 127.0.0.1 in the test process.

Every request body is validated against GitHub's published request schemas (`shared/github-api/check-runs.json`)
and every answer against the response schemas, so a test fails when either side drifts from the real API.
Failures are scripted per method: 502, 429 with Retry-After, rate-limit 403, 422, 403.
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

from local_server import LocalServer


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
        self._next_id = 1000
        self._lock = threading.Lock()
        super().__init__()

    @property
    def url(self) -> str:
        """The API base URL (what GITHUB_API_URL would be)."""
        return self.origin + self.prefix

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
            "login": "github", "id": 9919, "node_id": "MDEyOk9yZ2FuaXphdGlvbjk5MTk=",
            "avatar_url": "https://avatars.example/u/9919", "gravatar_id": "", "url": "https://api.example/users/github",
            "html_url": "https://github.example/github", "followers_url": "https://api.example/f",
            "following_url": "https://api.example/g", "gists_url": "https://api.example/h",
            "starred_url": "https://api.example/s", "subscriptions_url": "https://api.example/sub",
            "organizations_url": "https://api.example/o", "repos_url": "https://api.example/r",
            "events_url": "https://api.example/e", "received_events_url": "https://api.example/re",
            "type": "Organization", "site_admin": False,
        }
        run = {
            "id": run_id, "node_id": f"CR_{run_id}", "head_sha": body["head_sha"], "name": body["name"],
            "url": f"{self.url}/repos/{owner_repo}/check-runs/{run_id}",
            "html_url": f"https://github.example/{owner_repo}/runs/{run_id}",
            "details_url": body.get("details_url", "https://github.example/details"),
            "status": body.get("status", "queued"), "conclusion": body.get("conclusion"),
            "started_at": body.get("started_at", "2026-09-01T12:00:00Z"), "completed_at": body.get("completed_at"),
            "external_id": body.get("external_id", ""),
            "check_suite": {"id": 5},
            "output": {"title": output.get("title"), "summary": output.get("summary"), "text": output.get("text"),
                       "annotations_count": 0,
                       "annotations_url": f"{self.url}/repos/{owner_repo}/check-runs/{run_id}/annotations"},
            "app": {"id": 15368, "slug": "github-actions", "node_id": "MDM6QXBwMTUzNjg=", "owner": app_owner,
                    "name": "GitHub Actions", "description": "Automate your workflow",
                    "external_url": "https://help.github.example/actions",
                    "html_url": "https://github.example/apps/github-actions",
                    "created_at": "2018-07-30T09:30:17Z", "updated_at": "2019-12-10T19:04:12Z",
                    "permissions": {"checks": "write"}, "events": ["check_run"]},
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
            return 200, {}, [{**a, "blob_href": "https://github.example/blob", "start_column": None,
                              "end_column": None, "raw_details": a.get("raw_details"), "title": a.get("title")}
                             for a in self.annotations[int(m.group(2))]]
        m = re.fullmatch(r"/repos/([^/]+/[^/]+)/commits/([0-9a-f]+)/check-runs", path)
        if method == "GET" and m:
            name = (query.get("check_name") or [None])[0]
            runs = [self._run_body(i) for i, r in self.runs.items()
                    if r["head_sha"] == m.group(2) and (name is None or r["name"] == name)]
            return 200, {}, {"total_count": len(runs), "check_runs": runs}
        return 404, {}, {"message": "Not Found"}

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
                    fake.requests.append(Recorded(self.command, path, parse_qs(split.query), body, status,
                                                  self.headers.get("Authorization")))
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
