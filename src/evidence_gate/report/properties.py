"""Seed ledgers for people: a failing property with its seeds, example, assertion and reproduce command; one line
per ledger in plain words instead of closing-status jargon."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from evidence_gate.receipt import access as receipt_access
from evidence_gate.receipt.types import FailureJson, PatchLineJson, SeedLedgerJson
from evidence_gate.report import gfm, reproduce
from evidence_gate.row_ids import PROPERTY_FAILED, PROPERTY_FAILED_FRESH_SEED

FAILED_ROWS = (PROPERTY_FAILED, PROPERTY_FAILED_FRESH_SEED)
# Closing statuses in words (SPEC's names stay in the receipt and the full detail).
STATUS_WORDS = {
    "incomplete_fields": "ledger incomplete",
    "empty_plan": "no seeds planned",
    "early_stop_incomplete": "stopped before every planned seed ran",
    "seed_gap": "not every planned seed ran exactly once",
    "not_replayable": "the same seed gave another outcome or other examples when run again",
    "budget_pass_no_freeze": "held on every seed",
    "seed_mismatch": "the failure did not reproduce on its seed",
    "oracle_unreviewed": "failed (the oracle is a model draft)",
    "shrink_unstable": "failed (the minimal example was not stable)",
    "fixture_unbound": "failed (no fixture hash bound)",
    "freeze_eligible": "failed reproducibly",
}
ORACLE_WORDS = {"human_reviewed": "oracle reviewed by a human", "model_draft": "oracle drafted by a model"}
_PREFIXES = ("Falsifying example:", "Failing test case:")
_SEEDS = re.compile(r"\bseed\(s\) (\d+(?:, \d+)*)")
_HASH = re.compile(r"\(assertion hash [0-9a-f]{16,64}; ")  # an identity: in the receipt, not in a sentence


def in_words(message: str) -> str:
    """A property finding's message for people: `seed(s) 1, 2` as `seeds 1, 2`, no assertion hash, a closing
    status in words."""
    for slug, words in STATUS_WORDS.items():
        message = message.replace(f"({slug})", f"({words})")
    message = _SEEDS.sub(lambda m: ("seeds " if "," in m.group(1) else "seed ") + m.group(1), message)
    return _HASH.sub("(", message).replace("(Failing test case: ", "(minimal example: ")


def _seeds(values: Any, limit: int = 12) -> str:
    if not isinstance(values, list) or not values:
        return "none"
    shown = ", ".join(str(int(v)) for v in values[:limit] if isinstance(v, int))
    return shown + (f" … (+{len(values) - limit})" if len(values) > limit else "")


def failing(receipt: Mapping[str, Any]) -> list[SeedLedgerJson]:
    """Ledgers of properties that failed and were not excused by a freeze entry."""
    return [x for x in receipt_access.ledgers(receipt) if x.get("failing_seed") is not None and not x.get("excused_by")]


def failure_of(ledger: SeedLedgerJson) -> FailureJson | None:
    """The ledger's `failure` (path, line, statement, exception) when the sealed run recorded a usable one."""
    failure = ledger.get("failure")
    if isinstance(failure, dict) and isinstance(failure.get("path"), str) and isinstance(failure.get("line"), int):
        return failure
    return None


def patch_lines(ledger: SeedLedgerJson) -> list[PatchLineJson]:
    """The lines of the pull request's diff that the failing example's traceback passed through."""
    failure = failure_of(ledger)
    found = failure.get("in_patch") if failure else None
    return [h for h in found or [] if isinstance(h, dict) and isinstance(h.get("line"), int)]


def minimal_example(ledger: SeedLedgerJson) -> str | None:
    """Hypothesis' minimal example without its `Falsifying example:` prefix."""
    text = ledger.get("falsifying")
    if not isinstance(text, str) or not text.strip():
        return None
    for prefix in _PREFIXES:
        if text.startswith(prefix):
            text = text[len(prefix) :]
    return text.strip()


def where_failed(ledger: SeedLedgerJson, planned: list[int]) -> str:
    """`planned seeds 1101, 1102 (2 of 4)` or `fresh seed 7`."""
    listed: list[int | None] = [*(ledger.get("failing_seeds") or [])] or [ledger.get("failing_seed")]
    seeds = [s for s in listed if isinstance(s, int)]
    on_plan = [s for s in seeds if s in planned]
    if on_plan:
        return f"planned seed{'s' if len(on_plan) > 1 else ''} {_seeds(on_plan)} ({len(on_plan)} of {len(planned)})"
    return f"fresh seed {_seeds(seeds)} (the plan's {len(planned)} passed)"


