"""`mode: gate` on a repository with `contexts:`: one check run per context (`<check-name> / <name>`), each with
its own findings as annotations, the step's own check run (`<check-name>`) completed with the index, one artifact
holding every receipt, the job summary and the outputs.

A context the pull request does not touch gets a `neutral` check run saying why it was not judged, so a required
`<check-name> / <name>` check never waits on a pull request that leaves that context alone.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from evidence_gate import contexts
from evidence_gate.action import files as action_files
from evidence_gate.action.verdict import Reporter as Run
from evidence_gate.action.verdict import Target, _check_run
from evidence_gate.action.workflow_commands import COMMAND_LEVEL, annotation, append_outputs, command, log_text
from evidence_gate.digest import sha256_digest
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt.write import write_atomic
from evidence_gate.report import check_run as check_report
from evidence_gate.report import gfm, job_summary, markdown_limits
from evidence_gate.report.registry import render_text


@dataclass(frozen=True)
class Where:
    """The step's settings this module needs (from action.Inputs and the receipt target)."""

    check_name: str
    token: str
    max_annotations: int
    upload_name: str | None  # None: no artifact
    job_summary: bool
    index_file: Path
    index_shown: str
    check_sha: str
    post: bool = True  # False for a shard: only the merge job posts check runs


@dataclass(frozen=True)
class _Posted:
    name: str
    run_id: int | None
    receipt: Mapping[str, Any] | None


def shown_beside(index_shown: str, index_file: Path, other: Path) -> str:
    """The path later steps know a file beside the index by."""
    if index_shown.endswith(index_file.name):
        return index_shown[: len(index_shown) - len(index_file.name)] + other.name
    return str(other)


def finish(
    run: Run, where: Where, outcome: contexts.Outcome, now: Callable[[], datetime]
) -> tuple[dict[str, str], str]:
    """Log, write side files, upload, post each context's check run and the job summary; returns the outputs
    (without the step's own check run, which the caller completes) and the index's Markdown summary."""
    index = outcome.receipt
    repository = str(run.env.get("GITHUB_REPOSITORY") or "")
    files: list[tuple[str, bytes]] = [("receipt.json", where.index_file.read_bytes())]
    digests: dict[str, str] = {}
    for judged in outcome.judged:
        data = judged.path.read_bytes()
        digests[judged.name] = sha256_digest(data)
        text = render_text(judged.receipt)
        run.say(log_text(f"== context {judged.name}: {judged.path.name} =="))
        for line in text.splitlines():
            run.say(log_text(line))
        docs = check_report.links_from(run.env, repository, judged.receipt).docs
        shown = shown_beside(where.index_shown, where.index_file, judged.path)
        side = action_files.write(judged.receipt, judged.path, shown, docs, where.check_sha)
        for problem in side.problems:
            run.warn_once(f"{problem}; fix: make the receipt's folder writable (the receipt and the verdict stand)")
        files += [(judged.path.name, data), (f"report-{judged.name}.txt", text.encode("utf-8")), *side.files]
    sarif = action_files.sarif_path(where.index_file)
    merged = contexts.sarif_log(outcome.judged).encode("utf-8")
    write_atomic(sarif, merged)
    files.append((sarif.name, merged))
    artifact_id = _upload(run, where, files) if where.upload_name else ""
    posted: list[_Posted] = []
    if where.post:
        posted += [_post_judged(run, where, repository, j, digests[j.name], artifact_id, now) for j in outcome.judged]
        posted += [_post_skipped(run, where, repository, r, now) for r in index["contexts"] if not r["judged"]]
    summary = index_summary(index, where.check_name, {p.name: p.run_id for p in posted}, repository, run.env)
    if where.job_summary:
        parts = [f"## {gfm.text(where.check_name, 100)}: {gfm.text(contexts.title(index), at_start=False)}\n\n"]
        parts.append(summary)
        for judged in outcome.judged:
            links = check_report.links_from(run.env, repository, judged.receipt, artifact_id, where.check_sha)
            name = f"{where.check_name} / {judged.name}"
            parts.append(job_summary.render(judged.receipt, digests[judged.name], tuple(run.notes), links, name))
        unwritten = markdown_limits.append(run.env, markdown_limits.truncate_bytes("\n".join(parts)))
        if unwritten:
            run.warn_once(unwritten)
    sarif_shown = shown_beside(where.index_shown, where.index_file, sarif)
    return _outputs(where, index, outcome, artifact_id, sarif_shown), summary


def _upload(run: Run, where: Where, files: list[tuple[str, bytes]]) -> str:
    from evidence_gate.github import artifact_upload  # noqa: PLC0415

    assert where.upload_name is not None
    try:
        done = artifact_upload.upload(run.env, where.upload_name, files, sleep=run.sleep)
    except Exception as exc:  # noqa: BLE001 - unavailable, refused or a client bug: the receipts are still on disk
        run.warn_once(
            f"artifact {where.upload_name} not uploaded ({exc}); the receipts stay beside {where.index_shown}"
        )
        return ""
    run.say(command("notice", f"receipts uploaded as artifact {where.upload_name} ({done.size} bytes, {done.sha256})"))
    return done.artifact_id


