"""The shared helpers: one `sha256:` digest and one text sanitiser, and no second copy of either in src/."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import visible
from evidence_gate.digest import optional_sha256_digest, sha256_digest
from evidence_gate.lanes import locked_paths
from evidence_gate.receipt.write import canonical_bytes, empty_receipt, scrub, sha256_of
from evidence_gate.report import check_run as check_report
from evidence_gate.report import gfm
from evidence_gate.report import registry as report

SRC = Path(__file__).resolve().parents[2] / "src" / "evidence_gate"
# Spelling a character as an escape (`\\x1b`, `\\u202e`) is the sanitiser's job alone.
SPELLING = re.compile(r"""\\\\[xu]\{""")


def _sources() -> dict[str, str]:
    return {p.name: p.read_text("utf-8") for p in sorted(SRC.glob("*.py"))}


def test_sha256_prefix_is_written_once() -> None:
    """No module but digest.py builds a `sha256:` string itself."""
    found = [name for name, text in _sources().items() if '"sha256:' in text or "'sha256:" in text]
    assert found == ["digest.py"], found


def test_escapes_are_spelled_once() -> None:
    """No module but visible.py formats a `\\x..`/`\\u....` escape, so every output spells a character alike."""
    found = [name for name, text in _sources().items() if SPELLING.search(text)]
    assert found == ["visible.py"], found


def test_digest_forms() -> None:
    """`sha256:` plus the hex digest; None stays None; the receipt's digest is that of its written bytes."""
    assert sha256_digest(b"abc") == "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert optional_sha256_digest(None) is None
    assert optional_sha256_digest(b"") == "sha256:" + hashlib.sha256(b"").hexdigest()
    receipt = empty_receipt()
    assert sha256_of(receipt) == sha256_digest(canonical_bytes(receipt))


HOSTILE = "a\nb\x1bc\u202ed\u200be\udcff\ud800f\tg\u3164"


def test_line_spells_every_hostile_character() -> None:
    """Newline, ESC, bidi override, zero-width space, a non-UTF-8 byte, a surrogate, tab and a filler, spelled."""
    assert visible.line(HOSTILE) == "a\\nb\\x1bc\\u202ed\\u200be\\xff\\ud800f\\tg\\u3164"
    assert visible.lines("Traceback\n  \x1b[31mred") == "Traceback\n  \\x1b[31mred"


def test_encodable_spells_only_what_utf8_cannot_hold() -> None:
    """The receipt keeps text verbatim: only surrogates are spelled, in the same form as `line`."""
    assert visible.encodable(HOSTILE) == "a\nb\x1bc\u202ed\u200be\\xff\\ud800f\tg\u3164"
    assert scrub({"k\udcfe": ["x\udcff"]}) == {"k\\xfe": ["x\\xff"]}


def test_every_reporter_spells_a_path_alike() -> None:
    """The path rules, the text report, the Markdown and the check-run annotation show one hostile path one way."""
    path = "fixtures/\udcff\u202e.json"
    spelled = "fixtures/\\xff\\u202e.json"
    assert locked_paths.display_path(path) == gfm.printable(path) == spelled
    receipt = empty_receipt()
    receipt["violations"] = [{"row": "evidence-path-edited", "path": path, "line": None, "message": "edited"}]
    assert report.render_text(receipt).splitlines()[:2] == ["error[evidence-path-edited]: edited", f" --> {spelled}"]
    (note,) = check_report.annotations_for(receipt)
    assert note.path == spelled


@given(st.text())
def test_line_leaves_nothing_hostile_and_clean_text_alone(text: str) -> None:
    """Whatever the input, `line` has no hostile character and encodes; text without one comes back unchanged."""
    shown = visible.line(text)
    assert not any(visible.is_hostile(c) for c in shown)
    shown.encode("utf-8")
    visible.encodable(text).encode("utf-8")
    if not any(visible.is_hostile(c) for c in text):
        assert shown == text
    if "\n" not in text:
        assert visible.lines(text) == shown
