"""The one-pass YAML loader against the loader it replaced (PyYAML's composer and constructor, then a second
`compose` for the lines): the same documents accepted with the same values and lines, the same ones refused; and
the JSON line map against the scanner it replaced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_freeze_ledger import BILLION_LAUGHS, INVALID_YAML

from evidence_gate.errors import InputInvalid
from evidence_gate.strict_parse import MAX_DEPTH, PARSERS, json_lines, load_json, load_yaml_lines
from support import strict_parse_reference
from support.freeze_strategies import SPEC_YAML

EDGES = [
    b"! 123\n",
    b"a: ! {b: 1}\n",
    b'"<<": 1\n',
    b"'<<': {a: 1}\n",
    b"! <<: 1\n",
    b"a: <<\n",
    b"=: 1\n",
    b"a: =\n",
    b"? [a]\n: 1\n",
    b"? {a: 1}\n: 1\n",
    b"~: 1\n",
    b"null: 1\n",
    b"1: a\n",
    b"1.5: a\n",
    b"true: a\n",
    b"2026-01-01: x\n",
    b"a: !!str 1\n",
    b"a: !local 1\n",
    b"a: !!map {}\n",
    b"a: ! [1]\n",
    b"---\n...\n",
    b"# only a comment\n",
    b"---\n",
    b"",
    b"a: &x 1\n",
    b"a: [*x]\n",
    b"a: &x [1]\nb: *x\n",
    b"a: 1_000\n",
    b"a: 0o17\n",
    b"a: 012\n",
    b"a: 0b101\n",
    b"a: 1e3\n",
    b"a: 1.5e3\n",
    b"a: -.5\n",
    b"a: +12\n",
    b"a: -0\n",
    b"a: 1.\n",
    b"a: yes\nb: On\nc: NULL\nd: ~\ne:\n",
    b"a: 2026-09-15T10:00:00Z\n",
    b"a: |\n  two\n  lines\nb: >\n  folded\n  text\nc: 3\n",
    b"a:\n- 1\n-\n  - 2\n  - {b: [3, {c: d}]}\n",
    b"a: 'x'\na: 'y'\n",
    b"a: {b: 1, b: 1}\n",
    b"a: 1\n---\nb: 2\n",
    b"a: 1\n---\na: 1\na: 2\n",
    b"a: [1\n",
    b"a: b: c\n",
    b"a: 1\x00\n",
    b"\xef\xbb\xbfa: 1\n",
    b"%YAML 1.1\n---\na: 1\n",
    b"%TAG !e! tag:yaml.org,2002:\n---\na: !e!str 1\n",
    b"[" * (MAX_DEPTH - 1) + b"]" * (MAX_DEPTH - 1) + b"\n",
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH + b"\n",
    b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"\n",
    b"a: " + b"{b: " * (MAX_DEPTH - 2) + b"1" + b"}" * (MAX_DEPTH - 2) + b"\n",
    b"a: " + b"{b: " * (MAX_DEPTH - 1) + b"1" + b"}" * (MAX_DEPTH - 1) + b"\n",
    SPEC_YAML,
    BILLION_LAUGHS,
    *(case[0] for case in INVALID_YAML.values()),
]


def _typed(value: Any) -> Any:
    """`value` with every scalar's type beside it, so that 1, 1.0 and True never compare equal."""
    if isinstance(value, dict):
        return {k: _typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


def _outcome(load: Any, data: bytes) -> tuple[Any, ...]:
    try:
        value, lines = load(data)
    except InputInvalid as exc:
        # The old loader printed a collection key before filling it (`got []`); the new one prints it whole.
        return ("refused", exc.message.split(", got ")[0], exc.line)
    return ("accepted", _typed(value), lines)


def _same(data: bytes, parser: str, exact_errors: bool) -> None:
    new = _outcome(lambda d: load_yaml_lines(d, PARSERS[parser]), data)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        assert new[0] == "refused" and "UTF-8" in new[1]
        return
    old = _outcome(strict_parse_reference.load_yaml_lines, data)
    assert new[0] == old[0], (data, new, old)
    if new[0] == "accepted":
        assert new == old, data
    elif exact_errors and not old[1].startswith("not valid YAML"):  # PyYAML's and libyaml's syntax errors differ
        assert new == old, (data, new, old)


@pytest.mark.parametrize("parser", sorted(PARSERS))
@pytest.mark.parametrize("data", EDGES)
def test_edge_cases_as_before(data: bytes, parser: str) -> None:
    """Each edge case (tags, anchors, merge keys, odd keys and scalars, depth, documents) is accepted with the same
    value and lines, or refused with the same message at the same line, as by the loader it replaced."""
    _same(data, parser, exact_errors=True)


def test_libyaml_reads_a_tab_separator_as_a_space() -> None:
    """The one difference between the parsers found: libyaml takes a tab after `a:` as a separator (YAML 1.2 does)
    where PyYAML's own scanner refuses it; the value is the one the space gives, so nothing can hide behind it."""
    spaced = load_yaml_lines(b"a: b\n", PARSERS["python"])
    assert load_yaml_lines(b"a:\tb\n", PARSERS["libyaml"]) == spaced
    with pytest.raises(InputInvalid, match="cannot start any token"):
        load_yaml_lines(b"a:\tb\n", PARSERS["python"])


def test_libyaml_is_used() -> None:
    """The gate reads YAML with libyaml (the C parser PyYAML wheels ship), not the pure-Python parser."""
    assert "libyaml" in PARSERS


KEYS = st.sampled_from(["a", "b", "id", "<<", "'<<'", "1", "true", "~", "2026-01-01", '"a"', "=", "&k a", "!!str a"])
SCALARS = st.sampled_from(
    [
        "1", "-3", "0x1F", "1:30", "1_000", "012", ".inf", ".NaN", "1.5", "1e3", "1.0e+999", "yes", "no", "null",
        "=", "<<", "'q'", '"x\\ty"', "!!int 1", "! 12", "&a x", "*a", "2026-09-15", "-0", "+1", "0o7", "[]", "{}",
        "text with spaces", "t/x.py::t_1",
    ]
)  # fmt: skip


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pairs = st.lists(st.tuples(KEYS, children), max_size=4)
    return st.one_of(
        st.lists(children, max_size=4).map(lambda items: "[" + ", ".join(items) + "]"),
        pairs.map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
    )


FLOW = st.recursive(SCALARS, _flow, max_leaves=12)
BLOCK = st.lists(st.tuples(KEYS, FLOW), min_size=1, max_size=5).map(
    lambda kv: "".join(f"{k}: {v}\n" for k, v in kv).encode()
)


@pytest.mark.parametrize("parser", sorted(PARSERS))
@given(data=BLOCK)
def test_any_document_as_before(parser: str, data: bytes) -> None:
    """Any document built from the risky pieces is accepted with the same value and lines, or refused, as before."""
    _same(data, parser, exact_errors=False)


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=15,
)


@given(value=JSON_VALUES, indent=st.sampled_from([None, 0, 1, 2, "\t"]), separators=st.booleans())
def test_json_lines_as_before(value: Any, indent: int | str | None, separators: bool) -> None:
    """The JSON line map (regular-expression skips) is the one the character-by-character scanner gave."""
    data = json.dumps(value, indent=indent, separators=(",", ":") if separators else None).encode()
    load_json(data)
    assert json_lines(data) == strict_parse_reference.json_lines(data)
