"""`evidence-gate action`: the GitHub Action, a thin edge around `gate.evaluate` (the code path `check` uses).

It reads `INPUT_*` and `GITHUB_*` from the environment it is handed, makes sure a shallow checkout holds the
commits compared, posts a check run on the pull request's head (falling back to workflow-command annotations when
the token may not), writes the job summary and the step outputs, and uploads the receipt as an artifact.
The step's exit code is the gate's, whatever happens to the check run or the artifact.
"""

from __future__ import annotations

import hashlib
import sys
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, TextIO

from evidence_gate import check_report, gate, job_summary
from evidence_gate.errors import EXIT_PRECONDITION, GateError
from evidence_gate.event_context import EventContext, load_event
from evidence_gate.git import Repo
from evidence_gate.receipt import empty_receipt, write_receipt
from evidence_gate.report import render_text
from evidence_gate.workflow_commands import annotation, append_outputs, command, log_text

DEFAULTS = {
    "github-token": "",
    "check-name": "evidence-gate",
    "run-properties": "true",
    "upload-artifact": "true",
    "artifact-name": "evidence-gate-receipt",
    "receipt-path": "receipt.json",
    "today": "",
    "mode": "gate",
    "shard": "",
}
MODES = ("gate", "merge", "publish")
FETCH_LINE = "with: {fetch-depth: 0}   # on the actions/checkout step"
FALLBACK = "annotations are printed as workflow commands and the verdict is this step's exit code"
# Deepening steps for a merge_group head whose base is further down than the shallow clone reaches.
_MERGE_GROUP_DEPTHS = (2, 16, 128)


@dataclass(frozen=True)
class Inputs:
    """The action's inputs, parsed."""

    token: str
    check_name: str
    run: bool
    upload: bool
    artifact_name: str
    receipt_path: str
    today: date | None
    mode: str = "gate"
    shard: tuple[int, int] | None = None


def read_input(env: Mapping[str, str], name: str) -> str:
    """An input under either spelling the runner uses (`INPUT_CHECK-NAME` or `INPUT_CHECK_NAME`), else its default."""
    for key in (f"INPUT_{name.upper()}", f"INPUT_{name.upper().replace('-', '_')}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return DEFAULTS[name]


def _bool(env: Mapping[str, str], name: str) -> bool:
    value = read_input(env, name).lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise GateError(f"input {name} is {value!r}, not true or false", fix=f"set `{name}: true` or `false`", usage=True)


def read_inputs(env: Mapping[str, str]) -> Inputs:
    """All inputs; a malformed one is a usage error that names it."""
    today_text = read_input(env, "today")
    try:
        today = date.fromisoformat(today_text) if today_text else None
    except ValueError as exc:
        raise GateError(f"input today is {today_text!r}, not YYYY-MM-DD", fix="leave it empty for today (UTC)",
                        usage=True) from exc
    check_name = read_input(env, "check-name")
    if len(check_name) > 100 or any(not c.isprintable() for c in check_name):
        raise GateError("input check-name must be printable and at most 100 characters", usage=True)
    mode, shard = _mode_and_shard(env)
    if shard is not None and not _bool(env, "upload-artifact"):
        raise GateError("input shard needs upload-artifact: true", fix="the merge job reads each shard's receipt "
                        "from its artifact; remove `upload-artifact: false`", usage=True)
    return Inputs(token=read_input(env, "github-token"), check_name=check_name, run=_bool(env, "run-properties"),
                  upload=_bool(env, "upload-artifact"), artifact_name=read_input(env, "artifact-name"),
                  receipt_path=read_input(env, "receipt-path"), today=today, mode=mode, shard=shard)


def _mode_and_shard(env: Mapping[str, str]) -> tuple[str, tuple[int, int] | None]:
    """`mode` and `shard: K/N`; a shard belongs to `mode: gate` only (the merge job reads N from the artifacts)."""
    mode = read_input(env, "mode")
    if mode not in MODES:
        raise GateError(f"input mode is {mode!r}", fix=f"set `mode:` to one of {', '.join(MODES)}", usage=True)
    text = read_input(env, "shard")
    if not text:
        return mode, None
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) <= 1000):
        raise GateError(f"input shard is {text!r}, not K/N with 1 <= K <= N <= 1000",
                        fix="set `shard: ${{ matrix.shard }}/N` with `matrix: {shard: [1, ..., N]}`", usage=True)
    if mode != "gate":
        raise GateError(f"input shard is set in mode: {mode}", fix="set `shard:` on the matrix job only", usage=True)
    return mode, (int(k), int(n))


