"""The first code the sealed interpreter runs: limits, then trusted imports, then the repository's paths.

Started by the trusted process as `python -s -P -S -B -c BOOTSTRAP SYS_PATH JOB FD` (see `runner_env`): no
site-packages, only the standard library and the runner folder (the harness, and these modules under a private
name) on `sys.path`. It lowers its own resource limits and confines itself (`confinement.apply`: task bound,
Landlock, seccomp; it runs nothing if one fails), imports pytest, Hypothesis and the gate's plugin before any
repository path is on `sys.path` (and appends, never prepends, those paths), then runs one pytest session or the
fixture producer, streaming events to FD, and reports where the code under test was loaded from. In install mode
it execs `sh -c` with the configured `properties.install` command under the same limits.
"""

from __future__ import annotations

import _json
import hashlib
import json
import os
import resource
import sys
import threading
from typing import Any

from . import clock, confinement, provenance
from .effects import Effects
from .line_recorder import LineRecorder
from .protocol import EV, Event, Job, Limits, Mode, sign

MB = 1 << 20
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/shm")  # noqa: S108 - writable for POSIX semaphores, as usual
# What every worker may read besides its trees, folders and the interpreter's paths: system code, CA certificates,
# the time zone, the world-readable user, group, host and service tables the C library looks names up in, its own
# /proc entry and the random devices. Not /root, /etc at large, or any checkout.
SYSTEM_READABLE = (
    "/usr",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/bin",
    "/sbin",
    "/etc/ssl",
    "/etc/localtime",
    "/etc/ld.so.cache",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/hosts",
    "/etc/services",
    "/etc/protocols",
    "/etc/mime.types",
    "/etc/os-release",
    "/dev/urandom",
    "/dev/random",
)
# What `properties.install` (pip, a shell) reads on top: name resolution, CA bundles, pip's configuration and the
# distribution's name and version (pip's user agent).
INSTALL_READABLE = (
    "/etc/resolv.conf",
    "/etc/host.conf",
    "/etc/gai.conf",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/pip.conf",
    "/etc/xdg/pip",
    "/etc/python3",
    f"/etc/python{sys.version_info.major}.{sys.version_info.minor}",
    "/etc/debian_version",
    "/etc/lsb-release",
    "/etc/alpine-release",
    "/etc/redhat-release",
    "/etc/system-release",
)
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000
PR_SET_DUMPABLE = 4
# Bound before any repository code runs: the result channel must not write through attributes it could rebind.
_WRITE = os.write
_LOCK = threading.RLock()
# The C encoder itself, not `JSONEncoder.encode`: that looks `c_make_encoder` and the string escapers up in
# `json.encoder`'s globals on every call, where code under test could put one that rewrites each event (review).
_MAKE_ENCODER = _json.make_encoder
_JOIN = "".join


