"""Properties of allocate(); locked evidence: the gate fails any patch that touches this file."""

from alloc import allocate
from hypothesis import given
from hypothesis import strategies as st

totals = st.integers(min_value=-10_000, max_value=10_000)
counts = st.integers(min_value=1, max_value=50)


@given(totals, counts)
def test_sum_is_preserved(total: int, parts: int) -> None:
    """Nothing is lost or created by rounding."""
    assert sum(allocate(total, parts)) == total


@given(totals, counts)
def test_parts_differ_by_at_most_one(total: int, parts: int) -> None:
    """The split is as even as integers allow."""
    shares = allocate(total, parts)
    assert len(shares) == parts
    assert max(shares) - min(shares) <= 1


@given(totals, counts)
def test_larger_shares_come_first(total: int, parts: int) -> None:
    """The remainder goes to the first parts, so the result is non-increasing."""
    shares = allocate(total, parts)
    assert shares == sorted(shares, reverse=True)
