"""The freeze-ledger lane on ledger bytes: parsing, rules and every kind of growth (each static `freeze-*` row)."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import date
from typing import Any

import pytest

from evidence_gate.config import Config, FreezeConfig, parse_config
from evidence_gate.lanes.freeze import ledger as freeze_ledger
from evidence_gate.model import Violation
from evidence_gate.receipt.write import empty_receipt, validate
from support.freeze_strategies import HASH, SPEC_JSON, SPEC_YAML, TODAY, json_entry, render, yaml_entry

JSON_CONFIG = Config(freeze=FreezeConfig(file="freeze.json"))
BUDGET = {"max_entries": 12, "max_bytes": 4096, "max_ttl_days": 14}
BASE = render([yaml_entry("a"), yaml_entry("b")], BUDGET)


def run(
    base: bytes | None, head: bytes | None, config: Config | None = None, today: date = TODAY
) -> freeze_ledger.LedgerResult:
    """The lane's result for two ledger versions."""
    return freeze_ledger.check(base, head, config or Config(), today)


def rows(result: freeze_ledger.LedgerResult) -> list[str]:
    """The rows of the static violations, in order."""
    return [v.row for v in result.lane.violations]


def only(result: freeze_ledger.LedgerResult, row: str) -> Violation:
    """The single violation, asserting it has `row`."""
    assert rows(result) == [row], [v.render() for v in result.lane.violations]
    return result.lane.violations[0]


def test_spec_yaml_example_is_valid() -> None:
    """SPEC's freeze.yaml example, verbatim, parses, validates and stays active."""
    result = run(SPEC_YAML, SPEC_YAML)
    assert rows(result) == []
    assert [e.id for e in result.active] == ["parser-timeout-large-input"]
    entry = result.active[0]
    assert (entry.test, entry.added, entry.expires, entry.owner, entry.reason, entry.assertion_hash, entry.line) == (
        "tests/test_parser.py::test_large_input",
        "2026-09-15",
        "2026-09-29",
        "humans",
        "timing",
        HASH,
        4,
    )


def test_spec_json_example_is_valid() -> None:
    """SPEC's freeze.json example, verbatim, parses and validates; id and test are the node id."""
    result = run(SPEC_JSON, SPEC_JSON, JSON_CONFIG)
    assert rows(result) == []
    (entry,) = result.active  # expires 2026-09-20 == today: still honoured that day
    assert entry.id == entry.test == "tests/test_allocate.py::test_concurrent_realloc"
    assert (entry.added, entry.owner, entry.assertion_hash, entry.line) == ("2026-09-06", "human", None, 2)
    assert run(SPEC_JSON, SPEC_JSON, JSON_CONFIG, date(2026, 9, 21)).expired == (entry,)


def test_unchanged_ledger_is_clean_and_receipt_describes_it() -> None:
    """A flat ledger yields no violation and a receipt naming the file's digest, budget and entries."""
    result = run(BASE, BASE)
    assert rows(result) == []
    receipt = result.lane.receipt
    assert receipt["file_sha256"] == "sha256:" + hashlib.sha256(BASE).hexdigest()
    assert (receipt["added"], receipt["removed"], receipt["active"], receipt["entries"]) == ([], [], ["a", "b"], 2)
    assert receipt["budget"]["limits"] == BUDGET
    assert receipt["valid"] is True


BILLION_LAUGHS = b"""version: 1
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
entries: [*g,*g,*g,*g,*g,*g,*g,*g,*g]
"""


def test_billion_laughs_fails_fast() -> None:
    """A ~400-byte alias bomb is invalid within milliseconds instead of expanding."""
    assert len(BILLION_LAUGHS) < 500
    start = time.perf_counter()
    violation = only(run(BASE, BILLION_LAUGHS), "freeze-ledger-invalid")
    assert time.perf_counter() - start < 0.5
    assert "anchor" in violation.message and violation.line == 2


def _yaml_with(entry_text: str, budget: str = "{max_entries: 12, max_bytes: 4096, max_ttl_days: 14}") -> bytes:
    return f"version: 1\nbudget: {budget}\nentries:\n  - id: a\n{entry_text}".encode()


ENTRY_A = (
    f"    test: tests/test_x.py::test_a\n    assertion_hash: {HASH}\n    added_at: 2026-09-15\n"
    "    expires: 2026-09-29\n    owner: humans\n"
)

