"""The freeze ledger's file formats, one registry entry each: a new format is an entry here plus its schema.

A format says how its bytes parse (strictly, with a line per node), which schema in `data/` checks the document,
the key of its entry list, and what it calls the fields of an entry. The format is chosen by the ledger file's
name (`freeze.file` in the configuration); anything no entry claims is YAML, the default ledger's format.
"""

from __future__ import annotations

from evidence_gate.model import FreezeEntry
from evidence_gate.records import dataclass, field
from evidence_gate.strict_parse import NodePath, json_lines, load_json, load_yaml_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


def _json_document(data: bytes) -> tuple[Any, dict[NodePath, int]]:
    return load_json(data), json_lines(data)


@dataclass(frozen=True)
class LedgerFormat:
    """One ledger file format."""

    name: str  # the receipt's `freeze.format`
    suffixes: tuple[str, ...]  # lower-case file name endings that pick it
    schema: str  # the schema in data/ that checks a parsed document
    list_key: str  # the key of the entry list
    load: Callable[[bytes], tuple[Any, dict[NodePath, int]]]  # strict parse: (document, line of each node path)
    keys: dict[str, str] = field(default_factory=dict)  # FreezeEntry field -> this format's key, where they differ

    def key(self, entry_field: str) -> str:
        """This format's key for a FreezeEntry field."""
        return self.keys.get(entry_field, entry_field)

    def entry(self, item: dict[str, Any], line: int) -> FreezeEntry:
        """A schema-valid entry of this format as a FreezeEntry at `line`."""
        return FreezeEntry(
            id=item["id"],
            test=item[self.key("test")],
            expires=item["expires"],
            added=item[self.key("added")],
            owner=item["owner"],
            assertion_hash=item.get("assertion_hash"),
            reason=item.get("reason"),
            line=line,
        )


YAML = LedgerFormat(
    "yaml", (".yaml", ".yml"), "freeze-yaml.schema.json", "entries", load_yaml_lines, {"added": "added_at"}
)
# The article's JSON ledger: an entry's id is its test's node id.
JSON = LedgerFormat("json", (".json",), "freeze-json.schema.json", "frozen", _json_document, {"test": "id"})
FORMATS = (YAML, JSON)


def format_of(path: str) -> LedgerFormat:
    """The format of the ledger file at `path`: the entry whose suffix it ends with, else YAML."""
    lowered = path.lower()
    return next((f for f in FORMATS if lowered.endswith(f.suffixes)), YAML)
