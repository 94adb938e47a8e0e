"""The line recorder's cost and its one-way judgement, in a fresh interpreter (its trace function and the audit hook
that counts `f_code` reads stay out of the test process)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

SCRIPT = r"""
import base64, json, sys, types
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from evidence_gate.sealed.worker.line_recorder import LineRecorder

changed = sys.argv[2] + "/changed.py"
source = open(changed, "rb").read()
events = []
recorder = LineRecorder({changed: {"path": "changed.py", "source": base64.b64encode(source).decode(), "lines": [2, 6]}},
                        events.append)
reads = [0]
def count(event, args):
    if event == "object.__getattr__" and args[1] == "f_code":
        reads[0] += 1
sys.addaudithook(count)
import other
recorder.install()
import changed
before = reads[0]
for _ in range(500):
    other.work(3)
elsewhere = reads[0] - before
# The changed file's code, run with another module's globals: it does not count (fewer lines, never more).
types.FunctionType(changed.double.__code__, vars(other))(2)
borrowed = sorted(e["line"] for e in events)
changed.double(2)
sys.settrace(None)
print(json.dumps({"elsewhere": elsewhere, "borrowed": borrowed, "lines": sorted(e["line"] for e in events)}))
"""


def test_calls_outside_the_changed_files_cost_no_audited_read_and_borrowed_globals_do_not_count(
    tmp_path: Path,
) -> None:
    (tmp_path / "changed.py").write_text("def double(x):\n    return 2 * x\n\n\ndef unused():\n    return 0\n")
    (tmp_path / "other.py").write_text("def helper(x):\n    return x + 1\n\n\ndef work(x):\n    return helper(x)\n")
    done = subprocess.run(
        [sys.executable, "-I", "-B", "-c", SCRIPT, str(SRC), str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    found = json.loads(done.stdout)
    # 1,000 traced calls of another module: not one `f_code` read (each is a call of the seal's audit hook).
    assert found["elsewhere"] == 0
    assert found["borrowed"] == []
    assert found["lines"] == [2]
