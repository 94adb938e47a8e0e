"""The packaged JSON Schemas compiled once into plain Python predicates: is this instance valid, yes or no.

jsonschema walks a schema for every instance (≈ 1 s for a 5,000-entry ledger) and costs ≈ 95 ms to import. The
gate's schemas use a small set of Draft 2020-12 keywords; each is compiled here into a closure with jsonschema's
exact meaning (`integer` admits 12.0, `true` is not 1, `pattern` is `re.search`). A keyword outside the set fails
the compile, loudly, so a schema that grows a new keyword cannot be checked by half. Only the answer comes from
here: when an instance is invalid, the messages still come from jsonschema (see `config.sorted_schema_errors`).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Check = Callable[[Any], bool]

IGNORED = frozenset({"$schema", "$id", "$defs", "title", "description", "$comment", "examples", "default"})
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
}


def equal(one: Any, two: Any) -> bool:
    """JSON equality: `true` is not `1`, and lists and objects compare member by member."""
    if isinstance(one, bool) or isinstance(two, bool):
        return isinstance(one, bool) and isinstance(two, bool) and one is two
    if isinstance(one, list) and isinstance(two, list):
        return len(one) == len(two) and all(equal(a, b) for a, b in zip(one, two, strict=True))
    if isinstance(one, dict) and isinstance(two, dict):
        return one.keys() == two.keys() and all(equal(one[k], two[k]) for k in one)
    if isinstance(one, list | dict) or isinstance(two, list | dict):
        return False
    return bool(one == two)


def _number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _searcher(pattern: str) -> Callable[[str], object]:
    """`re.compile(pattern).search`, compiled on its first string: a run meets few of its schemas' patterns."""
    compiled: list[Callable[[str], object]] = []

    def search(text: str) -> object:
        if not compiled:
            compiled.append(re.compile(pattern).search)
        return compiled[0](text)

    return search


def _value_checks(schema: dict[str, Any]) -> list[Check]:
    """The checks of the keywords that look at one value alone (type, const, enum, string and number bounds)."""
    checks: list[Check] = []
    if "type" in schema:
        names = [schema["type"]] if isinstance(schema["type"], str) else list(schema["type"])
        tests = tuple(_TYPES[n] for n in names)
        checks.append(tests[0] if len(tests) == 1 else lambda v: any(t(v) for t in tests))
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: equal(v, const))
    if "enum" in schema:
        options = list(schema["enum"])
        if all(isinstance(o, str) for o in options):
            strings = frozenset(options)
            checks.append(lambda v: isinstance(v, str) and v in strings)
        else:
            checks.append(lambda v: any(equal(v, o) for o in options))
    if "pattern" in schema:
        search = _searcher(schema["pattern"])
        checks.append(lambda v: not isinstance(v, str) or search(v) is not None)
    if "minLength" in schema:
        low = schema["minLength"]
        checks.append(lambda v: not isinstance(v, str) or len(v) >= low)
    if "maxLength" in schema:
        high = schema["maxLength"]
        checks.append(lambda v: not isinstance(v, str) or len(v) <= high)
    if "minimum" in schema:
        floor = schema["minimum"]
        checks.append(lambda v: not _number(v) or v >= floor)
    if "maximum" in schema:
        ceiling = schema["maximum"]
        checks.append(lambda v: not _number(v) or v <= ceiling)
    return checks


