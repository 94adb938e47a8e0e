"""Steering without touching the property: what the patch changed in what a locked property draws or keeps.

After the head ran, the baseline describes every property's strategies, and runs again each planned seed on which
the head's own discard count could be a steered rise (`needed`: at least the margin's examples and share; a rise
can never be more than the head's count), as its census (failures counted, the search goes on). A seed the head
discarded too few examples on cannot have been steered, whatever the baseline would discard, so the verdict is the
one a census of every seed gives. Per property, `section` records what was compared — each `@given` argument's
strategy as its `repr` after resolution, and Hypothesis' discard count per seed on both trees — and `rows` derives
`property-steered` from that recorded section alone, so anyone holding the receipt (the fork publisher) derives the
same rows from its facts, a needed seed the census did not count included.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from evidence_gate.model import Violation
from evidence_gate.row_ids import PROPERTY_STEERED
from evidence_gate.sealed.worker.protocol import Kind

ROW = PROPERTY_STEERED
# Why a census that was due did not run (`section["census"]`): the only way a run that compares seeds has none.
CENSUS_NOT_RUN = "a process the code under test started outlived every sweep after the head's workers"
# A rise in discards counts as steering when it is at least this many examples ...
MIN_RISE = 5
# ... and more than this share of the examples the head kept on that seed.
RISE_SHARE = 0.25


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def could_be_steered(discards: int, examples: int) -> bool:
    """Whether a head run's own discards pass the margin: only then can its rise over the baseline's pass it."""
    return discards >= MIN_RISE and discards > RISE_SHARE * examples


def needed(head: Iterable[Mapping[str, Any]], seeds: Iterable[int]) -> list[int]:
    """The planned seeds of one property whose head run passed with discards that could be a steered rise: the
    seeds the baseline's census must count (`head` are the property's planned runs on the head)."""
    runs = {r.get("seed"): r for r in head if r.get("outcome") == "passed"}
    out = []
    for seed in seeds:
        run = runs.get(seed) or {}
        count, kept = _count(run.get("discards")), _count(run.get("examples")) or 0
        if count is not None and could_be_steered(count, kept):
            out.append(seed)
    return out


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
    base = list(base)
    heads = {int(r["seed"]): r for r in head if isinstance(r.get("seed"), int)}
    # A `describe` run shows the strategies only; the census' runs (`steer-base`) count discards.
    bases = {int(r["seed"]): r for r in base if isinstance(r.get("seed"), int) and r.get("kind") != Kind.DESCRIBE}
    planned = list(seeds)
    out: dict[str, Any] = {
        "seeds": planned,
        "baseline": {
            # A census run's description (after drawing) before a description without a run.
            "strategies": _strategies(sorted(base, key=lambda r: r.get("kind") == Kind.DESCRIBE)),
            "discards": {},
            "examples": {},
            "outcomes": {str(s): str(bases[s].get("outcome")) for s in planned if s in bases},
            "census_failures": {str(s): _count(bases[s].get("census_failures")) or 0 for s in planned if s in bases},
        },
        "head": {
            "strategies": _strategies(heads.values()),
            "discards": {},
            "examples": {},
            "outcomes": {str(s): str(heads[s].get("outcome")) for s in planned if s in heads},
        },
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
        if could_be_steered(after - before, examples):
            found.append((int(seed), before, after, examples))
    return found


def uncounted(recorded: Mapping[str, Any]) -> list[tuple[int, int, int]]:
    """(seed, head discards, head examples) of each seed the census had to count but did not: the head's discards
    could be a steered rise and the baseline shows no run of that seed. A head outcome other than a pass is not
    compared (nor counted); a missing one is taken as a pass, so dropping the head's outcomes hides nothing."""
    head, base = recorded.get("head") or {}, recorded.get("baseline") or {}
    counts, kept = head.get("discards") or {}, head.get("examples") or {}
    outcomes, censused = head.get("outcomes") or {}, base.get("outcomes") or {}
    found = []
    for seed in recorded.get("seeds") or ():
        count, examples = _count(counts.get(str(seed))), _count(kept.get(str(seed))) or 0
        if count is None or outcomes.get(str(seed), "passed") != "passed":
            continue
        if censused.get(str(seed)) == "passed" and _count((base.get("discards") or {}).get(str(seed))) is not None:
            continue  # counted: the baseline's census of this seed passed and gave its discards
        if could_be_steered(count, examples):
            found.append((int(seed), count, examples))
    return found


def rows(node: str, file: str, recorded: Mapping[str, Any] | None) -> list[Violation]:
    """`property-steered` for one property, from its recorded section alone (pure: the receipt's facts suffice)."""
    if not recorded:
        return []
    found: list[Violation] = []
    head, base = recorded.get("head") or {}, recorded.get("baseline") or {}
    before_s, after_s = base.get("strategies"), head.get("strategies")
    if before_s is None and after_s is not None and recorded.get("census"):
        found.append(
            Violation(
                ROW,
                f"{node}: the baseline's steering census did not run ({recorded['census']}), so what the patch "
                "changed in what the property draws cannot be compared; make the code under test end every process "
                "it starts",
                file,
            )
        )
    elif before_s is None and after_s is not None:
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
    elif isinstance(before_s, dict) and after_s is None:
        # The baseline runs the (locked, identical) property through Hypothesis and the head's runs showed nothing to
        # compare: the code under test hid the strategies (the test's `hypothesis` handle is reachable from it).
        found.append(
            Violation(
                ROW,
                f"{node}: the head's runs did not report the property's strategies, which the baseline's run of the "
                "same seeds did, so what the patch changed in what it draws cannot be compared; find the code under "
                "test that reaches the test function's `hypothesis` handle",
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
    missing = uncounted(recorded)
    if missing:
        counts = "; ".join(f"seed {s}: {d} discarded, {n} kept" for s, d, n in missing)
        found.append(
            Violation(
                ROW,
                f"{node}: the property discarded many examples on the head ({counts}) and the baseline's run of the "
                "same seeds did not count its own, so a steered rise cannot be ruled out; make the property run on "
                "the baseline (fix the baseline first, in a pull request of its own)",
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
    strategies of the first that reported any (the first shard's: a later one records none unless its own census
    ran and showed the baseline's, and then compared them itself)."""
    found = [p for p in parts if p]
    if not found:
        return None
    out: dict[str, Any] = {
        "seeds": [s for p in found for s in p.get("seeds") or ()],
        "compared": [s for p in found for s in p.get("compared") or ()],
        "margin": dict(found[0].get("margin") or {"min_rise": MIN_RISE, "share": RISE_SHARE}),
    }
    census = next((str(p["census"]) for p in found if p.get("census")), None)
    if census is not None:
        out["census"] = census
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
