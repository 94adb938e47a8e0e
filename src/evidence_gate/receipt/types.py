"""The receipt's parts that readers index into, as TypedDicts (`access` hands them out of a receipt).

`data/receipt.schema.json` stays the source of truth: tests/unit/test_receipt_types.py fails when a TypedDict's keys,
or which of them are required, differ from the schema's `properties` and `required` there. The modules `check`
imports name these types under `TYPE_CHECKING` only: creating the TypedDicts (and importing `typing`) is ≈ 4 ms.
"""

# No `from __future__ import annotations` here: Python 3.11 reads NotRequired only from evaluated annotations, and
# the schema test compares __required_keys__.
from collections.abc import Mapping
from typing import Any, NotRequired, Required, TypedDict


class ViolationJson(TypedDict):
    """One entry of `violations`."""

    row: str
    path: str | None
    line: int | None
    message: str


class DecisionJson(TypedDict):
    """`decision`: the row that named the verdict and every row that matched."""

    row: str
    gate: str
    title: str
    matched: list[str]
    exit_code: NotRequired[int]
    scored: NotRequired[bool]


class GitJson(TypedDict):
    """`git`: the commits compared (None until known)."""

    baseline: str | None
    head: str | None
    merge_base: str | None


class CountsJson(TypedDict):
    """`properties.counts`: the seed ledgers by outcome."""

    open: int
    closed_failures: int
    budget_passes: int


class PatchLineJson(TypedDict):
    """A line of the pull request's diff that a failing example's traceback passed through."""

    path: str
    line: int


class FailureJson(TypedDict):
    """A seed ledger's `failure`: the failing statement of the property."""

    path: str
    line: int
    statement: str
    exception: str
    in_patch: NotRequired[list[PatchLineJson]]  # traceback frames on lines the patch added or changed


class SeedLedgerJson(TypedDict):
    """One entry of `properties.ledgers`: what was planned, attempted and found for one property."""

    patch_id: str
    property_id: str
    planned_seeds: list[int]
    attempted_seeds: list[int]
    failing_seed: int | None
    stopped_early: bool
    shrink_stable: bool | None
    oracle_source: str
    fixture_hash: str | None
    status: str
    fresh_seeds: NotRequired[list[int]]
    failing_seeds: NotRequired[list[int]]
    reproduced: NotRequired[bool | None]
    examples: NotRequired[dict[str, int]]
    assertion_hash: NotRequired[str | None]
    falsifying: NotRequired[str | None]
    fixtures: NotRequired[bool]
    stopped_because: NotRequired[dict[str, str]]
    exhausted_seeds: NotRequired[list[int]]
    runs: NotRequired[dict[str, dict[str, Any]]]
    status_reason: NotRequired[str]
    failure: NotRequired[FailureJson | None]
    excused_by: NotRequired[str | None]
    # Whether a freeze entry may excuse the failure, from the baseline's replays of the minimal examples.
    excuse: NotRequired[dict[str, Any] | None]
    # What the steering comparison recorded (steering.section); steering.rows derives property-steered from it.
    steering: NotRequired[dict[str, Any] | None]
    # Seeds run again (run_facts.replay_record); one that differs closes the ledger as not_replayable.
    replays: NotRequired[list[dict[str, Any]]]


class CoveredFileJson(TypedDict):
    """One changed file of code under test: its changed lines of code and which of them the properties executed."""

    path: str
    lines: list[int]
    executed: list[int]


class PatchCoverageJson(TypedDict):
    """`patch_coverage`: the PR's changed lines of code under test the locked properties executed (or why not)."""

    measured: bool
    reason: NotRequired[str]
    files: NotRequired[list[CoveredFileJson]]
    lines: NotRequired[int]
    executed: NotRequired[int]
    percent: NotRequired[float | None]
    min_percent: NotRequired[float | None]
    unreached: NotRequired[list[str]]


class ConfigJson(TypedDict):
    """`config`: where the configuration was read and its blob (None until known)."""

    path: str
    blob: str | None
    effective: NotRequired[dict[str, Any]]  # the configuration as the gate read it (written, not in the schema)


class ContextJson(TypedDict):
    """`context`: the bounded context this receipt judges."""

    name: str
    root: str
    paths: list[str]


class FreezeJson(TypedDict):
    """`freeze`: the ledger file, the entries the patch added and removed, and what the lanes recorded about it."""

    file: str
    added: list[str]
    removed: list[str]
    file_sha256: str | None
    # Written by the freeze lane (ledger.check) and, for the first shard, the property lane; not in the schema.
    format: NotRequired[str]
    mode: NotRequired[str]
    expired: NotRequired[list[str]]
    active: NotRequired[list[str]]
    base_sha256: NotRequired[str | None]
    valid: NotRequired[bool]
    entries: NotRequired[int | None]
    budget: NotRequired[dict[str, Any] | None]
    replays: NotRequired[list[dict[str, Any]]]
    replayed_from_baseline: NotRequired[list[str]]


class FixturesJson(TypedDict):
    """`fixtures`: the fixture tree and the digest records the sealed run checked."""

    tree: str | None
    digests: list[dict[str, Any]]
    head_tree: NotRequired[str | None]  # written by the fixture lane, not in the schema
    digests_sha256: NotRequired[str]


class PropertiesJson(TypedDict):
    """`properties`: the property list's digest, the seed ledgers and their counts, and how the lane ran."""

    list_sha256: str | None
    ledgers: list[SeedLedgerJson]
    counts: CountsJson
    # Written by the gate and the property lane, not in the schema.
    list: NotRequired[list[dict[str, Any]]]
    skipped: NotRequired[str]
    plan: NotRequired[list[int]]
    shard: NotRequired[list[int] | None]
    fresh_seeds: NotRequired[list[int]]
    trials: NotRequired[int]


class ReceiptJson(TypedDict, total=False):
    """The whole receipt as its writers build it: every part the schema names, required where the schema requires
    it, and the parts written beside them (`locked`, `probes`, `merged_from`, `published_from`)."""

    schema: Required[str]
    state: Required[str]
    ok: Required[bool]
    version: str
    mode: dict[str, Any]
    context: ContextJson
    decision: Required[DecisionJson]
    git: Required[GitJson]
    config: Required[ConfigJson]
    violations: Required[list[ViolationJson]]
    freeze: Required[FreezeJson]
    fixtures: Required[FixturesJson]
    properties: Required[PropertiesJson]
    sealed: dict[str, Any]
    patch_coverage: PatchCoverageJson
    errors: Required[list[str]]
    # Written beside the schema's parts: the static lanes' sections and where a merged or published receipt came from.
    locked: Mapping[str, Any]
    probes: Mapping[str, Any]
    merged_from: list[dict[str, Any]]
    published_from: dict[str, Any]
