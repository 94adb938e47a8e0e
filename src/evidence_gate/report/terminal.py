"""The receipt for a terminal, as a compiler reports: one diagnostic per finding, then a blank line and the verdict.

    error[property-failed]: test_sum_is_preserved failed on planned seeds 1101, 1102
      --> properties/test_allocate_properties.py:14
       |
    14 |     assert sum(allocate(total, parts)) == total
       |
       = AssertionError: assert 0 == 1
       = minimal example: test_sum_is_preserved(total=1, parts=2)
    help: Fix the code under test so that the property holds. Reproduce seed 1101 from the repository root:
        PYTHONPATH=src python -c '…'
       = docs: https://…/docs/decision-rows.md#row-property-failed

Prose wraps at `width` columns between words; paths, source lines and commands are never broken (a copy-paste must
work). Colour (ANSI SGR) only when the caller says the output is a terminal that wants it. Every piece of text that
is not the gate's own words goes through `visible.line` before any colour is added, so a message cannot move the
cursor, forge a verdict line or recolour the screen.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from evidence_gate import decision, visible
from evidence_gate.receipt import access as receipt_access
from evidence_gate.records import dataclass
from evidence_gate.report import row_docs as report_rows
from evidence_gate.row_ids import HUMAN_PATCH

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from evidence_gate.receipt import delta as receipt_delta
    from evidence_gate.receipt.types import SeedLedgerJson, ViolationJson

# A passing run prints no finding, no seed ledger, no patch coverage and no delta: the modules that word those
# (the property report with its Markdown and reproduce commands, patch coverage, the delta) load when one is shown.

DEFAULT_WIDTH = 80
# Whitespace textwrap turns into spaces: a line holding any, or ending in whitespace (dropped), goes to textwrap.
_ONE_LINE = frozenset("\t\n\x0b\x0c\r")
BUG = "this is a bug in evidence-gate"  # how gate.CRASH_FIX begins
CRASH_HELP = (
    "This is a bug in evidence-gate, not a finding about the pull request. Re-run the job; if it fails again, "
    f"report it at {report_rows.ISSUES_URL} with the receipt (its `errors` hold the traceback)."
)
SourceLine = Callable[[str, int], "str | None"]
_SGR = {"error": "1;31", "warning": "1;33", "note": "1;36", "help": "1;32", "frame": "1;34", "bold": "1"}


@dataclass(frozen=True)
class Style:
    """How to print: the terminal's width and whether to colour."""

    width: int = DEFAULT_WIDTH
    color: bool = False
    docs: str | None = None  # the README the rows' docs links are resolved against (the project's when None)

    def paint(self, kind: str, text: str) -> str:
        """`text` in the colour of `kind` when colour is on."""
        return f"\x1b[{_SGR[kind]}m{text}\x1b[0m" if self.color and text else text

    def wrap(self, text: str, first: str, rest: str) -> list[str]:
        """`text` wrapped between words at the width, after the prefixes (`first` may hold colour codes)."""
        plain = re.sub(r"\x1b\[[0-9;]*m", "", first)
        width = max(self.width, 40)
        if text and len(plain) + len(text) <= width and not text[-1].isspace() and _ONE_LINE.isdisjoint(text):
            return [first + text]  # what textwrap makes of a line that fits, without importing it (≈ 0.8 ms)
        import textwrap  # noqa: PLC0415 - only a line that does not fit

        lines = textwrap.wrap(
            text,
            width=width,
            initial_indent=" " * len(plain),
            subsequent_indent=rest,
            break_long_words=False,
            break_on_hyphens=False,
        ) or [" " * len(plain)]
        return [first + lines[0][len(plain) :], *lines[1:]]


def _level(receipt: Mapping[str, Any], row: str) -> str:
    if (receipt.get("mode") or {}).get("scored") is False or receipt_access.decision_row(receipt) == HUMAN_PATCH:
        return "warning"  # a human patch's findings are notices
    try:
        return "error" if decision.row(row).gate == "fail" else "note"
    except KeyError:
        return "error"


def split_fix(message: str) -> tuple[str, str]:
    """`(what, fix)` of a gate message `what; fix: the fix` (`fix` empty when the message names none)."""
    what, sep, fix = message.partition("; fix: ")
    return (what, fix) if sep else (message, "")


def _without_where(message: str, path: str | None) -> str:
    """A property's message without its file (the `-->` line names it): `test_x failed …`."""
    if path and message.startswith(path + "::"):
        return message[len(path) + 2 :]
    return message


