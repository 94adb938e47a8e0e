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

ROW = "property-steered"
# A rise in discards counts as steering when it is at least this many examples ...
MIN_RISE = 5
# ... and more than this share of the examples the head ran on the compared seeds.
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


def _rise(recorded: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """Discards on the compared seeds: baseline, head, the head's examples there, and the most-discarding seed."""
    head, base = recorded["head"], recorded["baseline"]
    seeds = [str(s) for s in recorded.get("compared") or ()]
    before = sum(int(base["discards"][s]) for s in seeds)
    after = sum(int(head["discards"][s]) for s in seeds)
    examples = sum(int(head["examples"].get(s, 0)) for s in seeds)
    worst = max(seeds, key=lambda s: int(head["discards"][s]) - int(base["discards"][s]), default="-1")
    return before, after, examples, int(worst)


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
    if not recorded.get("compared"):
        return found
    before, after, examples, worst = _rise(recorded)
    if after - before >= MIN_RISE and after - before > RISE_SHARE * examples:
        found.append(
            Violation(
                ROW,
                f"{node}: the property discarded {after} examples on seeds "
                f"{', '.join(map(str, recorded['compared']))} against {before} on the baseline's run of the same "
                f"seeds ({examples} kept; seed {worst}: {head['discards'][str(worst)]} against "
                f"{base['discards'][str(worst)]}): the code under test makes the locked property throw away the "
                "inputs it would fail on (an exception the property turns into assume()); make the code handle "
                "them",
                file,
            )
        )
    return found
