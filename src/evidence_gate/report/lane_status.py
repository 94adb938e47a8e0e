"""What each lane saw, in one phrase, and the receipt's identities (commits and hashes) for the full detail."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evidence_gate import decision
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt.types import ViolationJson
from evidence_gate.report import gfm
from evidence_gate.report import properties as property_report
from evidence_gate.report import row_docs as report_rows
from evidence_gate.row_ids import EVIDENCE_PATH_EDITED

_HEX = re.compile(r"(sha256:)?([0-9a-f]{40,64})")
# The receipt section a lane fills once it ran (an aborted or precondition receipt lacks it).
_REACHED = {
    "Locked evidence": ("locked", "watched"),
    "Freeze ledger": ("freeze", "valid"),
    "Fixtures": ("fixtures", "head_tree"),
    "Harness probes": ("probes", None),
}


def _row_title(row: str) -> str:
    try:
        return decision.row(row).title
    except KeyError:
        return row


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def _reached(receipt: Mapping[str, Any], lane: str) -> bool:
    section, key = _REACHED[lane]
    value = receipt.get(section)
    return isinstance(value, dict) and (key is None or key in value)


def _not_run_reason(receipt: Mapping[str, Any]) -> str:
    """Why the property lane did not run, in the action user's terms."""
    mode = receipt.get("mode") or {}
    if mode.get("scored") is False:
        return "a human patch is not scored, so nothing ran"
    if any(v.get("row") == EVIDENCE_PATH_EDITED for v in receipt_access.violations(receipt)):
        return "locked evidence was touched, and no test runs on a tampered tree"
    if mode.get("run") is False:
        return "static lanes only (`run-properties: false`, or `--no-run`)"
    return gfm.text((receipt.get("properties") or {}).get("skipped"), 300)


def _static(receipt: Mapping[str, Any], lane: str, found: list[ViolationJson]) -> tuple[str, str]:
    if lane == "Locked evidence":
        watched = len((receipt.get("locked") or {}).get("watched") or [])
        paths = len({v.get("path") for v in found})
        return (
            ("fail", f"{_plural(paths, 'path')} touched")
            if found
            else ("pass", f"{_plural(watched, 'locked path')} untouched")
        )
    if lane == "Freeze ledger":
        freeze = receipt.get("freeze") or {}
        if found:
            return "fail", _plural(len(found), "finding")
        entries, removed = int(freeze.get("entries") or 0), len(freeze.get("removed") or [])
        if removed:
            return "pass", f"shrank by {_plural(removed, 'entry', 'entries')}, every removal replayed"
        return "pass", f"{_plural(entries, 'entry', 'entries')}; none added, extended or rewritten"
    if lane == "Fixtures":
        fixtures = receipt.get("fixtures") or {}
        if found:
            return "fail", _plural(len(found), "finding")
        digests = [d for d in fixtures.get("digests") or [] if isinstance(d, dict)]
        matched = sum(1 for d in digests if d.get("status") == "match")
        checked = [d for d in digests if d.get("status") != "unchecked"]
        records = (
            f"{matched} of {_plural(len(digests), 'digest record')} re-produced"
            if checked
            else f"{_plural(len(digests), 'digest record')} not re-produced (the property lane did not run)"
            if digests
            else "no digest records"
        )
        if fixtures.get("tree") != fixtures.get("head_tree"):
            return "unknown", f"tree changed (reported under Locked evidence); {records}"
        return "pass", f"tree unchanged; {records}"
    return ("fail", _plural(len(found), "finding")) if found else ("pass", "no probes added")


def _properties(receipt: Mapping[str, Any], found: list[ViolationJson]) -> tuple[str, str]:
    props = receipt.get("properties") or {}
    ledgers = receipt_access.ledgers(receipt)
    if not ledgers and not found:
        return "skip", f"not run: {_not_run_reason(receipt)}"
    failed = property_report.failing(receipt)
    held = sum(1 for x in ledgers if x.get("status") == "budget_pass_no_freeze")
    excused = sum(1 for x in ledgers if x.get("excused_by"))
    plan = props.get("plan") or (ledgers[0].get("planned_seeds") if ledgers else []) or []
    fresh = props.get("fresh_seeds") or []
    seeds = _plural(len(plan), "planned seed") + (f" + {len(fresh)} fresh" if fresh else "")
    trials = f" × {props['trials']} examples" if isinstance(props.get("trials"), int) else ""
    parts = []
    if failed:
        parts.append(f"{len(failed)} of {len(ledgers)} failed")
    parts.append(
        f"{_plural(held, 'property', 'properties')} held on {seeds}{trials}"
        if held == len(ledgers)
        else f"{held} of {len(ledgers)} held on {seeds}{trials}"
    )
    if excused:
        parts.append(f"{excused} failing but excused by a freeze entry")
    problems = [v for v in found if v.get("row") not in property_report.FAILED_ROWS]
    if problems:
        parts.append(_plural(len(problems), "run problem"))
    return ("fail" if found else "pass"), "; ".join(parts)


