"""strict_parse as it was before it was made fast, kept as the oracle the equivalence tests compare it with: the
YAML loader (PyYAML's composer and SafeConstructor with checks in `compose_node` and the constructors, then a
second `compose` for the line map) and the character-by-character JSON line scanner. Slow; not used by the gate."""

from __future__ import annotations

import json
import math
from bisect import bisect_right
from typing import Any

import yaml

from evidence_gate.errors import InputInvalid
from evidence_gate.strict_parse import _DECIMAL_INT, _PLAIN_FLOAT, MAX_DEPTH, NodePath


def _mark_line(node: yaml.Node | None) -> int | None:
    mark = node.start_mark if node is not None else None
    return mark.line + 1 if mark is not None else None


class StrictLoader(yaml.SafeLoader):
    """SafeLoader minus aliases, anchors, explicit tags, duplicate keys and surprising scalars."""

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        """The old checks, on every node as it is composed."""
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


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
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


def _construct_int(loader: StrictLoader, node: yaml.ScalarNode) -> int:
    text = str(node.value)
    if not _DECIMAL_INT.match(text):
        raise InputInvalid(f"{text!r} is not a plain decimal integer; quote it if it is text", _mark_line(node))
    try:
        return int(text)
    except ValueError as exc:
        raise InputInvalid(f"integer of {len(text)} digits is too long", _mark_line(node)) from exc


def _construct_float(loader: StrictLoader, node: yaml.ScalarNode) -> float:
    text = str(node.value)
    if not _PLAIN_FLOAT.match(text):
        raise InputInvalid(f"{text!r} is not a finite decimal number", _mark_line(node))
    value = float(text)
    if not math.isfinite(value):
        raise InputInvalid(f"{text!r} overflows to infinity", _mark_line(node))
    return value


def _construct_timestamp_as_text(loader: StrictLoader, node: yaml.ScalarNode) -> str:
    return str(node.value)


StrictLoader.add_constructor("tag:yaml.org,2002:map", _construct_mapping)
StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_timestamp_as_text)


def load_yaml_lines(data: bytes) -> tuple[Any, dict[NodePath, int]]:
    """The old `load_yaml` and `yaml_lines` of one document; raises InputInvalid as they did."""
    text = data.decode("utf-8")
    try:
        docs = list(yaml.load_all(text, Loader=StrictLoader))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise InputInvalid(f"not valid YAML: {exc.problem or exc}", line) from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise InputInvalid(f"not valid YAML: {exc}") from exc
    if len(docs) != 1:
        raise InputInvalid(f"expected exactly one YAML document, found {len(docs)}")
    root = yaml.compose(text, Loader=StrictLoader)
    out: dict[NodePath, int] = {}
    stack: list[tuple[yaml.Node, NodePath, int]] = [] if root is None else [(root, (), root.start_mark.line + 1)]
    while stack:
        node, path, line = stack.pop()
        out[path] = line
        if isinstance(node, yaml.MappingNode):
            stack.extend((v, (*path, str(k.value)), k.start_mark.line + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((v, (*path, i), v.start_mark.line + 1) for i, v in enumerate(node.value))
    return docs[0], out


_JSON_WS = " \t\r\n"
_JSON_END = ",]}" + _JSON_WS


def json_lines(data: bytes) -> dict[NodePath, int]:
    """The old JSON line map, one character at a time."""
    text = data.decode("utf-8")
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]
    out: dict[NodePath, int] = {}
    scan: Any = json.decoder.scanstring  # type: ignore[attr-defined]

    def skip(i: int) -> int:
        while i < len(text) and text[i] in _JSON_WS:
            i += 1
        return i

    def value(i: int, path: NodePath, line: int | None) -> int:
        i = skip(i)
        out[path] = line if line is not None else bisect_right(starts, i)
        if text[i] == '"':
            return int(scan(text, i + 1)[1])
        if text[i] not in "[{":
            while i < len(text) and text[i] not in _JSON_END:
                i += 1
            return i
        closing, index = ("}" if text[i] == "{" else "]"), 0
        i = skip(i + 1)
        while text[i] != closing:
            if closing == "}":
                key_line = bisect_right(starts, i)
                key, i = scan(text, i + 1)
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
