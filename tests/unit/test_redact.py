"""Redaction of worker text: tokens, persisted checkout credentials and the gate's own secret values never pass."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import redact

TOKEN = "ghs_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
EXTRAHEADER = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()


@pytest.mark.parametrize(
    "leak",
    [
        f"token {TOKEN} in a message",
        "ghp_" + "x" * 36,
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz0123456789",
        f'[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic {EXTRAHEADER}\n',
        f"Authorization: Bearer {TOKEN[4:]}",
        f"skip: {EXTRAHEADER[:-4]}",
        f"https://x-access-token:{TOKEN[4:]}@github.com/o/r.git",
    ],
)
def test_known_secret_shapes_are_masked(leak: str) -> None:
    """What actions/checkout persists, and GitHub's token formats, leave no trace of the secret part."""
    out = redact.text(leak)
    assert redact.MASK in out
    assert TOKEN[4:20] not in out and EXTRAHEADER[20:36] not in out, out


def test_ordinary_text_is_left_alone() -> None:
    """A failure message without secrets comes through unchanged (the rule ids and numbers a user needs)."""
    message = "AssertionError: assert 2000 == 2001 (x=1000, seed 11); see https://example.org/docs#limits"
    assert redact.text(message) == message


@given(
    prefix=st.binary(max_size=7),
    suffix=st.binary(max_size=7),
    secret=st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789", min_size=12, max_size=40),
)
def test_an_env_secret_is_masked_raw_hex_and_base64_at_any_alignment(prefix: bytes, suffix: bytes, secret: str) -> None:
    """The gate's secret values are masked as themselves, as hex and inside base64 whatever surrounds them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("INPUT_GITHUB-TOKEN", secret)
        encoded = base64.b64encode(prefix + secret.encode() + suffix).decode()
        for leak in (secret, secret.encode().hex(), encoded):
            out = redact.text(f"value: {leak}")
            assert secret not in out and secret.encode().hex() not in out
            # At most a few base64 characters at each edge depend on the neighbours; the secret's bulk is gone.
            assert redact.MASK in out, (leak, out)


def test_short_or_ordinary_env_values_are_not_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    """INPUT_MODE=gate or a short value would blank ordinary words: only secret-looking names, 8+ characters."""
    monkeypatch.setenv("INPUT_MODE", "passed-everything")
    monkeypatch.setenv("API_TOKEN", "short")
    assert redact.text("passed-everything short") == "passed-everything short"


def test_text_is_bounded_and_says_how_much_was_cut() -> None:
    """A megabyte falsifying example becomes a bounded string that says it was cut."""
    out = redact.text("x" * 1_000_000)
    assert len(out) < redact.MAX_TEXT + 100
    assert out.endswith(f"[{1_000_000 - redact.MAX_TEXT} more characters cut]")


def test_events_are_redacted_everywhere_inside() -> None:
    """Nested lists and dicts (keys too) go through the same function; numbers and booleans are kept."""
    event = {"ev": "result", "examples": 3, "ok": True, "details": [{"reason": TOKEN, TOKEN: None}]}
    out = redact.value(event)
    assert TOKEN not in repr(out)
    assert (out["examples"], out["ok"], out["ev"]) == (3, True, "result")
