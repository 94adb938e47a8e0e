"""The ledger's history as an SVG, written by hand: one panel for entries, one for bytes, each against its budget
line, and with receipts a panel of the three seed-ledger counts per patch.

Pure: takes a `History` and returns the document. 960 px wide (GitHub's content column), every text escaped
(hostile characters spelled out first), one `<title>` per commit marker, deterministic for golden tests.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from evidence_gate.lanes.freeze.history import MAX_TIME, History, PatchCounts, Point, Proposal, change_words
from evidence_gate.lanes.locked_paths import display_path

WIDTH = 960
LEFT, RIGHT = 76, 24
PANEL_H, PLOT_TOP, PLOT_BOTTOM = 230, 34, 40  # a panel's height and the plot's padding inside it
FONT = '-apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif'
INK, MUTED, GRID = "#1f2328", "#59636e", "#d1d9e0"
SERIES = {
    "entries": "#0969da",
    "bytes": "#8250df",
    "budget": "#cf222e",
    "gap": "#ffebe9",
    "pr": "#bc4c00",
    "pr-band": "#fff1e5",
}
HOUR, DAY = 3600, 86400
COUNTS = (
    ("open", "open seed ledgers", "#bf8700"),
    ("closed_failures", "closed failures", "#cf222e"),
    ("budget_passes", "budget passes", "#1a7f37"),
)
MAX_MARKERS = 400
GAP_STATES = ("invalid", "unreadable")


def esc(text: object, limit: int = 300) -> str:
    """Text for an SVG element or attribute: hostile characters spelled out, XML's specials escaped, bounded."""
    shown = display_path(str(text))
    shown = "".join(c for c in shown if c not in "\ufffe\uffff")
    if len(shown) > limit:
        shown = shown[: limit - 1] + "…"
    return html.escape(shown, quote=True)


def _day(when: float) -> str:
    return _utc(when).date().isoformat()


def nice_max(value: float) -> tuple[float, float]:
    """An axis top at or above `value` and its tick step (1, 2 or 5 times a power of ten, four or five ticks)."""
    value = max(value, 1.0)
    raw = value / 4
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    step = max(step, 1.0)
    return step * math.ceil(value / step), step


def _num(value: float) -> str:
    return f"{int(value):,}"


class _Panel:
    """One plot area: maps a domain (seconds, or slot indices) and values to pixels, collects its elements."""

    def __init__(self, top: float, lo: float, hi: float, top_value: float) -> None:
        self.top, self.lo, self.hi, self.top_value = top, lo, hi if hi > lo else lo + 1, top_value
        self.x0, self.x1 = LEFT, WIDTH - RIGHT
        self.y0, self.y1 = top + PLOT_TOP, top + PANEL_H - PLOT_BOTTOM
        self.parts: list[str] = []

    def x(self, at: float) -> float:
        return self.x0 + (self.x1 - self.x0) * (min(max(at, self.lo), self.hi) - self.lo) / (self.hi - self.lo)

    def y(self, value: float) -> float:
        return self.y1 - (self.y1 - self.y0) * min(value, self.top_value) / self.top_value

    def frame(self, title: str, step: float, legend: Sequence[tuple[str, str, str]]) -> None:
        """Title, legend (label, colour, style), horizontal grid with value labels, and the axes."""
        self.parts.append(f'<text x="{LEFT}" y="{self.top + 18}" font-size="15" font-weight="600">{esc(title)}</text>')
        x = WIDTH - RIGHT
        for label, colour, style in reversed(legend):
            width = 7 * len(label) + 34
            x -= width
            self.parts.append(_swatch(x, self.top + 13, colour, style) + _text(x + 26, self.top + 18, label, 12, MUTED))
        value = 0.0
        while value <= self.top_value + 1e-9:
            y = self.y(value)
            self.parts.append(f'<line x1="{self.x0}" y1="{y:.1f}" x2="{self.x1}" y2="{y:.1f}" stroke="{GRID}"/>')
            self.parts.append(_text(self.x0 - 8, y + 4, _num(value), 12, MUTED, anchor="end"))
            value += step
        self.parts.append(
            f'<line x1="{self.x0}" y1="{self.y1}" x2="{self.x1}" y2="{self.y1}" stroke="{MUTED}"/>'
            f'<line x1="{self.x0}" y1="{self.y0}" x2="{self.x0}" y2="{self.y1}" stroke="{MUTED}"/>'
        )

    def x_labels(self, labels: Sequence[tuple[float, str]]) -> None:
        """Tick marks and labels under the domain positions given."""
        for at, label in labels:
            x = self.x(at)
            self.parts.append(f'<line x1="{x:.1f}" y1="{self.y1}" x2="{x:.1f}" y2="{self.y1 + 5}" stroke="{MUTED}"/>')
            self.parts.append(_text(x, self.y1 + 20, label, 12, MUTED, anchor="middle"))


