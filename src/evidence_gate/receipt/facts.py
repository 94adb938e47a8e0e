"""The rows a receipt's own facts show: derived from its seed ledgers' per-seed runs and its digest records.

The property lane writes its ledger and digest rows through this module, and a fork's publisher runs it again on
the receipt it downloaded, so the two cannot disagree: a row the facts show that the receipt does not claim, a fact
that contradicts another (a failing seed no run shows, a count no run reported, a status the ledger does not close
to), or a decision the claimed rows do not give, means the receipt was edited after the run. Pure: receipt values in,
rows and problems out. What it cannot see is a receipt whose facts were rewritten too, consistently.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from evidence_gate import decision
from evidence_gate.lanes.properties import seed_ledger, steering
from evidence_gate.model import Violation
from evidence_gate.receipt import access as receipt_access
from evidence_gate.row_ids import (
    FIXTURE_DIGEST_MISMATCH,
    PROPERTY_FAILED,
    PROPERTY_FAILED_FRESH_SEED,
    PROPERTY_NOT_REPLAYABLE,
    RUN_INTEGRITY,
    SEED_LEDGER_OPEN,
)
from evidence_gate.sealed.worker.protocol import CLOCK_SHIFT_S, Kind

# A seed ledger's `runs`: per attempted seed (its decimal string), what the trusted process saw its worker report.
RUNS = "runs"
MESSAGE_LIMIT = 500


def seed_record(event: Mapping[str, Any]) -> dict[str, Any]:
    """The facts of one seed's result event that its rows depend on, as the ledger keeps them."""
    examples = event.get("examples")
    return {
        "outcome": str(event.get("outcome")),
        "hypothesis": bool(event.get("hypothesis")),
        "examples": examples if isinstance(examples, int) and not isinstance(examples, bool) else None,
        "stop": str(event["stop"]) if event.get("stop") is not None else None,
        "stopped_because": str(event.get("stopped_because") or ""),
        "message": str(event.get("message") or "")[:MESSAGE_LIMIT],
    }


def replay_side(event: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """What two runs of one seed must agree on, from one run's result event (None: no result)."""
    if event is None:
        return None
    return {
        "outcome": str(event.get("outcome")),
        "examples": event.get("examples") if isinstance(event.get("examples"), int) else None,
        "cases": event.get("cases") if isinstance(event.get("cases"), int) else None,
        "examples_digest": event.get("examples_digest") if isinstance(event.get("examples_digest"), str) else None,
        "assertion_hash": event.get("assertion_hash") if isinstance(event.get("assertion_hash"), str) else None,
        "falsifying": one_line(str(event["falsifying"]), 300) if event.get("falsifying") else None,
    }


def first_differing_case(original: Mapping[str, Any], replay: Mapping[str, Any] | None) -> int | None:
    """The number (from 1) of the first example whose choices differ between two runs' per-example digests."""
    a, b = list(original.get("case_digests") or []), list((replay or {}).get("case_digests") or [])
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i + 1
    return min(len(a), len(b)) + 1 if len(a) != len(b) else None


# What each replay kind changes, in a maintainer's words.
REPLAY_CONDITIONS: dict[str, str] = {
    Kind.REPLAY: "in a fresh worker",
    Kind.SHIFTED: (
        f"in a fresh worker with the clock moved by {CLOCK_SHIFT_S:g} s (7 years and 12 hours) and another "
        "PYTHONHASHSEED"
    ),
}


def replay_record(
    kind: str, seed: int, original: Mapping[str, Any], replay: Mapping[str, Any] | None, problems: str = ""
) -> dict[str, Any]:
    """The ledger's record of one replay of `seed`: both runs' facts, and what differs (`replay_differences`)."""
    record: dict[str, Any] = {
        "kind": kind,
        "seed": seed,
        "original": replay_side(original),
        "replay": replay_side(replay),
        "first_differing_example": first_differing_case(original, replay) if kind == Kind.SHIFTED else None,
        "problem": "" if replay is not None else (problems or "no result reported")[:MESSAGE_LIMIT],
    }
    record["differs"] = replay_differences(record)
    return record


# `<Cart object at 0x7f3d751a2b50>`: an object's default repr names where it lives, which differs in every process.
_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,}\b")


