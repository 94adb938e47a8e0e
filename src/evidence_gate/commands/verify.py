"""`evidence-gate verify RECEIPT`: re-derive a receipt from git objects and its seeds, and name what differs.

Only the receipt's inputs are taken from it: the commits (`git.baseline`, `git.head`), the configuration blob, the
seeds (`properties.plan`, `properties.fresh_seeds`, `properties.shard`) and the run's other inputs (`mode.author`,
`mode.today`, `mode.run`). Everything else is judged again by `gate.evaluate`, the code path behind `check`, with the
fresh seeds forced to the receipt's, and the two receipts are compared: the decision, the violations' rows, the
static lanes' identities and every seed ledger's status, failing seeds, example counts and failing example.
"""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any

from evidence_gate import gate
from evidence_gate.errors import GateError
from evidence_gate.strict_parse import load_json

REPRODUCED = "reproduced"
# Static lanes' identities the re-derivation must give again (dotted paths into the receipt).
STATIC_FIELDS = (
    "config.blob",
    "properties.list_sha256",
    "freeze.file_sha256",
    "freeze.added",
    "freeze.removed",
    "fixtures.tree",
    "locked",
    "probes",
)
LEDGER_FIELDS = ("status", "attempted_seeds", "failing_seeds", "examples", "falsifying", "assertion_hash")


def _at(receipt: Mapping[str, Any], dotted: str) -> Any:
    value: Any = receipt
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _section(receipt: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = receipt.get(key)
    return value if isinstance(value, Mapping) else {}


def _inputs(receipt: Mapping[str, Any], repo: Path) -> gate.CheckOptions:
    """The options that judge the receipt's question again: its commits, seeds and inputs, nothing it concluded."""
    git, mode, props = (_section(receipt, k) for k in ("git", "mode", "properties"))
    baseline, head = git.get("baseline"), git.get("head")
    if not isinstance(baseline, str) or not isinstance(head, str):
        raise GateError("the receipt names no baseline and head commit", fix="verify a receipt written by `check`")
    fresh = props.get("fresh_seeds")
    shard = mode.get("shard") or props.get("shard")
    today = mode.get("today")
    return gate.CheckOptions(
        repo=repo,
        head=head,
        base=baseline,
        author=mode.get("author") if isinstance(mode.get("author"), str) else None,
        today=date.fromisoformat(today) if isinstance(today, str) else date(1970, 1, 1),
        run=mode.get("run") is not False,
        shard=(int(shard[0]), int(shard[1])) if isinstance(shard, list) and len(shard) == 2 else None,
        fresh_seeds=tuple(int(s) for s in fresh) if isinstance(fresh, list) else None,
        context=str(context) if isinstance(context := _section(receipt, "context").get("name"), str) else "",
    )


def _comparable(key: str, value: Any) -> Any:
    """A ledger field as two honest runs agree on it: attempts in arrival order across workers are scheduling."""
    if key == "attempted_seeds" and isinstance(value, list):
        return sorted(value, key=str)
    return value


def _ledgers(receipt: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = _at(receipt, "properties.ledgers")
    return {str(x.get("property_id")): x for x in found if isinstance(x, Mapping)} if isinstance(found, list) else {}


def differences(claimed: Mapping[str, Any], derived: Mapping[str, Any]) -> list[str]:
    """Each way the receipt differs from the one derived again, in the order a reader checks them."""
    found = []
    for key in ("git.baseline", "git.head"):
        if _at(claimed, key) != _at(derived, key):
            found.append(f"{key}: the receipt says {_at(claimed, key)}, the commits give {_at(derived, key)}")
    if derived.get("state") != "final":
        errors = derived.get("errors") or ["no error recorded"]
        found.append(f"the re-derivation did not finish: {str(errors[0]).splitlines()[0][:300]}")
    for key in ("decision.row", "ok"):
        if _at(claimed, key) != _at(derived, key):
            found.append(f"{key}: the receipt says {_at(claimed, key)!r}, re-derived {_at(derived, key)!r}")
    rows = [
        Counter(str(v.get("row")) for v in r.get("violations") or [] if isinstance(v, Mapping))
        for r in (claimed, derived)
    ]
    for row in sorted(set(rows[0]) | set(rows[1])):
        if rows[0][row] != rows[1][row]:
            found.append(f"row {row}: the receipt has {rows[0][row]} violation(s), re-derived {rows[1][row]}")
    for key in STATIC_FIELDS:
        if _at(claimed, key) != _at(derived, key):
            found.append(f"{key}: the receipt's differs from the one derived from git objects")
    for key in ("properties.plan", "properties.fresh_seeds"):
        if _at(claimed, key) != _at(derived, key):
            found.append(f"{key}: the receipt says {_at(claimed, key)}, re-derived {_at(derived, key)}")
    mine, theirs = _ledgers(claimed), _ledgers(derived)
    for node in sorted(set(mine) | set(theirs)):
        a, b = mine.get(node), theirs.get(node)
        if a is None or b is None:
            found.append(f"ledger {node}: {'only in the receipt' if b is None else 'missing from the receipt'}")
            continue
        for key in LEDGER_FIELDS:
            if _comparable(key, a.get(key)) != _comparable(key, b.get(key)):
                found.append(f"ledger {node} {key}: the receipt says {a.get(key)!r}, re-derived {b.get(key)!r}")
    return found


def verify(receipt_path: Path, repo: Path, workdir: Path | None = None) -> list[str]:
    """The differences between a receipt and its re-derivation (empty: reproduced)."""
    try:
        claimed = load_json(receipt_path.read_bytes())
    except OSError as exc:
        raise GateError(f"cannot read the receipt {receipt_path}: {exc.strerror}", usage=True) from exc
    if not isinstance(claimed, dict):
        raise GateError(f"{receipt_path} is not a receipt (not a JSON object)", usage=True)
    opts = _inputs(claimed, repo)
    with tempfile.TemporaryDirectory(prefix="evidence-gate-verify-", dir=workdir) as scratch:
        derived, _code = gate.evaluate(opts, Path(scratch) / "receipt.json")
    return differences(claimed, derived)


def main(receipt_path: Path, repo: Path) -> int:
    """Print `reproduced` (exit 0) or each difference (exit 10)."""
    found = verify(receipt_path, repo)
    if not found:
        print(REPRODUCED)
        return 0
    for line in found:
        print(f"differs: {line}")
    return 10