def _clean(text: str) -> str:
    """Text safe for JSON and Markdown encoders: lone surrogates (invalid UTF-8 paths) become escapes."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


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
        + (f"the merge group's base {event.base_sha[:12]}" if event.event_name == "merge_group"
           else f"the parents of the merge commit {head[:12]}") + ")"
        + (f" and fetching them failed: {error}" if error else ""),
        fix=f"add `fetch-depth: 0` to actions/checkout ({FETCH_LINE})", row="history-missing")


class _Run:
    """One action run: where it prints, how it sleeps and what it says."""

    def __init__(self, env: Mapping[str, str], stdout: TextIO, sleep: Callable[[float], None]) -> None:
        self.env = env
        self.stdout = stdout
        self.sleep = sleep
        self.notes: list[str] = []

    def say(self, line: str) -> None:
        self.stdout.write(line + "\n")
        self.stdout.flush()

    def warn_once(self, message: str) -> None:
        self.notes.append(message)
        self.say(annotation("warning", message))


def main(env: Mapping[str, str], *, stdout: TextIO | None = None, sleep: Callable[[float], None] = time.sleep,
         now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> int:
    """Run as the GitHub Action; returns the gate's exit code."""
    run = _Run(env, stdout or sys.stdout, sleep)
    try:
        inputs = read_inputs(env)
        event_path = env.get("GITHUB_EVENT_PATH")
        if not event_path:
            raise GateError("GITHUB_EVENT_PATH is not set", fix="run evidence-gate action inside GitHub Actions",
                            usage=True)
        if inputs.mode == "publish":
            from evidence_gate import action_publish  # noqa: PLC0415 - a mode of its own, on workflow_run

            return action_publish.run(run, inputs, Path(event_path), now)
        event = load_event(Path(event_path), env.get("GITHUB_EVENT_NAME") or None)
        if inputs.mode == "merge":
            from evidence_gate import action_merge  # noqa: PLC0415

            return action_merge.run(run, inputs, event, now)
    except GateError as exc:
        run.say(annotation("error", str(exc)))
        _write_summary(env, f"## evidence-gate: usage error\n\n{job_summary.fenced(str(exc))}\n")
        return exc.exit_code
    workspace = Path(env.get("GITHUB_WORKSPACE") or ".")
    receipt_path = Path(inputs.receipt_path)
    if not receipt_path.is_absolute():
        receipt_path = workspace / receipt_path
    repository = env.get("GITHUB_REPOSITORY") or event.repository or ""

    # The check run is created beside the gate, not before it: loading PyGithub and the API round trips overlap
    # with git's work instead of delaying the receipt. It is joined before anything is completed.
    started: list[tuple[Any, int | None]] = []
    starter = threading.Thread(target=lambda: started.append(_start_check(run, inputs, event, repository, now)),
                               name="check-run-start", daemon=True)
    if inputs.shard is None:  # a shard's verdict is partial: only the merge job posts the check run
        starter.start()
    else:
        run.notes.append(f"shard {inputs.shard[0]}/{inputs.shard[1]}: no check run; the `mode: merge` job posts it")

    missing: GateError | None = None
    try:
        run.notes += ensure_history(Repo(workspace), event)
    except GateError as exc:
        missing = exc if exc.row else None  # without a row (git absent) the gate's own run reports it
    if missing is not None:
        receipt = empty_receipt()
        gate.precondition(receipt, missing)
        write_receipt(receipt_path, receipt)
        code = EXIT_PRECONDITION
    else:
        opts = gate.CheckOptions(repo=workspace, head="HEAD", event=event, today=inputs.today or now().date(),
                                 run=inputs.run, shard=inputs.shard)
        receipt, code = gate.evaluate(opts, receipt_path)

    if inputs.shard is None:
        starter.join()
    checks, run_id = started[0] if started else (None, None)
    data = receipt_path.read_bytes()
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    text = render_text(receipt)
    for line in text.splitlines():
        run.say(log_text(line))

    artifact_id = ""
    if inputs.upload:
        artifact_id = _upload(run, inputs, data, text)

    links = check_report.links_from(env, repository, receipt, artifact_id)
    if checks is not None and run_id is not None:
        report = check_report.build(receipt, digest, notes=tuple(run.notes), links=links)
        run_id = _complete_check(run, checks, run_id, report, now)
    if run_id is None and inputs.shard is None:  # a shard's findings reach the PR through the merge job
        # The fallback: one workflow-command annotation per finding, at the level the check run would use.
        levels = {"failure": "error", "warning": "warning", "notice": "notice"}
        for a in check_report.annotations_for(receipt):
            run.say(annotation(levels[a.level], a.message, path=a.path, line=a.line, title=a.title))
        for v in receipt.get("violations", []):
            if not v.get("path"):
                run.say(annotation("error", _clean(f"{v['message']} [{v['row']}]"), title="evidence-gate"))

    summary = job_summary.render(receipt, digest, tuple(run.notes), links, inputs.check_name)
    _write_summary(env, job_summary.truncate_bytes(summary))
    outputs = {
        "decision": str(receipt["decision"].get("gate", "fail")) if receipt.get("state") == "final" else "fail",
        "row": str(receipt["decision"].get("row")),
        "ok": "true" if receipt.get("ok") is True else "false",
        # As given: a relative path means the same file to later steps outside the container.
        "receipt-path": inputs.receipt_path,
        "check-run-id": "" if run_id is None else str(run_id),
        "artifact-id": artifact_id,
    }
    if env.get("GITHUB_OUTPUT"):
        append_outputs(Path(env["GITHUB_OUTPUT"]), outputs)
    return code


