"""`mode: publish`: the trusted half of gating fork pull requests, on `workflow_run` of the gate workflow.

A fork's `pull_request` run has a read-only token, so it cannot post the check run; this job (base branch, with
`checks: write`) does. It trusts nothing the fork's run says without checking it:

- the receipt artifact is read under size caps, as strict JSON against the schema, and must be final;
- the commits it judged must be exactly that run's: the merge commit's parents are a commit of the base branch and
  the run's `head_sha`, and its tree is the clean merge of the two (so an "evil merge" cannot pose as the PR);
- the static lanes (locked evidence, freeze ledger, fixture ids) are re-derived here from git objects fetched as
  data — nothing of the pull request is executed;
- the fork job's property results are accepted only when the patch leaves the workflows, the repository's own
  actions and the gate's configuration untouched (else the fork's workflow may not have run the gate at all).

The verdict is posted on the PR's head with the usual title, summary and annotations, under the same external id,
so a re-run updates the same check run.
"""

from __future__ import annotations

import base64
import copy
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from evidence_gate import decision, gate
from evidence_gate.action import verdict as action_verdict
from evidence_gate.action.event import EventContext
from evidence_gate.config import CONFIG_PATH
from evidence_gate.errors import GateError, InputInvalid
from evidence_gate.git import Repo
from evidence_gate.github.artifact_download import MAX_ZIP, ReceiptUnusable, receipt_from_zip
from evidence_gate.github.run_artifacts import Rest, RestError
from evidence_gate.model import Violation
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import facts as run_facts
from evidence_gate.receipt.types import ReceiptJson
from evidence_gate.receipt.write import empty_receipt, finalise, sha256_of
from evidence_gate.report.registry import violations_of
from evidence_gate.row_ids import (
    EVENT_MISMATCH,
    FREEZE_EXPIRED,
    FREEZE_REMOVED_STILL_FAILING,
    HISTORY_MISSING,
    RUN_INTEGRITY,
)
from evidence_gate.strict_parse import load_json

if TYPE_CHECKING:
    from evidence_gate.action.inputs import Inputs

# Paths whose change means the fork's run may not have been the gate (its workflow comes from the PR itself).
RUNNER_PREFIXES = (".github/workflows/", ".github/actions/")
REF = "refs/evidence-gate/publish"


class Refused(Exception):
    """The fork's receipt (or the commits it names) does not hold up; `row` is the failing row to post."""

    def __init__(self, row: str, message: str) -> None:
        super().__init__(message)
        self.row = row


@dataclass(frozen=True)
class Trigger:
    """What the `workflow_run` payload says about the run that triggered this one."""

    run_id: int
    event: str
    head_sha: str
    head_branch: str
    head_owner: str
    head_repo: str
    repository: str
    numbers: tuple[int, ...]
    workflow_path: str = ""  # the triggering run's workflow file, as the base branch holds it


@dataclass(frozen=True)
class Pull:
    """The pull request, as the API (not the fork's run) describes it."""

    number: int
    base_ref: str
    author: str | None


def _hex40(value: Any) -> bool:
    return isinstance(value, str) and len(value) in (40, 64) and all(c in "0123456789abcdef" for c in value)


def parse_trigger(path: Path, env_name: str | None) -> Trigger:
    """The triggering run from the event payload; a usage error on anything but `workflow_run`."""
    try:
        payload = load_json(path.read_bytes())
    except (OSError, InputInvalid) as exc:
        raise GateError(f"cannot read the event payload {path}: {exc}", usage=True) from exc
    run = _obj(payload).get("workflow_run")
    if (env_name not in (None, "", "workflow_run")) or not isinstance(run, dict):
        raise GateError(
            f"mode: publish runs on workflow_run, not {env_name or 'this event'}",
            fix="use it in a workflow `on: workflow_run: {workflows: [<the gate workflow>], types: "
            "[completed]}`; see docs/forks.md",
            usage=True,
        )
    head_repo = _obj(run.get("head_repository"))
    listed = run.get("pull_requests")
    prs: list[Any] = listed if isinstance(listed, list) else []
    if not (isinstance(run.get("id"), int) and _hex40(run.get("head_sha"))):
        raise GateError(
            "the workflow_run payload names no run id or head_sha",
            usage=True,
            fix="pass the runner's $GITHUB_EVENT_PATH",
        )
    return Trigger(
        run["id"],
        str(run.get("event") or ""),
        run["head_sha"],
        str(run.get("head_branch") or ""),
        str(_obj(head_repo.get("owner")).get("login") or ""),
        str(head_repo.get("full_name") or ""),
        str(_obj(_obj(payload).get("repository")).get("full_name") or ""),
        tuple(p["number"] for p in prs if isinstance(p, dict) and isinstance(p.get("number"), int)),
        str(run.get("path") or ""),
    )


