"""The receipt as GitHub-flavoured Markdown: the check run's `summary` and `text`, and `$GITHUB_STEP_SUMMARY`.

The summary answers "pass or fail, and why" in its first line, "what do I do" in its second, then lists what
failed grouped by kind (locked paths by folder, ledger findings with their lines, each failing property with its
seeds, minimal example, failing line and a reproduce command), then one line per lane. The text holds the full
detail: every commit, hash, ledger and finding. The job summary is the summary with the text in a collapsed
`<details>`. Every value that is not the gate's own words goes through `gfm`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from evidence_gate.lanes.properties import patch_coverage
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import delta as receipt_delta
from evidence_gate.receipt.types import ViolationJson
from evidence_gate.report import gfm
from evidence_gate.report import properties as property_report
from evidence_gate.report import row_docs as report_rows
from evidence_gate.report.lane_status import identity_rows, lane_status
from evidence_gate.report.row_docs import LANES, PRECONDITIONS
from evidence_gate.row_ids import HUMAN_PATCH

TITLE_CHARS = 54  # GitHub cuts a check run's title in its lists after about this many characters
MAX_ITEMS = 30  # finding lines per lane in the summary (the text has all)
MAX_NAMES = 25  # file names merged into one summary line
MAX_FAILING = 10  # failing properties shown in full in the summary
LINKED_FINDINGS = 150  # findings the text links to their line, at most
MARK = {"pass": "✅", "fail": "❌", "skip": "⏭️", "notice": "ℹ️", "unknown": "⚠️"}


@dataclass(frozen=True)
class Links:
    """URLs the report may link to, each None when unknown (then nothing is linked)."""

    docs: str | None = None  # the README the rows' docs pages are resolved against
    artifact: str | None = None  # the uploaded receipt artifact
    blob: str | None = None  # `{server}/{repo}/blob/{sha}` of the PR head, for links to a finding's line
    base_blob: str | None = None  # the same at the baseline, for a line only the base has (a deleted file)


def fenced(text: str, info: str = "text") -> str:
    """`text` in a code fence no line of it can close (kept for callers outside the report)."""
    return gfm.block(text, info)


def prose(message: str, limit: int | None = None) -> str:
    """A gate message as Markdown: its backtick-quoted parts as code, the rest as escaped text."""
    flat = gfm.printable(message, limit)
    parts = flat.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: no code at all
        return gfm.text(flat)
    return "".join(
        (gfm.code(p) if p.strip() else gfm.text(f"`{p}`", at_start=False)) if i % 2 else gfm.text(p, at_start=i == 0)
        for i, p in enumerate(parts)
    )


def kind(receipt: Mapping[str, Any]) -> str:
    """`aborted`, `precondition`, `human`, `pass` or `fail`: what the report leads with."""
    row = str(receipt_access.decision_row(receipt))
    if receipt.get("state") != "final":
        return "aborted"
    if row in PRECONDITIONS:
        return "precondition"
    if row == HUMAN_PATCH:
        return "human"
    return "pass" if receipt.get("ok") is True else "fail"


_IN_BASE = re.compile(r"\bwas (deleted|moved to)\b")  # a locked path the head no longer has


def in_base(v: ViolationJson) -> bool:
    """Whether the finding's path exists only at the baseline (deleted or moved away by the patch)."""
    return bool(_IN_BASE.search(str(v.get("message", ""))))


def _line_link(links: Links) -> Callable[..., str]:
    def render(path: str, line: int | None, base: bool = False, short: bool = False) -> str:
        # under a heading that names the file, `line 11` says the rest
        label = f"line {line}" if short and line else gfm.code(f"{path}:{line}" if line else path, 300)
        blob = links.base_blob if base else links.blob
        if blob is None:
            return label
        return gfm.link(label, f"{blob}/{gfm.url_path(path)}" + (f"#L{line}" if line else ""))

    return render


