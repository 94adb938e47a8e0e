"""The files the action writes beside the receipt — SARIF for code scanning, the in-toto Statement — and the step
outputs that name them, including what `actions/attest` needs in its custom-predicate mode."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evidence_gate.digest import sha256_digest
from evidence_gate.receipt.write import write_atomic
from evidence_gate.report import attestation
from evidence_gate.report.registry import Context, render

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


@dataclass(frozen=True)
class SideFiles:
    """What `write` did: the step outputs, what could not be written, and each written file's (name, bytes)."""

    outputs: dict[str, str]
    problems: list[str]
    files: list[tuple[str, bytes]]


def write(
    receipt: Mapping[str, Any], receipt_file: Path, receipt_shown: str, docs: str | None, commit: str | None
) -> SideFiles:
    """Write the SARIF log and the Statement beside the receipt file; the outputs, the problems and the files."""
    out, problems, files = empty(), [], []
    sarif = sarif_path(receipt_file)
    log = render("sarif", receipt, Context(docs=docs)).encode("utf-8")
    try:
        write_atomic(sarif, log)
        out["sarif-path"] = _shown(receipt_shown, receipt_file, sarif)
        files.append((sarif.name, log))
    except OSError as exc:
        problems.append(f"the SARIF file could not be written at {sarif} ({exc.strerror or exc})")
    try:
        data = receipt_file.read_bytes()
        statement = attestation.write_beside(receipt_file, commit=commit, receipt_bytes=data)
    except (OSError, ValueError) as exc:
        problems.append(f"the in-toto Statement could not be written beside {receipt_file} ({exc})")
        return SideFiles(out, problems, files)
    if statement is not None:
        path, encoded = statement
        files.append((path.name, encoded))
        out["attestation-path"] = _shown(receipt_shown, receipt_file, path)
        out["attestation-subject-name"] = receipt_file.name
        out["attestation-subject-digest"] = sha256_digest(data)
        out["attestation-predicate-type"] = attestation.PREDICATE_TYPE
        out["attestation-predicate-path"] = receipt_shown
    return SideFiles(out, problems, files)