def _write_summary(env: Mapping[str, str], markdown: str) -> None:
    path = env.get("GITHUB_STEP_SUMMARY")
    if path:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")


def _start_check(run: _Run, inputs: Inputs, event: EventContext, repository: str,
                 now: Callable[[], datetime]) -> tuple[Any, int | None]:
    """Create (or reset) the check run; on 403 or no token, say once that annotations fall back."""
    fallback = f"{FALLBACK} (a fork pull request or a token without `checks: write`)"
    if not inputs.token or not repository:
        run.warn_once(f"no github-token or repository: no check run; {fallback}")
        return None, None
    details = None
    if run.env.get("GITHUB_SERVER_URL") and run.env.get("GITHUB_RUN_ID"):
        details = f"{run.env['GITHUB_SERVER_URL']}/{repository}/actions/runs/{run.env['GITHUB_RUN_ID']}"
    try:
        from evidence_gate import checks_api  # noqa: PLC0415 - PyGithub loads only when the API is used

        client = checks_api.ChecksClient(inputs.token, run.env.get("GITHUB_API_URL") or "https://api.github.com",
                                         repository, sleep=run.sleep)
        ext = checks_api.external_id(repository, event.check_sha, inputs.check_name)
        return client, client.start(inputs.check_name, event.check_sha, ext, now(), details)
    except Exception as exc:  # noqa: BLE001 - 403, API failures or a client bug: the exit code carries the verdict
        forbidden = type(exc).__name__ == "ChecksForbidden"
        what = str(exc) if type(exc).__name__.startswith("Checks") else f"{type(exc).__name__}: {exc}"
        run.warn_once(f"{'cannot create' if forbidden else 'could not create'} a check run ({what}); {fallback}")
    return None, None


def _complete_check(run: _Run, checks: Any, run_id: int, report: check_report.CheckReport,
                    now: Callable[[], datetime]) -> int | None:
    from evidence_gate import checks_api  # noqa: PLC0415

    try:
        checks.complete(run_id, report.conclusion, report.title, report.summary, report.annotations, now(),
                        text=report.text)
    except Exception as exc:  # noqa: BLE001 - ChecksError or a client bug: fall back, the exit code carries the verdict
        what = str(exc) if isinstance(exc, checks_api.ChecksError) else f"{type(exc).__name__}: {exc}"
        run.warn_once(f"the check run {run_id} could not be completed ({what}); {FALLBACK}")
        return None
    return run_id


def _upload(run: _Run, inputs: Inputs, data: bytes, text: str) -> str:
    from evidence_gate import artifact_upload  # noqa: PLC0415

    name = inputs.artifact_name
    if inputs.shard is not None:  # one artifact per shard: a second upload under one name is refused (409)
        from evidence_gate.action_merge import shard_artifact  # noqa: PLC0415

        name = shard_artifact(name, inputs.shard)
    try:
        done = artifact_upload.upload(run.env, name,
                                      [("receipt.json", data), ("report.txt", text.encode("utf-8"))],
                                      sleep=run.sleep)
    except artifact_upload.ArtifactUnavailable as exc:
        run.warn_once(f"artifact not uploaded ({exc}); the receipt stays at {inputs.receipt_path} for "
                      "actions/upload-artifact")
        return ""
    except Exception as exc:  # noqa: BLE001 - ArtifactError or a client bug: the receipt is still on disk
        run.warn_once(f"artifact upload failed ({exc}); the receipt stays at {inputs.receipt_path}")
        return ""
    run.say(command("notice", f"receipt uploaded as artifact {name} ({done.size} bytes; the zip's "
                              f"{done.sha256}, not receipt.json's)"))
    return done.artifact_id
