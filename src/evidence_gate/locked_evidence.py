"""Locked-evidence lane (`evidence-path-edited`). STUB: being written."""

from __future__ import annotations

from evidence_gate.config import Config
from evidence_gate.git import DiffEntry, Repo
from evidence_gate.model import LaneResult
from evidence_gate.score_properties import PropertySpec


def check(repo: Repo, baseline: str, head: str, config: Config, specs: tuple[PropertySpec, ...],
          diff: list[DiffEntry]) -> LaneResult:
    """Every touch of locked evidence between baseline and head; receipt carries `files` (the locked set)."""
    return LaneResult(receipt={"files": sorted(s.file for s in specs)})
