"""The trusted side of a sealed run: workspace, sandbox user, environment allow-list, limits, timeout, results.

Each worker is `python -s -P -S -B` started on the runner environment (`runner_env`: the standard library, the test
harness and the gate's worker-side modules under a private name, nothing of the gate's own dependencies) in its own
process group, as an unprivileged user when the gate runs as root, with an environment built from an allow-list.
Results come only through the pipe the trusted process created; stdout goes to a capped log that is never parsed.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, cast

from evidence_gate import redact
from evidence_gate.errors import InputInvalid
from evidence_gate.sealed import runner_env
from evidence_gate.sealed.worker.protocol import (
    EV,
    Event,
    Job,
    Limits,
    Mode,
    ResultEvent,
    result_problem,
    sign,
)
from evidence_gate.strict_parse import load_json

MAX_LINE = 64 * 1024
MAX_EVENTS_BYTES = 32 * 1024 * 1024
LOG_TAIL = 4000
MAX_PROBLEMS = 20
PR_SET_DUMPABLE = 4
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|_KEY$|^INPUT_|^ACTIONS_", re.IGNORECASE)
PR_SET_CHILD_SUBREAPER = 36
# Worker processes alive right now; held while spawning, so a sweep never takes a fresh worker for an orphan.
_SPAWN_LOCK = threading.Lock()
_LIVE: set[int] = set()
# Variables the test process may see; everything else (GITHUB_TOKEN, INPUT_*, ACTIONS_*, GITHUB_ENV...) is dropped.
ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "TZ")
INI = "[pytest]\naddopts =\nxfail_strict = false\nfilterwarnings =\n"
EVENTS = frozenset(Event)


@dataclass(frozen=True)
class Sandbox:
    """Who the sealed process runs as, and why."""

    uid: int | None
    gid: int | None
    user: str
    note: str = ""


@cache
def sandbox() -> Sandbox:
    """`nobody` when the gate is root and that user can run the interpreter; else the current user, with a note."""
    try:
        me = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:  # a uid without a passwd entry, e.g. `docker run --user 1001` on an image that lacks it
        me = f"uid {os.geteuid()}"
    if os.geteuid() != 0:
        return Sandbox(None, None, me, "the gate is not root, so the sealed run keeps the gate's user")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        return Sandbox(None, None, me, "no `nobody` user on this machine: the sealed run stays root")
    try:
        probe = subprocess.run(
            [sys.executable, "-I", "-B", "-c", "import pytest, hypothesis, evidence_gate"],
            user=nobody.pw_uid,
            group=nobody.pw_gid,
            extra_groups=[],
            capture_output=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            cwd="/",
            check=False,
            timeout=60,
        )
        works = probe.returncode == 0
    except (OSError, subprocess.SubprocessError):
        works = False
    if not works:
        return Sandbox(
            None,
            None,
            me,
            f"`nobody` cannot run {sys.executable} with the gate's packages "
            "(install the gate in a world-readable location); the sealed run stays root",
        )
    return Sandbox(nobody.pw_uid, nobody.pw_gid, "nobody")


def runtime_missing() -> str | None:
    """Which of pytest and Hypothesis the gate's interpreter lacks, or None."""
    import importlib.util  # noqa: PLC0415

    missing = [m for m in ("pytest", "hypothesis") if importlib.util.find_spec(m) is None]
    return ", ".join(missing) if missing else None


def _prctl(option: int, value: int) -> bool:
    import ctypes  # noqa: PLC0415 - only needed on Linux

    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def guard_trusted_process() -> bool:
    """Make the gate non-dumpable, so its /proc entries (environ with GITHUB_TOKEN, fds, mem) are closed to the sealed
    process even when it keeps the gate's user; only a holder of CAP_SYS_PTRACE still gets in. Linux only.

    Root still reads /proc/<gate>/environ, so secret-looking values are also blanked in that block.
    """
    scrub_initial_environment()
    return _prctl(PR_SET_DUMPABLE, 0)