def verdict(receipt: Mapping[str, Any]) -> str:
    """The one-line verdict with its mark and row (the title above it holds the counts)."""
    decision = receipt_access.decision(receipt)
    row = str(receipt_access.decision_row(receipt))
    title = str(decision.get("title", "") if decision else "")
    shown = report_rows.title(row) if title and report_rows.info(row).title else title
    aborted = (
        "**The gate itself failed**: it did not finish"
        if title in ("", "The gate did not finish")
        else f"**{gfm.text(title)}**"
    )  # e.g. the action could not start (usage error)
    lead = {
        "aborted": f"{MARK['fail']} {aborted}, so nothing is scored",
        "precondition": f"{MARK['fail']} **Could not evaluate**: {gfm.text(shown)}",
        "human": f"{MARK['notice']} **Not scored**: a human patch",
        "pass": f"{MARK['pass']} **Pass**: {gfm.text(shown, at_start=False)}",
        "fail": f"{MARK['fail']} **Fail**: {gfm.text(shown, at_start=False)}",
    }[kind(receipt)]
    return f"{lead} · {gfm.code(row)}"


def _count_parts(receipt: Mapping[str, Any]) -> list[str]:
    """`60 locked paths touched`, `1 of 3 properties failed`: what the verdict rests on, one phrase per lane."""
    parts = []
    for lane, found in report_rows.violations_by_lane(receipt).items():
        if lane == "Properties":
            continue
        if lane == "Locked evidence":
            n = len({v.get("path") for v in found})
            parts.append(f"{n} locked path{'s' if n != 1 else ''} touched")
            continue
        noun = {
            "Freeze ledger": "ledger finding",
            "Fixtures": "fixture finding",
            "Harness probes": "harness probe",
        }.get(lane, "finding")
        parts.append(f"{len(found)} {noun}{'s' if len(found) != 1 else ''}")
    return parts + _property_counts(receipt)


def _property_counts(receipt: Mapping[str, Any]) -> list[str]:
    props = receipt.get("properties") or {}
    ledgers = receipt_access.ledgers(receipt)
    failed = property_report.failing(receipt)
    problems = [
        v
        for v in report_rows.violations_by_lane(receipt).get("Properties", [])
        if v.get("row") not in property_report.FAILED_ROWS
    ]
    out = []
    if failed:
        out.append(f"{len(failed)} of {len(ledgers)} properties failed")
    elif ledgers and not problems:
        out.append(f"{len(ledgers)} propert{'ies' if len(ledgers) != 1 else 'y'} held")
    if problems:
        out.append(f"{len(problems)} property-run problem{'s' if len(problems) != 1 else ''}")
    if not ledgers and props.get("skipped") and kind(receipt) == "pass":
        out.append("properties not run")
    return out


def title(receipt: Mapping[str, Any]) -> str:
    """The check run's title: the verdict and its counts first, at most TITLE_CHARS characters (GitHub's lists cut
    longer ones); the row id is in the summary, not here."""
    k = kind(receipt)
    row = str(receipt_access.decision_row(receipt))
    lead = {
        "aborted": "Gate crashed",
        "precondition": "Could not evaluate",
        "human": "Not scored (human patch)",
        "pass": "Pass",
        "fail": "Fail",
    }[k]
    if k == "aborted":
        parts = ["nothing was scored"]
    elif k == "precondition":
        parts = [report_rows.title(row).lower()]
    else:
        parts = _count_parts(receipt) or [report_rows.title(row).lower()]
    return _fit(gfm.printable(lead), [gfm.printable(p) for p in parts], TITLE_CHARS)


def _fit(lead: str, parts: list[str], limit: int) -> str:
    """`lead: a, b, c` with as many parts as fit in `limit` characters, `…` for the rest."""
    text = lead
    for n, part in enumerate(parts):
        candidate = f"{text}{': ' if n == 0 else ', '}{part}"
        more = "" if n == len(parts) - 1 else ", …"
        if len(candidate + more) > limit:
            if n == 0:
                return (candidate[: limit - 1] + "…") if len(candidate) > limit else candidate + more
            return text + ", …"
        text = candidate
    return text


