"""How the sealed plugin tells a failure: an exception's first line, the locked line that failed, the frames the
failing example ran in the sealed tree, the fixture that broke, and a run's outcome from pytest's reports.

Worker side (see `plugin`): standard library, pytest and each other only. Every path it names is relative to the
sealed tree, every text it returns is bounded.
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Iterable
from typing import Any

import pytest

from . import harness_guard

MAX_TEXT = 2000
MAX_STATEMENT = 200
MAX_FRAMES = 20  # traceback frames a failure record carries
MAX_EXCEPTION = 500


def text(value: object, limit: int = MAX_TEXT) -> str:
    """`value` as text, cut to `limit` characters (the last one an ellipsis)."""
    shown = str(value)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """`Type: first line of the message` (an exception group: its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def leaf(exc: BaseException) -> BaseException:
    """An exception group's first leaf (an exception that is no group: itself)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def root_cause(exc: BaseException) -> BaseException:
    """What a collection or conftest error wraps: pytest's CollectError/ConftestImportFailure carry the real one."""
    for _ in range(5):
        inner = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(inner, BaseException):
            break
        exc = inner
    return exc


def outcome(reports: list[pytest.TestReport], interrupted: str) -> tuple[str, str]:
    """The run's outcome and the message of its first report that was not a plain pass."""
    if interrupted:
        return "error", interrupted
    result, message = "passed", ""
    for report in reports:
        if report.passed and not hasattr(report, "wasxfail"):
            continue
        if hasattr(report, "wasxfail"):
            result = "xfailed" if report.skipped else "xpassed"
        elif report.skipped:
            result = "skipped"
        elif report.when == "call":
            result = "failed" if result == "passed" else result
        else:
            result = "error"
        message = message or report_message(report)
        if result != "failed":
            break
    return result, message


def report_message(report: pytest.TestReport) -> str:
    """The message the plugin noted on a report, else its skip reason or the last line of its text."""
    noted = getattr(report, "_gate_message", None)
    if noted:
        return str(noted)
    if report.skipped and isinstance(report.longrepr, tuple):
        return text(report.longrepr[2])
    lines = report.longreprtext.strip().splitlines()
    return text(lines[-1] if lines else "")


class Where:
    """Places in the sealed tree: a path made relative to it, and the frames of a traceback that count."""

    def __init__(self, tree: str, origins: harness_guard.Origins, trusted_files: frozenset[str]) -> None:
        self.tree = tree
        self.origins = origins
        self.trusted_files = trusted_files

    def rel(self, path: str) -> str:
        """`path` relative to the sealed tree (unchanged when it is outside)."""
        return path[len(self.tree) + 1 :] if self.tree and path.startswith(self.tree + os.sep) else path

    def innermost(self, exc: BaseException, files: Iterable[str] | None = None) -> tuple[str, int] | None:
        """(repo-relative file, line) of the innermost frame in `files` (default: any frame outside the harness
        and the standard library), or None."""
        found = None
        tb = exc.__traceback__
        while tb is not None:
            name = tb.tb_frame.f_code.co_filename
            if (name in files) if files is not None else not self.origins.transparent(name):
                found = (self.rel(name), tb.tb_lineno)
            tb = tb.tb_next
        return found

    def failure_record(self, exc: BaseException) -> dict[str, Any] | None:
        """{path, line, statement, exception} of the innermost frame in a locked file, or None."""
        first = leaf(exc)
        where = self.innermost(first, self.trusted_files)
        if where is None:
            return None
        absolute = os.path.join(self.tree, where[0])  # noqa: PTH118 - an absolute where[0] stays as it is
        statement = linecache.getline(absolute, where[1]).strip()
        return {
            "path": where[0],
            "line": where[1],
            "statement": text(statement, MAX_STATEMENT),
            "exception": text(f"{type(first).__name__}: {first}".rstrip(": "), MAX_EXCEPTION),
            "frames": self.tree_frames(first),
        }

    def tree_frames(self, exc: BaseException) -> list[list[Any]]:
        """[repo-relative file, line] of each traceback frame in the sealed tree outside the harness, outermost
        first (at most 20): where the failing example ran, for the report to find the patch's lines in it."""
        out: list[list[Any]] = []
        tb = exc.__traceback__
        while tb is not None and len(out) < MAX_FRAMES:
            name = tb.tb_frame.f_code.co_filename
            if not self.origins.transparent(name) and self.rel(name) != name:
                out.append([self.rel(name), tb.tb_lineno])
            tb = tb.tb_next
        return out

    def fixture_message(self, when: str, exc: BaseException) -> str:
        """Setup or teardown failed: which fixture, where, and why."""
        argname = getattr(exc, "argname", None)
        if argname and type(exc).__name__ == "FixtureLookupError":
            return f"{when} failed: fixture {argname!r} was not found"
        outer = None
        tb = exc.__traceback__
        while tb is not None:
            if outer is None and not self.origins.transparent(tb.tb_frame.f_code.co_filename):
                outer = tb.tb_frame.f_code.co_name
            tb = tb.tb_next
        where = self.innermost(exc)
        at = f" ({where[0]}:{where[1]})" if where else ""
        fixture = f" in fixture {outer!r}" if outer else ""
        return text(f"{when} failed{fixture}{at}: {describe(exc)}", 600)
