"""The sealed run: the locked properties executed where the pull request's configuration, conftests and plugins
cannot reach them. This folder is the trust boundary.

Gate-side (the trusted process; any import): `run` (workspace, sandbox user, environment allow-list, limits, the
result pipe), `tree` (the tree a run executes, written from git objects), `runner_env` (the runner folder: the
harness and the worker-side modules, linked), `hypothesis_tables` (Hypothesis' Unicode tables, made by a
harness-only process and handed in read-only).

Worker-side (inside the sealed interpreter, linked from here under the private name `_evidence_gate_runner`):
`worker` (the entry point), `plugin` (the gate's pytest plugin), `protocol` (the event names, job fields and run
kinds both sides use), `confinement`, `landlock`, `seccomp`, `harness_guard`, `effects` (hooks refused and found by
their effect), `line_recorder` (the changed lines the properties ran), `provenance`, `assertion_hash`,
`steering_stats` (what the baseline compares for steering), `clock` (the shifted wall clock of a replay). They
import only the standard library, pytest, Hypothesis and each other, relatively (`from . import x`);
`runner_env.worker_modules()` follows those imports from `worker` and `plugin`, and tests/test_watched_modules.py
proves both (`WORKER_SIDE` is what the runner must link). The gate side imports some of them too (`protocol`,
`provenance`, `assertion_hash`, `plugin.matches_spec`, `confinement.shortfall`).
"""

from __future__ import annotations

GATE_SIDE = ("run", "tree", "runner_env", "hypothesis_tables")
WORKER_SIDE = (
    "worker",
    "plugin",
    "protocol",
    "confinement",
    "landlock",
    "seccomp",
    "harness_guard",
    "effects",
    "line_recorder",
    "provenance",
    "assertion_hash",
    "steering_stats",
    "clock",
)