def scrub_initial_environment() -> int:
    """Zero the values of secret-looking variables in the environment block the process started with.

    That block is what /proc/<pid>/environ shows; `os.environ` is a copy made at start-up and keeps every value,
    so the gate and the helpers it starts (git, the Checks API) are unaffected. Returns how many were blanked.
    """
    import ctypes  # noqa: PLC0415 - only needed on Linux

    try:
        fields = Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start and env_end: fields 50 and 51
    except (OSError, IndexError, ValueError):
        return 0
    if not 0 < start < end:
        return 0
    offset = blanked = 0
    for item in ctypes.string_at(start, end - start).split(b"\0"):
        name, sep, value = item.partition(b"=")
        if sep and value and SECRET_NAME.search(name.decode("latin-1")):
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            blanked += 1
        offset += len(item) + 1
    return blanked


def adopt_orphans(on: bool) -> bool:
    """While on, processes a worker leaves behind (double fork, new session) become the gate's children."""
    return _prctl(PR_SET_CHILD_SUBREAPER, int(on))


def sweep_orphans(seconds: float = 20.0) -> int:
    """Kill the gate's children outside its own session that are not live workers: what a worker left behind.

    The gate's own helpers (git) stay in its session; each round reaps one generation, as a killed orphan's children
    are handed to the gate in turn, so the rounds go on until one finds nothing (a chain of sessions any deep), or
    until `seconds` have passed (`orphans()` then still finds some).
    """
    killed = 0
    me, my_sid = os.getpid(), os.getsid(0)
    deadline = time.monotonic() + seconds
    while True:
        with _SPAWN_LOCK:
            found = [pid for pid, ppid, sid in _processes() if ppid == me and sid != my_sid and pid not in _LIVE]
            for pid in found:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            for pid in found:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, 0)
        killed += len(found)
        if not found or time.monotonic() > deadline:
            return killed


def orphans() -> list[int]:
    """The gate's children outside its session that are not live workers (none after a sweep that finished)."""
    me, my_sid = os.getpid(), os.getsid(0)
    with _SPAWN_LOCK:
        return [pid for pid, ppid, sid in _processes() if ppid == me and sid != my_sid and pid not in _LIVE]


def draw_hash_seeds() -> tuple[int, int]:
    """A run's two PYTHONHASHSEED values, distinct, from the OS's randomness: every worker's, and the shifted replay's.

    Fixed values were a tell: code under test could compare `hash("some text")` with the values those seeds give and
    be right only inside the gate (red team, issue 21's round). Never 0, which turns hash randomization off (a tell
    of its own). Each worker's is in the receipt (`sealed.workers[].hash_seed`)."""
    first = 1 + secrets.randbelow(0xFFFFFFFF)
    second = first
    while second == first:
        second = 1 + secrets.randbelow(0xFFFFFFFF)
    return first, second


SHM = Path("/dev/shm")  # noqa: S108 - the workers' shared-memory folder (worker.DEVICES)


def _shm_entries() -> set[str]:
    try:
        return {entry.name for entry in SHM.iterdir()}
    except OSError:
        return set()


def _processes() -> list[tuple[int, int, int]]:
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            out.append((int(entry.name), int(fields[1]), int(fields[3])))
        except (OSError, IndexError, ValueError):
            continue
    return out


