"""The `check` pipeline: resolve the commits, read the trusted inputs from the baseline, run the lanes, decide.

This is the one place that sequences edges (git, clock, runner) and pure lanes; it returns the receipt as a value
and never prints or writes.
"""

from __future__ import annotations

import os
import posixpath
from datetime import date
from pathlib import Path

from evidence_gate import decision
from evidence_gate.config import CONFIG_PATH, Config, is_agent, parse_config
from evidence_gate.digest import optional_sha256_digest
from evidence_gate.errors import EXIT_INTERNAL, GateError, InputInvalid
from evidence_gate.git import Repo
from evidence_gate.lanes import fixtures, harness_probes, locked_evidence
from evidence_gate.lanes.freeze import ledger as freeze_ledger
from evidence_gate.lanes.score_properties import PropertySpec, parse_properties
from evidence_gate.model import LaneResult, Violation
from evidence_gate.receipt.write import canonical_bytes, empty_receipt, finalise, scrub, write_atomic, write_receipt
from evidence_gate.records import dataclass
from evidence_gate.row_ids import CONFIG_INVALID, EVENT_MISMATCH, EVIDENCE_PATH_EDITED, HISTORY_MISSING, RUN_INTEGRITY

TYPE_CHECKING = False
if TYPE_CHECKING:  # the event is parsed at the edge; a run without one never imports its module
    from typing import Any

    from evidence_gate.action.event import EventContext
    from evidence_gate.receipt.types import ContextJson, ReceiptJson

# Never "check out the PR's merge commit" under pull_request_target: that hands the PR's code a write token.
PULL_REQUEST_TARGET_FIX = (
    "under pull_request_target the checkout is the base branch, and checking out the pull request's code there "
    "would run it with a write token and the repository's secrets; run the gate on `pull_request` instead (fork "
    "pull requests then get their check run from the trusted publisher, `mode: publish` on `workflow_run`)"
)


@dataclass(frozen=True)
class CheckOptions:
    """Everything `evidence-gate check` takes; time and identity are inputs, never read deep inside."""

    repo: Path
    head: str = "HEAD"
    base: str | None = None
    event: EventContext | None = None
    author: str | None = None
    today: date = date(1970, 1, 1)
    run: bool = True
    shard: tuple[int, int] | None = None
    workdir: Path | None = None
    # Why the property lane may not run here (the action under pull_request_target), whatever `run` asked: unlike
    # --no-run, a refusal is itself a failing `run-integrity` row, since nothing then stands behind a pass.
    refused: str = ""
    # The bounded context to judge (`contexts:` in the configuration), or '' for a repository without contexts.
    context: str = ""
    # The fresh seeds to run instead of a new draw (`evidence-gate verify` replays a receipt's); None: draw them.
    fresh_seeds: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Commits:
    """The commits compared."""

    baseline: str
    head: str
    merge_base: str | None


def _fetch_hint(rev: str, repo: Repo | None = None) -> str:
    """The fix for a revision absent from the clone; `repo` tells a remote-tracking name by the clone's remotes."""
    from evidence_gate import fetch_advice  # noqa: PLC0415 - only a missing revision needs it

    command = fetch_advice.fetch_command(rev, fetch_advice.remote_names(repo) if repo is not None else ())
    return (
        f"set `fetch-depth: 0` on actions/checkout, or run `{command}` "
        "(add `--unshallow` in a shallow clone) before the gate"
    )


def _missing_head(head_rev: str) -> GateError:
    """A head that does not resolve: a commit id may be unfetched, a name is most likely mistyped or not checked out."""
    from evidence_gate import fetch_advice  # noqa: PLC0415 - as _fetch_hint

    if fetch_advice.is_full_id(head_rev):
        return GateError(
            f"the head commit {head_rev[:12]} is not in this clone",
            fix=f"set `fetch-depth: 0` on actions/checkout, or run `{fetch_advice.fetch_command(head_rev)}` before "
            "the gate",
            row=HISTORY_MISSING,
        )
    return GateError(
        f"the head revision {head_rev!r} does not exist in this clone",
        fix="check the spelling of --head (a branch, tag or commit of this clone); in CI, check that the pull "
        "request's merge ref was checked out (actions/checkout on the `pull_request` event does)",
        row=HISTORY_MISSING,
    )


