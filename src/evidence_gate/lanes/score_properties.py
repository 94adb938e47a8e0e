"""Parsing of the `SCORE_PROPERTIES` list: one test file or node id per line, then `key=value` words."""

from __future__ import annotations

import unicodedata

from evidence_gate.errors import InputInvalid
from evidence_gate.records import dataclass
from evidence_gate.visible import HOSTILE_CATEGORIES

ORACLES = ("human_reviewed", "model_draft")
_KEYS = ("oracle", "counterexample")


@dataclass(frozen=True)
class PropertySpec:
    """One entry of the list."""

    node: str
    oracle: str = "human_reviewed"
    counterexample: str | None = None
    line: int = 0

    @property
    def file(self) -> str:
        """The test file the node lives in."""
        return self.node.split("::", 1)[0]


def _check_node(node: str, line: int) -> None:
    file = node.split("::", 1)[0]
    hidden = [c for c in node if unicodedata.category(c) in HOSTILE_CATEGORIES]
    if hidden:  # a BOM or zero-width space would lock a file that does not exist instead of the real one
        raise InputInvalid(f"{node!r} contains the invisible character U+{ord(hidden[0]):04X}", line)
    if not file.endswith(".py") or file.startswith("/") or ".." in file.split("/") or "\\" in file:
        raise InputInvalid(f"{node!r} is not a repository-relative .py test file or node id", line)


def parse_properties(data: bytes) -> tuple[PropertySpec, ...]:
    """All entries; raises InputInvalid on a malformed line, unknown key or duplicate node."""
    try:
        text = data.decode("utf-8-sig")  # an editor's byte-order mark is not part of the first node id
    except UnicodeDecodeError as exc:
        raise InputInvalid(f"not valid UTF-8 at byte {exc.start}") from exc
    specs: list[PropertySpec] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        words = raw.split("#", 1)[0].split()
        if not words:
            continue
        node, options = words[0], {}
        _check_node(node, number)
        for word in words[1:]:
            key, sep, value = word.partition("=")
            if not sep or key not in _KEYS or not value:
                raise InputInvalid(f"unknown option {word!r}; expected oracle=... or counterexample=NODE", number)
            if key in options:
                raise InputInvalid(f"option {key!r} given twice", number)
            options[key] = value
        oracle = options.get("oracle", "human_reviewed")
        if oracle not in ORACLES:
            raise InputInvalid(f"oracle={oracle} is not one of {', '.join(ORACLES)}", number)
        counterexample = options.get("counterexample")
        if counterexample is not None:
            _check_node(counterexample, number)
        if node in seen:
            raise InputInvalid(f"{node!r} is listed twice (first on line {seen[node]})", number)
        seen[node] = number
        specs.append(PropertySpec(node, oracle, counterexample, number))
    return tuple(specs)
