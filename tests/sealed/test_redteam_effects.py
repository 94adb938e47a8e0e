"""Hooks the code under test installs to beat the seal from inside (issue 17, item 1), found by their effect.

The property-lane instances (a trace reached through bdb, pydoc, an entry point, pickle, logging's resolver, a string
annotation, a doctest, `builtins.__import__`, `vars()` of an aliased module; thread hooks, gc callbacks, signal
handlers, ctypes) are cases in tests/property_cases/ (`trace-*`, `hook-*`); here the digest worker, and the
audit hook itself in a fresh interpreter (an audit hook can never be removed, so never in this test process).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from support.property_repo import base_files, judge, sealed_only
from support.repo_builder import GitRepo

SRC = str(Path(__file__).resolve().parents[2] / "src")
PRODUCER = "def produce(value):\n    return {'doubled': [x * 2 for x in value]}\n"
# A wrong producer that installs a trace on the digest worker's own frame: when the worker holds the producer's
# output, the trace swaps in the right one, so the worker hashed a value the producer never returned.
TRACING_PRODUCER = """\
import pydoc


def _fix(frame, event, arg):
    if event == "line" and isinstance(frame.f_locals.get("output"), dict):
        frame.f_locals["output"] = {"doubled": [x * 2 for x in frame.f_locals["record"]["input"]]}
    return _fix


def produce(value):
    caller = pydoc.locate("sys._get" + "frame")(1)
    caller.f_trace = _fix
    try:
        pydoc.locate("sys.set" + "trace")(lambda *a: None)
    except Exception:
        pass
    return {"doubled": [x + 2 for x in value]}
"""


def test_digest_producer_cannot_trace_the_worker(git_repo: GitRepo, tmp_path: Path) -> None:
    """A producer that steps into the digest worker's frame with a trace function: refused, and a mismatch."""
    expected = hashlib.sha256(json.dumps({"doubled": [2, 4]}, separators=(",", ":")).encode()).hexdigest()
    digests = {"version": 1, "records": [{"id": "two", "input": [1, 2], "output_sha256": expected}]}
    files = base_files(fresh_seeds=0)
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["fixtures"] = {"producer": "calc:produce"}
    files.update(
        {
            ".evidence-gate.yml": json.dumps(config),
            "fixtures/digests.json": json.dumps(digests),
            "src/calc.py": "def double(x):\n    return x * 2\n\n\n" + PRODUCER,
        }
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("producer", {"src/calc.py": "def double(x):\n    return x * 2\n\n\n" + TRACING_PRODUCER})
    receipt = judge(git_repo, tmp_path)
    assert receipt["ok"] is False, receipt["violations"]
    alone = sealed_only(git_repo, tmp_path / "alone").violations
    rows = {v.row for v in alone}
    assert {"run-integrity", "fixture-digest-mismatch"} <= rows, alone
    assert any("trace function" in v.message and "src/calc.py:" in v.message for v in alone), alone


# Runs in a fresh interpreter: the worker's Effects, then whatever `body` does; prints each finding.
HARNESS = """\
import json, sys
sys.path.insert(0, {src!r})
from evidence_gate.sealed.worker.effects import Effects
found = []
effects = Effects(lambda event: found.extend(event["found"]), "/nowhere")
effects.install()
outcome = "allowed"
try:
{body}
except RuntimeError as exc:
    outcome = "refused"
effects.check("at the end")
print(json.dumps({{"outcome": outcome, "found": found}}))
"""


def _run(body: str) -> dict[str, object]:
    code = HARNESS.format(src=SRC, body="".join(f"    {line}\n" for line in body.strip().splitlines()))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.splitlines()[-1]))


