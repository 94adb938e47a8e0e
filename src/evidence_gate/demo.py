"""`evidence-gate demo`. STUB: being written."""

from __future__ import annotations

from pathlib import Path


def main(workdir: Path | None, run: bool) -> int:
    """Build the example repository, apply each patch, run the gate, print the table."""
    raise NotImplementedError
