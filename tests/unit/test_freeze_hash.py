"""`freeze hash` without a failure to hash: each case is a usage error that names the fix."""

from __future__ import annotations

import pytest

from evidence_gate.commands.freeze import nothing_to_hash
from evidence_gate.errors import EXIT_USAGE

NODE = "properties/test_double.py::test_double"


@pytest.mark.parametrize(
    ("outcomes", "said", "fix"),
    [
        ([], "was not collected on HEAD", "check the node id"),
        (["passed", "passed"], "did not fail on HEAD (passed, passed)", "on the commit where it fails"),
    ],
)
def test_no_failure_on_head_is_a_usage_error(outcomes: list[str], said: str, fix: str) -> None:
    """An uncollected node and a test that passes on HEAD both exit 2 (the user named the wrong thing), not 1."""
    error = nothing_to_hash(NODE, outcomes)
    assert error.exit_code == EXIT_USAGE
    assert said in error.message and fix in error.fix