def _text(x: float, y: float, text: str, size: int, colour: str = INK, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="{anchor}">{esc(text)}</text>'


def _swatch(x: float, y: float, colour: str, style: str) -> str:
    if style == "box":
        return f'<rect x="{x}" y="{y - 6}" width="20" height="12" fill="{colour}" stroke="{SERIES["budget"]}"/>'
    if style == "pr":
        return (
            f'<rect x="{x}" y="{y - 6}" width="20" height="12" fill="{SERIES["pr-band"]}"/>'
            f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colour}" stroke-width="3"/>'
        )
    dash = ' stroke-dasharray="6 4"' if style == "dashed" else ""
    return f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colour}" stroke-width="2.5"{dash}/>'


@dataclass(frozen=True)
class _Timeline:
    """Where each commit's value holds on the time axis: from its date (never before the commit before it, as
    committer dates can go backwards) to the next commit's; the tip's until the pull request's date or the end."""

    spans: tuple[tuple[float, float], ...]
    lo: float
    hi: float
    proposed: float | None


def _timeline(points: Sequence[Point], proposal: Proposal | None) -> _Timeline:
    starts: list[float] = []
    for p in points:
        at = float(min(max(p.when, 0), MAX_TIME))
        starts.append(max(at, starts[-1]) if starts else at)
    lo, last = starts[0], starts[-1]
    proposed = max(float(min(max(proposal.point.when, 0), MAX_TIME)), last) if proposal is not None else None
    end = last if proposed is None else proposed
    span = end - lo
    # room after the last date: the tip's value is seen to hold, and the pull request's band is wide enough to read
    pad = max(span * (0.14 if proposed is not None else 0.03), 6 * HOUR) if span > 0 else DAY
    hi = min(end + pad, float(MAX_TIME))
    ends = [*starts[1:], proposed if proposed is not None else hi]
    return _Timeline(tuple(zip(starts, ends, strict=True)), lo, max(hi, lo + HOUR), proposed)


def _steps(panel: _Panel, spans: Sequence[tuple[float, float]], values: Sequence[float | None]) -> str:
    """A step path: each value held across its span of time, broken where a value is None."""
    path: list[str] = []
    current: float | None = None
    for (start, end), v in zip(spans, values, strict=True):
        if v is None:
            current = None
            continue
        if current is None:
            path.append(f"M{panel.x(start):.1f} {panel.y(v):.1f}")
        elif v != current:
            path.append(f"V{panel.y(v):.1f}")
        path.append(f"H{panel.x(end):.1f}")
        current = v
    return " ".join(path)


MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
MAX_TICKS = 7
# Tick steps, finest first: (unit, count); a unit of seconds is aligned to UTC midnight (weeks to Mondays).
TICK_STEPS = (
    *(("s", n * HOUR) for n in (1, 3, 6, 12)),
    *(("s", n * DAY) for n in (1, 2, 7, 14)),
    *(("month", n) for n in (1, 2, 3, 6)),
    *(("year", n) for n in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)),
)
APPROX = {"s": 1, "month": 30.44 * DAY, "year": 365.25 * DAY}
MONDAY = 4 * DAY  # the epoch was a Thursday


def _utc(at: float) -> datetime:
    return datetime.fromtimestamp(min(max(at, 0), MAX_TIME), UTC)


