"""The trusted side's result channel: hostile event streams are rejected, never trusted or crashing."""

from __future__ import annotations

import os
import threading

import pytest

from evidence_gate.sealed.run import MAX_LINE, UNSIGNED, Signed, WorkerResult, _reader
from evidence_gate.sealed.worker.protocol import sign

KEY = "0123456789abcdef0123456789abcdef"


def _read(payload: bytes, key: str = "") -> WorkerResult:
    read_fd, write_fd = os.pipe()
    result = WorkerResult("w")
    thread = threading.Thread(target=_reader, args=(read_fd, result, lambda _e: None, Signed(key) if key else None))
    thread.start()
    with os.fdopen(write_fd, "wb") as pipe:
        pipe.write(payload)
    thread.join(timeout=10)
    return result


def test_good_events_are_read() -> None:
    """Well-formed JSON lines become events."""
    result = _read(b'{"ev": "start", "seed": 1}\n{"ev": "finished", "exitstatus": 0}\n')
    assert [e["ev"] for e in result.events] == ["start", "finished"] and not result.problems


def _signed(*bodies: bytes, start: int = 0, key: str = KEY) -> bytes:
    return b"".join(sign(key.encode(), start + i, b) + b" " + b + b"\n" for i, b in enumerate(bodies))


START, FINISHED = b'{"ev": "start", "seed": 1}', b'{"ev": "finished", "exitstatus": 0}'


def test_signed_lines_are_read_in_their_place() -> None:
    """Each line signed with the run's key over its number in the stream is an event."""
    result = _read(_signed(START, FINISHED), KEY)
    assert [e["ev"] for e in result.events] == ["start", "finished"] and not result.problems


@pytest.mark.parametrize(
    "payload",
    [
        _signed(START, FINISHED, key="f" * 32),  # another key
        START + b"\n" + _signed(FINISHED),  # unsigned
        _signed(START) + _signed(FINISHED, start=2),  # a line taken out of the stream
        _signed(FINISHED, start=1) + _signed(START),  # two lines swapped
        _signed(START) + _signed(START.replace(b"1", b"2"), start=1)[:5] + b"0" + _signed(FINISHED, start=1)[6:],
        _signed(START, b'{"ev": "finished", "exitstatus": 1}').replace(b'"exitstatus": 1', b'"exitstatus": 0'),
    ],
    ids=["other-key", "unsigned", "dropped", "swapped", "forged-signature", "changed"],
)
def test_a_line_not_signed_in_its_place_ends_what_is_taken(payload: bytes) -> None:
    """A line another key signed, an unsigned one, one taken out, moved or changed on the way: one problem, and
    nothing after it is taken (no later line is in its place)."""
    result = _read(payload, KEY)
    assert result.problems == [UNSIGNED], result.problems
    assert result.finished is None, result.events


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