def lane_status(receipt: Mapping[str, Any], lane: str) -> tuple[str, str] | None:
    """(mark, phrase) for one lane, or None when the lane has nothing to say (preconditions that held, probes
    in a receipt from before that lane)."""
    found = report_rows.violations_by_lane(receipt).get(lane, [])
    state = receipt.get("state")
    row = str(receipt_access.decision_row(receipt))
    if lane == "Preconditions":
        return ("fail", f"{gfm.text(_row_title(row))}: the gate could not evaluate (see above)") if found else None
    if lane == "Harness probes" and not found and not _reached(receipt, lane):
        return None  # a receipt from a gate without this lane
    stopped = state != "final" or row in report_rows.PRECONDITIONS
    if lane != "Properties" and not found and not _reached(receipt, lane):
        return ("unknown", "not evaluated: the gate stopped before this lane") if stopped else None
    if lane == "Properties" and stopped and not found:
        return "unknown", "not evaluated: the gate stopped before this lane"
    mark, phrase = _properties(receipt, found) if lane == "Properties" else _static(receipt, lane, found)
    if mark == "fail" and (receipt.get("mode") or {}).get("scored") is False:
        return "notice", phrase + " (not scored)"
    return mark, phrase


def _matched(receipt: Mapping[str, Any]) -> list[str]:
    found = receipt_access.decision(receipt)
    matched = found.get("matched") if found else None
    return [str(m) for m in matched] if isinstance(matched, list) else []


def identity_rows(receipt: Mapping[str, Any], receipt_sha256: str) -> list[tuple[str, str]]:
    """(what, Markdown value) rows: receipt, commits, configuration, list, ledger, fixtures, mode, sealed run."""
    git = receipt.get("git") or {}
    config = receipt.get("config") or {}
    props = receipt.get("properties") or {}
    freeze = receipt.get("freeze") or {}
    fixtures = receipt.get("fixtures") or {}
    mode = receipt.get("mode") or {}
    sealed = receipt.get("sealed") or {}

    def ident(value: Any) -> str:
        """A short id: 12 hex digits of a commit, blob or sha256 (the receipt keeps them whole)."""
        if value in (None, ""):
            return "–"
        found = _HEX.fullmatch(str(value))
        return gfm.code(f"{found.group(1) or ''}{found.group(2)[:12]}" if found else value, 200, table=True)

    rows = [
        ("receipt.json (the file's sha256)", ident(receipt_sha256)),
        ("state", ident(receipt.get("state"))),
        ("decision", ident(receipt_access.decision_row(receipt))),
        (
            "matched rows",
            ", ".join(gfm.code(m, 80, table=True) for m in _matched(receipt)) or "–",
        ),
        ("baseline", ident(git.get("baseline"))),
        ("head", ident(git.get("head"))),
        ("merge base", ident(git.get("merge_base"))),
        ("configuration", f"{ident(config.get('path'))} blob {ident(config.get('blob'))}"),
        ("property list", ident(props.get("list_sha256"))),
        ("freeze ledger", f"{ident(freeze.get('file'))} {ident(freeze.get('file_sha256'))}"),
        ("fixtures tree", ident(fixtures.get("tree"))),
        ("digests file", ident(fixtures.get("digests_sha256"))),
    ]
    if mode:
        words = [f"author {gfm.code(mode['author'], 80, table=True)}"] if mode.get("author") else []
        words += [
            ("scored" if mode.get("scored") else "not scored"),
            ("code run" if mode.get("run") else "static only"),
        ]
        rows.append(
            ("mode", ", ".join(words) + (f", today {gfm.text(mode['today'], 20)}" if mode.get("today") else ""))
        )
    if sealed:
        parts = [f"as {gfm.code(sealed['user'], 40, table=True)}"] if sealed.get("user") else []
        parts += [f"{k} {gfm.text(sealed[k], 40, at_start=False)}" for k in ("network", "reads") if sealed.get(k)]
        if isinstance(sealed.get("landlock"), int):
            parts.append(f"Landlock ABI {sealed['landlock']}")
        rows.append(("sealed run", ", ".join(parts) or "–"))
    return rows
