"""The gate's configuration, read from the baseline commit's `.evidence-gate.yml` and validated by schema."""

from __future__ import annotations

import json
import posixpath
import re
from functools import cache, lru_cache
from itertools import islice

from evidence_gate import package_data
from evidence_gate.errors import InputInvalid
from evidence_gate.records import dataclass, field
from evidence_gate.schema_check import compile_schema
from evidence_gate.strict_parse import load_yaml

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    import jsonschema

    from evidence_gate.receipt.types import ContextJson
    from evidence_gate.schema_check import Check

CONFIG_PATH = ".evidence-gate.yml"
# A context's name goes into file names (`receipt-<name>.json`) and check-run names: a slug, never a path.
CONTEXT_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,39}\Z")
CONTEXT_NAME_RULE = "1 to 40 lowercase letters, digits, `-` or `_`, starting with a letter or digit"
# The sections a context has of its own; beside `contexts:` they belong under each context instead.
CONTEXT_SECTIONS = ("freeze", "properties", "fixtures", "probes")
MAX_CONTEXTS = 50


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
    contexts: tuple[BoundedContext, ...] = ()

    def context(self, name: str) -> BoundedContext:
        """The declared context called `name`; a usage error naming the declared ones when there is none."""
        for ctx in self.contexts:
            if ctx.name == name:
                return ctx
        declared = ", ".join(c.name for c in self.contexts) or "none"
        raise InputInvalid(f"{CONFIG_PATH} declares no context {name!r} (declared: {declared})")

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
            **({"contexts": [c.to_json() for c in self.contexts]} if self.contexts else {}),
        }


@dataclass(frozen=True)
class BoundedContext:
    """One `contexts:` entry: its name, root folder, the extra globs it owns, and its own configuration with every
    path already joined to the root (so the lanes read it exactly as they read a whole-repository one)."""

    name: str
    root: str
    paths: tuple[str, ...]
    config: Config

    def owns(self, path: str) -> bool:
        """Whether a changed path is this context's own: under its root or one of its `pythonpath` folders (a
        shared library its code imports is its code under test too), or matched by one of its `paths` globs."""
        from evidence_gate.lanes.locked_paths import glob_matches  # noqa: PLC0415 - config stays a leaf module

        folders = (self.root, *self.config.properties.pythonpath)
        return any(path.startswith(f + "/") for f in folders) or any(glob_matches(g, path) for g in self.paths)

    def to_json(self) -> ContextJson:
        """Name, root and owned globs, for the receipt and the index."""
        return {"name": self.name, "root": self.root, "paths": list(self.paths)}


@cache
def schema(name: str) -> dict[str, Any]:
    """A JSON Schema shipped in the package's data folder."""
    text = package_data.read_text(name)
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
        hint = ""
        if problems[0].startswith("contexts.") and "Additional properties" in problems[0]:
            hint = f"; a context takes only {', '.join(schema('config.schema.json')['$defs']['context']['properties'])}"
        raise InputInvalid(
            f"{CONFIG_PATH} is invalid: {problems[0]}{hint}"
            + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else "")
        )
    agents = tuple(raw.get("agents", Config.agents))
    if "contexts" not in raw:
        return _sections(raw, agents, tuple(raw.get("locked", ())))
    return Config(
        version=raw["version"],
        agents=agents,
        locked=tuple(raw.get("locked", ())),
        contexts=_contexts(raw, agents),
    )


def _sections(raw: dict[str, Any], agents: tuple[str, ...], locked: tuple[str, ...], root: str = "") -> Config:
    """The lanes' sections of one configuration (the whole repository's, or a context's with `root`); every path
    a context names is relative to its root and comes back joined to it."""
    where = f"contexts.{raw['name']}." if root else ""
    props = dict(raw.get("properties", {}))
    for key in ("seeds", "pythonpath"):
        if key in props:
            props[key] = tuple(props[key])
    for p in props.get("pythonpath", ()):
        if (p.startswith("/") and not root) or ".." in p.split("/"):
            raise InputInvalid(
                f"{CONFIG_PATH}: {where}properties.pythonpath entry {p!r} must stay inside the repository"
                + (" (relative to the context's root, or from the repository root with a leading `/`)" if root else "")
            )
    freeze = dict(raw.get("freeze", {}))
    fixtures = dict(raw.get("fixtures", {}))
    allow = tuple(raw.get("probes", {}).get("allow", ()))
    if root:
        props["list"] = _join(root, props.get("list", PropertiesConfig.list))
        props["pythonpath"] = tuple(
            anchor(root, p).rstrip("/") for p in props.get("pythonpath", PropertiesConfig.pythonpath)
        )
        freeze["file"] = _join(root, freeze.get("file", FreezeConfig.file))
        fixtures["dir"] = _join(root, fixtures.get("dir", FixturesConfig.dir))
        fixtures["digests"] = _join(root, fixtures.get("digests", FixturesConfig.digests))
        locked = tuple(anchor(root, g) for g in locked)
        allow = tuple(f"{anchor(root, path)}: {name}" for path, name in (a.split(": ", 1) for a in allow))
    return Config(
        version=1,
        agents=agents,
        locked=locked,
        freeze=FreezeConfig(**freeze),
        properties=PropertiesConfig(**props),
        fixtures=FixturesConfig(**fixtures),
        probes=ProbesConfig(allow=allow),
    )