INVALID_YAML: dict[str, tuple[bytes, str, int]] = {
    # yaml.safe_load keeps the last `expires`, silently extending the entry.
    "duplicate-key": (_yaml_with(ENTRY_A + "    expires: 2026-12-31\n"), "duplicate key 'expires'", 10),
    "python-tag": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: !!python/object:os.system humans")), "tags", 9),
    "str-tag-on-int": (_yaml_with(ENTRY_A, "{max_entries: !!int '12'}"), "tags", 2),
    "owner-no": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: no")), "False is not of type 'string'", 9),
    "sexagesimal-budget": (_yaml_with(ENTRY_A, "{max_entries: 1:30}"), "not a plain decimal integer", 2),
    "hex-budget": (_yaml_with(ENTRY_A, "{max_entries: 0x1F}"), "not a plain decimal integer", 2),
    "inf-budget": (_yaml_with(ENTRY_A, "{max_bytes: .inf}"), "not a finite decimal number", 2),
    "nan-budget": (_yaml_with(ENTRY_A, "{max_bytes: .NaN}"), "not a finite decimal number", 2),
    "overflow-budget": (_yaml_with(ENTRY_A, "{max_bytes: 1.0e+999}"), "overflows", 2),
    # jsonschema counts 12.0 as an integer; the ledger does not.
    "float-budget": (_yaml_with(ENTRY_A, "{max_entries: 12.0}"), "non-integer number", 2),
    "huge-int": (_yaml_with(ENTRY_A, "{max_entries: " + "9" * 5000 + "}"), "too long", 2),
    "short-date": (_yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-9-30")), "does not match", 8),
    "datetime-tz": (
        _yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-09-29T23:00:00-05:00")),
        "does not match",
        8,
    ),
    "impossible-date": (
        _yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-09-31")),
        "impossible date",
        8,
    ),
    "expires-before-added": (
        _yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-09-14")),
        "before it was added",
        8,
    ),
    "ttl-over-default": (
        _yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-09-30"), "{max_entries: 12}"),
        "over max_ttl_days 14",
        8,
    ),
    "ttl-over-budget": (
        _yaml_with(ENTRY_A.replace("expires: 2026-09-29", "expires: 2026-09-23"), "{max_ttl_days: 7}"),
        "over max_ttl_days 7",
        8,
    ),
    "added-in-future": (
        _yaml_with(
            ENTRY_A.replace("added_at: 2026-09-15", "added_at: 2026-09-21").replace(
                "expires: 2026-09-29", "expires: 2026-09-30"
            )
        ),
        "after today",
        7,
    ),
    "short-hash": (_yaml_with(ENTRY_A.replace(HASH, HASH[:31])), "does not match", 6),
    "non-hex-hash": (_yaml_with(ENTRY_A.replace(HASH, "g" * 32)), "does not match", 6),
    "unknown-reason": (_yaml_with(ENTRY_A + "    reason: flaky\n"), "is not one of", 10),
    "unknown-field": (_yaml_with(ENTRY_A + "    ticket: 12\n"), "Additional properties", 4),
    "missing-field": (_yaml_with(ENTRY_A.replace("    owner: humans\n", "")), "'owner' is a required", 4),
    "agent-literal": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: Agent")), "an agent", 9),
    "agent-glob": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: agent-7")), "an agent", 9),
    "agent-bot": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: renovate[bot]")), "an agent", 9),
    "agent-at-team": (_yaml_with(ENTRY_A.replace("owner: humans", "owner: '@org/agent-x'")), "an agent", 9),
    "cyrillic-id": (_yaml_with(ENTRY_A).replace(b"id: a", "id: \u0430".encode()), "non-ASCII", 4),
    "zero-width-id": (_yaml_with(ENTRY_A).replace(b"id: a", 'id: "a\u200b"'.encode()), "non-ASCII", 4),
    "trailing-space-id": (_yaml_with(ENTRY_A).replace(b"id: a", b'id: "a "'), "does not match", 4),
    "newline-id": (_yaml_with(ENTRY_A).replace(b"id: a", b'id: "a\\n"'), "control", 4),
    "merge-key": (_yaml_with(ENTRY_A + "    <<: {expires: 2026-12-31}\n"), "merge keys", 10),
    "list-ledger": (b"- id: a\n  owner: humans\n", "is not of type 'object'", 1),
    "empty-file": (b"", "exactly one YAML document", 1),
    "two-documents": (BASE + b"---\n" + BASE, "exactly one YAML document", 1),
    "entries-null": (b"version: 1\nentries:\n", "None is not of type 'array'", 2),
    "version-2": (b"version: 2\nentries: []\n", "1 was expected", 1),
    "duplicate-ids": (render([yaml_entry("a"), yaml_entry("a")], BUDGET), "repeats", 14),
    "case-duplicate-ids": (render([yaml_entry("a"), yaml_entry("A")], BUDGET), "differs only by case", 14),
    "not-utf8": (b"version: 1\nentries: []\n# \xff\n", "UTF-8", 1),
    "tag-directive": (b"%TAG !e! tag:yaml.org,2002:\n---\nversion: !e!int 1\nentries: []\n", "tags", 3),
    "complex-key": (b"version: 1\n? [entries]\n: []\n", "keys must be strings", 2),
    "flow-duplicate": (_yaml_with(ENTRY_A, "{max_entries: 12, max_entries: 99}"), "duplicate key", 2),
    "look-alike-key": (_yaml_with(ENTRY_A.replace("expires:", '"expires\u00a0":')), "Additional properties", 4),
    "deep-nesting": (b"version: 1\nentries: " + b"[" * 40 + b"]" * 40 + b"\n", "nesting", 2),
}


@pytest.mark.parametrize("name", sorted(INVALID_YAML))
def test_invalid_yaml_ledger(name: str) -> None:
    """Each hostile or broken freeze.yaml is freeze-ledger-invalid at the offending line, never coerced."""
    data, fragment, line = INVALID_YAML[name]
    result = run(BASE, data)
    assert "freeze-ledger-invalid" in rows(result), [v.render() for v in result.lane.violations]
    hits = [v for v in result.lane.violations if v.row == "freeze-ledger-invalid" and fragment in v.message]
    assert hits, [v.render() for v in result.lane.violations]
    assert hits[0].line == line and hits[0].path == "freeze.yaml", hits[0].render()
    assert result.lane.receipt["valid"] is False


def _json_with(entry: dict[str, Any] | str, extra: str = "") -> bytes:
    body = entry if isinstance(entry, str) else json.dumps(entry)
    return f'{{"version": 1,\n "frozen": [\n  {body}\n ]{extra}}}\n'.encode()


JSON_BASE = _json_with(json_entry("tests/test_a.py::test_a"))
INVALID_JSON: dict[str, tuple[bytes, str, int]] = {
    "duplicate-key": (
        _json_with(
            '{"id": "tests/test_a.py::test_a", "expires": "2026-09-29", "owner": "human",\n'
            '   "added": "2026-09-15", "expires": "2026-12-31"}'
        ),
        "duplicate key 'expires'",
        4,
    ),
    "nan": (_json_with(json_entry("tests/test_a.py::test_a"), ', "budget": {"max_entries": NaN}'), "non-finite", 1),
    "infinity": (_json_with(json_entry("tests/test_a.py::test_a"), ', "budget": {"max_bytes": 1e999}'), "infinity", 1),
    "float-budget": (
        _json_with(json_entry("tests/test_a.py::test_a"), ',\n "budget": {"max_entries": 3.0}'),
        "non-integer number",
        5,
    ),
    "owner-false": (_json_with(json_entry("tests/test_a.py::test_a", owner=False)), "not of type 'string'", 3),
    "test-field": (
        _json_with(json_entry("tests/test_a.py::test_a", test="tests/test_b.py::test_b")),
        "Additional properties",
        3,
    ),
    "trailing-newline-id": (_json_with(json_entry("tests/test_a.py::test_a\n")), "control", 3),
    "agent-owner": (_json_with(json_entry("tests/test_a.py::test_a", owner="agent")), "an agent", 3),
    "list-ledger": (b'[{"id": "tests/test_a.py::test_a"}]', "is not of type 'object'", 1),
    "datetime": (
        _json_with(json_entry("tests/test_a.py::test_a", expires="2026-09-29T00:00:00Z")),
        "does not match",
        3,
    ),
    "nul-in-id": (
        _json_with(
            '{"id": "tests/test_a.py::test_a\\u0000", "expires": "2026-09-29", "owner": "h", "added": "2026-09-15"}'
        ),
        "control",
        3,
    ),
    "lone-surrogate": (
        _json_with(
            '{"id": "tests/test_a.py::test_\\ud800", "expires": "2026-09-29", "owner": "h", "added": "2026-09-15"}'
        ),
        "non-ASCII",
        3,
    ),
}


@pytest.mark.parametrize("name", sorted(INVALID_JSON))
def test_invalid_json_ledger(name: str) -> None:
    """Each hostile or broken freeze.json is freeze-ledger-invalid at the offending line."""
    data, fragment, line = INVALID_JSON[name]
    result = run(JSON_BASE, data, JSON_CONFIG)
    hits = [v for v in result.lane.violations if v.row == "freeze-ledger-invalid" and fragment in v.message]
    assert hits, [v.render() for v in result.lane.violations]
    assert hits[0].line == line and hits[0].path == "freeze.json", hits[0].render()


def test_new_id_is_added_at_its_line() -> None:
    """A new entry is freeze-id-added, pointing at the entry's line, with the fix in the message."""
    head = render([yaml_entry("a"), yaml_entry("b"), yaml_entry("c")], BUDGET)
    violation = only(run(BASE, head), "freeze-id-added")
    assert violation.line == head.decode().splitlines().index("- id: c") + 1
    assert violation.message.startswith("entry 'c' is new; the ledger may only shrink")
    assert violation.render().endswith("ask a human to add it on the base branch [freeze-id-added]")
    assert run(BASE, head).lane.receipt["added"] == ["c"]


def test_new_id_in_json() -> None:
    """A new freeze.json entry (a new node id) is freeze-id-added."""
    two = f"{json.dumps(json_entry('tests/test_a.py::test_a'))},\n  {json.dumps(json_entry('tests/test_b.py::test_b'))}"
    head = _json_with(two)
    assert only(run(JSON_BASE, head, JSON_CONFIG), "freeze-id-added").line == 4


def test_case_change_is_a_new_id() -> None:
    """`A` replacing `a` is a removal plus an addition (ids are case-sensitive), and the message says why."""
    result = run(BASE, render([yaml_entry("A"), yaml_entry("b")], BUDGET))
    assert "ids are case-sensitive" in only(result, "freeze-id-added").message
    assert [e.id for e in result.removed] == ["a"]


def test_rename_is_removal_plus_addition() -> None:
    """Renaming an id removes the old entry (to be replayed) and adds a new one."""
    result = run(BASE, render([yaml_entry("a2"), yaml_entry("b")], BUDGET))
    assert rows(result) == ["freeze-id-added"]
    assert result.lane.receipt["removed"] == ["a"] and result.lane.receipt["added"] == ["a2"]


def test_reordering_is_not_a_violation() -> None:
    """Moving entries around changes nothing."""
    result = run(BASE, render([yaml_entry("b"), yaml_entry("a")], BUDGET))
    assert rows(result) == [] and result.removed == ()


def test_expiry_extended() -> None:
    """`expires` moved later is freeze-expiry-extended at the expires line; moving it earlier is fine."""
    head = render([yaml_entry("a", expires="2026-09-30", added_at="2026-09-16"), yaml_entry("b")], BUDGET)
    result = run(BASE, head)
    assert "freeze-expiry-extended" in rows(result)
    later = render([yaml_entry("a", expires="2026-09-30"), yaml_entry("b")], {**BUDGET, "max_ttl_days": 15})
    assert "freeze-expiry-extended" in rows(run(BASE, later))
    line = next(v for v in result.lane.violations if v.row == "freeze-expiry-extended").line
    assert head.decode().splitlines()[line - 1].strip().startswith("expires:")
    earlier = render([yaml_entry("a", expires="2026-09-25"), yaml_entry("b")], BUDGET)
    shorter = run(BASE, earlier)
    assert rows(shorter) == []
    assert shorter.active[0].expires == "2026-09-25"


def test_expiry_extended_json() -> None:
    """A freeze.json expiry pushed later is freeze-expiry-extended."""
    head = _json_with(json_entry("tests/test_a.py::test_a", expires="2026-09-29", added="2026-09-16"))
    base = _json_with(json_entry("tests/test_a.py::test_a", expires="2026-09-28", added="2026-09-16"))
    assert only(run(base, head, JSON_CONFIG), "freeze-expiry-extended").line == 3


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("assertion_hash", "f" * 32),
        ("test", "tests/test_x.py::test_other"),
        ("owner", "bob"),
        ("reason", "network"),
        ("reason", None),
        ("added_at", "2026-09-16"),
    ],
)
def test_rewritten_field(field: str, value: str | None) -> None:
    """Any other field of a kept entry changing (or disappearing) is freeze-entry-rewritten."""
    violation = only(
        run(BASE, render([yaml_entry("a", **{field: value}), yaml_entry("b")], BUDGET)), "freeze-entry-rewritten"
    )
    assert field in violation.message and "read-only" in violation.message


