"""What the sealed worker applies to itself before any repository code runs, in every mode (root, `nobody`, a
non-root gate; on a host or in a container under Docker's default seccomp profile), and what it reports applied.

1. Tasks: RLIMIT_NPROC binds every uid but the init namespace's root (and holders of CAP_SYS_RESOURCE or
   CAP_SYS_ADMIN *in the initial user namespace*: the kernel's capable() asks there, so the full set a worker holds
   inside a user namespace of its own exempts nothing), so a worker that would stay root (the gate's user cannot be dropped to `nobody`) moves to an
   unprivileged uid of its own (derived from its pid) and keeps only CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH, as
   ambient capabilities, so that it and its children still use the root-owned interpreter; Landlock decides where.
   Without CAP_SYS_RESOURCE no hard limit can be raised again, and the seccomp filter refuses every `set*id`.
   Whatever the mode, the bound is then measured: a child at a soft limit of 0 must fail to fork (EAGAIN).
2. Landlock: writes only to the worker's folders, reads only from an allow-list, no TCP bind/connect (ABI 4+), no
   signals or abstract unix sockets outside the domain (ABI 6+).
3. seccomp: no socket but the result channel (see `seccomp`).

Any step that cannot be applied raises `Unconfined` naming the missing kernel feature or privilege; the worker then
reports it and runs nothing. Standard library only: imported before any repository path is on `sys.path`.
"""

from __future__ import annotations

import ctypes
import errno
import os
import resource
import struct
from typing import Any

from . import landlock, seccomp
from .protocol import Mode

PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_CAPBSET_DROP = 24
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_RAISE = 2
CAPABILITY_V3 = 0x20080522
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
# CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: what a worker that would stay root keeps to use the root-owned
# interpreter and folders; Landlock decides where. Not CAP_KILL, CAP_SYS_RESOURCE, CAP_SETUID or any other.
KEPT_CAPS = (1, 2)
# The uid such a worker's tasks are counted on: one of its own (pids stay below 2**22), else `nobody`'s.
TASK_UID_BASE = 0x40000000
NOBODY = 65534
EXEMPTING = (1 << 21) | (1 << 24)  # CAP_SYS_ADMIN, CAP_SYS_RESOURCE: the kernel skips RLIMIT_NPROC for either
PROC_USER_INIT_INO = 0xEFFFFFFD  # the inode of /proc/self/ns/user in the initial user namespace (linux/proc_ns.h)
LANDLOCK_HINT = (
    "Linux 5.13+ with CONFIG_SECURITY_LANDLOCK=y and `landlock` in the kernel's lsm= list "
    "(GitHub's hosted Ubuntu runners have it)"
)


class Unconfined(Exception):
    """A bound could not be applied; the message names what this machine lacks."""


def missing() -> str | None:
    """What this kernel lacks for a confined worker (checked by the gate before it starts any), or None."""
    if landlock.abi() == 0:
        return f"this kernel has no Landlock ({LANDLOCK_HINT}), so the sealed run cannot confine reads and writes"
    why = seccomp.missing()
    if why:
        return f"{why}, so the sealed run cannot refuse sockets"
    return None


def apply(mode: str, writable: list[str], readable: list[str], nproc: int) -> dict[str, Any]:
    """Bound tasks, then Landlock, then seccomp, for good; what was applied. `install` mode keeps TCP and UDP."""
    keeps_network = mode == Mode.INSTALL
    tasks = bound_tasks(nproc)
    version = landlock.abi()
    if version == 0:
        raise Unconfined(f"this kernel has no Landlock ({LANDLOCK_HINT}); the sealed worker ran nothing")
    try:
        landlock.confine(writable, readable, network=keeps_network)
    except OSError as exc:
        why = (
            "the gate already runs inside 16 Landlock layers, the kernel's limit"
            if exc.errno == errno.E2BIG
            else str(exc)
        )
        raise Unconfined(f"Landlock ABI {version} could not be applied ({why}); the sealed worker ran nothing") from exc
    filter_mode = "inet" if keeps_network else "none"
    try:
        arch = seccomp.install(filter_mode)
    except seccomp.Unavailable as exc:
        raise Unconfined(f"{exc.strerror}; the sealed worker ran nothing") from exc
    return {
        "landlock": version,
        "reads": True,
        "landlock_network": not keeps_network and version >= 4,
        "scoped": version >= 6,
        "seccomp": filter_mode,
        "arch": arch,
        "tasks": tasks,
    }


