"""Artifact upload from inside the container, without Node: the Actions results-service protocol.

CreateArtifact (twirp JSON) returns a signed blob URL; the zip goes there as @actions/artifact sends it, Put Block
for each chunk then Put Block List (act's service keeps nothing of a single Put Blob); FinalizeArtifact
records its size and `sha256:` digest and returns the artifact id. The run and job backend ids come from the
`Actions.Results:<run>:<job>` scope in the `scp` claim of `ACTIONS_RUNTIME_TOKEN`; the endpoint is
`ACTIONS_RESULTS_URL`. Answers are read under either proto3 JSON name of a field (`signed_upload_url` or
`signedUploadUrl`): GitHub's service answers the proto names, act's, Gitea's and Forgejo's the lowerCamelCase ones.
Only the standard library is used.
"""

from __future__ import annotations

import base64
import io
import json
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evidence_gate.digest import sha256_digest

SERVICE = "twirp/github.actions.results.api.v1.ArtifactService"
MAX_ATTEMPTS = 4
BLOCK_SIZE = 8 << 20  # @actions/artifact's upload chunk size
# A fixed timestamp keeps the zip's bytes (and so its digest) a function of the files alone.
_ZIP_TIME = (2020, 1, 1, 0, 0, 0)


class ArtifactUnavailable(Exception):
    """The runner gave no artifact service (variables missing); the receipt stays on disk."""


class ArtifactError(Exception):
    """The service refused or kept failing."""


@dataclass(frozen=True)
class Uploaded:
    """What the service recorded."""

    artifact_id: str
    size: int
    sha256: str


def backend_ids(token: str) -> tuple[str, str]:
    """(run backend id, job backend id) from the JWT's `scp` claim; the signature is the service's business."""
    parts = token.split(".")
    if len(parts) != 3:
        raise ArtifactError("ACTIONS_RUNTIME_TOKEN is not a JWT")
    payload = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ArtifactError("ACTIONS_RUNTIME_TOKEN has an unreadable payload") from exc
    scp = claims.get("scp") if isinstance(claims, dict) else None
    if not isinstance(scp, str):
        raise ArtifactError("ACTIONS_RUNTIME_TOKEN has no `scp` claim")
    for scope in scp.split(" "):
        fields = scope.split(":")
        if len(fields) == 3 and fields[0] == "Actions.Results" and fields[1] and fields[2]:
            return fields[1], fields[2]
    raise ArtifactError("ACTIONS_RUNTIME_TOKEN carries no Actions.Results scope")


def json_name(proto_name: str) -> str:
    """The lowerCamelCase JSON name proto3 gives a field (`workflow_run_backend_id` -> `workflowRunBackendId`)."""
    head, *rest = proto_name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def answer_field(answer: Mapping[str, Any], proto_name: str) -> Any:
    """A field of a results-service answer under its proto name or its JSON name (a proto3 JSON reader must accept
    both), None when absent; both at once is a malformed answer, as protobuf's own JSON parser holds it."""
    camel = json_name(proto_name)
    if camel != proto_name and proto_name in answer and camel in answer:
        raise ArtifactError(f"the service answered both {proto_name!r} and {camel!r} for one field")
    return answer.get(proto_name, answer.get(camel))


