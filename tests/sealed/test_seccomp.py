"""The seccomp filter a sealed worker installs on itself, run for real in child interpreters."""

from __future__ import annotations

import platform
import signal
import subprocess
import sys
import textwrap

import pytest

from evidence_gate.sealed.worker import seccomp

pytestmark = pytest.mark.skipif(seccomp.missing() is not None, reason=f"no seccomp filter here: {seccomp.missing()}")

PROBES = """\
import asyncio, errno, os, socket
from evidence_gate.sealed.worker import seccomp

def attempt(name, call):
    try:
        call()
        print(name, "allowed")
    except OSError as exc:
        print(name, errno.errorcode.get(exc.errno, exc.errno))

print("arch", seccomp.install({mode!r}))
for family in ("AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_PACKET"):
    attempt(f"socket-{{family}}", lambda f=family: socket.socket(getattr(socket, f), socket.SOCK_DGRAM).close())
attempt("socketpair-stream", lambda: [s.close() for s in socket.socketpair()])
attempt("socketpair-dgram", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM))
attempt("asyncio", lambda: asyncio.run(asyncio.sleep(0)))
attempt("setresuid", lambda: os.setresuid(-1, -1, -1))
attempt("setgroups", lambda: os.setgroups([]))
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def raw(number, *args):
    if libc.syscall(number, *args) != -1:
        raise AssertionError("allowed")
    raise OSError(ctypes.get_errno(), "refused")
numbers = seccomp.native().numbers
params = ctypes.create_string_buffer(120)
attempt("io_uring_setup", lambda: raw(numbers["io_uring_setup"], 4, params))
attempt("pidfd_getfd", lambda: raw(numbers["pidfd_getfd"], 0, 0, 0))
a, b = socket.socketpair()
attempt("connect-pair", lambda: a.connect("/nonexistent"))
attempt("bind-pair", lambda: a.bind("\\0abstract-name"))
"""


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)


def _outcomes(mode: str) -> dict[str, str]:
    proc = _run(PROBES.format(mode=mode))
    assert proc.returncode == 0, proc.stderr
    return dict(line.split(" ", 1) for line in proc.stdout.splitlines())


def test_no_network_mode_leaves_only_unix_stream_pairs() -> None:
    """Test workers: every socket family refused, connect/bind refused, a stream socketpair and asyncio still work."""
    got = _outcomes("none")
    assert got["arch"] == seccomp.native().name  # type: ignore[union-attr]
    for family in ("AF_INET", "AF_INET6", "AF_UNIX", "AF_NETLINK", "AF_PACKET"):
        # Not EPERM: a refusal would tell the code under test that it runs sealed (issue 17, item 3).
        assert got[f"socket-{family}"] == "EAFNOSUPPORT", got
    assert (got["socketpair-stream"], got["asyncio"]) == ("allowed", "allowed"), got
    assert got["socketpair-dgram"] == "EPERM", got  # a datagram pair could sendto() a named socket on the host
    assert (got["connect-pair"], got["bind-pair"]) == ("EPERM", "EPERM"), got
    assert (got["setresuid"], got["setgroups"]) == ("EPERM", "EPERM"), got
    assert (got["io_uring_setup"], got["pidfd_getfd"]) == ("EPERM", "EPERM"), got  # not EFAULT/EBADF: never reached


def test_install_mode_keeps_tcp_and_udp_but_no_unix_sockets() -> None:
    """`properties.install` reaches package indexes (inet, netlink for getaddrinfo) but never a UNIX socket."""
    got = _outcomes("inet")
    assert (got["socket-AF_INET"], got["socket-AF_INET6"], got["socket-AF_NETLINK"]) == ("allowed",) * 3, got
    assert (got["socket-AF_UNIX"], got["socket-AF_PACKET"]) == ("EAFNOSUPPORT", "EAFNOSUPPORT"), got
    assert got["setresuid"] == "EPERM", got


# Machine code that enters the kernel through another ABI: the 32-bit `int 0x80` gate (getpid is 20 there) and
# x86_64's x32 numbering (getpid with bit 30 set). A filter that checked only syscall numbers would miss both.
FOREIGN = """\
import ctypes, mmap
from evidence_gate.sealed.worker import seccomp

CODE = {{"int80": bytes.fromhex("b814000000cd80c3"), "x32": bytes.fromhex("b8270000400f05c3")}}[{which!r}]
if {install!r}:
    seccomp.install("none")
page = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
page.write(CODE)
address = ctypes.addressof(ctypes.c_char.from_buffer(page))
print("returned", ctypes.CFUNCTYPE(ctypes.c_long)(address)())
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86_64's foreign entry points")
@pytest.mark.parametrize("which", ["int80", "x32"])
def test_a_foreign_syscall_abi_kills_the_process(which: str) -> None:
    """Entering the kernel as i386 or x32 kills the worker outright (SIGSYS) instead of slipping past the table."""
    control = _run(FOREIGN.format(which=which, install=False))
    if control.returncode != 0 or "returned" not in control.stdout:
        pytest.skip(f"this kernel does not run {which} system calls at all (rc {control.returncode})")
    filtered = _run(FOREIGN.format(which=which, install=True))
    assert filtered.returncode == -signal.SIGSYS, (filtered.returncode, filtered.stdout, filtered.stderr)
    assert "returned" not in filtered.stdout


def test_the_program_checks_the_architecture_before_anything_else() -> None:
    """Each table's program starts by loading the arch word and kills on a mismatch; jumps resolve in range."""
    for arch in {a.name: a for a in seccomp.ARCHES.values()}.values():
        for mode in seccomp.MODES:
            code = seccomp.program(arch, mode)
            assert len(code) % 8 == 0
            first = [code[i : i + 8] for i in range(0, 16, 8)]
            assert first[0][:2] == seccomp.LD_W_ABS.to_bytes(2, "little")
            assert int.from_bytes(first[1][4:], "little") == arch.audit
            assert code[-4:] == seccomp.RET_KILL_PROCESS.to_bytes(4, "little")
    with pytest.raises(ValueError, match="unknown seccomp mode"):
        seccomp.program(seccomp.ARCHES["x86_64"], "everything")


def test_a_filter_outlives_exec_and_binds_children() -> None:
    """A shell the worker execs (the install step) and its children keep the filter."""
    code = textwrap.dedent("""\
        import os
        from evidence_gate.sealed.worker import seccomp
        seccomp.install("none")
        os.execv(sys.executable, [sys.executable, "-c", "import socket; socket.socket()"])
    """)
    proc = _run("import sys\n" + code)
    assert proc.returncode != 0
    assert "Address family not supported" in proc.stderr, proc.stderr
