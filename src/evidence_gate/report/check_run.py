"""Everything the check run shows, from the receipt: conclusion, title, summary, text and annotations.

Pure: no PyGithub, no network. `checks_api` sends what `build` returns; `action` passes in the links it knows.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from evidence_gate import decision, visible
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import delta as receipt_delta
from evidence_gate.receipt.types import SeedLedgerJson, ViolationJson
from evidence_gate.report import gfm, job_summary, markdown_limits, reproduce
from evidence_gate.report import properties as property_report
from evidence_gate.report import row_docs as report_rows
from evidence_gate.report.job_summary import Links
from evidence_gate.row_ids import HUMAN_PATCH

MESSAGE_BYTES = 64 * 1024 - 1024  # the API's 64 KB per annotation message and raw_details, with room to spare


def _cut_bytes(text: str, limit: int = MESSAGE_BYTES) -> str:
    data = text.encode("utf-8", "backslashreplace")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore") + "…"


@dataclass(frozen=True)
class Annotation:
    """One check-run annotation (a violation with a path)."""

    path: str
    line: int
    message: str
    title: str
    level: str = "failure"
    raw_details: str = ""

    def to_json(self) -> dict[str, Any]:
        """The API's form; message and details are cut to the API's 64 KB."""
        out: dict[str, Any] = {
            "path": self.path,
            "start_line": self.line,
            "end_line": self.line,
            "annotation_level": self.level,
            "message": _cut_bytes(self.message),
            "title": self.title[:255],
        }
        if self.raw_details:
            out["raw_details"] = _cut_bytes(self.raw_details)
        return out


@dataclass(frozen=True)
class CheckReport:
    """The completed check run's fields."""

    conclusion: str
    title: str
    summary: str
    text: str
    annotations: tuple[Annotation, ...]


def conclusion(receipt: Mapping[str, Any]) -> str:
    """pass → success, human-patch → neutral (passes a required check, says it was not scored), else failure."""
    if receipt.get("state") == "final" and receipt.get("ok") is True:
        return "neutral" if receipt_access.decision_row(receipt) == HUMAN_PATCH else "success"
    return "failure"


def _row_title(row: str) -> str:
    try:
        return decision.row(row).title
    except KeyError:
        return row


def _property_annotation(
    receipt: Mapping[str, Any], ledger: SeedLedgerJson, v: ViolationJson, level: str
) -> Annotation:
    """A failing property on its failing line (the ledger's `failure`, else the finding's line, else line 1)."""
    failure = property_report.failure_of(ledger)
    path = str(failure["path"]) if failure else str(v["path"])
    line = int(failure["line"]) if failure else int(v.get("line") or 1)
    seed = ledger["failing_seed"]
    assert seed is not None  # property_report.failing keeps only ledgers with a failing seed
    node = str(ledger.get("property_id"))
    said = property_report.in_words(str(v.get("message"))).removeprefix(node.rsplit("::", 1)[0] + "::")
    parts = [said.split(" (", 1)[0]]  # the example follows as its own line
    example = property_report.minimal_example(ledger)
    if example:
        short = property_report.one_line_example(example, 120)
        parts.append(f"Minimal example: {short}" if short else f"Minimal example:\n{example}")
    if failure and failure.get("exception"):
        parts.append(str(failure["exception"]))
    details = [f"Reproduce seed {seed} from the repository root:", reproduce.for_ledger(receipt, ledger, seed)]
    return Annotation(
        path=visible.line(path),
        line=max(line, 1),
        message=_lines(parts),
        title=f"{_row_title(str(v['row']))} on seed {seed} [{v['row']}]",
        level=level,
        raw_details=_lines(details),
    )


def _patch_annotations(ledger: SeedLedgerJson, v: ViolationJson, level: str) -> list[Annotation]:
    """The failing property again on each line of the pull request's diff its failing example ran through."""
    failure = property_report.failure_of(ledger)
    node = str(ledger.get("property_id")).rsplit("::", 1)[-1]
    return [
        Annotation(
            path=visible.line(hit["path"]),
            line=hit["line"],
            message=visible.line(
                f"{node} failed (seed {ledger['failing_seed']}) and its failing example ran this line, which the "
                f"pull request changed; the assertion is {failure['path'] if failure else v.get('path')}:"
                f"{failure['line'] if failure else v.get('line')}"
            ),
            title=f"{_row_title(str(v['row']))}: the patch's line [{v['row']}]",
            level=level,
        )
        for hit in property_report.patch_lines(ledger)
    ]


def _lines(parts: list[str]) -> str:
    """Multi-line text for the API: each line printable, the line breaks kept."""
    return "\n".join(visible.line(line) for part in parts for line in part.split("\n"))