def resolve_commits(repo: Repo, head_rev: str, base_rev: str | None, event: EventContext | None) -> Commits:
    """SPEC's rule: a merge head compares against its first parent, anything else against the merge-base."""
    head = repo.resolve(head_rev)
    if head is None:
        raise _missing_head(head_rev)
    parents = repo.parents(head)
    for p in parents:
        if not repo.has_object(p) or repo.resolve(p) is None:
            raise GateError(
                f"parent {p[:12]} of the head commit {head[:12]} is not in this clone (shallow clone?)",
                fix=_fetch_hint(p),
                row=HISTORY_MISSING,
            )
    if event is not None:
        return _commits_from_event(repo, head, parents, event)
    base = None
    if base_rev is not None:
        base = repo.resolve(base_rev)
        if base is None:
            raise GateError(
                f"the base revision {base_rev!r} is not in this clone",
                fix=_fetch_hint(base_rev, repo),
                row=HISTORY_MISSING,
            )
    if len(parents) >= 2 and (base is None or base == parents[0]):
        return Commits(parents[0], head, None)
    if base is None:
        raise GateError(
            f"the head {head[:12]} is not a merge commit, so the baseline must be named",
            fix="pass --base with the target branch (e.g. --base origin/main), or check out refs/pull/N/merge",
            usage=True,
        )
    mb = repo.merge_base(base, head)
    if mb is None:
        if repo.is_shallow():
            raise GateError(
                f"no merge-base of {base[:12]} and {head[:12]} in this shallow clone",
                fix=_fetch_hint(base_rev or base, repo),
                row=HISTORY_MISSING,
            )
        raise GateError(
            f"{base[:12]} and {head[:12]} share no history",
            fix="pass the PR's target branch as --base",
            row=HISTORY_MISSING,
        )
    if mb == head != base:
        # The head is a strict ancestor of the base (swapped, or already merged): nothing of the PR is compared.
        # The same commit named twice stays allowed: it judges that commit's code against its own evidence.
        raise GateError(
            f"the head {head[:12]} is an ancestor of the base {base[:12]}, so there is no patch to judge",
            fix="pass the PR's target branch as --base and its head as --head (are they swapped?)",
            usage=True,
        )
    return Commits(mb, head, mb)


def _commits_from_event(repo: Repo, head: str, parents: list[str], event: EventContext) -> Commits:
    if event.event_name == "merge_group":
        if head != event.head_sha:
            raise GateError(
                f"the checked-out commit {head[:12]} is not the merge group's head {event.head_sha[:12]}",
                fix="check out the merge_group's head_sha (actions/checkout does by default)",
                row=EVENT_MISMATCH,
            )
        if repo.resolve(event.base_sha) is None:
            raise GateError(
                f"the merge group's base {event.base_sha[:12]} is not in this clone",
                fix=_fetch_hint(event.base_sha),
                row=HISTORY_MISSING,
            )
        mb = repo.merge_base(event.base_sha, head)
        if mb != event.base_sha:
            raise GateError(
                f"the merge group's base {event.base_sha[:12]} is not an ancestor of its head",
                fix=_fetch_hint(event.base_sha) if repo.is_shallow() else "re-run on the queue's commit",
                row=HISTORY_MISSING if repo.is_shallow() else EVENT_MISMATCH,
            )
        return Commits(event.base_sha, head, mb)
    if len(parents) < 2:
        fix = (
            "check out refs/pull/N/merge (the default of actions/checkout on pull_request), not the head branch"
            if event.event_name == "pull_request"
            else PULL_REQUEST_TARGET_FIX
        )
        raise GateError(
            f"the checked-out commit {head[:12]} is not the pull request's merge commit", fix=fix, row=EVENT_MISMATCH
        )
    if parents[1] != event.head_sha or parents[0] != event.base_sha:
        raise GateError(
            f"the merge commit's parents ({parents[0][:12]}, {parents[1][:12]}) are not the event's base and head "
            f"({event.base_sha[:12]}, {event.head_sha[:12]})",
            fix="re-run the workflow so the merge ref and the event agree (the base branch moved)",
            row=EVENT_MISMATCH,
        )
    return Commits(parents[0], head, None)