def _todo(receipt: Mapping[str, Any], links: Links) -> str:
    row = str(receipt_access.decision_row(receipt))
    if kind(receipt) == "aborted":
        _said, fix = _crash(receipt)
        if fix:  # the environment's fix (a file the gate cannot write, a usage error), not a bug
            return f"**What to do:** {prose(fix[:1].upper() + fix[1:].rstrip('.') + '.')}" + _refs(receipt, links)
        address = gfm.link(report_rows.ISSUES_URL.removeprefix("https://"), f"{report_rows.ISSUES_URL}/new")
        return (
            "**This is a bug in evidence-gate, not a finding about the pull request.** Re-run the job; if it fails "
            f"again, report it at {address} with the receipt artifact, whose `errors` hold the traceback."
            + _refs(receipt, links)
        )
    fix = own_fix(receipt)
    todo = fix[:1].upper() + fix[1:].rstrip(".") + "." if fix else report_rows.info(row).todo
    return f"**What to do:** {prose(todo)}" + _refs(receipt, links)


def _refs(receipt: Mapping[str, Any], links: Links) -> str:
    """` (what this row means · receipt artifact)` for the links known, else ''."""
    row = str(receipt_access.decision_row(receipt))
    refs = []
    if links.docs:
        page = report_rows.EXIT_CODES if kind(receipt) == "aborted" else report_rows.info(row).page
        refs.append(gfm.link("what this row means", report_rows.docs_url(links.docs, page)))
    if links.artifact:
        refs.append(gfm.link("receipt artifact", links.artifact))
    return " (" + " · ".join(refs) + ")" if refs else ""


_BUG = "this is a bug in evidence-gate"  # gate.CRASH_FIX begins so: the gate's own fault, not the environment's


def _crash(receipt: Mapping[str, Any]) -> tuple[str, str]:
    """(what happened, the environment's fix or '' for a bug) from a crashed receipt's first error."""
    first = next((str(e) for e in receipt.get("errors") or [] if not str(e).startswith("Traceback")), "")
    what, _sep, fix = first.partition("; fix: ")
    return what, "" if not fix or fix.startswith(_BUG) else fix


def summary(
    receipt: Mapping[str, Any],
    receipt_sha256: str,
    notes: tuple[str, ...] = (),
    links: Links | None = None,
    delta: receipt_delta.Delta | None = None,
) -> str:
    """The check run's summary: verdict, what to do, notes, what failed, the change since the base branch's last
    receipt, the lanes, the receipt's identity."""
    links = links or Links()
    out = [verdict(receipt), "", _todo(receipt, links), ""]
    for note in notes:
        out += [f"> {MARK['unknown']} {prose(note, 2000)}", ""]
    out += _problems(receipt, links)
    out += delta_lines(delta) if delta is not None else []
    out += ["### Lanes", "", *lane_lines(receipt), ""]
    coverage = receipt_access.patch_coverage(receipt)
    if coverage is not None:
        out += [f"**Patch coverage**: {prose(patch_coverage.summary(coverage), 2000)}", ""]
    git = receipt.get("git") or {}
    ids = [f"receipt.json {gfm.code(receipt_sha256[:19])}"]  # `sha256:` and 12 digits; the artifact has it whole
    if git.get("baseline") and git.get("head"):
        ids.append(f"baseline {gfm.code(str(git['baseline'])[:12])} → head {gfm.code(str(git['head'])[:12])}")
    if receipt.get("version"):
        ids.append(f"evidence-gate {gfm.text(receipt['version'], 40, at_start=False)}")
    out += ["<sub>" + " · ".join(ids) + "</sub>", ""]
    return "\n".join(out)


def delta_lines(delta: receipt_delta.Delta) -> list[str]:
    """`### Since main's last receipt`: the counts on one line, then each new and each fixed finding."""
    out = [f"### Since {gfm.text(delta.against, 300, at_start=False)}", ""]
    if delta.why_not:
        return [*out, f"{MARK['unknown']} {prose(receipt_delta.counts(delta), 1000)}", ""]
    out += [f"**{gfm.text(receipt_delta.counts(delta), 300)}**", ""]
    for mark, what, found in (("🆕", "new", delta.new), ("✅", "fixed", delta.fixed)):
        for f in found[: receipt_delta.MAX_LISTED]:
            where = f" {gfm.code(f.path, 300)}" if f.path else ""
            out.append(f"- {mark} {what} · {gfm.code(f.row, 60)}{where}: {prose(f.message, 500)}")
        if len(found) > receipt_delta.MAX_LISTED:
            out.append(f"- … {len(found) - receipt_delta.MAX_LISTED} more {what}")
    return [*out, ""] if delta.new or delta.fixed else out