def _obj(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one: a malformed payload is a missing field, not a crash."""
    return value if isinstance(value, dict) else {}


def find_pull(rest: Rest, t: Trigger) -> Pull:
    """The pull request whose head is the run's head; a fork's run lists none, so it is looked up by head label."""
    candidates = [rest.pull(t.repository, n) for n in t.numbers]
    if not candidates and t.head_owner and t.head_branch:
        candidates = rest.pulls_with_head(t.repository, t.head_owner, t.head_branch)
    for pr in candidates:
        head, base = _obj(pr.get("head")), _obj(pr.get("base"))
        if (
            _obj(head.get("repo")).get("full_name") == t.head_repo
            and head.get("ref") == t.head_branch
            and isinstance(pr.get("number"), int)
            and isinstance(base.get("ref"), str)
        ):
            login = _obj(pr.get("user")).get("login")
            login = login if isinstance(login, str) else None
            return Pull(pr["number"], base["ref"], login)
    raise Refused(
        EVENT_MISMATCH,
        f"no open pull request of {t.repository} has the head {t.head_owner}:"
        f"{t.head_branch} that run {t.run_id} judged; nothing to publish (closed, or its head moved)",
    )


def fetch_commits(repo: Repo, pr: Pull, extra: list[str], env: Mapping[str, str], token: str) -> None:
    """Fetch the base branch and the PR's refs (as data, into a ref namespace of the gate's) and `extra` commits."""
    config = []
    server = str(env.get("GITHUB_SERVER_URL") or "https://github.com").rstrip("/")
    if token and server.startswith("https://"):
        basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
        config.append(f"http.{server}/.extraheader=AUTHORIZATION: basic {basic}")
    specs = [
        f"+refs/heads/{pr.base_ref}:{REF}/base",
        f"+refs/pull/{pr.number}/head:{REF}/head",
        f"+refs/pull/{pr.number}/merge:{REF}/merge",
    ]
    ok, error = repo.fetch("origin", specs, config=config)
    if not ok:  # a PR without a merge ref (a conflict) still has its head
        ok, error = repo.fetch("origin", specs[:2], config=config)
    missing = [c for c in extra if not repo.has_object(c)]
    if ok and missing:
        ok, error = repo.fetch("origin", missing, config=config)
    if not ok:
        raise GateError(
            f"cannot fetch the pull request's commits from origin: {error}",
            fix="check out the base repository with actions/checkout (fetch-depth: 0) and give the job "
            "`contents: read`",
            row=HISTORY_MISSING,
        )


def verify_commits(repo: Repo, baseline: Any, merge: Any, t: Trigger) -> None:
    """`merge` is a clean merge of `t.head_sha` into `baseline`, a commit of the base branch."""
    if not (_hex40(baseline) and _hex40(merge)) or not repo.has_object(str(merge)):
        raise Refused(
            EVENT_MISMATCH,
            f"the commits to judge ({str(baseline)[:12]}, {str(merge)[:12]}: the "
            "receipt's, else GitHub's merge ref) are not in this repository's history; re-run the gate "
            "workflow on the pull request (a pull request with merge conflicts has no merge ref)",
        )
    parents = repo.parents(str(merge))
    if parents != [baseline, t.head_sha]:
        raise Refused(
            EVENT_MISMATCH,
            f"the receipt judged {str(merge)[:12]}, a merge of "
            f"{', '.join(p[:12] for p in parents) or 'nothing'}, not of run {t.run_id}'s head "
            f"{t.head_sha[:12]} into the base branch; re-run the gate workflow on the pull request",
        )
    if not repo.is_ancestor(str(baseline), f"{REF}/base"):
        raise Refused(
            EVENT_MISMATCH,
            f"the receipt's baseline {str(baseline)[:12]} is not a commit of the base "
            "branch: its configuration and locked evidence would not be the base's",
        )
    tip, current = repo.resolve(f"{REF}/base"), repo.resolve(f"{REF}/merge")
    current_base = repo.parents(current)[0] if current else None
    if baseline not in (tip, current_base):
        # A re-run of an old run would judge the PR against evidence the base branch has since changed.
        raise Refused(
            EVENT_MISMATCH,
            f"the receipt judged the pull request against {str(baseline)[:12]}, an older "
            f"commit of the base branch (now {str(tip)[:12]}); push to the pull request (or close and "
            "re-open it) so the gate runs on the current base",
        )
    tree = repo.merge_tree(str(baseline), t.head_sha)
    if tree is None or tree != repo.tree_oid(str(merge)):
        raise Refused(
            EVENT_MISMATCH,
            f"the tree of {str(merge)[:12]} is not the clean merge of the pull request "
            "into its baseline: the properties ran on other code than the patch",
        )


def _commits(repo: Repo, receipt: Mapping[str, Any] | None) -> tuple[Any, Any]:
    """(baseline, merge) to judge: the receipt's when there is one, else GitHub's current merge ref."""
    if receipt is not None:
        git = receipt.get("git", {})
        return git.get("baseline"), git.get("head")
    merge = repo.resolve(f"{REF}/merge")
    parents = repo.parents(merge) if merge else []
    return (parents[0] if parents else None), merge


def download_receipt(rest: Rest, t: Trigger, name: str) -> ReceiptJson:
    """The fork run's receipt; Refused (run-integrity) when there is none or it does not hold up."""
    try:
        found = rest.run_artifacts(t.repository, t.run_id, name)
        if not found:
            raise Refused(
                RUN_INTEGRITY,
                f"run {t.run_id} uploaded no artifact named {name}: the gate did not "
                "run there or was cancelled; the fork job must use the gate with `upload-artifact: true`",
            )
        newest = found[0]
        size = newest.get("size_in_bytes")
        if not isinstance(size, int) or size > MAX_ZIP:
            raise Refused(
                RUN_INTEGRITY,
                f"artifact {name} of run {t.run_id} is {size} bytes, over the {MAX_ZIP}-byte cap: it is not a receipt",
            )
        data = rest.artifact_zip(t.repository, newest["id"], MAX_ZIP)
    except RestError as exc:
        raise Refused(RUN_INTEGRITY, f"the receipt of run {t.run_id} could not be downloaded: {exc}") from exc
    try:
        receipt, _raw = receipt_from_zip(data)
    except ReceiptUnusable as exc:
        raise Refused(RUN_INTEGRITY, f"artifact {name} of run {t.run_id}: {exc}") from exc
    if receipt.get("mode", {}).get("event") != "pull_request" or receipt.get("mode", {}).get("shard"):
        raise Refused(
            RUN_INTEGRITY,
            f"artifact {name} of run {t.run_id} is not the whole gate's receipt for a "
            "pull_request (a shard, or another event); publish the merged receipt",
        )
    return receipt