def _read_trusted_file(repo: Repo, baseline: str, path: str) -> tuple[str | None, bytes | None]:
    """The blob id and bytes of a trusted input on the baseline; (None, None) when absent.

    One `ls-tree` gives the entry's mode and id: a symlink (git stores its target text), a submodule or a folder is
    `config-invalid`, never silently read as that text or as absent (a gitlink would have meant the built-in
    defaults); an entry whose blob is not in this clone is `history-missing`.
    """
    norm = posixpath.normpath(path)
    entry = next((e for e in repo.ls_tree(baseline, [norm]) if e.path == norm), None)
    if entry is None:
        return None, None
    if entry.mode not in {"100644", "100755"}:
        raise GateError(
            f"{path} on the baseline {baseline[:12]} is not a regular file (mode {entry.mode})",
            fix=f"commit {path} to the base branch as a plain file",
            row=CONFIG_INVALID,
        )
    data = repo.read_blobs([entry.oid])[entry.oid]
    if data is None:
        raise GateError(
            f"the blob of {path} on the baseline is not in this clone", fix=_fetch_hint(baseline), row=HISTORY_MISSING
        )
    return entry.oid, data


CONTEXTS_UNSUPPORTED = (
    "judge each context with `evidence-gate check`, `pre-push` or the action's `mode: gate` (shards: `shard:` with "
    "`mode: merge`, or `check --shard K/N` then `evidence-gate merge`); the fork publisher (`mode: publish`) does "
    "not support `contexts:` yet"
)


def read_config(repo: Repo, baseline: str) -> tuple[Config, str | None]:
    """The baseline's configuration and its blob id; `config-invalid` when it does not parse or validate."""
    config_blob, raw = _read_trusted_file(repo, baseline, CONFIG_PATH)
    try:
        return parse_config(raw), config_blob
    except InputInvalid as exc:
        raise GateError(
            exc.message + (f" (line {exc.line})" if exc.line else ""),
            fix=f"correct {CONFIG_PATH} on the base branch; the patch's copy is never read",
            row=CONFIG_INVALID,
        ) from exc


def read_trusted(
    repo: Repo, baseline: str, context: str = ""
) -> tuple[Config, str | None, tuple[PropertySpec, ...], bytes | None]:
    """Configuration and SCORE_PROPERTIES from the baseline's objects (`context`'s own when the configuration
    declares contexts); `config-invalid` when unusable, or when contexts are declared and none is named."""
    config, config_blob = read_config(repo, baseline)
    if config.contexts or context:
        if not context:
            declared = ", ".join(c.name for c in config.contexts)
            raise GateError(
                f"{CONFIG_PATH} declares bounded contexts ({declared}), and this run judges the repository as one",
                fix=CONTEXTS_UNSUPPORTED,
                row=CONFIG_INVALID,
            )
        try:
            config = config.context(context).config
        except InputInvalid as exc:
            raise GateError(exc.message, fix=CONTEXTS_UNSUPPORTED, row=CONFIG_INVALID) from exc
    _list_blob, list_bytes = _read_trusted_file(repo, baseline, config.properties.list)
    if list_bytes is None:
        raise GateError(
            f"{config.properties.list} is missing on the baseline {baseline[:12]}",
            fix=f"commit {config.properties.list} to the base branch, one property node id per line",
            row=CONFIG_INVALID,
        )
    try:
        specs = parse_properties(list_bytes)
    except InputInvalid as exc:
        raise GateError(
            f"{config.properties.list}:{exc.line or 1}: {exc.message}",
            fix="correct the list on the base branch",
            row=CONFIG_INVALID,
        ) from exc
    return config, config_blob, specs, list_bytes


def config_context(repo: Repo, baseline: str, name: str) -> ContextJson:
    """The receipt's `context` section: the judged context's name, root and owned globs."""
    return read_config(repo, baseline)[0].context(name).to_json()


