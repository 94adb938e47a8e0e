"""The container engine for tests and benchmarks: docker where a daemon answers, else podman with a local base.

No registry serves base images on the project's CI machines, so for podman the base `debian:trixie-slim` is built
once with debootstrap (see ../shared/CONTAINERS.md), kept as a tarball in the user's cache folder, and imported;
podman's own layer cache then makes a rebuild after a source change take seconds.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCAL_BASE = "docker.io/library/debian:trixie-slim"
# Overridable so that several checkouts on one machine (parallel worktrees) do not rebuild each other's image.
IMAGE = os.environ.get("EVIDENCE_GATE_TEST_IMAGE", "localhost/evidence-gate:test")
# What CONTAINERS.md prescribes for root podman on these machines; used only when no system file exists.
PODMAN_CONF = """[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
"""


class EngineUnavailable(RuntimeError):
    """No container engine can build and run images here."""


@dataclass(frozen=True)
class Engine:
    """A container CLI and the environment it runs with."""

    name: str  # "docker" or "podman"
    env: dict[str, str] = field(default_factory=dict)

    def run(
        self, *args: str, input: bytes | None = None, timeout: float = 600, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        """Run the engine's CLI; raise with its stderr on failure when `check`."""
        proc = subprocess.run(
            [self.name, *args],
            input=input,
            capture_output=True,
            timeout=timeout,
            env={**os.environ, **self.env},
            check=False,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{self.name} {' '.join(args[:3])} ... failed ({proc.returncode}): "
                f"{proc.stderr.decode(errors='replace')[-3000:]}"
            )
        return proc

    def image_exists(self, ref: str) -> bool:
        """Whether the image is in local storage."""
        return self.run("image", "inspect", ref, check=False).returncode == 0


def cache_dir() -> Path:
    """Where the base rootfs tarball and the podman config are kept between runs."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    path = base / "evidence-gate"
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def locked(name: str) -> Iterator[None]:
    """An exclusive lock, so concurrent test sessions do not build the same image at once."""
    with (cache_dir() / f"{name}.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _answers(argv: Sequence[str], env: dict[str, str] | None = None) -> bool:
    try:
        proc = subprocess.run(
            list(argv), capture_output=True, timeout=60, env={**os.environ, **(env or {})}, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def _podman_env() -> dict[str, str]:
    if os.environ.get("CONTAINERS_CONF") or Path("/etc/containers/containers.conf").exists():
        return {}
    conf = cache_dir() / "containers.conf"
    if not conf.exists() or conf.read_text(encoding="utf-8") != PODMAN_CONF:
        conf.write_text(PODMAN_CONF, encoding="utf-8")
    return {"CONTAINERS_CONF": str(conf)}


def find_engine() -> Engine | None:
    """docker when its daemon answers, else podman when installed; None when neither exists."""
    if shutil.which("docker") and _answers(["docker", "info"]):
        return Engine("docker")
    if shutil.which("podman"):
        return Engine("podman", _podman_env())
    return None


def _mirror() -> str:
    """The Debian mirror this machine's apt uses (first `URIs:` line), else deb.debian.org."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for line in sources.read_text(encoding="utf-8").splitlines():
            if line.startswith("URIs:") and line.split()[1:]:
                return line.split()[1]
    return "http://deb.debian.org/debian"


def ensure_base(engine: Engine) -> str | None:
    """The BASE build argument to use: None (the Dockerfile's pinned digest) for docker, a local image for podman."""
    if engine.name == "docker":
        return None
    with locked("base"):
        if engine.image_exists(LOCAL_BASE):
            return LOCAL_BASE
        tarball = cache_dir() / "trixie-minbase.tar"
        if not tarball.exists():
            if not shutil.which("debootstrap"):
                raise EngineUnavailable("debootstrap is missing; ./dev test installs it with podman and runc")
            with tempfile.TemporaryDirectory(prefix="evidence-gate-rootfs-") as tmp:
                rootfs = Path(tmp) / "rootfs"
                proc = subprocess.run(
                    ["debootstrap", "--variant=minbase", "trixie", str(rootfs), _mirror()],
                    capture_output=True,
                    timeout=900,
                    check=False,
                )
                if proc.returncode != 0:
                    raise EngineUnavailable(
                        f"debootstrap failed: {proc.stdout.decode(errors='replace')[-2000:]}"
                        f"{proc.stderr.decode(errors='replace')[-2000:]}"
                    )
                partial = tarball.with_suffix(".partial")
                subprocess.run(["tar", "-C", str(rootfs), "-cf", str(partial), "."], check=True, timeout=300)
                partial.replace(tarball)
        engine.run("import", str(tarball), LOCAL_BASE, timeout=300)
    return LOCAL_BASE


def build_image(engine: Engine, tag: str = IMAGE, context: Path = ROOT, *, no_cache: bool = False) -> float:
    """Build the action's image from the Dockerfile; return the seconds the build took."""
    base = ensure_base(engine)
    args = ["build", "-t", tag, *(["--no-cache"] if no_cache else [])]
    if engine.name == "podman":
        # The base exists only locally; apt in the build reaches the mirror like the host does (CONTAINERS.md).
        args += ["--pull=never", "--network=host"]
    if base is not None:
        args += ["--build-arg", f"BASE={base}"]
    with locked("build"):
        previous = _image_id(engine, tag)
        start = time.perf_counter()
        engine.run(*args, str(context), timeout=1800)
        seconds = time.perf_counter() - start
        if previous and previous != _image_id(engine, tag):
            engine.run("rmi", previous, check=False)  # the replaced build; keeps repeated runs from piling up
        return seconds


def _image_id(engine: Engine, ref: str) -> str | None:
    proc = engine.run("image", "inspect", "--format", "{{.Id}}", ref, check=False)
    return proc.stdout.decode().strip() or None if proc.returncode == 0 else None


def image_size(engine: Engine, ref: str) -> int:
    """The image's size in bytes as the engine reports it."""
    return int(engine.run("image", "inspect", "--format", "{{.Size}}", ref).stdout.decode().strip())