class Workspace:
    """A temporary folder tree for one gate run: trees (read-only to the sealed user), jobs, home and tmp."""

    def __init__(self) -> None:
        guard_trusted_process()
        self.sandbox = sandbox()  # before mkdtemp, so a failing probe leaves nothing behind
        adopt_orphans(True)
        self.root = Path(tempfile.mkdtemp(prefix="evidence-gate-sealed-"))
        self.root.chmod(0o755)
        for name in ("jobs", "home", "tmp"):
            (self.root / name).mkdir(mode=0o755)
        for name in ("home", "tmp"):
            (self.root / name).chmod(0o700)
            self._hand_over(self.root / name)
        self._runner: runner_env.Runner | None = None
        self._runner_lock = threading.Lock()
        self._scratches = 0
        self.hash_seeds = draw_hash_seeds()
        # /dev/shm is the one folder every worker may write (POSIX semaphores) that is not the run's own: what was
        # there before any worker ran is not the workers'.
        self._shm_before = _shm_entries()

    @property
    def runner(self) -> runner_env.Runner:
        """The runner environment of this run, built on first use (RunnerError when the harness is incomplete)."""
        with self._runner_lock:
            if self._runner is None:
                self._runner = runner_env.build(self.root / "runner")
            return self._runner

    def close(self) -> None:
        """Remove everything (the sealed user's leftovers too, processes first)."""
        sweep_orphans()
        adopt_orphans(False)
        shutil.rmtree(self.root, ignore_errors=True)

    def fresh_scratch(self) -> bool:
        """New, empty `home` and `tmp` for the workers started from now on: what earlier workers left there (the
        head's code: a cache file, a config) is moved aside, out of every later worker's reach, and removed with
        the run, and so is what they left in /dev/shm. Called between the head's workers and the baseline's runs,
        with no worker alive; False when a process they left could not be killed (nothing after it can be trusted
        to be the baseline's alone)."""
        sweep_orphans()
        if orphans():
            return False
        self._clear_shm()
        self._scratches += 1
        for name in ("home", "tmp"):
            (self.root / name).rename(self.root / f"{name}.{self._scratches}")
            (self.root / name).mkdir(mode=0o700)
            (self.root / name).chmod(0o700)
            self._hand_over(self.root / name)
        return True

    def _clear_shm(self) -> None:
        """Remove what the workers left in /dev/shm (it outlives them and every later worker reads it): the entries
        made since this run began, but for root's when the gate is root (the workers never are: they run as
        `nobody`, in a user namespace whose ids map to others), so the engine's and root's own stay."""
        for name in _shm_entries() - self._shm_before:
            path = SHM / name
            with contextlib.suppress(OSError):
                if os.geteuid() == 0 and path.lstat().st_uid == 0:
                    continue
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()

    def site(self, name: str) -> Path:
        """A fresh folder the sealed user owns, for `properties.install` to fill."""
        folder = self.root / name
        folder.mkdir(mode=0o755)
        folder.chmod(0o755)
        self._hand_over(folder)
        return folder

    def _hand_over(self, folder: Path) -> None:
        """Give `folder` to the sandbox user, when there is one to drop to."""
        if self.sandbox.uid is not None:
            os.chown(folder, self.sandbox.uid, self.sandbox.gid or -1)

    def env(self) -> dict[str, str]:
        """The test process's whole environment."""
        env = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
        env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
        env.update(
            {
                "HOME": str(self.root / "home"),
                "TMPDIR": str(self.root / "tmp"),
                "TZ": "UTC",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "HYPOTHESIS_NO_PLUGINS": "1",
                "LANG": "C.UTF-8",
                # Hypothesis reads its Unicode tables there instead of rebuilding them; it cannot write there.
                "HYPOTHESIS_STORAGE_DIRECTORY": str(self.runner.storage),
            }
        )
        return env


@dataclass
class WorkerResult:
    """What one sealed worker produced."""

    name: str
    events: list[dict[str, Any]] = field(default_factory=list)
    exit_code: int | None = None
    timed_out: bool = False
    problems: list[str] = field(default_factory=list)
    log_tail: str = ""
    seconds: float = 0.0
    hash_seed: int | None = None  # the worker's PYTHONHASHSEED
    # Where the first session-finished marker arrived (`_accept` notes it), so that the ledgers, which ask once per
    # test, do not scan every event each time; events are only ever appended.
    finished_at: int | None = field(default=None, repr=False, compare=False)

    def results(self) -> list[ResultEvent]:
        """The worker's result events, in order; `_accept` took each only once it had every field, of its type."""
        return [cast("ResultEvent", e) for e in self.events if e.get(EV) == Event.RESULT]

    @property
    def finished(self) -> dict[str, Any] | None:
        """The session-finished marker, if the session got that far."""
        at = self.finished_at
        if at is not None and at < len(self.events) and self.events[at].get(EV) == Event.FINISHED:
            return self.events[at]
        return next((e for e in self.events if e.get(EV) == Event.FINISHED), None)


