"""The files the action writes beside the receipt — SARIF for code scanning, the in-toto Statement — and the step
outputs that name them, including what `actions/attest` needs in its custom-predicate mode."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from evidence_gate import attestation
from evidence_gate.digest import sha256_digest
from evidence_gate.receipt import write_atomic
from evidence_gate.report import Context, render

# Every output this module sets; each is written on every path ("" when there is no such file).
OUTPUTS = (
    "sarif-path",
    "attestation-path",
    "attestation-subject-name",
    "attestation-subject-digest",
    "attestation-predicate-type",
    "attestation-predicate-path",
)


def sarif_path(receipt_path: Path) -> Path:
    """`receipt.json` → `receipt.sarif` in the same folder."""
    stem = receipt_path.name[: -len(".json")] if receipt_path.name.endswith(".json") else receipt_path.name
    return receipt_path.with_name(stem + ".sarif")


def _shown(receipt_shown: str, receipt_file: Path, other: Path) -> str:
    """The path later steps know `other` by: the receipt's shown path with the file name swapped."""
    if receipt_shown.endswith(receipt_file.name):
        return receipt_shown[: len(receipt_shown) - len(receipt_file.name)] + other.name
    return str(other)


def empty() -> dict[str, str]:
    """The outputs of a run that wrote none of these files."""
    return dict.fromkeys(OUTPUTS, "")


def write(
    receipt: dict[str, Any], receipt_file: Path, receipt_shown: str, docs: str | None, commit: str | None
) -> tuple[dict[str, str], list[str]]:
    """Write the SARIF log and the Statement beside the receipt file; the outputs, and what could not be written."""
    out, problems = empty(), []
    sarif = sarif_path(receipt_file)
    try:
        write_atomic(sarif, render("sarif", receipt, Context(docs=docs)).encode("utf-8"))
        out["sarif-path"] = _shown(receipt_shown, receipt_file, sarif)
    except OSError as exc:
        problems.append(f"the SARIF file could not be written at {sarif} ({exc.strerror or exc})")
    try:
        data = receipt_file.read_bytes()
        statement = attestation.write_beside(receipt_file, commit=commit)
    except (OSError, ValueError) as exc:
        problems.append(f"the in-toto Statement could not be written beside {receipt_file} ({exc})")
        return out, problems
    if statement is not None:
        out["attestation-path"] = _shown(receipt_shown, receipt_file, statement)
        out["attestation-subject-name"] = receipt_file.name
        out["attestation-subject-digest"] = sha256_digest(data)
        out["attestation-predicate-type"] = attestation.PREDICATE_TYPE
        out["attestation-predicate-path"] = receipt_shown
    return out, problems


def artifact_files(receipt_file: Path, outputs: dict[str, str]) -> list[tuple[str, bytes]]:
    """The side files this run wrote, as (name in the artifact, bytes), read back through no link."""
    written = [
        (sarif_path(receipt_file), bool(outputs.get("sarif-path"))),
        (attestation.statement_path(receipt_file), bool(outputs.get("attestation-path"))),
    ]
    out: list[tuple[str, bytes]] = []
    for path, wrote in written:
        if not wrote:
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as handle:
            out.append((path.name, handle.read()))
    return out
