"""The strings the trusted process and the sealed worker must agree on: event names, job fields and run kinds.

Worker-side (standard library only): the worker and the plugin import it relatively, the gate as
`evidence_gate.sealed.worker.protocol`. A job is one JSON file the gate writes and the worker reads (`Job`); events are
JSON lines the worker writes to the result pipe, each an object whose `EV` names its `Event`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any, Required, TypedDict

EV = "ev"  # every event's kind
MAC_BYTES = 16  # of HMAC-SHA256, in hex before each line
# OpenSSL's one-shot HMAC, bound at import (in the worker before any repository code): `hmac.digest` looks the C
# function up on a module every call, so code under test that rebound it there would be handed the key (review).
try:
    from _hashlib import hmac_digest as _DIGEST
except ImportError:  # an interpreter without OpenSSL: the pure-Python HMAC, through the names bound here
    import hmac as _hmac

    _DIGEST = _hmac.digest  # type: ignore[assignment]  # the same call, with wider argument types


def sign(key: bytes, count: int, body: bytes) -> bytes:
    """The signature of the `count`-th line (from 0) of a worker's stream whose JSON is `body`: HMAC-SHA256 with the
    run's key over its number and its bytes, in hex. Both sides compute it; a line lost, added, changed or moved
    fails it, and so does every later one."""
    return _DIGEST(key, count.to_bytes(8, "big") + body, "sha256")[:MAC_BYTES].hex().encode("ascii")


class Event(enum.StrEnum):
    """The events a worker sends, in the order they come."""

    CONFINED = "confined"  # first, before any repository code: what confinement applied
    CONFIGURED = "configured"  # pytest is configured: the plugins it loaded
    COLLECT_ERROR = "collect-error"  # a module or conftest failed to import
    COLLECTED = "collected"  # every node pytest collected
    FOREIGN_HOOKS = "foreign-hooks"  # pytest hooks defined outside the harness and the locked files
    START = "start"  # a (node, seed, kind) run begins
    RESULT = "result"  # and how it ended
    PROVENANCE = "provenance"  # where the code under test was loaded from
    DIGEST = "digest"  # a fixture record's produced output, hashed
    PRODUCER_MISSING = "producer-missing"  # the fixture producer could not be imported
    EFFECTS = "effects"  # a hook the gate did not install (trace, profile, monitoring, gc, signal): `found`
    LINES = "lines"  # a changed line of code under test ran for the first time: `path`, `line`
    FINISHED = "finished"  # the session (or the digest run) completed


class Mode(enum.StrEnum):
    """What a worker does."""

    PYTEST = "pytest"  # one pytest session over the job's runs
    DIGEST = "digest"  # the fixture producer on each record
    INSTALL = "install"  # `properties.install` as `sh -c`, under the same confinement


class Kind(enum.StrEnum):
    """Why a (node, seed) runs."""

    PLAN = "plan"  # a declared seed of the plan
    FRESH = "fresh"  # a seed drawn at run time
    COUNTEREXAMPLE = "counterexample"  # a documented counterexample, on the baseline tree
    FREEZE_HEAD = "freeze-head"  # a removed ledger entry's test, the baseline's copy on the head's code
    FREEZE_BASE = "freeze-base"  # the same on the baseline
    FREEZE_EXPIRED = "freeze-expired"  # an expired entry's test
    HASH = "hash"  # `freeze hash`: the failing assertion's hash
    STEER_BASE = "steer-base"  # a planned seed on the baseline, failures counted: strategies and discards to compare
    DESCRIBE = "describe"  # a property's strategies described on the baseline, no example run (steering's census)
    EXCUSE_BASE = "excuse-base"  # a frozen property's minimal example from the head, replayed on the baseline
    REPLAY = "replay"  # a failing plan or fresh seed run again in a fresh worker: it must fail the same way
    SHIFTED = "shifted"  # a sample planned seed under a shifted clock and another hash seed: the same examples


# A failure of these is run again from scratch (`shrink1`, `shrink2`, ...) to judge whether its shrink is stable.
PLAN_KINDS = (Kind.PLAN, Kind.FRESH)
SHRINK = "shrink"


# The `shifted` worker's clock is moved by 7 years, 12 hours and 1.5 seconds (another year, another half of the day,
# another parity of the second) and it has another PYTHONHASHSEED, so that a property reading either is caught. The
# two hash seeds are drawn at random for each run (`sealed.run.draw_hash_seeds`): fixed ones were a tell.
CLOCK_SHIFT_S = 7 * 365 * 86400 + 12 * 3600 + 1.5


def shrink_kind(n: int) -> str:
    """The kind of the n-th re-run (from 1) of a failing plan or fresh seed."""
    return f"{SHRINK}{n}"


def is_shrink(kind: object) -> bool:
    """Whether `kind` names a shrink re-run."""
    return isinstance(kind, str) and kind.startswith(SHRINK) and kind[len(SHRINK) :].isdigit()


class Limits(TypedDict):
    """The resource limits a worker applies to itself."""

    memory_mb: int
    cpu_s: int
    nproc: int


class Job(TypedDict, total=False):
    """A worker's job file: written by the gate (`run.run_worker` adds the workspace's part), read by the worker."""

    mode: Required[str]  # a Mode
    tree: Required[str]  # the sealed tree, the worker's working directory
    limits: Required[Limits]
    paths: list[str]  # appended to sys.path after the harness is imported
    ini: str  # the run's own pytest ini (the tree's configuration is never read)
    drop: list[int] | None  # [uid, gid] of the sandbox user, or None to keep the gate's
    isolate_network: bool
    writable: list[str]
    runner_links: list[str]  # the runner folder's links: a Landlock rule on a link applies to its target
    hypothesis_storage: str
    code_under_test: dict[str, str]  # top-level name -> where it must be loaded from
    # Mode.PYTEST
    runs: dict[str, list[list[Any]]]  # node -> [seed, kind] runs, in order
    args: list[str]
    trials: int
    shrink_reruns: int
    trusted_files: list[str]  # absolute paths of the locked Python files
    bounded: bool  # every module with code it loads from the tree must be a trusted file or below `paths`
    replays: dict[str, dict[str, str]]  # node -> seed -> `version|blob` of the minimal example an excuse-base replays
    hash_seed: int  # the worker's PYTHONHASHSEED (the run's first hash seed unless given)
    clock_shift_s: float  # seconds the worker adds to the clock the code under test reads (0: none)
    # absolute path -> {"path": repo-relative, "source": base64 of the head's text, "lines": changed code lines}
    record_lines: dict[str, dict[str, Any]]
    # Mode.DIGEST
    producer: str  # "module:function"
    records: list[dict[str, Any]]  # {"id", "input"}
    # Mode.INSTALL
    command: str
    env: dict[str, str]


class ResultEvent(TypedDict):
    """How one (node, seed, kind) run ended (`Event.RESULT`): the plugin writes it, and the gate reads it only after
    `result_problem` found every field of the type `RESULT_FIELDS` names, so a reader indexes instead of guessing."""

    ev: str
    node: str
    spec: str  # the SCORE_PROPERTIES line the node was planned for
    seed: int
    kind: str  # a Kind, or a shrink re-run's
    outcome: str  # passed | failed | error | skipped | xfailed | xpassed
    message: str
    hypothesis: bool  # the seed went to Hypothesis (else through PROPERTY_SEED)
    examples: int | None  # valid and interesting examples Hypothesis ran, from its statistics
    stopped_because: str | None  # Hypothesis' own words
    stop: str | None  # the ExitReason member they name
    assertion_hash: str | None
    falsifying: str | None  # Hypothesis' "Falsifying example" note
    failure: dict[str, Any] | None  # {path, line, statement, exception, frames} in a locked file
    assertion_bound: list[str] | None
    tampered: list[str]  # harness objects found changed by the end of the run
    examples_digest: str | None  # sha256 over the examples run, in order
    cases: int
    case_digests: list[str]
    strategies: dict[str, str] | None  # argument -> the strategy's repr after resolution
    discards: int | None
    census_failures: int
    blob: str | None  # the minimal example's `version|blob`


_NONE = type(None)
# The wire type of each ResultEvent field (tests/sealed/test_sealed_protocol.py keeps the two in step).
RESULT_FIELDS: dict[str, tuple[type, ...]] = {
    "node": (str,),
    "spec": (str,),
    "seed": (int,),
    "kind": (str,),
    "outcome": (str,),
    "message": (str,),
    "hypothesis": (bool,),
    "examples": (int, _NONE),
    "stopped_because": (str, _NONE),
    "stop": (str, _NONE),
    "assertion_hash": (str, _NONE),
    "falsifying": (str, _NONE),
    "failure": (dict, _NONE),
    "assertion_bound": (list, _NONE),
    "tampered": (list,),
    "examples_digest": (str, _NONE),
    "cases": (int,),
    "case_digests": (list,),
    "strategies": (dict, _NONE),
    "discards": (int, _NONE),
    "census_failures": (int,),
    "blob": (str, _NONE),
}


def result_problem(event: Mapping[str, Any]) -> str | None:
    """Why `event` is not a well-formed ResultEvent (a missing field, or one of another type), or None."""
    for key, types in RESULT_FIELDS.items():
        if key not in event:
            return f"a result event has no {key!r}"
        value = event[key]
        # bool is an int to isinstance: a seed or a count of True is refused, a bool field takes only a bool.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            wanted = " or ".join("null" if t is _NONE else t.__name__ for t in types)
            return f"a result event's {key!r} is {type(value).__name__}, not {wanted}"
    return None


def matches_spec(nodeid: str, spec: str) -> bool:
    """Whether a collected node id belongs to a SCORE_PROPERTIES entry (file, node, or parametrized node)."""
    if "::" not in spec:
        return nodeid.startswith(spec + "::")
    return nodeid == spec or nodeid.startswith((spec + "[", spec + "::"))