def new_errors(receipt: Mapping[str, Any]) -> list[str]:
    """The receipt's errors that do not repeat a finding (a precondition is both a violation and an error)."""
    messages = [str(v.get("message")) for v in receipt_access.violations(receipt)]
    return [str(e) for e in receipt.get("errors") or [] if not any(m in str(e) for m in messages)]


def _problems(receipt: Mapping[str, Any], links: Links) -> list[str]:
    """`### What failed`: errors of a crash, then each lane's findings, a failing property in full."""
    k = kind(receipt)
    out: list[str] = []
    errors = new_errors(receipt)
    if k == "aborted" and errors:
        said, _fix = _crash(receipt)
        out += ["### What went wrong", ""] + ([prose(said, 2000), ""] if said else [])
        traces = [e for e in errors if e.startswith("Traceback")] or [e for e in errors if not said or said not in e]
        if traces:
            out += ["<details><summary>Traceback</summary>", "", gfm.block("\n".join(traces).strip(), "text", 6000)]
            out += ["", "</details>", ""]
    groups = report_rows.violations_by_lane(receipt)
    if not groups and not property_report.failing(receipt):
        return out
    heading = {
        "human": "### Findings (notices: a human patch is not scored)",
        "precondition": "### Why the gate could not evaluate",
    }.get(k, "### What failed")
    out += [heading, ""]
    for lane, found in groups.items():
        out += _lane_findings(receipt, lane, found, links, MAX_ITEMS, headed=len(groups) > 1)
    return out


def _lane_findings(
    receipt: Mapping[str, Any], lane: str, found: list[ViolationJson], links: Links, max_items: int | None, headed: bool
) -> list[str]:
    line_link = _line_link(links)
    out: list[str] = []
    if lane == "Properties":
        failing = property_report.failing(receipt)
        nodes = {str(x.get("property_id")) for x in failing}
        found = [
            v
            for v in found
            if not (
                v.get("row") in property_report.FAILED_ROWS
                and any(str(v.get("message", "")).startswith(n) for n in nodes)
            )
        ]
        ledgers = receipt_access.ledgers(receipt)
        if failing and headed:  # alone, the title already says how many failed
            out += [f"#### Properties · {len(failing)} of {len(ledgers)} failed", ""]
        if failing:
            for ledger in failing[:MAX_FAILING]:
                out += property_report.failure_block(receipt, ledger, line_link)
            if len(failing) > MAX_FAILING:
                out += [
                    f"… {len(failing) - MAX_FAILING} more failing properties: each has its seed ledger in the "
                    "full detail and its own annotation.",
                    "",
                ]
        if not found:
            return out
        plural = "s" if len(found) != 1 else ""
        out += [
            f"#### Property run problems · {len(found)}"
            if failing
            else f"#### Properties · {len(found)} finding{plural}",
            "",
        ]
    elif lane == "Preconditions":  # the section's heading says it; its fix is What to do
        fix = own_fix(receipt)
        found = [
            cast(ViolationJson, {**v, "message": str(v.get("message", "")).removesuffix(f"; fix: {fix}")})
            for v in found
        ]
    else:
        out += [f"#### {lane} · {len(found)} finding{'s' if len(found) != 1 else ''}", ""]
    out += finding_lines(found, by_folder=lane == "Locked evidence", max_items=max_items, line_link=line_link)
    return [*out, ""]


def common_fix(messages: list[str]) -> str:
    """The `; fix` tail most of these messages end with, when at least two share it ('' otherwise)."""
    tails = Counter(m.rsplit("; ", 1)[1] for m in messages if "; " in m)
    if not tails:
        return ""
    tail, n = tails.most_common(1)[0]
    return tail if n >= 2 else ""


def _strip_where(message: str, path: str | None) -> str:
    """A message without the path it starts with (the group heading already names it), in words."""
    message = property_report.in_words(message)
    if path:
        shown = gfm.printable(path)
        if message.startswith(f"{shown}::"):  # a property's node: keep the test's name
            return message[len(shown) + 2 :]
        for prefix in (f"{shown}: ", f"{shown} "):
            if message.startswith(prefix):
                return message[len(prefix) :]
    return message


