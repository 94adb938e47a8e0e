"""`digest` hashes as hashlib does, on CPython's own modules first and hashlib's past its byte budget."""

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import digest


@given(st.binary(max_size=3000), st.sampled_from(["sha1", "sha256"]))
def test_hex_digest_is_hashlibs(data: bytes, name: str) -> None:
    """Every digest equals hashlib's, whichever module made it."""
    assert digest.hex_digest(name, data) == hashlib.new(name, data).hexdigest()
    assert digest.sha256_digest(data) == "sha256:" + hashlib.sha256(data).hexdigest()


# A fresh interpreter: hashes `sizes` bytes in turn and says after each whether hashlib is loaded.
PROBE = """
import hashlib as reference, json, sys
del sys.modules["hashlib"], sys.modules["_hashlib"]
from evidence_gate import digest
seen = []
for size in json.loads(sys.argv[1]):
    data = bytes(range(256)) * (size // 256) + bytes(size % 256)
    assert digest.hex_digest("sha1", data) == reference.sha1(data).hexdigest()
    seen.append("hashlib" in sys.modules)
print(json.dumps(seen))
"""


@pytest.mark.parametrize(
    ("sizes", "loaded"),
    [
        ([100, 4000, 60000], [False, False, False]),
        ([60000, 6000, 10], [False, True, True]),
        ([(1 << 16) + 1], [True]),
    ],
    ids=["under-the-budget", "over-it-in-sum", "one-long-input"],
)
def test_hashlib_loads_only_past_the_budget(sizes: list[int], loaded: list[bool]) -> None:
    """A process that hashes at most `BUILTIN_BYTES` in all never imports hashlib (OpenSSL); the input that would
    pass the budget, and everything after it, goes to hashlib."""
    code = PROBE.replace("json.loads(sys.argv[1])", repr(sizes))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == str(loaded).replace("F", "f").replace("T", "t")
