"""Strict YAML and JSON loading for files a patch may have written.

Duplicate keys, YAML anchors/aliases and explicit tags, non-finite numbers and YAML 1.1 coercions that change a
value's meaning (sexagesimal `1:30`, `0x1F`, `1_000`) are errors, never silently accepted. Errors carry the line.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right
from typing import Any

import yaml

from evidence_gate.errors import InputInvalid

MAX_BYTES = 1 << 20
MAX_DEPTH = 32
_DECIMAL_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_PLAIN_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


def _mark_line(node: yaml.Node | None) -> int | None:
    mark = node.start_mark if node is not None else None
    return mark.line + 1 if mark is not None else None


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader minus aliases, anchors, explicit tags, duplicate keys and surprising scalars."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        line = event.start_mark.line + 1 if event.start_mark is not None else None
        if isinstance(event, yaml.AliasEvent):
            raise InputInvalid("YAML aliases are not allowed", line)
        anchor = getattr(event, "anchor", None)
        if anchor is not None:
            raise InputInvalid(f"YAML anchors are not allowed (&{anchor})", line)
        tag = getattr(event, "tag", None)
        implicit = getattr(event, "implicit", True)
        explicit = (
            tag is not None and tag != "!" and not (implicit is True or (isinstance(implicit, tuple) and implicit[0]))
        )
        if explicit:
            raise InputInvalid(f"YAML tags are not allowed ({tag})", line)
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_DEPTH:
                raise InputInvalid(f"nesting deeper than {MAX_DEPTH} levels", line)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int | None] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            raise InputInvalid("YAML merge keys (<<) are not allowed; write the keys out", _mark_line(key_node))
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, str):
            raise InputInvalid(f"mapping keys must be strings, got {key!r}", _mark_line(key_node))
        if key in seen:
            raise InputInvalid(f"duplicate key {key!r} (first on line {seen[key]})", _mark_line(key_node))
        seen[key] = _mark_line(key_node)
    return loader.construct_mapping(node, deep=deep)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if not _DECIMAL_INT.match(text):
        raise InputInvalid(f"{text!r} is not a plain decimal integer; quote it if it is text", _mark_line(node))
    try:
        return int(text)
    except ValueError as exc:  # more digits than int() converts
        raise InputInvalid(f"integer of {len(text)} digits is too long", _mark_line(node)) from exc


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> float:
    text = str(node.value)
    if not _PLAIN_FLOAT.match(text):
        raise InputInvalid(f"{text!r} is not a finite decimal number", _mark_line(node))
    value = float(text)
    if not math.isfinite(value):  # `1.0e+999` matches the pattern but overflows
        raise InputInvalid(f"{text!r} overflows to infinity", _mark_line(node))
    return value


def _construct_timestamp_as_text(loader: _StrictLoader, node: yaml.ScalarNode) -> str:
    # Dates stay text; the schemas check their format, so `2026-09-15` and "2026-09-15" mean the same.
    return str(node.value)


_StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def _check_depth(value: Any, depth: int = 0) -> None:
    if depth > MAX_DEPTH:
        raise InputInvalid(f"nesting deeper than {MAX_DEPTH} levels")
    if isinstance(value, dict):
        for v in value.values():
            _check_depth(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            _check_depth(v, depth + 1)


def _check_size(data: bytes) -> str:
    if len(data) > MAX_BYTES:
        raise InputInvalid(f"file is {len(data)} bytes, over the {MAX_BYTES}-byte limit")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputInvalid(f"not valid UTF-8 at byte {exc.start}") from exc


def load_yaml(data: bytes) -> Any:
    """One YAML document, strictly; raises InputInvalid."""
    text = _check_size(data)
    try:
        docs = list(yaml.load_all(text, Loader=_StrictLoader))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise InputInvalid(f"not valid YAML: {exc.problem or exc}", line) from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise InputInvalid(f"not valid YAML: {exc}") from exc
    if len(docs) != 1:
        raise InputInvalid(f"expected exactly one YAML document, found {len(docs)}")
    _check_depth(docs[0])
    return docs[0]


def _reject_constant(name: str) -> float:
    raise InputInvalid(f"non-finite number {name} is not allowed")


def _pairs_no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InputInvalid(f"duplicate key {key!r}")
        out[key] = value
    return out


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise InputInvalid(f"number {text} overflows to infinity")
    return value


def load_json(data: bytes) -> Any:
    """One JSON value, strictly; raises InputInvalid with the line where json reports one."""
    text = _check_size(data)
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs_no_duplicates, parse_constant=_reject_constant, parse_float=_finite_float
        )
    except json.JSONDecodeError as exc:
        raise InputInvalid(f"not valid JSON: {exc.msg}", exc.lineno) from exc
    except InputInvalid as exc:
        if exc.line is None:  # the pairs hook knows no position; the scanner finds the duplicate's line
            try:
                json_lines(data)
            except InputInvalid as located:
                raise located from exc
            except (IndexError, ValueError):  # the scanner gave up: keep the error without a line
                pass
        raise
    except RecursionError as exc:
        raise InputInvalid("nesting too deep") from exc
    except ValueError as exc:  # an integer with more digits than int() converts
        raise InputInvalid(f"not valid JSON: {exc}") from exc
    _check_depth(value)
    return value


NodePath = tuple[str | int, ...]


def yaml_lines(data: bytes) -> dict[NodePath, int]:
    """The 1-based line of every value of a YAML document that `load_yaml` accepted, keyed by its path.

    A mapping member's line is its key's line; a sequence item's is where the item starts.
    """
    root = yaml.compose(data.decode("utf-8"), Loader=_StrictLoader)
    out: dict[NodePath, int] = {}
    stack: list[tuple[yaml.Node, NodePath, int]] = [] if root is None else [(root, (), root.start_mark.line + 1)]
    while stack:
        node, path, line = stack.pop()
        out[path] = line
        if isinstance(node, yaml.MappingNode):
            stack.extend((v, (*path, str(k.value)), k.start_mark.line + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, (*path, i), v.start_mark.line + 1) for i, v in enumerate(node.value))
    return out


_JSON_WS = " \t\r\n"
_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - public in json.decoder, missing from typeshed
_JSON_END = ",]}" + _JSON_WS


def json_lines(data: bytes) -> dict[NodePath, int]:
    """The 1-based line of every value of a JSON text that `load_json` accepted, keyed by its path.

    A member's line is its key's line. Raises InputInvalid with the line of a duplicate key.
    """
    text = data.decode("utf-8")
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    out: dict[NodePath, int] = {}

    def skip(i: int) -> int:
        while i < len(text) and text[i] in _JSON_WS:
            i += 1
        return i

    def value(i: int, path: NodePath, line: int | None) -> int:
        i = skip(i)
        out[path] = line if line is not None else bisect_right(starts, i)
        if text[i] == '"':
            return int(_scanstring(text, i + 1)[1])
        if text[i] not in "[{":
            while i < len(text) and text[i] not in _JSON_END:
                i += 1
            return i
        closing, index, seen = ("}" if text[i] == "{" else "]"), 0, set()
        i = skip(i + 1)
        while text[i] != closing:
            if closing == "}":
                key_line = bisect_right(starts, i)
                key, i = _scanstring(text, i + 1)
                if key in seen:
                    raise InputInvalid(f"duplicate key {key!r}", key_line)
                seen.add(key)
                i = value(skip(i) + 1, (*path, key), key_line)
            else:
                i = value(i, (*path, index), None)
                index += 1
            i = skip(i)
            if text[i] == ",":
                i = skip(i + 1)
        return i + 1

    value(0, (), None)
    return out
