"""A stand-in for the Actions results service and its blob store: twirp JSON endpoints and signed-URL PUT/GET.

It records what it received (the blob's size and sha256, the finalize request) so tests compare the client's
claims with the bytes that actually arrived. Every twirp body is checked against the fields of
`results/api/v1/artifact.proto` (as @actions/artifact sends them: proto field names, int64 as strings): an unknown
field, a wrong type or another job's ids is a recorded problem and a 400. Jobs of one run get their own runtime
tokens (`job_token`), as the matrix jobs of a workflow run do; artifacts are stored per run, listed for any of
its jobs, and a second artifact with one name in a run is refused with 409, as the real service does. With
`camel = True` it answers the lowerCamelCase proto3 JSON names (`signedUploadUrl`, `databaseId`), as act's, Gitea's
and Forgejo's services do.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import itertools
import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

from support.local_server import LocalServer

SERVICE = "/twirp/github.actions.results.api.v1.ArtifactService/"
RUN_ID = "ce7f54c7-61c7-4aae-887f-30da475f5f1a"
JOB_ID = "ca395085-040a-526b-2ce8-bdc85f692774"
# The request fields each method accepts, with their JSON types (artifact.proto).
FIELDS: dict[str, dict[str, type]] = {
    "CreateArtifact": {
        "workflow_run_backend_id": str,
        "workflow_job_run_backend_id": str,
        "name": str,
        "expires_at": str,
        "version": int,
        "mime_type": str,
    },
    "FinalizeArtifact": {
        "workflow_run_backend_id": str,
        "workflow_job_run_backend_id": str,
        "name": str,
        "size": str,
        "hash": str,
    },
    "ListArtifacts": {
        "workflow_run_backend_id": str,
        "workflow_job_run_backend_id": str,
        "name_filter": str,
        "id_filter": str,
    },
    "GetSignedArtifactURL": {"workflow_run_backend_id": str, "workflow_job_run_backend_id": str, "name": str},
}
REQUIRED = {"workflow_run_backend_id", "workflow_job_run_backend_id"}


def runtime_token(scp: str = f"Actions.GenericRead:x Actions.Results:{RUN_ID}:{JOB_ID}") -> str:
    """An unsigned JWT shaped like ACTIONS_RUNTIME_TOKEN with the given `scp` claim."""
    import base64

    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")

    return f"{part({'typ': 'JWT', 'alg': 'RS256'})}.{part({'scp': scp})}.c2lnbmF0dXJl"


@dataclass
class Blob:
    """One committed blob: the staged blocks a Put Block List named, joined in its order."""

    data: bytes
    headers: dict[str, str]
    blocks: list[str] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        """`sha256:` digest of what arrived."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass
class Stored:
    """One finalized artifact of the run."""

    database_id: int
    name: str
    job_id: str
    data: bytes
    created_at: str = "2026-09-10T12:00:00Z"

    @property
    def digest(self) -> str:
        """`sha256:` of the zip, as the service records it for v4 uploads."""
        return "sha256:" + hashlib.sha256(self.data).hexdigest()


@dataclass
class State:
    """What the service saw."""

    created: list[dict[str, Any]] = field(default_factory=list)
    finalized: list[dict[str, Any]] = field(default_factory=list)
    blobs: dict[str, Blob] = field(default_factory=dict)
    staged: dict[str, dict[str, bytes]] = field(default_factory=dict)
    auth: list[str | None] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    failures: dict[str, list[int]] = field(default_factory=dict)
    artifacts: list[Stored] = field(default_factory=list)
    listed: list[dict[str, Any]] = field(default_factory=list)
    downloads: list[str] = field(default_factory=list)
    cut: list[str] = field(default_factory=list)


