"""`evidence-gate merge`: one receipt (or one index, for a repository with contexts) over the receipts of
`check --shard K/N` runs."""

from __future__ import annotations

import sys
from pathlib import Path

from evidence_gate import contexts
from evidence_gate.errors import GateError
from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt import shard_merge
from evidence_gate.receipt.write import write_receipt
from evidence_gate.report.registry import Context, render


def main(receipts: list[Path], out: Path, fmt: str, context: Context | None = None) -> int:
    """Merge the shard receipts, write the merged receipt, print it, and exit with its decision's code."""
    indexes = [contexts.load_index(p) for p in receipts]
    if any(i is not None for i in indexes):
        if not all(i is not None for i in indexes):
            raise GateError("some files are index files and some receipts", fix="pass one kind", usage=True)
        outcome = contexts.merge_indexes(receipts, [i for i in indexes if i is not None], out)
        sys.stdout.write(contexts.render_outcome(outcome, fmt, context))
        return outcome.code
    merged = shard_merge.merge([shard_merge.load(p) for p in receipts], [str(p) for p in receipts])
    write_receipt(out, merged)
    sys.stdout.write(render(fmt, merged, context))
    decided = receipt_access.decision(merged)
    assert decided is not None and "exit_code" in decided  # `merge` always decides
    return decided["exit_code"]
