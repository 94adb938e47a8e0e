"""Fixture lane: tree ids of the fixture folder and the digest-record format. STUB: being written."""

from __future__ import annotations

from evidence_gate.config import Config
from evidence_gate.git import Repo
from evidence_gate.model import LaneResult


def check(repo: Repo, baseline: str, head: str, config: Config) -> LaneResult:
    """Fixture tree ids of baseline and head, and the baseline's digest records."""
    return LaneResult(receipt={"tree": repo.tree_oid(baseline, config.fixtures.dir), "digests": []})