def _skip_reason(opts: CheckOptions, human: bool, before_tests: set[str]) -> str:
    """Why the property lane does not run ('' when it does); the first reason that applies."""
    if human:
        return "human patch: not scored, nothing run"
    if EVIDENCE_PATH_EDITED in before_tests:
        return "locked evidence touched: no test runs on a tampered tree"
    if before_tests:
        return "code under test probes the harness: no test runs until that is removed or allowed"
    if opts.refused:
        return opts.refused
    return "" if opts.run else "--no-run: static lanes only"


@dataclass(frozen=True)
class Trusted:
    """What the baseline says the gate must check, and whether this patch is scored."""

    commits: Commits
    config: Config
    specs: tuple[PropertySpec, ...]
    human: bool


@dataclass(frozen=True)
class Static:
    """The lanes that run before any test: their results, in the order they run."""

    locked: LaneResult
    probes: LaneResult
    ledger: freeze_ledger.LedgerResult
    fixture: LaneResult
    digest_records: list[dict[str, Any]]

    @property
    def lanes(self) -> list[LaneResult]:
        """Each static lane's result."""
        return [self.locked, self.probes, self.ledger.lane, self.fixture]


def check(opts: CheckOptions, receipt: ReceiptJson, repo: Repo | None = None) -> decision.Decision:
    """Run the gate, filling `receipt` as facts become known (so a crash still leaves what was learned); `repo`, when
    given, is `opts.repo` already opened (`contexts.evaluate` passes the one its plan asked)."""
    repo = repo or Repo(opts.repo)
    repo.toplevel()
    with repo.batch_session():  # the static lanes' object reads, through one git process
        trusted = _trusted(repo, opts, receipt)
        static = _static_lanes(repo, trusted, opts.today, receipt)
    repo.end_batch_session()  # also one the caller opened (`contexts.evaluate`): the property lane reads as before
    lanes = static.lanes
    facts: set[str] = {decision.FACT_HUMAN} if trusted.human else set()
    before_tests = {v.row for lane in lanes for v in lane.violations} & decision.stops_tests()
    skipped = _skip_reason(opts, trusted.human, before_tests)
    if skipped:
        receipt["properties"]["skipped"] = skipped
        lanes += _not_run_lanes(opts, trusted, static, skipped)
    else:
        dynamic = _dynamic_lane(repo, opts, trusted, static)
        lanes.append(dynamic)
        _record_dynamic(receipt, dynamic)
        facts |= dynamic.facts
        if static.ledger.removed and not any(v.row.startswith("freeze-") for lane in lanes for v in lane.violations):
            facts.add(decision.FACT_FREEZE_SHRANK)
    return finalise(receipt, [v for lane in lanes for v in lane.violations], frozenset(facts))


def _trusted(repo: Repo, opts: CheckOptions, receipt: ReceiptJson) -> Trusted:
    """The commits, the baseline's configuration and list, and who wrote the patch; recorded as each is known."""
    commits = resolve_commits(repo, opts.head, opts.base, opts.event)
    receipt["git"] = {"baseline": commits.baseline, "head": commits.head, "merge_base": commits.merge_base}
    for commit in (commits.baseline, commits.head):
        if not repo.has_object(f"{commit}^{{tree}}"):  # else every read below would look like an absent file
            raise GateError(
                f"the tree of commit {commit[:12]} is not in this clone", fix=_fetch_hint(commit), row=HISTORY_MISSING
            )
    config, config_blob, specs, list_bytes = read_trusted(repo, commits.baseline, opts.context)
    receipt["config"] = {"path": CONFIG_PATH, "blob": config_blob, "effective": config.to_json()}
    if opts.context:
        receipt["context"] = config_context(repo, commits.baseline, opts.context)
    receipt["properties"]["list_sha256"] = optional_sha256_digest(list_bytes)
    receipt["properties"]["list"] = [
        {"node": s.node, "oracle": s.oracle, "counterexample": s.counterexample} for s in specs
    ]
    author = opts.author if opts.author is not None else (opts.event.author if opts.event else None)
    human = author is not None and not is_agent(author, config.agents)
    receipt["mode"] = {
        "run": opts.run,
        "author": author,
        "scored": not human,
        "today": opts.today.isoformat(),
        "event": opts.event.event_name if opts.event else None,
        "shard": list(opts.shard) if opts.shard else None,
    }
    return Trusted(commits, config, specs, human)


