"""The gate's configuration, read from the baseline commit's `.evidence-gate.yml` and validated by schema."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from itertools import islice
from typing import TYPE_CHECKING, Any

from evidence_gate.errors import InputInvalid
from evidence_gate.schema_check import Check, compile_schema
from evidence_gate.strict_parse import load_yaml

if TYPE_CHECKING:
    import jsonschema

CONFIG_PATH = ".evidence-gate.yml"


@dataclass(frozen=True)
class FreezeConfig:
    """`freeze:`."""

    file: str = "freeze.yaml"
    mode: str = "shrink-only"
    removal_runs: int = 3


@dataclass(frozen=True)
class PropertiesConfig:
    """`properties:`."""

    list: str = "SCORE_PROPERTIES"
    seeds: tuple[int, ...] = (1101, 1102, 1103, 1104)
    fresh_seeds: int = 1
    trials: int = 200
    pythonpath: tuple[str, ...] = ("src",)
    install: str = ""
    timeout_s: int = 600
    memory_mb: int = 2048
    jobs: int = 0  # 0: one worker per core
    # The least share (0-100) of the PR's changed lines of code under test the locked properties must execute.
    min_patch_coverage: float | None = None


@dataclass(frozen=True)
class FixturesConfig:
    """`fixtures:` — the locked folder, its digest records and the function that produces outputs."""

    dir: str = "fixtures"
    digests: str = "fixtures/digests.json"
    producer: str = ""


@dataclass(frozen=True)
class ProbesConfig:
    """`probes:` — harness probes a human allowed, as `"path: name"` (path may be a glob)."""

    allow: tuple[str, ...] = ()


@dataclass(frozen=True)
class Config:
    """The whole configuration with defaults filled in."""

    version: int = 1
    agents: tuple[str, ...] = ("*[bot]", "agent-*")
    locked: tuple[str, ...] = ()
    freeze: FreezeConfig = field(default_factory=FreezeConfig)
    properties: PropertiesConfig = field(default_factory=PropertiesConfig)
    fixtures: FixturesConfig = field(default_factory=FixturesConfig)
    probes: ProbesConfig = field(default_factory=ProbesConfig)

    def to_json(self) -> dict[str, Any]:
        """The effective configuration, for the receipt."""
        return {
            "version": self.version,
            "agents": list(self.agents),
            "locked": list(self.locked),
            "freeze": vars(self.freeze).copy(),
            "properties": {
                **vars(self.properties),
                "seeds": list(self.properties.seeds),
                "pythonpath": list(self.properties.pythonpath),
            },
            "fixtures": vars(self.fixtures).copy(),
            "probes": {"allow": list(self.probes.allow)},
        }


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in the package's data folder."""
    text = resources.files("evidence_gate").joinpath(f"data/{name}").read_text("utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def compiled(name: str) -> Check:
    """A packaged schema's validity check, compiled once (see schema_check)."""
    return compile_schema(schema(name))


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    import jsonschema  # noqa: PLC0415 - only an invalid instance needs jsonschema's messages (≈ 95 ms to import)

    return jsonschema.Draft202012Validator(schema(name))


def sorted_schema_errors(instance: Any, schema_name: str, limit: int | None = None) -> list[jsonschema.ValidationError]:
    """The violations of a packaged schema, sorted by path: none when the compiled check passes, else jsonschema's
    own (the compiled check only ever saves the walk over a valid instance). With `limit`, only the first `limit`
    jsonschema finds are sorted: a hostile file of 100,000 bad entries is not walked to its end."""
    if compiled(schema_name)(instance):
        return []
    errors = islice(_validator(schema_name).iter_errors(instance), limit)
    return sorted(errors, key=lambda e: [str(p) for p in e.absolute_path])


def schema_errors(instance: Any, schema_name: str) -> list[str]:
    """Every schema violation as `field: problem`, sorted by path."""
    return [
        f"{'.'.join(str(p) for p in e.absolute_path) or '(top level)'}: {e.message}"
        for e in sorted_schema_errors(instance, schema_name)
    ]


def parse_config(data: bytes | None) -> Config:
    """A Config from the file's bytes; None (no file on the baseline) gives the defaults."""
    if data is None:
        return Config()
    try:
        raw = load_yaml(data)
    except InputInvalid as exc:
        raise InputInvalid(f"{CONFIG_PATH} does not parse: {exc.message}", exc.line) from exc
    if raw is None:
        return Config()
    problems = schema_errors(raw, "config.schema.json")
    if problems:
        raise InputInvalid(
            f"{CONFIG_PATH} is invalid: {problems[0]}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )
    props = dict(raw.get("properties", {}))
    for key in ("seeds", "pythonpath"):
        if key in props:
            props[key] = tuple(props[key])
    for p in props.get("pythonpath", ()):
        if p.startswith("/") or ".." in p.split("/"):
            raise InputInvalid(f"{CONFIG_PATH}: properties.pythonpath entry {p!r} must stay inside the repository")
    return Config(
        version=raw["version"],
        agents=tuple(raw.get("agents", Config.agents)),
        locked=tuple(raw.get("locked", ())),
        freeze=FreezeConfig(**raw.get("freeze", {})),
        properties=PropertiesConfig(**props),
        fixtures=FixturesConfig(**raw.get("fixtures", {})),
        probes=ProbesConfig(allow=tuple(raw.get("probes", {}).get("allow", ()))),
    )


@lru_cache(maxsize=1024)
def login_glob(pattern: str) -> re.Pattern[str]:
    """A login glob as a regex: `*` and `?` are wildcards, everything else (`[bot]` included) is literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.casefold())
    return re.compile(body + r"\Z", re.DOTALL)


def is_agent(login: str, patterns: tuple[str, ...]) -> bool:
    """Whether a GitHub login matches one of the `agents` globs (logins are case-insensitive)."""
    name = login.casefold()
    return any(login_glob(p).match(name) for p in patterns)
