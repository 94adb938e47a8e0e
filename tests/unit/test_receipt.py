"""The receipt: schema validation, atomic writes and the aborted fallback for an invalid receipt."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evidence_gate.receipt import write as receipt


def test_empty_receipt_is_valid_and_aborted() -> None:
    """The 'nothing known yet' receipt passes its schema and says the gate did not finish."""
    out = receipt.empty_receipt()
    assert receipt.validate(out) == []
    assert out["state"] == "aborted"
    assert out["ok"] is False


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("state", "done"),
        ("ok", "yes"),
        ("schema", "evidence-gate/receipt/v0"),
        ("violations", [{"row": "pass", "message": "no path or line"}]),
    ],
)
def test_schema_rejects_bad_fields(key: str, value: object) -> None:
    """A wrong state, a non-boolean ok, another schema id or an incomplete violation is reported."""
    out = receipt.empty_receipt()
    out[key] = value
    problems = receipt.validate(out)
    assert problems
    assert any(p.startswith(key) for p in problems), problems


def test_missing_required_field_is_reported() -> None:
    """Dropping a required top-level field is a schema problem naming it."""
    out = receipt.empty_receipt()
    del out["decision"]
    assert any("decision" in p for p in receipt.validate(out))


def test_write_is_canonical_and_leaves_no_temp_files(tmp_path: Path) -> None:
    """A valid receipt is written byte-for-byte canonical, and only the receipt remains in the folder."""
    out = receipt.empty_receipt()
    out["state"] = "final"
    out["decision"] = {"row": "pass", "gate": "pass", "title": "Pass", "matched": ["pass"]}
    out["ok"] = True
    path = tmp_path / "sub" / "receipt.json"
    receipt.write_receipt(path, out)
    assert path.read_bytes() == receipt.canonical_bytes(out)
    assert json.loads(path.read_text("utf-8"))["ok"] is True
    assert sorted(p.name for p in path.parent.iterdir()) == ["receipt.json"]
    assert receipt.sha256_of(out).startswith("sha256:")


def test_overwrite_replaces_whole_file(tmp_path: Path) -> None:
    """Writing over a longer old receipt leaves exactly the new bytes (rename, not truncate-in-place)."""
    path = tmp_path / "receipt.json"
    path.write_bytes(b"x" * 100_000)
    receipt.write_receipt(path, receipt.empty_receipt())
    assert path.read_bytes() == receipt.canonical_bytes(receipt.empty_receipt())


def test_failed_rename_cleans_up(tmp_path: Path) -> None:
    """When the final rename fails (the target is a folder), the temporary file is removed and the error raised."""
    target = tmp_path / "receipt.json"
    target.mkdir()
    (target / "keep").write_text("x", "utf-8")
    with pytest.raises(OSError):
        receipt.write_atomic(target, b"{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["receipt.json"]


def test_invalid_receipt_is_written_aborted(tmp_path: Path) -> None:
    """A receipt that fails its schema is never dropped: it is written as aborted with the schema errors."""
    out = receipt.empty_receipt()
    out["state"] = "final"
    out["ok"] = True
    out["decision"] = {"row": "PASS!", "gate": "maybe", "title": "x", "matched": []}
    out["git"] = {"baseline": "a" * 40, "head": "b" * 40, "merge_base": None}
    path = tmp_path / "receipt.json"
    receipt.write_receipt(path, out)
    written = json.loads(path.read_text("utf-8"))
    assert written["state"] == "aborted"
    assert written["ok"] is False
    assert written["git"]["baseline"] == "a" * 40
    assert any("schema" in e and "decision" in e for e in written["errors"])
    assert receipt.validate(written) == []