def _said_in_help(what: str, todo: str) -> str:
    """The message without a `; clause` that the help line says anyway."""
    head, sep, tail = what.rpartition("; ")
    return head if sep and tail.strip().lower().rstrip(".") in todo.lower() else what


def _ledger_of(receipt: Mapping[str, Any], v: ViolationJson) -> SeedLedgerJson | None:
    from evidence_gate.report import properties as property_report  # noqa: PLC0415 - see the imports

    if v.get("row") not in property_report.FAILED_ROWS:
        return None
    message = str(v.get("message", ""))
    return next((x for x in property_report.failing(receipt) if message.startswith(str(x.get("property_id")))), None)


def _frame(style: Style, gutter: int, number: int | None, text: str = "") -> str:
    shown = f"{number}" if number is not None else ""
    return style.paint("frame", shown.rjust(gutter) + " |") + (f" {text}" if text else "")


def _docs(style: Style, row: str) -> str:
    return report_rows.row_url(style.docs or report_rows.PROJECT_README, row)


def diagnostic(
    receipt: Mapping[str, Any], v: ViolationJson, style: Style, source: SourceLine | None, with_help: bool
) -> list[str]:
    """One finding as `level[row]: message`, `--> path:line`, the source line, notes, `help:` and the docs link."""
    from evidence_gate.report import properties as property_report  # noqa: PLC0415 - see the imports

    row = str(v.get("row"))
    level = _level(receipt, row)
    path = v.get("path")
    line = v.get("line")
    ledger = _ledger_of(receipt, v)
    failure = property_report.failure_of(ledger) if ledger else None
    what, fix = split_fix(str(v.get("message", "")))
    what = property_report.in_words(_without_where(what, str(path) if path else None))
    if ledger is not None:
        what = what.split(" (", 1)[0]  # the example is a note of its own below
    what = _said_in_help(what, fix or report_rows.info(row).todo)
    head = style.paint(level, f"{level}[{row}]") + style.paint("bold", ":")
    out = style.wrap(visible.line(what), head + " ", "    ")
    if failure is not None:
        path, line = failure["path"], failure["line"]
    where = visible.line(str(path)) + (f":{line}" if isinstance(line, int) and line else "") if path else ""
    text = None
    if failure is not None:
        text = str(failure.get("statement") or "") or None
    elif path and isinstance(line, int) and line and source is not None:
        text = source(str(path), line)
    gutter = len(str(line)) if text is not None and isinstance(line, int) else 1
    pad = " " * gutter
    if where:
        out.append(f"{pad}{style.paint('frame', '-->')} {where}")
    notes: list[str] = []
    if text is not None and isinstance(line, int):
        indent = "    " if failure is not None else ""
        shown = visible.line(indent + text.rstrip())
        out += [_frame(style, gutter, None), _frame(style, gutter, line, shown), _frame(style, gutter, None)]
    if failure is not None:
        exception = [x for x in str(failure.get("exception") or "").strip().split("\n") if x.strip()][:6]
        notes += ["\n".join(exception)] if exception else []
    if ledger is not None:
        example = property_report.minimal_example(ledger)
        if example:
            short = property_report.one_line_example(example, style.width - 20)
            notes.append(f"minimal example: {short}" if short else "minimal example:\n" + example)
    for note in notes:
        first, *more = note.split("\n")
        out += style.wrap(visible.line(first), f"{pad} {style.paint('frame', '=')} ", pad + "     ")
        out += [f"{pad}     {visible.line(m)}" for m in more]
    if with_help:
        out += _help(receipt, row, fix, ledger, style, pad)
    return out


def _help(
    receipt: Mapping[str, Any], row: str, fix: str, ledger: SeedLedgerJson | None, style: Style, pad: str
) -> list[str]:
    todo = fix[:1].upper() + fix[1:] + "." if fix else report_rows.info(row).todo
    if ledger is not None and ledger.get("failing_seed") is not None:
        seed = int(ledger["failing_seed"] or 0)
        todo = todo.split(";", 1)[0].rstrip(".") + f". Reproduce seed {seed} from the repository root:"
    out = style.wrap(visible.line(todo), style.paint("help", "help") + style.paint("bold", ":") + " ", "      ")
    if ledger is not None and ledger.get("failing_seed") is not None:
        from evidence_gate.report import reproduce  # noqa: PLC0415 - see the imports

        command = reproduce.for_ledger(receipt, ledger, int(ledger["failing_seed"] or 0))
        out += ["", *("    " + visible.line(c) for c in command.split("\n")), ""]
    out.append(f"{pad} {style.paint('frame', '=')} docs: {_docs(style, row)}")
    return out


