"""The trusted side's result channel: hostile event streams are rejected, never trusted or crashing."""

from __future__ import annotations

import os
import threading

import pytest

from evidence_gate.sealed.run import MAX_LINE, WorkerResult, _reader


def _read(payload: bytes, token: str = "") -> WorkerResult:
    read_fd, write_fd = os.pipe()
    result = WorkerResult("w")
    thread = threading.Thread(target=_reader, args=(read_fd, result, lambda _e: None, token))
    thread.start()
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)
    thread.join(timeout=10)
    return result


def test_good_events_are_read() -> None:
    """Well-formed JSON lines become events."""
    result = _read(b'{"ev": "start", "seed": 1}\n{"ev": "finished", "exitstatus": 0}\n')
    assert [e["ev"] for e in result.events] == ["start", "finished"] and not result.problems


def test_lines_without_the_run_token_are_problems() -> None:
    """With a run token, a line carrying another token or none is a problem, and the token is not kept."""
    result = _read(
        b'{"ev": "finished", "exitstatus": 0, "tok": "forged"}\n{"ev": "finished", "exitstatus": 0}\n'
        b'{"ev": "start", "seed": 1, "tok": "run"}\n',
        token="run",
    )
    assert result.events == [{"ev": "start", "seed": 1}], result.events
    assert sum("without the run's token" in p for p in result.problems) == 2, result.problems


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b'{"ev": "result", "examples": NaN}\n', "not acceptable JSON"),
        (b'{"ev": "finished", "ev": "finished"}\n', "not acceptable JSON"),
        (b"[" * 5000 + b"]" * 5000 + b"\n", "not acceptable JSON"),
        (b'["ev"]\n', "not an event object"),
        (b'{"ev": "x", "pad": "' + b"a" * (MAX_LINE + 10) + b'"}\n', "exceeded"),
        (b'{"ev": "finished"', "ended mid-line"),
        (b'{"ev": "finish", "exitstatus": 0}\n', "names an event the gate does not know"),
        (b'{"ev": "Finished", "exitstatus": 0}\n', "names an event the gate does not know"),
    ],
)
def test_hostile_streams_are_problems(payload: bytes, problem: str) -> None:
    """NaN, duplicate keys, deep nesting, non-objects, huge lines, torn lines and event names that are not in the
    protocol are recorded as problems."""
    result = _read(payload)
    assert any(problem in p for p in result.problems), result.problems
    assert result.finished is None