def compose(ours: ReceiptJson, theirs: ReceiptJson | None, extra: list[Violation]) -> ReceiptJson:
    """Our static verdict, with the fork's property results where they are accepted, re-decided."""
    out = copy.deepcopy(ours)
    sealed = decision.decided_by(*decision.SEALED_LANES)  # rows only the run decides; the rest is re-derived here
    static = [v for v in violations_of(ours) if theirs is None or v.row not in sealed]
    dynamic = [v for v in violations_of(theirs) if v.row in sealed] if theirs is not None else []
    violations = static + dynamic + extra
    facts: set[str] = set()
    if not ours.get("mode", {}).get("scored", True):
        facts.add(decision.FACT_HUMAN)
    if ours.get("freeze", {}).get("removed") and not any(v.row.startswith("freeze-") for v in violations):
        facts.add(decision.FACT_FREEZE_SHRANK)
    if theirs is not None:
        out["properties"] = copy.deepcopy(theirs["properties"])
        out["fixtures"]["digests"] = copy.deepcopy(theirs.get("fixtures", {}).get("digests", []))
        out["mode"]["run"] = theirs.get("mode", {}).get("run")
    finalise(out, violations, frozenset(facts))
    return out


def _refused(t: Trigger, violations: list[Violation], baseline: Any = None) -> ReceiptJson:
    """A final, failing receipt for a run whose verdict could not be re-derived."""
    out = empty_receipt()
    out["git"] = {"baseline": baseline if _hex40(baseline) else None, "head": None, "merge_base": None}
    finalise(out, violations)
    out["published_from"] = {"run_id": t.run_id, "head_sha": t.head_sha, "accepted": False}
    return out


