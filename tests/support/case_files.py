"""Case folders whose files carry an extra `.txt` suffix, so that this repository's own pytest and ruff never load
them; read back by repository path, failing loudly on any file the suffix rule would silently drop."""

from __future__ import annotations

from pathlib import Path

SUFFIX = ".txt"


def txt_files(folder: Path) -> dict[str, str | bytes | None]:
    """Every file under `folder` by its repository path (suffix stripped); a file without the suffix, a bare `.txt`
    or a folder with no file at all is an error, never a patch with a file missing."""
    found = sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    strays = [str(p.relative_to(folder)) for p in found if not p.name.endswith(SUFFIX) or p.name == SUFFIX]
    assert not strays, f"{folder}: these files lack the {SUFFIX} suffix and would be dropped: {strays}; rename them"
    assert found, f"{folder}: no files, so the case would commit nothing and test nothing"
    return {str(p.relative_to(folder))[: -len(SUFFIX)]: p.read_bytes() for p in found}
