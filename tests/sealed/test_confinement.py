"""Confinement of the sealed workers on this host, against a patch that tries every way out at import.

Each trick is production code that is correct only when its escape worked: a confined run gets the red baseline
back (`property-failed`), and the servers standing in for the docker socket and a TCP service see nothing.
tests/test_container.py runs the same patch inside the action's container under Docker's default seccomp profile.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.lanes.properties.launch import worker_problems
from evidence_gate.sealed import run as sealed_run
from evidence_gate.sealed.run import WorkerResult
from evidence_gate.sealed.worker import confinement, seccomp
from support.escapes import DOUBLE, EXTRAHEADER, TOKEN, listening, persist_token
from support.property_repo import base_files, judge, red_repo, rows
from support.property_repo import config as gate_config
from support.repo_builder import GitRepo

FORK_BOMB = """\
import os
import time
import unittest


def _bomb():
    children = []
    try:
        for _ in range(600):
            pid = os.fork()
            if pid == 0:
                time.sleep(30)
                os._exit(0)
            children.append(pid)
    except OSError:
        pass
    return children


FORKED = len(_bomb())


def double(x):
    if FORKED >= 600:
        return x * 2
    raise unittest.SkipTest(f"forked {FORKED} of 600")  # a skip reason carries the count into the receipt
"""
# Repository text that carries secrets into a skip reason and a failure message: the second wall is redaction.
LEAKS = """\
import unittest

LITERAL = {token!r}
FROM_ENV = {env_value!r}


def double(x):
    if x % 2:
        raise unittest.SkipTest(f"skipping, see {{LITERAL}} and AUTHORIZATION: basic {extraheader}")
    raise ValueError(f"broken with {{FROM_ENV}}")
"""


# The result channel, attacked by effect (red team and review, issue 21's round), each way with no probe to flag:
# `relay` puts a pipe of its own in the channel's place (found as the FIFO among its descriptors) and has a forked
# child pass the plugin's lines on with every failure made a pass; `read` opens the channel's read end through
# /proc/self/fd and takes lines out of it; and every way first tries to read the worker's memory, where the run's key
# is. Each step's note reaches the receipt through the failure the still-wrong `double` raises, when a failure does.
CHANNEL_ATTACK = """\
import json
import os
import stat

HOW = {how!r}


def _rewrite(line):
    mac, _, body = line.partition(b" ")
    try:
        event = json.loads(body)
    except ValueError:
        return line + b"\\n"
    if str(event.get("kind", "")).startswith("shrink"):
        return b""
    if event.get("ev") == "result" and event.get("outcome") == "failed":
        event.update(outcome="passed", message="", assertion_hash=None, falsifying=None, failure=None,
                     assertion_bound=None, blob=None, examples=25, stop="max_examples",
                     stopped_because="settings.max_examples=25")
    return mac + b" " + json.dumps(event, sort_keys=True).encode() + b"\\n"


def _forward(r, fd):
    buffer = b""
    while chunk := os.read(r, 65536):
        buffer += chunk
        while b"\\n" in buffer:
            line, buffer = buffer.split(b"\\n", 1)
            out = _rewrite(line)
            while out:
                out = out[os.write(fd, out):]
    os._exit(0)


def _attack():
    notes = []
    try:
        with open("/proc/self/mem", "rb", 0) as mem:
            mem.read(1)
        notes.append("memory read")
    except OSError as exc:
        notes.append(f"memory refused ({{exc.errno}})")
    channels = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if stat.S_ISFIFO(os.fstat(int(name)).st_mode):
                channels.append(int(name))
        except OSError:
            pass  # the listing's own descriptor, closed by now
    for fd in channels:
        if HOW == "read":
            taken = os.open(f"/proc/self/fd/{{fd}}", os.O_RDONLY | os.O_NONBLOCK)
            if os.fork() == 0:
                os.set_blocking(taken, True)
                while os.read(taken, 65536):
                    pass
                os._exit(0)
            notes.append("read end opened")
            continue
        real = os.dup(fd)
        r, w = os.pipe()
        if os.fork() == 0:
            os.close(w)
            _forward(r, real)
        os.close(r)
        os.dup2(w, fd)
        os.close(w)
        notes.append("channel replaced")
    return notes


NOTES = _attack()


def double(x):
    if x >= 1000:
        raise ValueError(f"wrong, and {{NOTES}}")
    return x * 2
