"""Holes found in strict parsing while building the freeze ledger, and the line maps the lane points with."""

from __future__ import annotations

import pytest

from evidence_gate.errors import InputInvalid
from evidence_gate.strict_parse import json_lines, load_json, load_yaml, load_yaml_lines


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (b"x: 1.0e+999\n", "overflows"),  # matched the decimal pattern, then became inf
        (b"x: " + b"9" * 5000 + b"\n", "too long"),  # int() raised a bare ValueError: a crash, not a verdict
        (b"- a: 1\n  <<: {b: 2}\n", "merge keys"),  # `<<` merges hidden keys into a mapping
    ],
)
def test_yaml_holes_are_parse_errors(text: bytes, fragment: str) -> None:
    """Each input is a InputInvalid naming the problem, never a value or a crash."""
    with pytest.raises(InputInvalid, match=fragment):
        load_yaml(text)


def test_json_huge_integer_is_a_parse_error() -> None:
    """A 5000-digit JSON integer is a InputInvalid, not a ValueError escaping the loader."""
    with pytest.raises(InputInvalid, match="not valid JSON"):
        load_json(b"[" + b"9" * 5000 + b"]")


def test_json_duplicate_key_has_a_line() -> None:
    """A JSON duplicate key is reported at the duplicate's line."""
    with pytest.raises(InputInvalid) as info:
        load_json(b'{"a": 1,\n "b": {"c": 1,\n  "c": 2}}')
    assert info.value.line == 3 and "'c'" in info.value.message


def test_json_lines_map_paths() -> None:
    """Every JSON value's path maps to its key's (or item's) line, escapes and nesting included."""
    data = b'{"v": 1,\n "l": [{"id": "x\\"y",\n   "n": [1, -2.5e3, true, null, {}]},\n  {"id": "z"}]}\n'
    load_json(data)
    lines = json_lines(data)
    assert lines[()] == 1 and lines[("l",)] == 2 and lines[("l", 0, "id")] == 2
    assert lines[("l", 0, "n", 4)] == 3 and lines[("l", 1)] == 4 and lines[("l", 1, "id")] == 4


def test_yaml_lines_map_paths() -> None:
    """Every YAML value's path maps to its key's (or item's) line."""
    data = b"version: 1\nentries:\n  - id: a\n    x: 1\n  # note\n  - id: b\n"
    lines = load_yaml_lines(data)[1]
    assert lines[("entries",)] == 2 and lines[("entries", 0)] == 3 and lines[("entries", 0, "x")] == 4
    assert lines[("entries", 1, "id")] == 6
