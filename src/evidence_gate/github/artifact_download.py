"""Artifact download from inside the container: the results service's ListArtifacts and GetSignedArtifactURL, and
the receipt read out of an artifact zip under size caps.

The twirp shapes follow `results/api/v1/artifact.proto` as @actions/artifact v2 speaks it (JSON with the proto field
names; int64 values are JSON strings, wrapper types are bare values); answers are read under either proto3 JSON name
(`database_id` or `databaseId`), as act's, Gitea's and Forgejo's services answer the lowerCamelCase ones. ListArtifacts is asked with this job's backend
ids and answers every artifact of the run; GetSignedArtifactURL is asked with the artifact's own ids.
"""

from __future__ import annotations

import io
import time
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from evidence_gate.digest import sha256_digest
from evidence_gate.errors import InputInvalid
from evidence_gate.github.artifact_upload import (
    ArtifactError,
    ArtifactUnavailable,
    ResultsClient,
    answer_field,
    backend_ids,
)
from evidence_gate.receipt.types import ReceiptJson
from evidence_gate.receipt.write import MAX_RECEIPT, validate
from evidence_gate.strict_parse import load_json

MAX_ZIP = 4 << 20  # an artifact holding one receipt and its text report; anything larger is not ours
MAX_INFLATED = 4 * MAX_ZIP  # every member together, inflated: receipt, report, SARIF, Statement, history picture
RECEIPT_MEMBER = "receipt.json"


class ReceiptUnusable(Exception):
    """The artifact does not hold one well-formed, final receipt; the message says what is wrong with it."""


@dataclass(frozen=True)
class Listed:
    """One artifact of the run, as ListArtifacts describes it."""

    name: str
    artifact_id: str
    size: int
    digest: str | None
    run_backend_id: str
    job_backend_id: str


def _digits(value: Any) -> int | None:
    text = str(value) if isinstance(value, int | str) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() else None


def _listed(raw: Any) -> Listed:
    if not isinstance(raw, dict):
        raise ArtifactError("ListArtifacts answered an artifact that is not an object")
    name = answer_field(raw, "name")
    run_id, job_id = answer_field(raw, "workflow_run_backend_id"), answer_field(raw, "workflow_job_run_backend_id")
    size = answer_field(raw, "size")
    artifact_id, size = _digits(answer_field(raw, "database_id")), _digits("0" if size is None else size)
    if not (isinstance(name, str) and isinstance(run_id, str) and isinstance(job_id, str)) or None in (
        artifact_id,
        size,
    ):
        raise ArtifactError(f"ListArtifacts answered an artifact without name, ids or size: {str(raw)[:200]}")
    digest = answer_field(raw, "digest")
    return Listed(
        name, str(artifact_id), int(size or 0), digest if isinstance(digest, str) and digest else None, run_id, job_id
    )


def client_for(
    env: Mapping[str, str], *, sleep: Callable[[float], None] = time.sleep
) -> tuple[ResultsClient, tuple[str, str]]:
    """A results-service client and this job's (run, job) backend ids; ArtifactUnavailable without the service."""
    token = env.get("ACTIONS_RUNTIME_TOKEN", "")
    results_url = env.get("ACTIONS_RESULTS_URL", "")
    if not token or not results_url:
        missing = [k for k, v in (("ACTIONS_RUNTIME_TOKEN", token), ("ACTIONS_RESULTS_URL", results_url)) if not v]
        raise ArtifactUnavailable(f"{' and '.join(missing)} not set")
    return ResultsClient(results_url, token, sleep=sleep), backend_ids(token)


def list_run_artifacts(client: ResultsClient, ids: tuple[str, str]) -> list[Listed]:
    """Every artifact of this workflow run; of several with one name (re-run attempts) the newest, by id."""
    answer = client.twirp(
        "ListArtifacts", {"workflow_run_backend_id": ids[0], "workflow_job_run_backend_id": ids[1]}, require_ok=False
    )
    raw = answer_field(answer, "artifacts")
    raw = [] if raw is None else raw
    if not isinstance(raw, list):
        raise ArtifactError("ListArtifacts answered no artifact list")
    newest: dict[str, Listed] = {}
    for item in map(_listed, raw):
        if item.name not in newest or int(item.artifact_id) > int(newest[item.name].artifact_id):
            newest[item.name] = item
    return sorted(newest.values(), key=lambda a: a.name)


def download(client: ResultsClient, item: Listed, limit: int = MAX_ZIP) -> bytes:
    """The artifact's zip, read no further than the gate's own `limit`, and equal to the digest the uploader recorded
    when the service has one. The size the service lists is not checked here: services compute it their own way
    (act lists its folder's 4096), so the caller proves the bytes by their content and records a disagreeing size."""
    answer = client.twirp(
        "GetSignedArtifactURL",
        {
            "workflow_run_backend_id": item.run_backend_id,
            "workflow_job_run_backend_id": item.job_backend_id,
            "name": item.name,
        },
        require_ok=False,
    )
    url = answer_field(answer, "signed_url")
    if not isinstance(url, str) or not url:
        raise ArtifactError(f"GetSignedArtifactURL returned no signed_url for {item.name}")
    data = client.get_blob(url, limit)
    digest = sha256_digest(data)
    if item.digest is not None and item.digest != digest:
        raise ArtifactError(f"artifact {item.name}: downloaded {digest}, the service recorded {item.digest}")
    return data