def _not_json(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _c_encoder(ascii_only: bool, separators: tuple[str, str], default: Any) -> Any:
    """`JSONEncoder(sort_keys=True, allow_nan=False, ...).encode` with its parts bound now."""
    escape = _json.encode_basestring_ascii if ascii_only else _json.encode_basestring
    encoder = _MAKE_ENCODER(None, default, escape, None, separators[1], separators[0], True, False, False)
    return lambda value: _JOIN(encoder(value, 0))


_ENCODE = _c_encoder(True, (", ", ": "), str)
# The digest path hashes through names bound here too: the producer is repository code and could swap hashlib's.
_SHA256 = hashlib.sha256
HOOKED = "a hook the gate did not install was active while the producer ran, so its output is not trusted"
_CANONICAL = _c_encoder(False, (",", ":"), _not_json)


def _limit(which: int, value: int) -> None:
    try:
        resource.setrlimit(which, (value, value))
    except (ValueError, OSError):
        # The hard limit could not be lowered: lower the soft one, when that is below the hard limit.
        _soft, hard = resource.getrlimit(which)
        if hard == resource.RLIM_INFINITY or value < hard:
            resource.setrlimit(which, (value, hard))


def apply_limits(limits: Limits) -> None:
    """Address space, CPU seconds, tasks, file size and core dumps; lowered for good (hard limits too)."""
    _limit(resource.RLIMIT_AS, limits["memory_mb"] * MB)
    _limit(resource.RLIMIT_CPU, limits["cpu_s"])
    _limit(resource.RLIMIT_FSIZE, 256 * MB)
    _limit(resource.RLIMIT_CORE, 0)
    # Binds a worker that would stay root too, once confinement.apply has moved it off uid 0 (see there).
    _limit(resource.RLIMIT_NPROC, limits["nproc"])


def isolate_network() -> str:
    """Move this process into a new, empty network namespace (only a downed loopback); "" or why it failed."""
    import ctypes  # noqa: PLC0415 - only needed on Linux

    libc = ctypes.CDLL(None, use_errno=True)
    if int(libc.unshare(CLONE_NEWNET)) != 0:
        return f"unshare(CLONE_NEWNET) failed: {os.strerror(ctypes.get_errno())}"
    return ""


def isolate_network_unprivileged() -> str:
    """The same without privilege (a container without CAP_SYS_ADMIN, a non-root gate): a user namespace that maps
    only this process's own uid and gid onto themselves, owning a new network namespace; "" or why it failed."""
    import ctypes  # noqa: PLC0415 - only needed on Linux

    uid, gid = os.geteuid(), os.getegid()
    libc = ctypes.CDLL(None, use_errno=True)
    if int(libc.unshare(CLONE_NEWUSER | CLONE_NEWNET)) != 0:
        return f"unshare(CLONE_NEWUSER | CLONE_NEWNET) failed: {os.strerror(ctypes.get_errno())}"
    # Unmapped ids would only show as 65534 inside; file access still uses the real ones, so a failure is harmless.
    for name, text in (("uid_map", f"{uid} {uid} 1\n"), ("setgroups", "deny"), ("gid_map", f"{gid} {gid} 1\n")):
        try:
            with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:  # noqa: PTH123 - minimal imports
                handle.write(text)
        except OSError:
            break
    return ""


def drop_privileges(uid: int, gid: int) -> None:
    """Become the sandbox user for good (no supplementary groups); keep the /proc entries the user's own."""
    import ctypes  # noqa: PLC0415 - only needed on Linux

    os.setgroups([])
    os.setgid(gid)
    os.setuid(uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise OSError("the sealed worker could not drop to the sandbox user")
    # A credential change makes the process non-dumpable, which would hand its /proc entries to root.
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)


def readable(job: Job) -> list[str]:
    """Where a worker may read (in every mode): its tree and paths, the run's ini, the interpreter and system code;
    an install also name resolution and pip's configuration. Never /root, /etc at large, another /proc entry or
    any checkout."""
    import sysconfig  # noqa: PLC0415

    interpreter = {
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        sys.base_exec_prefix,
        *sysconfig.get_paths().values(),
        *(p for p in sys.path if p),
    }
    # The runner folder holds links; a rule on a link applies to its target (the harness, the worker modules).
    # Hypothesis' storage holds only the Unicode tables the trusted side produced: read, never written.
    storage = [job["hypothesis_storage"]] if job.get("hypothesis_storage") else []
    return [
        job["tree"],
        *job.get("paths", []),
        job["ini"],
        *job.get("runner_links", []),
        *storage,
        *sorted(interpreter),
        *SYSTEM_READABLE,
        *(INSTALL_READABLE if job["mode"] == Mode.INSTALL else ()),
        *own_proc_entries(),
    ]


# What of its own /proc entry a worker may not read: its memory (where the run's key is), the same through each
# thread's entry, the files mapped into it, and the environment it started with (PYTHONHASHSEED, which a plain
# pytest run does not have: a tell; the worker drops it from os.environ too).
PROC_HIDDEN = frozenset({"mem", "task", "map_files", "environ"})


def own_proc_entries(pid: int | None = None) -> list[str]:
    """The worker's own /proc entries it may read (status, limits, fd, maps, ...), all but `PROC_HIDDEN` and the
    links (`cwd`, `exe`, `root`): a rule is made on what a path opens, and `root` opens `/`. What a link leads to is
    read under the rules of where it is."""
    base = f"/proc/{pid or os.getpid()}"
    try:
        entries = list(os.scandir(base))
    except OSError:
        return []
    return sorted(e.path for e in entries if e.name not in PROC_HIDDEN and not e.is_symlink())


class Emitter:
    """JSON lines to the pipe the trusted process reads, each signed with the run's key in its place in the stream
    (`protocol.sign`): the key never leaves this process, so a line changed, added, dropped or moved on the way (a
    pipe of the code under test's put in the channel's place, a read end opened through /proc) fails the check."""

    def __init__(self, fd: int, key: str) -> None:
        self.fd = fd
        self._key = key.encode("ascii")
        self._count = 0
        self._lock = _LOCK
        self._pending: list[bytes] = []
        self._writing = False
        self._live = True
        # A process the code under test forks shares the stream but not its count: what it would write (the line
        # recorder's lines in a forked child) is not sent, so the worker's own lines keep their places.
        os.register_at_fork(after_in_child=self._forked)

    def _forked(self) -> None:
        self._live = False

    def __call__(self, event: dict[str, Any]) -> None:
        if not self._live:
            return
        body = _ENCODE(event).encode()
        # Another thread waits for the lock: its line must not take this one's number or split it. This thread may
        # come back while it writes (a finalizer the collector runs, a signal handler, the line recorder under
        # either): that line is queued and written after the one in hand, never a deadlock.
        with self._lock:
            self._pending.append(body)
            if self._writing:
                return
            self._writing = True
            try:
                while self._pending:
                    queued = self._pending.pop(0)
                    data = sign(self._key, self._count, queued) + b" " + queued + b"\n"
                    self._count += 1
                    while data:
                        data = data[_WRITE(self.fd, data) :]
            finally:
                self._writing = False


def canonical_output(value: Any) -> bytes:
    """The bytes a producer's return value is hashed as: bytes as is, text as UTF-8, anything else canonical JSON."""
    if isinstance(value, bytes):
        return bytes(value)  # a subclass cannot pass itself off with its own methods
    if isinstance(value, str):
        return str.encode(value, "utf-8")
    return str.encode(_CANONICAL(value), "utf-8")


def run_digests(job: Job, emit: Emitter, effects: Effects) -> int:
    """Call the configured producer on each record's input and report the sha256 of its output.

    Hooks are refused by the audit hook; the state is checked again right after each call, before its output is
    hashed, so that a producer that got one installed anyway has its record reported without a digest."""
    import importlib  # noqa: PLC0415

    module_name, _, func_name = str(job["producer"]).partition(":")
    try:
        producer = getattr(importlib.import_module(module_name), func_name)
    except Exception as exc:  # noqa: BLE001 - any import failure is reported, never raised
        emit({EV: Event.PRODUCER_MISSING, "message": f"{type(exc).__name__}: {exc}"[:2000]})
        emit({EV: Event.FINISHED, "exitstatus": 0})
        return 0
    for record in job["records"]:
        try:
            output = producer(record["input"])
            if not effects.check("while the fixture producer ran", full=False):
                emit({EV: Event.DIGEST, "id": record["id"], "sha256": None, "message": HOOKED})
                continue
            digest = _SHA256(canonical_output(output)).hexdigest()
            emit({EV: Event.DIGEST, "id": record["id"], "sha256": digest})
        except Exception as exc:  # noqa: BLE001 - a producer error is a mismatch, reported with its cause
            emit(
                {EV: Event.DIGEST, "id": record["id"], "sha256": None, "message": f"{type(exc).__name__}: {exc}"[:2000]}
            )
    effects.check("by the fixture producer")
    emit({EV: Event.FINISHED, "exitstatus": 0})
    return 0


def main(argv: list[str]) -> int:
    """Run one sealed job."""
    with open(argv[0], encoding="utf-8") as handle:  # noqa: PTH123 - keep start-up imports minimal
        job: Job = json.load(handle)
    # While still privileged: a network namespace of its own, then the sandbox user (when the gate can drop root).
    network, network_note = "shared", ""
    if job.get("isolate_network"):
        network_note = isolate_network()
        network = "shared" if network_note else "isolated"
    drop = job.get("drop")
    if drop:
        drop_privileges(*drop)
    if job.get("isolate_network") and network_note:
        # Without the privilege for a plain network namespace, one owned by a user namespace of its own.
        fallback = isolate_network_unprivileged()
        network, network_note = ("isolated", "") if not fallback else ("shared", f"{network_note}; {fallback}")
    apply_limits(job["limits"])
    channel = int(argv[1])
    os.set_inheritable(channel, False)  # no program the code under test runs holds it (nor keeps it open)
    # Before any repository code, in every mode: tasks bounded, writes only to the worker's own folders, reads only
    # from an allow-list (the checkout's .git/config may hold a token; the worker's own memory holds the run's key),
    # no socket but the result channel.
    try:
        applied: dict[str, Any] = confinement.apply(
            job["mode"], [*job.get("writable", []), *DEVICES], readable(job), job["limits"]["nproc"]
        )
    except confinement.Unconfined as exc:
        applied = {"error": str(exc)}
        print(f"evidence-gate sealed worker: {exc}", file=sys.stderr)
    if network == "shared" and applied.get("seccomp") == "none":
        network = "filtered"  # no namespace could be made, but no socket can be opened either
    # The run's key arrives on stdin, not argv or the environment (both readable through /proc), and never leaves.
    token = sys.stdin.readline().strip()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    emit = Emitter(channel, token)
    emit({EV: Event.CONFINED, **applied, "network": network, "network_note": network_note})
    if "error" in applied:
        return 3
    os.chdir(job["tree"])
    if job["mode"] == Mode.INSTALL:
        # The limits, Landlock and no-new-privs stay in force across exec; the result pipe does not go along.
        os.close(channel)
        os.execve("/bin/sh", ["sh", "-c", job["command"]], {**os.environ, **job["env"]})  # noqa: S606 - trusted command from the baseline config
    # The interpreter has read its hash seed; a variable a plain pytest run does not have would be a tell (red team).
    os.environ.pop("PYTHONHASHSEED", None)
    # Before any trusted import too: no trace, profile or monitoring hook may be installed from here on but the
    # gate's own line recorder (a head property worker's), which `_run_pytest` starts before any repository path.
    recorder = (
        LineRecorder(job["record_lines"], emit) if job["mode"] == Mode.PYTEST and job.get("record_lines") else None
    )
    effects = Effects(emit, job["tree"], recorder)
    effects.install()
    _site_builtins()
    expected = dict(job.get("code_under_test", {}))
    if job["mode"] == Mode.DIGEST:
        sys.path.extend(job["paths"])
        code = run_digests(job, emit, effects)
        provenance.ProvenancePlugin(expected, emit).report(final=True)
        return code
    return _run_pytest(job, emit, expected, effects)


def _run_pytest(job: Job, emit: Emitter, expected: dict[str, str], effects: Effects) -> int:
    """The pytest session of a confined worker: the harness imported first, then the tree's paths, then the tests."""
    import _hypothesis_pytestplugin  # type: ignore[import-untyped]  # noqa: F401, PLC0415 - trusted imports first
    import hypothesis  # noqa: PLC0415
    import hypothesis.strategies  # noqa: F401, PLC0415
    import pytest  # noqa: PLC0415

    from . import plugin as pytest_plugin  # noqa: PLC0415

    harness_installed(job.get("runner_links", []))
    # The harness holds its own references to the clock; the code under test, imported next, reads the shifted one.
    clock.shift(float(job.get("clock_shift_s") or 0))
    # The plugin installs its hooks and takes the harness's snapshot before any repository path is on sys.path, and
    # before the line recorder starts (a snapshot read under the trace function costs twice as much).
    plugin = pytest_plugin.SealedPlugin(job, emit, effects)
    if effects.recorder is not None:
        effects.recorder.install()  # after the harness's imports (not worth tracing), before any repository code
    sys.path.extend(job["paths"])
    roots = [path for path in job["paths"] if path != job["tree"]]
    trusted = frozenset(job.get("trusted_files", ()))
    bounds = provenance.Bounds(job["tree"], roots, trusted) if job.get("bounded") else None
    origin = provenance.ProvenancePlugin(expected, emit, bounds)
    code = pytest.main(pytest_args(job), plugins=[plugin, origin])
    origin.report(final=True)
    return int(code)


def pytest_args(job: Job) -> list[str]:
    """The session's command line: the gate's ini, the tree as rootdir and conftest boundary, no cache."""
    return [
        "-c",
        job["ini"],
        "--rootdir",
        job["tree"],
        "--confcutdir",
        job["tree"],
        "-p",
        "no:cacheprovider",
        "-p",
        "no:stepwise",
        "-p",
        "_hypothesis_pytestplugin",
        "--import-mode=append",
        "-q",
        "--no-header",
        "-o",
        "console_output_style=classic",
        *job["args"],
    ]


def leave(code: int) -> None:
    """End the worker once its last event is written: flush what it printed, then exit without the interpreter's
    teardown (freeing every module, class and cache of the session costs a few hundred ms and judges nothing; the
    code under test's atexit handlers and finalizers do not run, and nothing is read from the worker after this)."""
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001, S110 - a stream the code under test replaced or closed: nothing to keep
            pass
    os._exit(code)


def harness_installed(links: list[str]) -> None:
    """Tell Hypothesis that the folders the runner's links point into are installed packages, as they are.

    Hypothesis adds the constants of every "local" module (one outside the interpreter's site-packages and standard
    library, and outside test folders) to what it generates. Started with `-S`, the interpreter's site-packages is
    the base installation's, not the venv or dist-packages folder the harness lives in, so pytest, pluggy and the
    gate's own worker modules would count as the project's code: their string and number constants would steer the
    examples (a plain pytest run never does that) and every worker would parse some 140 harness files for them.
    The project's code (the sealed tree, an install site) is never under these folders.
    """
    from hypothesis.internal import scrutineer  # noqa: PLC0415 - after the trusted imports, before any test

    installed = getattr(scrutineer, "SITE_PACKAGES_DIRS", None)
    location = getattr(scrutineer, "ModuleLocation", None)
    if not isinstance(installed, set):
        return  # a Hypothesis without local constants (or a different layout): nothing to correct
    from pathlib import Path  # noqa: PLC0415

    installed.update(Path(os.path.realpath(link)).parent for link in links)
    cached = getattr(getattr(location, "from_path", None), "cache_clear", None)
    if callable(cached):
        cached()


def _site_builtins() -> None:
    """`exit`, `quit`, `help` and `copyright`, which `site` would have defined: the worker starts with `-S`, so that
    no site-packages folder is on `sys.path`, but code under test may still call `exit()`."""
    import site  # noqa: PLC0415 - with -S, importing site defines helpers and adds no folder

    site.setquit()
    site.setcopyright()
    site.sethelper()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