@pytest.mark.parametrize(
    ("budget", "raised"),
    [
        ({**BUDGET, "max_entries": 13}, "max_entries"),
        ({**BUDGET, "max_bytes": 4097}, "max_bytes"),
        ({**BUDGET, "max_ttl_days": 15}, "max_ttl_days"),
        ({"max_bytes": 4096, "max_ttl_days": 14}, "max_entries"),  # a key deleted = no limit
        ({"max_entries": 12, "max_bytes": 4096, "max_ttl_days": 14} | {"max_bytes": 10**30}, "max_bytes"),
        (None, "max_bytes"),  # the whole budget deleted
    ],
)
def test_budget_raised(budget: dict[str, int] | None, raised: str) -> None:
    """Raising, deleting or dropping a budget key is freeze-budget-raised naming the key."""
    result = run(BASE, render([yaml_entry("a"), yaml_entry("b")], budget))
    hits = [v for v in result.lane.violations if v.row == "freeze-budget-raised" and f"budget.{raised}" in v.message]
    assert hits, [v.render() for v in result.lane.violations]


def test_budget_ttl_deleted_at_default_is_not_raised() -> None:
    """Deleting `max_ttl_days: 14` leaves the default 14, so nothing was raised."""
    result = run(BASE, render([yaml_entry("a"), yaml_entry("b")], {"max_entries": 12, "max_bytes": 4096}))
    assert rows(result) == []


