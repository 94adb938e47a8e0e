"""`evidence-gate action`. STUB: being written."""

from __future__ import annotations

from collections.abc import Mapping


def main(env: Mapping[str, str]) -> int:
    """Run as the GitHub Action."""
    raise NotImplementedError
