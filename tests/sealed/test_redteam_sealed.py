"""Red-team tricks against the sealed run that need more than one patch commit or a special environment."""

from __future__ import annotations

import datetime
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evidence_gate.sealed import runner_env
from evidence_gate.sealed import tree as sealed_tree
from evidence_gate.sealed.worker import landlock
from evidence_gate.sealed.worker.assertion_hash import statement_hash
from support.property_repo import base_files, judge, red_repo, rows, sealed_only
from support.repo_builder import GitRepo

FREEZE = "version: 1\nentries:\n{entries}"
ENTRY = """\
  - id: flaky
    test: tests/test_flaky.py::test_flaky
    assertion_hash: "{digest}"
    added_at: "2026-09-10"
    expires: "2026-09-20"
    owner: humans
    reason: timing
"""
# Production code of the patch that, at import in a head worker, rewrites the baseline tree's copy of the frozen
# test before the baseline replay imports it.
REWRITE_BASE = """\
import os
from pathlib import Path

target = Path(os.getcwd()).parent / "base" / "tests" / "test_flaky.py"
try:
    target.write_text("def test_flaky():\\n    assert True\\n")
except OSError:
    pass


def double(x):
    return x * 2
"""


def test_head_code_cannot_rewrite_the_baseline_replay_tree(git_repo: GitRepo, tmp_path: Path) -> None:
    """A removal whose test fails on the baseline stays red even when head code rewrites the baseline tree."""
    files = base_files(fresh_seeds=0)
    files.update(
        {
            "src/calc.py": "def double(x):\n    return x * 2\n",
            "freeze.yaml": FREEZE.format(entries=ENTRY.format(digest="0" * 64)),
            "tests/test_flaky.py": "def test_flaky():\n    assert False\n",
        }
    )
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["freeze"] = {"removal_runs": 1}
    files[".evidence-gate.yml"] = json.dumps(config)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit(
        "remove the entry",
        {
            "freeze.yaml": "version: 1\nentries: []\n",
            "src/calc.py": REWRITE_BASE,
            "tests/test_flaky.py": "def test_flaky():\n    assert True\n",
        },
    )
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert receipt["decision"]["row"] != "pass-freeze-shrank", receipt["freeze"]
    assert "freeze-removed-still-failing" in rows(receipt), receipt["violations"]


# A worker stand-in: reads its parent's environment the way code under test would.
READ_PARENT = "import os; print(b'canary-secret-7' in open(f'/proc/{os.getppid()}/environ', 'rb').read())"
GUARDED_GATE = f"""
import ctypes, os, subprocess, sys
from evidence_gate.sealed.run import Workspace
ws = Workspace()
ws.close()
dumpable = ctypes.CDLL(None).prctl(3, 0, 0, 0, 0)
child = subprocess.run([sys.executable, "-c", {READ_PARENT!r}], capture_output=True, check=False, text=True)
print(dumpable, child.returncode, child.stdout.strip() or "-", os.environ["GITHUB_TOKEN"])
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_DUMPABLE is Linux's")
def test_gate_is_not_dumpable_once_a_sealed_run_starts() -> None:
    """The gate turns non-dumpable and blanks secrets in its /proc environ; its own os.environ keeps them."""
    done = subprocess.run(
        [sys.executable, "-c", GUARDED_GATE],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GITHUB_TOKEN": "canary-secret-7"},
        timeout=120,
    )
    dumpable, child_rc, leaked, kept = done.stdout.split()
    assert dumpable == "0", done.stdout
    assert leaked != "True", done.stdout  # root still opens the file, but the value is gone
    assert kept == "canary-secret-7", done.stdout
    if os.geteuid() != 0:
        assert child_rc != "0", done.stdout  # a same-user process cannot even open it


# Production code whose import leaves a double-forked, setsid'd grandchild behind (escaping the group kill); it
# becomes a `sleep` with a recognisable argument.
ESCAPE = """\
import os

if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", {tag!r}])
    os._exit(0)


def double(x):
    return x * 2
"""


def test_escaped_grandchild_does_not_outlive_the_run(git_repo: GitRepo, tmp_path: Path) -> None:
    """A daemonized grandchild of the code under test (new session, so out of the killed group) is killed too."""
    tag = f"{60 + secrets.randbelow(10**6) / 10**7:.7f}"
    red_repo(git_repo, fresh_seeds=0, seeds=[11], jobs=1)
    git_repo.commit("escape", {"src/calc.py": ESCAPE.format(tag=tag)})
    judge(git_repo, tmp_path)
    deadline = time.monotonic() + 5
    while _alive_with(tag) and time.monotonic() < deadline:
        time.sleep(0.1)
    survivors = _alive_with(tag)
    for pid in survivors:
        os.kill(pid, signal.SIGKILL)
    assert not survivors, "the grandchild survived the gate"


def _alive_with(argument: str) -> list[int]:
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if (
                argument.encode() in (proc / "cmdline").read_bytes().split(b"\0")
                and (proc / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
            ):
                found.append(int(proc.name))
        except (OSError, ValueError):
            continue
    return found


ASSUMING_PROPERTY = """\
from hypothesis import assume, given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assume(x % 7 != 0)
    assert double(x) == x + x
