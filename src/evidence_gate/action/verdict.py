"""Post a finished receipt the way `mode: gate` does: receipt file, log, artifact, check run, summary, outputs.

Used by `mode: merge` and `mode: publish`, whose receipt does not come out of `gate.evaluate` in this job. The
check run is found again by its external id, so a re-run of the job updates the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from evidence_gate import visible
from evidence_gate.action import files as action_files
from evidence_gate.action.workflow_commands import COMMAND_LEVEL, annotation, append_outputs, command, log_text
from evidence_gate.digest import sha256_digest
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import delta as receipt_delta
from evidence_gate.receipt.types import ReceiptJson
from evidence_gate.receipt.write import scrub, write_receipt
from evidence_gate.report import check_run as check_report
from evidence_gate.report import job_summary, markdown_limits
from evidence_gate.report.registry import render_text


class Reporter(Protocol):
    """What the action run offers: its environment, where it prints, how it sleeps, its notes."""

    env: Mapping[str, str]
    notes: list[str]
    sleep: Callable[[float], None]

    def say(self, line: str) -> None:
        """Print one line to the log."""

    def warn_once(self, message: str) -> None:
        """Print a warning and keep it for the summary."""


@dataclass(frozen=True)
class Target:
    """Where the verdict goes."""

    repository: str
    check_sha: str
    check_name: str
    token: str
    receipt_path: Path
    receipt_path_input: str
    upload_name: str | None  # None: no artifact
    delta_artifact: str | None = None  # the base branch's last receipt is this artifact; None: no delta
    base_branch: str = ""  # its name, for the delta's heading ("" when unknown)


def previous_delta(
    run: Reporter, receipt: Mapping[str, Any], repository: str, artifact_name: str, token: str, branch: str
) -> receipt_delta.Delta | None:
    """The change since the base branch's last receipt (see `previous_receipt`), for every mode that posts a
    verdict; None when there is none to ask for or none was found. Like the ledger picture it is extra: a failure
    is a `no delta (why)`, never a changed verdict."""
    baseline = (receipt.get("git") or {}).get("baseline")
    if receipt.get("state") != "final" or not isinstance(baseline, str) or not baseline or not repository:
        return None
    if not token:
        return None
    branch = branch or "the base branch"
    try:
        from evidence_gate.github import previous_receipt  # noqa: PLC0415 - requests loads only when the API is used
        from evidence_gate.github.run_artifacts import Rest  # noqa: PLC0415

        rest = Rest(run.env.get("GITHUB_API_URL") or "https://api.github.com", token, sleep=run.sleep)
        return previous_receipt.delta(rest, repository, artifact_name, baseline, receipt, branch)
    except Exception as exc:  # noqa: BLE001 - the verdict never depends on the delta
        return receipt_delta.Delta(f"{branch}'s last receipt", why_not=f"{type(exc).__name__}: {str(exc)[:300]}")


def _upload(run: Reporter, name: str, data: bytes, text: str, side: list[tuple[str, bytes]]) -> str:
    from evidence_gate.github import artifact_upload  # noqa: PLC0415

    files = [("receipt.json", data), ("report.txt", text.encode("utf-8")), *side]
    try:
        done = artifact_upload.upload(run.env, name, files, sleep=run.sleep)
    except Exception as exc:  # noqa: BLE001 - unavailable, refused or a client bug: the receipt is still on disk
        run.warn_once(f"artifact {name} not uploaded ({exc})")
        return ""
    run.say(command("notice", f"receipt uploaded as artifact {name} ({done.size} bytes, {done.sha256})"))
    return done.artifact_id


def _check_run(
    run: Reporter, target: Target, report: check_report.CheckReport, now: Callable[[], datetime]
) -> int | None:
    """Create or reuse the check run and complete it; None (after one warning) when that is not possible."""
    if not target.token or not target.repository:
        run.warn_once("no github-token or repository: no check run; the verdict is this step's exit code")
        return None
    try:
        from evidence_gate.github import checks_api  # noqa: PLC0415 - PyGithub loads only when the API is used

        client = checks_api.ChecksClient(
            target.token, run.env.get("GITHUB_API_URL") or "https://api.github.com", target.repository, sleep=run.sleep
        )
        ext = checks_api.external_id(target.repository, target.check_sha, target.check_name)
        details = None
        if run.env.get("GITHUB_SERVER_URL") and run.env.get("GITHUB_RUN_ID"):
            details = f"{run.env['GITHUB_SERVER_URL']}/{target.repository}/actions/runs/{run.env['GITHUB_RUN_ID']}"
        run_id = client.start(target.check_name, target.check_sha, ext, now(), details)
        client.complete(
            run_id, report.conclusion, report.title, report.summary, report.annotations, now(), text=report.text
        )
    except Exception as exc:  # noqa: BLE001 - 403, API failures or a client bug: the exit code carries the verdict
        run.warn_once(
            f"could not post the check run ({type(exc).__name__}: {exc}); the verdict is this step's "
            "exit code and the annotations are printed as workflow commands"
        )
        return None
    return run_id


def post(run: Reporter, target: Target, receipt: ReceiptJson, now: Callable[[], datetime]) -> int:
    """Write, log, upload and post `receipt`; returns the exit code its decision carries."""
    receipt = scrub(receipt)
    write_receipt(target.receipt_path, receipt)
    data = target.receipt_path.read_bytes()
    digest = sha256_digest(data)
    delta = None
    if target.delta_artifact is not None:
        delta = previous_delta(run, receipt, target.repository, target.delta_artifact, target.token, target.base_branch)
    text = render_text(receipt, delta=delta)
    for line in text.splitlines():
        run.say(log_text(line))
    docs = check_report.links_from(run.env, target.repository, receipt).docs
    side = action_files.write(receipt, target.receipt_path, target.receipt_path_input, docs, target.check_sha or None)
    for problem in side.problems:
        run.warn_once(f"{problem}; fix: make the receipt's folder writable (the receipt and the verdict stand)")
    artifact_id = _upload(run, target.upload_name, data, text, side.files) if target.upload_name else ""
    links = check_report.links_from(run.env, target.repository, receipt, artifact_id, target.check_sha or None)
    report = check_report.build(receipt, digest, notes=tuple(run.notes), links=links, delta=delta)
    run_id = _check_run(run, target, report, now)
    if run_id is None:
        # The fallback: one workflow-command annotation per finding, at the level the check run would use.
        for a in check_report.annotations_for(receipt):
            run.say(annotation(COMMAND_LEVEL[a.level], a.message, path=a.path, line=a.line, title=a.title))
        for v in receipt_access.violations(receipt):
            if not v.get("path"):
                run.say(annotation("error", visible.lines(f"{v['message']} [{v['row']}]"), title="evidence-gate"))
    summary = job_summary.render(receipt, digest, tuple(run.notes), links, target.check_name, None, delta)
    unwritten = markdown_limits.append(run.env, markdown_limits.truncate_bytes(summary))
    if unwritten:
        run.warn_once(unwritten)
    final = receipt.get("state") == "final"
    decided = receipt_access.decision(receipt)
    outputs = {
        "decision": str(decided.get("gate", "fail")) if final and decided else "fail",
        "row": str(receipt_access.decision_row(receipt)),
        "ok": "true" if receipt.get("ok") is True else "false",
        "receipt-path": target.receipt_path_input,
        "check-run-id": "" if run_id is None else str(run_id),
        "artifact-id": artifact_id,
        **side.outputs,
    }
    if run.env.get("GITHUB_OUTPUT"):
        append_outputs(Path(run.env["GITHUB_OUTPUT"]), outputs)
    code = decided.get("exit_code") if decided else None
    return code if isinstance(code, int) and final else 1
