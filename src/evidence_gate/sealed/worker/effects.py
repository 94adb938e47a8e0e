"""Effects the code under test may not have inside the sealed run, found by what they do rather than by name.

Worker-side (standard library only). A trace or profile function sees every frame the interpreter runs and can
step a locked test's line past its `assert` or rewrite a local (a digest worker's result); a monitoring callback
(3.12+) can do the same. The code under test reaches them through names no scan can list (`bdb`, `pydoc.locate`,
an entry point, `pickle`, a string annotation, a docstring, `vars()` of an aliased module), so the seal judges the
effect instead:

- an audit hook, installed before any repository code runs, refuses every `sys.settrace`, `sys.setprofile` (so
  `threading.settrace`, which they serve at thread start, too), `sys.monitoring.register_callback`, a further audit
  hook, and any lookup of the interpreter's own C API (`Py*`) through ctypes (`PyEval_SetTrace`,
  `PyFrame_LocalsToFast`), and reports each attempt with the file and line of the code under test that made it;
- a state check (before each test, after each example, at the session's end, around each digest) finds a trace,
  profile or threading hook, a monitoring tool, a garbage-collector callback or a signal handler the gate did not
  install, reports it and removes it.

The gate installs one of these itself: the line recorder of a head property worker (`line_recorder`), before this
hook; while it records, even `sys.settrace(None)` is refused, and the state check reports it turned off or replaced
and any frame trace function it did not set. Hypothesis' explain phase, the one other user of a tracer, is not run.
Each finding is an `effects` event; the gate turns it into a `run-integrity` row.
"""

from __future__ import annotations

import _signal  # type: ignore[import-not-found]  # the C module behind `signal`
import contextlib
import gc
import operator
import os
import signal
import sys
import sysconfig
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

from .harness_guard import FUNCTION_PARTS, GETFRAME, HARNESS, MODULES
from .line_recorder import OFF, LineRecorder
from .protocol import EV, Event

# Audit events refused outright, and what each one would have installed (in the user's terms).
REFUSED = {
    "sys.settrace": "install a trace function (sys.settrace: it can step a test past its assert and rewrite locals)",
    "sys.setprofile": "install a profile function (sys.setprofile: it sees and can rewrite every frame)",
    "sys.addaudithook": "install an audit hook (sys.addaudithook)",
    "sys.monitoring.register_callback": "install a sys.monitoring callback (it can trace every line the tests run)",
}
CTYPES_LOOKUP = "ctypes.dlsym"
# Bound before any repository code runs (the code under test could rebind `signal.getsignal`, `sys.gettrace` or
# `sys.getprofile` to hide what it installed).
_GETSIGNAL = _signal.getsignal
_GETTRACE = sys.gettrace
_GETPROFILE = sys.getprofile
_THREADING = vars(threading)  # the module's own namespace: its hooks are read where `threading.settrace` writes them
# How CPython audits a write or deletion of a function's code and defaults (the only ways to rebind them).
WRITES = frozenset({"object.__setattr__", "object.__delattr__"})
# C API prefixes whose lookup through ctypes reaches the interpreter's internals (frames, tracing, memory).
C_API = ("Py", "_Py")
MAX_FINDINGS = 20
MONITORING_TOOLS = 6


class Refused(RuntimeError):
    """Raised into the code under test by the audit hook (a RuntimeError: `sys.addaudithook` then fails silently)."""


def _dirs(*files: str) -> tuple[str, ...]:
    return tuple(os.path.dirname(os.path.abspath(f)) + os.sep for f in files if f)  # noqa: PTH100, PTH120


def _loaded_harness_dirs() -> tuple[str, ...]:
    """The folders of the harness's top-level modules imported now."""
    files = [getattr(MODULES.get(n), "__file__", None) for n in HARNESS]
    return _dirs(*(str(f) for f in files if f))


