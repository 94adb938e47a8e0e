"""Allows `python -m evidence_gate`."""

from evidence_gate.cli import entry

entry()