class FakeResultsService(LocalServer):
    """CreateArtifact, blob PUT, FinalizeArtifact on 127.0.0.1."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.jobs = {token: JOB_ID}  # runtime token -> the job backend id it carries
        self.state = State()
        self._ids = itertools.count(4242)
        self.camel = False
        # act's ListArtifacts: the size of the artifact's folder (4096), and no digest; None lists the truth.
        self.listed_size: int | None = None
        super().__init__()

    def job_token(self, job_id: str) -> str:
        """The runtime token of another job of the same run (a matrix job, the merge job)."""
        token = runtime_token(f"Actions.GenericRead:x Actions.Results:{RUN_ID}:{job_id}")
        self.jobs[token] = job_id
        return token

    def plant(self, name: str, data: bytes, *, job_id: str = JOB_ID) -> Stored:
        """Store an artifact as if a job had uploaded it (hostile zips, receipts of another run)."""
        stored = Stored(next(self._ids), name, job_id, data)
        self.state.artifacts.append(stored)
        return stored

    def _problems(self, method: str, body: Any, job_id: str) -> list[str]:
        """What is wrong with a twirp body for `method`, sent with the token of `job_id`."""
        fields = FIELDS.get(method)
        if fields is None or not isinstance(body, dict):
            return [f"{method}: unknown method or a body that is not an object"]
        out = [f"{method}: unknown field {k!r}" for k in body if k not in fields]
        out += [
            f"{method}: {k} is {type(v).__name__}, not {fields[k].__name__}"
            for k, v in body.items()
            if k in fields and (not isinstance(v, fields[k]) or isinstance(v, bool))
        ]
        out += [
            f"{method}: {k} missing"
            for k in sorted(REQUIRED | ({"name"} if "name" in fields else set()))
            if not body.get(k)
        ]
        if body.get("workflow_run_backend_id") != RUN_ID:
            out.append(f"{method}: another run's id {body.get('workflow_run_backend_id')}")
        # Create, Finalize and List are asked with the caller's own job; GetSigned with the artifact's.
        if method != "GetSignedArtifactURL" and body.get("workflow_job_run_backend_id") != job_id:
            out.append(f"{method}: job id {body.get('workflow_job_run_backend_id')} is not the token's {job_id}")
        if method == "ListArtifacts" and "id_filter" in body and not str(body["id_filter"]).isdigit():
            out.append(f"ListArtifacts: id_filter {body['id_filter']!r} is not an int64 string")
        if method == "FinalizeArtifact" and not (
            str(body.get("size", "")).isdigit() and str(body.get("hash", "")).startswith("sha256:")
        ):
            out.append(f"FinalizeArtifact fields: {body}")
        return out

    def _listing(self, body: dict[str, Any]) -> dict[str, Any]:
        chosen = [
            a
            for a in self.state.artifacts
            if body.get("name_filter") in (None, a.name) and body.get("id_filter") in (None, str(a.database_id))
        ]
        return {
            "artifacts": [
                {
                    "workflow_run_backend_id": RUN_ID,
                    "workflow_job_run_backend_id": a.job_id,
                    "database_id": str(a.database_id),
                    "name": a.name,
                    "size": str(len(a.data) if self.listed_size is None else self.listed_size),
                    "created_at": a.created_at,
                }
                | ({"digest": a.digest} if self.listed_size is None else {})
                for a in chosen
            ]
        }

    def named(self, value: Any) -> Any:
        """An answer with its field names in this service's dialect (proto names, or lowerCamelCase JSON names)."""
        if isinstance(value, list):
            return [self.named(v) for v in value]
        if not isinstance(value, dict) or not self.camel:
            return value
        camel = {k: k.split("_")[0] + "".join(p.title() for p in k.split("_")[1:]) for k in value}
        return {camel[k]: self.named(v) for k, v in value.items()}

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
                auth = self.headers.get("Authorization") or ""
                state.auth.append(auth or None)
                job_id = fake.jobs.get(auth.removeprefix("Bearer ")) if auth.startswith("Bearer ") else None
                if job_id is None:
                    self._answer(401, {"code": "unauthenticated", "msg": "bad token"})
                    return
                if self.headers.get("Content-Type") != "application/json":
                    state.problems.append(f"content type {self.headers.get('Content-Type')}")
                method = split.path.removeprefix(SERVICE)
                if self._failure(method):
                    return
                problems = fake._problems(method, body, job_id)
                if problems:
                    state.problems.extend(problems)
                    self._answer(400, {"code": "invalid_argument", "msg": "; ".join(problems)})
                    return
                self._route(method, body, job_id)

            def _route(self, method: str, body: dict[str, Any], job_id: str) -> None:
                if method == "CreateArtifact":
                    if body.get("version") != 4:
                        state.problems.append(f"CreateArtifact version {body.get('version')}")
                    if any(a.name == body["name"] for a in state.artifacts):
                        self._answer(
                            409,
                            {
                                "code": "already_exists",
                                "msg": "an artifact with this name already exists on the workflow run",
                            },
                        )
                        return
                    state.created.append(body)
                    signed = f"{fake.url}blob/{body['name']}?sig=s3cr3t"
                    self._answer(200, fake.named({"ok": True, "signed_upload_url": signed}))
                elif method == "FinalizeArtifact":
                    state.finalized.append(body)
                    blob = state.blobs.get(body["name"])
                    stored = fake.plant(body["name"], blob.data if blob else b"", job_id=job_id)
                    self._answer(200, fake.named({"ok": True, "artifact_id": str(stored.database_id)}))
                elif method == "ListArtifacts":
                    state.listed.append(body)
                    self._answer(200, fake.named(fake._listing(body)))
                elif method == "GetSignedArtifactURL":
                    found = [
                        a
                        for a in state.artifacts
                        if a.name == body["name"] and a.job_id == body["workflow_job_run_backend_id"]
                    ]
                    if not found:
                        self._answer(404, {"code": "not_found", "msg": "artifact not found"})
                        return
                    signed = f"{fake.url}download/{found[-1].database_id}?sig=r34d"
                    self._answer(200, fake.named({"signed_url": signed}))

            def do_GET(self) -> None:
                split = urlsplit(self.path)
                if self._failure("download"):
                    return
                found = [a for a in state.artifacts if split.path == f"/download/{a.database_id}"]
                if parse_qs(split.query).get("sig") != ["r34d"] or not found:
                    state.problems.append(f"blob GET without signature or of no artifact: {self.path}")
                    self._answer(403, {"msg": "signature"})
                    return
                state.downloads.append(found[0].name)
                self.send_response(200)
                self.send_header("Content-Type", "application/zip")
                self.send_header("Content-Length", str(len(found[0].data)))
                self.end_headers()
                try:
                    self.wfile.write(found[0].data)
                except (BrokenPipeError, ConnectionResetError):
                    state.cut.append(found[0].name)  # the client stopped reading (its download cap)

            def do_PUT(self) -> None:
                """Azure's block-blob protocol as the official upload client uses it: Put Block stages a block under
                its base64 id, Put Block List commits the named blocks in order. A single Put Blob is refused, as
                act's service keeps 0 bytes of one."""
                split = urlsplit(self.path)
                query = parse_qs(split.query)
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self._failure("blob"):
                    return
                name = split.path.removeprefix("/blob/")
                comp = query.get("comp", [""])[0]
                if query.get("sig") != ["s3cr3t"] or comp not in ("block", "blocklist"):
                    state.problems.append(
                        f"blob PUT without signature, or a Put Blob (not Put Block/List): {self.path}"
                    )
                    self._answer(403, {"msg": "signature or protocol"})
                    return
                if comp == "block":
                    block_id = query.get("blockid", [""])[0]
                    try:
                        raw_id = base64.b64decode(block_id, validate=True)
                    except binascii.Error:
                        raw_id = b""
                    if not raw_id or len(raw_id) > 64:
                        state.problems.append(
                            f"Put Block with a block id that is not base64 of 1-64 bytes: {block_id!r}"
                        )
                        self._answer(400, {"msg": "InvalidQueryParameterValue"})
                        return
                    state.staged.setdefault(name, {})[block_id] = data
                else:
                    ids = self._block_list(data)
                    staged = state.staged.pop(name, {})
                    if ids is None or any(i not in staged for i in ids) or len({len(i) for i in ids}) > 1:
                        state.problems.append(f"Put Block List naming blocks not staged, or of mixed lengths: {data!r}")
                        self._answer(400, {"msg": "InvalidBlockList"})
                        return
                    state.blobs[name] = Blob(b"".join(staged[i] for i in ids), dict(self.headers.items()), ids)
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            @staticmethod
            def _block_list(body: bytes) -> list[str] | None:
                try:
                    root = ET.fromstring(body)
                except ET.ParseError:
                    return None
                allowed = {"Latest", "Committed", "Uncommitted"}
                if root.tag != "BlockList" or any(child.tag not in allowed for child in root):
                    return None
                return [child.text or "" for child in root]

        return Handler
