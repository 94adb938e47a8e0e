"""GitHub's size limits on Markdown: the step summary (1 MiB) and the check run's summary and text (65,535
characters). Text past a limit is cut at a line, with open code fences and `<details>` blocks closed and a marker
naming the artifact; and the one writer of `$GITHUB_STEP_SUMMARY`."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path

STEP_SUMMARY_LIMIT = 1024 * 1024  # bytes: GitHub rejects a step summary over 1 MiB
CHECK_SUMMARY_LIMIT = 65535  # characters: the check-run `output.summary` and `output.text` limit
TRUNCATED_MARKER = "\n\n**[evidence-gate: report truncated; the full receipt is in the artifact]**\n"


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
        tail = "\n".join(_open_html(head))
        result = head + (closing + "\n" if closing else "") + (tail + "\n" if tail else "") + TRUNCATED_MARKER
        if size(result) <= limit:
            return result
        budget -= size(closing) + size(tail) + 2


def _open_fence(text: str) -> str:
    """The fence that is still open at the end of `text`, or ''."""
    fence = ""
    for line in text.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if not m:
            continue
        if not fence:
            fence = m.group(1)
        elif line.rstrip() == fence or (line.startswith(fence) and not line[len(fence) :].strip()):
            fence = ""
    return fence


def _open_html(text: str) -> list[str]:
    """Closing tags for the report's own `<details>` blocks still open at the end of `text` (lines inside a code
    fence are patch text, not tags)."""
    opened, fence = 0, ""
    for line in text.split("\n"):
        m = re.match(r"^(`{3,})", line)
        if m and not fence:
            fence = m.group(1)
        elif fence and line.rstrip() == fence:
            fence = ""
        elif not fence:
            opened += line.startswith("<details>") - line.startswith("</details>")
    return ["</details>"] * max(opened, 0)


def append(env: Mapping[str, str], markdown: str) -> str | None:
    """Append `markdown` to `$GITHUB_STEP_SUMMARY` when it is set; None, or a warning naming the file and the fix
    when it cannot be written (the summary is a copy of the check run: it never changes the verdict or the outputs)."""
    path = env.get("GITHUB_STEP_SUMMARY")
    if not path:
        return None
    try:
        with Path(path).open("a", encoding="utf-8") as handle:
            handle.write(markdown + "\n")
    except OSError as exc:
        return (
            f"the job summary could not be written to GITHUB_STEP_SUMMARY={path} ({exc.strerror or exc}); the check "
            "run, the receipt and the outputs still carry the verdict; fix: leave GITHUB_STEP_SUMMARY as the runner "
            "sets it (a writable file), or set `job-summary: false`"
        )
    return None
