"""The docs as tests read them: the README (the front door) and the pages under `docs/`, their headings' anchors by
GitHub's slug rules, their relative links, their sections and the ```yaml blocks users copy out of them."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_HEADING = re.compile(r"(#{1,6}) +(.+?) *#* *$")
_ID = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")
_LINK = re.compile(r"\]\(([^)\s]+)\)")


def pages() -> list[Path]:
    """Every docs page, by name."""
    return sorted(DOCS.glob("*.md"))


def documents() -> list[Path]:
    """The README and every docs page."""
    return [README, *pages()]


def read(page: str) -> str:
    """A page's text, `page` relative to the repository root (`README.md`, `docs/cli.md`)."""
    return (ROOT / page).read_text("utf-8")


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks."""
    out, fence = [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
            continue
        if not fence:
            out.append(line)
    return out


def slug(heading: str) -> str:
    """GitHub's anchor for a heading's text: tags and link targets dropped, lower case, every character that is not
    a letter, digit, `_`, `-` or space removed, each space a `-`."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every fragment a page resolves: its headings' slugs (a repeated slug gets `-1`, `-2`, … as on GitHub) and the
    explicit `<a id>`/`<a name>` anchors."""
    out: set[str] = set()
    seen: dict[str, int] = {}
    for line in prose_lines(text):
        out.update(_ID.findall(line))
        m = _HEADING.match(line)
        if m:
            base = slug(m.group(2))
            n = seen.get(base, 0)
            out.add(base if n == 0 else f"{base}-{n}")
            seen[base] = n + 1
    return out


def links(text: str) -> list[str]:
    """The Markdown link targets outside code: fenced blocks and inline code spans are skipped."""
    out = []
    for line in prose_lines(text):
        out += _LINK.findall(re.sub(r"`[^`]*`", "", line))
    return out


def section(text: str, heading: str) -> str:
    """The text under the heading whose title is `heading`, up to the next heading of the same or a higher level."""
    lines = text.splitlines(keepends=True)
    fence, start, level = False, None, 0
    for i, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else _HEADING.match(line.rstrip("\n"))
        if m and start is not None and len(m.group(1)) <= level:
            return "".join(lines[start:i])
        if m and start is None and m.group(2) == heading:
            start, level = i + 1, len(m.group(1))
    if start is None:
        raise KeyError(f"no heading {heading!r}")
    return "".join(lines[start:])


def holding(heading: str) -> str:
    """The text of the section titled `heading`, on whichever docs page (or the README) holds it."""
    found = [
        p
        for p in documents()
        if heading in {m.group(2) for m in map(_HEADING.match, prose_lines(p.read_text("utf-8"))) if m}
    ]
    assert len(found) == 1, (heading, found)
    return section(found[0].read_text("utf-8"), heading)


def between(text: str, start: str, end: str) -> str:
    """The text between two markers (`<!-- section:x -->` ... `<!-- /section:x -->`)."""
    return text.split(start, 1)[1].split(end, 1)[0]


def yaml_blocks(text: str) -> list[str]:
    """The ```yaml blocks of `text`, each exactly as a user copies it."""
    return [block.split("```", 1)[0] for block in text.split("```yaml\n")[1:]]


def readme_workflow() -> str:
    """The README's copy-paste `pull_request` workflow, byte for byte."""
    return yaml_blocks(between(README.read_text("utf-8"), "<!-- section:workflow -->", "<!-- /section:workflow -->"))[0]
