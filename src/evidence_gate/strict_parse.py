"""Strict YAML and JSON loading for files a patch may have written.

Duplicate keys, YAML anchors/aliases and explicit tags, non-finite numbers and YAML 1.1 coercions that change a
value's meaning (sexagesimal `1:30`, `0x1F`, `1_000`) are errors, never silently accepted. Errors carry the line.
"""

from __future__ import annotations

import json
import math
import re
from bisect import bisect_right

import yaml

from evidence_gate.errors import InputInvalid

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_BYTES = 1 << 20
MAX_DEPTH = 32
_DECIMAL_INT = re.compile(r"[-+]?(0|[1-9][0-9]*)\Z")
_PLAIN_FLOAT = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_IMPLICIT: dict[str | None, list[tuple[str, re.Pattern[str]]]] = yaml.resolver.Resolver.yaml_implicit_resolvers
_BOOLS = yaml.constructor.SafeConstructor.bool_values


def _resolve(value: str, implicit: tuple[bool, bool]) -> str:
    """The tag YAML 1.1's implicit resolvers give a scalar: `Resolver.resolve` for a scalar, without its path
    resolvers (SafeLoader registers none), `str` when none matches or the scalar is quoted."""
    if implicit[0]:
        for tag, regexp in _IMPLICIT.get(value[:1], []) + _IMPLICIT.get(None, []):
            if regexp.match(value):
                return tag
    return _STR


class _PyParser(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser):
    """PyYAML's pure-Python event parser: the same events as libyaml's, slower (the tests run both)."""

    def __init__(self, stream: str) -> None:
        yaml.reader.Reader.__init__(self, stream)
        yaml.scanner.Scanner.__init__(self)
        yaml.parser.Parser.__init__(self)


PARSERS: dict[str, Callable[[str], Any]] = {"python": _PyParser}
try:
    from yaml._yaml import CParser

    PARSERS["libyaml"] = CParser
except ImportError:  # pragma: no cover - a PyYAML built without libyaml reads the same, about 15 times slower
    pass
_PARSER = PARSERS.get("libyaml", _PyParser)

NodePath = tuple[str | int, ...]
# Event classes as plain values: `type(e) is C` is the fast test, and mypy need not narrow the parser's events.
_SCALAR: Any = yaml.ScalarEvent
_ALIAS: Any = yaml.AliasEvent
_SEQUENCE: Any = yaml.SequenceStartEvent
_SEQUENCE_END: Any = yaml.SequenceEndEvent
_MAPPING_END: Any = yaml.MappingEndEvent


class _Builder:
    """One pass over the parser's events: the strict document and the line of every value, together.

    What the composer and constructor of a SafeLoader would do, minus aliases, anchors, explicit tags, merge keys,
    non-string and duplicate keys and surprising scalars, and with a depth bound checked before descending. The
    first problem in document order is raised, at its line.
    """

    def __init__(self, parser: Any) -> None:
        self.parser = parser
        self.lines: dict[NodePath, int] = {}

    def document(self) -> Any:
        """The next document's value (the DocumentStart event is next)."""
        self.lines = {}
        self.parser.get_event()
        event = self.parser.get_event()
        value = self.node(event, (), event.start_mark.line + 1, 1)
        self.parser.get_event()  # DocumentEnd
        return value

    def node(self, event: Any, path: NodePath, line: int, depth: int, as_key: bool = False) -> Any:
        """The value that starts with `event`, recorded at `line` under `path` (a mapping key is not recorded)."""
        here = event.start_mark.line + 1
        kind = type(event)
        if kind is _ALIAS:
            raise InputInvalid("YAML aliases are not allowed", here)
        if event.anchor is not None:
            raise InputInvalid(f"YAML anchors are not allowed (&{event.anchor})", here)
        tag, implicit = event.tag, event.implicit
        if tag is not None and tag != "!" and not (implicit is True or (isinstance(implicit, tuple) and implicit[0])):
            raise InputInvalid(f"YAML tags are not allowed ({tag})", here)
        if depth > MAX_DEPTH:
            raise InputInvalid(f"nesting deeper than {MAX_DEPTH} levels", here)
        if not as_key:
            self.lines[path] = line
        if kind is _SCALAR:
            resolved = tag if tag not in (None, "!") else _resolve(event.value, implicit)
            if as_key and resolved == _MERGE:
                raise InputInvalid("YAML merge keys (<<) are not allowed; write the keys out", here)
            return _scalar(event.value, resolved, here)
        get, lines = self.parser.get_event, self.lines
        plain = depth < MAX_DEPTH  # a child scalar without anchor or tag passes every check above: read it inline
        if kind is _SEQUENCE:
            items: list[Any] = []
            event = get()
            while type(event) is not _SEQUENCE_END:
                if plain and type(event) is _SCALAR and event.anchor is None and event.tag is None:
                    here = event.start_mark.line + 1
                    lines[(*path, len(items))] = here
                    text = event.value
                    tag = _resolve(text, event.implicit) if event.implicit[0] else _STR
                    items.append(text if tag == _STR else _scalar(text, tag, here))
                else:
                    items.append(self.node(event, (*path, len(items)), event.start_mark.line + 1, depth + 1))
                event = get()
            return items
        mapping: dict[str, Any] = {}
        seen: dict[str, int] = {}
        event = get()
        while type(event) is not _MAPPING_END:
            key_line = event.start_mark.line + 1
            if plain and type(event) is _SCALAR and event.anchor is None and event.tag is None:
                key = event.value
                tag = _resolve(key, event.implicit) if event.implicit[0] else _STR
                if tag != _STR:
                    key = self.node(event, path, key_line, depth + 1, as_key=True)
            else:
                key = self.node(event, path, key_line, depth + 1, as_key=True)
            if not isinstance(key, str):
                raise InputInvalid(f"mapping keys must be strings, got {key!r}", key_line)
            if key in seen:
                raise InputInvalid(f"duplicate key {key!r} (first on line {seen[key]})", key_line)
            seen[key] = key_line
            event = get()
            if plain and type(event) is _SCALAR and event.anchor is None and event.tag is None:
                lines[(*path, key)] = key_line
                text = event.value
                tag = _resolve(text, event.implicit) if event.implicit[0] else _STR
                mapping[key] = text if tag == _STR else _scalar(text, tag, event.start_mark.line + 1)
            else:
                mapping[key] = self.node(event, (*path, key), key_line, depth + 1)
            event = get()
        return mapping


