"""Steering without touching the property: what the patch changed in what a locked property draws or keeps.

The baseline runs the same planned seeds as the head (its census: failures counted, the search goes on). Per
property, `section` records what was compared — each `@given` argument's strategy as its `repr` after resolution,
and Hypothesis' discard count per seed on both trees — and `rows` derives `property-steered` from that recorded
section alone, so anyone holding the receipt (the fork publisher) derives the same rows from its facts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evidence_gate.model import Violation
from evidence_gate.row_ids import PROPERTY_STEERED

ROW = PROPERTY_STEERED
# A rise in discards counts as steering when it is at least this many examples ...
MIN_RISE = 5
# ... and more than this share of the examples the head kept on that seed.
RISE_SHARE = 0.25


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _strategies(results: Iterable[Mapping[str, Any]]) -> dict[str, str] | None:
    for result in results:
        found = result.get("strategies")
        if isinstance(found, dict):
            return {str(k): str(v) for k, v in found.items()}
    return None


def section(
    head: Iterable[Mapping[str, Any]], base: Iterable[Mapping[str, Any]], seeds: Iterable[int]
) -> dict[str, Any]:
    """What was compared for one property: `head` are its planned runs on the head, `base` the baseline's census
    runs of the same seeds. A seed is compared when the head passed on it and both trees counted its discards."""
    heads = {int(r["seed"]): r for r in head if isinstance(r.get("seed"), int)}
    bases = {int(r["seed"]): r for r in base if isinstance(r.get("seed"), int)}
    planned = list(seeds)
    out: dict[str, Any] = {
        "seeds": planned,
        "baseline": {
            "strategies": _strategies(bases.values()),
            "discards": {},
            "examples": {},
            "outcomes": {str(s): str(bases[s].get("outcome")) for s in planned if s in bases},
            "census_failures": {str(s): _count(bases[s].get("census_failures")) or 0 for s in planned if s in bases},
        },
        "head": {"strategies": _strategies(heads.values()), "discards": {}, "examples": {}},
        "compared": [],
        "margin": {"min_rise": MIN_RISE, "share": RISE_SHARE},
    }
    for seed in planned:
        h, b = heads.get(seed), bases.get(seed)
        for side, run in (("head", h), ("baseline", b)):
            if run is not None and _count(run.get("discards")) is not None:
                out[side]["discards"][str(seed)] = run["discards"]
                out[side]["examples"][str(seed)] = _count(run.get("examples")) or 0
        if (
            h is not None
            and b is not None
            and h.get("outcome") == "passed"
            and b.get("outcome") == "passed"
            and str(seed) in out["head"]["discards"]
            and str(seed) in out["baseline"]["discards"]
        ):
            out["compared"].append(seed)
    return out


def steered_seeds(recorded: Mapping[str, Any]) -> list[tuple[int, int, int, int]]:
    """(seed, baseline discards, head discards, head examples) of each compared seed whose discards rose past the
    margin. Judged per seed, so shards judge exactly what their merge judges."""
    head, base = recorded["head"], recorded["baseline"]
    found = []
    for seed in recorded.get("compared") or ():
        before, after = int(base["discards"][str(seed)]), int(head["discards"][str(seed)])
        examples = int(head["examples"].get(str(seed), 0))
        if after - before >= MIN_RISE and after - before > RISE_SHARE * examples:
            found.append((int(seed), before, after, examples))
    return found


def rows(node: str, file: str, recorded: Mapping[str, Any] | None) -> list[Violation]:
    """`property-steered` for one property, from its recorded section alone (pure: the receipt's facts suffice)."""
    if not recorded:
        return []
    found: list[Violation] = []
    head, base = recorded.get("head") or {}, recorded.get("baseline") or {}
    before_s, after_s = base.get("strategies"), head.get("strategies")
    if before_s is None and after_s is not None:
        # The head ran the property through Hypothesis and the baseline's census could not show its strategies.
        outcomes = ", ".join(f"seed {s}: {o}" for s, o in sorted((base.get("outcomes") or {}).items())) or "not run"
        found.append(
            Violation(
                ROW,
                f"{node}: the baseline's run of the same seeds did not report the property's strategies ({outcomes}), "
                "so what the patch changed in what it draws cannot be compared; make the property run on the "
                "baseline (fix the baseline first, in a pull request of its own)",
                file,
            )
        )
    elif isinstance(before_s, dict) and isinstance(after_s, dict):
        for name in sorted(set(before_s) | set(after_s)):
            was, now = before_s.get(name, "(none)"), after_s.get(name, "(none)")
            if was != now:
                found.append(
                    Violation(
                        ROW,
                        f"{node}: the strategy of {name!r} differs from the baseline's run of the same seeds: "
                        f"{was} → {now}; the code under test changed what the locked property draws (a bound or "
                        "constant the strategy reads); keep it, or change the property in a pull request a human "
                        "reviews",
                        file,
                    )
                )
    steered = steered_seeds(recorded) if recorded.get("compared") else []
    if steered:
        counts = "; ".join(f"seed {s}: {a} discarded against {b}, {n} kept" for s, b, a, n in steered)
        found.append(
            Violation(
                ROW,
                f"{node}: the property discarded far more examples than on the baseline's run of the same seeds "
                f"({counts}): the code under test makes the locked property throw away the inputs it would fail on "
                "(an exception the property turns into assume()); make the code handle them",
                file,
            )
        )
    return found


def merge(parts: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    """One property's sections from several shards as one: the seeds, counts and outcomes of all of them, the
    strategies of the first that reported any (each shard compared its own against its own baseline run)."""
    found = [p for p in parts if p]
    if not found:
        return None
    out: dict[str, Any] = {
        "seeds": [s for p in found for s in p.get("seeds") or ()],
        "compared": [s for p in found for s in p.get("compared") or ()],
        "margin": dict(found[0].get("margin") or {"min_rise": MIN_RISE, "share": RISE_SHARE}),
    }
    for side in ("baseline", "head"):
        merged: dict[str, Any] = {"strategies": None, "discards": {}, "examples": {}}
        for part in found:
            recorded = part.get(side) or {}
            if merged["strategies"] is None and isinstance(recorded.get("strategies"), dict):
                merged["strategies"] = dict(recorded["strategies"])
            for key in ("discards", "examples", "outcomes", "census_failures"):
                if isinstance(recorded.get(key), dict):
                    merged.setdefault(key, {}).update(recorded[key])
        out[side] = merged
    return out