def _tick_times(lo: float, hi: float, unit: str, n: int) -> list[float]:
    """The tick times of one step within [lo, hi]."""
    if unit == "s":
        offset = MONDAY if n % (7 * DAY) == 0 else 0
        first = math.ceil((lo - offset) / n) * n + offset
        return [float(t) for t in range(int(first), int(hi) + 1, n)]
    start = _utc(lo)
    year, month = (start.year, start.month) if unit == "month" else (start.year, 1)
    out: list[float] = []
    while year <= 9999:
        at = datetime(year, month, 1, tzinfo=UTC).timestamp()
        if at > hi:
            break
        aligned = (month - 1) % n == 0 if unit == "month" else year % n == 0
        if at >= lo and aligned:
            out.append(at)
        month, year = (month + 1, year) if unit == "month" and month < 12 else (1, year + 1)
    return out


def time_ticks(lo: float, hi: float) -> list[tuple[float, str]]:
    """At most MAX_TICKS readable ticks between `lo` and `hi` (seconds): `Sep 3 06:00`, `Sep 3, 2026` (the year
    on the first tick and where it changes), `Sep 2026`, `2026`."""
    for unit, n in TICK_STEPS:
        if (hi - lo) / (n * APPROX[unit]) > MAX_TICKS + 1:
            continue
        times = _tick_times(lo, hi, unit, n)
        if 0 < len(times) <= MAX_TICKS:
            break
    else:
        times, unit, n = [lo], "year", 1
    out: list[tuple[float, str]] = []
    year = None
    for at in times:
        d = _utc(at)
        if unit == "year":
            label = str(d.year)
        elif unit == "month":
            label = f"{MONTHS[d.month - 1]} {d.year}" if d.year != year or d.month == 1 else MONTHS[d.month - 1]
        elif n < DAY:
            label = f"{MONTHS[d.month - 1]} {d.day} {d.hour:02d}:00"
        else:
            label = f"{MONTHS[d.month - 1]} {d.day}" + (f", {d.year}" if d.year != year else "")
        year = d.year
        out.append((at, label))
    return out