def annotations_for(receipt: Mapping[str, Any], limit: int | None = None) -> list[Annotation]:
    """One annotation per violation with a path: failing properties first, on their failing line; a human
    patch's findings as notices. At most `limit` when given."""
    level = (
        "notice"
        if (receipt.get("mode") or {}).get("scored") is False or receipt_access.decision_row(receipt) == HUMAN_PATCH
        else "failure"
    )
    by_node = {str(x.get("property_id")): x for x in property_report.failing(receipt)}
    first: list[Annotation] = []
    rest: list[Annotation] = []
    for found in report_rows.violations_by_lane(receipt).values():
        for v in found:
            if not v.get("path"):
                continue
            message = str(v.get("message", ""))
            ledger = (
                next((x for n, x in by_node.items() if message.startswith(n)), None)
                if v.get("row") in property_report.FAILED_ROWS
                else None
            )
            if ledger is not None:
                first += _patch_annotations(ledger, v, level)
                first.append(_property_annotation(receipt, ledger, v, level))
                continue
            rest.append(
                Annotation(
                    path=visible.line(str(v["path"])),
                    line=int(v.get("line") or 1),
                    message=visible.line(message),  # the title names the row
                    title=f"{_row_title(str(v['row']))} [{v['row']}]",
                    level=level,
                )
            )
    out = first + rest
    return out if limit is None else out[: max(limit, 0)]


def build(
    receipt: Mapping[str, Any],
    receipt_sha256: str,
    *,
    notes: tuple[str, ...] = (),
    links: Links | None = None,
    max_annotations: int | None = None,
    delta: receipt_delta.Delta | None = None,
) -> CheckReport:
    """The check run's fields within the API's limits (65,535 characters of summary and of text)."""
    found = annotations_for(receipt)
    shown = found if max_annotations is None else found[: max(max_annotations, 0)]
    extra = notes
    note = cap_note(len(found), max_annotations)
    if note and note not in notes:
        extra = (*notes, note)
    summary = markdown_limits.truncate_chars(job_summary.summary(receipt, receipt_sha256, extra, links, delta))
    text = markdown_limits.truncate_chars(job_summary.details(receipt, receipt_sha256, links))
    return CheckReport(conclusion(receipt), job_summary.title(receipt), summary, text, tuple(shown))


def cap_note(found: int, max_annotations: int | None) -> str:
    """What `max-annotations` left out, or "" when it left nothing out."""
    if max_annotations is None or found <= max(max_annotations, 0):
        return ""
    return (
        f"{found - max(max_annotations, 0)} of {found} annotations were left out (max-annotations: "
        f"{max_annotations}); the summary and the receipt list every finding"
    )


def links_from(
    env: Mapping[str, str],
    repository: str,
    receipt: Mapping[str, Any],
    artifact_id: str = "",
    head: str | None = None,
) -> Links:
    """The links the runner's variables allow: README of the action's own repository and ref (none for `uses: ./`,
    whose README is the caller's; `EVIDENCE_GATE_DOCS_URL` overrides it), the artifact page once uploaded, and the
    files of the pull request's head (`head`, the event's `pull_request.head.sha`; the receipt's head commit
    without one — for a pull request that is the test merge commit, which changes on every push) and of the
    baseline."""
    server = str(env.get("GITHUB_SERVER_URL") or "").rstrip("/")
    if not server.startswith(("https://", "http://")):
        return Links()
    action_repo, action_ref = env.get("GITHUB_ACTION_REPOSITORY") or "", env.get("GITHUB_ACTION_REF") or ""
    docs = f"{server}/{action_repo}/blob/{gfm.url_path(action_ref)}/README.md" if action_repo and action_ref else None
    override = str(env.get("EVIDENCE_GATE_DOCS_URL") or "")  # e.g. set by a release's action.yml `runs.env`
    if override.startswith("https://"):
        docs = override.split("#", 1)[0]
    run_id = env.get("GITHUB_RUN_ID") or ""
    artifact = (
        f"{server}/{repository}/actions/runs/{run_id}/artifacts/{artifact_id}"
        if repository and run_id.isdigit() and artifact_id.isdigit()
        else None
    )
    git = receipt.get("git") or {}

    def blob(sha: str) -> str | None:
        return f"{server}/{repository}/blob/{sha}" if repository and _SHA.fullmatch(sha) else None

    shown = head if head and _SHA.fullmatch(head) else str(git.get("head") or "")
    return Links(docs=docs, artifact=artifact, blob=blob(shown), base_blob=blob(str(git.get("baseline") or "")))


_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
