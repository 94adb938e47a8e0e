"""The sealed plugin's one snapshot of the harness: taken after its own hooks, which are exactly `OWN_HOOKS`.

The worker used to take a second snapshot before building the plugin, only to find that nothing but the plugin's own
hooks had changed in between (no repository code runs before the plugin exists). That check now lives here, where it
fails when the plugin starts rebinding something it does not list, instead of costing every worker a snapshot.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

BUILD = """\
import json, sys
sys.path.insert(0, {src!r})
import _hypothesis_pytestplugin, hypothesis, hypothesis.strategies, pytest
import _pytest.assertion.rewrite
from evidence_gate.sealed.worker import harness_guard
from evidence_gate.sealed.worker.effects import Effects
from evidence_gate.sealed.worker.line_recorder import LineRecorder
from evidence_gate.sealed.worker.plugin import SealedPlugin
before = harness_guard.take()
events = []
job = {{"trials": 5, "runs": {{}}, "tree": {tree!r}, "trusted_files": []}}
# A head worker's plugin (a line recorder: the assertion rewriter is paused around, one more hook).
recorder = LineRecorder({{}}, events.append) if {head!r} else None
plugin = SealedPlugin(job, events.append, Effects(events.append, {tree!r}, recorder))
{then}
"""


def _run(tmp_path: Path, then: str, *, head: bool = True) -> dict[str, object]:
    code = BUILD.format(src=str(SRC), tree=str(tmp_path), then=then, head=head)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    result: dict[str, object] = json.loads(proc.stdout.splitlines()[-1])
    return result


@pytest.mark.unit
@pytest.mark.parametrize("head", [True, False])
def test_building_the_plugin_rebinds_its_own_hooks_and_nothing_else(tmp_path: Path, head: bool) -> None:
    got = _run(
        tmp_path,
        'own = sorted(h.replace(":", ".", 1) for h in SealedPlugin.OWN_HOOKS)\n'
        'print(json.dumps({"changed": sorted({k.split("#")[0] for k in before.changed()}), "own": own}))',
        head=head,
    )
    rewrite = "_pytest.assertion.rewrite._rewrite_test"
    assert got["changed"] == [h for h in got["own"] if head or h != rewrite], got


@pytest.mark.unit
def test_the_plugin_s_snapshot_finds_a_harness_change_made_after_it(tmp_path: Path) -> None:
    got = _run(
        tmp_path,
        "first = plugin._tampered()\n"
        "import hypothesis.core\n"
        "hypothesis.core.deterministic_PRNG = lambda seed=0: None\n"
        'print(json.dumps({"first": first, "then": plugin._tampered()}))',
    )
    assert got == {"first": [], "then": ["hypothesis.core.deterministic_PRNG"]}, got