class Signed:
    """A worker's stream as the run's key signs it: each line `SIGNATURE JSON`, signed over its number in the stream
    (`protocol.sign`). After the first line that fails, nothing more is taken: a line was lost, added, changed or
    moved on the way, so no later one is in its place."""

    def __init__(self, key: str) -> None:
        self.key = key.encode("ascii")
        self.count = 0
        self.broken = False

    def body(self, line: bytes) -> bytes | None:
        """The line's JSON when its signature is the next one expected, else None (and the stream is broken)."""
        mac, sep, body = line.partition(b" ")
        if self.broken or not sep or not hmac.compare_digest(mac, sign(self.key, self.count, body)):
            self.broken = True
            return None
        self.count += 1
        return body


UNSIGNED = (
    "a result line the run's key does not sign in its place: written by something other than the gate's plugin, or a "
    "line lost, added or changed on the way (nothing after it was taken)"
)


def _reader(
    fd: int, result: WorkerResult, on_event: Callable[[dict[str, Any]], None], signed: Signed | None = None
) -> None:
    total = 0
    buffer = b""
    with os.fdopen(fd, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            total += len(chunk)
            if total > MAX_EVENTS_BYTES:
                result.problems.append(f"the result stream exceeded {MAX_EVENTS_BYTES} bytes")
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            for line in lines:
                _accept(line, result, on_event, signed)
            if len(buffer) > MAX_LINE:
                result.problems.append(f"a result line exceeded {MAX_LINE} bytes")
                break
    if buffer and not result.problems:
        result.problems.append("the result stream ended mid-line")


def _accept(
    line: bytes, result: WorkerResult, on_event: Callable[[dict[str, Any]], None], signed: Signed | None = None
) -> None:
    if len(result.problems) >= MAX_PROBLEMS or (signed is not None and signed.broken):
        return
    if len(line) > MAX_LINE:
        result.problems.append(f"a result line exceeded {MAX_LINE} bytes")
        return
    if signed is not None:
        body = signed.body(line)
        if body is None:
            result.problems.append(UNSIGNED)
            return
        line = body
    try:
        event = load_json(line)
    except InputInvalid as exc:
        result.problems.append(f"a result line is not acceptable JSON: {exc.message}")
        return
    if not isinstance(event, dict) or not isinstance(event.get(EV), str):
        result.problems.append("a result line is not an event object")
        return
    if event[EV] not in EVENTS:
        # Both sides take the names from protocol.Event: an unknown one is a worker of another version, or drift.
        result.problems.append(f"a result line names an event the gate does not know: {str(event[EV])[:80]!r}")
        return
    if event[EV] == Event.RESULT and (problem := result_problem(event)) is not None:
        result.problems.append(problem[:300])
        return
    event = redact.value(event)  # the one place worker text enters the gate: bounded, secrets masked
    result.events.append(event)
    if event[EV] == Event.FINISHED and result.finished_at is None:
        result.finished_at = len(result.events) - 1
    on_event(event)


def run_worker(
    ws: Workspace, name: str, job: Job, timeout_s: float, on_event: Callable[[dict[str, Any]], None]
) -> WorkerResult:
    """Run one sealed worker to completion or timeout; the whole process group is killed at the end."""
    job_path = ws.root / "jobs" / f"{name}.json"
    ini_path = ws.root / "jobs" / f"{name}.ini"
    ini_path.write_text(INI, encoding="utf-8")
    # The worker starts as the gate's user and drops to the sandbox user itself, after it has left the network
    # (that needs the privilege it is about to give up); `properties.install` keeps the network for pip.
    sandbox = ws.sandbox  # sandbox() sets uid and gid together
    job = {
        "isolate_network": True,
        **job,
        "ini": str(ini_path),
        "drop": None if sandbox.uid is None or sandbox.gid is None else [sandbox.uid, sandbox.gid],
        "writable": [str(ws.root / "home"), str(ws.root / "tmp"), *job.get("writable", [])],
        "runner_links": ws.runner.links(),
        "hypothesis_storage": str(ws.runner.storage),
    }
    job_path.write_text(json.dumps(job), encoding="utf-8")
    for path in (job_path, ini_path):
        path.chmod(0o644)
    log_path = ws.root / "jobs" / f"{name}.log"
    result = WorkerResult(name, hash_seed=int(job.get("hash_seed") or ws.hash_seeds[0]))
    read_fd, write_fd = os.pipe()
    key = secrets.token_hex(16)  # signs every line the worker writes (`Signed`); sent on stdin
    started = time.monotonic()
    with log_path.open("wb") as log:
        try:
            with _SPAWN_LOCK:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        # `-I` less its `-E`: PYTHONHASHSEED must be read, and the environment is the allow-list.
                        "-s",
                        "-P",
                        "-S",
                        "-B",
                        "-c",
                        runner_env.BOOTSTRAP,
                        json.dumps(ws.runner.sys_path),
                        str(job_path),
                        str(write_fd),
                    ],
                    cwd=job["tree"],
                    env={**ws.env(), "PYTHONHASHSEED": str(result.hash_seed)},
                    stdin=subprocess.PIPE,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    pass_fds=(write_fd,),
                    start_new_session=True,
                )
                _LIVE.add(proc.pid)
        finally:
            os.close(write_fd)
        reader = threading.Thread(target=_reader, args=(read_fd, result, on_event, Signed(key)), daemon=True)
        reader.start()
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            proc.stdin.write(f"{key}\n".encode())
        proc.stdin.close()
        try:
            result.exit_code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            result.timed_out = True
        finally:
            _kill_group(proc.pid)
            if result.exit_code is None:
                result.exit_code = proc.wait()
            with _SPAWN_LOCK:
                _LIVE.discard(proc.pid)
        # A grandchild in a session of its own escaped the group kill and may hold the pipe open.
        sweep_orphans()
        reader.join(timeout=10)
    result.seconds = time.monotonic() - started
    with log_path.open("rb") as handle:
        # A little more than the tail, so that a secret cut by the tail's start is still whole when it is masked.
        handle.seek(max(0, log_path.stat().st_size - LOG_TAIL - redact.OVERLAP))
        result.log_tail = redact.text(handle.read().decode("utf-8", "replace"), limit=1 << 20)[-LOG_TAIL:]
    return result


def run_install(
    ws: Workspace, name: str, command: str, tree: Path, site: Path, limit: Limits, timeout_s: float
) -> WorkerResult:
    """Run `properties.install` as `sh -c` in `tree`, sealed like a worker but also allowed to write to `site`.

    `$EVIDENCE_GATE_PYTHON` is the gate's interpreter on the runner's sys.path (plus pip), not on the gate's own.
    """
    python = runner_env.install_python(ws.runner)
    job: Job = {
        "mode": Mode.INSTALL,
        "tree": str(tree),
        "command": command,
        "limits": limit,
        "writable": [str(site)],
        "isolate_network": False,
        "env": {"EVIDENCE_GATE_SITE": str(site), "EVIDENCE_GATE_PYTHON": str(python)},
    }
    return run_worker(ws, name, job, timeout_s, lambda _event: None)


def count_files(folder: Path) -> int:
    """Files below `folder` (not following symlinks), for the receipt."""
    return sum(len(files) for _root, _dirs, files in os.walk(folder))


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def limits(memory_mb: int, timeout_s: int) -> Limits:
    """The resource limits a worker applies to itself."""
    return {"memory_mb": memory_mb, "cpu_s": max(1, timeout_s), "nproc": 512}
