"""The one user-facing error type, the one error for unusable input, and the one exit-code table."""

from __future__ import annotations

from evidence_gate import decision

EXIT_PASS = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_FAIL = 10
EXIT_PRECONDITION = 11


class GateError(Exception):
    """A failure the user can act on: what happened, and the fix.

    `row` names the failing decision-table row it lands on (`config-invalid`, `history-missing`, `event-mismatch`,
    `run-integrity`), whose `exit_code` is the process's; None for a usage error or a failure of the gate itself.
    An id that is not a failing row of the table is a programming error, raised here rather than at exit.
    """

    def __init__(self, message: str, *, fix: str = "", row: str | None = None, usage: bool = False) -> None:
        super().__init__(message)
        if row is not None and decision.row(row).gate != "fail":
            raise ValueError(f"GateError row {row!r} is not a failing row of the decision table")
        self.message = message
        self.fix = fix
        self.row = row
        self.usage = usage

    def describe(self) -> str:
        """What happened and the fix, without the row id."""
        return f"{self.message}; fix: {self.fix}" if self.fix else self.message

    def __str__(self) -> str:
        return f"{self.describe()} [{self.row}]" if self.row else self.describe()

    @property
    def exit_code(self) -> int:
        """The process exit code this error ends in: usage 2, its row's `exit_code` from the table, else 1."""
        if self.usage:
            return EXIT_USAGE
        return decision.row(self.row).exit_code if self.row else EXIT_INTERNAL


class InputInvalid(ValueError):
    """A file the gate reads (configuration, `SCORE_PROPERTIES`, a ledger, JSON or YAML) is not acceptable input.

    `message` names the problem; `line` is 1-based where known. The edge that read the file turns it into a
    GateError on its row, with the fix in the user's terms.
    """

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