def _join(root: str, path: str) -> str:
    """A context's path (relative to its root; `.` is the root itself) as a repository path."""
    return posixpath.normpath(posixpath.join(root, path.strip().lstrip("/")))


def anchor(root: str, glob: str) -> str:
    """A context's glob as a repository glob: relative to the root, or to the repository with a leading `/`
    (as in `.gitignore`); a trailing `/` keeps its sense."""
    text = glob.strip()
    if text.startswith("/"):
        return text.lstrip("/")
    return _join(root, text) + ("/" if text.endswith("/") else "")


def _contexts(raw: dict[str, Any], agents: tuple[str, ...]) -> tuple[BoundedContext, ...]:
    """`contexts:`: each name a slug, each root a plain folder, no root inside another; the top-level `locked`
    globs are locked in every context (repository paths), each context's own are relative to its root."""
    beside = [k for k in CONTEXT_SECTIONS if k in raw]
    if beside:
        raise InputInvalid(
            f"{CONFIG_PATH}: `{beside[0]}:` beside `contexts:` is ambiguous; move it under each context that "
            "needs it (with `contexts:` every context has its own properties, freeze, fixtures and probes)"
        )
    declared: dict[str, Any] = raw["contexts"]
    if not declared:
        raise InputInvalid(f"{CONFIG_PATH}: `contexts:` is empty; declare at least one context, or remove the key")
    if len(declared) > MAX_CONTEXTS:
        raise InputInvalid(f"{CONFIG_PATH}: {len(declared)} contexts; at most {MAX_CONTEXTS} are judged")
    shared = tuple(raw.get("locked", ()))
    out: list[BoundedContext] = []
    for name, body in declared.items():
        if not isinstance(name, str) or not CONTEXT_NAME.match(name):
            shown = repr(name)[:60]
            raise InputInvalid(
                f"{CONFIG_PATH}: context name {shown} is not allowed: use {CONTEXT_NAME_RULE} (the name becomes "
                "the file receipt-<name>.json and the check run `<check-name> / <name>`)"
            )
        root = _root(name, body["root"])
        for other in out:
            if root == other.root or root.startswith(other.root + "/") or other.root.startswith(root + "/"):
                raise InputInvalid(
                    f"{CONFIG_PATH}: the roots of contexts {other.name!r} ({other.root}) and {name!r} ({root}) "
                    "overlap; give each context a folder of its own, neither inside the other (a shared folder "
                    "goes in `paths:` of each context that depends on it)"
                )
        own = tuple(body.get("locked", ()))
        config = _sections({**body, "name": name}, agents, own, root)
        config = Config(
            version=1,
            agents=agents,
            locked=(*shared, *config.locked),
            freeze=config.freeze,
            properties=config.properties,
            fixtures=config.fixtures,
            probes=config.probes,
        )
        out.append(BoundedContext(name, root, tuple(anchor(root, g) for g in body.get("paths", ())), config))
    return tuple(out)


def _root(name: str, root: str) -> str:
    """A context's root: a folder path as git spells it, never the whole repository, `..`, absolute or a glob."""
    bad = (
        root != root.strip()
        or root.startswith("/")
        or any(c in root for c in "*?[]\\")
        or any(not c.isprintable() for c in root)
        or any(seg in {"", ".", ".."} for seg in root.rstrip("/").split("/"))
    )
    if bad:
        raise InputInvalid(
            f"{CONFIG_PATH}: contexts.{name}.root {root[:80]!r} is not a folder of the repository; write it as git "
            "spells it, relative to the repository root, without `.`, `..`, globs or a leading `/` (e.g. "
            "`services/billing`)"
        )
    return root.rstrip("/")


@lru_cache(maxsize=1024)
def login_glob(pattern: str) -> re.Pattern[str]:
    """A login glob as a regex: `*` and `?` are wildcards, everything else (`[bot]` included) is literal."""
    body = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern.casefold())
    return re.compile(body + r"\Z", re.DOTALL)


def is_agent(login: str, patterns: tuple[str, ...]) -> bool:
    """Whether a GitHub login matches one of the `agents` globs (logins are case-insensitive)."""
    name = login.casefold()
    return any(login_glob(p).match(name) for p in patterns)