def _scalar(text: str, tag: str, line: int) -> Any:
    """A plain or quoted scalar's value under the tag the YAML 1.1 resolver gave it."""
    if tag == _STR:
        return text
    if tag == "tag:yaml.org,2002:int":
        if not _DECIMAL_INT.match(text):
            raise InputInvalid(f"{text!r} is not a plain decimal integer; quote it if it is text", line)
        try:
            return int(text)
        except ValueError as exc:  # more digits than int() converts
            raise InputInvalid(f"integer of {len(text)} digits is too long", line) from exc
    if tag == "tag:yaml.org,2002:float":
        if not _PLAIN_FLOAT.match(text):
            raise InputInvalid(f"{text!r} is not a finite decimal number", line)
        value = float(text)
        if not math.isfinite(value):  # `1.0e+999` matches the pattern but overflows
            raise InputInvalid(f"{text!r} overflows to infinity", line)
        return value
    if tag == "tag:yaml.org,2002:bool":
        return _BOOLS[text.lower()]
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:timestamp":
        # Dates stay text; the schemas check their format, so `2026-09-15` and "2026-09-15" mean the same.
        return text
    # `<<` as a value, `=` (YAML 1.1's value key): SafeLoader has no constructor for them either.
    raise InputInvalid(f"not valid YAML: could not determine a constructor for the tag {tag!r}", line)


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


def load_yaml_lines(data: bytes, parser: Callable[[str], Any] = _PARSER) -> tuple[Any, dict[NodePath, int]]:
    """One YAML document, strictly, and the 1-based line of each of its values keyed by path; raises InputInvalid.

    A mapping member's line is its key's line; a sequence item's is where the item starts. One pass over the
    events of `parser` (libyaml's when PyYAML has it).
    """
    text = _check_size(data)
    docs: list[tuple[Any, dict[NodePath, int]]] = []
    try:
        events = parser(text)
        builder = _Builder(events)
        events.get_event()  # StreamStart
        while not events.check_event(yaml.StreamEndEvent):
            docs.append((builder.document(), builder.lines))
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark is not None else None
        raise InputInvalid(f"not valid YAML: {exc.problem or exc}", line) from exc
    except yaml.YAMLError as exc:
        raise InputInvalid(f"not valid YAML: {exc}") from exc
    if len(docs) != 1:
        raise InputInvalid(f"expected exactly one YAML document, found {len(docs)}")
    return docs[0]


def load_yaml(data: bytes) -> Any:
    """One YAML document, strictly; raises InputInvalid."""
    return load_yaml_lines(data)[0]


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


_scanstring: Any = getattr(json.decoder, "scanstring")  # noqa: B009 - public in json.decoder, missing from typeshed
_JSON_WS_RUN = re.compile(r"[ \t\r\n]*")
_JSON_SCALAR = re.compile(r"[^,\]} \t\r\n]*")  # a number, true, false or null runs to the next delimiter


def json_lines(data: bytes) -> dict[NodePath, int]:
    """The 1-based line of every value of a JSON text that `load_json` accepted, keyed by its path.

    A member's line is its key's line. Raises InputInvalid with the line of a duplicate key.
    """
    text = data.decode("utf-8")
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out: dict[NodePath, int] = {}

    def skip(i: int) -> int:
        return _JSON_WS_RUN.match(text, i).end()  # type: ignore[union-attr]  # `*` always matches

    def value(i: int, path: NodePath, line: int | None) -> int:
        i = skip(i)
        out[path] = line if line is not None else bisect_right(starts, i)
        if text[i] == '"':
            return int(_scanstring(text, i + 1)[1])
        if text[i] not in "[{":
            return _JSON_SCALAR.match(text, i).end()  # type: ignore[union-attr]
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
