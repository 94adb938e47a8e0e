"""Ordinary example tests of allocate(); these are not locked."""

from alloc import allocate


def test_three_ways() -> None:
    """Ten split three ways."""
    assert allocate(10, 3) == [4, 3, 3]


def test_many_parts() -> None:
    """More parts than units leaves zeros at the end."""
    assert allocate(2, 4) == [1, 1, 0, 0]
