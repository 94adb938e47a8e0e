"""`evidence-gate action`: the GitHub Action, a thin edge around `gate.evaluate` (the code path `check` uses).

It reads `INPUT_*` and `GITHUB_*` from the environment it is handed, makes sure a shallow checkout holds the
commits compared, posts a check run on the pull request's head (falling back to workflow-command annotations when
the token may not), writes the job summary and the step outputs, and uploads the receipt as an artifact.

Every path ends the same way (`_finish`): a receipt on disk (the workspace, else the runner's temp folder), a
check run or the fallback, the summary and every output, and an exit code derived in one place (`step_exit`).
A usage error, a workspace the gate cannot read, a failed fetch or a crash is a failing verdict with a fix, never
a bare traceback. Under `pull_request_target` the PR's code is not executed unless the workflow opts in.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from evidence_gate import contexts, gate, visible
from evidence_gate.action import check_post
from evidence_gate.action import files as action_files
from evidence_gate.action import verdict as action_verdict
from evidence_gate.action.event import EventContext, load_event
from evidence_gate.action.inputs import (
    UNSAFE_INPUT,
    Inputs,
    fallback_inputs,
    read_inputs,
    step_exit,
)
from evidence_gate.action.workflow_commands import COMMAND_LEVEL, annotation, append_outputs, command, log_text
from evidence_gate.commands import history
from evidence_gate.digest import sha256_digest
from evidence_gate.errors import EXIT_INTERNAL, GateError
from evidence_gate.git import Repo
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt.types import ReceiptJson
from evidence_gate.receipt.write import canonical_bytes, empty_receipt, scrub, write_atomic, write_receipt
from evidence_gate.report import check_run as check_report
from evidence_gate.report import job_summary, markdown_limits
from evidence_gate.report.registry import render_text
from evidence_gate.row_ids import HISTORY_MISSING

# The `row` output (and receipt `decision.row`) of a run that never decided: a crash, or a usage error.
ABORTED_ROW = "aborted"
FETCH_LINE = "with: {fetch-depth: 0}   # on the actions/checkout step"
TEMP_MOUNT = Path("/github/runner_temp")  # where the runner mounts $RUNNER_TEMP into a container action
# Deepening steps for a merge_group head whose base is further down than the shallow clone reaches.
_MERGE_GROUP_DEPTHS = (2, 16, 128)
PR_TARGET_REFUSED = (
    "pull_request_target: this job holds a write token and the repository's secrets, so evidence-gate does not "
    "execute the pull request's code here: the property lane, freeze replays and fixture digests are skipped, and "
    "the verdict fails (run-integrity). The safe pattern is `on: pull_request` (fork pull requests get their check "
    "run from the trusted publisher, `mode: publish` on `workflow_run`). If you accept the risk, set "
    f"`{UNSAFE_INPUT}: true`"
)
PR_TARGET_STATIC = (
    "pull_request_target: this job holds a write token and the repository's secrets; with `run-properties: false` "
    "evidence-gate executes nothing of the pull request, but any other step that runs its code hands them over. "
    "The safe pattern is `on: pull_request` plus the trusted publisher (`mode: publish` on `workflow_run`)"
)
PR_TARGET_ACCEPTED = (
    f"pull_request_target with `{UNSAFE_INPUT}: true`: the pull request's code (its tests' imports, conftest "
    "files, `properties.install`) runs in a job that holds a write token and the repository's secrets; anyone who "
    "can open a pull request can use them. Prefer `on: pull_request` plus `mode: publish`"
)


def repo_folder(workspace: Path, working_directory: str) -> Path:
    """The checkout to judge: `working-directory` below the workspace (a checkout made with `path:`)."""
    rel = Path(working_directory)
    folder = (workspace / rel).resolve()
    if rel.is_absolute() or not folder.is_relative_to(workspace.resolve()):
        raise GateError(
            f"input working-directory {working_directory!r} is outside the workspace",
            usage=True,
            fix="give the `path:` of the actions/checkout step, relative to the workspace",
        )
    if not folder.is_dir():
        raise GateError(
            f"input working-directory {working_directory!r} is not a folder in the workspace",
            fix="give the `path:` of the actions/checkout step (checkout must run before this step)",
            usage=True,
        )
    return folder


def ensure_history(repo: Repo, event: EventContext) -> list[str]:
    """Fetch exactly the commits a shallow checkout lacks; raise `history-missing` with the fix when that fails.

    A depth-1 checkout of the merge ref has the merge commit but no parents; `--depth=2` on that commit brings
    just its two parents (the baseline and the PR head). A merge_group head is deepened until the base is reached.
    """
    head = repo.resolve("HEAD")
    if head is None or not repo.is_shallow():
        return []
    if event.event_name == "merge_group":
        if head != event.head_sha:
            return []  # not the group's commit: the gate says event-mismatch, a fetch would not help

        def complete() -> bool:
            return repo.has_object(event.base_sha) and repo.merge_base(event.base_sha, head) == event.base_sha

        depths: tuple[int, ...] = _MERGE_GROUP_DEPTHS
    else:
        if len(repo.parents(head)) < 2:
            return []  # not the merge ref: the gate says event-mismatch, a fetch would not help

        def complete() -> bool:
            return all(repo.resolve(p) is not None for p in repo.parents(head))

        depths = (2,)
    if complete():
        return []
    error = ""
    for depth in depths:
        ok, error = repo.fetch("origin", [head], depth=depth)
        if not ok:
            break
        if complete():
            return [f"shallow checkout: fetched the commits compared (`git fetch --depth={depth} origin {head[:12]}`)"]
    raise GateError(
        "the shallow checkout lacks the commits compared ("
        + (
            f"the merge group's base {event.base_sha[:12]}"
            if event.event_name == "merge_group"
            else f"the parents of the merge commit {head[:12]}"
        )
        + ")"
        + (f" and fetching them failed: {error}" if error else ""),
        fix=f"add `fetch-depth: 0` to actions/checkout ({FETCH_LINE})",
        row=HISTORY_MISSING,
    )


def check_title(receipt: Mapping[str, Any]) -> str:
    """The check run's title (and the `title` output): the row, its title and the counts, at most 255 characters."""
    if receipt_access.decision(receipt) is None:
        return ABORTED_ROW
    return job_summary.title(receipt)