def _without_addresses(text: Any) -> Any:
    """A failing example as two processes can agree on it: memory addresses in default reprs left out."""
    return _ADDRESS.sub("0x…", text) if isinstance(text, str) else text


def replay_differences(record: Mapping[str, Any]) -> list[str]:
    """What differs between a seed's run and its replay: outcome, failure, and for `shifted` the examples."""
    a, b = record.get("original") or {}, record.get("replay")
    if not isinstance(b, Mapping):
        return [f"the replay reported no result ({record.get('problem') or 'no result reported'})"]
    found = []
    if a.get("outcome") != b.get("outcome"):
        found.append(f"outcome {a.get('outcome')}, then {b.get('outcome')}")
    elif a.get("outcome") == "failed":
        if a.get("assertion_hash") != b.get("assertion_hash"):
            found.append(
                f"a different failing assertion (hash {str(a.get('assertion_hash'))[:16]}, "
                f"then {str(b.get('assertion_hash'))[:16]})"
            )
        # The example's text only where the hash seed is the same: under another one, a set or dict of strings
        # prints in another order though it is the same example (the choices' digest below compares those runs).
        same_text = _without_addresses(a.get("falsifying")) == _without_addresses(b.get("falsifying"))
        if record.get("kind") != Kind.SHIFTED and not same_text:
            found.append(f"failing example {a.get('falsifying')}, then {b.get('falsifying')}")
    if record.get("kind") == Kind.SHIFTED:
        if a.get("examples") != b.get("examples"):
            found.append(f"{a.get('examples')} examples, then {b.get('examples')}")
        if a.get("examples_digest") != b.get("examples_digest"):
            first = record.get("first_differing_example")
            found.append(
                "other generated examples"
                + (f", from example {first} on" if isinstance(first, int) else "")
                + f" ({a.get('cases')} test cases, then {b.get('cases')})"
            )
    return found


def _replay_rows(ledger: Mapping[str, Any], node: str, file: str) -> list[Violation]:
    """`property-not-replayable` for each replay of the ledger that differs from its run."""
    test = node.rsplit("::", maxsplit=1)[-1].split("[", 1)[0]
    rows = []
    for record in ledger.get("replays") or ():
        if not isinstance(record, Mapping) or not record.get("differs"):
            continue
        condition = REPLAY_CONDITIONS.get(str(record.get("kind")), str(record.get("kind")))
        rows.append(
            Violation(
                PROPERTY_NOT_REPLAYABLE,
                f"{node}: seed {record.get('seed')} did not replay {condition}: {'; '.join(record['differs'])}. "
                f"So the outcome depends on something besides the seed: {test} or the code it calls reads the "
                "clock, hash() order of strings, the environment or state left by an earlier run; make it depend "
                "only on its inputs (pass the time in, sort instead of iterating a set or dict of strings)",
                file,
            )
        )
    return rows


def seed_issue(seed: Any, run: Mapping[str, Any], trials: int) -> str | None:
    """Why one seed's run does not count as a clean run, from its record (counts are Hypothesis' own)."""
    outcome = run.get("outcome")
    if outcome in {"skipped", "xfailed", "xpassed"}:
        # A skipped or expected-to-fail test is no evidence; a whole-file entry includes the tests that skip here.
        return (
            f"{outcome} on seed {seed}: {run.get('message', '')}".rstrip(": ")
            + " (not evidence: list only the tests that run here as node entries in SCORE_PROPERTIES)"
        )
    if outcome == "error":
        return f"{outcome} on seed {seed}: {run.get('message', '')}".rstrip(": ")
    if outcome not in {"passed", "failed"}:
        return f"unknown outcome {outcome!r} on seed {seed}"
    if outcome != "passed" or not run.get("hypothesis"):
        return None
    examples, stop = run.get("examples"), run.get("stop")
    if not isinstance(examples, int):
        return (
            f"Hypothesis reported no statistics for seed {seed}, so its examples cannot be counted (its "
            "statistics hook did not run: was a Hypothesis internal replaced?)"
        )
    if stop == "finished":
        return None  # the search space was exhausted: every distinct example ran, however few
    if stop == "max_iterations":
        return (
            f"Hypothesis stopped on seed {seed} after {examples} valid examples: almost every generated example "
            "was discarded by the property's own assume()/filter(); loosen them or draw valid values directly"
        )
    if examples < trials:
        why = f" (Hypothesis stopped because: {run.get('stopped_because')})" if run.get("stopped_because") else ""
        return f"ran {examples} examples on seed {seed}, fewer than the {trials} declared{why}"
    return None


