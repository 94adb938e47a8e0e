"""Landlock self-confinement for the sealed worker (Linux 5.13+): no writes outside its own folders, no signals,
ptrace or /proc peeking at processes outside its domain (the gate, other workers).

It needs no privilege, so it holds also when the gate cannot drop root. Standard library only: the sealed
interpreter imports this before any repository path is on `sys.path`.
"""

from __future__ import annotations

import ctypes
import os
import stat
import struct

SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same numbers on every architecture
CREATE_RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
PR_SET_NO_NEW_PRIVS = 38
# Rights that only look: execute, read a file, list a folder (handled only when reads are confined too).
_READ_RIGHTS = (1 << 0) | (1 << 2) | (1 << 3)
_READ_FILE_RIGHTS = (1 << 0) | (1 << 2)
# Filesystem rights that change something: write, truncate, create, remove, rename/link (REFER).
_WRITE_FILE = 1 << 1
_TRUNCATE = 1 << 14
_DIR_RIGHTS = sum(1 << b for b in (4, 5, 6, 7, 8, 9, 10, 11, 12))
_REFER = 1 << 13
# ABI 4: TCP bind and connect are handled rights too; with no rule granting them, both are refused.
_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
# ABI 6: signals and abstract unix sockets stay inside the domain.
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1


def abi() -> int:
    """The kernel's Landlock ABI version, 0 when unavailable (old kernel, disabled, or filtered by seccomp)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = int(libc.syscall(SYS_CREATE_RULESET, None, 0, CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(version, 0)


def confine(writable: list[str], readable: list[str] | None = None, *, network: bool = True) -> int:
    """Allow writes only beneath `writable` (folders or files) from now on, for this process and its children.

    With `readable`, reads and execution are confined too: allowed only beneath `readable` and `writable`.
    Without `network`, TCP bind and connect are refused where the kernel handles them (ABI 4+).
    Returns the ABI used, or 0 when Landlock is unavailable (then nothing changed).
    """
    version = abi()
    if version == 0:
        return 0
    libc = ctypes.CDLL(None, use_errno=True)
    reads = _READ_RIGHTS if readable is not None else 0
    file_rights = _WRITE_FILE | (_TRUNCATE if version >= 3 else 0) | (_READ_FILE_RIGHTS if reads else 0)
    handled = file_rights | _DIR_RIGHTS | (_REFER if version >= 2 else 0) | reads
    net = _NET_BIND_TCP | _NET_CONNECT_TCP if not network and version >= 4 else 0
    if version >= 6:
        attr = struct.pack("=QQQ", handled, net, _SCOPE_SIGNAL | _SCOPE_ABSTRACT_UNIX_SOCKET)
    elif version >= 4:
        attr = struct.pack("=QQ", handled, net)
    else:
        attr = struct.pack("=Q", handled)
    ruleset = int(libc.syscall(SYS_CREATE_RULESET, attr, len(attr), 0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    try:
        for path, dir_rights, plain_rights in [
            *((p, handled, file_rights) for p in writable),
            *((p, reads, _READ_FILE_RIGHTS) for p in readable or []),
        ]:
            _add_rule(libc, ruleset, path, dir_rights, plain_rights)
        if int(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) != 0:
            raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
        if int(libc.syscall(SYS_RESTRICT_SELF, ruleset, 0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return version


def _add_rule(libc: ctypes.CDLL, ruleset: int, path: str, dir_rights: int, plain_rights: int) -> None:
    """Grant `dir_rights` beneath a folder, or `plain_rights` on anything else; a missing path is skipped."""
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    try:
        rights = dir_rights if stat.S_ISDIR(os.fstat(fd).st_mode) else plain_rights
        rule = struct.pack("=Qi", rights, fd)
        if int(libc.syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, rule, 0)) != 0:
            raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
    finally:
        os.close(fd)
