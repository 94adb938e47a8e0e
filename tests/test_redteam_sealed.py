"""Red-team tricks against the sealed run that need more than one patch commit or a special environment."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evidence_gate.assertion_hash import statement_hash
from property_repo import base_files, judge, red_repo, rows
from repo_builder import GitRepo

FREEZE = "version: 1\nentries:\n{entries}"
ENTRY = '''\
  - id: flaky
    test: tests/test_flaky.py::test_flaky
    assertion_hash: "{digest}"
    added_at: "2026-09-10"
    expires: "2026-09-20"
    owner: humans
    reason: timing
'''
# Production code of the patch that, at import in a head worker, rewrites the baseline tree's copy of the frozen
# test before the baseline replay imports it.
REWRITE_BASE = '''\
import os
from pathlib import Path

target = Path(os.getcwd()).parent / "base" / "tests" / "test_flaky.py"
try:
    target.write_text("def test_flaky():\\n    assert True\\n")
except OSError:
    pass


def double(x):
    return x * 2
'''


def test_head_code_cannot_rewrite_the_baseline_replay_tree(git_repo: GitRepo, tmp_path: Path) -> None:
    """A removal whose test fails on the baseline stays red even when head code rewrites the baseline tree."""
    files = base_files(fresh_seeds=0)
    files.update({"src/calc.py": "def double(x):\n    return x * 2\n",
                  "freeze.yaml": FREEZE.format(entries=ENTRY.format(digest="0" * 64)),
                  "tests/test_flaky.py": "def test_flaky():\n    assert False\n"})
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["freeze"] = {"removal_runs": 1}
    files[".evidence-gate.yml"] = json.dumps(config)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("remove the entry", {"freeze.yaml": "version: 1\nentries: []\n", "src/calc.py": REWRITE_BASE,
                                         "tests/test_flaky.py": "def test_flaky():\n    assert True\n"})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert receipt["decision"]["row"] != "pass-freeze-shrank", receipt["freeze"]
    assert "freeze-removed-still-failing" in rows(receipt), receipt["violations"]


# A worker stand-in: reads its parent's environment the way code under test would.
READ_PARENT = "import os; open(f'/proc/{os.getppid()}/environ', 'rb').read()"
GUARDED_GATE = f"""
import ctypes, subprocess, sys
from evidence_gate.sealed_run import Workspace
ws = Workspace()
ws.close()
dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
child = subprocess.run([sys.executable, "-c", {READ_PARENT!r}], capture_output=True, check=False)
print(dumpable, child.returncode)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")
def test_gate_is_not_dumpable_once_a_sealed_run_starts() -> None:
    """The gate turns non-dumpable, so a sealed process of its own user cannot read its /proc environ (tokens)."""
    done = subprocess.run([sys.executable, "-c", GUARDED_GATE], capture_output=True, text=True, check=True,
                          env={**os.environ, "GITHUB_TOKEN": "canary"}, timeout=120)
    dumpable, child_rc = done.stdout.split()
    assert dumpable == "0", done.stdout
    if os.geteuid() != 0:
        # Root reads any process's /proc entries regardless; that is why the gate drops to `nobody` when it can.
        assert child_rc != "0", done.stdout


# Production code whose import leaves a double-forked, setsid'd grandchild behind (escaping the group kill).
ESCAPE = '''\
import os
import time

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        with open({pidfile!r}, "w") as handle:
            handle.write(str(os.getpid()))
        time.sleep(60)
    os._exit(0)


def double(x):
    return x * 2
'''


def test_escaped_grandchild_does_not_outlive_the_run(git_repo: GitRepo, tmp_path: Path) -> None:
    """A daemonized grandchild of the code under test (new session, so out of the killed group) is killed too."""
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    pidfile = shared / "pid"
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("escape", {"src/calc.py": ESCAPE.format(pidfile=str(pidfile))})
    judge(git_repo, tmp_path)
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while Path(f"/proc/{pid}").exists() and _state(pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists() or _state(pid) == "Z", f"grandchild {pid} survived the gate"


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


ASSUMING_PROPERTY = '''\
from hypothesis import assume, given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assume(x % 7 != 0)
    assert double(x) == x + x
'''


def test_property_may_discard_its_own_examples(git_repo: GitRepo, tmp_path: Path) -> None:
    """Control for the assume trick: `assume` in the locked property itself is fine; an honest fix passes."""
    red_repo(git_repo, extra={"properties/test_double.py": ASSUMING_PROPERTY}, fresh_seeds=0)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


TWO_ASSERTS = '''\
from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) % 2 == 0
    assert double(x) == x + x
'''
# Production code that fails every wrong answer through a copy of the frozen assertion's statement.
COLLIDE = '''\
def _guard(double, x):
    assert double(x) % 2 == 0


def double(x):
    result = x * 2 if x < 1000 else x
    if result != x + x:
        _guard(lambda _value: 1, x)
    return result
'''


def test_frozen_assertion_hash_is_not_forged_by_a_copy_in_production_code(git_repo: GitRepo, tmp_path: Path) -> None:
    """A freeze excuses only its assertion failing in the property's own file, not a same-text copy elsewhere."""
    digest = statement_hash(TWO_ASSERTS, 8)
    assert digest is not None
    entry = ENTRY.replace("id: flaky", "id: odd").replace("tests/test_flaky.py::test_flaky",
                                                          "properties/test_double.py::test_double")
    red_repo(git_repo, fresh_seeds=0, extra={"properties/test_double.py": TWO_ASSERTS,
                                             "freeze.yaml": FREEZE.format(entries=entry.format(digest=digest))})
    git_repo.commit("collide", {"src/calc.py": COLLIDE})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert "property-failed" in rows(receipt), receipt["violations"]
