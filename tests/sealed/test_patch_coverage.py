"""Patch coverage: the changed lines of code under test the locked properties executed, and `patch-not-covered`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence_gate.lanes.properties import patch_coverage
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import types as receipt_types
from evidence_gate.receipt.shard_merge import merge, merged_coverage
from evidence_gate.report import check_run as check_report
from evidence_gate.report import job_summary
from evidence_gate.report import registry as report
from support.property_repo import GREEN, config, judge, red_repo, rows
from support.repo_builder import GitRepo

# The property draws |x| <= 10**6, so the new branch for x > 10**9 (line 3) never runs; lines 2 and 4 do.
UNREACHED_BRANCH = "def double(x):\n    if x > 10**9:\n        return x + x\n    return x * 2\n"


def _coverage(receipt: dict[str, object]) -> receipt_types.PatchCoverageJson:
    found = receipt_access.patch_coverage(receipt)
    assert found is not None, json.dumps(receipt, indent=1)[:3000]
    return found


def _flat(text: str) -> str:
    """Text without its line wrapping and Markdown escapes."""
    return " ".join(text.replace("\\", "").split())


def _allowing(*names: str) -> dict[str, str | bytes | None]:
    """The baseline configuration with a human's `probes.allow` for `names` in src/calc.py, so the code runs."""
    allowed = {**json.loads(config()), "probes": {"allow": [f"src/calc.py: {name}" for name in names]}}
    return {".evidence-gate.yml": json.dumps(allowed)}


def test_code_lines_are_the_line_tables_without_docstrings() -> None:
    """Comments, blank lines and docstrings are not code; a def, a statement and a class body line are."""
    source = (
        b'"""Module."""\n\n# a comment\ndef f(x):\n    """Doc\n    string."""\n    return x\n\nclass C:\n    y = 1\n'
    )
    assert patch_coverage.code_lines(source, "m.py") == {4, 7, 9, 10}
    assert patch_coverage.code_lines(b"def broken(:\n", "m.py") is None


def test_ranges_are_shown_as_runs() -> None:
    """Unreached lines read as `path:first-last` runs."""
    assert [patch_coverage.range_text("a.py", *r) for r in patch_coverage.ranges([40, 41, 7, 43])] == [
        "a.py:7",
        "a.py:40-41",
        "a.py:43",
    ]


def test_a_changed_line_the_properties_never_reach_is_reported(tmp_path: Path) -> None:
    """A branch only taken for x > 10**9 is not reached by a strategy drawing smaller ints: 2 of 3 changed lines,
    reported but (without a minimum) not a row."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo)
    repo.commit("patch", {"src/calc.py": UNREACHED_BRANCH})
    receipt = judge(repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    cov = _coverage(receipt)
    assert cov["files"] == [{"path": "src/calc.py", "lines": [2, 3, 4], "executed": [2, 4]}]
    assert (cov["lines"], cov["executed"], cov["percent"], cov["unreached"]) == (3, 2, 66.7, ["src/calc.py:3"])
    assert "patch-not-covered" not in rows(receipt)
    said = "the locked properties executed 2 of 3 changed lines of code under test (66.7%); not reached: src/calc.py:3"
    assert f"patch coverage: {said}" in _flat(report.render_text(receipt))
    check = check_report.build(receipt, "sha256:" + "0" * 64)
    assert said in _flat(check.summary)
    assert "`src/calc.py`: 2 of 3 changed lines of code ran; not reached: lines 3" in check.text
    assert said in _flat(job_summary.render(receipt, "sha256:" + "0" * 64))
    results = json.loads(report.render_sarif(receipt))["runs"][0]["results"]
    notes = [r for r in results if r["ruleId"] == "patch-not-covered"]
    assert [(n["level"], n["locations"][0]["physicalLocation"]["region"]) for n in notes] == [
        ("note", {"startLine": 3, "endLine": 3})
    ]


def test_a_patch_the_properties_run_entirely_is_fully_covered(tmp_path: Path) -> None:
    """The green fix's one changed line runs on every example: 1 of 1."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, min_patch_coverage=100)
    repo.commit("patch", {"src/calc.py": GREEN})
    receipt = judge(repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    cov = _coverage(receipt)
    assert (cov["lines"], cov["executed"], cov["percent"], cov["unreached"]) == (1, 1, 100.0, [])


def test_below_the_minimum_is_patch_not_covered_naming_the_lines_and_the_fix(tmp_path: Path) -> None:
    """With `min_patch_coverage: 90`, 66.7% is row 24, naming the unreached line and both ways out."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, min_patch_coverage=90)
    repo.commit("patch", {"src/calc.py": UNREACHED_BRANCH})
    receipt = judge(repo, tmp_path)
    assert receipt["decision"]["row"] == "patch-not-covered", receipt["violations"]
    (found,) = [v for v in receipt["violations"] if v["row"] == "patch-not-covered"]
    assert (found["path"], found["line"]) == ("src/calc.py", 3)
    assert "executed 2 of 3" in found["message"]
    assert "not reached: src/calc.py:3" in found["message"]
    assert "lower properties.min_patch_coverage" in found["message"]
    assert "SCORE_PROPERTIES" in found["message"]


def test_code_compiled_under_a_changed_files_name_does_not_count(tmp_path: Path) -> None:
    """Code under test that compiles its own code under the changed file's name (to claim line 3) claims nothing:
    only code objects equal to the head's own compiled text count."""
    forged = UNREACHED_BRANCH + "\nexec(compile('\\n\\nforged = 1\\n', __file__, 'exec'))\n"
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, extra=_allowing("compile(filename)"))
    repo.commit("patch", {"src/calc.py": forged})
    receipt = judge(repo, tmp_path)
    cov = _coverage(receipt)
    assert cov["files"][0]["executed"] == [2, 4, 6], cov
    assert "src/calc.py:3" in cov["unreached"]


