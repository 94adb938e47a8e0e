"""The one text sanitiser: characters that would hide, reorder or break text, spelled out as escapes.

Everything the gate prints or posts that did not come from its own words (paths, messages, test output, log
tails) goes through `line` or `lines` first: `\\n`, `\\x1b`, `\\u202e`, and `\\xff` for a byte that was not UTF-8
(a lone surrogate from `surrogateescape`). `encodable` is for text kept verbatim (the receipt): it spells only
what UTF-8 cannot encode. The escaping for a medium (GitHub Markdown in gfm.py, workflow commands in
workflow_commands.py) applies on top. Worker-side modules keep their own bounds: they may not import this.
"""

from __future__ import annotations

import unicodedata

# Code point categories that have no business in a file name: controls (newline, ESC), invisible format characters
# (U+200B, U+202E, U+FEFF), lone surrogates (bytes that were not UTF-8), and the line/paragraph separators.
HOSTILE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
# Default-ignorable code points outside Cf that render as nothing (Hangul fillers, variation selectors, the
# combining grapheme joiner, Khmer inherent vowels).
INVISIBLE = frozenset(
    {
        0x034F,
        0x115F,
        0x1160,
        0x17B4,
        0x17B5,
        0x3164,
        0xFFA0,
        *range(0x180B, 0x1810),
        *range(0xFE00, 0xFE10),
        *range(0xE0100, 0xE01F0),
    }
)


def is_hostile(ch: str) -> bool:
    """Whether one character has no business in a file name (see HOSTILE_CATEGORIES and INVISIBLE)."""
    return unicodedata.category(ch) in HOSTILE_CATEGORIES or ord(ch) in INVISIBLE


def _spell(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"\\x{code - 0xDC00:02x}"
    if ch == "\n":
        return "\\n"
    if ch == "\t":
        return "\\t"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def line(text: str) -> str:
    """`text` as one line of visible characters: every hostile character spelled (`\\u200b`, `\\n`, `\\xff`)."""
    return "".join(_spell(ch) if is_hostile(ch) else ch for ch in text)


def lines(text: str) -> str:
    """Multi-line text (a traceback) with its line breaks kept and each line through `line`."""
    return "\n".join(line(part) for part in text.split("\n"))


def encodable(text: str) -> str:
    """`text` unchanged except what UTF-8 cannot encode (surrogates: bytes that were not UTF-8), spelled as in `line`."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return "".join(_spell(ch) if 0xD800 <= ord(ch) <= 0xDFFF else ch for ch in text)
    return text
