"""The package's own data files (`data/`), read as the plain files a pip install leaves beside the modules."""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


def read_text(name: str) -> str:
    """The text of `data/NAME` (`importlib.resources` would import zipfile for this on every run, ≈ 3 ms)."""
    return (DATA / name).read_text("utf-8")
