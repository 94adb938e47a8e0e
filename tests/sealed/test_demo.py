"""`evidence-gate demo` end to end: the example repository, its patches, the table and the receipts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from evidence_gate.commands import demo

EXPECTED_NO_RUN = {
    "honest-refactor": "pass",
    "human-fixture-edit": "human-patch",
    "freeze-entry-added": "freeze-id-added",
    "freeze-expiry-pushed": "freeze-expiry-extended",
    "fixture-via-symlink": "evidence-path-edited",
    "property-renamed-away": "evidence-path-edited",
    "conftest-skips-all": "evidence-path-edited",
    "tells-it-is-tested": "harness-probed",
}
RUN_ONLY = {
    "09-broken-allocate": "property-failed",
    "10-pytest-ini-loosens": "property-failed",
    "11-producer-output-changed": "fixture-digest-mismatch",
}


def _demo(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return subprocess.run(
        [sys.executable, "-m", "evidence_gate", "demo", "--workdir", str(tmp_path), *args],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )


def test_demo_no_run(tmp_path: Path) -> None:
    """Every static patch lands on its row, the table says so, and each receipt is written and final."""
    proc = _demo(tmp_path, "--no-run")
    context = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, context
    receipts = sorted((tmp_path / "receipts").glob("*.json"))
    assert [p.stem.split("-", 1)[1] for p in receipts] == list(EXPECTED_NO_RUN)
    for path in receipts:
        name = path.stem.split("-", 1)[1]
        receipt = json.loads(path.read_text("utf-8"))
        assert receipt["state"] == "final", name
        assert receipt["decision"]["row"] == EXPECTED_NO_RUN[name], name
        assert receipt["ok"] == (EXPECTED_NO_RUN[name] in {"pass", "human-patch"}), name
        table_line = next(line for line in proc.stdout.splitlines() if line.startswith(name + " "))
        assert EXPECTED_NO_RUN[name] in table_line
        assert ("PASS" if receipt["ok"] else "FAIL") in table_line
        assert str(path) in table_line
    assert "every patch landed on its expected row" in proc.stdout
    for name in RUN_ONLY:
        assert name.split("-", 1)[1] in proc.stdout  # named as skipped under --no-run


def test_demo_refuses_a_used_workdir(tmp_path: Path) -> None:
    """A second demo into the same folder stops with a usage error instead of mixing repositories."""
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "x").write_text("x", "utf-8")
    proc = _demo(tmp_path, "--no-run")
    assert proc.returncode == 2
    assert "already exists" in proc.stderr


def test_demo_exit_code_reports_a_wrong_row(tmp_path: Path) -> None:
    """A patch whose expectation is wrong makes the demo exit 1: the demo is itself a check."""
    files = demo.example_files()
    prs = demo.patches(files)[:1]
    demo.build_repository(tmp_path / "repo", files, prs)
    outcomes = demo.judge(tmp_path / "repo", tmp_path / "receipts", prs, run=False)
    assert [o.as_expected for o in outcomes] == [True]
    wrong = [demo.Patch(prs[0].name, prs[0].explain, prs[0].changes, "freeze-id-added")]
    outcomes = demo.judge(tmp_path / "repo", tmp_path / "receipts2", wrong, run=False)
    assert not outcomes[0].as_expected
    assert "NO (freeze-id-added)" in demo.render(outcomes)


def test_example_project_ships_in_the_package() -> None:
    """The example's files, the configuration under its dot name included, come from package data."""
    files = demo.example_files()
    for path in (
        ".evidence-gate.yml",
        "SCORE_PROPERTIES",
        "src/alloc.py",
        "freeze.yaml",
        "fixtures/golden.json",
        "properties/test_allocate_properties.py",
    ):
        assert path in files, path
    assert not any("__pycache__" in p for p in files)


def test_example_tests_are_not_collected_by_this_project() -> None:
    """The example's `test_*.py` files are package data: pytest's testpaths keep them out of this suite."""
    pyproject = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text("utf-8"))
    testpaths = pyproject["tool"]["pytest"]["ini_options"]["testpaths"]
    assert testpaths == ["tests"]
    data = Path(demo.__file__).parent / "data"
    assert not any(data.resolve().is_relative_to((Path(__file__).parents[2] / p).resolve()) for p in testpaths)


def test_demo_with_run(tmp_path: Path) -> None:
    """With the property run, the honest patch passes and the broken one fails on a property (or, while the
    sealed runner is a stub, both fail closed on run-integrity)."""
    proc = _demo(tmp_path)
    context = f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    assert proc.returncode == 0, context
    honest = json.loads((tmp_path / "receipts" / "01-honest-refactor.json").read_text("utf-8"))
    if honest["decision"]["row"] == "run-integrity":
        assert demo.RUNNER_MISSING in json.dumps(honest["violations"]), context
    else:
        assert honest["decision"]["row"] == "pass", context
        for name, row in RUN_ONLY.items():
            receipt = json.loads((tmp_path / "receipts" / f"{name}.json").read_text("utf-8"))
            assert receipt["decision"]["row"] == row, context
            assert receipt["state"] == "final"
