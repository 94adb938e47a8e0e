"""The one `sha256:` content digest: what the receipt, the artifacts and the fixture binding name bytes by."""

from __future__ import annotations

import hashlib

PREFIX = "sha256:"


def sha256_digest(data: bytes) -> str:
    """`sha256:` and the hex digest of `data`, the form every digest in a receipt takes."""
    return PREFIX + hashlib.sha256(data).hexdigest()


def optional_sha256_digest(data: bytes | None) -> str | None:
    """`sha256_digest(data)`, or None for a file that is absent."""
    return None if data is None else sha256_digest(data)