def test_budget_added_where_none_was() -> None:
    """A new budget lowers unlimited caps (fine) but a TTL above the default 14 is raised."""
    base = render([yaml_entry("a")], None)
    assert rows(run(base, render([yaml_entry("a")], {"max_entries": 5}))) == []
    assert "freeze-budget-raised" in rows(run(base, render([yaml_entry("a")], {"max_ttl_days": 30})))


def test_budget_lowered_below_content_is_over_budget() -> None:
    """Lowering a budget is allowed, but the ledger must then fit it."""
    result = run(BASE, render([yaml_entry("a"), yaml_entry("b")], {**BUDGET, "max_entries": 1}))
    assert rows(result) == ["freeze-over-budget"]


def test_over_budget_entries() -> None:
    """More entries than max_entries (unchanged budget) is freeze-over-budget."""
    base = render([yaml_entry(x) for x in "abc"], {"max_entries": 2})
    violation = only(run(base, base), "freeze-over-budget")
    assert "3 entries, over max_entries 2" in violation.message and violation.line == 3


def test_over_budget_bytes_is_canonical() -> None:
    """max_bytes counts compact sorted JSON of the entries, not comments or layout."""
    entries = [yaml_entry("a")]
    size = len(json.dumps(entries, sort_keys=True, separators=(",", ":")).encode())
    fits = render(entries, {"max_bytes": size}) + b"# " + b"padding " * 600 + b"\n"
    assert rows(run(fits, fits)) == []
    assert run(fits, fits).lane.receipt["budget"]["canonical_bytes"] == size
    over = render(entries, {"max_bytes": size - 1})
    assert "over max_bytes" in only(run(over, over), "freeze-over-budget").message


