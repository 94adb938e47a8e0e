"""The ledger's history as an SVG, written by hand: one panel for entries, one for bytes, each against its budget
line, and with receipts a panel of the three seed-ledger counts per patch.

Pure: takes a `History` and returns the document. 960 px wide (GitHub's content column), every text escaped
(hostile characters spelled out first), one `<title>` per commit marker, deterministic for golden tests.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from evidence_gate.locked_paths import display_path

if TYPE_CHECKING:
    from evidence_gate.history import History, PatchCounts, Point

WIDTH = 960
LEFT, RIGHT = 76, 24
PANEL_H, PLOT_TOP, PLOT_BOTTOM = 230, 34, 40  # a panel's height and the plot's padding inside it
FONT = '-apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif'
INK, MUTED, GRID = "#1f2328", "#59636e", "#d1d9e0"
SERIES = {"entries": "#0969da", "bytes": "#8250df", "budget": "#cf222e", "gap": "#ffebe9"}
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


def _day(when: int) -> str:
    return datetime.fromtimestamp(when, UTC).date().isoformat()


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
    """One plot area: maps slot indices and values to pixels, collects its elements."""

    def __init__(self, top: float, slots: int, top_value: float) -> None:
        self.top, self.slots, self.top_value = top, max(slots, 1), top_value
        self.x0, self.x1 = LEFT, WIDTH - RIGHT
        self.y0, self.y1 = top + PLOT_TOP, top + PANEL_H - PLOT_BOTTOM
        self.parts: list[str] = []

    def x(self, slot: float) -> float:
        return self.x0 + (self.x1 - self.x0) * slot / self.slots

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

    def x_labels(self, labels: Sequence[tuple[int, str]]) -> None:
        """Tick marks and labels under the slots given."""
        for slot, label in labels:
            x = self.x(slot + 0.5)
            self.parts.append(f'<line x1="{x:.1f}" y1="{self.y1}" x2="{x:.1f}" y2="{self.y1 + 5}" stroke="{MUTED}"/>')
            self.parts.append(_text(x, self.y1 + 20, label, 12, MUTED, anchor="middle"))


def _text(x: float, y: float, text: str, size: int, colour: str = INK, anchor: str = "start") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" fill="{colour}" text-anchor="{anchor}">{esc(text)}</text>'


def _swatch(x: float, y: float, colour: str, style: str) -> str:
    if style == "box":
        return f'<rect x="{x}" y="{y - 6}" width="20" height="12" fill="{colour}" stroke="{SERIES["budget"]}"/>'
    dash = ' stroke-dasharray="6 4"' if style == "dashed" else ""
    return f'<line x1="{x}" y1="{y}" x2="{x + 20}" y2="{y}" stroke="{colour}" stroke-width="2.5"{dash}/>'


def _steps(panel: _Panel, values: Sequence[float | None]) -> str:
    """A step path over the slots: each value held across its slot, broken where a value is None."""
    path: list[str] = []
    current: float | None = None
    for i, v in enumerate(values):
        if v is None:
            current = None
            continue
        if current is None:
            path.append(f"M{panel.x(i):.1f} {panel.y(v):.1f}")
        elif v != current:
            path.append(f"V{panel.y(v):.1f}")
        path.append(f"H{panel.x(i + 1):.1f}")
        current = v
    return " ".join(path)


def _date_ticks(points: Sequence[Point]) -> list[tuple[int, str]]:
    n = len(points)
    every = max(1, math.ceil(n / 7))  # at most seven labels, never two in neighbouring slots
    return [(i, _day(points[i].when)) for i in range(0, n, every)]


def _gap_runs(points: Sequence[Point]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for i, p in enumerate(points):
        if p.state in GAP_STATES:
            if runs and runs[-1][1] == i - 1:
                runs[-1] = (runs[-1][0], i)
            else:
                runs.append((i, i))
    return runs


def _series_panel(top: float, points: Sequence[Point], what: str, value: Callable[[Point], int | None]) -> _Panel:
    """Entries or bytes: gaps shaded, the budget as a dashed step line, the value as a solid one with markers."""
    limit_of: Callable[[Point], int | None] = (
        (lambda p: p.max_entries) if what == "entries" else (lambda p: p.max_bytes)
    )
    values = [value(p) if p.state == "measured" else None for p in points]
    limits = [limit_of(p) if p.state == "measured" else None for p in points]
    known = [v for v in values + limits if v is not None]
    top_value, step = nice_max(max(known, default=1) * 1.08)
    panel = _Panel(top, len(points), top_value)
    for first, last in _gap_runs(points):
        p = points[first]
        tip = f"{_day(p.when)} {p.commit[:12]}" + (f" … {points[last].commit[:12]}" if last > first else "")
        panel.parts.append(
            f'<rect x="{panel.x(first):.1f}" y="{panel.y0}" width="{panel.x(last + 1) - panel.x(first):.1f}" '
            f'height="{panel.y1 - panel.y0}" fill="{SERIES["gap"]}"><title>{esc(tip + ": " + p.detail)}</title></rect>'
        )
    title = "Entries" if what == "entries" else "Canonical bytes"
    budget = "max_entries" if what == "entries" else "max_bytes"
    colour = SERIES[what]
    panel.frame(
        title,
        step,
        [(what, colour, "solid"), (f"budget ({budget})", SERIES["budget"], "dashed"), ("gap", SERIES["gap"], "box")],
    )
    panel.parts.append(f'<path d="{_steps(panel, values)}" fill="none" stroke="{colour}" stroke-width="2.5"/>')
    panel.parts.append(  # over the value, so a ledger exactly at its budget shows both
        f'<path d="{_steps(panel, limits)}" fill="none" stroke="{SERIES["budget"]}" stroke-width="2" '
        'stroke-dasharray="6 4"/>'
    )
    _markers(panel, points, values, colour, what)
    if not known:
        middle = (panel.y0 + panel.y1) / 2
        panel.parts.append(_text(WIDTH / 2, middle, "no readable ledger at any of these commits", 14, MUTED, "middle"))
    panel.x_labels(_date_ticks(points))
    return panel


def _markers(panel: _Panel, points: Sequence[Point], values: Sequence[int | None], colour: str, what: str) -> None:
    """A dot where the value changes, its tooltip naming the commit."""
    shown = 0
    for i, v in enumerate(values):
        if v is None or (i > 0 and values[i - 1] == v) or shown >= MAX_MARKERS:
            continue
        p = points[i]
        tip = f"{_day(p.when)} {p.commit[:12]} {p.subject}: {_num(v)} {what}"
        panel.parts.append(
            f'<circle cx="{panel.x(i + 0.5):.1f}" cy="{panel.y(v):.1f}" r="3.5" fill="{colour}">'
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
    panel = _Panel(top, len(patches), top_value)
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
    panel.x_labels([(i, _patch_label(patches[i])) for i in range(0, n, every)])
    return panel


def render(history: History) -> str:
    """The whole picture."""
    points = history.points
    title = f"Freeze ledger on {history.branch}: entries and bytes at each first-parent commit"
    subtitle = f"{len(points)} commits, {_day(points[0].when)} to {_day(points[-1].when)}, tip {history.tip[:12]}" + (
        "; shallow clone: older history not fetched" if history.shallow else ""
    )
    panels = [_series_panel(64, points, "entries", lambda p: p.entries)]
    panels.append(_series_panel(64 + PANEL_H, points, "bytes", lambda p: p.size))
    if history.patches:
        panels.append(_counts_panel(64 + 2 * PANEL_H, history.patches))
    height = 64 + PANEL_H * len(panels) + 52
    notes = (
        "Shaded: the ledger (or the configuration naming it) is invalid or unreadable at that commit; no line: no "
        "ledger there.",
        "Budget lines: the ledger's own budget at each commit (none drawn: no limit). Oldest commit on the left"
        + ("; patches by the date of their receipt." if history.patches else "."),
    )
    body = [
        f'<rect width="{WIDTH}" height="{height}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="26" font-size="17" font-weight="600">{esc(title)}</text>',
        _text(LEFT, 46, subtitle, 13, MUTED),
        *(part for panel in panels for part in panel.parts),
        _text(LEFT, height - 30, notes[0], 12, MUTED),
        _text(LEFT, height - 12, notes[1], 12, MUTED),
    ]
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-labelledby="title desc" font-family="{esc(FONT)}" fill="{INK}">\n'
        f'<title id="title">{esc(title)}</title>\n<desc id="desc">{esc(subtitle)}</desc>\n'
        + "\n".join(body)
        + "\n</svg>\n"
    )
