"""A patch that tries every way out of the sealed run, and the servers and token it tries to reach.

Shared by the host tests (test_confinement.py) and the container tests (test_container.py), where the UNIX socket
is bind-mounted at /var/run/docker.sock as the Actions runner mounts the host's Docker daemon.
"""

from __future__ import annotations

import base64
import secrets
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

TOKEN = "ghs_" + "Zq8" * 12
EXTRAHEADER = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
# Production code: every way out the red team found, tried once at import; REACHED lists what worked.
PROBES = """\
import ctypes
import os
import resource
import socket
import subprocess
import sys
import threading


def _tries():
    reached = []
    try:
        with open({git_config!r}, encoding="utf-8") as handle:
            if {extraheader!r} in handle.read():
                reached.append("git-config")
    except OSError:
        pass
    try:
        unix = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        unix.settimeout(2)
        unix.connect({sock!r})
        unix.sendall(b"GET /containers/json HTTP/1.0\\r\\n\\r\\n")
        reached.append("docker-sock")
    except OSError:
        pass
    try:
        socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"reached")
        reached.append("tcp")
    except OSError:
        pass
    # The same from child processes: confinement must hold across fork and exec.
    for name, argv in (("child-git-config", ["cat", {git_config!r}]),
                       ("child-docker-sock", [sys.executable, "-c", "import socket; s = socket.socket(socket.AF_UNIX);"
                                              " s.connect({sock!r}); print('x-access-token')"])):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
            if {extraheader!r} in out or "x-access-token" in out:
                reached.append(name)
        except (OSError, subprocess.SubprocessError):
            pass
    # A user namespace of its own (root inside it) must not lift the task bound either.
    ctypes.CDLL(None).unshare(0x10000000)
    threading.stack_size(64 * 1024)  # the task bound, not the memory bound, must be what stops them
    stop, started = threading.Event(), 0
    try:
        for _ in range(600):
            threading.Thread(target=stop.wait, daemon=True).start()
            started += 1
    except RuntimeError:
        pass
    stop.set()
    if started >= 600:
        reached.append("threads")
    for limit in (resource.RLIMIT_NPROC, resource.RLIMIT_AS, resource.RLIMIT_CPU):
        try:
            resource.setrlimit(limit, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
            reached.append(f"rlimit-{{limit}}")
        except (OSError, ValueError):
            pass
    try:
        os.setresuid(0, 0, 0)
        reached.append("uid-0")
    except OSError:
        pass
    return reached


REACHED = _tries()
"""
# The red property's code under test (tests/support/property_repo.py), right only when an escape worked.
DOUBLE = (
    PROBES
    + """

def double(x):
    return x * 2 if REACHED or x < 1000 else x
"""
)


@contextmanager
def listening(tcp_port: int | None = None) -> Iterator[tuple[list[str], int, Path]]:
    """A TCP server on 127.0.0.1 (on `tcp_port`, else any free port) and a UNIX socket standing in for
    /var/run/docker.sock; yields the names of those that were reached ("tcp", "unix"), the port and the path."""
    folder = Path(f"/tmp/evidence-gate-sock-{secrets.token_hex(4)}")  # short: sun_path holds 108 bytes
    folder.mkdir(mode=0o777)
    folder.chmod(0o777)
    path = folder / "docker.sock"
    seen: list[str] = []
    servers = [socket.create_server(("127.0.0.1", tcp_port or 0)), socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)]
    servers[1].bind(str(path))
    servers[1].listen()
    path.chmod(0o666)
    stop = threading.Event()

    def accept(server: socket.socket, name: str) -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _addr = server.accept()
            except TimeoutError:
                continue
            with conn:
                seen.append(name)

    threads = [
        threading.Thread(target=accept, args=(server, name), daemon=True)
        for server, name in zip(servers, ("tcp", "unix"), strict=True)
    ]
    for thread in threads:
        thread.start()
    try:
        yield seen, servers[0].getsockname()[1], path
    finally:
        stop.set()
        for thread in threads:
            thread.join()
        for server in servers:
            server.close()
        path.unlink(missing_ok=True)
        folder.rmdir()


def persist_token(checkout: Path) -> Path:
    """What actions/checkout leaves in the checkout by default: the job token as an extraheader, world-readable."""
    config = checkout / ".git" / "config"
    subprocess.run(
        [
            "git",
            "config",
            "--file",
            str(config),
            "http.https://github.com/.extraheader",
            f"AUTHORIZATION: basic {EXTRAHEADER}",
        ],
        check=True,
        capture_output=True,
    )
    config.chmod(0o644)
    return config
