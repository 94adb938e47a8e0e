"""An in-toto Statement v1 beside the receipt, ready to be signed (`actions/attest`, cosign, in-toto tooling).

Subjects: the judged head commit (`gitCommit`) and the receipt file (the sha256 of its bytes on disk); the
predicate is the receipt itself, under `PREDICATE_TYPE`. The Statement is built from the file as written, so it
always describes the bytes a later step uploads or signs, and a stale Statement never outlives its receipt.
"""

from __future__ import annotations

import json
import re

from evidence_gate.digest import hex_digest
from evidence_gate.receipt.write import write_atomic

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
# The gate's own type identifier (in-toto TypeURI: lower-case scheme and host, versioned). It names the receipt
# format `evidence-gate/receipt/v1`; it is an identifier, not a link, and stays the same for every v1 receipt.
PREDICATE_TYPE = "https://github.com/evidence-gate/evidence-gate/receipt/v1"
SUFFIX = ".intoto.json"
COMMIT_NAME = "head-commit"  # the subject name of the commit (in-toto leaves names to the producer)
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


def statement_path(receipt_path: Path) -> Path:
    """`receipt.json` → `receipt.intoto.json` in the same folder (any other name gets the suffix appended)."""
    stem = receipt_path.name[: -len(".json")] if receipt_path.name.endswith(".json") else receipt_path.name
    return receipt_path.with_name(stem + SUFFIX)


def statement(receipt_bytes: bytes, receipt_name: str, commit: str | None = None) -> dict[str, Any] | None:
    """The Statement for a receipt's exact bytes; None when the receipt names no head commit (nothing to attest).

    `commit` is the pull request's head (the commit the check run is posted on) when the caller knows it from the
    event; without it, the judged commit `git.head`.
    """
    receipt = json.loads(receipt_bytes)
    head = (receipt.get("git") or {}).get("head") if isinstance(receipt, dict) else None
    if not isinstance(head, str) or not _COMMIT.fullmatch(head):
        return None
    named = commit if commit is not None else head
    if not _COMMIT.fullmatch(named):
        raise ValueError(f"{named!r} is not a full commit id")
    return {
        "_type": STATEMENT_TYPE,
        "subject": [
            {"name": COMMIT_NAME, "digest": {"gitCommit": named}},
            {"name": receipt_name, "digest": {"sha256": hex_digest("sha256", receipt_bytes)}},
        ],
        "predicateType": PREDICATE_TYPE,
        "predicate": receipt,
    }


def write_beside(
    receipt_path: Path, commit: str | None = None, receipt_bytes: bytes | None = None
) -> tuple[Path, bytes] | None:
    """Write the Statement of the receipt on disk beside it; remove a stale one when there is nothing to attest.

    `receipt_bytes` are the receipt file's bytes when the caller holds them already. Returns the Statement's path
    and bytes, or None when the receipt names no head commit. OSError (and ValueError for a commit that is not a
    full id) propagate: the caller says what could not be written.
    """
    target = statement_path(receipt_path)
    data = receipt_path.read_bytes() if receipt_bytes is None else receipt_bytes
    made = statement(data, receipt_path.name, commit)
    if made is None:
        target.unlink(missing_ok=True)
        return None
    encoded = (json.dumps(made, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")
    write_atomic(target, encoded)
    return target, encoded
