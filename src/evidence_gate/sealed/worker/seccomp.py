"""A seccomp filter the sealed worker installs on itself: no socket but the result channel, no way back to root.

Installing a filter needs no privilege once no_new_privs is set, and Docker's default profile (what GitHub's runner
applies to a container action) allows `seccomp` and `prctl`, so this holds where no network namespace can be made.
The program is classic BPF written here with `struct`; it checks the architecture first (a foreign one, such as the
32-bit entry on x86_64, or x86_64's x32 numbers, kills the process), then refuses with EPERM (`socket` with
EAFNOSUPPORT, what a kernel without the family says, so that a refusal does not tell the code under test it is
sealed):

- `socket` of every family (`inet` mode: all but AF_INET, AF_INET6 and AF_NETLINK, for `properties.install`'s
  downloads), `socketpair` other than an AF_UNIX stream pair (asyncio's self-pipe, multiprocessing's duplex pipe:
  both ends stay in the worker), and in `none` mode `connect`, `bind`, `listen` and `accept`;
- `io_uring_*` (its requests open and connect sockets without the syscalls above), `pidfd_getfd` (fetching
  another process's socket) and `open_by_handle_at` (opening a file without its path);
- every `set*id` call: a worker keeps the uid its task limit is counted on.

Standard library only: the sealed interpreter imports this before any repository path is on `sys.path`.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from dataclasses import dataclass

PR_SET_NO_NEW_PRIVS = 38
PR_GET_SECCOMP = 21
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_GET_ACTION_AVAIL = 2
SECCOMP_FILTER_FLAG_TSYNC = 1
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
# Classic BPF opcodes: load a word of seccomp_data, compare with a constant, return a constant.
LD_W_ABS = 0x20
JEQ_K = 0x15
JSET_K = 0x45
AND_K = 0x54
RET_K = 0x06
# seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (the low word first on little-endian).
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK = 1, 2, 10, 16
SOCK_STREAM, SOCK_TYPE_MASK = 1, 0xF
X32_BIT = 0x40000000


@dataclass(frozen=True)
class Arch:
    """One architecture's audit id and the syscall numbers the filter names."""

    name: str
    audit: int
    numbers: dict[str, int]


