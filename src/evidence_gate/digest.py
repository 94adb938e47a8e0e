"""The one `sha256:` content digest, and the sha1 and sha256 hex digests of the bytes the gate hashes.

The first 64 KiB a run hashes (on a small pull request: every git object it verifies, the ledgers, the receipt) go
through CPython's own `_sha1` and `_sha256` (`_sha2` from 3.12) modules, ≈ 0.2 ms to import; hashlib loads OpenSSL,
≈ 2.5 ms of every run's start-up, and hashes the rest. OpenSSL is ≈ 10 µs per KiB faster, so a run that hashes more
spends at most ≈ 0.7 ms on the slower start. The digests are the same.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _hashlib import HASH
    from collections.abc import Callable

PREFIX = "sha256:"
BUILTIN_BYTES = 1 << 16  # how many bytes a process hashes before it imports hashlib
_BUILTIN = {"sha1": ("_sha1",), "sha256": ("_sha2", "_sha256")}
_builtins: dict[str, Callable[..., HASH] | None] = {}
_hashed = [0]  # bytes hashed by the builtin modules so far


def _builtin(name: str) -> Callable[..., HASH] | None:
    """CPython's own constructor of `name`, or None where this interpreter has none (then hashlib's serves)."""
    if name not in _builtins:
        _builtins[name] = None
        for module in _BUILTIN[name]:
            try:
                _builtins[name] = getattr(__import__(module), name)
                break
            except ImportError:
                continue
    return _builtins[name]


def hex_digest(name: str, data: bytes) -> str:
    """The hex digest of `data` by `name`, `sha1` or `sha256` (`usedforsecurity=False`: ids and content checks)."""
    if _hashed[0] + len(data) <= BUILTIN_BYTES:
        builtin = _builtin(name)
        if builtin is not None:
            _hashed[0] += len(data)
            return builtin(data, usedforsecurity=False).hexdigest()
    import hashlib  # noqa: PLC0415 - past the first 64 KiB only (see the module's docstring)

    return hashlib.new(name, data, usedforsecurity=False).hexdigest()


def sha256_digest(data: bytes) -> str:
    """`sha256:` and the hex digest of `data`, the form every digest in a receipt takes."""
    return PREFIX + hex_digest("sha256", data)


def optional_sha256_digest(data: bytes | None) -> str | None:
    """`sha256_digest(data)`, or None for a file that is absent."""
    return None if data is None else sha256_digest(data)
