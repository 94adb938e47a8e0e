"""Ledger builders and Hypothesis strategies for the freeze-ledger tests (kept in one module)."""

from __future__ import annotations

import json
from datetime import date, timedelta
from typing import Any

import yaml
from hypothesis import strategies as st

SPEC_YAML = b"""version: 1
budget: {max_entries: 12, max_bytes: 4096, max_ttl_days: 14}
entries:
  - id: parser-timeout-large-input
    test: tests/test_parser.py::test_large_input
    assertion_hash: "e3b0c44298fc1c149afbf4c8996fb924"   # at least 32 hex chars of sha256 of the failing assertion
    added_at: "2026-09-15"
    expires: "2026-09-29"
    owner: humans
    reason: timing                                       # optional here; timing | network | order | infra
"""

SPEC_JSON = b"""{"version": 1,
 "frozen": [{"id": "tests/test_allocate.py::test_concurrent_realloc", "reason": "timing",
             "expires": "2026-09-20", "owner": "human", "added": "2026-09-06"}]}
"""

HASH = "e3b0c44298fc1c149afbf4c8996fb924"


def yaml_entry(id_: str, **fields: Any) -> dict[str, Any]:
    """A valid freeze.yaml entry; keyword arguments override fields (None drops one)."""
    entry: dict[str, Any] = {
        "id": id_,
        "test": f"tests/test_x.py::test_{id_.replace('-', '_')}",
        "assertion_hash": HASH,
        "added_at": "2026-09-15",
        "expires": "2026-09-29",
        "owner": "humans",
        "reason": "timing",
    }
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


def json_entry(id_: str, **fields: Any) -> dict[str, Any]:
    """A valid freeze.json entry; keyword arguments override fields (None drops one)."""
    entry: dict[str, Any] = {
        "id": id_,
        "reason": "timing",
        "expires": "2026-09-29",
        "owner": "human",
        "added": "2026-09-15",
        "assertion_hash": HASH,
    }
    entry.update(fields)
    return {k: v for k, v in entry.items() if v is not None}


def render(entries: list[dict[str, Any]], budget: dict[str, int] | None = None, fmt: str = "yaml") -> bytes:
    """A ledger file in either format (budget None: no budget key)."""
    doc: dict[str, Any] = {"version": 1}
    if budget is not None:
        doc["budget"] = budget
    doc["entries" if fmt == "yaml" else "frozen"] = entries
    if fmt == "json":
        return json.dumps(doc, indent=1).encode()
    return yaml.safe_dump(doc, sort_keys=False).encode()


TODAY = date(2026, 9, 20)
_ID = st.from_regex(r"[a-z][a-z0-9_-]{0,11}(::[a-z_]{1,6})?", fullmatch=True)


@st.composite
def entry_fields(draw: st.DrawFn, fmt: str) -> dict[str, Any]:
    """The fields of one valid entry (id filled in by `ledgers`), dates around TODAY within a 14-day TTL."""
    added = TODAY - timedelta(days=draw(st.integers(0, 20)))
    expires = added + timedelta(days=draw(st.integers(0, 14)))
    common = {
        "expires": expires.isoformat(),
        "owner": draw(st.sampled_from(["humans", "alice", "@org/qa"])),
        "reason": draw(st.sampled_from(["timing", "network", "order", "infra", None])),
        "assertion_hash": draw(st.text("0123456789abcdef", min_size=32, max_size=64)),
    }
    if fmt == "json":
        return {**common, "added": added.isoformat()}
    return {**common, "added_at": added.isoformat(), "test": draw(_ID)}


@st.composite
def ledgers(draw: st.DrawFn, fmt: str) -> list[dict[str, Any]]:
    """A list of valid entries with unique ids (case-insensitively)."""
    ids = draw(st.lists(_ID, max_size=8, unique_by=str.casefold))
    out = []
    for id_ in ids:
        fields = draw(entry_fields(fmt))
        out.append({k: v for k, v in {"id": id_, **fields}.items() if v is not None})
    return out
