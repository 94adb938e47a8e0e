"""The README's generated sections stay in step with the package data."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_gate import docs
from evidence_gate.config import Config, parse_config

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def test_generated_blocks_match_their_sources() -> None:
    """The decision table and the action's inputs/outputs tables are exactly what the one generator renders."""
    text = README.read_text("utf-8")
    assert docs.drifted(text, ROOT) == [], f"run `{docs.REGENERATE}`"
    assert docs.render(text, ROOT) == text


def test_generator_detects_drift() -> None:
    """A hand edit inside the section is undone by the generator (so the drift test can fail)."""
    text = README.read_text("utf-8")
    tampered = text.replace("| 8 | `freeze-id-added` |", "| 8 | `freeze-id-added-maybe` |")
    assert tampered != text
    assert docs.render(tampered) == text


def test_every_row_in_readme() -> None:
    """Each of the table's row ids appears in the README table once, in table order (the count comes from the data)."""
    section = README.read_text("utf-8").split(docs.START, 1)[1].split(docs.END, 1)[0]
    rows = [
        line.split("|")[2].strip().strip("`")
        for line in section.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    assert rows, "the README's decision table has no rows"
    assert rows == [r.id for r in docs.decision.table()]


def test_configuration_example_is_valid_and_shows_the_defaults() -> None:
    """The README's `.evidence-gate.yml` example parses, and apart from its `locked:` example it is the defaults."""
    section = README.read_text("utf-8").split("<!-- section:config -->", 1)[1]
    example = section.split("```yaml", 1)[1].split("```", 1)[0]
    parsed = parse_config(example.encode())
    assert parsed.locked == ("tools/**",)
    assert dataclasses.replace(parsed, locked=()) == Config()


def test_action_tables_follow_action_yml(tmp_path: Path) -> None:
    """A changed input description (pipe included) shows as drift of the action tables alone, and is rewritten."""
    shutil.copy(README, tmp_path / "README.md")
    action = (ROOT / "action.yml").read_text("utf-8")
    old = "Name of the uploaded artifact."
    assert action.count(old) == 1
    (tmp_path / "action.yml").write_text(action.replace(old, "Name of | the artifact."), "utf-8")
    stale = docs.drifted(README.read_text("utf-8"), tmp_path)
    assert stale == ["action inputs and outputs (from action.yml)"]
    command = [sys.executable, "-m", "evidence_gate.docs", str(tmp_path / "README.md")]
    check = subprocess.run([*command, "--check"], capture_output=True, text=True, check=False)
    assert check.returncode == 1 and docs.REGENERATE in check.stderr, check.stderr
    subprocess.run(command, check=True)
    rewritten = (tmp_path / "README.md").read_text("utf-8")
    assert "| Name of \\| the artifact. |" in rewritten
    assert subprocess.run([*command, "--check"], check=False).returncode == 0
    assert rewritten.replace("Name of \\| the artifact.", old) == README.read_text("utf-8")


def test_missing_markers_fail_loudly() -> None:
    """A README that lost a block's markers is an error naming them, never a silently skipped table."""
    text = README.read_text("utf-8").replace(docs.ACTION_START, "")
    with pytest.raises(ValueError, match=re.escape(docs.ACTION_START)):
        docs.render(text, ROOT)


DOCS = ("ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md")
REPO_PATH = re.compile(r"`((?:src|tests|scripts|bench|\.github)/[^`*\s]+?\.(?:py|json|md|yml|yaml))`")


def test_contributor_docs_are_linked_and_name_real_files() -> None:
    """The README links the newcomer docs, and every repository file they name in backticks exists (so a move or
    a rename that forgets the docs fails here)."""
    readme = README.read_text("utf-8")
    root = README.parent
    for name in DOCS:
        assert f"]({name})" in readme, f"README.md does not link {name}"
        named = REPO_PATH.findall((root / name).read_text("utf-8"))
        concrete = [p for p in named if not any(part.isupper() for part in p.split("/")[:-1])]  # not GROUP/NAME
        missing = [p for p in concrete if not (root / p).exists()]
        assert not missing, f"{name} names files that do not exist: {missing}"
    assert REPO_PATH.findall((root / "CONTRIBUTING.md").read_text("utf-8")), "the pattern found no path at all"