def render(
    receipt: Mapping[str, Any],
    style: Style | None = None,
    source: SourceLine | None = None,
    delta: receipt_delta.Delta | None = None,
) -> str:
    """The terminal report: a diagnostic per finding (help said once per row), errors, a blank line, the counts
    and the verdict `PASS|FAIL: title [row]` as the last line."""
    style = style or Style()
    out: list[str] = []
    helped: set[str] = set()
    findings = receipt_access.violations(receipt)
    for v in findings:
        row = str(v.get("row"))
        out += [*diagnostic(receipt, v, style, source, with_help=row not in helped), ""]
        helped.add(row)
    messages = [str(v.get("message")) for v in findings]
    bug = False
    for error in receipt.get("errors") or []:
        if any(m in str(error) for m in messages):
            continue  # a precondition is both a finding and an error
        if str(error).startswith("Traceback") and out and out[-1] == "":
            out = out[:-1] + [f"    {r}" for r in visible.lines(str(error)).split("\n") if r.strip()] + [""]
            continue  # the crash's traceback, as real lines under the error it belongs to
        what, fix = split_fix(str(error))
        bug = bug or fix.startswith(BUG)
        first, *rest = visible.lines(what if fix.startswith(BUG) else str(error)).split("\n")
        out += style.wrap(first, style.paint("error", "error") + style.paint("bold", ":") + " ", "    ")
        out += [f"    {r}" for r in rest if r.strip()]  # a traceback keeps its lines
        out.append("")
    if bug:
        out += style.wrap(CRASH_HELP, style.paint("help", "help") + style.paint("bold", ":") + " ", "      ")
        out.append("")
    out += _tail(receipt, style, delta)
    return "\n".join(out) + "\n"


def _delta(delta: receipt_delta.Delta, style: Style) -> list[str]:
    """`since main's last receipt (abc): 1 new finding, 0 fixed; …`, then one line per new and fixed finding."""
    from evidence_gate.receipt import delta as receipt_delta  # noqa: PLC0415 - see the imports

    out = style.wrap(visible.line(f"since {delta.against}: {receipt_delta.counts(delta)}"), "", "    ")
    for what, found in (("new", delta.new), ("fixed", delta.fixed)):
        shown = found[: receipt_delta.MAX_LISTED]
        for f in shown:
            out += style.wrap(receipt_delta.said(f, 1000), f"  {style.paint('note', what)}: ", "      ")
        if len(found) > len(shown):
            out.append(f"  {what}: … {len(found) - len(shown)} more")
    return out


def _tail(receipt: Mapping[str, Any], style: Style, delta: receipt_delta.Delta | None = None) -> list[str]:
    """The lines after the findings: why properties did not run or the ledger counts, the change since the
    previous receipt, then the verdict."""
    out = []
    properties = receipt.get("properties") or {}
    if properties.get("skipped"):
        out += style.wrap(visible.line(f"not run ({properties['skipped']})"), "properties: ", "    ")
    counts = properties.get("counts")
    if counts and properties.get("ledgers"):
        n = {k: int(counts.get(k) or 0) for k in ("open", "closed_failures", "budget_passes")}
        out.append(
            f"seed ledgers: {n['open']} open, {n['closed_failures']} closed "
            f"failure{'s' if n['closed_failures'] != 1 else ''}, {n['budget_passes']} held on every seed"
        )
    coverage = receipt_access.patch_coverage(receipt)
    if coverage is not None:
        from evidence_gate.lanes.properties import patch_coverage  # noqa: PLC0415 - see the imports

        out += style.wrap(visible.line(patch_coverage.summary(coverage)), "patch coverage: ", "    ")
    if delta is not None:
        out += _delta(delta, style)
    d = receipt.get("decision") or {}
    ok = receipt.get("ok") is True
    verdict = style.paint("help" if ok else "error", "PASS" if ok else "FAIL")
    row = str(d.get("row", ""))
    title = report_rows.title(row) if report_rows.info(row).title else str(d.get("title", ""))
    if out:
        out.append("")  # the verdict stands apart from what it rests on
    out += style.wrap(visible.line(f"{title} [{row}]"), f"{verdict}: ", "    ")
    return out
