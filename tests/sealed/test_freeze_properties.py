"""Hypothesis properties of the freeze-ledger lane: shrinking is always allowed, growing never is."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from evidence_gate.config import Config, FreezeConfig
from evidence_gate.lanes.freeze import ledger as freeze_ledger
from support.freeze_strategies import TODAY, entry_fields, ledgers, render

GROWTH = {"freeze-id-added", "freeze-expiry-extended", "freeze-budget-raised", "freeze-entry-rewritten"}
CONFIGS = {"yaml": Config(), "json": Config(freeze=FreezeConfig(file="freeze.json"))}
FAST = settings(max_examples=60, deadline=None)


def _budget(entries: list[dict[str, Any]], slack: int) -> dict[str, int]:
    size = len(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode())
    return {"max_entries": len(entries) + slack, "max_bytes": size + slack * 50, "max_ttl_days": 14}


@FAST
@given(st.sampled_from(["yaml", "json"]).flatmap(lambda f: st.tuples(st.just(f), ledgers(f))), st.data())
def test_any_subset_is_a_clean_shrink(case: tuple[str, list[dict[str, Any]]], data: st.DataObject) -> None:
    """Keeping any subset of a valid ledger's entries, unchanged and in any order, finds no violation at all."""
    fmt, entries = case
    budget = _budget(entries, data.draw(st.integers(0, 3)))
    kept = data.draw(st.permutations(entries).flatmap(lambda p: st.integers(0, len(p)).map(lambda n: p[:n])))
    result = freeze_ledger.check(render(entries, budget, fmt), render(kept, budget, fmt), CONFIGS[fmt], TODAY)
    assert [v.render() for v in result.lane.violations] == []
    assert {e.id for e in result.removed} == {e["id"] for e in entries} - {e["id"] for e in kept}
    assert {e.id for e in result.active + result.expired} == {e["id"] for e in kept}


@FAST
@given(st.sampled_from(["yaml", "json"]).flatmap(lambda f: st.tuples(st.just(f), ledgers(f))), st.data())
def test_adding_any_entry_is_id_added(case: tuple[str, list[dict[str, Any]]], data: st.DataObject) -> None:
    """Inserting any valid entry with an id the baseline lacks, anywhere, always yields freeze-id-added."""
    fmt, entries = case
    budget = _budget(entries, 1)
    existing = {e["id"] for e in entries}
    new_id = data.draw(
        st.one_of(
            st.from_regex(r"[a-zA-Z][a-zA-Z0-9_-]{0,11}", fullmatch=True),
            st.sampled_from(sorted(existing) or ["x"]).map(str.upper),
        ).filter(lambda i: i not in existing)
    )
    new = {k: v for k, v in {"id": new_id, **data.draw(entry_fields(fmt))}.items() if v is not None}
    head = list(entries)
    head.insert(data.draw(st.integers(0, len(entries))), new)
    result = freeze_ledger.check(render(entries, budget, fmt), render(head, budget, fmt), CONFIGS[fmt], TODAY)
    assert "freeze-id-added" in {v.row for v in result.lane.violations}
    assert new_id in result.lane.receipt["added"]


@FAST
@given(st.sampled_from(["yaml", "json"]).flatmap(lambda f: st.tuples(st.just(f), ledgers(f))), st.data())
def test_changing_a_kept_entry_is_caught(case: tuple[str, list[dict[str, Any]]], data: st.DataObject) -> None:
    """Changing any field of a kept entry is a growth row, except moving `expires` earlier."""
    fmt, entries = case
    assume(entries)  # an early `return` would count an empty ledger as a passing example
    budget = _budget(entries, 0)
    index = data.draw(st.integers(0, len(entries) - 1))
    replacement = data.draw(entry_fields(fmt))
    field = data.draw(st.sampled_from(sorted(set(replacement) | set(entries[index]) - {"id"})))
    before, after = entries[index].get(field), replacement.get(field)
    assume(before != after)
    head = [dict(e) for e in entries]
    head[index] = {k: v for k, v in {**head[index], field: after}.items() if v is not None}
    result = freeze_ledger.check(render(entries, budget, fmt), render(head, budget, fmt), CONFIGS[fmt], TODAY)
    found = {v.row for v in result.lane.violations}
    if field == "expires" and after < before:
        assert not found & GROWTH
    else:
        assert found & (GROWTH | {"freeze-ledger-invalid"}), (field, before, after)