def _runner_paths(repo: Repo, baseline: str, merge: str, list_path: str) -> list[str]:
    """Changed paths that decide what the fork's run executed: workflows, local actions, the gate's inputs."""
    return [
        d.path
        for d in repo.diff_tree(baseline, merge)
        if d.path.startswith(RUNNER_PREFIXES) or d.path in (CONFIG_PATH, list_path)
    ]


def judge(
    repo: Repo, t: Trigger, pr: Pull, theirs: ReceiptJson | None, problem: Refused | None, today: Any
) -> ReceiptJson:
    """Re-derive the static lanes on the verified commits and combine them with the accepted property results."""
    baseline, merge = _commits(repo, theirs)
    verify_commits(repo, baseline, merge, t)
    event = EventContext("pull_request", str(baseline), t.head_sha, t.head_sha, pr.author, t.repository, pr.number)
    with tempfile.TemporaryDirectory(prefix="evidence-gate-publish-") as scratch:
        ours, _code = gate.evaluate(
            gate.CheckOptions(repo=repo.path, head=str(merge), event=event, today=today, run=False),
            Path(scratch) / "receipt.json",
        )
    if ours.get("state") != "final":
        return ours
    extra = [Violation(problem.row, str(problem))] if problem is not None else []
    accepted, refusal = _accept(repo, ours, theirs, str(baseline), str(merge), t.workflow_path)
    out = compose(ours, theirs if accepted else None, extra + ([refusal] if refusal else []))
    out["published_from"] = {
        "run_id": t.run_id,
        "head_sha": t.head_sha,
        "accepted": accepted,
        "receipt_sha256": sha256_of(theirs) if theirs is not None else None,
    }
    return out


def _accept(
    repo: Repo, ours: Mapping[str, Any], theirs: Mapping[str, Any] | None, baseline: str, merge: str, workflow: str
) -> tuple[bool, Violation | None]:
    """Whether the fork's property results count here, and the row that says why not (None: not needed)."""
    rows = {v["row"] for v in receipt_access.violations(ours)} | {receipt_access.decision_row(ours)}
    if theirs is None or rows & decision.stops_tests() or not ours["mode"].get("scored", True):
        return False, None  # no receipt (already a finding), or a verdict that no test result can change
    if (theirs.get("config", {}).get("blob"), theirs["properties"].get("list_sha256")) != (
        ours["config"].get("blob"),
        ours["properties"].get("list_sha256"),
    ):
        return False, Violation(
            EVENT_MISMATCH,
            "the receipt judged another configuration or property list than "
            "the baseline's; re-run the gate workflow on the pull request",
        )
    list_path = str(ours["config"].get("effective", {}).get("properties", {}).get("list", "SCORE_PROPERTIES"))
    touched = _runner_paths(repo, baseline, merge, list_path)
    if touched:
        return False, Violation(
            RUN_INTEGRITY,
            f"the patch changes {', '.join(touched[:5])}, which decides what "
            "the fork's run executed: its property results are not accepted; a maintainer must "
            "land that change on the base branch first",
        )
    if theirs.get("mode", {}).get("run") is False:
        why = _runs_properties(repo, baseline, workflow)
        if why:
            return False, Violation(
                RUN_INTEGRITY,
                f"the receipt says the properties were not run (`run: false`), but {why}: a receipt without "
                "property results is not accepted from this workflow; re-run the gate workflow on the pull request",
            )
        return True, None  # the base's workflow runs the static lanes only; the receipt says so and holds no ledger
    broken = facts_problems(ours, theirs, merge)
    if broken:
        return False, Violation(
            RUN_INTEGRITY,
            f"the receipt's claims and its own facts do not hold up ({'; '.join(broken[:4])}): its property "
            "results are not accepted; re-run the gate workflow on the pull request (a receipt edited after the "
            "run, or not written by the gate)",
        )
    return True, None


def _runs_properties(repo: Repo, baseline: str, workflow: str) -> str | None:
    """Why the base branch's workflow `workflow` would have run the properties (None: it says `run-properties: false`
    on every evidence-gate step it has). The patch leaves workflows untouched (checked before), so this is the run's."""
    data = repo.read_blob(baseline, workflow) if workflow.startswith(RUNNER_PREFIXES[0]) else None
    if data is None:
        return f"the run's workflow {workflow or '(unnamed)'} is not on the base branch"
    try:
        jobs = _obj(yaml.safe_load(data)).get("jobs")
    except yaml.YAMLError:
        return f"the base branch's {workflow} does not parse"
    steps = [
        _obj(step)
        for job in _obj(jobs).values()
        for step in (_obj(job).get("steps") or [])
        if "evidence-gate" in str(_obj(step).get("uses") or "") or _obj(step).get("uses") == "./"
    ]
    with_ = [_obj(step.get("with")) for step in steps]
    if not steps or any(
        str(w.get("run-properties", w.get("run_properties", "true"))).lower() != "false" for w in with_
    ):
        return f"the base branch's {workflow} runs evidence-gate with the property lane (`run-properties` is not false)"
    return None


