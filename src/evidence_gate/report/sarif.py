"""The receipt as SARIF 2.1.0 for code scanning: one rule per decision-table row that fired, one result per
violation; a failing property's rule help holds its reproduce command, its result the failing line's snippet.

GitHub's code scanning rejects a whole file when one result has no physical location, so a finding that names no
file (a precondition, a property that never ran) is anchored at the file that owns its lane: the freeze ledger, the
`SCORE_PROPERTIES` list or the gate's configuration, and its message says so.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import Any

from evidence_gate import __version__, decision
from evidence_gate.lanes.locked_paths import display_path
from evidence_gate.lanes.properties import patch_coverage
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import types as receipt_types
from evidence_gate.report import properties as property_report
from evidence_gate.report import reproduce
from evidence_gate.report import row_docs as report_rows
from evidence_gate.row_ids import HUMAN_PATCH

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"  # the uriBaseId of every location: the repository root (upload-sarif's checkout_path)
MAX_COMMANDS = 5  # reproduce commands in a property rule's help (each failing property's result names its seed)
MESSAGE_CHARS = 8 * 1024  # a finding's message is repository text: bounded like every report


def _plain(text: str) -> str:
    """SARIF plain text from repository text: control characters spelled out, and `[`, `]`, `\\` escaped, so a
    message cannot forge an embedded link (SARIF §3.11.6) to somewhere the gate never pointed."""
    cut = text if len(text) <= MESSAGE_CHARS else text[:MESSAGE_CHARS] + "…"
    printable = "\n".join(display_path(line) for line in cut.split("\n"))
    return re.sub(r"([\[\]\\])", r"\\\1", printable)


def _uri(path: str) -> str:
    """A repository-relative path as a URI reference: UTF-8 percent-encoded, `/` kept, never absolute."""
    return urllib.parse.quote(path.lstrip("/"), safe="/")


def _level(receipt: Mapping[str, Any], row_id: str) -> str:
    """`error` for a failing row; `note` when the decision does not score the patch (a human patch's findings are
    notices, as on the check run) or for a pass row."""
    scored = (receipt.get("mode") or {}).get("scored") is not False
    if not scored or (receipt.get("decision") or {}).get("row") == HUMAN_PATCH:
        return "note"
    try:
        return "error" if decision.row(row_id).gate == "fail" else "note"
    except KeyError:
        return "error"  # a row this version does not know: fail closed


def rule(row: decision.Row, docs: str | None, commands: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The SARIF reportingDescriptor of one decision-table row; `commands` are (property, reproduce command) pairs
    of this run's failing properties, which a property row's "what to do" refers to."""
    info = report_rows.info(row.id)
    gate = row.gate if row.scored or row.gate == "fail" else f"{row.gate}, not scored"
    todo = info.todo.replace("with the command below", "with the command that follows")
    text = f"{row.title} (row {row.number}, {gate}, exit {row.exit_code}): {row.when}. What to do: {todo}"
    markdown = (
        f"**{row.title}** — row {row.number} of the decision table ({gate}, exit {row.exit_code}).\n\n"
        f"When: {row.when}.\n\nWhat to do: {todo}"
    )
    for node, command in commands[:MAX_COMMANDS]:
        text += f"\n\n{node}, from the repository root:\n{command}"
        markdown += f"\n\n`{node}`, from the repository root:\n\n```sh\n{command}\n```"
    out: dict[str, Any] = {
        "id": row.id,
        "name": "".join(part.capitalize() for part in row.id.split("-")),
        "shortDescription": {"text": row.title},
        "fullDescription": {"text": f"{row.when}."},
        "help": {"text": text, "markdown": markdown},
        "defaultConfiguration": {"level": "error" if row.gate == "fail" else "note"},
        "properties": {"tags": ["evidence-gate", info.lane], "row": row.number, "gate": row.gate},
    }
    if docs:
        out["helpUri"] = report_rows.row_url(docs, row.id)
    return out


def _location(path: str, line: Any, message: str | None = None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(path), "uriBaseId": SRCROOT}}
    if isinstance(line, int) and not isinstance(line, bool) and line >= 1:
        physical["region"] = {"startLine": line}
    out: dict[str, Any] = {"physicalLocation": physical}
    if message:
        out["message"] = {"text": _plain(message)}
    return out


def _anchor(receipt: Mapping[str, Any], row_id: str) -> str:
    """The file a finding without a path is shown on: its lane's file."""
    lane = report_rows.lane_of(row_id)
    config = receipt.get("config") or {}
    if lane == "Freeze ledger":
        return str((receipt.get("freeze") or {}).get("file") or "freeze.yaml")
    if lane in ("Properties", "Fixtures"):
        return str(((config.get("effective") or {}).get("properties") or {}).get("list") or "SCORE_PROPERTIES")
    return str(config.get("path") or ".evidence-gate.yml")


def _failing_assert(receipt: Mapping[str, Any], violation: dict[str, Any]) -> receipt_types.FailureJson | None:
    """The recorded failure (path, line of the failing assert) of a failed property's violation."""
    if violation.get("row") not in property_report.FAILED_ROWS:
        return None
    message = str(violation.get("message", ""))
    for ledger in property_report.failing(receipt):
        if message.startswith(str(ledger.get("property_id"))):
            return property_report.failure_of(ledger)
    return None


