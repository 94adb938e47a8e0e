"""The one user-facing error type and the one exit-code table."""

from __future__ import annotations

EXIT_PASS = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_FAIL = 10
EXIT_PRECONDITION = 11


class GateError(Exception):
    """A failure the user can act on: what happened, and the fix.

    `row` names the decision-table row it lands on (`config-invalid`, `history-missing`, `event-mismatch`), or
    None for a usage error or a failure of the gate itself.
    """

    def __init__(self, message: str, *, fix: str = "", row: str | None = None, usage: bool = False) -> None:
        super().__init__(message)
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
        """The process exit code this error ends in."""
        if self.usage:
            return EXIT_USAGE
        return EXIT_PRECONDITION if self.row else EXIT_INTERNAL