def facts_problems(ours: Mapping[str, Any], theirs: Mapping[str, Any], merge: str) -> list[str]:
    """Where the fork's receipt disagrees with the baseline's plan and list, the static lanes re-derived here, or its
    own facts (run_facts: the rows its ledgers and digest records show, and the decision its rows give)."""
    props = theirs.get("properties", {})
    if props.get("skipped"):
        return [f"the properties were not run: {str(props['skipped'])[:200]}"]
    found = _plan_problems(ours, theirs, merge)
    found += _static_problems(ours, theirs)
    return found + run_facts.contradictions(theirs)


def _plan_problems(ours: Mapping[str, Any], theirs: Mapping[str, Any], merge: str) -> list[str]:
    """The fork's seed ledgers against the baseline's plan and list: one per listed property, for the whole plan."""
    props = theirs.get("properties", {})
    effective = ours["config"].get("effective", {}).get("properties", {})
    plan = effective.get("seeds")
    if props.get("plan") != plan:
        return [f"plan {props.get('plan')} is not the baseline's {plan}"]
    found = []
    if props.get("shard") is not None:
        found.append(f"its properties are shard {props.get('shard')}'s, not the whole plan's")
    fresh = props.get("fresh_seeds")
    if not isinstance(fresh, list) or len(fresh) < effective.get("fresh_seeds", 0):  # each shard draws its own
        found.append(f"fresh seeds {fresh} are fewer than the {effective.get('fresh_seeds')} the baseline asks for")
    ledgers = receipt_access.ledgers(theirs)
    for ledger in ledgers:
        node = str(ledger.get("property_id"))[:100]
        if ledger.get("patch_id") != merge or sorted(ledger.get("planned_seeds") or []) != sorted(plan or []):
            found.append(f"ledger {node} is not for {merge[:12]} and the whole plan")
        elif ledger.get("fresh_seeds") != fresh:
            found.append(f"ledger {node}'s fresh seeds are not the run's {fresh}")
        elif set(ledger.get("attempted_seeds") or []) - set(plan or []) - set(fresh or []):
            found.append(f"ledger {node} attempted seeds outside the plan and the fresh seeds")
    ids = [str(x.get("property_id")) for x in ledgers]
    for entry in ours["properties"].get("list", []):
        node = str(entry.get("node"))
        if not any(i == node or i.startswith(node + "::") for i in ids):
            found.append(f"no ledger for {node[:100]}")
    return found