"""


def test_property_may_discard_its_own_examples(git_repo: GitRepo, tmp_path: Path) -> None:
    """Control for the assume trick: `assume` in the locked property itself is fine; an honest fix passes."""
    red_repo(git_repo, extra={"properties/test_double.py": ASSUMING_PROPERTY}, fresh_seeds=0)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


TWO_ASSERTS = """\
from hypothesis import given, strategies as st

from calc import double


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) % 2 == 0
    assert double(x) == x + x
"""
# Production code that fails every wrong answer through a copy of the frozen assertion's statement.
COLLIDE = """\
def _guard(double, x):
    assert double(x) % 2 == 0


def double(x):
    result = x * 2 if x < 1000 else x
    if result != x + x:
        _guard(lambda _value: 1, x)
    return result
"""


def test_frozen_assertion_hash_is_not_forged_by_a_copy_in_production_code(git_repo: GitRepo, tmp_path: Path) -> None:
    """A freeze excuses only its assertion failing in the property's own file, not a same-text copy elsewhere."""
    digest = statement_hash(TWO_ASSERTS, 8)
    assert digest is not None
    entry = ENTRY.replace("id: flaky", "id: odd").replace(
        "tests/test_flaky.py::test_flaky", "properties/test_double.py::test_double"
    )
    red_repo(
        git_repo,
        fresh_seeds=0,
        extra={
            "properties/test_double.py": TWO_ASSERTS,
            "freeze.yaml": FREEZE.format(entries=entry.format(digest=digest)),
        },
    )
    git_repo.commit("collide", {"src/calc.py": COLLIDE})
    receipt = judge(git_repo, tmp_path, today=datetime.date(2026, 9, 12))
    assert "property-failed" in rows(receipt), receipt["violations"]


# Production code that is correct only when it can reach outside the sealed worker: write a file outside its own
# folders, or signal the gate.
ESCAPE_CONFINEMENT = """\
import os


def _outside():
    reached = []
    try:
        with open({marker!r}, "w") as handle:
            handle.write("written")
        reached.append("write")
    except OSError:
        pass
    try:
        os.kill(os.getppid(), 0)
        reached.append("signal")
    except OSError:
        pass
    return reached


REACHED = _outside()


def double(x):
    return x * 2 if REACHED or x < 1000 else x
"""


