"""The gate's own line recorder: which of the patch's changed lines of code under test the locked properties ran.

Worker-side (standard library only). Started by the worker after the harness's imports and before any repository
path is on `sys.path` (so module-level lines run at import count, as coverage.py counts them); the seal's audit hook
lets exactly its own start and stop through. Python 3.11 has no `sys.monitoring`, so it is a `sys.settrace`
function, kept cheap: the global function first looks up the frame's module `__file__` (read with no audited event,
where `f_code` is one) in the files still to report, and skips the frame when it names another file, so any other
call costs one look-up; it returns a line tracer only for a code object of a changed file, and only when that code
object equals one compiled here, before any repository code ran, from the head's text the gate put in the job
(`compile` with the file's own path, as importlib compiles it). Code the code under test compiled, built or
unmarshalled under a changed file's name therefore never counts; neither does a file the code under test rewrote on
disk. A file whose changed lines all ran is no longer traced, and once every changed line ran the recorder stops (at
the next state check): nothing is left to learn.

A line is reported (a `lines` event) the first time it runs; the set of lines still to report is the only state,
so code under test that reaches it can only make fewer lines count. Turning the recorder off (`sys.settrace(None)`
is refused while it records), replacing it, or setting a frame's own trace function (on a frame still running at a
state check) is found by `problems()`, which the seal's state checks call: a finding is `run-integrity`, never a
pass. Threads the code under test starts are not traced (their lines do not count).
"""

from __future__ import annotations

import base64
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

from .protocol import EV, Event