def build_zip(files: Sequence[tuple[str, bytes]]) -> bytes:
    """A deflated zip of (name, bytes) pairs with fixed timestamps."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in files:
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


class ResultsClient:
    """The twirp client and the blob upload, with retries on 5xx, 429 and network errors."""

    def __init__(
        self, results_url: str, token: str, *, sleep: Callable[[float], None] = time.sleep, timeout: float = 60.0
    ) -> None:
        if not results_url.startswith(("https://", "http://")):
            raise ArtifactError(f"ACTIONS_RESULTS_URL is not an http(s) URL: {results_url!r}")
        self._base = results_url.rstrip("/") + "/"
        self._token = token
        self._sleep = sleep
        self._timeout = timeout

    def _send(self, what: str, request: urllib.request.Request, limit: int | None = None) -> bytes:
        """The answer's body (at most `limit` + 1 bytes when a limit is given, so the caller can see it was over)."""
        for attempt in range(1, MAX_ATTEMPTS + 1):
            try:
                with urllib.request.urlopen(request, timeout=self._timeout) as response:  # noqa: S310 - http(s) checked
                    return bytes(response.read() if limit is None else response.read(limit + 1))
            except urllib.error.HTTPError as exc:
                body = exc.read()[:300].decode("utf-8", "replace")
                if not (exc.code >= 500 or exc.code == 429) or attempt == MAX_ATTEMPTS:
                    raise ArtifactError(f"{what}: HTTP {exc.code}: {body}") from exc
                after = (exc.headers.get("Retry-After") or "").strip()
                wait = min(float(after), 60.0) if after.isdigit() else float(2 ** (attempt - 1))
            except (urllib.error.URLError, OSError) as exc:
                if attempt == MAX_ATTEMPTS:
                    raise ArtifactError(f"{what}: {exc}") from exc
                wait = float(2 ** (attempt - 1))
            self._sleep(wait)
        raise AssertionError("unreachable")

    def twirp(self, method: str, body: Mapping[str, Any], *, require_ok: bool = True) -> dict[str, Any]:
        """POST one twirp JSON call and return the decoded answer (List and GetSigned answers carry no `ok`)."""
        request = urllib.request.Request(  # noqa: S310 - the scheme was checked in __init__
            self._base + f"{SERVICE}/{method}",
            data=json.dumps(body).encode(),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Authorization": f"Bearer {self._token}",
                "User-Agent": "evidence-gate",
            },
        )
        raw = self._send(method, request)
        try:
            answer = json.loads(raw)
        except ValueError as exc:
            raise ArtifactError(f"{method}: the answer is not JSON") from exc
        if not isinstance(answer, dict) or (require_ok and answer.get("ok") is not True):
            raise ArtifactError(f"{method}: the service said no: {str(answer)[:300]}")
        return answer

    def put_blocks(self, url: str, data: bytes, block_size: int = BLOCK_SIZE) -> list[str]:
        """Upload the zip to the signed URL as the Azure SDK does for @actions/artifact: one Put Block per chunk, then
        Put Block List naming them in order; the block ids (base64 of a prefix and the index, one length for all)."""
        if not url.startswith(("https://", "http://")):
            raise ArtifactError("CreateArtifact returned a signed URL that is not http(s)")
        prefix = str(uuid.uuid4())
        ids: list[str] = []
        for index, start in enumerate(range(0, len(data), block_size)):
            block_id = base64.b64encode(f"{prefix}{index:06d}".encode()).decode()
            chunk = data[start : start + block_size]
            self._put(_with_query(url, comp="block", blockid=block_id), chunk, {"Content-Type": "application/zip"})
            ids.append(block_id)
        listing = "".join(f"<Latest>{block_id}</Latest>" for block_id in ids)
        body = f'<?xml version="1.0" encoding="utf-8"?><BlockList>{listing}</BlockList>'.encode()
        headers = {"Content-Type": "application/xml; charset=utf-8", "x-ms-blob-content-type": "application/zip"}
        self._put(_with_query(url, comp="blocklist"), body, headers)
        return ids

    def _put(self, url: str, data: bytes, headers: Mapping[str, str]) -> None:
        request = urllib.request.Request(  # noqa: S310 - scheme checked by the caller
            url, data=data, method="PUT", headers={**headers, "Content-Length": str(len(data))}
        )
        self._send("blob upload", request)

    def get_blob(self, url: str, limit: int) -> bytes:
        """Download a signed blob URL; ArtifactError when it is not http(s) or holds more than `limit` bytes."""
        if not url.startswith(("https://", "http://")):
            raise ArtifactError("the service returned a signed URL that is not http(s)")
        request = urllib.request.Request(url, method="GET", headers={"User-Agent": "evidence-gate"})  # noqa: S310
        data = self._send("blob download", request, limit)
        if len(data) > limit:
            raise ArtifactError(f"the artifact is larger than {limit} bytes")
        return data


def _with_query(url: str, **params: str) -> str:
    """The signed URL with `params` added to its query (the signature's own parameters kept as they are)."""
    split = urllib.parse.urlsplit(url)
    extra = "&".join(f"{key}={urllib.parse.quote(value, safe='')}" for key, value in params.items())
    return urllib.parse.urlunsplit(split._replace(query=f"{split.query}&{extra}" if split.query else extra))


def upload(
    env: Mapping[str, str],
    name: str,
    files: Sequence[tuple[str, bytes]],
    *,
    sleep: Callable[[float], None] = time.sleep,
    block_size: int = BLOCK_SIZE,
) -> Uploaded:
    """Zip `files` and upload them as artifact `name`; ArtifactUnavailable when the runner offers no service."""
    token = env.get("ACTIONS_RUNTIME_TOKEN", "")
    results_url = env.get("ACTIONS_RESULTS_URL", "")
    if not token or not results_url:
        missing = [k for k, v in (("ACTIONS_RUNTIME_TOKEN", token), ("ACTIONS_RESULTS_URL", results_url)) if not v]
        raise ArtifactUnavailable(f"{' and '.join(missing)} not set")
    run_id, job_id = backend_ids(token)
    client = ResultsClient(results_url, token, sleep=sleep)
    ids = {"workflow_run_backend_id": run_id, "workflow_job_run_backend_id": job_id, "name": name}
    created = client.twirp("CreateArtifact", {**ids, "version": 4})
    signed = answer_field(created, "signed_upload_url")
    if not isinstance(signed, str):
        raise ArtifactError("CreateArtifact returned no signed_upload_url")
    data = build_zip(files)
    digest = sha256_digest(data)
    client.put_blocks(signed, data, block_size)
    final = client.twirp("FinalizeArtifact", {**ids, "size": str(len(data)), "hash": digest})
    artifact_id = answer_field(final, "artifact_id")
    return Uploaded("" if artifact_id is None else str(artifact_id), len(data), digest)
