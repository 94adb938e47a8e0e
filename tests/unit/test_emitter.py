"""The worker's side of the result channel: signed lines in order, also when a line is emitted while one is written."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest

from evidence_gate.sealed.run import Signed, WorkerResult, _reader
from evidence_gate.sealed.worker import worker

KEY = "0123456789abcdef0123456789abcdef"


def _read(fd: int, key: str = KEY) -> WorkerResult:
    result = WorkerResult("w")
    thread = threading.Thread(target=_reader, args=(fd, result, lambda _e: None, Signed(key)))
    thread.start()
    thread.join(timeout=10)
    return result


def test_lines_are_signed_in_order_and_read_back() -> None:
    read_fd, write_fd = os.pipe()
    emit = worker.Emitter(write_fd, KEY)
    for seed in range(3):
        emit({"ev": "start", "seed": seed})
    os.close(write_fd)
    result = _read(read_fd)
    assert result.problems == [] and [e["seed"] for e in result.events] == [0, 1, 2]


def test_a_line_emitted_while_one_is_written_comes_after_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Review: a finalizer or signal handler that emits on the thread already writing (the line recorder reporting a
    changed line a `__del__` runs) deadlocked on the lock; it is queued and written next, in its place."""
    read_fd, write_fd = os.pipe()
    emit = worker.Emitter(write_fd, KEY)
    real = worker.sign
    nested: list[int] = []

    def sign_and_interrupt(key: bytes, count: int, body: bytes) -> Any:
        if not nested:
            nested.append(count)
            emit({"ev": "lines", "path": "src/calc.py", "line": 3})  # as a finalizer would, mid-write
        return real(key, count, body)

    monkeypatch.setattr(worker, "sign", sign_and_interrupt)
    done = threading.Event()
    thread = threading.Thread(target=lambda: (emit({"ev": "start", "seed": 1}), done.set()), daemon=True)
    thread.start()
    assert done.wait(10), "the nested emit deadlocked"
    os.close(write_fd)
    result = _read(read_fd)
    assert result.problems == [], result.problems
    assert [e["ev"] for e in result.events] == ["start", "lines"], json.dumps(result.events)


def test_a_forked_child_sends_nothing() -> None:
    """A process the code under test forks shares the pipe, not the count: it writes nothing."""
    read_fd, write_fd = os.pipe()
    emit = worker.Emitter(write_fd, KEY)
    emit({"ev": "start", "seed": 1})
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        emit({"ev": "start", "seed": 99})
        os._exit(0)
    os.waitpid(pid, 0)
    emit({"ev": "start", "seed": 2})
    os.close(write_fd)
    result = _read(read_fd)
    assert result.problems == [] and [e["seed"] for e in result.events] == [1, 2]