def size_note(item: Listed, data: bytes) -> str | None:
    """What to record when the size the service listed is not the size downloaded (None when they agree)."""
    if item.size == len(data):
        return None
    return (
        f"the results service listed {item.size} bytes for artifact {item.name}; {len(data)} were downloaded and "
        "the receipt was proved by its content (zip CRCs, schema, shard, commits, configuration)"
    )


def _check_members(archive: zipfile.ZipFile) -> None:
    """Inflate every member, within MAX_INFLATED bytes declared in all, so each CRC-32 is checked: a truncated or
    altered zip is refused whichever member it hits."""
    members = archive.infolist()
    declared = sum(i.file_size for i in members)
    if declared > MAX_INFLATED:
        raise ReceiptUnusable(f"the artifact's members declare {declared} bytes, over the {MAX_INFLATED}-byte cap")
    for info in members:
        try:
            with archive.open(info) as handle:
                while handle.read(1 << 16):
                    pass
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError) as exc:
            raise ReceiptUnusable(f"member `{info.filename}` of the artifact does not inflate intact ({exc})") from exc


def receipt_from_zip(data: bytes, limit: int = MAX_RECEIPT, member: str = RECEIPT_MEMBER) -> tuple[ReceiptJson, bytes]:
    """The final, schema-valid receipt in an artifact zip (`member`, default `receipt.json`), and its bytes;
    ReceiptUnusable naming what is wrong.

    The member's declared size is checked before it is inflated and the read is bounded, so a zip bomb or a lying
    header costs at most `limit` bytes.
    """
    value, raw = _json_member(data, limit, member)
    problems = validate(value)
    if problems:
        raise ReceiptUnusable(f"`{member}` breaks the receipt schema: {problems[0]}")
    if value.get("state") != "final":
        errors = value.get("errors") or ["no error recorded"]
        raise ReceiptUnusable(f"the receipt is not final: the gate aborted ({str(errors[0])[:200]})")
    return cast(ReceiptJson, value), raw  # schema-valid and final: where a downloaded receipt becomes typed


def index_from_zip(data: bytes, limit: int = MAX_RECEIPT) -> tuple[dict[str, Any], dict[str, ReceiptJson]] | None:
    """With contexts: the shard's index (`receipt.json`) and each judged context's receipt it names, by context,
    each checked against the digest the index records; None when `receipt.json` is one receipt."""
    from evidence_gate.config import schema_errors  # noqa: PLC0415
    from evidence_gate.contexts import is_index  # noqa: PLC0415 - only contexts write an index

    index, _raw = _json_member(data, limit, RECEIPT_MEMBER)
    if not is_index(index):
        return None
    problems = schema_errors(index, "receipt-index.schema.json")
    if problems or index.get("state") != "final":
        raise ReceiptUnusable(f"`{RECEIPT_MEMBER}` is not a final index: {problems[0] if problems else 'aborted'}")
    out: dict[str, ReceiptJson] = {}
    for row in index["contexts"]:
        if row["judged"]:
            member = str(row["receipt"])
            receipt, got = receipt_from_zip(data, limit, member)
            judges = receipt.get("context")
            if sha256_digest(got) != row["sha256"] or (judges["name"] if judges else None) != row["context"]:
                raise ReceiptUnusable(f"`{member}` is not the receipt of context {row['context']} its index records")
            out[str(row["context"])] = receipt
    return index, out


def _json_member(data: bytes, limit: int, member: str) -> tuple[dict[str, Any], bytes]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise ReceiptUnusable(f"the artifact is not a readable zip ({exc})") from exc
    with archive:
        _check_members(archive)
        members = [i for i in archive.infolist() if i.filename == member]
        if len(members) != 1:
            raise ReceiptUnusable(f"the artifact holds {len(members)} `{member}` entries, not one")
        (info,) = members
        if info.file_size > limit:
            raise ReceiptUnusable(f"`{member}` is {info.file_size} bytes, over the {limit}-byte cap")
        try:
            with archive.open(info) as handle:
                raw = handle.read(limit + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, OSError) as exc:
            raise ReceiptUnusable(f"`{member}` cannot be inflated ({exc})") from exc
    if len(raw) > limit:
        raise ReceiptUnusable(f"`{member}` inflates past the {limit}-byte cap")
    try:
        value = load_json(raw)
    except InputInvalid as exc:
        raise ReceiptUnusable(f"`{member}` is not strict JSON ({exc})") from exc
    if not isinstance(value, dict):
        raise ReceiptUnusable(f"`{member}` is not a JSON object")
    return value, raw


__all__ = [
    "MAX_RECEIPT",
    "MAX_ZIP",
    "ArtifactError",
    "ArtifactUnavailable",
    "Listed",
    "ReceiptUnusable",
    "client_for",
    "download",
    "list_run_artifacts",
    "receipt_from_zip",
    "size_note",
]