def test_clearing_a_hook_is_no_finding() -> None:
    """doctest restores the trace it found (none) with `sys.settrace(None)`: an honest doctest is not a finding."""
    got = _run(
        """
import doctest, sys
def f():
    '''
    >>> 1 + 1
    2
    '''
doctest.run_docstring_examples(f, {})
sys.settrace(None)
sys.setprofile(None)
"""
    )
    assert got == {"outcome": "allowed", "found": []}, got


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("import sys\nsys.settrace(lambda *a: None)", "trace function"),
        ("import threading\nthreading.setprofile(lambda *a: None)", "thread profile hook"),
        # Written straight into the module, with the state check's own reader rebound to say there is none.
        ("import sys, threading\nthreading._trace_hook = print\nsys.gettrace = lambda: None", "thread trace hook"),
        ("import sys\nsys.addaudithook(lambda *a: None)", "audit hook"),
        (
            'exec(compile("import threading; threading.settrace(lambda *a: None)", "/p/calc.py", "exec"))\n'
            "import threading\nt = threading.Thread(target=print)\nt.start()\nt.join()",
            "(the thread hook <lambda> defined at /p/calc.py:1, as a thread started)",
        ),
        ("import ctypes\nctypes.pythonapi.PyEval_SetTrace", "PyEval_SetTrace"),
        # Compiled under a project file's name: the `-c` harness itself counts as the worker's own bootstrap.
        ('exec(compile("import gc; gc.callbacks.append(lambda *a: None)", "/p/calc.py", "exec"))', "garbage-collector"),
        (
            'exec(compile("import signal; signal.signal(signal.SIGUSR1, lambda *a: None)", "/p/c.py", "exec"))',
            "SIGUSR1",
        ),
    ],
)
def test_each_hook_is_found(body: str, what: str) -> None:
    """Each hook is refused or found by the state check, and named."""
    got = _run(body)
    assert any(what in str(f) for f in got["found"]), got  # type: ignore[attr-defined]


@pytest.mark.skipif(not hasattr(sys, "monitoring"), reason="sys.monitoring is Python 3.12+ (the container has it)")
def test_monitoring_callbacks_are_refused() -> None:
    """A sys.monitoring tool with a line callback (3.12+): the callback is refused, the tool id found."""
    got = _run(
        """
import sys
m = sys.monitoring
m.use_tool_id(3, "stepper")
m.register_callback(3, m.events.LINE, lambda code, line: None)
"""
    )
    assert got["outcome"] == "refused", got
    found = " ".join(map(str, got["found"]))  # type: ignore[call-overload]
    assert "sys.monitoring callback" in found and "sys.monitoring tool 3" in found, got


# A harness module (under `_pytest`, so every attribute is watched), its identity snapshot, and the worker's audit
# hook: `body` rebinds a function part, and the check that follows must name it.
PROBED = """\
import json, sys, types
sys.path.insert(0, {src!r})
from evidence_gate.sealed.worker import harness_guard
from evidence_gate.sealed.worker.effects import Effects
probe = types.ModuleType("_pytest._guard_probe")
exec("def helper(x, y=1):\\n    return x + y\\ndef other(x, *, y=2):\\n    return x - y\\n", vars(probe))
sys.modules["_pytest._guard_probe"] = probe
effects = Effects(lambda event: None, "/nowhere")
effects.install()
snap = harness_guard.take()
"""
WRITES = (
    PROBED
    + """\
reads = []
sys.addaudithook(lambda e, a: reads.append(a[1]) if e == "object.__getattr__" else None)
first = snap.changed(None, effects.part_writes())
def made(x):  # what Hypothesis does to the functions it creates: not a watched function, so no re-read
    return x
made.__defaults__, made.__code__ = (1,), probe.other.__code__
del reads[:]
second = snap.changed(None, effects.part_writes())
quiet = [r for r in reads if r in ("__code__", "__defaults__", "__kwdefaults__")]
{body}
print(json.dumps({{"first": first, "second": second, "quiet_reads": len(quiet), "after": snap.changed(None, effects.part_writes())}}))
"""
)