def finding_lines(
    found: list[ViolationJson], *, by_folder: bool, max_items: int | None, line_link: Callable[..., str]
) -> list[str]:
    """Findings grouped by file (or by folder), identical messages merged, a fix they share said once before them;
    at most `max_items` finding lines."""
    fix = common_fix([gfm.printable(v.get("message")) for v in found])
    out = [f"*{prose(fix[:1].upper() + fix[1:], 500)}.*", ""] if fix else []
    groups: dict[str, list[ViolationJson]] = {}
    for v in found:
        path = v.get("path")
        key = (path.rsplit("/", 1)[0] + "/" if "/" in path else "./") if by_folder and path else (path or "")
        groups.setdefault(key, []).append(v)
    shown = 0
    for key, vs in groups.items():
        merged: dict[str, list[ViolationJson]] = {}
        for v in vs:
            message = _strip_where(gfm.printable(v.get("message")), v.get("path"))
            message = message.removesuffix(f"; {fix}") if fix else message
            merged.setdefault(message, []).append(v)
        if key == "./":
            out.append(f"**repository root** ({len(vs)})")
        elif key:
            out.append(f"**{gfm.code(key, 300)}** ({len(vs)})")
        for message, members in merged.items():
            if max_items is not None and shown >= max_items:
                break
            shown += 1
            out.append(_item(message, members, by_folder, line_link))
        out.append("")
    if max_items is not None and shown >= max_items and len(found) > shown:
        out.append(
            f"… and more: every finding is in the full detail below and in the receipt ({len(found)} in this lane)."
        )
    return out


def every_finding(found: list[ViolationJson], line_link: Callable[..., str]) -> list[str]:
    """One line per finding, location first, a fix the lane's findings share said once before them."""
    fix = common_fix([gfm.printable(v.get("message")) for v in found])
    out = [f"*{prose(fix[:1].upper() + fix[1:], 500)}.*", ""] if fix else []
    for v in found:
        message = _strip_where(gfm.printable(v.get("message")), v.get("path"))
        message = message.removesuffix(f"; {fix}") if fix else message
        where = line_link(str(v["path"]), v.get("line"), in_base(v)) + " " if v.get("path") else ""
        out.append(f"- {where}{prose(message, 2000)}")
    return [*out, ""]


def _item(message: str, members: list[ViolationJson], by_folder: bool, line_link: Callable[..., str]) -> str:
    text = prose(message, 600)
    if by_folder:
        names = [gfm.code(str(v.get("path") or "").rsplit("/", 1)[-1], 200) for v in members]
        more = f" … (+{len(names) - MAX_NAMES})" if len(names) > MAX_NAMES else ""
        if len(names) == 1:
            return f"- {names[0]} {text}"
        return f"- {text} — {len(names)} files: {', '.join(names[:MAX_NAMES])}{more}"
    where = [
        line_link(str(v["path"]), v.get("line"), in_base(v), short=True)
        for v in members
        if v.get("path") and v.get("line")
    ]
    return f"- {', '.join(where[:MAX_NAMES])}: {text}" if where else f"- {text}"


def lane_lines(receipt: Mapping[str, Any]) -> list[str]:
    """One compact line per lane: mark, name, what it saw."""
    out = []
    for lane in LANES:
        status = lane_status(receipt, lane)
        if status is not None:
            out.append(f"- {MARK[status[0]]} **{lane}** — {status[1]}")
    return out


def _matched_rows(receipt: Mapping[str, Any]) -> list[Any]:
    found = receipt_access.decision(receipt)
    matched = found.get("matched") if found else None
    return matched if isinstance(matched, list) else []


def own_fix(receipt: Mapping[str, Any]) -> str:
    """A precondition's own fix (`…; fix: the fix` in its one finding), said once as What to do."""
    found = receipt_access.violations(receipt)
    if kind(receipt) != "precondition" or len(found) != 1:
        return ""
    return str(found[0].get("message", "")).partition("; fix: ")[2]