def test_stricter_budget_of_both_applies() -> None:
    """Raising a budget does not also lift the cap: the baseline's limit still counts for over-budget."""
    base = render([yaml_entry("a"), yaml_entry("b")], {"max_entries": 2})
    head = render([yaml_entry("a"), yaml_entry("b"), yaml_entry("c")], {"max_entries": 3})
    assert rows(run(base, head)) == ["freeze-id-added", "freeze-budget-raised", "freeze-over-budget"]


def test_removal_goes_to_the_runner() -> None:
    """A removed entry is listed for replay; statically it is freeze-removal-unverified at its baseline line."""
    result = run(BASE, render([yaml_entry("b")], BUDGET))
    assert rows(result) == [] and [e.id for e in result.removed] == ["a"]
    (violation,) = freeze_ledger.unverified(result, "--no-run")
    assert violation.row == "freeze-removal-unverified" and violation.path == "freeze.yaml"
    assert violation.line == BASE.decode().splitlines().index("- id: a") + 1


def test_expired_entry() -> None:
    """An entry with expires before today is expired, not active; statically it is freeze-expired."""
    result = run(BASE, BASE, today=date(2026, 9, 30))
    assert rows(result) == [] and [e.id for e in result.expired] == ["a", "b"] and result.active == ()
    assert {v.row for v in freeze_ledger.unverified(result, "--no-run")} == {"freeze-expired"}
    assert run(BASE, BASE, today=date(2026, 9, 29)).expired == ()