@pytest.mark.parametrize(
    ("body", "name"),
    [
        ("probe.helper.__code__ = probe.other.__code__", "helper#__code__"),
        ("setattr(probe.helper, '__code__', probe.other.__code__)", "helper#__code__"),
        ("object.__setattr__(probe.helper, '__code__', probe.other.__code__)", "helper#__code__"),
        ("types.FunctionType.__code__.__set__(probe.helper, probe.other.__code__)", "helper#__code__"),
        ("probe.helper.__defaults__ = (5,)", "helper#__defaults__"),
        ("del probe.helper.__defaults__", "helper#__defaults__"),
        ("probe.other.__kwdefaults__ = {'y': 0}", "other#__kwdefaults__"),
        ("probe.other.__kwdefaults__ = None", "other#__kwdefaults__"),
    ],
)
def test_a_function_part_rebound_between_checks_is_found_though_the_check_skips_unwritten_parts(
    body: str, name: str
) -> None:
    """The identity check reads the harness functions' code and defaults (each read an audited event: a few ms a
    check) only when the audit hook saw such a write; every way Python has to rebind one is such a write."""
    code = WRITES.format(src=SRC, body=body)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["first"] == [] and got["second"] == [], got
    assert got["quiet_reads"] == 0, got  # no watched function written since the first check: no part read again
    assert f"_pytest._guard_probe.{name}" in got["after"], got


def test_a_signal_handler_installed_after_a_clean_check_is_found_and_put_back() -> None:
    """The signal check compares all handlers at once with the last clean check's; a later handler still differs."""
    got = _run(
        """
import signal
effects.check("first")
before = signal.getsignal(signal.SIGUSR2)
exec(compile("import signal; signal.signal(signal.SIGUSR2, lambda *a: None)", "/p/late.py", "exec"))
effects.check("second")
assert signal.getsignal(signal.SIGUSR2) == before, "the handler was not put back"
effects.check("third")
"""
    )
    assert [f for f in got["found"] if "SIGUSR2" in str(f)] == [
        "a handler for SIGUSR2 (<lambda> defined at /p/late.py:1) was installed second"
    ], got


# A write of a function part that raises no audit event: `PyFunction_SetDefaults` from C (`_testcapi` has
# `function_set_defaults` from 3.12, the image's 3.13 included), or the function's pointer written through ctypes.
UNAUDITED = (
    PROBED
    + """\
import ctypes
from evidence_gate.sealed.worker.plugin import SealedPlugin
first = snap.changed(None, effects.part_writes())
new = (5,)
if {how!r} == "testcapi":
    import _testcapi
    _testcapi.function_set_defaults(probe.helper, new)
else:
    ctypes.c_ssize_t.from_address(id(new)).value += 1  # the reference the function now holds
    slots = [ctypes.c_void_p.from_address(id(probe.helper) + 8 * i) for i in range(2, 24)]
    next(s for s in slots if s.value == id(probe.helper.__defaults__)).value = id(new)
assert probe.helper.__defaults__ is new and probe.helper(1) == 6
between = snap.changed(None, effects.part_writes())
events = []
stub = types.SimpleNamespace(identity=snap, effects=effects, excused={{}}, emit=events.append)
stub._tampered = types.MethodType(SealedPlugin._tampered, stub)
stub._report_foreign_hooks = lambda config: None
SealedPlugin.pytest_sessionfinish(stub, types.SimpleNamespace(config=None), 0)
print(json.dumps({{"first": first, "between": between, "finished": events[-1]}}))
"""
)


@pytest.mark.parametrize("how", ["ctypes", "testcapi"])
def test_a_function_part_written_with_no_audit_event_is_still_found_by_the_session_s_last_check(how: str) -> None:
    """The per-item check skips the function parts unless the audit hook saw one written; a write that raises no
    audit event (C's `PyFunction_SetDefaults`, reached through `_testcapi` on 3.12+, or ctypes) is then not seen
    between items, so the check at the session's end reads every part, as every check did before the skip."""
    if how == "testcapi":
        testcapi = pytest.importorskip("_testcapi")
        if not hasattr(testcapi, "function_set_defaults"):
            pytest.skip("_testcapi.function_set_defaults is new in Python 3.12")
    code = UNAUDITED.format(src=SRC, how=how)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["first"] == [] and got["between"] == [], got  # what the skip accepts between two items
    assert got["finished"]["tampered"] == ["_pytest._guard_probe.helper#__defaults__"], got