def details(receipt: Mapping[str, Any], receipt_sha256: str, links: Links | None = None) -> str:
    """The check run's text: every identity, ledger and finding of the receipt."""
    links = links or Links()
    skip = {"state", "decision"} | ({"matched rows"} if len(_matched_rows(receipt)) < 2 else set())
    shown = [
        (what.split(" (", 1)[0], value)
        for what, value in identity_rows(receipt, receipt_sha256)
        if what not in skip and not value.endswith("–")
    ]
    out = [
        "<details><summary>Identities (12-digit prefixes; the receipt holds them whole)</summary>",
        "",
        " · ".join(f"{what} {value}" for what, value in shown),
        "",
        "</details>",
        "",
    ]
    ledgers = receipt_access.ledgers(receipt)
    if ledgers:
        out += [f"### Seed ledgers ({len(ledgers)})", ""]
        out += [property_report.ledger_line(x) for x in ledgers]
        if any(x.get("status") == "freeze_eligible" for x in ledgers):
            out += [
                "",
                "A failure that reproduced may be proposed for the freeze ledger by a human; that is not an approval.",
                "",
            ]
        else:
            out.append("")
    groups = report_rows.violations_by_lane(receipt)
    if groups:
        total = sum(len(v) for v in groups.values())
        out += [f"### Every finding ({total})", ""]
        for lane, found in groups.items():
            out += [f"#### {lane} ({len(found)})", ""]
            # Links cost ~110 characters each: beyond LINKED_FINDINGS the text keeps every finding, unlinked.
            out += every_finding(found, _line_link(links if total <= LINKED_FINDINGS else Links()))
            rows = sorted({str(v.get("row")) for v in found})
            out += ["Rows: " + ", ".join(gfm.code(r) for r in rows), ""]
    out += _coverage_details(receipt)
    provenance = [p for p in (receipt.get("sealed") or {}).get("provenance") or [] if isinstance(p, dict)]
    if provenance:
        out += ["### Code under test, as the sealed run loaded it", ""]
        out += [
            f"- {gfm.code(p.get('package'), 100)} from {gfm.code(p.get('loaded_from'), 300)}"
            + ("" if p.get("from_tree") else " (**outside the sealed tree**)")
            for p in provenance[:200]
        ]
        out.append("")
    errors = new_errors(receipt)
    if errors:
        out += ["### Errors", "", gfm.block("\n".join(errors).strip(), "text", 30000), ""]
    return "\n".join(out)


def _coverage_details(receipt: Mapping[str, Any]) -> list[str]:
    """Per changed file of code under test: how many of its changed lines of code ran, and which did not."""
    cov = receipt_access.patch_coverage(receipt)
    if cov is None or not cov["measured"] or not cov.get("files"):
        return []
    out = ["### Patch coverage", ""]
    for row in cov.get("files", [])[:200]:
        missing = patch_coverage.unreached_ranges({"files": [row]})
        shown = ", ".join(f"{a}" if a == b else f"{a}-{b}" for _, a, b in missing[:20])
        out.append(
            f"- {gfm.code(row['path'], 300)}: {len(row['executed'])} of {len(row['lines'])} changed lines of code ran"
            + (f"; not reached: lines {gfm.text(shown, 400, at_start=False)}" if shown else "")
        )
    return [*out, ""]


def history_line(note: str, links: Links, picture: str) -> str:
    """The line that links the freeze ledger's history picture (in the artifact when there is one)."""
    where = (
        gfm.link(f"{picture} in the receipt artifact", links.artifact)
        if links.artifact
        else f"{gfm.code(picture)} beside the receipt"
    )
    return f"**Freeze ledger over the base branch**: {gfm.text(note, 1000)} — picture: {where}\n\n"


def render(
    receipt: Mapping[str, Any],
    receipt_sha256: str,
    notes: tuple[str, ...] = (),
    links: Links | None = None,
    check_name: str = "evidence-gate",
    history: tuple[str, str] | None = None,
    delta: receipt_delta.Delta | None = None,
) -> str:
    """The job summary: a heading with the check's name, the summary (with the change since the base branch's last
    receipt), the ledger's history (note, picture file) when there is one, the full detail collapsed."""
    heading = f"## {gfm.text(check_name, 100)}: {gfm.text(title(receipt), at_start=False)}"
    text = details(receipt, receipt_sha256, links)
    ledger = history_line(history[0], links or Links(), history[1]) if history else ""
    return (
        f"{heading}\n\n{summary(receipt, receipt_sha256, notes, links, delta)}\n{ledger}<details><summary>Full detail: "
        f"every commit, hash, seed ledger and finding</summary>\n\n{text}\n</details>\n"
    )