def _static_lanes(repo: Repo, trusted: Trusted, today: date, receipt: ReceiptJson) -> Static:
    """Locked evidence, harness probes, freeze ledger and fixtures, each section recorded as its lane returns."""
    baseline, head, config = trusted.commits.baseline, trusted.commits.head, trusted.config
    diff = repo.diff_tree(baseline, head)
    locked = locked_evidence.check(repo, baseline, head, config, trusted.specs, diff)
    receipt["locked"] = locked.receipt
    probes = harness_probes.check(repo, baseline, head, config, diff, frozenset(locked.receipt.get("files", [])))
    receipt["probes"] = probes.receipt
    sides = [f"{baseline}:{config.freeze.file}", f"{head}:{config.freeze.file}"]
    ledgers = repo.read_blobs(sides)  # both sides through one `cat-file`
    ledger = freeze_ledger.check(ledgers[sides[0]], ledgers[sides[1]], config, today)
    receipt["freeze"] = ledger.lane.receipt
    fixture, digest_records = fixtures.check_records(repo, baseline, head, config)
    receipt["fixtures"] = fixture.receipt
    return Static(locked, probes, ledger, fixture, digest_records)


def _not_run_lanes(opts: CheckOptions, trusted: Trusted, static: Static, skipped: str) -> list[LaneResult]:
    """What a skipped property lane leaves: unverified freeze removals (when scored), and a refusal's own row."""
    lanes = [] if trusted.human else [LaneResult(freeze_ledger.unverified(static.ledger, skipped))]
    if skipped == opts.refused:
        lanes.append(LaneResult((Violation(RUN_INTEGRITY, f"the properties were not run: {skipped}"),)))
    return lanes


def _dynamic_lane(repo: Repo, opts: CheckOptions, trusted: Trusted, static: Static) -> LaneResult:
    """The sealed property run, on the trees and lists the static lanes established."""
    import tempfile  # noqa: PLC0415 - only the property run needs a scratch folder

    from evidence_gate.lanes.properties import lane as property_lane  # noqa: PLC0415 - the runner loads only when tests run
    from evidence_gate.lanes.properties.plan import DynamicRequest  # noqa: PLC0415 - as the lane

    locked, ledger = static.locked, static.ledger
    with tempfile.TemporaryDirectory(prefix="evidence-gate-") as scratch:
        return property_lane.run(
            DynamicRequest(
                repo=repo,
                baseline=trusted.commits.baseline,
                head=trusted.commits.head,
                config=trusted.config,
                specs=trusted.specs,
                # Folders locked whole (`fixtures/`, `tools/**`) come from the baseline and are re-hashed too.
                locked_paths=frozenset(locked.receipt.get("files", []))
                | {f"{f}/" for f in locked.receipt.get("trees", {})},
                removed=ledger.removed,
                expired=ledger.expired,
                active=ledger.active,
                patch_id=trusted.commits.head,
                today=opts.today,
                workdir=opts.workdir or Path(scratch),
                shard=opts.shard,
                fixture_records=(static.fixture, static.digest_records),
                fresh=opts.fresh_seeds,
            )
        )


def _record_dynamic(receipt: ReceiptJson, dynamic: LaneResult) -> None:
    """The property lane's sections: merged into the static lanes' sections of the same name (`properties`,
    `freeze`, `fixtures`), else set (`sealed`, `patch_coverage`); the lane writes no other."""
    sections = dynamic.receipt
    if "properties" in sections:
        receipt["properties"].update(sections["properties"])
    if "freeze" in sections:
        receipt["freeze"].update(sections["freeze"])
    if "fixtures" in sections:
        receipt["fixtures"].update(sections["fixtures"])
    if "sealed" in sections:
        receipt["sealed"] = sections["sealed"]
    if "patch_coverage" in sections:
        receipt["patch_coverage"] = sections["patch_coverage"]


