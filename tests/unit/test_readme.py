"""The README is a front door and the reference lives in docs/; the pages' generated sections stay in step with the
package data."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from evidence_gate import docs, records
from evidence_gate.config import Config, parse_config
from evidence_gate.report import row_docs
from support import doc_pages
from support.doc_pages import README, ROOT

DECISION = row_docs.DECISION_ROWS
FRONT_DOOR_LINES = 150


def test_generated_blocks_match_their_sources() -> None:
    """The decision table and the action's inputs/outputs tables are exactly what the one generator renders."""
    assert docs.drifted(ROOT) == [], f"run `{docs.REGENERATE}`"
    for page in docs.pages():
        text = doc_pages.read(page)
        assert docs.render(page, text, ROOT) == text


def test_generator_detects_drift() -> None:
    """A hand edit inside the section is undone by the generator (so the drift test can fail)."""
    text = doc_pages.read(DECISION)
    tampered = text.replace("| 8 | `freeze-id-added` |", "| 8 | `freeze-id-added-maybe` |")
    assert tampered != text
    assert docs.render(DECISION, tampered) == text


def test_every_row_in_the_decision_table_page() -> None:
    """Each of the table's row ids appears in the page's table once, in table order (the count comes from the data)."""
    section = doc_pages.read(DECISION).split(docs.START, 1)[1].split(docs.END, 1)[0]
    rows = [
        line.split("|")[2].strip().strip("`")
        for line in section.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip().isdigit()
    ]
    assert rows, "the decision table page has no rows"
    assert rows == [r.id for r in docs.decision.table()]


def test_configuration_example_is_valid_and_shows_the_defaults() -> None:
    """The configuration page's `.evidence-gate.yml` example parses, and apart from its `locked:` example it is the
    defaults."""
    section = doc_pages.read("docs/configuration.md").split("<!-- section:config -->", 1)[1]
    example = section.split("```yaml", 1)[1].split("```", 1)[0]
    parsed = parse_config(example.encode())
    assert parsed.locked == ("tools/**",)
    assert records.replace(parsed, locked=()) == Config()


def test_action_tables_follow_action_yml(tmp_path: Path) -> None:
    """A changed input description (pipe included) shows as drift of the action tables alone, and is rewritten."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    action = (ROOT / "action.yml").read_text("utf-8")
    old = "Name of the uploaded artifact."
    assert action.count(old) == 1
    (tmp_path / "action.yml").write_text(action.replace(old, "Name of | the artifact."), "utf-8")
    stale = docs.drifted(tmp_path)
    assert stale == [f"action inputs and outputs on {docs.ACTION_PAGE} (from action.yml)"]
    command = [sys.executable, "-m", "evidence_gate.docs", str(tmp_path)]
    check = subprocess.run([*command, "--check"], capture_output=True, text=True, check=False)
    assert check.returncode == 1 and docs.REGENERATE in check.stderr, check.stderr
    subprocess.run(command, check=True)
    rewritten = (tmp_path / docs.ACTION_PAGE).read_text("utf-8")
    assert "| Name of \\| the artifact. |" in rewritten
    assert subprocess.run([*command, "--check"], check=False).returncode == 0
    assert rewritten.replace("Name of \\| the artifact.", old) == doc_pages.read(docs.ACTION_PAGE)
    assert (tmp_path / DECISION).read_text("utf-8") == doc_pages.read(DECISION)


def test_missing_markers_fail_loudly() -> None:
    """A page that lost a block's markers is an error naming them, never a silently skipped table."""
    text = doc_pages.read(docs.ACTION_PAGE).replace(docs.ACTION_START, "")
    with pytest.raises(ValueError, match=re.escape(docs.ACTION_START)):
        docs.render(docs.ACTION_PAGE, text, ROOT)


def test_the_readme_is_a_front_door() -> None:
    """The README stays short: the two commands, what a repository adds, the copy-paste workflow, and a link to
    every docs page; the reference itself is on the pages."""
    readme = README.read_text("utf-8")
    assert len(readme.splitlines()) <= FRONT_DOOR_LINES
    for phrase in ("./dev demo", "./dev test", ".evidence-gate.yml", "SCORE_PROPERTIES", "freeze ledger"):
        assert phrase in readme, phrase
    assert "pull_request:" in doc_pages.readme_workflow()
    linked = {link.split("#", 1)[0] for link in doc_pages.links(readme)}
    unlinked = [p.name for p in doc_pages.pages() if f"docs/{p.name}" not in linked]
    assert not unlinked, f"README.md links no {unlinked}"


DOCS = ("ARCHITECTURE.md", "CONTRIBUTING.md", "CHANGELOG.md")
REPO_PATH = re.compile(r"`((?:src|tests|scripts|bench|\.github)/[^`*\s]+?\.(?:py|json|md|yml|yaml))`")


def test_contributor_docs_are_linked_and_name_real_files() -> None:
    """The README links the newcomer docs, and every repository file they name in backticks exists (so a move or
    a rename that forgets the docs fails here)."""
    readme = README.read_text("utf-8")
    root = ROOT
    for name in DOCS:
        assert f"]({name})" in readme, f"README.md does not link {name}"
        named = REPO_PATH.findall((root / name).read_text("utf-8"))
        concrete = [p for p in named if not any(part.isupper() for part in p.split("/")[:-1])]  # not GROUP/NAME
        missing = [p for p in concrete if not (root / p).exists()]
        assert not missing, f"{name} names files that do not exist: {missing}"
    assert REPO_PATH.findall((root / "CONTRIBUTING.md").read_text("utf-8")), "the pattern found no path at all"
