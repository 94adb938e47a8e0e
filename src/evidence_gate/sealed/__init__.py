"""The sealed run: the locked properties executed where the pull request's configuration, conftests and plugins
cannot reach them. This folder is the trust boundary.

Here, the gate side (the trusted process; any import): `run` (workspace, sandbox user, environment allow-list,
limits, the result pipe), `tree` (the tree a run executes, written from git objects), `runner_env` (the runner
folder: the harness and the worker side, linked), `hypothesis_tables` (Hypothesis' Unicode tables, made by a
harness-only process and handed in read-only), `prebuild` (the image's build step that makes those tables).

`worker/` is the worker side: every module in it runs inside the sealed interpreter, linked under the private name
`_evidence_gate_runner`, and imports only the standard library, pytest, Hypothesis and its siblings (relatively).
The folder is the boundary: tests/sealed/test_watched_modules.py proves that what the runner links is exactly the
folder and that no module in it imports anything else.
"""