class Effects:
    """The audit hook and the state checks of one worker; findings go to `emit` as `effects` events."""

    def __init__(self, emit: Callable[[dict[str, Any]], None], tree: str, recorder: LineRecorder | None = None) -> None:
        self.emit = emit
        # The gate's own trace function (the line recorder of a head property worker), or None: no trace allowed.
        self.recorder = recorder
        self.tree = tree.rstrip(os.sep)
        paths = sysconfig.get_paths()
        self.stdlib = _dirs(os.path.join(paths["stdlib"], "x"), os.path.join(paths["platstdlib"], "x"))  # noqa: PTH118
        self.reported: set[str] = set()
        self.count = 0  # every finding, repeated ones too (a run with one is not evidence)
        self.gc_callbacks = {id(c) for c in gc.callbacks}
        self._numbers = tuple(_readable_signals())
        self._handlers: tuple[object, ...] = ()  # the handlers the last signal check found, all the gate's
        self.signals = self._signals()
        self.installed = False
        self._part_writes: set[int] = set()
        self._harness: tuple[str, ...] | None = None  # the harness's folders, once `settle` fixed them

    def part_writes(self) -> set[int]:
        """The ids of the functions whose `__code__`, `__defaults__` or `__kwdefaults__` was written (or deleted)
        since the last call (Hypothesis rebinds those of the functions it creates); the harness identity check reads
        its functions' parts again only when one of its own is among them."""
        out: set[int] = set()
        pending = self._part_writes
        while pending:
            out.add(pending.pop())  # one at a time: a write from another thread lands here or in the next call
        return out

    # -- where a finding came from -------------------------------------------------------------------------------

    def settle(self) -> None:
        """Fix where the harness lives, once its modules are imported and before any repository code runs (the
        pytest plugin calls it): each full state check judged the callbacks it finds against folders read again from
        `sys.modules` (about 0.2 ms a check)."""
        self._harness = _loaded_harness_dirs()

    def _harness_dirs(self) -> tuple[str, ...]:
        return self._harness if self._harness is not None else _loaded_harness_dirs()

    def _foreign(self, filename: str, harness: tuple[str, ...]) -> bool:
        if filename.startswith(("<frozen ", *harness)) or filename == "<string>":
            return False
        in_stdlib = filename.startswith(self.stdlib) and not any(
            part in filename for part in (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)
        )
        return not in_stdlib

    def _rel(self, path: str) -> str:
        return path[len(self.tree) + 1 :] if self.tree and path.startswith(self.tree + os.sep) else path

    def where(self, frame: types.FrameType | None) -> str:
        """`at file:line` of the innermost frame outside the standard library and the harness, and the standard
        library route it went through (`through bdb.py:80`), or "" when no such frame is running."""
        harness = self._harness_dirs()
        route = ""
        for current in _stack(frame):
            name = current.f_code.co_filename
            if self._foreign(name, harness):
                through = f" through {route}" if route else ""
                return f" at {self._rel(name)}:{current.f_lineno}{through}"
            if not route and name.startswith(self.stdlib):
                route = f"{name.rsplit(os.sep, 1)[-1]}:{current.f_lineno}"
        return ""

    def _defined(self, obj: object) -> str:
        """Where a callable was defined (`defined at file:line`), or its repr."""
        for _ in range(4):  # a bound method, a partial, a callable object: down to the function
            inner = getattr(obj, "__func__", None) or getattr(obj, "func", None)
            if inner is None or inner is obj:
                break
            obj = inner
        code = getattr(obj, "__code__", None)
        if isinstance(code, types.CodeType):
            return f"{getattr(obj, '__qualname__', '?')} defined at {self._rel(code.co_filename)}:{code.co_firstlineno}"
        return repr(obj)[:120]

    def _gate_owned(self, obj: object) -> bool:
        """A callable of the harness or the standard library (pytest's, Hypothesis' gc timer, Python's own)."""
        for _ in range(4):
            inner = getattr(obj, "__func__", None) or getattr(obj, "func", None)
            if inner is None or inner is obj:
                break
            obj = inner
        code = getattr(obj, "__code__", None)
        if not isinstance(code, types.CodeType):
            return isinstance(obj, types.BuiltinFunctionType | int) or obj is None
        return not self._foreign(code.co_filename, self._harness_dirs())

    def found(self, what: str) -> None:
        """Report one finding, once."""
        self.count += 1
        if what in self.reported or len(self.reported) >= MAX_FINDINGS:
            return
        self.reported.add(what)
        self.emit({EV: Event.EFFECTS, "found": [what]})

    # -- the audit hook ------------------------------------------------------------------------------------------

    def install(self) -> None:
        """Add the audit hook (once, for the worker's whole life: audit hooks cannot be removed)."""
        if self.installed:
            return
        self.installed = True
        refused, lookup, c_api, report = REFUSED, CTYPES_LOOKUP, C_API, self._refuse
        # `sys.settrace(None)` / `sys.setprofile(None)` (doctest restores the trace it found, which is none) installs
        # nothing: those two go through a wrapper that lets only None through, and the hook knows its code.
        allowed = frozenset(_none_only(name) for name in ("settrace", "setprofile"))
        getframe = GETFRAME
        recorder = self.recorder
        recorder_code = recorder.own_code() if recorder is not None else frozenset()
        written, parts, writes = WRITES, frozenset(FUNCTION_PARTS), self._part_writes

        def audit(event: str, args: tuple[Any, ...]) -> None:
            if event in refused:
                caller = getframe(1)
                if recorder is not None and event == "sys.settrace" and caller.f_code in recorder_code:
                    return  # the gate's own line recorder, starting or stopping
                if caller.f_code in allowed and caller.f_locals.get("function") is None:
                    if recorder is not None and caller.f_code.co_name == "settrace" and recorder.recording():
                        report(OFF, event)  # while the gate records lines, even None would switch it off
                    return
                report(refused[event], event)
            elif event == lookup and len(args) > 1 and str(args[1]).startswith(c_api):
                report(f"reach the interpreter's C API ({args[1]}) through ctypes", event)
            elif event in written and len(args) > 1 and args[1] in parts:
                writes.add(id(args[0]))  # a function's code or defaults rebound: the identity check reads them again

        sys.addaudithook(audit)

    def _refuse(self, what: str, event: str) -> None:
        frame: types.FrameType | None = GETFRAME(2)
        if (
            frame is not None
            and frame.f_code.co_name in {"settrace", "setprofile"}
            and frame.f_code.co_filename == __file__
        ):
            frame = frame.f_back  # the None-only wrapper: its caller made the call
        at = self.where(frame)
        hook = getattr(threading, "_trace_hook" if event == "sys.settrace" else "_profile_hook", None)
        if not at and hook is not None:
            at = f" (the thread hook {self._defined(hook)}, as a thread started)"
        self.found(f"code under test tried to {what}{at}; the gate refused it")
        raise Refused(f"evidence-gate: {event} is not allowed in the sealed run")

    # -- the state check -----------------------------------------------------------------------------------------

    def check(self, when: str, *, full: bool = True) -> bool:
        """Look for hooks the gate did not install, report and remove each; True when there were none. `full=False`
        (after each example) checks only the trace, profile and monitoring hooks, the ones that act in between."""
        before = self.count
        for problem in self.recorder.problems() if self.recorder is not None else ():
            self.found(f"{problem} ({when})")
        if self._hooked():  # after each example: a few lookups when nothing is installed (the common case)
            for kind, current, clear in self._hooks():
                if current is not None:
                    self.found(f"a {kind} ({self._defined(current)}) was installed {when}")
                    clear()
        if full:
            self._check_gc(when)
            self._check_signals(when)
        return self.count == before

    def _hooked(self) -> bool:
        """Whether any trace, profile, thread or monitoring hook but the gate's own recorder is installed now."""
        trace = _GETTRACE()
        if trace is not None and (self.recorder is None or trace is not self.recorder.trace):
            return True
        hooks = _THREADING
        if _GETPROFILE() is not None or hooks.get("_trace_hook") is not None or hooks.get("_profile_hook") is not None:
            return True
        monitoring = getattr(sys, "monitoring", None)
        return monitoring is not None and any(monitoring.get_tool(t) is not None for t in range(MONITORING_TOOLS))

    def _hooks(self) -> Iterator[tuple[str, object, Callable[[], object]]]:
        trace = _GETTRACE()
        if self.recorder is not None and trace is self.recorder.trace:
            trace = None  # the gate's own recorder
        yield "trace function (sys.settrace)", trace, lambda: None
        yield "profile function (sys.setprofile)", _GETPROFILE(), lambda: None
        yield "thread trace hook (threading.settrace)", getattr(threading, "_trace_hook", None), _clear("_trace_hook")
        yield (
            "thread profile hook (threading.setprofile)",
            getattr(threading, "_profile_hook", None),
            _clear("_profile_hook"),
        )
        monitoring = getattr(sys, "monitoring", None)
        if monitoring is not None:
            for tool in range(MONITORING_TOOLS):
                name = monitoring.get_tool(tool)
                if name is not None:
                    yield f"sys.monitoring tool {tool} ({name!r})", name, _free(monitoring, tool)

    def _check_gc(self, when: str) -> None:
        for callback in list(gc.callbacks):
            if id(callback) in self.gc_callbacks or self._gate_owned(callback):
                continue
            self.found(f"a garbage-collector callback ({self._defined(callback)}) was added {when}")
            with contextlib.suppress(ValueError):
                gc.callbacks.remove(callback)

    def _signals(self) -> dict[int, object]:
        """Each signal's handler as the C module reports it (`signal.getsignal` converts every number to an enum
        member in Python, 64 times a check), for the signals whose handler could be read at start-up."""
        return dict(zip(self._numbers, map(_GETSIGNAL, self._numbers), strict=True))

    def _check_signals(self, when: str) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        handlers = tuple(map(_GETSIGNAL, self._numbers))
        if len(handlers) == len(self._handlers) and all(map(operator.is_, handlers, self._handlers)):
            return  # the same handlers as at the last check, which found them all the gate's
        for number, handler in zip(self._numbers, handlers, strict=True):
            if handler is self.signals.get(number) or self._gate_owned(handler):
                continue
            self.found(f"a handler for {signal.Signals(number).name} ({self._defined(handler)}) was installed {when}")
            with contextlib.suppress(OSError, ValueError, TypeError):
                signal.signal(number, self.signals.get(number) or signal.SIG_DFL)  # type: ignore[arg-type]
        self._handlers = tuple(map(_GETSIGNAL, self._numbers))  # after any handler put back


def _readable_signals() -> Iterator[int]:
    for number in signal.valid_signals():
        try:
            _GETSIGNAL(int(number))
        except (OSError, ValueError):
            continue
        yield int(number)


def _stack(frame: types.FrameType | None) -> Iterator[types.FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def _none_only(name: str) -> types.CodeType:
    """Replace `sys.<name>` by a function that calls it from a frame the audit hook knows (and lets through when the
    argument is None); returns that function's code."""
    original = getattr(sys, name)

    def none_only(function: object) -> None:
        original(function)

    none_only.__name__ = none_only.__qualname__ = name
    setattr(sys, name, none_only)
    return none_only.__code__


def _clear(name: str) -> Callable[[], object]:
    def clear() -> object:
        setattr(threading, name, None)
        return None

    return clear


def _free(monitoring: Any, tool: int) -> Callable[[], object]:
    def free() -> object:
        try:
            monitoring.set_events(tool, 0)
            monitoring.free_tool_id(tool)
        except ValueError:
            pass
        return None

    return free
