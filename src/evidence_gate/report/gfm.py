"""The one place that escapes text for GitHub-flavoured Markdown (job summary, check-run summary and text).

Everything that did not come from the gate's own words — paths, messages, test output, entry ids, node ids — goes
through `text`, `code` or `block`, so a patch can neither close a code span or fence, nor inject HTML, a table
cell, a heading, a list, a link, an autolink (`www.`, `https:`, an e-mail address), an `@mention`, an emoji
shortcode or math. Each form first spells
out control, format and surrogate characters (`\\n`, `\\u202e`) the way every other reporter does.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit

from evidence_gate.lanes.locked_paths import display_path

# Inline syntax characters, escaped wherever they occur: emphasis, code, links and images, raw HTML and entities,
# tables, strikethrough, headings, emoji shortcodes and URL autolinks (`:`), math (`$`), and backslash itself.
_SYNTAX = re.compile(r"([\\`*_\[\]<>!&|~#:$])")
_WWW = re.compile(r"(?i)\b(www)\.")  # the `www.` autolink
_LINE_START = re.compile(r"^([-+=]|\d+[.)])")  # a list item, a setext underline, an ordered list


def printable(value: object, limit: int | None = None) -> str:
    """`value` as one line of visible characters, cut to `limit` characters with an ellipsis."""
    one = display_path(str(value))
    if limit is not None and len(one) > limit:
        return one[: max(limit - 1, 0)] + "…"
    return one


def text(value: object, limit: int | None = None, *, at_start: bool = True) -> str:
    """Untrusted text as plain Markdown prose: inline syntax escaped, `@` kept out of mentions, and nothing at its
    start that could open a block (it may follow a list marker).

    `at_start=False` is for a piece that continues a line (it keeps its leading blanks). A backslash escape ends
    cmark-gfm's `www.`/URL autolinks; an e-mail autolink or a mention needs a bare `@` inside one text run, so `@`
    is written as a one-character code span. Hyphens, dots, quotes and the like stay as they are, so the Markdown
    source still reads (and greps) like the message.
    """
    plain = printable(value, limit)
    escaped = _WWW.sub(r"\1\\.", _SYNTAX.sub(r"\\\1", plain.lstrip() if at_start else plain))
    if at_start:
        escaped = _LINE_START.sub(lambda m: m.group(1)[:-1] + "\\" + m.group(1)[-1], escaped)
    return escaped.replace("@", "`@`")


def code(value: object, limit: int | None = None, *, table: bool = False) -> str:
    """Untrusted text as an inline code span no backtick run in it can close; `table=True` also escapes `|`
    (GFM splits table cells before inline parsing, and turns `\\|` back into `|` inside the span)."""
    body = printable(value, limit)
    if table:
        body = body.replace("|", "\\|")
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if body.startswith("`") or body.endswith("`") or (body.startswith(" ") and body.endswith(" ")) else ""
    return f"{ticks}{pad}{body}{pad}{ticks}" if body else "` `"


def block(value: str, info: str = "text", limit: int | None = None) -> str:
    """Untrusted multi-line text in a fence that no line of it can close; each line made printable."""
    lines = [printable(line) for line in value.split("\n")]
    body = "\n".join(lines)
    if limit is not None and len(body) > limit:
        body = body[:limit].rsplit("\n", 1)[0] + "\n…"
    longest = max((len(m) for m in re.findall(r"`+", body)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{body}\n{fence}"


def link(label: str, url: str) -> str:
    """A Markdown link to a URL the gate built (http or https only); `label` is already Markdown."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"not an http(s) URL: {url!r}")
    return f"[{label}](<{quote(url, safe=':/?#=&%@+,;~')}>)"


def url_path(path: str) -> str:
    """A repository path as a URL path segment sequence (every character but `/` percent-encoded as needed)."""
    return quote(path, safe="/")
