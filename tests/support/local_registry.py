"""A container registry on 127.0.0.1 (Debian's `docker-registry`) and image stores that start empty, for the tests and
benchmarks of the release's prebuilt image: what a fresh runner pulls, without the internet."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from support.container_engine import Engine


class RegistryUnavailable(RuntimeError):
    """docker-registry is not installed or did not start."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def local_registry(root: Path) -> Iterator[str]:
    """Debian's docker-registry serving plain HTTP on 127.0.0.1 from `root`; yields `127.0.0.1:PORT`."""
    binary = shutil.which("docker-registry")
    if binary is None:
        raise RegistryUnavailable(
            "docker-registry is not installed (Debian package docker-registry); ./dev test installs it with podman"
        )
    port = _free_port()
    config = root / "registry.yml"
    config.write_text(
        f"version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n"
        f"http: {{addr: 127.0.0.1:{port}}}\n",
        encoding="utf-8",
    )
    log = (root / "registry.log").open("wb")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # 127.0.0.1, never via a proxy
        while True:
            try:
                with direct.open(f"http://127.0.0.1:{port}/v2/", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except (urllib.error.URLError, OSError) as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RegistryUnavailable(f"docker-registry did not start: {exc}") from exc
                time.sleep(0.2)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@contextmanager
def empty_store(engine: Engine, root: Path) -> Iterator[Engine]:
    """The engine on an image store of its own, empty like a fresh runner's; removed afterwards."""
    driver = engine.run("info", "--format", "{{.Store.GraphDriverName}}").stdout.decode().strip() or "overlay"
    root.mkdir(parents=True)
    conf = root / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "{driver}"\ngraphroot = "{root}/graph"\nrunroot = "{root}/run"\n', encoding="utf-8"
    )
    fresh = Engine(engine.name, {**engine.env, "CONTAINERS_STORAGE_CONF": str(conf)})
    try:
        yield fresh
    finally:
        fresh.run("rmi", "--all", "--force", check=False)
        shutil.rmtree(root, ignore_errors=True)
