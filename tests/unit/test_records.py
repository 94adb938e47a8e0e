"""`evidence_gate.records` makes the classes `dataclasses` would: same fields, values, repr, equality and hashes."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from typing import Any

import pytest

from evidence_gate import records
from evidence_gate.lanes.freeze.ledger import FreezeLane
from evidence_gate.model import LaneResult, Violation


def _classes(dataclass: Callable[..., Any], field: Callable[..., Any]) -> dict[str, type]:
    """The same class bodies, made by `dataclass` and `field` of either module: every option `records` supports."""

    @dataclass(frozen=True)
    class Base:
        a: int
        b: str = "b"
        c: tuple[int, ...] = field(default_factory=tuple)
        d: dict[str, int] = field(default_factory=dict, compare=False, repr=False)

    @dataclass(frozen=True)
    class Child(Base):
        c: tuple[int, ...] = field(default=(1, 2))  # an overridden field keeps its place
        e: float = 0.5
        f: list[int] = field(init=False, repr=False, compare=False)

        def __post_init__(self) -> None:
            object.__setattr__(self, "f", [self.a])

    @dataclass
    class Plain:
        items: list[int] = field(default_factory=list)
        n: int = 0

    @dataclass(frozen=True)
    class Empty:
        pass

    return {"Base": Base, "Child": Child, "Plain": Plain, "Empty": Empty}


OURS, THEIRS = _classes(records.dataclass, records.field), _classes(dataclasses.dataclass, dataclasses.field)
CALLS: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("Base", (1,), {}),
    ("Base", (1, "x", (3,)), {"d": {"k": 1}}),
    ("Base", (), {"a": 2, "c": (4, 5)}),
    ("Child", (1,), {}),
    ("Child", (1, "y"), {"e": 2.5, "d": {"z": 0}}),
    ("Plain", (), {}),
    ("Plain", ([1, 2],), {"n": 3}),
    ("Empty", (), {}),
]


def _state(obj: Any) -> tuple[str, dict[str, Any], tuple[str, ...]]:
    return repr(obj).split("(", 1)[1], vars(obj), type(obj).__match_args__


@pytest.mark.parametrize(("name", "args", "kwargs"), CALLS)
def test_a_record_is_what_dataclasses_makes(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """Each call builds the same attributes (in the same order), repr, `__match_args__`, equality and hash."""
    ours, theirs = OURS[name](*args, **kwargs), THEIRS[name](*args, **kwargs)
    assert _state(ours) == _state(theirs)
    again = OURS[name](*args, **kwargs)
    assert (ours == again, ours != again) == (True, False)
    assert ours != theirs  # another class is never equal, as between two dataclasses
    if type(theirs).__hash__ is None:
        assert type(ours).__hash__ is None
    else:
        assert hash(ours) == hash(theirs) == hash(again)
    changes = {"a": 9} if "a" in vars(ours) else {}
    assert _state(records.replace(ours, **changes)) == _state(dataclasses.replace(theirs, **changes))


def test_only_compared_fields_count() -> None:
    """`compare=False` fields are left out of equality and the hash; the others are in."""
    base = OURS["Base"]
    assert base(1, d={"x": 1}) == base(1, d={"y": 2})
    assert hash(base(1, d={"x": 1})) == hash((1, "b", ()))
    assert base(1) != base(2)
    assert base(1) != "not a record"


def test_frozen_records_refuse_assignment() -> None:
    """Setting or deleting a field of a frozen record raises an AttributeError, as a frozen dataclass does."""
    child = OURS["Child"](1)
    with pytest.raises(AttributeError, match="cannot assign to field 'a'"):
        child.a = 2  # type: ignore[misc]
    with pytest.raises(AttributeError, match="cannot delete field 'b'"):
        del child.b  # type: ignore[misc]
    plain = OURS["Plain"]()
    plain.n = 4
    assert plain.n == 4


def test_replace_refuses_a_field_init_does_not_take() -> None:
    """`replace` with an `init=False` field is a ValueError, as `dataclasses.replace` raises."""
    with pytest.raises(ValueError, match="init=False"):
        records.replace(OURS["Child"](1), f=[2])


def test_a_record_defining_its_own_method_is_refused() -> None:
    """A class that writes its own `__eq__` (or `__init__`, `__repr__`, ...) is refused rather than half-made."""
    with pytest.raises(TypeError, match="__eq__"):

        @records.dataclass(frozen=True)
        class Odd:  # noqa: PLW1641 - the refused class, never hashed
            a: int

            def __eq__(self, other: object) -> bool:
                return True


def test_the_gates_values_are_records() -> None:
    """The values `check` imports are made here, not by `dataclasses`, and their inheritance keeps the base's
    fields first."""
    assert "dataclasses" not in vars(sys.modules[Violation.__module__])
    assert not hasattr(Violation, "__dataclass_fields__")
    assert FreezeLane.__match_args__ == LaneResult.__match_args__ == ("violations", "receipt", "facts")
    assert repr(Violation("r", "m")) == "Violation(row='r', message='m', path=None, line=None)"
