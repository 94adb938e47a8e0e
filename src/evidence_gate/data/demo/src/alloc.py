"""Split an integer total into near-equal integer parts."""


def allocate(total: int, parts: int) -> list[int]:
    """`parts` integers that sum to `total`, differing by at most one, larger shares first."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    shares = []
    remaining = total
    for left in range(parts, 0, -1):
        share = -(-remaining // left)  # ceiling division keeps larger shares first
        shares.append(share)
        remaining -= share
    return shares


def produce(record: dict[str, int]) -> list[int]:
    """The fixture producer: a digest record's input to the output whose sha256 is recorded."""
    return allocate(record["total"], record["parts"])
