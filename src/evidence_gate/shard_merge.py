"""`evidence-gate merge`. STUB: being written."""

from __future__ import annotations

from pathlib import Path


def main(receipts: list[Path], out: Path, fmt: str) -> int:
    """Close seed ledgers over shard receipts."""
    raise NotImplementedError
