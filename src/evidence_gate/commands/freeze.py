"""`evidence-gate freeze hash NODE` and `evidence-gate freeze propose --receipt R --test NODE`.

`hash` runs the test sealed on the checkout's HEAD commit and prints the sha256 of its failing assertion, the value
a ledger entry's `assertion_hash` must carry. `propose` prints a ready entry only for a `freeze_eligible` ledger.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from evidence_gate.config import CONFIG_PATH, parse_config
from evidence_gate.errors import EXIT_FAIL, GateError, InputInvalid
from evidence_gate.git import Repo
from evidence_gate.lanes.properties.launch import pytest_job, unloadable
from evidence_gate.row_ids import CONFIG_INVALID, RUN_INTEGRITY
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.run import Workspace, limits, run_install, run_worker
from evidence_gate.sealed.worker import confinement
from evidence_gate.sealed.worker.protocol import EV, Event, Kind, matches_spec
from evidence_gate.strict_parse import load_json

DEFAULT_TTL_DAYS = 14
# What each non-eligible status means for a person who wants to freeze the test.
WHY = {
    "incomplete_fields": "the ledger is missing fields, so the run cannot be trusted",
    "empty_plan": "no seed was planned, so nothing was measured",
    "early_stop_incomplete": "the run stopped before every planned seed was attempted",
    "seed_gap": "a planned seed was not attempted exactly once",
    "not_replayable": "the same seed did not give the same outcome and examples when run again",
    "budget_pass_no_freeze": "the property passed every seed; there is nothing to freeze",
    "seed_mismatch": "the failing seed is not among the attempts, or did not fail again on replay (a flake)",
    "oracle_unreviewed": "the property's oracle is a model draft; a human must review it first",
    "shrink_unstable": "two shrink passes gave different minimal examples",
    "fixture_unbound": "the ledger is not bound to a fixture hash",
}


def failing_hash(repo: Repo, node: str) -> tuple[str, dict[str, Any]]:
    """Run `node` sealed on HEAD (each planned seed until one fails); the assertion hash and the failing result."""
    head = repo.resolve("HEAD")
    if head is None:
        raise GateError(f"{repo.path} has no HEAD commit", fix="commit the test first", usage=True)
    try:
        config = parse_config(repo.read_blob(head, CONFIG_PATH))
    except InputInvalid as exc:
        raise GateError(exc.message, fix=f"correct {CONFIG_PATH}", row=CONFIG_INVALID) from exc
    props = config.properties
    ws = Workspace()
    try:
        tree = ws.root / "head"
        sealed_tree.build(repo, head, head, frozenset(), tree, owner=ws.runner.owner)
        for violation in unloadable(config, tree, ws.runner):
            raise GateError(violation.message, row=RUN_INTEGRITY)  # the message ends with the fix
        limit = limits(props.memory_mb, props.timeout_s)
        site = None
        if props.install:
            # The same step the gate runs before its workers, so a property that needs a dependency can be hashed.
            site = ws.site("site-head")
            installed = run_install(ws, "install-head", props.install, tree, site, limit, props.timeout_s)
            if installed.timed_out or installed.exit_code != 0:
                what = "timed out" if installed.timed_out else f"exited {installed.exit_code}"
                raise GateError(
                    f"properties.install {what} on HEAD, so {node} could not run: {installed.log_tail[-600:].strip()}",
                    fix="make properties.install work on HEAD",
                    row=RUN_INTEGRITY,
                )
        runs: dict[str, list[list[Any]]] = {node: [[s, Kind.HASH] for s in props.seeds or (0,)]}
        job = pytest_job(config, tree, runs, limit, site=site, shrink_reruns=0)
        result = run_worker(ws, "hash", job, props.timeout_s, lambda _event: None)
    finally:
        ws.close()
    unconfined = confinement.shortfall(
        next((e for e in result.events if e.get(EV) == Event.CONFINED), None), install=False
    )
    if unconfined:
        raise GateError(
            f"{node} could not run sealed: {unconfined}",
            row=RUN_INTEGRITY,
            fix="run `freeze hash` on a Linux kernel with Landlock and seccomp (or in the action's image)",
        )
    _check_provenance(result.events, node)
    for event in result.events:
        if (
            event.get(EV) == Event.RESULT
            and matches_spec(str(event.get("node")), node)
            and event.get("outcome") == "failed"
            and event.get("assertion_hash")
        ):
            return str(event["assertion_hash"]), event
    raise nothing_to_hash(node, [str(e.get("outcome")) for e in result.events if e.get(EV) == Event.RESULT])


def nothing_to_hash(node: str, outcomes: list[str]) -> GateError:
    """The usage error (exit 2) for a node with no failure on HEAD: not collected, or it passed on every seed."""
    if not outcomes:
        return GateError(
            f"{node} was not collected on HEAD, so there is no assertion to hash",
            fix="check the node id (path::test, as pytest prints it) and that the file exists on HEAD",
            usage=True,
        )
    return GateError(
        f"{node} did not fail on HEAD ({', '.join(outcomes)}) with any planned seed, so there is no assertion to hash",
        fix="check out and run `freeze hash` on the commit where it fails (a test that passes needs no freeze entry)",
        usage=True,
    )


def _check_provenance(events: list[dict[str, Any]], node: str) -> None:
    """A hash of other code than HEAD's is no hash: stop when the code under test was loaded from elsewhere."""
    wrong = [m for e in events if e.get(EV) == Event.PROVENANCE for m in e.get("mismatches") or []]
    if wrong:
        first = wrong[0]
        raise GateError(
            f"{first.get('module')} was loaded from {first.get('file')}, not from HEAD's "
            f"{first.get('expected')}, so {node} did not run on HEAD's code",
            fix="make sure nothing the test imports puts another copy first on sys.path",
            row=RUN_INTEGRITY,
        )