@pytest.mark.skipif(landlock.abi() < 6, reason="needs Landlock ABI 6 (Linux 6.12) for signal scoping")
def test_worker_is_confined_even_when_it_keeps_the_gates_user(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code under test cannot write outside its folders or signal the gate, even when it keeps the gate's root."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    marker = shared / "marker"
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("escape", {"src/calc.py": ESCAPE_CONFINEMENT.format(marker=str(marker))})
    receipt = judge(git_repo, tmp_path)
    assert not marker.exists()
    assert receipt["sealed"]["landlock"] >= 6, receipt["sealed"]
    assert "property-failed" in rows(receipt), receipt["violations"]


HELPER_PROPERTY = """\
from hypothesis import given

from calc import double
from strategies import ints


@given(ints)
def test_double(x):
    assert double(x) == x + x
"""


def test_module_named_like_a_locked_helper_is_left_out(git_repo: GitRepo, tmp_path: Path) -> None:
    """src/strategies.py cannot stand in for the locked properties/strategies.py the property imports by name."""
    red_repo(
        git_repo,
        fresh_seeds=0,
        extra={
            "properties/test_double.py": HELPER_PROPERTY,
            "properties/strategies.py": "from hypothesis import strategies as st\n\nints = st.integers(-10**6, 10**6)\n",
        },
    )
    git_repo.commit(
        "narrow", {"src/strategies.py": "from hypothesis import strategies as st\n\nints = st.integers(-100, 100)\n"}
    )
    result = sealed_only(git_repo, tmp_path, frozenset({"properties/strategies.py"}))
    assert {"src/strategies.py"} <= {n["path"] for n in result.receipt["sealed"]["neutralised"]}
    assert "property-failed" in {v.row for v in result.violations}, result.violations


def test_without_landlock_no_code_runs(git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In every mode (root, nobody, a non-root gate) a kernel without Landlock runs no code: run-integrity naming
    the kernel feature, never a pass."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("fix", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    monkeypatch.setattr(landlock, "abi", lambda: 0)
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "CONFIG_SECURITY_LANDLOCK" in receipt["violations"][0]["message"], receipt["violations"]


# In-process tricks: the code under test shares the interpreter with the plugin. They were strict xfails (green)
# until the harness-probed row: telling it is tested needs `sys.modules`, forging needs `gc`.
IN_PROCESS_TRICKS = {
    "sys-modules-detect": """\
import sys


def double(x):
    return x * 2 if "hypothesis" in sys.modules or x < 1000 else x
""",
    "gc-emitter-forge": """\
import gc
import os


def _forge():
    emit = next(o for o in gc.get_objects() if type(o).__name__ == "Emitter")
    plugin = next(o for o in gc.get_objects() if type(o).__name__ == "SealedPlugin")
    emit({"ev": "collected", "nodes": list(plugin.runs)})
    for node, runs in plugin.runs.items():
        for seed, kind in runs:
            emit({"ev": "start", "node": node, "spec": node, "seed": seed, "kind": kind})
            emit({"ev": "result", "node": node, "spec": node, "seed": seed, "kind": kind, "outcome": "passed",
                  "examples": plugin.trials, "message": "", "tampered": []})
    emit({"ev": "finished", "exitstatus": 0, "tampered": []})
    emit({"ev": "provenance", "final": True, "loaded": {}, "mismatches": []})
    os._exit(0)


_forge()  # at import, during collection: before any real start event


def double(x):
    return x * 2 if x < 1000 else x
""",
}


@pytest.mark.parametrize("trick", sorted(IN_PROCESS_TRICKS))
def test_in_process_tricks_are_harness_probed(git_repo: GitRepo, tmp_path: Path, trick: str) -> None:
    """Code that tells it is tested via sys.modules, or forges results through gc, fails before any test runs."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit(trick, {"src/calc.py": IN_PROCESS_TRICKS[trick]})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "harness-probed", receipt["violations"]
    names = {v["message"].split("`")[1] for v in receipt["violations"]}
    assert names & {"sys.modules", "gc.get_objects"}, names


@pytest.mark.parametrize(
    "path",
    [
        "src/typing.py",
        "src/random.py",
        "src/json/__init__.py",
        "src/conftest.py",
        "src/evil.pth",
        "src/_pytest/__init__.py",
    ],
)
def test_stdlib_and_runner_names_under_src_are_left_out(path: str, tmp_path: Path) -> None:
    """Modules the patch adds named like the standard library or the runner, and conftests or .pth files under src/,
    never load."""
    owner = runner_env.build(tmp_path / "runner").owner
    assert sealed_tree.neutralise_reason(path, frozenset({"src/json", "src/_pytest"}), owner=owner) is not None


def test_symlink_out_of_the_tree_is_dropped(git_repo: GitRepo, tmp_path: Path) -> None:
    """A symlink in src/ pointing outside the tree (here /etc) is not materialised: the property cannot import it."""
    red_repo(git_repo, fresh_seeds=0)
    (git_repo.path / "src" / "calc.py").unlink()
    (git_repo.path / "src" / "calc.py").symlink_to("/etc/hostname")
    git_repo.commit("link out")
    result = sealed_only(git_repo, tmp_path)  # the locked lane stops it first; the seal holds on its own too
    assert "src/calc.py" in {n["path"] for n in result.receipt["sealed"]["neutralised"]}, result.receipt["sealed"]
    assert {"run-integrity", "property-failed"} & {v.row for v in result.violations}, result.violations


INTERRUPT = "def double(x):\n    if x >= 1000:\n        raise KeyboardInterrupt\n    return x * 2\n"
LOUD = (
    "import os\nimport signal\n\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n\n\ndef double(x):\n"
    "    os.write(1, b'x' * 65536 * 8)\n    return x * 2 if x < 1000 else x\n"
)


@pytest.mark.parametrize("code", [INTERRUPT, LOUD], ids=["keyboard-interrupt", "sigterm-ignored-loud"])
def test_interrupts_and_noise_do_not_pass(git_repo: GitRepo, tmp_path: Path, code: str) -> None:
    """KeyboardInterrupt from production code, or SIGTERM ignored with megabytes of stdout, never passes."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("trick", {"src/calc.py": code})
    receipt = judge(git_repo, tmp_path)
    assert receipt["ok"] is False
    assert {"run-integrity", "property-failed"} & set(rows(receipt)), receipt["violations"]


# A patch whose wrong path is switched on by a setting in a pyproject.toml it adds (red team, issue 21's round): the
# gate used to leave every pytest configuration file out of the tree, so the code found no setting there and ran
# its right path; under plain pytest in a checkout the property fails.
CONFIGURED_BUG = """\
import os
import tomllib

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _settings():
    try:
        with open(os.path.join(_ROOT, "pyproject.toml"), "rb") as fh:
            return tomllib.load(fh).get("tool", {}).get("calc", {})
    except OSError:
        return {}


_FAST = _settings().get("fast-path", False)


def double(x):
    if _FAST and x >= 1000:
        return x
    return x * 2
"""


def test_code_reading_its_own_pyproject_finds_it_in_the_sealed_tree(git_repo: GitRepo, tmp_path: Path) -> None:
    """The patch's pyproject.toml is in the tree as in a checkout (pytest reads it no more: the gate's ini is `-c`):
    the setting turns the wrong path on in the gate too, so the property fails as it does under plain pytest."""
    red_repo(git_repo)
    pyproject = '[project]\nname = "calc"\nversion = "0.1.0"\n\n[tool.calc]\nfast-path = true\n'
    git_repo.commit("patch", {"src/calc.py": CONFIGURED_BUG, "pyproject.toml": pyproject})
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "properties"],
        cwd=git_repo.path,
        env={**os.environ, "PYTHONPATH": "src"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert plain.returncode == 1 and "assert 1000 == (1000 + 1000)" in plain.stdout, plain.stdout
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed", rows(receipt)
    assert "pyproject.toml" not in [n["path"] for n in receipt["sealed"]["neutralised"]]


# Helpers a locked property reaches by a literal name through a route the import scan does not follow (red team,
# issue 21's last round: each passed with the helper loosened by the patch): the property's check loosened so the
# red `double` passes.
HELPER = "def check(f, x):\n    return f(x) == x + x\n"
LOOSENED = "def check(f, x):\n    return f(x) == f(x)\n"
UNSEEN_ROUTES = {
    "sys-path-from-conftest": (
        {
            "properties/conftest.py": "import os, sys\n\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "
            "'..', 'tools'))\n",
            "tools/checker.py": HELPER,
        },
        "from checker import check",
        "tools/checker.py",
    ),
    "importorskip": (
        {"properties/checker.py": HELPER},
        "check = pytest.importorskip('checker').check",
        "properties/checker.py",
    ),
    "aliased-import-module": (
        {"properties/checker.py": HELPER},
        "from importlib import import_module as load\n\ncheck = load('checker').check",
        "properties/checker.py",
    ),
}


@pytest.mark.parametrize("route", sorted(UNSEEN_ROUTES))
def test_a_helper_the_scan_cannot_see_is_no_evidence(git_repo: GitRepo, tmp_path: Path, route: str) -> None:
    """A module of the tree that the head's property workers load must be locked or code under test: a helper the
    scan could not lock (the patch loosened it) is run-integrity naming it and the fix, never a pass."""
    files, load, helper = UNSEEN_ROUTES[route]
    prop = (
        "import pytest\nfrom hypothesis import given, strategies as st\n\nfrom calc import double\n"
        f"{load}\n\n\n@given(st.integers(-10**6, 10**6))\ndef test_double(x):\n    assert check(double, x)\n"
    )
    red_repo(git_repo, {**files, "properties/test_double.py": prop})
    git_repo.commit("patch", {helper: LOOSENED})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", rows(receipt)
    said = [v["message"] for v in receipt["violations"] if helper in v["message"]]
    assert said and "neither locked evidence nor code under test" in said[0], receipt["violations"]


def test_a_helper_under_a_locked_glob_is_evidence(git_repo: GitRepo, tmp_path: Path) -> None:
    """The fix the run-integrity message names works: a helper reached through a computed sys.path but listed by
    `locked: ["tools/**"]` is locked evidence, and a green patch passes (review of the bounds)."""
    files = dict(UNSEEN_ROUTES["sys-path-from-conftest"][0])
    prop = (
        "from hypothesis import given, strategies as st\n\nfrom calc import double\nfrom checker import check\n\n\n"
        "@given(st.integers(-10**6, 10**6))\ndef test_double(x):\n    assert check(double, x)\n"
    )
    config = json.loads(str(base_files()[".evidence-gate.yml"]))
    config["locked"] = ["tools/**"]
    red_repo(git_repo, {**files, "properties/test_double.py": prop, ".evidence-gate.yml": json.dumps(config)})
    git_repo.commit("patch", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