def bound_tasks(nproc: int) -> str:
    """Make RLIMIT_NPROC (already lowered to `nproc`) bind this process, and measure that it does; how it binds."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    if hard == resource.RLIM_INFINITY or hard > nproc or soft > nproc:
        raise Unconfined(f"RLIMIT_NPROC could not be lowered to {nproc}; the sealed worker ran nothing")
    if os.getuid() != 0:
        # Only capabilities in the initial user namespace exempt a task; inside one of its own it holds them all.
        if in_initial_user_namespace() and _capabilities("CapEff") & EXEMPTING:
            raise Unconfined(
                "the sealed worker holds CAP_SYS_RESOURCE or CAP_SYS_ADMIN, which exempt it from "
                "RLIMIT_NPROC; run the gate without them. The sealed worker ran nothing"
            )
        how = f"RLIMIT_NPROC {nproc} on uid {os.getuid()}"
    else:
        uid = _unprivileged_uid()
        how = f"RLIMIT_NPROC {nproc} on uid {uid} (instead of root; only the file capabilities CAP_DAC_* kept)"
    why = _limit_binds()
    if why:
        raise Unconfined(f"RLIMIT_NPROC does not bind the sealed worker ({why}); the sealed worker ran nothing")
    return how


def in_initial_user_namespace() -> bool:
    """Whether this process is in the initial user namespace; True when /proc cannot tell (the stricter reading)."""
    try:
        return os.stat("/proc/self/ns/user").st_ino == PROC_USER_INIT_INO  # noqa: PTH116 - minimal imports
    except OSError:
        return True


def _limit_binds() -> str:
    """Measure the task bound in a child (so nothing here changes): "" when it binds, else what was seen."""
    seen = {
        1: "a fork at a soft limit of 0 succeeded",
        2: "a fork at a soft limit of 0 failed otherwise than with EAGAIN",
        3: "no fork succeeded at the limit restored either",
    }
    try:
        pid = os.fork()
    except OSError as exc:
        return f"the probe could not fork: {exc.strerror}"
    if pid == 0:  # pragma: no cover - the child answers through its exit status only
        code = 4
        try:
            code = _probe()
        finally:
            os._exit(code)
    _pid, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    return "" if code == 0 else seen.get(code, f"the probe ended with status {code}")


def _probe() -> int:
    """0 when a fork fails with EAGAIN at a soft RLIMIT_NPROC of 0 and works at the limit restored (so the failure
    was the limit's); else 1, 2 or 3 as `_limit_binds` names them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NPROC)
    resource.setrlimit(resource.RLIMIT_NPROC, (0, hard))
    failed = _try_fork()
    if failed is None:
        return 1
    if failed != errno.EAGAIN:
        return 2
    resource.setrlimit(resource.RLIMIT_NPROC, (soft, hard))
    return 0 if _try_fork() is None else 3


def _try_fork() -> int | None:
    """Fork a child that exits at once and reap it; None when the fork worked, else its errno."""
    try:
        pid = os.fork()
    except OSError as exc:
        return exc.errno
    if pid == 0:  # pragma: no cover
        os._exit(0)
    os.waitpid(pid, 0)
    return None


def _unprivileged_uid() -> int:
    """Leave uid 0 for an unprivileged uid, keeping only the capabilities that read and write files (Landlock
    still bounds both), handed on across exec as ambient capabilities so the worker's children run the interpreter
    too; every other capability, and the means to get one back, goes."""
    arch = seccomp.native()
    if arch is None:
        raise Unconfined(f"{seccomp.missing()}; the sealed worker ran nothing")
    libc = ctypes.CDLL(None, use_errno=True)
    permitted = _capabilities("CapPrm")
    last = int(_read("/proc/sys/kernel/cap_last_cap") or "40")
    for cap in range(last + 1):
        if cap not in KEPT_CAPS and int(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)) != 0:
            raise Unconfined(
                f"a worker that would stay root could not drop capability {cap} from its bounding set "
                "(it needs CAP_SETPCAP); the sealed worker ran nothing"
            )
    libc.prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0)
    chosen = None
    for uid in (TASK_UID_BASE + os.getpid(), NOBODY):
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
        except OSError:
            continue
        chosen = uid
        break
    if chosen is None:
        raise Unconfined(
            "a worker that would stay root could not leave uid 0 (CAP_SETUID, or a user namespace "
            "mapping no spare uid), so RLIMIT_NPROC would not bind it; the sealed worker ran nothing"
        )
    # Docker's default set has CAP_DAC_OVERRIDE but not CAP_DAC_READ_SEARCH: keep what was there to keep.
    kept = sum(1 << cap for cap in KEPT_CAPS) & permitted
    header = ctypes.create_string_buffer(struct.pack("=Ii", CAPABILITY_V3, 0), 8)
    data = ctypes.create_string_buffer(struct.pack("=IIIIII", kept, kept, kept, 0, 0, 0), 24)
    if int(libc.syscall(SYS_CAPSET[arch.name], header, data)) != 0:
        raise Unconfined("a worker that would stay root could not set its capabilities; the sealed worker ran nothing")
    for cap in KEPT_CAPS:
        if kept & (1 << cap):
            libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0)
    libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)  # the uid change made it non-dumpable: /proc/self would be root's
    held = {name: _capabilities(name) for name in ("CapEff", "CapPrm", "CapAmb")}
    if 0 in os.getresuid() or any(value != kept for value in held.values()) or _capabilities("CapBnd") & ~kept:
        raise Unconfined(
            f"a worker that would stay root kept more than it should ({held}); the sealed worker ran nothing"
        )
    return chosen


def _capabilities(name: str) -> int:
    """One capability set of this process from /proc/self/status (`CapEff`, `CapPrm`, ...); all bits when unread."""
    line = next((x for x in _read("/proc/self/status").splitlines() if x.startswith(f"{name}:")), "")
    return int(line.split()[1], 16) if len(line.split()) == 2 else -1


def _read(path: str) -> str:
    try:
        with open(path, encoding="ascii") as handle:  # noqa: PTH123 - minimal imports
            return handle.read().strip()
    except OSError:
        return ""


def shortfall(event: dict[str, Any] | None, *, install: bool) -> str | None:
    """What a worker's first `confined` report lacks (the gate's check that every bound held), or None."""
    if event is None:
        return "the worker reported no confinement before running repository code"
    if event.get("error"):
        return str(event["error"])
    lacking = []
    if not isinstance(event.get("landlock"), int) or event["landlock"] < 1:
        lacking.append("Landlock")
    if event.get("reads") is not True:
        lacking.append("the read allow-list")
    if event.get("seccomp") != ("inet" if install else "none"):
        lacking.append("the seccomp socket filter")
    if not event.get("tasks"):
        lacking.append("the task bound")
    if not install and event.get("network") not in ("isolated", "filtered"):
        lacking.append("the network cut")
    return f"the worker ran without {', '.join(lacking)}" if lacking else None
