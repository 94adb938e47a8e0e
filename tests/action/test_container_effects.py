"""Issue 17's hooks in the action's image, under Docker's default seccomp profile, as GitHub runs it.

The image's interpreter is Debian's (3.13): it has `sys.monitoring`, which the host's 3.11 lacks, and PEP 667's
write-through `frame.f_locals`. Each case is a red baseline (tests/support/property_repo) and one patch commit.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.action_runner import OWNER_UID, Runner, run_container
from support.case_files import txt_files
from support.container_engine import Engine
from support.property_repo import config, red_repo
from support.repo_builder import GitRepo

pytestmark = pytest.mark.container

CASES = Path(__file__).parents[1] / "property_cases"
STEERING = Path(__file__).parents[1] / "steering_cases"
# The probe scan names these tricks before any test runs; a human's allow entries let them reach the sealed run, so
# that what is tested here is the seal's own answer to the effect.
ALLOWED = [
    "src/*: f_locals",
    "src/*: sys._getframe",
    "src/*: sys.monitoring",
    "src/*: pydoc.locate",  # resolvers of computed names count as import machinery in the probe scan
    "src/*: settrace",  # the name handed to the resolver, one part of the path `sys.settrace` in a string
    "src/*: doctest",  # (an entry for a probe also covers the names bound to it)
]
# A sys.monitoring line callback (3.12+) that, in the locked test's frame, writes a value the red code gets right
# (3.13 writes through frame.f_locals without any hook; the callback is what would call it on every line).
MONITORING = """\
import sys

_m = getattr(sys, "moni" + "toring")


def _line(code, line):
    if code.co_name == "test_double":
        frame = getattr(sys, "_get" + "frame")(1)
        if frame.f_locals.get("x", 0) >= 1000:
            frame.f_locals["x"] = 1


try:
    _m.use_tool_id(4, "stepper")
    _m.register_callback(4, _m.events.LINE, _line)
    _m.set_events(4, _m.events.LINE)
except Exception:
    pass


def double(x):
    return x * 2 if x < 1000 else x
"""


def _judge(
    engine: Engine,
    image: str,
    root: Path,
    patch: dict[str, str | bytes | None],
    base: dict[str, str | bytes | None] | None = None,
) -> dict[str, Any]:
    """The red baseline (with `base`'s files) plus `patch`, judged by `check` inside the image under Docker's
    profile."""
    for sub in ("home", "workflow", "file_commands"):
        (root / sub).mkdir()
    runner, repo = Runner(root, 0), GitRepo(root / "workspace")
    settings = json.loads(config())
    settings["probes"] = {"allow": ALLOWED}
    red_repo(repo, extra={".evidence-gate.yml": json.dumps(settings), **(base or {})})
    repo.commit("patch", patch)
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OWNER_UID}:{OWNER_UID}", str(runner.workspace)], check=True)
    env = {"HOME": "/github/home", "GITHUB_WORKSPACE": "/github/workspace"}
    args = ("check", "--base", "main", "--head", "patch", "--author", "agent-x", "--receipt", "/github/home/r.json")
    proc = run_container(engine, image, runner, env, *args, "--format", "json")
    receipt = json.loads(runner.file("home/r.json").read_text(encoding="utf-8"))
    assert receipt["state"] == "final", (receipt["errors"], proc.stderr.decode(errors="replace"))
    assert receipt["sealed"]["seccomp"] == "sockets-denied", receipt["sealed"]
    return dict(receipt)


def _messages(receipt: dict[str, Any]) -> str:
    return " ".join(str(v["message"]) for v in receipt["violations"])


@pytest.mark.parametrize("case", ["trace-pydoc-locate", "trace-doctest", "hook-signal-handler"])
def test_hook_cases_fail_in_the_image(case: str, engine: Engine, image: str, tmp_path: Path) -> None:
    """The host's cases hold in the image too: a run-integrity row naming the hook."""
    expect = json.loads((CASES / case / "expect.json").read_text(encoding="utf-8"))
    receipt = _judge(engine, image, tmp_path, txt_files(CASES / case / "patch"))
    assert receipt["ok"] is False and receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert expect["mentions"] in _messages(receipt), receipt["violations"]


def test_a_monitoring_callback_is_refused_in_the_image(engine: Engine, image: str, tmp_path: Path) -> None:
    """`sys.monitoring` (the image's 3.13 has it): the callback is refused and the tool id found."""
    receipt = _judge(engine, image, tmp_path, {"src/calc.py": MONITORING})
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    text = _messages(receipt)
    assert "sys.monitoring callback" in text and "src/calc.py:" in text, receipt["violations"]


def test_socket_refusal_is_no_tell_in_the_image(engine: Engine, image: str, tmp_path: Path) -> None:
    """Under Docker's profile the network is cut by the worker's own filter: socket() says EAFNOSUPPORT, not EPERM,
    so code that is right only when sealed stays red."""
    receipt = _judge(engine, image, tmp_path, txt_files(CASES / "tell-socket-eperm" / "patch"))
    assert "property-failed" in {v["row"] for v in receipt["violations"]}, receipt["violations"]


@pytest.mark.parametrize("patch", ["steered", "honest-fix"])
def test_steering_through_the_propertys_own_assume_is_judged_in_the_image(
    patch: str, engine: Engine, image: str, tmp_path: Path
) -> None:
    """The steering comparison holds in the image too: code under test that raises exactly where it is wrong, so the
    locked property's own `assume(False)` discards those examples, is `property-steered`; the honest fix passes."""
    case = json.loads((STEERING / "cases.json").read_text(encoding="utf-8"))["assume-on-exception"]
    row, code, mentions = case["patches"][patch]
    base = {"properties/test_double.py": case["property"], "src/calc.py": case["base"]}
    receipt = _judge(engine, image, tmp_path, {"src/calc.py": code}, base)
    assert receipt["decision"]["row"] == row, receipt["violations"]
    assert mentions is None or mentions in _messages(receipt), receipt["violations"]
