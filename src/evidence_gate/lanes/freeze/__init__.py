"""The freeze-ledger lane."""