def one_line_example(example: str, limit: int = 80) -> str | None:
    """`f(x=1, y=2)` for Hypothesis' pretty-printed call when each argument is one line and the whole fits `limit`
    characters; None when it does not (then the example is shown as a block)."""
    rows = example.split("\n")
    if len(rows) == 1:
        return example if len(example) <= limit else None
    head, args, tail = rows[0], rows[1:-1], rows[-1]
    if not head.endswith("(") or tail != ")" or not all(a.startswith("    ") and a[4:5] != " " for a in args):
        return None
    joined = head + ", ".join(a.strip().removesuffix(",") for a in args) + ")"
    return joined if len(joined) <= limit else None


def failure_block(receipt: Mapping[str, Any], ledger: SeedLedgerJson, line_link: Any) -> list[str]:
    """Markdown lines for one failing property, what a reader acts on first: node and seeds, the minimal example,
    the reproduce command (six short lines), then the failing line and the error.

    `line_link(path, line)` renders a location (a link when the blob URL is known)."""
    planned = [s for s in ledger.get("planned_seeds") or [] if isinstance(s, int)]
    stable = (
        "reproduced, same minimal example twice"
        if ledger.get("shrink_stable") is True
        else "the re-runs did not give the same minimal example"
        if ledger.get("reproduced")
        else "did not reproduce on a re-run"
    )
    out = [f"**{gfm.code(ledger.get('property_id'), 300)}** failed on {where_failed(ledger, planned)}; {stable}.", ""]
    example = minimal_example(ledger)
    if example:
        short = one_line_example(example)
        out += (
            [f"**Minimal example:** {gfm.code(short)}", ""]
            if short
            else ["**Minimal example:**", "", gfm.block(example, "python", 2000), ""]
        )
    seed = ledger["failing_seed"]
    assert seed is not None  # `failing` keeps only ledgers with a failing seed
    trials = (receipt.get("properties") or {}).get("trials")
    runs = f"{trials} examples, " if isinstance(trials, int) and reproduce.is_hypothesis(ledger) else ""
    out += [
        f"**Reproduce seed {seed}** ({runs}the gate's settings) from the repository root:",
        "",
        gfm.block(reproduce.for_ledger(receipt, ledger, seed), "sh"),
        "",
    ]
    failure = failure_of(ledger)
    hits = patch_lines(ledger)
    if hits:
        where = ", ".join(line_link(h["path"], h["line"]) for h in hits[:5])
        out += [f"**In this pull request's diff:** {where} — changed lines the failing example ran.", ""]
    if failure is not None:
        out += [
            f"**Failing line:** {line_link(failure['path'], failure['line'])} "
            f"{gfm.code(failure.get('statement') or '', 200)}",
            "",
        ]
        exception = str(failure.get("exception") or "").strip()
        if exception and "\n" not in exception:
            out += [f"**Error:** {gfm.code(exception, 500)}", ""]
        elif exception:
            out += ["**Error:**", "", gfm.block(exception[:500], "text"), ""]
    else:
        out += ["**Failing line:** not recorded (the sealed run gave no line for this failure).", ""]
    return out


def ledger_line(ledger: SeedLedgerJson) -> str:
    """One list item per ledger: node, result in words, seeds and example counts, oracle."""
    status = str(ledger.get("status"))
    words = STATUS_WORDS.get(status, status)
    if ledger.get("excused_by"):
        words += f", excused by freeze entry {gfm.code(ledger['excused_by'], 120)}"
    planned = ledger.get("planned_seeds") or []
    examples = ledger.get("examples")
    counts = sorted({n for n in examples.values() if isinstance(n, int)}) if isinstance(examples, dict) else []
    per_seed = ""
    if counts:
        per_seed = (
            f" · {counts[0]} examples per seed"
            if len(counts) == 1
            else f" · {counts[0]}–{counts[-1]} examples per seed"
        )
    fresh = ledger.get("fresh_seeds") or []
    seeds = f"seeds {_seeds(planned)}" + (f" + fresh {_seeds(fresh)}" if fresh else "")
    failing_seed = ledger.get("failing_seed")
    fail = f" · first failing seed {failing_seed}" if failing_seed is not None else ""
    oracle = ORACLE_WORDS.get(str(ledger.get("oracle_source")), gfm.text(ledger.get("oracle_source"), 40))
    return f"- {gfm.code(ledger.get('property_id'), 300)} — **{words}** · {seeds}{per_seed}{fail} · {oracle}"
