"""Secrets out of, and a size bound on, the text a sealed worker hands back (skip reasons, failure messages,
falsifying examples, log tails): applied once, where that text enters the trusted process.

Confinement keeps secrets out of a worker's reach; this is the second wall, for what slipped through anyway. It
removes GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), `Authorization:` header values (what
actions/checkout persists as `http.https://github.com/.extraheader`), base64 of `x-access-token:…`, credentials in
URLs, and the exact values of the gate's secret-looking environment variables (also base64-encoded at each of the
three byte alignments, and hex-encoded). Standard library only.
"""

from __future__ import annotations

import base64
import os
import re
from functools import cache
from typing import Any

MASK = "[redacted]"
MAX_TEXT = 4000
OVERLAP = 512  # longer than any secret this masks: read this much before a cut, mask, then cut
MIN_SECRET = 8  # shorter values (`true`, `gate`) would blank ordinary words
SECRET_NAME = re.compile(r"TOKEN|SECRET|PASSW|CREDENTIAL|PRIVATE|_KEY$|AUTH", re.IGNORECASE)
PATTERNS = (
    re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{16,}|github_pat_[A-Za-z0-9_]{20,})"),
    re.compile(r"(?i)(authorization\s*[:=]\s*(?:basic|bearer|token)?\s*)[^\s\"',;]+"),
    # base64 of "x-access-token:" is this prefix at every length of what follows.
    re.compile(r"eC1hY2Nlc3MtdG9rZW46[A-Za-z0-9+/=]*"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/@]+(?=@)"),
)


def _environment_secrets() -> tuple[str, ...]:
    """The gate's secret-looking values (as the environment is now) and their encodings, longest first."""
    return _forms(frozenset(v for k, v in os.environ.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET))


@cache
def _forms(values: frozenset[str]) -> tuple[str, ...]:
    """Every form of `values` to mask, longest first (so no part of a longer one is left behind)."""
    return tuple(sorted({form for v in values for form in _encodings(v)}, key=len, reverse=True))


def _encodings(value: str) -> set[str]:
    raw = value.encode()
    forms = {value, raw.hex()}
    for shift in range(3):
        # Whatever precedes the value, its base64 contains this core once the alignment matches.
        encoded = base64.b64encode(b"\0" * shift + raw).decode()
        skip = (shift * 4 + 2) // 3
        keep = (len(raw) + shift) // 3 * 4
        core = encoded[skip:keep]
        if len(core) >= MIN_SECRET:
            forms.add(core)
    return forms


def text(value: str, limit: int = MAX_TEXT, secrets: tuple[str, ...] | None = None) -> str:
    """`value` with secrets masked, cut to `limit` characters (saying how much was cut). `secrets`: the forms of the
    environment's secret values, when the caller read them already (`_environment_secrets`)."""
    for secret in _environment_secrets() if secrets is None else secrets:
        value = value.replace(secret, MASK)
    for pattern in PATTERNS:
        value = pattern.sub(lambda m: (m.group(1) if m.re.groups else "") + MASK, value)
    if len(value) > limit:
        value = f"{value[:limit]}… [{len(value) - limit} more characters cut]"
    return value


def value(data: Any, limit: int = MAX_TEXT) -> Any:
    """Every string inside a JSON value (keys too) through `text`; the environment is read once per call, not once
    per string (decoding `os.environ` costs more than masking a short string)."""
    return _value(data, limit, _environment_secrets())


def _value(data: Any, limit: int, secrets: tuple[str, ...]) -> Any:
    if isinstance(data, str):
        return text(data, limit, secrets)
    if isinstance(data, list):
        return [_value(item, limit, secrets) for item in data]
    if isinstance(data, dict):
        return {text(str(k), limit, secrets): _value(v, limit, secrets) for k, v in data.items()}
    return data
