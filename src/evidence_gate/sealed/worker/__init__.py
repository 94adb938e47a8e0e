"""The worker side of the sealed run: `worker` (the entry point), `plugin` (the gate's pytest plugin), `failures`
(how the plugin tells a failure), `protocol` (the event names, job fields and run kinds both sides use),
`confinement`, `landlock`, `seccomp`, `harness_guard`, `effects` (hooks refused and found by their effect),
`line_recorder` (the changed lines the properties ran), `provenance`, `assertion_hash`, `steering_stats` (what the
baseline compares for steering), `clock` (the shifted wall clock of a replay).

Everything here runs inside the sealed interpreter, where it is linked under the private name
`_evidence_gate_runner` (this file is not linked: the runner writes its own). These modules import only the
standard library, pytest, Hypothesis and each other, relatively (`from . import x`). The gate side imports some of
them too (`protocol`, `provenance`, `assertion_hash`, `protocol.matches_spec`, `confinement.shortfall`).
"""