PAUSER = """\
import gc


def double(x):
    for found in gc.get_objects():
        if type(found).__name__ == "LineRecorder":
            found.pause()  # what the gate does around pytest's assertion rewriter, here never resumed
    if x > 10**9:
        return x + x
    return x * 2
"""

OFF = (
    "import sys\n\ndef double(x):\n    sys.settrace(None)\n    if x > 10**9:\n        return x + x\n    return x * 2\n"
)


@pytest.mark.parametrize(
    ("code", "probe", "said"),
    [
        pytest.param(OFF, "sys.settrace", "line recorder", id="settrace-none"),
        pytest.param(PAUSER, "gc.get_objects", "line recorder was turned off", id="paused-never-resumed"),
    ],
)
def test_code_under_test_that_turns_the_recorder_off_fails(code: str, probe: str, said: str, tmp_path: Path) -> None:
    """`sys.settrace(None)` in the code under test (allowed by a human as a probe, so it runs) is refused while the
    gate records lines, and pausing the recorder (what the gate does while pytest rewrites a test file's asserts) and
    never resuming it turns it off: run-integrity, so switching the recorder off can never make a pass."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, extra=_allowing(probe))
    repo.commit("patch", {"src/calc.py": code})
    receipt = judge(repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    messages = " ".join(v["message"] for v in receipt["violations"] if v["row"] == "run-integrity")
    assert said in messages, messages


def test_shards_record_their_lines_and_the_merge_decides_over_their_union(tmp_path: Path) -> None:
    """A shard records its own lines without the row; `merge` takes the union of every shard's lines and decides."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, fresh_seeds=0, min_patch_coverage=90)
    repo.commit("patch", {"src/calc.py": UNREACHED_BRANCH})
    receipts = []
    for k in (1, 2):
        folder = tmp_path / f"shard{k}"
        folder.mkdir()
        receipt = judge(repo, folder, shard=(k, 2))
        assert _coverage(receipt)["executed"] == 2
        assert "patch-not-covered" not in rows(receipt)
        receipts.append(receipt)
    merged = merge(receipts, ["r1.json", "r2.json"])
    assert merged["decision"]["row"] == "patch-not-covered", merged["violations"]
    assert _coverage(merged)["unreached"] == ["src/calc.py:3"]


def test_themerged_coverage_is_the_union_of_the_shards_lines() -> None:
    """A line one shard reached and another did not counts as reached."""

    def shard(executed: list[int]) -> dict[str, object]:
        files = [patch_coverage.ChangedFile("src/a.py", b"", (1, 2, 3))]
        return {"patch_coverage": patch_coverage.section(files, {"src/a.py": set(executed)}, 50)}

    merged = merged_coverage([shard([1]), shard([3]), {"patch_coverage": patch_coverage.not_measured("none")}])
    assert merged is not None
    assert (merged["executed"], merged["unreached"], merged["min_percent"]) == (2, ["src/a.py:2"], 50)


FRAME_TRACER = """\
import sys


def _tracer(*args):
    return _tracer


def double(x):
    f = sys._getframe()
    while f is not None:
        f.f_trace = _tracer
        f = f.f_back
    if x > 10**9:
        return x + x
    return x * 2
"""


def test_a_frame_trace_function_of_the_code_under_test_fails(tmp_path: Path) -> None:
    """While the recorder traces, code under test that sets `f_trace` on the frames running it (allowed as probes
    by a human, so it runs) would get their line events: the state check finds it, and it is run-integrity."""
    repo = GitRepo(tmp_path / "r")
    red_repo(repo, extra=_allowing("sys._getframe", "f (bound to a probe)", "f_trace", "f_back"))
    repo.commit("patch", {"src/calc.py": FRAME_TRACER})
    receipt = judge(repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    messages = " ".join(v["message"] for v in receipt["violations"] if v["row"] == "run-integrity")
    assert "frame trace function the gate did not install" in messages, messages
