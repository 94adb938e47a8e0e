"""The test folder's layout: a folder per kind of test (`unit/`, `sealed/`, `action/`), the conftest at the top,
every helper module in tests/support/."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
KINDS = ("unit", "sealed", "action")


def test_helpers_live_in_support() -> None:
    """tests/ holds only the conftest as Python; each kind's folder holds only test modules; helpers go to
    tests/support/ (so pytest never collects one and a newcomer finds them in one place)."""
    top = sorted(p.name for p in TESTS.glob("*.py") if p.name != "conftest.py")
    assert top == [], f"move these into a kind's folder ({', '.join(KINDS)}) or tests/support/: {top}"
    for kind in KINDS:
        stray = sorted(p.name for p in (TESTS / kind).glob("*.py") if not p.name.startswith("test_"))
        assert stray == [], (
            f"move these helpers into tests/support/ and import them as `from support.X import ...`: {stray}"
        )
    helpers = sorted(p.name for p in (TESTS / "support").glob("*.py"))
    assert "__init__.py" in helpers and "repo_builder.py" in helpers, helpers
    assert not [h for h in helpers if h.startswith("test_")], helpers


def test_every_test_module_has_a_kind(request: pytest.FixtureRequest) -> None:
    """No test module sits outside the three kinds, and every collected test carries its kind's marker (the fast
    lane, `-m unit`, selects by it)."""
    modules = {p.relative_to(TESTS).parts[0] for p in TESTS.rglob("test_*.py") if "support" not in p.parts}
    assert modules <= set(KINDS), modules
    assert request.node.get_closest_marker("unit") is not None
