"""Hypothesis' Unicode tables for the sealed workers: produced by a harness-only process, cached, handed in read-only.

Hypothesis keeps the Unicode categories and the code points UTF-8 can encode in `<storage>/unicode_data/`; where that
folder is missing or unwritable (a sealed worker's read-only tree) every process rebuilds them, about 200 MiB of
peak memory and seconds of CPU each. Their content steers what `st.text()` generates, so they are produced by
`python -I -S` on the runner's sys.path (the harness, never code under test), cached per Hypothesis and Python
version under the gate user's cache folder with a sha256 manifest that is checked on every copy (a mismatch
rebuilds), and copied into the runner folder, which the sandbox user can read but not write.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Built at image build time (Dockerfile); only read, and only when root owns it.
SYSTEM_ROOT = Path("/var/cache/evidence-gate/hypothesis-tables")
MANIFEST = "manifest.json"
TABLES = "unicode_data"
PRODUCER = (
    "import sys, json; sys.path[:] = json.loads(sys.argv[1]); "
    "from hypothesis.internal.charmap import charmap, intervals_from_codec; "
    "charmap(); intervals_from_codec('utf-8')"
)


@dataclass(frozen=True)
class Tables:
    """Where the workers' tables came from, for the receipt."""

    source: str  # "cache", "image", "built" (cache not writable) or "none" (workers rebuild them)
    sha256: str | None
    note: str = ""

    def to_json(self) -> dict[str, object]:
        """The receipt's form."""
        return {"source": self.source, "sha256": self.sha256, "note": self.note}


NONE = Tables("none", None)


def user_root() -> Path:
    """`$XDG_CACHE_HOME/evidence-gate/hypothesis-tables`, or the same under `~/.cache`."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evidence-gate" / "hypothesis-tables"


def cache_key(hypothesis_version: str) -> str:
    """One cache entry per Hypothesis version and Python version (the Unicode database comes with Python)."""
    return f"hypothesis-{hypothesis_version}-{platform.python_implementation().lower()}-{platform.python_version()}"


def digest_files(folder: Path) -> dict[str, str]:
    """sha256 of every file below `folder / TABLES`, by path relative to `folder`."""
    out = {}
    for path in sorted((folder / TABLES).rglob("*")):
        if path.is_file() and not path.is_symlink():
            out[path.relative_to(folder).as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def write_manifest(folder: Path) -> dict[str, str]:
    """Record the tables' hashes beside them."""
    files = digest_files(folder)
    (folder / MANIFEST).write_text(json.dumps({"files": files}, sort_keys=True), encoding="utf-8")
    return files


def _summary(files: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def _trusted_entry(entry: Path, system: bool) -> dict[str, str] | None:
    """The manifest of a cache entry only the gate user (or root) could have written, else None."""
    try:
        for path in (entry, entry / MANIFEST):
            st = path.lstat()
            if st.st_mode & 0o022 or st.st_uid not in ({0} if system else {0, os.geteuid()}):
                return None
        files = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))["files"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(files, dict) or not files or not all(isinstance(v, str) for v in files.values()):
        return None
    return {str(k): v for k, v in files.items()}


def _copy_checked(entry: Path, files: dict[str, str], dest: Path) -> bool:
    """Copy the listed tables into `dest`, then hash the copies (what the workers read): True when all match."""
    shutil.rmtree(dest / TABLES, ignore_errors=True)
    for rel in files:
        if ".." in Path(rel).parts or not rel.startswith(f"{TABLES}/"):
            return False
        target = dest / rel
        target.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        try:
            shutil.copyfile(entry / rel, target, follow_symlinks=False)
        except OSError:
            return False
        target.chmod(0o444)
    for folder in [dest / TABLES, *(p for p in (dest / TABLES).rglob("*") if p.is_dir())]:
        folder.chmod(0o755)
    if digest_files(dest) == files:
        return True
    shutil.rmtree(dest / TABLES, ignore_errors=True)
    return False


def produce(sys_path: list[str], folder: Path) -> str:
    """Have a harness-only interpreter write the tables into `folder`; "" or why it failed."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HYPOTHESIS_STORAGE_DIRECTORY": str(folder),
        "LANG": "C.UTF-8",
    }
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-S", "-B", "-c", PRODUCER, json.dumps(sys_path)],
            cwd=folder,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"the table producer could not run: {exc}"
    if proc.returncode != 0 or not digest_files(folder):
        return f"the table producer failed (exit {proc.returncode}): {proc.stderr.strip()[-500:]}"
    return ""


def store(built: Path, entry: Path) -> None:
    """Move a freshly built entry into place atomically, replacing a rejected one."""
    trash = None
    if entry.exists():
        trash = Path(tempfile.mkdtemp(dir=entry.parent, prefix=".rejected-"))
        entry.rename(trash / "entry")
    try:
        built.rename(entry)
    except OSError:
        shutil.rmtree(built, ignore_errors=True)  # another gate stored the same tables first
    if trash is not None:
        shutil.rmtree(trash, ignore_errors=True)


def provide(sys_path: list[str], hypothesis_version: str, dest: Path) -> Tables:
    """Fill `dest` (the workers' Hypothesis storage folder) with checked tables: from the image's or the user's
    cache, else built now and cached, else built for this run only; "none" when even that failed."""
    dest.mkdir(mode=0o755, exist_ok=True)
    dest.chmod(0o755)
    key = cache_key(hypothesis_version)
    for source, entry, system in (("image", SYSTEM_ROOT / key, True), ("cache", user_root() / key, False)):
        files = _trusted_entry(entry, system)
        if files is not None and _copy_checked(entry, files, dest):
            return Tables(source, _summary(files))
    root = user_root()
    note = ""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        built = Path(tempfile.mkdtemp(dir=root, prefix=".building-"))
    except OSError as exc:
        note = f"the cache folder {root} is not writable ({exc.strerror}); built for this run only"
        built = Path(tempfile.mkdtemp(dir=dest.parent, prefix="tables-"))
    failed = produce(sys_path, built)
    if failed:
        shutil.rmtree(built, ignore_errors=True)
        return Tables("none", None, f"{failed}; each worker builds its own tables")
    for extra in built.iterdir():  # Hypothesis' .gitignore and tmp/: not part of the entry
        if extra.name != TABLES:
            shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
    files = write_manifest(built)
    built.chmod(0o755)
    if not _copy_checked(built, files, dest):
        shutil.rmtree(built, ignore_errors=True)
        return Tables("none", None, "the tables just built could not be copied; each worker builds its own")
    if note:
        shutil.rmtree(built, ignore_errors=True)
        return Tables("built", _summary(files), note)
    store(built, root / key)
    return Tables("cache", _summary(files), "built now and cached")