_COMMON = {"io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427, "pidfd_getfd": 438}
ARCHES = {
    "x86_64": Arch(
        "x86_64",
        0xC000003E,
        {
            **_COMMON,
            "seccomp": 317,
            "socket": 41,
            "connect": 42,
            "accept": 43,
            "bind": 49,
            "listen": 50,
            "socketpair": 53,
            "accept4": 288,
            "setuid": 105,
            "setgid": 106,
            "setreuid": 113,
            "setregid": 114,
            "setgroups": 116,
            "setresuid": 117,
            "setresgid": 119,
            "setfsuid": 122,
            "setfsgid": 123,
            "open_by_handle_at": 304,
        },
    ),
    "aarch64": Arch(
        "aarch64",
        0xC00000B7,
        {
            **_COMMON,
            "seccomp": 277,
            "socket": 198,
            "socketpair": 199,
            "bind": 200,
            "listen": 201,
            "accept": 202,
            "connect": 203,
            "accept4": 242,
            "setregid": 143,
            "setgid": 144,
            "setreuid": 145,
            "setuid": 146,
            "setresuid": 147,
            "setresgid": 149,
            "setfsuid": 151,
            "setfsgid": 152,
            "setgroups": 159,
            "open_by_handle_at": 265,
        },
    ),
}
ARCHES["arm64"] = ARCHES["aarch64"]
ARCHES["amd64"] = ARCHES["x86_64"]
ID_CALLS = ("setuid", "setgid", "setreuid", "setregid", "setgroups", "setresuid", "setresgid", "setfsuid", "setfsgid")
ALWAYS_DENIED = ("io_uring_setup", "io_uring_enter", "io_uring_register", "pidfd_getfd", "open_by_handle_at", *ID_CALLS)
SOCKET_CALLS = ("connect", "bind", "listen", "accept", "accept4")
MODES = ("none", "inet")


class Unavailable(OSError):
    """The filter could not be installed; the message names the missing kernel feature."""


def native() -> Arch | None:
    """This machine's architecture, or None when the filter has no syscall table for it."""
    return ARCHES.get(platform.machine().lower())


class _Program:
    """Instructions with symbolic jump targets, resolved into relative offsets at the end."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def op(self, code: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((code, jt, jf, k))

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def assemble(self) -> bytes:
        out = b""
        for index, (code, jt, jf, k) in enumerate(self.code):
            offsets = [self.labels[j] - index - 1 if isinstance(j, str) else j for j in (jt, jf)]
            if not all(0 <= o < 256 for o in offsets):
                raise ValueError("a seccomp jump is out of range")
            out += struct.pack("=HBBI", code, offsets[0], offsets[1], k & 0xFFFFFFFF)
        return out


def program(arch: Arch, mode: str) -> bytes:
    """The filter for `arch`: `mode` "none" (no network at all) or "inet" (TCP/UDP for an install step)."""
    if mode not in MODES:
        raise ValueError(f"unknown seccomp mode {mode!r}")
    n = arch.numbers
    p = _Program()
    p.op(LD_W_ABS, ARCH)
    p.op(JEQ_K, arch.audit, 0, "kill")
    p.op(LD_W_ABS, NR)
    if arch.name == "x86_64":
        p.op(JSET_K, X32_BIT, "kill", 0)
    denied = [*ALWAYS_DENIED, *(SOCKET_CALLS if mode == "none" else ())]
    for name in denied:
        p.op(JEQ_K, n[name], "deny", 0)
    p.op(JEQ_K, n["socket"], "socket", 0)
    p.op(JEQ_K, n["socketpair"], "socketpair", 0)
    p.op(RET_K, RET_ALLOW)
    p.label("socket")
    if mode == "inet":
        p.op(LD_W_ABS, ARG0)
        for family in (AF_INET, AF_INET6, AF_NETLINK):
            p.op(JEQ_K, family, "allow", 0)
    # What a kernel without that address family answers, not a refusal: EPERM would tell the code under test that
    # it runs sealed (a machine without network still has socket()), so the least telling answer is given.
    p.op(RET_K, RET_ERRNO | errno.EAFNOSUPPORT)
    p.label("socketpair")
    p.op(LD_W_ABS, ARG0)
    p.op(JEQ_K, AF_UNIX, 0, "deny")
    p.op(LD_W_ABS, ARG1)
    p.op(AND_K, SOCK_TYPE_MASK)
    p.op(JEQ_K, SOCK_STREAM, "allow", "deny")
    p.label("allow")
    p.op(RET_K, RET_ALLOW)
    p.label("deny")
    p.op(RET_K, RET_ERRNO | errno.EPERM)
    p.label("kill")
    p.op(RET_K, RET_KILL_PROCESS)
    return p.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def missing() -> str | None:
    """Why a filter cannot be installed here (naming the kernel feature), or None when it can."""
    arch = native()
    if arch is None:
        return f"the seccomp filter has no syscall table for {platform.machine()} (only x86_64 and aarch64)"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return "no C library to install a seccomp filter with"
    if int(libc.prctl(PR_GET_SECCOMP, 0, 0, 0, 0)) < 0:
        return "this kernel has no seccomp (CONFIG_SECCOMP)"
    action = ctypes.c_uint32(RET_KILL_PROCESS)
    if int(libc.syscall(arch.numbers["seccomp"], SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(action))) != 0:
        code = ctypes.get_errno()
        if code == errno.EINVAL:
            return "this kernel's seccomp lacks SECCOMP_RET_KILL_PROCESS (Linux 4.14+)"
        return (
            f"seccomp filters are unavailable here ({errno.errorcode.get(code, code)}: CONFIG_SECCOMP_FILTER, "
            "or a container profile that refuses the seccomp syscall)"
        )
    return None


def install(mode: str) -> str:
    """Install the filter on every thread of this process for good; returns the architecture it was built for."""
    why = missing()
    if why:
        raise Unavailable(errno.ENOSYS, why)
    arch = native()
    assert arch is not None
    code = program(arch, mode)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p).value)
    libc = ctypes.CDLL(None, use_errno=True)
    if int(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) != 0:
        raise Unavailable(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed, so no seccomp filter can be installed")
    if (
        int(
            libc.syscall(
                arch.numbers["seccomp"], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, ctypes.byref(prog)
            )
        )
        != 0
    ):
        code_ = ctypes.get_errno()
        raise Unavailable(code_, f"installing the seccomp filter failed: {errno.errorcode.get(code_, code_)}")
    return arch.name