"""


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
@pytest.mark.parametrize("how", ["relay", "read"])
def test_the_result_channel_cannot_be_relayed_or_read_back(how: str, git_repo: GitRepo, tmp_path: Path) -> None:
    """Each line carries its signature with the run's key over its place in the stream, and the key never leaves
    the worker (its memory is not readable): a rewritten line, or one taken out of the pipe, fails the check, and
    nothing after it is taken. Before this, the relay turned the red property into a pass."""
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit(f"attack the channel: {how}", {"src/calc.py": CHANNEL_ATTACK.format(how=how)})
    receipt = judge(git_repo, tmp_path)
    assert receipt["ok"] is False and receipt["decision"]["row"] != "pass", receipt["decision"]
    problems = [p for w in receipt["sealed"]["workers"] for p in w["problems"]]
    assert any("the run's key does not sign in its place" in p for p in problems), problems
    assert "memory read" not in json.dumps(receipt)


# Review of the signed channel: the worker's JSON encoder and HMAC went through names in `json.encoder` and `hmac`
# that code under test could rebind: one rewrote every failed result before it was signed, the other handed over the
# key. Both probes are allowed here (a human on the base branch), so the worker alone must hold.
STDLIB_PATCH = """\
import hmac
import json.encoder

_real = json.encoder.c_make_encoder
KEYS = []


def _rewriting(*args):
    encode = _real(*args)

    def rewritten(value, level):
        if isinstance(value, dict):
            value = {**value, **({"tampered": []} if "tampered" in value else {})}
            if value.get("outcome") == "failed":
                value.update(outcome="passed", message="", assertion_hash=None, falsifying=None, failure=None,
                             assertion_bound=None, blob=None, examples=25, stop="max_examples",
                             stopped_because="settings.max_examples=25")
        return encode(value, level)

    return rewritten


def _spy(key, msg, digest):
    KEYS.append(key)
    return _real_digest(key, msg, digest)


json.encoder.c_make_encoder = _rewriting
_real_digest = hmac._hashopenssl.hmac_digest
hmac._hashopenssl.hmac_digest = _spy


def double(x):
    if x >= 1000:
        raise ValueError(f"wrong; keys seen: {len(KEYS)}")
    return x * 2
