"""The receipt as Markdown for `$GITHUB_STEP_SUMMARY` and the check run: lanes, seed ledgers, findings.

Only the gate's own words (lane names, row ids, counts) go into tables; anything that came from the patch or its
tests (paths, messages, errors) is shown inside fenced code blocks whose fence is longer than any backtick run in
the text, so it cannot close the fence, inject HTML or Markdown, or look like an annotation.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from evidence_gate.report import violations_of

STEP_SUMMARY_LIMIT = 1024 * 1024          # bytes: GitHub rejects a step summary over 1 MiB
CHECK_SUMMARY_LIMIT = 65535               # characters: the check-run `output.summary` limit
TRUNCATED_MARKER = "\n\n**[evidence-gate: report truncated; the full receipt is in the artifact]**\n"

# Lanes in reading order; a row belongs to the first lane whose prefix or id matches.
LANES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("Preconditions", ("config-invalid", "history-missing", "event-mismatch")),
    ("Locked evidence", ("evidence-path-edited",)),
    ("Harness probes", ("harness-probed",)),
    ("Freeze ledger", ("freeze-",)),
    ("Fixtures", ("fixture-",)),
    ("Properties", ("run-integrity", "seed-ledger-open", "property-")),
)


def lane_of(row: str) -> str:
    """The lane a violation row belongs to."""
    for lane, prefixes in LANES:
        if any(row == p or (p.endswith("-") and row.startswith(p)) for p in prefixes):
            return lane
    return "Other"


def fenced(text: str, info: str = "text") -> str:
    """`text` in a code fence no line of it can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """A short trusted-ish value (row id, property id) as inline code safe inside a table cell."""
    clean = text.replace("\r", " ").replace("\n", " ").replace("|", "\\|").replace("`", "'")
    return f"`{clean}`"


def _seeds(values: Any) -> str:
    if not isinstance(values, list):
        return "-"
    shown = ", ".join(str(v) for v in values[:12])
    return shown + (f", … (+{len(values) - 12})" if len(values) > 12 else "") if values else "none"


def render(receipt: dict[str, Any], receipt_sha256: str, notes: tuple[str, ...] = ()) -> str:
    """The full report as Markdown (not yet size-limited)."""
    decision = receipt.get("decision", {})
    verdict = "PASS" if receipt.get("ok") else "FAIL"
    out = [f"## evidence-gate: {verdict} — {code_span(str(decision.get('row')))} {decision.get('title', '')}", ""]
    if receipt.get("state") != "final":
        out += ["The gate did not finish (receipt state `aborted`); see the errors below.", ""]
    out += [f"Receipt: `{receipt_sha256}`", ""]
    git = receipt.get("git", {})
    out += ["| commit | id |", "|---|---|"]
    for key in ("baseline", "head", "merge_base"):
        value = git.get(key)
        out.append(f"| {key} | {'-' if value is None else code_span(str(value))} |")
    out.append("")
    violations = receipt.get("violations", [])
    counts = Counter(lane_of(str(v.get("row"))) for v in violations)
    skipped = receipt.get("properties", {}).get("skipped")
    out += ["### Lanes", "", "| lane | result | findings |", "|---|---|---|"]
    for lane, _ in LANES:
        n = counts.get(lane, 0)
        result = "fail" if n else "clear"
        if lane == "Properties" and skipped and not n:
            result = "not run"
        out.append(f"| {lane} | {result} | {n} |")
    if counts.get("Other"):
        out.append(f"| Other | fail | {counts['Other']} |")
    out.append("")
    matched = decision.get("matched") or []
    if matched:
        out += ["Matched rows: " + ", ".join(code_span(str(m)) for m in matched), ""]
    if skipped:
        out += ["Properties not run:", fenced(str(skipped)), ""]
    ledgers = receipt.get("properties", {}).get("ledgers") or []
    if ledgers:
        out += ["### Seed ledgers", "", "| property | status | planned | attempted | failing seed | oracle |",
                "|---|---|---|---|---|---|"]
        for led in ledgers:
            failing = led.get("failing_seed")
            out.append(f"| {code_span(str(led.get('property_id')))} | {code_span(str(led.get('status')))} | "
                       f"{_seeds(led.get('planned_seeds'))} | {_seeds(led.get('attempted_seeds'))} | "
                       f"{'-' if failing is None else failing} | {code_span(str(led.get('oracle_source')))} |")
        out.append("")
    if violations:
        out += [f"### Findings ({len(violations)})", ""]
        out += [fenced("\n".join(v.render() for v in violations_of(receipt))), ""]
    errors = receipt.get("errors") or []
    if errors:
        out += ["### Errors", "", fenced("\n".join(str(e) for e in errors)), ""]
    for note in notes:
        out += [f"> {note}", ""]
    return "\n".join(out)


def truncate_bytes(text: str, limit: int = STEP_SUMMARY_LIMIT) -> str:
    """`text` cut to at most `limit` UTF-8 bytes, with a marker; an open code fence is closed first."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return _cut(text, lambda s: len(s.encode("utf-8")), limit)


def truncate_chars(text: str, limit: int = CHECK_SUMMARY_LIMIT) -> str:
    """`text` cut to at most `limit` characters, with a marker (the check-run summary limit)."""
    if len(text) <= limit:
        return text
    return _cut(text, len, limit)


def _cut(text: str, size: Callable[[str], int], limit: int) -> str:
    if limit < size(TRUNCATED_MARKER):
        raise ValueError(f"a limit of {limit} leaves no room for the truncation marker")
    budget = limit - size(TRUNCATED_MARKER)
    while True:
        head = text.encode("utf-8")[: max(budget, 0)].decode("utf-8", "ignore")
        head = head[:budget]  # for a character limit; a no-op for bytes
        head = head[: head.rfind("\n") + 1]  # whole lines only
        closing = _open_fence(head)
        result = head + (closing + "\n" if closing else "") + TRUNCATED_MARKER
        if size(result) <= limit:
            return result
        budget -= size(closing) + 1


def _open_fence(text: str) -> str:
    """The fence that is still open at the end of `text`, or ''."""
    fence = ""
    for line in text.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if not m:
            continue
        if not fence:
            fence = m.group(1)
        elif line.rstrip() == fence or (line.startswith(fence) and not line[len(fence):].strip()):
            fence = ""
    return fence