def test_deleted_ledger_is_invalid() -> None:
    """Deleting the whole file fails closed: invalid, not a silent mass removal."""
    result = run(BASE, None)
    assert "deletes the ledger" in only(result, "freeze-ledger-invalid").message
    assert result.removed == () and result.lane.receipt["file_sha256"] is None


def test_ledger_created_by_patch_adds_every_id() -> None:
    """No ledger on the baseline and one on the head: every id is added."""
    result = run(None, BASE)
    assert rows(result) == ["freeze-id-added", "freeze-id-added"]
    assert result.lane.receipt["added"] == ["a", "b"]


def test_no_ledger_anywhere() -> None:
    """No ledger on either side is clean."""
    result = run(None, None)
    assert rows(result) == [] and result.lane.receipt["file_sha256"] is None


def test_empty_ledger_is_valid() -> None:
    """An empty entry list is a valid (flat) ledger; emptying one is a set of removals."""
    empty = b"version: 1\nbudget: {max_entries: 12}\nentries: []\n"
    assert rows(run(empty, empty)) == []
    assert [e.id for e in run(BASE, render([], BUDGET)).removed] == ["a", "b"]


def test_invalid_baseline_ledger_fails_closed() -> None:
    """A baseline ledger that does not parse is invalid for every patch until a human repairs it."""
    violation = only(run(b"version: 1\nentries: [\n", BASE), "freeze-ledger-invalid")
    assert "baseline" in violation.message


def test_agent_patterns_come_from_config() -> None:
    """Owners are checked against the configured agent globs, not only the defaults."""
    config = parse_config(b"version: 1\nagents: ['robo-*']\n")
    base = render([yaml_entry("a", owner="robo-1")], BUDGET)
    assert "an agent" in only(run(base, base, config), "freeze-ledger-invalid").message


def test_locked_mode_behaves_the_same() -> None:
    """Under freeze.mode locked the lane still reports growth (the locked lane adds its own row)."""
    config = Config(freeze=FreezeConfig(mode="locked"))
    result = run(BASE, render([yaml_entry("a"), yaml_entry("b"), yaml_entry("c")], BUDGET), config)
    assert rows(result) == ["freeze-id-added"] and result.lane.receipt["mode"] == "locked"


def test_receipt_section_fits_the_receipt_schema() -> None:
    """The lane's receipt section validates inside a receipt."""
    receipt = empty_receipt()
    receipt["freeze"] = run(BASE, render([yaml_entry("b"), yaml_entry("c")], BUDGET)).lane.receipt
    assert validate(receipt) == []


@pytest.mark.parametrize(
    ("item", "fragment"),
    [(b"{}", "is a required property"), ('"\u00e9"'.encode(), "non-ASCII"), (b"1.5", "non-integer")],
)
def test_a_ledger_of_many_bad_values_reports_the_first_twenty(item: bytes, fragment: str) -> None:
    """5,000 bad entries are 20 rows, the first ones in file order, not 5,000 (nor a walk of all jsonschema finds):
    a hostile ledger near the size cap must not make every gate run slow or its receipt huge."""
    result = run(BASE, b"version: 1\nentries: [\n" + b",\n".join([item] * 5000) + b"]\n")
    violations = result.lane.violations
    assert len(violations) == freeze_ledger.MAX_PROBLEMS == 20
    assert all(v.row == "freeze-ledger-invalid" and fragment in v.message for v in violations)
    assert violations[0].line == 3 and violations[0].message.startswith("entries.0")


def test_an_unchanged_ledger_is_parsed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch that leaves the ledger alone (most do) costs one parse, not two, with the same result."""
    expected = run(BASE, BASE)
    calls: list[bytes] = []
    parse = freeze_ledger.parse

    def counted(data: bytes, file: str) -> freeze_ledger.Ledger:
        calls.append(data)
        return parse(data, file)

    monkeypatch.setattr(freeze_ledger, "parse", counted)
    assert run(BASE, bytes(BASE)) == expected and len(calls) == 1
    assert rows(run(BASE, BASE.replace(b"2026-09-29", b"2026-09-28", 1))) == [] and len(calls) == 3
