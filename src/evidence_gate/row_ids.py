"""One name per decision-table row id, so a row is a name the type checker and `grep` see, not a string.

The ids are the contract (SPEC's decision table, `data/decision_table.json`); tests/unit/test_row_ids.py keeps this
file and the table one-to-one and finds any row id still written as a string literal in `src/`. Nothing is imported
here, so every layer (the worker side excepted: it names no rows) may import it.
"""

from __future__ import annotations

CONFIG_INVALID = "config-invalid"  # row 1
HISTORY_MISSING = "history-missing"  # row 2
EVENT_MISMATCH = "event-mismatch"  # row 3
HUMAN_PATCH = "human-patch"  # row 4
EVIDENCE_PATH_EDITED = "evidence-path-edited"  # row 5
HARNESS_PROBED = "harness-probed"  # row 6
FREEZE_LEDGER_INVALID = "freeze-ledger-invalid"  # row 7
FREEZE_ID_ADDED = "freeze-id-added"  # row 8
FREEZE_EXPIRY_EXTENDED = "freeze-expiry-extended"  # row 9
FREEZE_BUDGET_RAISED = "freeze-budget-raised"  # row 10
FREEZE_ENTRY_REWRITTEN = "freeze-entry-rewritten"  # row 11
FREEZE_OVER_BUDGET = "freeze-over-budget"  # row 12
FREEZE_EXPIRED = "freeze-expired"  # row 13
FREEZE_REMOVED_STILL_FAILING = "freeze-removed-still-failing"  # row 14
FREEZE_REMOVAL_UNVERIFIED = "freeze-removal-unverified"  # row 15
FIXTURE_DIGEST_MISMATCH = "fixture-digest-mismatch"  # row 16
RUN_INTEGRITY = "run-integrity"  # row 17
PROPERTY_STEERED = "property-steered"  # row 18
PROPERTY_NOT_REPLAYABLE = "property-not-replayable"  # row 19
SEED_LEDGER_OPEN = "seed-ledger-open"  # row 20
PROPERTY_TAUTOLOGY = "property-tautology"  # row 21
PROPERTY_FAILED = "property-failed"  # row 22
PROPERTY_FAILED_FRESH_SEED = "property-failed-fresh-seed"  # row 23
PATCH_NOT_COVERED = "patch-not-covered"  # row 24
PASS_FREEZE_SHRANK = "pass-freeze-shrank"  # noqa: S105 (a row id, not a password) row 25
PASS = "pass"  # noqa: S105 (a row id, not a password) row 26
