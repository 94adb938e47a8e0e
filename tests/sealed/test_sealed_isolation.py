"""The sealed workers have no network and read only from an allow-list, in every mode."""

from __future__ import annotations

import os
import secrets
import socket
import threading
from pathlib import Path

import pytest

from evidence_gate.sealed.worker import landlock
from support.property_repo import judge, red_repo
from support.repo_builder import GitRepo

# Production code that is correct only when its escape failed: a run that reaches out gets the red baseline back.
DIAL_OUT = """\
import socket


def _dial():
    try:
        with socket.create_connection(("127.0.0.1", {port}), timeout=2) as conn:
            conn.sendall(b"reached")
        return True
    except OSError:
        return False


REACHED = _dial()


def double(x):
    return x * 2 if not REACHED or x < 1000 else x
"""
READ_CANARIES = """\
def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return {canary!r} in handle.read()
    except OSError:
        return False


REACHED = [p for p in {paths!r} if _read(p)]


def double(x):
    return x * 2 if not REACHED or x < 1000 else x
"""


def test_code_under_test_cannot_reach_a_server_on_loopback(git_repo: GitRepo, tmp_path: Path) -> None:
    """A connection to a server the test runs on 127.0.0.1 never arrives, and the receipt says the network was cut
    (a namespace of its own where one can be made, the seccomp filter in every mode)."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    port = server.getsockname()[1]
    seen: list[bytes] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _addr = server.accept()
            except TimeoutError:
                continue
            with conn:
                seen.append(conn.recv(64) or b"connected")

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        red_repo(git_repo, fresh_seeds=0)
        git_repo.commit("dial out", {"src/calc.py": DIAL_OUT.format(port=port)})
        receipt = judge(git_repo, tmp_path)
    finally:
        stop.set()
        thread.join()
        server.close()
    assert seen == []
    assert receipt["sealed"]["network"] in ({"isolated"} if os.geteuid() == 0 else {"isolated", "filtered"})
    assert receipt["sealed"]["seccomp"] == "sockets-denied", receipt["sealed"]
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


@pytest.mark.skipif(landlock.abi() == 0, reason="needs Landlock")
def test_code_under_test_cannot_read_the_checkouts_git_or_the_gates_folder(git_repo: GitRepo, tmp_path: Path) -> None:
    """Canaries in the checkout's .git/config and in the gate's working folder stay unread by the code under test."""
    canary = f"canary-{secrets.token_hex(8)}"
    git_config = git_repo.path / ".git" / "config"
    git_config.write_text(git_config.read_text(encoding="utf-8") + f"# {canary}\n", encoding="utf-8")
    planted = tmp_path / "canary.txt"
    planted.write_text(canary, encoding="utf-8")
    planted.chmod(0o644)
    paths = [str(git_config), str(planted)]
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("read canaries", {"src/calc.py": READ_CANARIES.format(canary=canary, paths=paths)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["reads"] == "confined", receipt["sealed"]  # in every mode, not only as root
