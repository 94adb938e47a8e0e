"""The README's generated sections stay in step with the package data."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from evidence_gate import docs
from evidence_gate.config import Config, parse_config

README = Path(__file__).resolve().parents[1] / "README.md"


def test_decision_table_matches_data() -> None:
    """The README's decision table is exactly what the generator renders from decision_table.json."""
    text = README.read_text("utf-8")
    assert docs.render(text) == text, f"README decision table drifted from the data; run `{docs.REGENERATE}`"


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