def result(receipt: Mapping[str, Any], violation: dict[str, Any], index: dict[str, int]) -> dict[str, Any]:
    """The SARIF result of one violation, on the failing assert, the ledger line or the locked path it names."""
    row_id = str(violation.get("row"))
    message = str(violation.get("message", ""))
    path = violation.get("path")
    related: list[dict[str, Any]] = []
    failure = _failing_assert(receipt, violation)
    if failure is not None:
        message = property_report.in_words(message).removeprefix(str(failure["path"]) + "::")
        locations = [_location(str(failure["path"]), failure["line"], "the failing assertion")]
        if failure.get("statement"):
            snippet = {"text": _plain(str(failure["statement"]))}
            locations[0]["physicalLocation"]["region"]["snippet"] = snippet
        if isinstance(path, str) and path and (path, violation.get("line")) != (failure["path"], failure["line"]):
            related.append(_location(path, violation.get("line"), "the property named by the finding"))
    elif isinstance(path, str) and path:
        locations = [_location(path, violation.get("line"))]
    else:
        anchor = _anchor(receipt, row_id)
        locations = [_location(anchor, None)]
        message += f" (no file of its own: shown on {anchor})"
    out: dict[str, Any] = {
        "ruleId": row_id,
        "level": _level(receipt, row_id),
        "message": {"text": _plain(f"{message} [{row_id}]")},
        "locations": locations,
    }
    if row_id in index:
        out["ruleIndex"] = index[row_id]
    if related:
        for n, loc in enumerate(related):
            loc["id"] = n
        out["relatedLocations"] = related
    return out


def patch_results(receipt: Mapping[str, Any], violation: dict[str, Any], index: dict[str, int]) -> list[dict[str, Any]]:
    """A failed property once more on each line of the pull request's diff its failing example ran (code scanning
    shows a result on a pull request only when its location is in the diff); the assertion is related."""
    failure = _failing_assert(receipt, violation)
    if failure is None:
        return []
    row_id = str(violation.get("row"))
    node = str(violation.get("message", "")).split(" ", 1)[0].rsplit("::", 1)[-1]
    out = []
    for hit in failure.get("in_patch") or []:
        related = _location(str(failure["path"]), failure["line"], "the failing assertion")
        related["id"] = 0
        text = f"{node} failed, and its failing example ran this line, which the pull request changed [{row_id}]"
        res: dict[str, Any] = {
            "ruleId": row_id,
            "level": _level(receipt, row_id),
            "message": {"text": _plain(text)},
            "locations": [_location(str(hit["path"]), hit["line"])],
            "relatedLocations": [related],
        }
        if row_id in index:
            res["ruleIndex"] = index[row_id]
        out.append(res)
    return out


def coverage_results(receipt: Mapping[str, Any], index: dict[str, int]) -> list[dict[str, Any]]:
    """A note on each run of changed lines of code the locked properties did not execute (patch coverage)."""
    cov = receipt_access.patch_coverage(receipt)
    if cov is None or not cov["measured"]:
        return []
    out = []
    for path, first, last in patch_coverage.unreached_ranges(cov):
        location = _location(path, first)
        location["physicalLocation"].setdefault("region", {})["endLine"] = last
        lines = f"line {first}" if first == last else f"lines {first}-{last}"
        text = f"the locked properties never executed {lines}, which the pull request changed [{patch_coverage.ROW}]"
        res: dict[str, Any] = {
            "ruleId": patch_coverage.ROW,
            "level": "note",
            "message": {"text": _plain(text)},
            "locations": [location],
        }
        if patch_coverage.ROW in index:
            res["ruleIndex"] = index[patch_coverage.ROW]
        out.append(res)
    return out


def _invocation(receipt: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the gate finished, and what stopped it when it did not."""
    final = receipt.get("state") == "final"
    out: dict[str, Any] = {"executionSuccessful": final}
    code = (receipt.get("decision") or {}).get("exit_code")
    if final and isinstance(code, int):
        out["exitCode"] = code
    errors = [str(e) for e in receipt.get("errors") or [] if not str(e).startswith("Traceback")]
    if errors:
        level = "note" if final else "error"
        out["toolExecutionNotifications"] = [{"level": level, "message": {"text": _plain(e)}} for e in errors]
    return out


def sarif_log(receipt: Mapping[str, Any], docs: str | None = None) -> dict[str, Any]:
    """The whole SARIF log of one receipt; `docs` is the README URL the rules' help links are resolved against."""
    fired = {str(v.get("row")) for v in receipt_access.violations(receipt)}
    if coverage_results(receipt, {}):
        fired.add(patch_coverage.ROW)  # the notes on unreached lines need their rule even when the row did not match
    rows = [r for r in decision.table() if r.id in fired]  # only the rules that fired, in table order
    index = {r.id: n for n, r in enumerate(rows)}
    commands = [
        (str(x.get("property_id")), reproduce.for_ledger(receipt, x, int(x["failing_seed"] or 0)))
        for x in property_report.failing(receipt)
    ]
    driver: dict[str, Any] = {
        "name": "evidence-gate",
        "version": __version__,
        "semanticVersion": __version__,
        "rules": [rule(r, docs, commands if r.id in property_report.FAILED_ROWS else []) for r in rows],
    }
    git = receipt.get("git") or {}
    run: dict[str, Any] = {
        "tool": {"driver": driver},
        "invocations": [_invocation(receipt)],
        "originalUriBaseIds": {SRCROOT: {"description": {"text": "The root of the judged repository's checkout."}}},
        "results": [
            r
            for v in receipt.get("violations") or []
            if isinstance(v, dict)
            for r in (*patch_results(receipt, v, index), result(receipt, v, index))
        ]
        + coverage_results(receipt, index),
        "columnKind": "unicodeCodePoints",
        "properties": {
            "decision": (receipt.get("decision") or {}).get("row"),
            "ok": receipt.get("ok") is True,
            "baseline": git.get("baseline"),
            "head": git.get("head"),
        },
    }
    if docs:
        driver["informationUri"] = docs
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}
