"""Messages name the real cause in the user's terms: the module that failed to import, the fixture that failed, the
locked line that failed; never a frame inside pytest or the gate's environment, never a bare pytest exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.property_repo import judge, red_repo
from support.repo_builder import GitRepo

BROKEN_IMPORT = "import shopping_cart_backend\n\n\ndef double(x):\n    return x * 2\n"
CONFTEST = "import pytest\n\nimport calc\n\n\n@pytest.fixture\ndef base():\n    return calc.base()\n"
FIXTURE_PROPERTY = """\
from hypothesis import given, settings, HealthCheck, strategies as st

from calc import double


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(-10**6, 10**6))
def test_double(base, x):
    assert double(x) == x + x + base
"""


def _messages(receipt: dict[str, object]) -> list[str]:
    return [str(v["message"]) for v in receipt["violations"]]  # type: ignore[attr-defined]


@pytest.mark.parametrize("where", ["test module", "conftest"])
def test_import_error_names_the_module_and_line(git_repo: GitRepo, tmp_path: Path, where: str) -> None:
    """Code under test that fails to import (from a locked test module, or from a locked conftest, which stops pytest
    before any session) is run-integrity naming the missing module and the line that imported it."""
    extra = {"properties/conftest.py": "import calc  # noqa\n"} if where == "conftest" else None
    red_repo(git_repo, extra=extra, fresh_seeds=0)
    git_repo.commit("broken import", {"src/calc.py": BROKEN_IMPORT})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    text = " | ".join(_messages(receipt))
    assert "module 'shopping_cart_backend' could not be imported" in text, text
    assert "src/calc.py:1" in text, text
    assert "pytest exited with code" not in text and "site-packages" not in text and "_pytest" not in text, text


def test_failing_fixture_is_named_with_its_cause(git_repo: GitRepo, tmp_path: Path) -> None:
    """A locked fixture that fails because the code under test raises names the fixture, the line and the error."""
    red_repo(
        git_repo,
        extra={
            "properties/conftest.py": CONFTEST,
            "properties/test_double.py": FIXTURE_PROPERTY,
            "src/calc.py": "def base():\n    return 0\n\n\ndef double(x):\n    return x * 2\n",
        },
        fresh_seeds=0,
    )
    git_repo.commit(
        "base raises",
        {
            "src/calc.py": "def base():\n    raise ValueError('no base configured')\n\n\n"
            "def double(x):\n    return x * 2\n"
        },
    )
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    text = " | ".join(_messages(receipt))
    assert "setup failed in fixture 'base' (src/calc.py:2): ValueError: no base configured" in text, text
    assert "site-packages" not in text and "_pytest" not in text, text


def test_honest_fixture_passes_and_a_failure_names_the_locked_line(git_repo: GitRepo, tmp_path: Path) -> None:
    """The same fixture suite: honest code passes every seed; a bug is property-failed on the assert's line."""
    red_repo(
        git_repo,
        extra={
            "properties/conftest.py": CONFTEST,
            "properties/test_double.py": FIXTURE_PROPERTY,
            "src/calc.py": "def base():\n    return 0\n\n\ndef double(x):\n    return x * 2\n",
        },
    )
    git_repo.commit(
        "refactor",
        {"src/calc.py": "BASE = 0\n\n\ndef base():\n    return BASE\n\n\ndef double(x):\n    return x + x\n"},
    )
    assert judge(git_repo, tmp_path)["decision"]["row"] == "pass"
    git_repo.commit(
        "bug", {"src/calc.py": "def base():\n    return 0\n\n\ndef double(x):\n    return x * 2 if x < 1000 else x\n"}
    )
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
    [violation] = [v for v in receipt["violations"] if v["row"] == "property-failed"]
    assert (violation["path"], violation["line"]) == ("properties/test_double.py", 9)
    assert "x=1000" in violation["message"], violation["message"]
