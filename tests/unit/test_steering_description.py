"""The steering description of a strategy: what a `sampled_from` draws from shows even where its repr names only the
source, and an unchanged strategy reads the same before and after a run."""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.provisional import domains

from evidence_gate.sealed.worker.steering_stats import MAX_DESCRIPTION, describe


def _unit(hide: str | None = None) -> type[enum.Enum]:
    """A fresh `Unit` enum, with one member left out of `_member_names_` (still an attribute, never iterated)."""
    unit = enum.Enum("Unit", {"ONE": 1, "TEN": 10, "KILO": 1000}, module="calc")
    if hide is not None:
        unit._member_names_.remove(hide)
    return unit


NESTINGS: dict[str, Callable[[Any], st.SearchStrategy[Any]]] = {
    "direct": lambda s: s,
    "one_of": lambda s: st.one_of(st.none(), s),
    "lists": lambda s: st.lists(s, max_size=3),
    "tuples in one_of": lambda s: st.one_of(st.integers(), st.tuples(st.booleans(), s)),
    "fixed_dictionaries": lambda s: st.fixed_dictionaries({"u": s}),
    "builds": lambda s: st.builds(dict, u=s),
    "mapped and filtered": lambda s: s.map(lambda u: u.value).filter(bool),
    "deferred": lambda s: st.deferred(lambda: s),
}


@pytest.mark.parametrize("nest", NESTINGS.values(), ids=list(NESTINGS))
def test_a_hidden_enum_member_changes_the_description(nest: Callable[[Any], st.SearchStrategy[Any]]) -> None:
    """`sampled_from(Unit)` reads `sampled_from(calc.Unit)` either way; its elements tell the shortened enum apart,
    however deep the sampled_from is nested, and two intact copies read the same."""
    intact = describe(nest(st.sampled_from(_unit())))
    assert describe(nest(st.sampled_from(_unit()))) == intact
    hidden = describe(nest(st.sampled_from(_unit(hide="KILO"))))
    assert "sampled_from(calc.Unit)" in hidden
    assert hidden != intact
    assert "<Unit.KILO: 1000>" in intact
    assert "<Unit.KILO: 1000>" not in hidden


def test_a_sample_whose_repr_shows_it_is_not_listed_again() -> None:
    """`just(x)` and a short `sampled_from([...])` show their elements in the repr already: no list is added."""
    for strategy in (st.just(3), st.none(), st.sampled_from([1, 2, 3]), st.one_of(st.just("a"), st.booleans())):
        assert " sampling " not in describe(strategy), describe(strategy)


def test_a_stand_in_member_with_the_same_repr_changes_the_description() -> None:
    """Red team: a fake `KILO` put in the members' map (same name, value and repr) is what `sampled_from` draws, while
    `Unit.KILO` still gives the real one to the code under test; the description marks it."""
    intact = _unit()
    swapped = _unit()
    fake = object.__new__(swapped)
    fake._name_, fake._value_ = "KILO", 1000
    swapped._member_map_["KILO"] = fake
    assert repr(fake) == repr(swapped.KILO) and fake is not swapped.KILO
    before, after = describe(st.sampled_from(intact)), describe(st.sampled_from(swapped))
    assert "(not the member its class names)" not in before
    assert after != before and "<Unit.KILO: 1000> (not the member its class names)" in after, after


def test_a_long_sample_is_bounded_and_a_late_change_still_shows() -> None:
    """Elements past the description's length bound change its digest; the description stays bounded."""
    base = describe(st.sampled_from(list(range(5000))))
    late = describe(st.sampled_from([*range(4999), -1]))
    assert base != late
    assert len(base) <= 3 * MAX_DESCRIPTION
    assert "0x" not in describe(st.sampled_from([object(), object()])).replace("0x…", "")


STRATEGIES: dict[str, Callable[[], st.SearchStrategy[Any]]] = {
    "enum": lambda: st.sampled_from(_unit()),
    "one_of": lambda: st.one_of(st.none(), st.just(3), st.sampled_from(_unit())),
    "one_of lists": lambda: st.one_of(st.lists(st.sampled_from(_unit())), st.integers()),
    "recursive": lambda: st.recursive(st.sampled_from([1, 2]), st.lists, max_leaves=5),
    "deferred in one_of": lambda: st.one_of(st.none(), st.deferred(lambda: st.sampled_from((1, 10)))),
    "flag": lambda: st.sampled_from(enum.Flag("Perm", {"R": 4, "W": 2}, module="calc")),
    "dictionaries": lambda: st.dictionaries(st.sampled_from("ab"), st.sampled_from(_unit())),
    # Hypothesis makes samplers of its own while drawing these (a `just` inside the domain's `from_regex`: review).
    "emails": st.emails,
    "domains": domains,
    "just and none": lambda: st.one_of(st.just("x"), st.none(), st.sampled_from(_unit())),
}


@pytest.mark.parametrize("make", STRATEGIES.values(), ids=list(STRATEGIES))
def test_a_run_does_not_change_the_description(make: Callable[[], st.SearchStrategy[Any]]) -> None:
    """The baseline describes without a run and the head after one: what drawing caches (one_of's sampler over its
    branches) is not described, so an unchanged strategy reads the same."""
    before = describe(make())
    drawn = make()

    @settings(max_examples=20, database=None)
    @given(drawn)
    def run(_: object) -> None:
        pass

    run()
    assert describe(drawn) == before
