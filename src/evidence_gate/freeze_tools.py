"""`evidence-gate freeze hash|propose`. STUB: being written."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import date


def main(args: argparse.Namespace, today: Callable[[], date]) -> int:
    """Dispatch the freeze helpers."""
    raise NotImplementedError