class _Compiler:
    """Compiles one root schema; `$ref` resolves against its `$defs`, each definition compiled once."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}
        self.compiling: set[str] = set()

    def ref(self, target: str) -> Check:
        if not target.startswith("#/$defs/") or "/" in target[len("#/$defs/") :]:
            raise ValueError(f"$ref {target!r}: only #/$defs/NAME is compiled")
        name = target[len("#/$defs/") :]
        if name in self.compiling:
            raise ValueError(f"$ref {target!r} is recursive; a recursive definition is not compiled")
        if name not in self.refs:
            self.compiling.add(name)
            self.refs[name] = self.compile(self.root["$defs"][name])
            self.compiling.discard(name)
        return self.refs[name]

    def compile(self, schema: Any) -> Check:
        """A predicate for `schema`: every keyword's check, all of which must hold."""
        if schema is True or schema == {}:
            return lambda v: True
        if schema is False:
            return lambda v: False
        unknown = set(schema) - IGNORED - _KEYWORDS
        if unknown:
            raise ValueError(f"keywords {sorted(unknown)} are not compiled; add them to schema_check")
        fused = self.fused(schema)
        if fused is not None:
            return fused
        checks = _value_checks(schema)
        if "required" in schema:
            needed = tuple(schema["required"])
            checks.append(lambda v: not isinstance(v, dict) or all(k in v for k in needed))
        if "properties" in schema:
            props = {k: self.compile(s) for k, s in schema["properties"].items()}
            checks.append(lambda v: not isinstance(v, dict) or all(props[k](x) for k, x in v.items() if k in props))
        if "additionalProperties" in schema:
            known = frozenset(schema.get("properties", {}))
            extra = self.compile(schema["additionalProperties"])
            checks.append(lambda v: not isinstance(v, dict) or all(extra(x) for k, x in v.items() if k not in known))
        if "items" in schema:
            item = self.compile(schema["items"])
            checks.append(lambda v: not isinstance(v, list) or all(item(x) for x in v))
        if "minItems" in schema:
            fewest = schema["minItems"]
            checks.append(lambda v: not isinstance(v, list) or len(v) >= fewest)
        if "maxItems" in schema:
            most = schema["maxItems"]
            checks.append(lambda v: not isinstance(v, list) or len(v) <= most)
        if schema.get("uniqueItems") is True:
            checks.append(lambda v: not isinstance(v, list) or _unique(v))
        if "oneOf" in schema:
            options_ = [self.compile(s) for s in schema["oneOf"]]
            checks.append(lambda v: sum(1 for o in options_ if o(v)) == 1)
        if "anyOf" in schema:
            any_ = [self.compile(s) for s in schema["anyOf"]]
            checks.append(lambda v: any(o(v) for o in any_))
        if "allOf" in schema:
            all_ = [self.compile(s) for s in schema["allOf"]]
            checks.append(lambda v: all(o(v) for o in all_))
        if "not" in schema:
            negated = self.compile(schema["not"])
            checks.append(lambda v: not negated(v))
        if "$ref" in schema:
            checks.append(self.ref(schema["$ref"]))
        if len(checks) == 1:
            return checks[0]
        frozen = tuple(checks)
        return lambda v: all(c(v) for c in frozen)

    def fused(self, schema: dict[str, Any]) -> Check | None:
        """One closure for the two shapes every ledger entry is made of (a closed object of known members, a
        string with a pattern and a length), or None for the keyword-by-keyword form."""
        keys = set(schema) - IGNORED
        if schema.get("type") == "string" and keys <= {"type", "pattern", "minLength", "maxLength"}:
            search = _searcher(schema["pattern"]) if "pattern" in schema else None
            low, high = schema.get("minLength", 0), schema.get("maxLength", float("inf"))
            if search is None:
                return lambda v: isinstance(v, str) and low <= len(v) <= high
            return lambda v: isinstance(v, str) and low <= len(v) <= high and search(v) is not None
        if (
            schema.get("type") == "object"
            and keys <= {"type", "required", "properties", "additionalProperties"}
            and schema.get("additionalProperties", True) in (True, False)
        ):
            props = {k: self.compile(s) for k, s in schema.get("properties", {}).items()}
            needed, closed = tuple(schema.get("required", ())), schema.get("additionalProperties") is False

            def closed_object(v: Any) -> bool:
                if not isinstance(v, dict) or not all(k in v for k in needed):
                    return False
                for k, x in v.items():
                    check = props.get(k)
                    if check is None:
                        if closed:
                            return False
                    elif not check(x):
                        return False
                return True

            return closed_object
        return None


_KEYWORDS = frozenset(
    {
        "type", "const", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum", "required",
        "properties", "additionalProperties", "items", "minItems", "maxItems", "uniqueItems", "oneOf", "anyOf",
        "allOf", "not", "$ref",
    }
)  # fmt: skip


def _unique(items: list[Any]) -> bool:
    if all(isinstance(i, str) for i in items):
        return len(set(items)) == len(items)
    seen: list[Any] = []
    for item in items:
        if any(equal(item, s) for s in seen):
            return False
        seen.append(item)
    return True


def compile_schema(schema: dict[str, Any]) -> Check:
    """The predicate of a root schema; raises ValueError naming a keyword it does not compile."""
    compiler = _Compiler(schema)
    check = compiler.compile(schema)
    for name in schema.get("$defs", {}):  # compile every definition now: an unknown keyword fails here, not later
        compiler.ref(f"#/$defs/{name}")
    return check