def _slug(node: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", node.rsplit("::", maxsplit=1)[-1]).strip("-")[:100] or "frozen-test"


def propose(receipt: dict[str, Any], node: str, today: date) -> str:
    """A ledger entry (YAML) for `node`, or GateError naming the status that blocks it."""
    ledgers = [
        x
        for x in receipt.get("properties", {}).get("ledgers", [])
        if x.get("property_id") == node or matches_spec(str(x.get("property_id")), node)
    ]
    if not ledgers:
        raise GateError(
            f"the receipt has no seed ledger for {node}",
            fix="pass the property's node id as listed in the receipt's properties.ledgers",
            usage=True,
        )
    blocked = [x for x in ledgers if x.get("status") != "freeze_eligible"]
    if blocked:
        status = str(blocked[0].get("status"))
        raise GateError(
            f"{node} is not freeze_eligible: its seed ledger closed as {status} ({WHY.get(status, 'unknown status')})",
            fix="no freeze can be proposed for it",
        )
    ledger = ledgers[0]
    digest = str(ledger.get("assertion_hash") or "")
    if len(digest) < 32:
        raise GateError(f"{node}'s ledger carries no assertion hash", fix="re-run the gate with this version")
    expires = today + timedelta(days=DEFAULT_TTL_DAYS)
    return (
        f"  - id: {_slug(ledger['property_id'])}\n"
        f"    test: {ledger['property_id']}\n"
        f'    assertion_hash: "{digest}"\n'
        f'    added_at: "{today.isoformat()}"\n'
        f'    expires: "{expires.isoformat()}"\n'
        f"    owner: humans\n"
        f"    reason: timing   # one of timing | network | order | infra\n"
    )


def main(args: argparse.Namespace, today: Callable[[], date]) -> int:
    """Dispatch the freeze helpers."""
    if args.freeze_command == "hash":
        digest, event = failing_hash(Repo(args.repo), args.node)
        sys.stdout.write(f"{digest}\n")
        for bound in event.get("assertion_bound") or []:  # the exception type and place the hash binds
            sys.stderr.write(f"binds: {bound}\n")
        if event.get("falsifying"):
            sys.stderr.write(f"{event['falsifying']}\n")
        return 0
    try:
        receipt = load_json(Path(args.receipt).read_bytes())
    except (OSError, InputInvalid) as exc:
        raise GateError(
            f"cannot read {args.receipt}: {exc}", fix="pass the receipt.json of a gate run", usage=True
        ) from exc
    if not isinstance(receipt, dict):
        raise GateError(
            f"{args.receipt} is not a receipt (not a JSON object)",
            usage=True,
            fix="pass the receipt.json written by `evidence-gate check`",
        )
    try:
        entry = propose(receipt, args.test, args.today or today())
    except GateError as exc:
        if exc.usage:
            raise
        # A refusal is a verdict (exit 10, like a failing decision), not a failure of the gate (exit 1).
        sys.stderr.write(f"evidence-gate: {exc}\n")
        return EXIT_FAIL
    sys.stdout.write(entry)
    return 0