def _gap_runs(points: Sequence[Point]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i, p in enumerate(points):
        if p.state in GAP_STATES:
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
    return runs


def _series_panel(
    top: float, history: History, timeline: _Timeline, what: str, value: Callable[[Point], int | None]
) -> _Panel:
    """Entries or bytes over time: gaps shaded, the budget as a dashed step line, the value as a solid one with
    markers, and the pull request's proposed ledger in its own band at the right."""
    points = history.points
    limit_of: Callable[[Point], int | None] = (
        (lambda p: p.max_entries) if what == "entries" else (lambda p: p.max_bytes)
    )
    values = [value(p) if p.state == "measured" else None for p in points]
    limits = [limit_of(p) if p.state == "measured" else None for p in points]
    proposal = history.proposal
    shown = proposal.point if proposal is not None and proposal.point.state == "measured" else None
    extra = [value(shown), limit_of(shown)] if shown is not None else []
    known = [v for v in values + limits + extra if v is not None]
    top_value, step = nice_max(max(known, default=1) * 1.08)
    panel = _Panel(top, timeline.lo, timeline.hi, top_value)
    runs = _gap_runs(points)
    for first, last in runs:
        p = points[first]
        tip = f"{_day(p.when)} {p.commit[:12]}" + (f" … {points[last].commit[:12]}" if last > first else "")
        x0, x1 = panel.x(timeline.spans[first][0]), panel.x(timeline.spans[last][1])
        panel.parts.append(
            f'<rect x="{x0:.1f}" y="{panel.y0}" width="{max(x1 - x0, 1.0):.1f}" '
            f'height="{panel.y1 - panel.y0}" fill="{SERIES["gap"]}"><title>{esc(tip + ": " + p.detail)}</title></rect>'
        )
    title = "Entries" if what == "entries" else "Canonical bytes"
    budget = "max_entries" if what == "entries" else "max_bytes"
    colour = SERIES[what]
    legend = [(what, colour, "solid")]
    if any(v is not None for v in [*limits, *extra[1:]]):
        legend.append((f"budget ({budget})", SERIES["budget"], "dashed"))
    if runs:
        legend.append(("gap", SERIES["gap"], "box"))
    if proposal is not None:
        legend.append(("this PR", SERIES["pr"], "pr"))
    panel.frame(title, step, legend)
    if proposal is not None and timeline.proposed is not None:
        _proposal_band(panel, timeline.proposed, proposal, values[-1], value, what)
    panel.parts.append(
        f'<path d="{_steps(panel, timeline.spans, values)}" fill="none" stroke="{colour}" stroke-width="2.5"/>'
    )
    budget_spans, budget_values = list(timeline.spans), list(limits)
    if shown is not None and timeline.proposed is not None:
        budget_spans.append((timeline.proposed, timeline.hi))
        budget_values.append(limit_of(shown))
    panel.parts.append(  # over the value, so a ledger exactly at its budget shows both
        f'<path d="{_steps(panel, budget_spans, budget_values)}" fill="none" stroke="{SERIES["budget"]}" '
        'stroke-width="2" stroke-dasharray="6 4"/>'
    )
    _markers(panel, points, timeline, values, colour, what)
    if not known:
        middle = (panel.y0 + panel.y1) / 2
        panel.parts.append(_text(WIDTH / 2, middle, "no readable ledger at any of these commits", 14, MUTED, "middle"))
    panel.x_labels(time_ticks(timeline.lo, timeline.hi))
    return panel


def _proposal_band(
    panel: _Panel, at: float, proposal: Proposal, before: int | None, value: Callable[[Point], int | None], what: str
) -> None:
    """The pull request's ledger: a shaded band from its date to the end, labelled, the step from the tip's value
    to the proposed one in the band's colour, a diamond on the proposed value, and the change written beside it."""
    x, x1 = panel.x(at), panel.x1
    p = proposal.point
    v = value(p) if p.state == "measured" else None
    head = f"this PR ({proposal.head[:12]}, {_day(p.when)})"
    said = f"{head}: {_num(v)} {what}" if v is not None else f"{head}: {p.detail}"

    change = change_words(proposal) if what == "entries" else ""
    panel.parts.append(
        f'<rect x="{x:.1f}" y="{panel.y0}" width="{max(x1 - x, 1.0):.1f}" height="{panel.y1 - panel.y0}" '
        f'fill="{SERIES["pr-band"]}"><title>{esc(said + (f"; entries {change}" if change else ""))}</title></rect>'
    )
    panel.parts.append(
        f'<text x="{x1 - 4:.1f}" y="{panel.y0 + 14:.1f}" font-size="12" font-weight="600" fill="{SERIES["pr"]}" '
        'text-anchor="end">this PR</text>'
    )
    if v is None:
        panel.parts.append(_text(x1 - 4, panel.y0 + 30, p.state, 12, SERIES["pr"], "end"))
        return
    y = panel.y(v)
    start = f"M{x:.1f} {panel.y(before):.1f} V{y:.1f}" if before is not None else f"M{x:.1f} {y:.1f}"
    panel.parts.append(
        f'<path d="{start} H{x1:.1f}" fill="none" stroke="{SERIES["pr"]}" stroke-width="3"/>'
        f'<path d="M{x:.1f} {y - 6:.1f} l6 6 l-6 6 l-6 -6 z" fill="{SERIES["pr"]}"><title>{esc(said)}</title></path>'
    )
    if what == "entries" and proposal.added is not None and proposal.removed is not None:
        delta = f"+{len(proposal.added)} −{len(proposal.removed)} → {_num(v)}"
    else:
        delta = f"{v - before:+,} → {_num(v)}" if before is not None else f"→ {_num(v)}"
    panel.parts.append(_text(x1 - 4, panel.y0 + 30, delta, 12, SERIES["pr"], "end"))


def _markers(
    panel: _Panel, points: Sequence[Point], timeline: _Timeline, values: Sequence[int | None], colour: str, what: str
) -> None:
    """A dot where the value changes, at its commit's date, its tooltip naming the commit."""
    shown = 0
    for i, v in enumerate(values):
        if v is None or (i > 0 and values[i - 1] == v) or shown >= MAX_MARKERS:
            continue
        p = points[i]
        tip = f"{_day(p.when)} {p.commit[:12]} {p.subject}: {_num(v)} {what}"
        panel.parts.append(
            f'<circle cx="{panel.x(timeline.spans[i][0]):.1f}" cy="{panel.y(v):.1f}" r="3.5" fill="{colour}">'
            f"<title>{esc(tip)}</title></circle>"
        )
        shown += 1


def _patch_label(p: PatchCounts) -> str:
    name = p.name.removesuffix(".json")
    if name.endswith("/receipt"):
        name = name.removesuffix("/receipt").rsplit("/", 1)[-1]
    return name if len(name) <= 16 else name[:15] + "…"


def _counts_panel(top: float, patches: Sequence[PatchCounts]) -> _Panel:
    """Three bars per patch: open seed ledgers, closed failures, budget passes."""
    known = [getattr(p, key) for p in patches for key, _, _ in COUNTS]
    top_value, step = nice_max(max(known, default=1) * 1.08)
    panel = _Panel(top, 0, len(patches), top_value)
    panel.frame("Seed ledgers per patch (receipts)", step, [(label, colour, "solid") for _, label, colour in COUNTS])
    for i, patch in enumerate(patches):
        slot = panel.x(i + 1) - panel.x(i)
        width = min(max(slot * 0.8 / 3, 1.0), 36.0)
        for k, (key, label, colour) in enumerate(COUNTS):
            count = getattr(patch, key)
            x = panel.x(i) + (slot - 3 * width) / 2 + k * width
            y = panel.y(count)
            tip = f"{patch.name} ({patch.head[:12]}, {patch.day}): {count} {label}"
            panel.parts.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{width:.1f}" height="{panel.y1 - y:.1f}" fill="{colour}">'
                f"<title>{esc(tip)}</title></rect>"
            )
    n = len(patches)
    every = max(1, math.ceil(n / 8))
    panel.x_labels([(i + 0.5, _patch_label(patches[i])) for i in range(0, n, every)])
    return panel