def grouped(issues: Iterable[str]) -> list[str]:
    """One line per distinct issue: the same problem on several seeds is named once, with all of its seeds."""
    seeds: dict[str, list[str]] = {}
    for issue in issues:
        found = re.search(r" on seed (\d+)", issue)
        key = issue[: found.start()] + " on seed {}" + issue[found.end() :] if found else issue
        seeds.setdefault(key, [])
        if found and found.group(1) not in seeds[key]:
            seeds[key].append(found.group(1))
    return [
        key.replace(" on seed {}", f" on seed{'s' if len(s) > 1 else ''} {', '.join(s)}") if s else key
        for key, s in seeds.items()
    ]


def _runs(ledger: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = ledger.get(RUNS)
    return {str(k): v for k, v in found.items() if isinstance(v, Mapping)} if isinstance(found, Mapping) else {}


def seed_issues(ledger: Mapping[str, Any], trials: int) -> list[str]:
    """Each attempted seed's run issue, in the order the seeds were attempted."""
    runs = _runs(ledger)
    issues = []
    for seed in dict.fromkeys(ledger.get("attempted_seeds") or []):
        run = runs.get(str(seed))
        issue = seed_issue(seed, run, trials) if run is not None else None
        if issue:
            issues.append(issue)
    return issues


def one_line(example: str, limit: int = 200) -> str:
    """Hypothesis' multi-line example (`test_x(\\n    x=1,\\n)`) as one line: `test_x(x=1)`, cut at `limit`."""
    text = " ".join(line.strip() for line in example.splitlines() if line.strip())
    text = text.replace("( ", "(").replace(", )", ")").replace(",)", ")")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _failure_detail(ledger: Mapping[str, Any]) -> str:
    parts = []
    if ledger.get("assertion_hash"):
        parts.append(f"assertion hash {str(ledger['assertion_hash'])[:32]}")
    record = ledger.get("failure")
    if isinstance(record, Mapping) and record.get("exception"):
        parts.append(one_line(str(record["exception"]), 160))
    if ledger.get("falsifying"):
        parts.append(one_line(str(ledger["falsifying"])))
    else:
        message = _runs(ledger).get(str(ledger.get("failing_seed")), {}).get("message")
        if message:
            parts.append(str(message)[:200])
    return f" ({'; '.join(parts)})" if parts else ""


def ledger_rows(ledger: Mapping[str, Any], trials: int) -> list[Violation]:
    """A closed ledger's rows from its own facts: its seeds' run issues, an open ledger, a failure nothing excuses."""
    node = str(ledger.get("property_id"))
    file = node.split("::", 1)[0]
    plan = list(ledger.get("planned_seeds") or [])
    rows = [Violation(RUN_INTEGRITY, f"{node}: {issue}", file) for issue in grouped(seed_issues(ledger, trials))]
    status = seed_ledger.close(ledger)
    if status in seed_ledger.OPEN:
        rows.append(
            Violation(
                SEED_LEDGER_OPEN,
                f"{node}: seed ledger did not close ({status}): planned {plan}, attempted {ledger.get('attempted_seeds')}",
                file,
            )
        )
    rows += _replay_rows(ledger, node, file)
    failing = list(ledger.get("failing_seeds") or [])
    recorded = ledger.get("steering")
    steered = steering.rows(node, file, recorded if isinstance(recorded, Mapping) else None)
    if not failing or ledger.get("excused_by") is not None:
        return rows + steered
    planned_fail = [s for s in failing if s in plan]
    record = ledger.get("failure")
    record = record if isinstance(record, Mapping) else {}
    # On the failing line of the locked test (the property file is locked: its baseline line is the head line).
    path, line = str(record.get("path") or file), record.get("line")
    detail = _failure_detail(ledger)
    excuse = ledger.get("excuse")
    if isinstance(excuse, Mapping) and excuse.get("why"):
        detail += f"; {excuse['why']}"  # why the freeze entry whose hash it carries does not excuse it
    if planned_fail:
        message = f"{node} failed on planned seed(s) {', '.join(map(str, planned_fail))}{detail}"
        rows.append(Violation(PROPERTY_FAILED, message, path, line))
    else:
        message = f"{node} passed the plan but failed on fresh seed {failing[0]}{detail}"
        rows.append(Violation(PROPERTY_FAILED_FRESH_SEED, message, path, line))
    return rows + steered


def digest_rows(digests: Iterable[Mapping[str, Any]], path: str) -> list[Violation]:
    """A row for each digest record whose produced output is not the recorded one, and one `run-integrity` row for
    the records the sealed run never produced: nothing was compared, so nothing mismatched."""
    rows = []
    unproduced: list[Mapping[str, Any]] = []
    for record in digests:
        actual, expected = record.get("produced_sha256"), str(record.get("output_sha256"))
        if record.get("status") == "unproduced" and not actual:
            unproduced.append(record)
            continue
        if actual == expected:
            continue
        why = f"the producer returned sha256 {actual}" if actual else str(record.get("problem") or "not run")
        rows.append(
            Violation(
                FIXTURE_DIGEST_MISMATCH,
                f"digest record {record.get('id')!r}: expected sha256 {expected[:16]}…, {why}",
                path,
            )
        )
    if unproduced:
        rows.append(_unproduced_row(unproduced, path))
    return rows


def _unproduced_row(records: list[Mapping[str, Any]], path: str) -> Violation:
    names = ", ".join(repr(r.get("id")) for r in records[:5]) + (
        f" and {len(records) - 5} more" if len(records) > 5 else ""
    )
    noun, verb = ("digest record", "was") if len(records) == 1 else ("digest records", "were")
    why = str(records[0].get("problem") or "no digest reported")
    return Violation(
        RUN_INTEGRITY,
        f"{noun} {names} {verb} not produced: the sealed digest run did not complete ({why}); fix that, then re-run",
        path,
    )


def ledger_contradictions(ledger: Mapping[str, Any]) -> list[str]:
    """Facts of one ledger that contradict each other (what the gate writes never does)."""
    node = str(ledger.get("property_id"))[:100]
    runs = _runs(ledger)
    attempted = [str(s) for s in ledger.get("attempted_seeds") or []]
    found = []
    if RUNS not in ledger:
        found.append(f"ledger {node} records no runs")
    if seed_ledger.close(ledger) != ledger.get("status"):
        found.append(f"ledger {node} does not close as it says ({ledger.get('status')})")
    missing = [s for s in dict.fromkeys(attempted) if s not in runs]
    if missing and not ledger.get("stopped_early"):
        found.append(f"ledger {node} attempted seed(s) {', '.join(missing)} with no result and says it did not stop")
    if set(runs) - set(attempted):
        found.append(f"ledger {node} has results for seeds it never attempted")
    failed = sorted(int(s) for s, r in runs.items() if r.get("outcome") == "failed")
    failing = list(ledger.get("failing_seeds") or [])
    if sorted(failing) != failed:
        found.append(f"ledger {node} names failing seeds {failing}, but its runs failed on {failed}")
    if ledger.get("failing_seed") != (failing[0] if failing else None):
        found.append(f"ledger {node}'s failing_seed {ledger.get('failing_seed')} is not its first failing seed")
    if not failing and any(ledger.get(k) for k in ("assertion_hash", "falsifying", "failure", "excused_by")):
        found.append(f"ledger {node} records a failure but no failing seed")
    for record in ledger.get("replays") or ():
        if not isinstance(record, Mapping) or record.get("differs") != replay_differences(record):
            found.append(f"ledger {node} records a replay whose differences are not its facts'")
            continue
        ran = runs.get(str(record.get("seed")), {})
        if (record.get("original") or {}).get("outcome") != ran.get("outcome"):
            found.append(f"ledger {node}'s replay of seed {record.get('seed')} is not of the run it records")
    counted = {s: r["examples"] for s, r in runs.items() if isinstance(r.get("examples"), int)}
    if dict(ledger.get("examples") or {}) != counted:
        found.append(f"ledger {node}'s example counts are not its runs' ({ledger.get('examples')} vs {counted})")
    return found


def claimed_decision_problem(receipt: Mapping[str, Any]) -> str | None:
    """How the receipt's decision differs from the one its own violations give, or None."""
    try:
        violations = [Violation(str(v.get("row")), "") for v in receipt_access.violations(receipt)]
        facts = set()
        if receipt.get("mode", {}).get("scored") is False:
            facts.add(decision.FACT_HUMAN)
        removed = receipt.get("freeze", {}).get("removed")
        if removed and not any(v.row.startswith("freeze-") for v in violations):
            facts.add(decision.FACT_FREEZE_SHRANK)
        result = decision.decide(violations, frozenset(facts))
    except KeyError as exc:
        return f"it names a row the table does not have ({exc})"
    claimed: Mapping[str, Any] = receipt_access.decision(receipt) or {}
    expected: Mapping[str, Any] = result.to_json()
    for key in ("row", "gate", "exit_code"):
        if claimed.get(key) != expected[key]:
            return f"its decision {key} {claimed.get(key)!r} is not {expected[key]!r}, what its own violations give"
    if receipt.get("ok") is not result.ok:
        return f"it says ok: {receipt.get('ok')!r} beside the row {result.row.id}"
    return None


def _key(v: Violation | Mapping[str, Any]) -> tuple[Any, ...]:
    if isinstance(v, Violation):
        return (v.row, v.path, v.line, v.message)
    return (v.get("row"), v.get("path"), v.get("line"), v.get("message"))


def derived_rows(receipt: Mapping[str, Any]) -> list[Violation]:
    """Every row the receipt's ledgers and digest records show."""
    props = receipt.get("properties", {})
    trials = props.get("trials")
    rows: list[Violation] = []
    for ledger in receipt_access.ledgers(receipt):
        rows += ledger_rows(ledger, trials if isinstance(trials, int) else 0)
    digests = receipt.get("fixtures", {}).get("digests") or []
    path = receipt.get("config", {}).get("effective", {}).get("fixtures", {}).get("digests", "")
    rows += digest_rows([d for d in digests if isinstance(d, Mapping)], str(path))
    return rows


def contradictions(receipt: Mapping[str, Any]) -> list[str]:
    """Each way the receipt's claims (violations, decision) and its facts (ledgers, digests) disagree."""
    found = [c for ledger in receipt_access.ledgers(receipt) for c in ledger_contradictions(ledger)]
    for d in receipt.get("fixtures", {}).get("digests") or []:
        matched = d.get("produced_sha256") == d.get("output_sha256")
        if d.get("status") != ("match" if matched else "mismatch"):
            found.append(f"digest record {str(d.get('id'))[:100]!r} says {d.get('status')!r} of its hashes")
    claimed = {_key(v) for v in receipt_access.violations(receipt)}
    for row in derived_rows(receipt):
        if _key(row) not in claimed:
            found.append(f"its facts show {row.row} ({row.message[:200]}), which it does not claim")
    problem = claimed_decision_problem(receipt)
    if problem:
        found.append(problem)
    return found