def _target(where: Where, repository: str, name: str) -> Target:
    return Target(repository, where.check_sha, f"{where.check_name} / {name}", where.token, where.index_file, "", None)


def _post_judged(
    run: Run,
    where: Where,
    repository: str,
    judged: contexts.Judged,
    digest: str,
    artifact_id: str,
    now: Callable[[], datetime],
) -> _Posted:
    """The context's own check run with its annotations; workflow-command annotations when it cannot be posted."""
    links = check_report.links_from(run.env, repository, judged.receipt, artifact_id, where.check_sha)
    report = check_report.build(
        judged.receipt, digest, notes=tuple(run.notes), links=links, max_annotations=where.max_annotations
    )
    run_id = _check_run(run, _target(where, repository, judged.name), report, now)
    if run_id is None:
        for a in check_report.annotations_for(judged.receipt)[: where.max_annotations]:
            title = f"{judged.name}: {a.title}"
            run.say(annotation(COMMAND_LEVEL[a.level], a.message, path=a.path, line=a.line, title=title))
    return _Posted(judged.name, run_id, judged.receipt)


def _post_skipped(run: Run, where: Where, repository: str, row: dict[str, Any], now: Callable[[], datetime]) -> _Posted:
    """A `neutral` check run for a context the pull request leaves alone, saying why it was not judged."""
    why = str(row["why"])
    report = check_report.CheckReport(
        "neutral",
        f"Not judged: {why}"[:255],
        f"The context `{row['context']}` ({gfm.text(row['root'], 200)}) was not judged: {gfm.text(why, 1000)}.",
        "",
        (),
    )
    return _Posted(
        str(row["context"]), _check_run(run, _target(where, repository, str(row["context"])), report, now), None
    )


def index_summary(
    index: Mapping[str, Any], check_name: str, run_ids: dict[str, int | None], repository: str, env: Mapping[str, str]
) -> str:
    """A Markdown table of every context: judged or not, its row, and a link to its check run."""
    server = str(env.get("GITHUB_SERVER_URL") or "https://github.com")
    lines = ["| Context | Root | Verdict | Check run |", "|---|---|---|---|"]
    for row in index["contexts"]:
        if row["judged"]:
            verdict = f"{'✅ pass' if row['ok'] else '❌ fail'} (`{row['row']}`)"
        else:
            verdict = f"not judged: {gfm.text(row['why'], 300, at_start=False)}"
        run_id = run_ids.get(row["context"])
        name = f"{check_name} / {row['context']}"
        shown = gfm.text(name, 150, at_start=False)
        link = gfm.link(shown, f"{server}/{repository}/runs/{run_id}") if run_id is not None and repository else shown
        lines.append(f"| `{row['context']}` | {gfm.code(row['root'], 200, table=True)} | {verdict} | {link} |")
    return "\n".join(lines) + "\n"


def _outputs(
    where: Where, index: Mapping[str, Any], outcome: contexts.Outcome, artifact_id: str, sarif_shown: str
) -> dict[str, str]:
    counts: Counter[str] = Counter()
    for judged in outcome.judged:
        counts.update(str(v.get("row")) for v in receipt_access.violations(judged.receipt))
    return {
        "decision": "pass" if index["ok"] is True else "fail",
        "row": contexts.worst_row(index),
        "ok": "true" if index["ok"] is True else "false",
        "conclusion": "success" if index["ok"] is True else "failure",
        "title": contexts.title(index),
        "receipt-path": where.index_shown,
        "check-run-id": "",
        "check-run-url": "",
        "artifact-id": artifact_id,
        "findings": str(sum(counts.values())),
        "finding-counts": json.dumps(dict(sorted(counts.items())), separators=(",", ":")),
        **action_files.empty(),
        "sarif-path": sarif_shown,
    }


def write_outputs(env: Mapping[str, str], outputs: dict[str, str], run_id: int | None) -> None:
    """The step outputs, with the step's own check run (the index's) once it is completed."""
    repository = str(env.get("GITHUB_REPOSITORY") or "")
    if run_id is not None:
        outputs["check-run-id"] = str(run_id)
        if repository:
            server = env.get("GITHUB_SERVER_URL") or "https://github.com"
            outputs["check-run-url"] = f"{server}/{repository}/runs/{run_id}"
    if env.get("GITHUB_OUTPUT"):
        append_outputs(Path(env["GITHUB_OUTPUT"]), outputs)


def index_report(index: Mapping[str, Any], summary: str) -> check_report.CheckReport:
    """The step's own check run over the index: its conclusion, title and table, no annotations."""
    return check_report.CheckReport(
        "success" if index["ok"] is True else "failure", contexts.title(index), summary, "", ()
    )


def post_merged(run: Run, where: Where, outcome: contexts.Outcome, now: Callable[[], datetime], repository: str) -> int:
    """`mode: merge` with contexts: post each merged context and the index (its own check run), then the outputs;
    returns the exit code."""
    outputs, summary = finish(run, where, outcome, now)
    target = Target(repository, where.check_sha, where.check_name, where.token, where.index_file, "", None)
    run_id = _check_run(run, target, index_report(outcome.receipt, summary), now)
    write_outputs(run.env, outputs, run_id)
    return outcome.code