class _Run:
    """One action run: its environment, where it prints, how it sleeps, its clock and what it has said."""

    def __init__(
        self, env: Mapping[str, str], stdout: TextIO, sleep: Callable[[float], None], now: Callable[[], datetime]
    ) -> None:
        self.env = env
        self.stdout = stdout
        self.sleep = sleep
        self.now = now
        self.notes: list[str] = []
        self.started: check_post.Started | None = None  # the check run, so that even the last resort can complete it

    def say(self, line: str) -> None:
        self.stdout.write(line + "\n")
        self.stdout.flush()

    def warn_once(self, message: str) -> None:
        if message in self.notes:
            return
        self.notes.append(message)
        self.say(annotation("warning", message))


@dataclass(frozen=True)
class _Target:
    """Where the receipt is written, and the path later steps know it by (the `receipt-path` output)."""

    file: Path
    shown: str


def main(
    env: Mapping[str, str],
    *,
    stdout: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> int:
    """Run as the GitHub Action; returns the step's exit code."""
    run = _Run(env, stdout or sys.stdout, sleep, now)
    try:
        return _main(run)
    except Exception as exc:  # noqa: BLE001 - the last resort: a failing step with outputs, never a bare traceback
        return _last_resort(run, exc)


def _main(run: _Run) -> int:
    event: EventContext | None = None
    try:
        event_path = run.env.get("GITHUB_EVENT_PATH")
        if not event_path:
            raise GateError(
                "GITHUB_EVENT_PATH is not set", fix="run evidence-gate action inside GitHub Actions", usage=True
            )
        inputs: Inputs | None = None
        unusable: GateError | None = None
        try:
            inputs = read_inputs(run.env)
        except GateError as exc:  # reported once the event is known, so the check run still shows it
            unusable = exc
        if inputs is not None and inputs.mode == "publish":  # on workflow_run, which names no pull request
            from evidence_gate.action import publish as action_publish  # noqa: PLC0415 - a mode of its own

            return step_exit(action_publish.run(run, inputs, Path(event_path), run.now), inputs.fail_on)
        event = load_event(Path(event_path), run.env.get("GITHUB_EVENT_NAME") or None)
        if unusable is not None or inputs is None:
            raise unusable or GateError("the action's inputs could not be read", usage=True)
    except GateError as exc:
        return _cannot_start(run, exc, event)
    if inputs.mode == "merge":
        from evidence_gate.action import merge as action_merge  # noqa: PLC0415

        return step_exit(action_merge.run(run, inputs, event, run.now), inputs.fail_on)
    return gate_mode(run, inputs, event)


def gate_mode(run: _Run, inputs: Inputs, event: EventContext) -> int:
    """`mode: gate`: judge the pull request the event names, in the checkout, and report it."""
    workspace = Path(run.env.get("GITHUB_WORKSPACE") or ".")
    target = _receipt_target(run, inputs, workspace)
    # The check run is created beside the gate, not before it: loading PyGithub and the API round trips overlap
    # with git's work instead of delaying the receipt. It is joined before anything is completed.
    if inputs.shard is None:
        started = run.started = check_post.start_beside(run, inputs, event)
    else:  # a shard's verdict is partial: only the merge job posts the check run
        started = check_post.Started()
        run.notes.append(f"shard {inputs.shard[0]}/{inputs.shard[1]}: no check run; the `mode: merge` job posts it")
    outcome = _judge(run, inputs, event, workspace, target.file)
    if contexts.is_index(outcome.receipt):
        return _finish_contexts(run, inputs, started.join(), outcome, target, event.check_sha)
    return _finish(run, inputs, started.join(), outcome.receipt, outcome.code, target, event.check_sha)


def _finish_contexts(
    run: _Run, inputs: Inputs, started: check_post.Started, outcome: contexts.Outcome, target: _Target, head: str
) -> int:
    """With `contexts:`: a check run per context (see action_contexts), and the step's own one for the index."""
    from evidence_gate.action import contexts as action_contexts  # noqa: PLC0415 - only repositories with contexts need it

    name = inputs.artifact_name
    if inputs.shard is not None:  # one artifact per shard, as without contexts
        from evidence_gate.action.merge import shard_artifact  # noqa: PLC0415

        name = shard_artifact(name, inputs.shard)
    where = action_contexts.Where(
        check_name=inputs.check_name,
        token=inputs.token,
        max_annotations=inputs.max_annotations,
        upload_name=name if inputs.upload else None,
        job_summary=inputs.job_summary,
        index_file=target.file,
        index_shown=target.shown,
        check_sha=head,
        post=inputs.shard is None,
    )
    outputs, summary = action_contexts.finish(run, where, outcome, run.now)
    run_id = started.run_id
    if started.checks is not None and run_id is not None:
        run_id = check_post.complete(
            run, started.checks, run_id, action_contexts.index_report(outcome.receipt, summary)
        )
    action_contexts.write_outputs(run.env, outputs, run_id)
    return step_exit(outcome.code, inputs.fail_on)


def _cannot_start(run: _Run, exc: GateError, event: EventContext | None) -> int:
    """A usage error (or an unusable event) before the gate: still a receipt, a failing check run when the event
    names a commit, the summary and every output."""
    inputs = fallback_inputs(run.env)
    receipt, code = gate.error_receipt(exc)
    if exc.row is None:
        receipt["decision"]["title"] = "The action could not start (usage error)"
    target = _receipt_target(run, inputs, Path(run.env.get("GITHUB_WORKSPACE") or "."))
    _write(run, receipt, target.file)
    started = check_post.start_beside(run, inputs, event).join() if event is not None else check_post.Started()
    return _finish(run, inputs, started, receipt, code, target, event.check_sha if event else None)


def _judge(run: _Run, inputs: Inputs, event: EventContext, workspace: Path, receipt_file: Path) -> contexts.Outcome:
    """The receipt and exit code; a failure before the gate starts is a receipt of its own, never an exception."""
    receipt = empty_receipt()
    try:
        folder = repo_folder(workspace, inputs.working_directory)
        refused = _pull_request_target(run, inputs, event)
        run.notes += ensure_history(Repo(folder), event)
    except GateError as exc:
        code = gate.record_error(receipt, exc)
        _write(run, receipt, receipt_file)
        return contexts.Outcome(receipt, code)
    except Exception as exc:  # noqa: BLE001 - before the gate: recorded like the gate's own crashes
        receipt["errors"] += [gate.describe_crash(exc), traceback.format_exc(limit=8)]
        _write(run, receipt, receipt_file)
        return contexts.Outcome(receipt, EXIT_INTERNAL)
    opts = gate.CheckOptions(
        repo=folder,
        head="HEAD",
        event=event,
        today=inputs.today or run.now().date(),
        run=inputs.run,
        refused=refused,
        shard=inputs.shard,
    )
    return contexts.evaluate(opts, receipt_file, shards=True)  # one receipt, or one per context and the index


def _pull_request_target(run: _Run, inputs: Inputs, event: EventContext) -> str:
    """Why the property lane is refused ('' when it is not): under pull_request_target, unless opted in."""
    if event.event_name != "pull_request_target":
        return ""
    if inputs.unsafe_pr_code:
        run.warn_once(PR_TARGET_ACCEPTED)
        return ""
    if not inputs.run:  # run-properties: false asked for the static lanes only; nothing of the PR runs anyway
        run.warn_once(PR_TARGET_STATIC)
        return ""
    run.warn_once(PR_TARGET_REFUSED)
    return (
        f"pull_request_target without `{UNSAFE_INPUT}: true`: the pull request's code is not executed in a "
        "job that holds a write token; run the gate on `pull_request` (see docs/forks.md)"
    )


def _receipt_target(run: _Run, inputs: Inputs, workspace: Path) -> _Target:
    """`receipt-path` when it can be written; else the runner's temp folder, said once with the fix.

    The first write is an `aborted` receipt (as `gate.evaluate` does), so a stale file never outlives a crash.
    """
    wanted = Path(inputs.receipt_path)
    path = _in_container(run.env, wanted) if wanted.is_absolute() else workspace / wanted
    try:
        write_receipt(path, empty_receipt())
        return _Target(path, inputs.receipt_path)
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
    for folder, shown in _temp_folders(run.env):
        candidate = folder / "evidence-gate" / "receipt.json"
        try:
            write_receipt(candidate, empty_receipt())
        except OSError:
            continue
        run.warn_once(
            f"cannot write the receipt at {inputs.receipt_path} ({reason}); it is at {shown} instead "
            "(the `receipt-path` output); fix: set `receipt-path:` to a writable file such as "
            "`${{ runner.temp }}/receipt.json`, or check out into a writable workspace"
        )
        return _Target(candidate, shown)
    raise GateError(
        f"cannot write the receipt at {inputs.receipt_path} ({reason}) nor in any temp folder",
        fix="set `receipt-path:` to a writable file",
    )


def _in_container(env: Mapping[str, str], path: Path) -> Path:
    """`${{ runner.temp }}/...` names the host's folder; inside the action's container it is /github/runner_temp."""
    host = env.get("RUNNER_TEMP", "")
    if host and TEMP_MOUNT.is_dir() and not Path(host).is_dir() and path.is_relative_to(host):
        return TEMP_MOUNT / path.relative_to(host)
    return path


def _temp_folders(env: Mapping[str, str]) -> list[tuple[Path, str]]:
    """Writable places for the receipt, each with the path a later step sees: the runner's temp folder (mounted
    at /github/runner_temp in a container action, `$RUNNER_TEMP` outside), then this process's temp folder."""
    host = env.get("RUNNER_TEMP", "")
    out = []
    if TEMP_MOUNT.is_dir():
        out.append((TEMP_MOUNT, f"{host or TEMP_MOUNT}/evidence-gate/receipt.json"))
    if host and Path(host).is_dir():
        out.append((Path(host), f"{host}/evidence-gate/receipt.json"))
    local = Path(tempfile.gettempdir())
    out.append(
        (local, f"{local}/evidence-gate/receipt.json (inside the action's container: only the artifact carries it)")
    )
    return out


def _write(run: _Run, receipt: ReceiptJson, file: Path) -> None:
    try:
        write_receipt(file, receipt)
    except OSError as exc:
        run.warn_once(f"the receipt could not be written to {file} ({exc.strerror}); the artifact carries it")


def _finish(
    run: _Run,
    inputs: Inputs,
    started: check_post.Started,
    receipt: Mapping[str, Any],
    code: int,
    target: _Target,
    head: str | None = None,
) -> int:
    """Report a receipt everywhere it goes; the one exit of every path. `head`: the commit the check run is on."""
    receipt = scrub(receipt)
    try:
        data = target.file.read_bytes()
    except OSError:
        data = canonical_bytes(receipt)
    digest = sha256_digest(data)
    if receipt.get("state") != "final":  # first: what failed and the fix, before the report
        for error in receipt.get("errors", []):
            if not str(error).startswith("Traceback"):
                run.say(annotation("error", visible.lines(str(error))))
    delta = None
    if inputs.shard is None:  # a shard's partial verdict is compared by the merge job, over every shard
        delta = action_verdict.previous_delta(
            run,
            receipt,
            run.env.get("GITHUB_REPOSITORY", ""),
            inputs.artifact_name,
            inputs.token,
            run.env.get("GITHUB_BASE_REF", ""),
        )
    text = render_text(receipt, delta=delta)
    for line in text.splitlines():
        run.say(log_text(line))
    picture = _ledger_picture(run, inputs, receipt, target, head) if inputs.shard is None else None
    repository = run.env.get("GITHUB_REPOSITORY", "")
    docs = check_report.links_from(run.env, repository, receipt).docs
    side = action_files.write(receipt, target.file, target.shown, docs, head)
    for problem in side.problems:
        run.warn_once(f"{problem}; fix: make the receipt's folder writable (the receipt and the verdict stand)")
    extra = [(history.PICTURE, picture[0].encode("utf-8"))] if picture else []
    extra += side.files
    artifact_id = _upload(run, inputs, data, text, extra) if inputs.upload else ""
    links = check_report.links_from(run.env, repository, receipt, artifact_id, head)
    found = check_report.annotations_for(receipt)
    if inputs.shard is None and check_report.cap_note(len(found), inputs.max_annotations):
        run.warn_once(check_report.cap_note(len(found), inputs.max_annotations))
    run_id = started.run_id
    if started.checks is not None and run_id is not None:
        report = check_report.build(
            receipt, digest, notes=tuple(run.notes), links=links, max_annotations=inputs.max_annotations, delta=delta
        )
        run_id = check_post.complete(run, started.checks, run_id, report)
    if run_id is None and inputs.shard is None:  # a shard's findings reach the PR through the merge job
        # The fallback: one workflow-command annotation per finding, at the level the check run would use.
        for a in found[: inputs.max_annotations]:
            run.say(annotation(COMMAND_LEVEL[a.level], a.message, path=a.path, line=a.line, title=a.title))
    if inputs.job_summary:
        ledger = (picture[1], history.PICTURE) if picture else None
        summary = job_summary.render(receipt, digest, tuple(run.notes), links, inputs.check_name, ledger, delta)
        _write_summary(run, markdown_limits.truncate_bytes(summary))
    _write_outputs(run, receipt, target.shown, run_id, artifact_id, side.outputs)
    return step_exit(code, inputs.fail_on)


def outputs_of(
    receipt: Mapping[str, Any],
    receipt_path: str,
    check_run_url: str = "",
    check_run_id: str = "",
    artifact_id: str = "",
    files: dict[str, str] | None = None,
) -> dict[str, str]:
    """Every step output; `row` is a decision-table id, or `aborted` for a run that never decided."""
    decision = receipt_access.decision(receipt)
    final = receipt.get("state") == "final"
    counts = Counter(str(v.get("row")) for v in receipt_access.violations(receipt))
    return {
        "decision": str(decision.get("gate", "fail")) if final and decision else "fail",
        "row": str(receipt_access.decision_row(receipt)) if final else ABORTED_ROW,
        "ok": "true" if receipt.get("ok") is True else "false",
        "conclusion": check_report.conclusion(receipt),
        "title": check_title(receipt),
        # As given: a relative path means the same file to later steps outside the container.
        "receipt-path": receipt_path,
        "check-run-id": check_run_id,
        "check-run-url": check_run_url,
        "artifact-id": artifact_id,
        "findings": str(sum(counts.values())),
        "finding-counts": json.dumps(dict(sorted(counts.items())), separators=(",", ":")),
        **action_files.empty(),
        **(files or {}),  # sarif-path and what actions/attest needs (see action_files)
    }


def _write_outputs(
    run: _Run,
    receipt: Mapping[str, Any],
    receipt_path: str,
    run_id: int | None,
    artifact_id: str,
    files: dict[str, str] | None = None,
) -> None:
    url = ""
    repository = run.env.get("GITHUB_REPOSITORY", "")
    if run_id is not None and repository:
        url = f"{run.env.get('GITHUB_SERVER_URL') or 'https://github.com'}/{repository}/runs/{run_id}"
    if run.env.get("GITHUB_OUTPUT"):
        append_outputs(
            Path(run.env["GITHUB_OUTPUT"]),
            outputs_of(receipt, receipt_path, url, "" if run_id is None else str(run_id), artifact_id, files),
        )


def _last_resort(run: _Run, exc: Exception) -> int:
    """The action itself failed outside the gate: say so with the fix, and still write the outputs."""
    message = gate.describe_crash(exc)
    run.say(annotation("error", visible.lines(message)))
    receipt = empty_receipt()
    receipt["errors"].append(message)
    summary = f"## evidence-gate: the action failed\n\n{job_summary.fenced(message)}\n"
    started = run.started.join() if run.started is not None else check_post.Started()
    try:
        if started.checks is not None and started.run_id is not None:  # never leave it in_progress
            started.checks.complete(started.run_id, "failure", check_title(receipt), summary, [], run.now())
        _write_summary(run, summary)
        _write_outputs(run, receipt, "", started.run_id, "")
    except Exception as second:  # noqa: BLE001 - nothing is left to report to; the log line above stands
        run.say(log_text(f"evidence-gate: could not post the check run, summary or outputs: {second}"))
    return EXIT_INTERNAL


def _write_summary(run: _Run, markdown: str) -> None:
    problem = markdown_limits.append(run.env, markdown)
    if problem:
        run.warn_once(problem)


def _ledger_picture(
    run: _Run, inputs: Inputs, receipt: Mapping[str, Any], target: _Target, pr_head: str | None
) -> tuple[str, str] | None:
    """The base branch's ledger history (SVG, summary note) with the ledger the pull request proposes (at the
    commit the gate judged, dated by the PR's head `pr_head`), written beside the receipt; None when there is none.

    The picture is extra: whatever goes wrong drawing it is one log line, never a changed verdict.
    """
    git = receipt.get("git") or {}
    baseline, judged = git.get("baseline"), git.get("head")
    if receipt.get("state") != "final" or not isinstance(baseline, str) or not baseline:
        return None
    proposed = (judged, pr_head) if isinstance(judged, str) and judged and judged != baseline else None
    try:
        folder = repo_folder(Path(run.env.get("GITHUB_WORKSPACE") or "."), inputs.working_directory)
        made = history.picture_for(folder, baseline, run.env.get("GITHUB_BASE_REF") or baseline[:12], proposed)
        if made is not None:
            write_atomic(
                target.file.parent / history.PICTURE, made[0].encode("utf-8")
            )  # replaces, never follows, a link
    except Exception as exc:  # noqa: BLE001 - the verdict never depends on the picture
        run.say(log_text(f"evidence-gate: the freeze ledger's history was not drawn: {type(exc).__name__}: {exc}"))
        return None
    return made


def _upload(run: _Run, inputs: Inputs, data: bytes, text: str, extra: list[tuple[str, bytes]] | None = None) -> str:
    from evidence_gate.github import artifact_upload  # noqa: PLC0415

    name = inputs.artifact_name
    if inputs.shard is not None:  # one artifact per shard: a second upload under one name is refused (409)
        from evidence_gate.action.merge import shard_artifact  # noqa: PLC0415

        name = shard_artifact(name, inputs.shard)
    try:
        done = artifact_upload.upload(
            run.env,
            name,
            [("receipt.json", data), ("report.txt", text.encode("utf-8")), *(extra or [])],
            sleep=run.sleep,
        )
    except artifact_upload.ArtifactUnavailable as exc:
        run.warn_once(
            f"artifact not uploaded ({exc}); the receipt stays at {inputs.receipt_path} for actions/upload-artifact"
        )
        return ""
    except Exception as exc:  # noqa: BLE001 - ArtifactError or a client bug: the receipt is still on disk
        run.warn_once(f"artifact upload failed ({exc}); the receipt stays at {inputs.receipt_path}")
        return ""
    run.say(
        command(
            "notice",
            f"receipt uploaded as artifact {name} ({done.size} bytes; the zip's {done.sha256}, not receipt.json's)",
        )
    )
    return done.artifact_id
