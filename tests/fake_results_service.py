"""A stand-in for the Actions results service and its blob store: twirp JSON endpoints and a signed-URL PUT.

It records what it received (the blob's size and sha256, the finalize request) so tests compare the client's
claims with the bytes that actually arrived.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from local_server import LocalServer

SERVICE = "/twirp/github.actions.results.api.v1.ArtifactService/"
RUN_ID = "ce7f54c7-61c7-4aae-887f-30da475f5f1a"
JOB_ID = "ca395085-040a-526b-2ce8-bdc85f692774"


def runtime_token(scp: str = f"Actions.GenericRead:x Actions.Results:{RUN_ID}:{JOB_ID}") -> str:
    """An unsigned JWT shaped like ACTIONS_RUNTIME_TOKEN with the given `scp` claim."""
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'typ': 'JWT', 'alg': 'RS256'})}.{part({'scp': scp})}.c2lnbmF0dXJl"


@dataclass
class Blob:
    """One uploaded blob."""

    data: bytes
    headers: dict[str, str]

    @property
    def sha256(self) -> str:
        """`sha256:` digest of what arrived."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass
class State:
    """What the service saw."""

    created: list[dict[str, Any]] = field(default_factory=list)
    finalized: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[str, Blob] = field(default_factory=dict)
    auth: list[str | None] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failures: dict[str, list[int]] = field(default_factory=dict)


class FakeResultsService(LocalServer):
    """CreateArtifact, blob PUT, FinalizeArtifact on 127.0.0.1."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.state = State()
        super().__init__()

    @property
    def url(self) -> str:
        """ACTIONS_RESULTS_URL (with the trailing slash the runner gives)."""
        return self.origin + "/"

    def fail(self, endpoint: str, *statuses: int) -> None:
        """Answer the next calls of `endpoint` (CreateArtifact, FinalizeArtifact or blob) with these statuses."""
        self.state.failures.setdefault(endpoint, []).extend(statuses)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Keep test output quiet."""

            def _answer(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _failure(self, endpoint: str) -> bool:
                queue = state.failures.get(endpoint) or []
                if queue:
                    self._answer(queue.pop(0), {"code": "internal", "msg": "scripted failure"})
                    return True
                return False

            def do_POST(self) -> None:
                split = urlsplit(self.path)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
                state.auth.append(self.headers.get("Authorization"))
                if self.headers.get("Authorization") != f"Bearer {fake.token}":
                    self._answer(401, {"code": "unauthenticated", "msg": "bad token"})
                    return
                if self.headers.get("Content-Type") != "application/json":
                    state.problems.append(f"content type {self.headers.get('Content-Type')}")
                method = split.path.removeprefix(SERVICE)
                if self._failure(method):
                    return
                ids_ok = (body.get("workflow_run_backend_id") == RUN_ID
                          and body.get("workflow_job_run_backend_id") == JOB_ID and body.get("name"))
                if not ids_ok:
                    state.problems.append(f"{method}: bad ids in {body}")
                    self._answer(400, {"code": "invalid_argument", "msg": "bad ids"})
                    return
                if method == "CreateArtifact":
                    if body.get("version") != 4:
                        state.problems.append(f"CreateArtifact version {body.get('version')}")
                    state.created.append(body)
                    self._answer(200, {"ok": True, "signed_upload_url": f"{fake.url}blob/{body['name']}?sig=s3cr3t"})
                elif method == "FinalizeArtifact":
                    state.finalized.append(body)
                    if not isinstance(body.get("size"), str) or not str(body.get("hash", "")).startswith("sha256:"):
                        state.problems.append(f"FinalizeArtifact fields: {body}")
                    self._answer(200, {"ok": True, "artifact_id": "4242"})
                else:
                    self._answer(404, {"code": "bad_route", "msg": method})

            def do_PUT(self) -> None:
                split = urlsplit(self.path)
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self._failure("blob"):
                    return
                if parse_qs(split.query).get("sig") != ["s3cr3t"] or self.headers.get("x-ms-blob-type") != "BlockBlob":
                    state.problems.append(f"blob PUT without signature or blob type: {self.path}")
                    self._answer(403, {"msg": "signature"})
                    return
                state.blobs[split.path.removeprefix("/blob/")] = Blob(data, dict(self.headers.items()))
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

        return Handler