def precondition(receipt: ReceiptJson, error: GateError) -> decision.Decision:
    """Fill the receipt for a GateError on a row (the gate could not evaluate, or refused to)."""
    assert error.row is not None
    result = finalise(receipt, [Violation(error.row, error.describe())])  # a precondition row: never ok
    receipt["errors"].append(str(error))
    return result


def record_error(receipt: ReceiptJson, error: GateError) -> int:
    """Record a GateError the one way every entry point does; returns the exit code.

    With a row it is a final receipt on that row (a precondition); without one (a usage error) the receipt stays
    `aborted` and carries the error. `check`, `action` and the gate itself all come through here.
    """
    if error.row is not None:
        precondition(receipt, error)
    else:
        receipt["errors"].append(str(error))
    return error.exit_code


def error_receipt(error: GateError) -> tuple[ReceiptJson, int]:
    """A new receipt for a GateError raised before the gate started (an unusable event or input), and the exit code."""
    receipt = empty_receipt()
    return receipt, record_error(receipt, error)


CRASH_FIX = (
    "this is a bug in evidence-gate, not a finding about the pull request: re-run the job; if it fails "
    "again, report it with the receipt (its `errors` hold the traceback)"
)


def describe_crash(exc: BaseException) -> str:
    """One line for an unexpected exception: its type, its message (or that it had none), where, and the fix.

    An OS error names the file and the user, since the fix is then the environment's, not the gate's.
    """
    import traceback  # noqa: PLC0415 - only a crash is described

    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    reason = str(exc).strip()[:500] or "(no message)"  # the text may come from the patch: bounded
    if isinstance(exc, OSError):
        target = f" on {exc.filename}" if exc.filename else ""
        return (
            f"internal error: {type(exc).__name__}{target}: {exc.strerror or reason}{where}; fix: make it "
            f"readable and writable by uid {os.geteuid()}, the user evidence-gate runs as, or free the disk"
        )
    return f"internal error: {type(exc).__name__}: {reason}{where}; fix: {CRASH_FIX}"


def first_write(receipt_path: Path) -> None:
    """An `aborted` receipt first, so one that the patch committed at this path never outlives a killed gate; a
    usage error naming the fix when the path cannot be written."""
    try:
        write_atomic(receipt_path, canonical_bytes(empty_receipt()))  # a constant, schema-checked by its test
    except OSError as exc:
        raise GateError(
            f"cannot write the receipt at {receipt_path}: {exc.strerror}",
            fix="pass --receipt (or the action's receipt-path) naming a file the gate can write",
            usage=True,
        ) from exc


def evaluate(
    opts: CheckOptions, receipt_path: Path, repo: Repo | None = None, *, first_written: bool = False
) -> tuple[ReceiptJson, int]:
    """Run the gate and write the receipt whatever happens; returns the receipt and the exit code.

    This is the one code path behind `check` and `action`. A GateError goes through `record_error`; any other
    exception leaves the receipt `aborted` with the error and its traceback. `first_written`: the caller has just
    made `receipt_path` an `aborted` receipt (`first_write`), which is not written twice.
    """
    out = empty_receipt()
    code = EXIT_INTERNAL
    if not first_written:
        first_write(receipt_path)
    try:
        code = check(opts, out, repo).row.exit_code
    except GateError as exc:
        code = record_error(out, exc)
    except Exception as exc:  # noqa: BLE001 - the one handler for the gate's own failures: record, never lose
        import traceback  # noqa: PLC0415 - only a crash records one

        out["errors"].append(describe_crash(exc))
        out["errors"].append(traceback.format_exc(limit=8))
    finally:
        out = scrub(out)  # argv and paths may carry bytes that are not UTF-8; the receipt and stdout must encode
        write_receipt(receipt_path, out)
    return out, code


__all__ = [
    "CRASH_FIX",
    "PULL_REQUEST_TARGET_FIX",
    "CheckOptions",
    "Commits",
    "check",
    "describe_crash",
    "empty_receipt",
    "error_receipt",
    "evaluate",
    "precondition",
    "read_trusted",
    "record_error",
    "resolve_commits",
]
