"""The one place that escapes text printed for the GitHub runner: workflow commands, log lines, step outputs.

The runner reads a workflow command from any log line that starts with `::` (or the legacy `##[`), so text that
comes from a patch or its tests must never start a line of its own. Command data is percent-encoded (`%`, CR, LF)
and property values additionally (`:`, `,`); plain log text is encoded the same way and a line that would look like
a command gets a visible prefix, so `::stop-commands::` or a fake `::error file=...` from a patch stays inert text.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from pathlib import Path

# A line the runner would parse as a command once leading whitespace is trimmed.
_COMMAND_PREFIXES = ("::", "##[", "##vso[")


def escape_data(text: str) -> str:
    """Percent-encode a command's message so it stays on one line and decodes to `text`."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Percent-encode a command property value (`file=`, `title=`): also `:` and `,`, which end a property."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, properties: Mapping[str, str | int | None] | None = None) -> str:
    """One workflow command line, `::name k=v,k=v::message`, with every part escaped; `name` is ours, never input."""
    if not name.replace("-", "").isalpha():
        raise ValueError(f"not a workflow command name: {name!r}")
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in (properties or {}).items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


# The workflow command that carries a check-run annotation of each level, when no check run can be posted.
COMMAND_LEVEL = {"failure": "error", "warning": "warning", "notice": "notice"}


def annotation(
    level: str, message: str, *, path: str | None = None, line: int | None = None, title: str | None = None
) -> str:
    """An `::error`/`::warning`/`::notice` annotation command."""
    if level not in ("error", "warning", "notice"):
        raise ValueError(f"not an annotation level: {level!r}")
    return command(level, message, {"file": path, "line": line if path is not None else None, "title": title})


def log_text(text: str) -> str:
    """Untrusted text as one inert log line: newlines encoded, and a command-looking start defused with `| `."""
    line = escape_data(text)
    if line.lstrip().startswith(_COMMAND_PREFIXES):
        return "| " + line
    return line


def output_entry(name: str, value: str) -> str:
    """A `$GITHUB_OUTPUT` record in the heredoc form with a random delimiter the value cannot contain."""
    if not name or any(c in name for c in "\r\n=<"):
        raise ValueError(f"not an output name: {name!r}")
    while True:
        delimiter = f"ghadelimiter_{secrets.token_hex(16)}"
        if delimiter not in value:
            break
    return f"{name}<<{delimiter}\n{value}\n{delimiter}\n"


def append_outputs(path: Path, outputs: Mapping[str, str]) -> None:
    """Append several outputs to the runner's `$GITHUB_OUTPUT` file."""
    with path.open("a", encoding="utf-8", newline="\n") as handle:
        for name, value in outputs.items():
            handle.write(output_entry(name, value))
