"""The test folder's layout: test modules and the conftest at the top, every helper module in tests/support/."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_helpers_live_in_support() -> None:
    """A Python file directly under tests/ is a test module or the conftest; helpers go to tests/support/ (so
    pytest never collects one and a newcomer finds them in one place)."""
    stray = sorted(p.name for p in TESTS.glob("*.py") if not p.name.startswith("test_") and p.name != "conftest.py")
    assert stray == [], (
        f"move these helpers into tests/support/ and import them as `from support.X import ...`: {stray}"
    )
    helpers = sorted(p.name for p in (TESTS / "support").glob("*.py"))
    assert "__init__.py" in helpers and "repo_builder.py" in helpers, helpers
    assert not [h for h in helpers if h.startswith("test_")], helpers
