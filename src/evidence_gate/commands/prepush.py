"""`evidence-gate pre-push`: the static lanes on the commit being pushed, against the branch a pull request targets.

An agent that runs git hooks learns before it pushes that it touched locked evidence, probed the harness or grew
the freeze ledger. Nothing of the patch runs here; what only the sealed run can settle (a removed entry's replay,
an expired entry's test) is listed as left to CI and does not block the push. The CI gate stays the verdict.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from evidence_gate import contexts, decision, gate, visible
from evidence_gate.errors import EXIT_FAIL, EXIT_INTERNAL, GateError
from evidence_gate.fetch_advice import fetch_command, remote_names
from evidence_gate.git import NULL_OID, Repo
from evidence_gate.lanes.locked_paths import display_path
from evidence_gate.report.registry import violations_of
from evidence_gate.row_ids import FREEZE_EXPIRED, FREEZE_REMOVAL_UNVERIFIED, HISTORY_MISSING

# Rows a static run cannot settle: the sealed run replays removals and re-runs expired entries' tests.
LEFT_TO_CI = frozenset({FREEZE_REMOVAL_UNVERIFIED, FREEZE_EXPIRED})
AGAINST_FIX = (
    "name the branch pull requests target: `args: [--against, origin/main]` on the hook in "
    ".pre-commit-config.yaml (or `evidence-gate pre-push --against origin/main`), or run "
    "`git remote set-head origin --auto` so origin/HEAD names the default branch"
)


@dataclass(frozen=True)
class Target:
    """What the hook compares: the pushed commit and the revision the baseline is taken from, with why."""

    head: str
    against: str
    why: str


def _remote_name(repo: Repo, env: Mapping[str, str]) -> str:
    """The remote being pushed to (pre-commit passes it), else the current branch's, else `origin`."""
    if env.get("PRE_COMMIT_REMOTE_NAME"):
        return env["PRE_COMMIT_REMOTE_NAME"]
    proc = repo.run("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{upstream}", check=False)
    upstream = proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else ""
    return upstream.split("/", 1)[0] if "/" in upstream else "origin"


def choose_target(repo: Repo, against: str | None, head: str | None, env: Mapping[str, str]) -> Target | None:
    """The pushed commit and the baseline's revision; None when the push deletes a branch (nothing to judge).

    The baseline, first that applies: `--against`; the remote's default branch (`refs/remotes/R/HEAD`, where a pull
    request goes); the current branch's upstream; the remote's current tip of the pushed branch
    (`PRE_COMMIT_FROM_REF`). None of these is a usage error naming `--against`.
    """
    pushed = head or env.get("PRE_COMMIT_TO_REF") or "HEAD"
    if pushed == NULL_OID:
        return None
    if against:
        return Target(pushed, against, "--against")
    remote = _remote_name(repo, env)
    default = f"refs/remotes/{remote}/HEAD"
    if repo.resolve(default) is not None:
        return Target(pushed, default, f"{remote}'s default branch")
    if repo.resolve("@{upstream}") is not None:
        return Target(pushed, "@{upstream}", "the branch's upstream")
    from_ref = env.get("PRE_COMMIT_FROM_REF", "")
    if from_ref and from_ref != NULL_OID and repo.resolve(from_ref) is not None:
        return Target(pushed, from_ref, f"{remote}'s current tip of the pushed branch")
    raise GateError(
        f"no branch to compare the push with: {default} does not exist and the current branch has no upstream",
        fix=AGAINST_FIX,
        usage=True,
    )


def _resolve(repo: Repo, target: Target) -> tuple[str, str]:
    """The pushed commit and the baseline's revision as ids; a name that resolves to nothing stops with local advice.

    This is a hook on a developer's clone, so the fix is a local `git fetch` or a spelling, not a CI checkout setting.
    """
    head, base = repo.resolve(target.head), repo.resolve(target.against)
    if head is None:
        raise GateError(
            f"the pushed revision {target.head!r} does not exist in this repository",
            fix="check the spelling of --head (a branch, tag or commit of this clone)",
            row=HISTORY_MISSING,
        )
    if base is None:
        raise GateError(
            f"the revision {target.against!r} to compare the push with ({target.why}) does not exist in this "
            "repository",
            fix=f"check its spelling, or fetch it first: `{fetch_command(target.against, remote_names(repo))}`",
            row=HISTORY_MISSING,
        )
    return head, base