def _notes(history: History, timeline: _Timeline) -> list[str]:
    """The lines under the picture: only what it draws is explained."""
    states = {p.state for p in history.points}
    out = []
    if states & set(GAP_STATES):
        out.append("Shaded red: the ledger (or the configuration naming it) is invalid or unreadable at that commit.")
    if "absent" in states:
        out.append("No line: no ledger at that commit.")
    if any(p.max_entries is not None or p.max_bytes is not None for p in history.points):
        out.append("Dashed red: the ledger's own budget at each commit (none drawn: no limit).")
    if history.proposal is not None:
        out.append(
            "Orange band: the ledger this pull request proposes (its merge commit), from its head commit's date"
            + (
                " (older than the base branch's tip: drawn at the tip)"
                if timeline.proposed != history.proposal.point.when
                else ""
            )
            + "."
        )
    out.append(
        "Time runs left to right, each value holding until the next commit"
        + ("; patches by the date of their receipt." if history.patches else ".")
    )
    return out


def render(history: History) -> str:
    """The whole picture."""
    points = history.points
    timeline = _timeline(points, history.proposal)
    title = f"Freeze ledger on {history.branch}: entries and bytes over time"
    subtitle = f"{len(points)} first-parent commits, {_day(points[0].when)} to {_day(points[-1].when)}, tip "
    subtitle += f"{history.tip[:12]}" + ("; shallow clone: older history not fetched" if history.shallow else "")
    if history.proposal is not None:
        subtitle += f"; this PR: {history.proposal.head[:12]}"
    panels = [_series_panel(64, history, timeline, "entries", lambda p: p.entries)]
    panels.append(_series_panel(64 + PANEL_H, history, timeline, "bytes", lambda p: p.size))
    if history.patches:
        panels.append(_counts_panel(64 + 2 * PANEL_H, history.patches))
    notes = _notes(history, timeline)
    height = 64 + PANEL_H * len(panels) + 16 + 18 * len(notes)
    body = [
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="26" font-size="17" font-weight="600">{esc(title)}</text>',
        _text(LEFT, 46, subtitle, 13, MUTED),
        *(part for panel in panels for part in panel.parts),
        *(_text(LEFT, height - 12 - 18 * (len(notes) - 1 - i), note, 12, MUTED) for i, note in enumerate(notes)),
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-labelledby="title desc" font-family="{esc(FONT)}" fill="{INK}">\n'
        f'<title id="title">{esc(title)}</title>\n<desc id="desc">{esc(subtitle)}</desc>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
