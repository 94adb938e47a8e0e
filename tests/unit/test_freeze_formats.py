"""The freeze ledger's format registry: each entry names a schema that ships, and the file name picks the entry."""

from __future__ import annotations

from datetime import date

import pytest

from evidence_gate import package_data
from evidence_gate.config import Config, FreezeConfig
from evidence_gate.lanes.freeze import formats, ledger
from support.freeze_strategies import SPEC_JSON, SPEC_YAML


def test_every_format_ships_its_schema_and_is_named_once() -> None:
    """A registry entry's schema is package data, and names and suffixes are unique across the registry."""
    for fmt in formats.FORMATS:
        assert package_data.read_text(fmt.schema).strip().startswith("{"), fmt.name
    names = [f.name for f in formats.FORMATS]
    suffixes = [s for f in formats.FORMATS for s in f.suffixes]
    assert len(set(names)) == len(names) and len(set(suffixes)) == len(suffixes)
    assert all(s == s.lower() and s.startswith(".") for s in suffixes)


@pytest.mark.parametrize(
    ("path", "name"),
    [("freeze.yaml", "yaml"), ("ci/Freeze.YML", "yaml"), ("freeze.json", "json"), ("q/FREEZE.JSON", "json")],
)
def test_the_file_name_picks_the_format(path: str, name: str) -> None:
    """The suffix picks the format, in any case."""
    assert formats.format_of(path).name == name


def test_a_name_no_format_claims_is_read_as_yaml() -> None:
    """A ledger file with another ending is the default ledger's format, YAML (as before the registry)."""
    assert formats.format_of("quarantine.txt") is formats.YAML


@pytest.mark.parametrize(("fmt", "data"), [(formats.YAML, SPEC_YAML), (formats.JSON, SPEC_JSON)], ids=["yaml", "json"])
def test_each_format_reads_spec_example_into_entries_and_names_the_receipt_format(
    fmt: formats.LedgerFormat, data: bytes
) -> None:
    """SPEC's example of each format parses through its entry; the receipt records the entry's name as the format."""
    file = "freeze." + fmt.name
    result = ledger.check(data, data, Config(freeze=FreezeConfig(file=file)), date(2026, 9, 16))
    assert result.lane.violations == ()
    assert result.lane.receipt["format"] == fmt.name
    (entry,) = result.active or result.expired
    assert entry.added in {"2026-09-15", "2026-09-06"} and entry.test.startswith("tests/")
    assert entry.line == (4 if fmt is formats.YAML else 2)  # the line that opens the entry