def _static_problems(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> list[str]:
    """The fork's digest records, replays and excuses against the static lanes re-derived here from git objects."""
    found = []
    records = [(d.get("id"), d.get("output_sha256")) for d in ours.get("fixtures", {}).get("digests", [])]
    digests = theirs.get("fixtures", {}).get("digests") or []
    if [(d.get("id"), d.get("output_sha256")) for d in digests if isinstance(d, dict)] != records:
        found.append("its digest records are not the baseline's")
    freeze = ours.get("freeze", {})
    expected = {(i, "removed") for i in freeze.get("removed") or []} | {
        (i, "expired") for i in freeze.get("expired") or []
    }
    replays = [r for r in theirs.get("freeze", {}).get("replays") or [] if isinstance(r, dict)]
    if {(r.get("id"), r.get("kind")) for r in replays} != expected or len(replays) != len(expected):
        found.append("its freeze replays are not those of the entries the patch removed or let expire")
    claimed = receipt_access.violations(theirs)
    runs = ours["config"].get("effective", {}).get("freeze", {}).get("removal_runs")
    for r in replays:
        sides = [r.get("baseline"), r.get("head")] if r.get("kind") == "removed" else [r.get("head")]
        ok = all(isinstance(o, list) and o and all(x == "passed" for x in o) for o in sides)
        row, prefix = (
            (FREEZE_REMOVED_STILL_FAILING, f"removed entry {r.get('id')!r}:")
            if r.get("kind") == "removed"
            else (FREEZE_EXPIRED, f"entry {r.get('id')!r} expired")
        )
        if r.get("kind") == "removed" and r.get("runs") != runs:
            found.append(f"replay of {str(r.get('id'))[:100]!r} ran {r.get('runs')} times, not the baseline's {runs}")
        if r.get("ok") is not ok:
            found.append(f"replay of {str(r.get('id'))[:100]!r} says ok: {r.get('ok')!r} of its outcomes")
        elif not ok and not any(v.get("row") == row and str(v.get("message")).startswith(prefix) for v in claimed):
            found.append(f"replay of {str(r.get('id'))[:100]!r} did not pass, and it claims no {row}")
    active = set(freeze.get("active") or [])
    for ledger in receipt_access.ledgers(theirs):
        excuse = ledger.get("excused_by")
        if excuse is not None and excuse not in active:
            found.append(
                f"ledger {str(ledger.get('property_id'))[:100]} is excused by {str(excuse)[:100]!r}, no active entry"
            )
    return found


def verdict(
    reporter: action_verdict.Reporter, inputs: Inputs, t: Trigger, repo: Repo, today: Any
) -> tuple[ReceiptJson, str]:
    """The receipt to post for the triggering run, and the pull request's base branch ("" when it was not found);
    every doubt is a failing row, never a success."""
    rest = Rest(reporter.env.get("GITHUB_API_URL") or "https://api.github.com", inputs.token, sleep=reporter.sleep)
    try:
        pr = find_pull(rest, t)
    except Refused as exc:
        return _refused(t, [Violation(exc.row, str(exc))]), ""
    except RestError as exc:
        return _refused(
            t,
            [
                Violation(
                    EVENT_MISMATCH,
                    f"cannot look up the pull request of run {t.run_id} ({exc}); give the job `pull-requests: read`",
                )
            ],
        ), ""
    theirs: ReceiptJson | None = None
    problem: Refused | None = None
    try:
        theirs = download_receipt(rest, t, inputs.artifact_name)
    except Refused as exc:
        problem = exc
    named = [c for c in _commits(repo, theirs) if _hex40(c)] if theirs is not None else []
    try:
        fetch_commits(repo, pr, [str(c) for c in named], reporter.env, inputs.token)
        return judge(repo, t, pr, theirs, problem, today), pr.base_ref
    except Refused as exc:
        found = [Violation(exc.row, str(exc))] + ([Violation(problem.row, str(problem))] if problem else [])
        return _refused(t, found), pr.base_ref
    except GateError as exc:
        if exc.row is None:
            raise
        return _refused(t, [Violation(exc.row, exc.describe())]), pr.base_ref


def run(reporter: action_verdict.Reporter, inputs: Inputs, event_path: Path, now: Callable[[], datetime]) -> int:
    """The publish job: judge the triggering run's pull request and post its check run; returns the exit code."""
    env = reporter.env
    t = parse_trigger(event_path, env.get("GITHUB_EVENT_NAME") or None)
    if t.event != "pull_request":
        reporter.say(
            f"::notice::run {t.run_id} was triggered by {t.event or 'an unknown event'}, not a pull "
            "request: its own job posted the check run; nothing to publish"
        )
        return 0
    repo = Repo(Path(env.get("GITHUB_WORKSPACE") or "."))
    base_branch = ""
    try:
        receipt, base_branch = verdict(reporter, inputs, t, repo, inputs.today or now().date())
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # a receipt shaped to crash us
        receipt = _refused(
            t,
            [
                Violation(
                    RUN_INTEGRITY,
                    f"the receipt of run {t.run_id} could not be checked "
                    f"({type(exc).__name__}: {exc}); it is not accepted",
                )
            ],
        )
    receipt_path = Path(inputs.receipt_path)
    if not receipt_path.is_absolute():
        receipt_path = Path(env.get("GITHUB_WORKSPACE") or ".") / receipt_path
    reporter.notes.append(
        f"published for run {t.run_id} (head {t.head_sha[:12]}); the static lanes were re-derived here from git objects"
    )
    target = action_verdict.Target(
        repository=t.repository or env.get("GITHUB_REPOSITORY") or "",
        check_sha=t.head_sha,
        check_name=inputs.check_name,
        token=inputs.token,
        receipt_path=receipt_path,
        receipt_path_input=inputs.receipt_path,
        upload_name=inputs.artifact_name if inputs.upload else None,
        # The base repository's own runs on the baseline, read with this job's token under mode gate's caps.
        delta_artifact=inputs.artifact_name,
        base_branch=base_branch,
    )
    return action_verdict.post(reporter, target, receipt, now)