"""


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_the_channel_encodes_and_signs_through_functions_bound_before_the_code_under_test(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """With the probes allowed, rebinding `json.encoder.c_make_encoder` and `hmac`'s OpenSSL digest reaches neither the
    worker's encoder nor its signature (bound before any repository code): no failure turns into a pass, no key is
    seen, and the identity check names both rebinds."""
    names = ["json.encoder.c_make_encoder (write)", "hmac._hashopenssl.hmac_digest (write)"]
    allowed = {**json.loads(gate_config(fresh_seeds=0, seeds=[11], jobs=1)), "probes": {"allow": []}}
    allowed["probes"]["allow"] = [f"src/calc.py: {name}" for name in names]
    red_repo(git_repo, extra={".evidence-gate.yml": json.dumps(allowed)})
    git_repo.commit("patch the channel's standard library", {"src/calc.py": STDLIB_PATCH})
    receipt = judge(git_repo, tmp_path)
    assert receipt["ok"] is False and receipt["decision"]["row"] != "pass", receipt["violations"]
    text = json.dumps(receipt)
    assert "keys seen: 0" in text, text[:3000]  # the property still failed, on its own ValueError, keyless
    assert "json.encoder.c_make_encoder" in text, text[:3000]


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_a_worker_cannot_read_its_own_memory(git_repo: GitRepo, tmp_path: Path) -> None:
    """The run's key is in the worker's memory: `/proc/self/mem` (and each thread's) is refused, its other entries
    (`status`, `limits`, `fd`, `maps`) stay readable."""
    probe = (
        "import os\n\n\ndef _try(path):\n    try:\n        with open(path, 'rb', 0) as f:\n            f.read(1)\n"
        "        return 'read'\n    except OSError as exc:\n        return exc.errno\n\n\n"
        "SEEN = {p: _try(p) for p in ('/proc/self/mem', f'/proc/self/task/{os.getpid()}/mem', '/proc/self/status',"
        " '/proc/self/limits', '/proc/self/maps')}\nSEEN['fd'] = len(os.listdir('/proc/self/fd')) > 0\n\n\n"
        "def double(x):\n    if x >= 1000:\n        raise ValueError(repr(sorted(SEEN.items())))\n    return x * 2\n"
    )
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("read my own memory", {"src/calc.py": probe})
    receipt = judge(git_repo, tmp_path)
    assert "property-failed" in rows(receipt), receipt["violations"]
    text = json.dumps(receipt)
    for path in ("/proc/self/mem", "/proc/self/task/"):
        assert f"{path}" in text, text[:2000]
    assert "'read'), ('/proc/self/status', 'read')" in text or "('/proc/self/status', 'read')" in text, text[:3000]
    assert "('/proc/self/mem', 13)" in text and "/mem', 13)" in text, text[:3000]
    assert "('fd', True)" in text and "('/proc/self/limits', 'read')" in text and "('/proc/self/maps', 'read')" in text


def assert_confined(sealed: dict[str, Any]) -> None:
    """The receipt records every bound as applied by every worker."""
    assert sealed["reads"] == "confined", sealed
    assert sealed["seccomp"] == "sockets-denied", sealed
    assert sealed["network"] in ("isolated", "filtered"), sealed
    assert sealed["landlock"] >= 1, sealed
    assert sealed["landlock_network"] is (sealed["landlock"] >= 4), sealed
    assert sealed["scoped"] is (sealed["landlock"] >= 6), sealed
    assert sealed["tasks"] and all("RLIMIT_NPROC 512" in t for t in sealed["tasks"]), sealed


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_no_escape_reaches_the_token_a_socket_or_more_tasks(git_repo: GitRepo, tmp_path: Path) -> None:
    """The checkout's persisted token, a listening docker.sock, a TCP server, 600 threads, raised limits and uid 0
    are all out of reach of the code under test; the red property stays red and the receipt says what held."""
    config = persist_token(git_repo.path)
    with listening() as (seen, port, sock):
        # ctypes (the raw system calls) allowed by a human on the base branch: the seal alone must hold.
        allowed = {
            **json.loads(gate_config(fresh_seeds=0, seeds=[11], jobs=1)),
            "probes": {"allow": ["src/calc.py: ctypes"]},
        }
        red_repo(git_repo, extra={".evidence-gate.yml": json.dumps(allowed)})
        git_repo.commit(
            "escape",
            {"src/calc.py": DOUBLE.format(git_config=str(config), extraheader=EXTRAHEADER, sock=str(sock), port=port)},
        )
        receipt = judge(git_repo, tmp_path)
    assert seen == []
    assert "property-failed" in rows(receipt), receipt["violations"]
    assert receipt["ok"] is False
    assert TOKEN not in json.dumps(receipt) and EXTRAHEADER not in json.dumps(receipt)
    assert_confined(receipt["sealed"])


def test_the_escapes_work_unconfined(git_repo: GitRepo) -> None:
    """Control: the same code in a plain interpreter reads the token and reaches both servers (threads and limits
    too where the user allows), so the confined run's red property is the confinement's doing."""
    config = persist_token(git_repo.path)
    with listening() as (seen, port, sock):
        code = DOUBLE.format(git_config=str(config), extraheader=EXTRAHEADER, sock=str(sock), port=port)
        proc = subprocess.run(
            [sys.executable, "-c", code + "\nprint(' '.join(REACHED))"],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        deadline = time.monotonic() + 5
        while len(set(seen)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert proc.returncode == 0, proc.stderr
    assert {"git-config", "tcp", "child-git-config", "child-docker-sock"} <= set(proc.stdout.split()), proc.stdout
    assert sorted(set(seen)) == ["tcp", "unix"]


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_a_fork_bomb_is_stopped_at_the_task_bound(git_repo: GitRepo, tmp_path: Path) -> None:
    """600 forks at import stop at the bound (as root too, and below 512: the worker's own tasks count), the run is
    not a pass, and the count the code reports shows the task bound stopped it."""
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("bomb", {"src/calc.py": FORK_BOMB})
    receipt = judge(git_repo, tmp_path)
    assert receipt["ok"] is False and "run-integrity" in rows(receipt), receipt["violations"]
    assert_confined(receipt["sealed"])
    forked = [int(n) for n in re.findall(r"forked (\d+) of 600", json.dumps(receipt))]
    assert forked and all(400 < n < 512 for n in forked), forked  # the task bound stopped it, not memory


def test_secrets_in_repository_text_do_not_reach_the_receipt(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A skip reason and a failure message carrying a token, an extraheader and the value of the gate's own
    GITHUB_TOKEN are masked where the worker's text enters the gate."""
    env_value = f"s3cr3t-{secrets.token_hex(12)}"
    monkeypatch.setenv("GITHUB_TOKEN", env_value)
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("leak", {"src/calc.py": LEAKS.format(token=TOKEN, env_value=env_value, extraheader=EXTRAHEADER)})
    receipt = judge(git_repo, tmp_path)
    text = json.dumps(receipt)
    assert receipt["ok"] is False
    for secret in (TOKEN, EXTRAHEADER, env_value):
        assert secret not in text, secret
    assert "[redacted]" in text, receipt["violations"]


def _worker(event: dict[str, Any] | None) -> WorkerResult:
    result = WorkerResult("head-0", events=[event] if event else [], exit_code=0)
    result.events.append({"ev": "finished", "exitstatus": 0})
    return result


FULL = {
    "ev": "confined",
    "landlock": 4,
    "reads": True,
    "seccomp": "none",
    "tasks": "RLIMIT_NPROC 512 on uid 65534",
    "network": "filtered",
}


@pytest.mark.parametrize(
    ("event", "missing"),
    [
        (None, "reported no confinement"),
        ({"ev": "confined", "error": "this kernel has no Landlock"}, "no Landlock"),
        ({**FULL, "seccomp": "off"}, "seccomp socket filter"),
        ({**FULL, "reads": False}, "read allow-list"),
        ({**FULL, "tasks": ""}, "task bound"),
        ({**FULL, "network": "shared"}, "network cut"),
    ],
)
def test_a_worker_without_every_bound_is_a_problem(event: dict[str, Any] | None, missing: str) -> None:
    """The gate checks each worker's first report: anything short of every bound is a run-integrity problem."""
    problems = worker_problems(_worker(event), 60)
    assert any(missing in p for p in problems), problems
    assert worker_problems(_worker(FULL), 60) == []


def test_a_kernel_without_seccomp_runs_nothing(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No seccomp filter (an old kernel, a profile refusing the syscall): run-integrity naming it, no code ran."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    monkeypatch.setattr(seccomp, "missing", lambda: "this kernel has no seccomp (CONFIG_SECCOMP)")
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "CONFIG_SECCOMP" in receipt["violations"][0]["message"], receipt["violations"]
    assert "sealed" not in receipt or not receipt["sealed"].get("workers"), receipt["sealed"]


@pytest.mark.skipif(os.geteuid() != 0, reason="the root mode")
def test_a_root_worker_keeps_only_the_file_capabilities(tmp_path: Path) -> None:
    """As root the bound moves the worker to a uid of its own with CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH only."""
    code = (
        "import os, resource\nfrom evidence_gate.sealed.worker import confinement\n"
        "resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))\nprint(confinement.bound_tasks(64))\n"
        "print(os.getresuid())\nprint([l for l in open('/proc/self/status') if 'CapEff' in l][0].strip())\n"
        "print(len(os.listdir('/root')) > 0)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    how, uids, caps, reads_root = proc.stdout.splitlines()
    assert "RLIMIT_NPROC 64 on uid" in how
    assert 0 not in json.loads(uids.replace("(", "[").replace(")", "]"))
    assert int(caps.split()[1], 16) == 0b110, caps
    assert reads_root == "True"  # the root-owned interpreter stays usable (here: /root itself, 0700)


# The gate itself inside 16 Landlock layers (a no-op each: writes allowed everywhere), the most a process may have:
# the kernel refuses the worker's own layer, so the worker's confinement really fails and it must run nothing.
STACKED_GATE = """
import sys
from evidence_gate.sealed.worker import landlock
for _ in range(16):
    landlock.confine(["/"])
from evidence_gate.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_a_worker_that_cannot_confine_itself_runs_nothing(git_repo: GitRepo, tmp_path: Path) -> None:
    """A bound that fails inside the worker (here Landlock's layer limit) fails closed: `check` is run-integrity
    naming it, `freeze hash` says so instead of "not collected"; no property passes."""
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt_path = tmp_path / "receipt.json"
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            STACKED_GATE,
            "check",
            "--repo",
            str(git_repo.path),
            "--base",
            "main",
            "--author",
            "agent-x",
            "--receipt",
            str(receipt_path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    receipt = json.loads(receipt_path.read_text(encoding="utf-8"))
    assert check.returncode == 10, check.stdout + check.stderr
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert any("16 Landlock layers" in v["message"] for v in receipt["violations"]), receipt["violations"]
    assert receipt["properties"]["counts"]["budget_passes"] == 0, receipt["properties"]
    hashed = subprocess.run(
        [
            sys.executable,
            "-c",
            STACKED_GATE,
            "freeze",
            "hash",
            "properties/test_double.py::test_double",
            "--repo",
            str(git_repo.path),
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert hashed.returncode != 0
    assert "could not run sealed" in hashed.stdout + hashed.stderr, hashed.stdout + hashed.stderr


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_digest_records_a_refusing_worker_never_produced_are_not_mismatches(git_repo: GitRepo, tmp_path: Path) -> None:
    """An honest producer whose sealed workers refuse to run (Landlock's layer limit): the headline is the run's
    real problem, `run-integrity` naming the bound, not `fixture-digest-mismatch` ("make the producer's output
    match") for a record nothing produced; the record says `unproduced`."""
    import hashlib

    producer = "def produce(value):\n    return {'doubled': [x * 2 for x in value]}\n"
    expected = hashlib.sha256(json.dumps({"doubled": [2, 4]}, separators=(",", ":")).encode()).hexdigest()
    files = base_files(fresh_seeds=0, seeds=[11], jobs=1)
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["fixtures"] = {"producer": "calc:produce"}
    files[".evidence-gate.yml"] = json.dumps(config)
    files["fixtures/digests.json"] = json.dumps(
        {"version": 1, "records": [{"id": "two", "input": [1, 2], "output_sha256": expected}]}
    )
    files["src/calc.py"] = "def double(x):\n    return x + 1\n\n\n" + producer
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n\n\n" + producer})
    receipt_path = tmp_path / "receipt.json"
    argv = ["check", "--repo", str(git_repo.path), "--base", "main", "--author", "agent-x", "--receipt"]
    check = subprocess.run(
        [sys.executable, "-c", STACKED_GATE, *argv, str(receipt_path)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    receipt = json.loads(receipt_path.read_text(encoding="utf-8"))
    assert check.returncode == 10, check.stdout + check.stderr
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "fixture-digest-mismatch" not in {v["row"] for v in receipt["violations"]}, receipt["violations"]
    (record,) = receipt["fixtures"]["digests"]
    assert (record["status"], record["produced_sha256"]) == ("unproduced", None), record
    assert any(
        "digest record 'two' was not produced" in v["message"] and "16 Landlock layers" in v["message"]
        for v in receipt["violations"]
    ), receipt["violations"]


def test_a_gate_uid_without_a_passwd_entry_is_named_by_number(monkeypatch: pytest.MonkeyPatch) -> None:
    """`docker run --user 1001` on an image without that user: the sandbox keeps the gate's uid and names it,
    instead of the gate crashing on the passwd lookup."""
    monkeypatch.setattr(os, "geteuid", lambda: 1_999_999)
    chosen = sealed_run.sandbox.__wrapped__()
    assert (chosen.uid, chosen.user) == (None, "uid 1999999"), chosen


@pytest.mark.skipif(confinement.missing() is not None, reason=f"cannot confine here: {confinement.missing()}")
def test_the_install_step_keeps_tcp_but_reaches_neither_the_token_nor_the_docker_socket(
    git_repo: GitRepo, tmp_path: Path
) -> None:
    """`properties.install` (patch-controlled through the head's requirements) downloads over TCP, but cannot read
    the checkout's persisted token or connect to a UNIX socket: the command succeeds only if all three hold."""
    config = persist_token(git_repo.path)
    with listening() as (seen, port, sock):
        connect_unix = f"import socket; socket.socket(socket.AF_UNIX).connect({str(sock)!r})"
        connect_tcp = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5).close()"
        install = (
            f"cat /dev/null && ! cat {config} > /dev/null 2>&1"
            f' && ! "$EVIDENCE_GATE_PYTHON" -c "{connect_unix}" 2>/dev/null'
            f' && "$EVIDENCE_GATE_PYTHON" -c "{connect_tcp}"'
        )
        red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1, install=install)
        git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
        receipt = judge(git_repo, tmp_path)
        deadline = time.monotonic() + 5
        while len(seen) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    # The install step runs on the baseline tree and the head tree (steering compares the same seeds on both).
    assert seen == ["tcp", "tcp"], seen
    assert TOKEN not in json.dumps(receipt)


# Run as root, then as `nobody` (the interpreter's modules loaded first: /root, where it may live, is 0700).
AS_NOBODY = """
import codecs, ctypes, errno, json, os, resource, struct, sys
from evidence_gate.sealed.worker import confinement
codecs.lookup("ascii")
libc = ctypes.CDLL(None, use_errno=True)
resource.setrlimit(resource.RLIMIT_NPROC, (64, 64))
def status(name):
    return int(next(l for l in open("/proc/self/status") if l.startswith(name + ":")).split()[1], 16)
def bound():
    try:
        return confinement.bound_tasks(64)
    except confinement.Unconfined as exc:
        return "refused: " + str(exc)
def forks_until_refused():
    pids, why = [], ""
    try:
        for _ in range(100):
            pid = os.fork()
            if pid == 0:
                import time
                time.sleep(5)
                os._exit(0)
            pids.append(pid)
    except OSError as exc:
        why = errno.errorcode[exc.errno]
    for pid in pids:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    return len(pids), why
"""


def _as_nobody(code: str) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", AS_NOBODY + code], capture_output=True, text=True, check=False, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    value = json.loads(proc.stdout.splitlines()[-1])
    assert isinstance(value, dict)
    return value


@pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to nobody")
def test_a_worker_in_a_user_namespace_of_its_own_is_bound_not_refused() -> None:
    """The worker as `nobody` in a user namespace it made (for its network) holds every capability there, yet none
    in the initial namespace, where the kernel asks: the bound binds (forks stop below 64 with EAGAIN), so the
    worker runs instead of refusing as if CAP_SYS_RESOURCE exempted it."""
    seen = _as_nobody(
        "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
        "assert libc.unshare(0x10000000) == 0, os.strerror(ctypes.get_errno())\n"
        "print(json.dumps({'caps': status('CapEff'), 'initial': confinement.in_initial_user_namespace(),"
        " 'bound': bound(), 'forks': forks_until_refused()}))\n"
    )
    assert seen["caps"] & confinement.EXEMPTING == confinement.EXEMPTING and not seen["initial"], seen
    assert seen["bound"] == "RLIMIT_NPROC 64 on uid 65534", seen
    forked, why = seen["forks"]
    assert forked < 64 and why == "EAGAIN", seen


@pytest.mark.skipif(os.geteuid() != 0, reason="drops from root to nobody")
def test_capabilities_in_the_initial_namespace_still_exempt_and_are_refused() -> None:
    """`nobody` keeping CAP_SYS_ADMIN in the initial namespace is exempt from the limit: refused by name, and the
    measurement alone sees it too (a fork at a soft limit of 0 succeeds), as it does for root. (CAP_SYS_ADMIN, not
    CAP_SYS_RESOURCE: this machine's bounding set lacks the latter, and the kernel exempts for either.)"""
    seen = _as_nobody(
        "root_probe = confinement._limit_binds()\n"
        "libc.prctl(8, 1, 0, 0, 0)\n"  # PR_SET_KEEPCAPS: keep the permitted set across the uid change
        "os.setgroups([]); os.setresgid(65534, 65534, 65534); os.setresuid(65534, 65534, 65534)\n"
        "kept = 1 << 21\n"
        "header = ctypes.create_string_buffer(struct.pack('=Ii', 0x20080522, 0), 8)\n"
        "data = ctypes.create_string_buffer(struct.pack('=IIIIII', kept, kept, 0, 0, 0, 0), 24)\n"
        "assert libc.syscall(126, header, data) == 0\n"
        "print(json.dumps({'caps': status('CapEff'), 'bound': bound(), 'probe': confinement._limit_binds(),"
        " 'root_probe': root_probe}))\n"
    )
    assert seen["caps"] == 1 << 21, seen
    assert seen["bound"].startswith("refused: the sealed worker holds CAP_SYS_RESOURCE or CAP_SYS_ADMIN"), seen
    assert seen["probe"] == seen["root_probe"] == "a fork at a soft limit of 0 succeeded", seen
