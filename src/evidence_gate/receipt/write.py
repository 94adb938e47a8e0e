"""The receipt: built from lane results, validated against its schema, written atomically."""

from __future__ import annotations

import json
import os

from evidence_gate import __version__, decision
from evidence_gate.config import schema_errors
from evidence_gate.digest import sha256_digest
from evidence_gate.visible import encodable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from evidence_gate.model import Violation
    from evidence_gate.receipt.types import ReceiptJson

SCHEMA_ID = "evidence-gate/receipt/v1"
# The most bytes any reader takes of one receipt or index file (`merge`, the action's shard download, `--previous`).
MAX_RECEIPT = 1 << 20


def empty_receipt() -> ReceiptJson:
    """A receipt with every required field at its 'nothing known yet' value."""
    return {
        "schema": SCHEMA_ID,
        "version": __version__,
        "state": "aborted",
        "ok": False,
        "decision": {"row": "aborted", "gate": "fail", "title": "The gate did not finish", "matched": []},
        "git": {"baseline": None, "head": None, "merge_base": None},
        "config": {"path": ".evidence-gate.yml", "blob": None},
        "violations": [],
        "freeze": {"file": "freeze.yaml", "added": [], "removed": [], "file_sha256": None},
        "fixtures": {"tree": None, "digests": []},
        "properties": {
            "list_sha256": None,
            "ledgers": [],
            "counts": {"open": 0, "closed_failures": 0, "budget_passes": 0},
        },
        "errors": [],
    }


def finalise(
    receipt: ReceiptJson, violations: list[Violation], facts: frozenset[str] = frozenset()
) -> decision.Decision:
    """Decide `violations` (with `facts`) and make `receipt` final on that decision: its violations, decision, state
    and ok. Every receipt that carries a verdict gets it here (the gate, a precondition, a merge of shards, the
    publisher); returns the decision."""
    result = decision.decide(violations, facts)
    receipt["violations"] = [v.to_json() for v in violations]
    receipt["decision"] = result.to_json()
    receipt["state"] = "final"
    receipt["ok"] = result.ok
    return result


def scrub(value: Any) -> Any:
    """A copy of a JSON value whose every string encodes (`visible.encodable`: bytes that were not UTF-8, from argv
    and paths, spelled `\\xff`); clean values come back as is."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict):
        return {encodable(k) if isinstance(k, str) else k: scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub(v) for v in value]
    return value


def validate(receipt: object) -> list[str]:
    """Schema problems of a receipt (a writer's, or JSON read back from a file); empty when valid."""
    return schema_errors(receipt, "receipt.schema.json")


def canonical_bytes(receipt: Mapping[str, object]) -> bytes:
    """The exact bytes written to disk (sorted keys, two-space indent, trailing newline): of a receipt, or of an
    index of context receipts."""
    return (json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def sha256_of(receipt: ReceiptJson) -> str:
    """`sha256:` digest of the receipt as written."""
    return sha256_digest(canonical_bytes(receipt))


def _exclusive_temp(path: Path) -> tuple[int, Path]:
    """A new file beside `path` that no one else created (`O_EXCL`, mode 0600, a random name, no link followed):
    what `tempfile.mkstemp` does, without importing tempfile, shutil, lzma and bz2 on every run."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.urandom(6).hex()}")
        try:
            return os.open(tmp, flags, 0o600), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def write_atomic(path: Path, data: bytes) -> None:
    """Write through a temporary file in the same folder, fsync, then rename over `path`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _exclusive_temp(path)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fchmod(handle.fileno(), 0o644)  # on the open file: the name could be swapped for a link meanwhile
            os.fsync(handle.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_receipt(path: Path, receipt: ReceiptJson) -> None:
    """Validate and write; an invalid receipt is written as `aborted` with the schema errors, never dropped."""
    receipt = scrub(receipt)
    problems = validate(receipt)
    if problems:
        broken = empty_receipt()
        if isinstance(receipt.get("git"), dict):
            broken["git"] = receipt["git"]
        broken["errors"] = [f"internal: receipt failed its schema: {p}" for p in problems[:20]]
        receipt = broken
    write_atomic(path, canonical_bytes(receipt))