# Bound before repository code runs (the seal's effects module then wraps `sys.settrace`).
_SETTRACE = sys.settrace
_GETTRACE = sys.gettrace
_GETFRAME = sys._getframe  # the stack the state check walks for frame trace functions
_FRAME = types.FrameType
_CODE = types.CodeType
_DICT_GET = dict.get
OFF = "turn off the gate's line recorder (sys.settrace(None) while the gate records which changed lines ran)"
MAX_PROBLEMS = 5


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and every code object nested in its constants."""
    yield code
    for const in code.co_consts:
        if isinstance(const, _CODE):
            yield from _codes(const)


class LineRecorder:
    """One worker's recorder over `files`: absolute path -> {"path": repo-relative, "source": base64, "lines"}."""

    def __init__(self, files: dict[str, dict[str, Any]], emit: Callable[[dict[str, Any]], None]) -> None:
        self.emit = emit
        self.problems_found: list[str] = []
        self.tracers: dict[str, Callable[..., Any]] = {}
        self.active: dict[str, Callable[..., Any]] = {}  # the files with a changed line still to report
        self.genuine: dict[str, frozenset[types.CodeType]] = {}
        for path, spec in files.items():
            try:
                module = compile(base64.b64decode(spec["source"]), path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError, TypeError, KeyError, RecursionError, MemoryError):
                continue  # a file that does not compile cannot run either: none of its lines count
            self.genuine[path] = frozenset(_codes(module))
            self.active[path] = self.tracers[path] = self._line_tracer(
                path, str(spec["path"]), {int(n) for n in spec["lines"]}
            )
        self.trace = self._global_tracer()
        self.installed = False
        self.stopped = False
        self._own = frozenset(self.tracers.values())  # the frame trace functions the recorder itself sets

    def _line_tracer(self, path: str, rel: str, pending: set[int]) -> Callable[..., Any]:
        emit, active = self.emit, self.active

        def line_tracer(frame: types.FrameType, event: str, arg: object) -> Any:
            if event == "line" and type(frame) is _FRAME:
                number = frame.f_lineno
                if number in pending:
                    pending.discard(number)
                    emit({EV: Event.LINES, "path": rel, "line": number})
                    if not pending:
                        active.pop(path, None)  # every changed line of this file ran: no need to trace it further
            return line_tracer

        return line_tracer

    def _global_tracer(self) -> Callable[..., Any]:
        active, genuine = self.active, self.genuine
        known: dict[int, tuple[types.CodeType, Any]] = {}  # id -> (code, its tracer or None); the code pins the id

        def global_tracer(frame: types.FrameType, event: str, arg: object) -> Any:
            # The module's `__file__` first: reading `f_code` is an audited event (a call of the seal's audit hook
            # on every traced call), `f_globals` is not. A frame whose globals name a file with nothing left to
            # report is not traced (fewer lines, never more); the code object is still judged below (`genuine`).
            file = _DICT_GET(frame.f_globals, "__file__")
            if type(file) is str and file not in active:
                return None
            code = frame.f_code
            tracer = active.get(code.co_filename)
            if tracer is None:
                return None  # the cost on every other call: one look-up
            seen = known.get(id(code))
            if seen is None or seen[0] is not code:
                seen = (code, tracer if code in genuine[code.co_filename] else None)
                known[id(code)] = seen
            return seen[1]

        return global_tracer

    def _foreign_frame_trace(self, frame: types.FrameType) -> None:
        """A frame carries a trace function the gate did not set: code under test set `f_trace` itself."""
        if len(self.problems_found) < MAX_PROBLEMS:
            code = frame.f_code
            self.problems_found.append(
                f"a frame trace function the gate did not install (f_trace) was set on a frame of "
                f"{code.co_filename}:{frame.f_lineno} ({code.co_name})"
            )

    def install(self) -> None:
        """Start recording in this thread (the seal's audit hook lets this call through, and no other)."""
        _SETTRACE(self.trace)
        self.installed = True

    def stop_when_done(self) -> None:
        """Every changed line was reported: nothing is left to learn, so the trace function goes (and its cost)."""
        if self.installed and not self.active and self.recording():
            self.installed, self.stopped = False, True
            _SETTRACE(None)

    def pause(self) -> None:
        """Stop tracing around a call of the harness that runs no repository code (pytest's assertion rewriter parsing
        and compiling a test file's source: under the trace function it costs about 0.7 s of CPU a worker on attrs'
        suite). Code under test that calls it only makes fewer of its own lines count; one that never resumes is
        found by `problems` (the recorder is no longer the trace function)."""
        if self.installed and self.recording():
            _SETTRACE(None)

    def resume(self) -> None:
        """Trace again after `pause` (nothing when the recorder stopped or something else holds the trace)."""
        if self.installed and _GETTRACE() is None:
            _SETTRACE(self.trace)

    def own_code(self) -> frozenset[types.CodeType]:
        """The code of the calls of `sys.settrace` the audit hook allows: installing, pausing, resuming and stopping
        the recorder."""
        return frozenset(
            {
                LineRecorder.install.__code__,
                LineRecorder.stop_when_done.__code__,
                LineRecorder.pause.__code__,
                LineRecorder.resume.__code__,
            }
        )

    def recording(self) -> bool:
        """Whether the recorder is still this thread's trace function."""
        return _GETTRACE() is self.trace

    def problems(self) -> list[str]:
        """What the code under test did to the recorder since the last call: turned it off, replaced it, or set a
        frame trace function of its own (on a frame still running)."""
        if self.installed and not self.recording():
            current = _GETTRACE()
            what = "turned off (no trace function)" if current is None else f"replaced by {current!r}"[:200]
            self.problems_found.append(f"the gate's line recorder was {what}, so no line count is evidence")
            self.installed = False  # reported once
        own = self._own
        # Frame trace functions act only while a trace function is set: once the recorder is off (stopped when done,
        # or found turned off above) one set on a running frame is inert, and a new trace function is refused.
        frame: types.FrameType | None = _GETFRAME(1) if self.installed else None
        while frame is not None:
            if frame.f_trace is not None and frame.f_trace not in own:
                self._foreign_frame_trace(frame)
                frame.f_trace = None
            frame = frame.f_back
        found, self.problems_found = self.problems_found, []
        if not found:
            self.stop_when_done()
        return found