def verdict(receipt: Mapping[str, Any]) -> tuple[decision.Decision, list[str], list[str]]:
    """The hook's decision over the receipt's findings without the rows left to CI, and the two sets of lines."""
    found = violations_of(receipt)
    blocking = [v for v in found if v.row not in LEFT_TO_CI]
    later = [v.render() for v in found if v.row in LEFT_TO_CI]
    return decision.decide(blocking), [v.render() for v in blocking], later


def report(receipt: Mapping[str, Any], target: Target, out: TextIO) -> int:
    """Print the hook's findings and verdict; the exit code of the decision row."""
    result, lines, later = verdict(receipt)
    git = receipt.get("git") or {}
    # A receipt that stopped before the commits were resolved names none: say the revisions asked for instead.
    head, baseline = str(git.get("head") or target.head)[:12], str(git.get("baseline") or target.against)[:12]
    out.write(
        display_path(
            f"evidence-gate pre-push: {head} judged against {baseline} (from {target.against}, {target.why}); "
            "static lanes only, no test runs"
        )
        + "\n"
    )
    for line in lines:
        out.write(display_path(line) + "\n")
    for line in later:
        out.write(display_path(f"left to CI (the sealed run settles it): {line}") + "\n")
    verb = "PASS" if result.ok else "FAIL"
    out.write(f"{verb}: {result.row.title} [{result.row.id}]\n")
    if result.row.exit_code == EXIT_FAIL:  # a finding about the patch, not a precondition such as missing history
        out.write(
            "the CI gate will fail this pull request the same way: undo the change to the evidence (locked "
            "files and the freeze ledger are human-owned and change only in a reviewed PR to the base branch)\n"
        )
    return result.row.exit_code


@dataclass(frozen=True)
class PrePushOptions:
    """`evidence-gate pre-push`'s arguments."""

    repo: Path
    against: str | None
    head: str | None
    today: date
    receipt: Path | None


def main(opts: PrePushOptions, env: Mapping[str, str], out: TextIO | None = None) -> int:
    """Run the static lanes for a push; the receipt is written only when `--receipt` asks for one."""
    out = out or sys.stdout
    repo = Repo(opts.repo)
    repo.toplevel()
    target = choose_target(repo, opts.against, opts.head, env)
    if target is None:
        out.write("evidence-gate pre-push: the push deletes a branch; nothing to judge\n")
        return 0
    head, base = _resolve(repo, target)
    if head != base and repo.is_ancestor(head, base):
        out.write(
            display_path(f"evidence-gate pre-push: {head[:12]} is already on {target.against}; nothing to judge") + "\n"
        )
        return 0
    check = gate.CheckOptions(repo=opts.repo, head=target.head, base=target.against, today=opts.today, run=False)
    with tempfile.TemporaryDirectory(prefix="evidence-gate-prepush-") as scratch:
        outcome = contexts.evaluate(check, opts.receipt or Path(scratch) / "receipt.json")
    if contexts.is_index(outcome.receipt):
        return _report_contexts(outcome, target, out)
    return _report_one(outcome.receipt, outcome.code, target, out)


def _report_contexts(outcome: contexts.Outcome, target: Target, out: TextIO) -> int:
    """Each judged context's report under its name, a line per context not judged; the worst exit code."""
    codes = []
    for judged in outcome.judged:
        out.write(f"context {judged.name}:\n")
        codes.append(_report_one(judged.receipt, judged.code, target, out))
    for row in outcome.receipt["contexts"]:
        if not row["judged"]:
            out.write(display_path(f"context {row['context']}: not judged ({row['why']})") + "\n")
    return contexts.worst(codes)


def _report_one(receipt: Mapping[str, Any], code: int, target: Target, out: TextIO) -> int:
    if receipt.get("state") != "final":
        for error in receipt.get("errors", []):
            print(f"evidence-gate: error: {visible.lines(str(error))}", file=sys.stderr)
        return code if code != 0 else EXIT_INTERNAL
    return report(receipt, target, out)
