"""The lanes that run code: sealed property runs, freeze replays, digest checks. STUB: being written."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

from evidence_gate.config import Config
from evidence_gate.git import Repo
from evidence_gate.model import FreezeEntry, LaneResult, Violation
from evidence_gate.score_properties import PropertySpec


@dataclass(frozen=True)
class DynamicRequest:
    """What the sealed run needs; every path and object comes from git, never the working tree."""

    repo: Repo
    baseline: str
    head: str
    config: Config
    specs: tuple[PropertySpec, ...]
    locked_paths: frozenset[str]
    removed: tuple[FreezeEntry, ...]
    expired: tuple[FreezeEntry, ...]
    active: tuple[FreezeEntry, ...]
    patch_id: str
    today: date
    workdir: Path
    shard: tuple[int, int] | None = None


def run(req: DynamicRequest) -> LaneResult:
    """Fail closed until the sealed runner exists."""
    return LaneResult((Violation("run-integrity", "the sealed property runner is not available in this build"),))
