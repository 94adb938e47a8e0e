"""The compiled schema checks against jsonschema: for every packaged schema, the same instances are valid."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate.config import Config, compiled, schema, sorted_schema_errors
from evidence_gate.receipt.write import empty_receipt
from evidence_gate.schema_check import compile_schema, equal
from evidence_gate.strict_parse import load_json, load_yaml
from support.freeze_strategies import HASH, SPEC_JSON, SPEC_YAML

DATA = Path(__file__).parents[2] / "src" / "evidence_gate" / "data"
SCHEMAS = sorted(p.name for p in DATA.glob("*.schema.json"))  # a new schema without seeds below fails the tests
REPORT_CASES = Path(__file__).parents[1] / "report_cases"
SEEDS: dict[str, list[Any]] = {
    "config.schema.json": [
        {"version": 1},
        load_yaml(
            b"version: 1\nagents: ['*[bot]', agent-*]\nlocked: [tools/**]\nfreeze: {file: freeze.yaml, mode: "
            b"shrink-only, removal_runs: 3}\nproperties: {list: SCORE_PROPERTIES, seeds: [1101, 1102], trials: 200, "
            b"pythonpath: [src], jobs: 0}\nfixtures: {dir: fixtures, digests: fixtures/digests.json}\n"
            b"probes: {allow: ['tests/conftest.py: slow']}\n"
        ),
        Config().to_json(),
        load_yaml(
            b"version: 1\nlocked: [tools/**]\ncontexts:\n  billing: {root: services/billing, paths: [/libs/**], "
            b"locked: [evidence/**], properties: {seeds: [1], pythonpath: [src]}, freeze: {file: freeze.yaml}}\n"
            b"  search: {root: services/search}\n"
        ),
    ],
    "receipt-index.schema.json": [
        {
            "schema": "evidence-gate/receipt-index/v1",
            "version": "0.1.0",
            "state": "final",
            "ok": False,
            "exit_code": 10,
            "git": {"baseline": "a" * 40, "head": "b" * 40, "merge_base": None},
            "config": {"path": ".evidence-gate.yml", "blob": "c" * 40},
            "contexts": [
                {
                    "context": "billing",
                    "root": "services/billing",
                    "judged": True,
                    "why": "the pull request changes services/billing/src/x.py",
                    "receipt": "receipt-billing.json",
                    "sha256": "sha256:" + "0" * 64,
                    "row": "evidence-path-edited",
                    "ok": False,
                    "exit_code": 10,
                },
                {
                    "context": "search",
                    "root": "services/search",
                    "judged": False,
                    "why": "the pull request changes nothing under services/search/",
                    "receipt": None,
                    "sha256": None,
                    "row": None,
                    "ok": None,
                    "exit_code": None,
                },
            ],
        }
    ],
    "decision_table.schema.json": [json.loads(DATA.joinpath("decision_table.json").read_text("utf-8"))],
    "digests.schema.json": [
        {"version": 1, "records": [{"id": "two", "input": [1, 2], "output_sha256": "0" * 64}]},
        {"version": 1, "records": [{"id": "f.x", "input_file": "in/a.json", "output_sha256": "a" * 64}]},
    ],
    "freeze-yaml.schema.json": [load_yaml(SPEC_YAML)],
    "freeze-json.schema.json": [load_json(SPEC_JSON)],
    "receipt.schema.json": [
        empty_receipt(),
        *(json.loads(p.read_text("utf-8")) for p in sorted(REPORT_CASES.glob("*/receipt.json"))),
    ],
}


def _constants(value: Any) -> list[Any]:
    """Every const and enum value a schema names, so that mutations also hit the valid side of each."""
    found: list[Any] = []
    if isinstance(value, dict):
        found += [value["const"]] if "const" in value else []
        found += list(value.get("enum", []))
        for v in value.values():
            found += _constants(v)
    elif isinstance(value, list):
        for v in value:
            found += _constants(v)
    return found


TRICKY: list[Any] = [
    None, True, False, 0, 1, -1, 3, 12.0, 12.5, -0.0, "", "x", " x", "a b", "humans", "2026-09-15", "2026-9-15",
    HASH, "G" * 32, "0" * 64, "flaky", [], [1], [1, 1], [1, 1.0], [True, 1], ["a", "a"], {}, {"a": 1}, "x" * 513,
    "@org/team", "src", "/abs", "../up", "agent-*", 1101, [1101, 1102], 2**40, "a\n", "é",
]  # fmt: skip


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _mutate(instance: Any, data: st.DataObject, pool: list[Any], names: list[str]) -> Any:
    """`instance` with one to three random edits: a value replaced, a member dropped or added, an item added."""
    out = copy.deepcopy(instance)
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(out)))
        new = copy.deepcopy(data.draw(st.sampled_from(pool)))
        if not path:
            if data.draw(st.booleans()):
                out = new
            continue
        parent: Any = out
        for p in path[:-1]:
            parent = parent[p]
        op = data.draw(st.sampled_from(["replace", "drop", "add"]))
        if op == "replace":
            parent[path[-1]] = new
        elif op == "drop" and isinstance(parent, dict):
            del parent[path[-1]]
        elif op == "drop":
            parent.pop(path[-1])
        elif isinstance(parent, dict):
            parent[data.draw(st.sampled_from(names))] = new
        else:
            parent.append(new)
    return out


@pytest.mark.parametrize("name", SCHEMAS)
def test_every_seed_is_valid(name: str) -> None:
    """The seeds the properties start from are valid by jsonschema and by the compiled check."""
    for seed in SEEDS[name]:
        assert jsonschema.Draft202012Validator(schema(name)).is_valid(seed), seed
        assert compiled(name)(seed)


@pytest.mark.parametrize("name", SCHEMAS)
@given(data=st.data())
def test_compiled_check_agrees_with_jsonschema(name: str, data: st.DataObject) -> None:
    """Any instance mutated from a valid one is valid for the compiled check exactly when jsonschema says so."""
    pool = TRICKY + _constants(schema(name)) + [s for seeds in SEEDS.values() for s in seeds[:1]]
    names = sorted({p[-1] for s in SEEDS[name] for p in _paths(s) if p and isinstance(p[-1], str)} | {"extra"})
    instance = _mutate(data.draw(st.sampled_from(SEEDS[name])), data, pool, names)
    expected = jsonschema.Draft202012Validator(schema(name)).is_valid(instance)
    assert compiled(name)(instance) is expected, instance
    assert (sorted_schema_errors(instance, name) == []) is expected


@pytest.mark.parametrize(
    ("one", "two", "same"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        ([1, True], [1.0, True], True),
        ({"a": 1}, {"a": True}, False),
    ],
)
def test_equal_keeps_booleans_apart(one: Any, two: Any, same: bool) -> None:
    """`const`, `enum` and `uniqueItems` compare as jsonschema does: true is not 1, 1 is 1.0."""
    assert equal(one, two) is same and jsonschema._utils.equal(one, two) is same


def test_an_unknown_keyword_fails_the_compile() -> None:
    """A schema that grows a keyword the compiler does not know cannot be checked by half: compiling it fails."""
    with pytest.raises(ValueError, match="propertyNames"):
        compile_schema({"type": "object", "propertyNames": {"pattern": "^a"}})
    with pytest.raises(ValueError, match="recursive"):
        compile_schema({"$defs": {"n": {"items": {"$ref": "#/$defs/n"}}}, "$ref": "#/$defs/n"})
