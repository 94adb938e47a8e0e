"""Fixture lane: tree ids of the fixture folder, and the digest records read from the baseline's blobs.

A digest record binds a canonical input (a JSON value, or the text of a file under the fixture folder) to the
sha256 of the output that the producer named by `fixtures.producer` must return; the sealed run checks them.
"""

from __future__ import annotations

import json
import posixpath

from evidence_gate.config import Config, schema_errors
from evidence_gate.digest import hex_digest, sha256_digest
from evidence_gate.errors import InputInvalid
from evidence_gate.model import LaneResult, Violation
from evidence_gate.records import dataclass, field
from evidence_gate.row_ids import CONFIG_INVALID
from evidence_gate.strict_parse import load_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from evidence_gate.git import Repo
    from evidence_gate.receipt.types import FixturesJson


def canonical_json(value: Any) -> bytes:
    """The canonical bytes of a JSON value: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def parse_records(data: bytes, fixtures_dir: str, path: str) -> list[dict[str, Any]]:
    """The records of a digests file; raises InputInvalid with the first problem."""
    raw = load_json(data)
    problems = schema_errors(raw, "digests.schema.json")
    if problems:
        raise InputInvalid(f"{path} is invalid: {problems[0]}")
    ids = [r["id"] for r in raw["records"]]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise InputInvalid(f"{path}: duplicate record id {duplicates[0]!r}")
    for record in raw["records"]:
        name = record.get("input_file")
        if name is not None and (".." in name.split("/") or name.startswith("/")):
            raise InputInvalid(f"{path}: input_file {name!r} must stay inside {fixtures_dir}/")
    records: list[dict[str, Any]] = raw["records"]
    return records


def resolve_inputs(repo: Repo, baseline: str, fixtures_dir: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Records with `input` filled from baseline blobs where they name an `input_file`."""
    names = {
        r["input_file"]: f"{baseline}:{posixpath.join(fixtures_dir, r['input_file'])}"
        for r in records
        if "input_file" in r
    }
    blobs = repo.read_blobs(names.values())
    out = []
    for record in records:
        value = record.get("input")
        if "input_file" in record:
            blob = blobs.get(names[record["input_file"]])
            value = None if blob is None else blob.decode("utf-8", "replace")
        out.append(
            {
                "id": record["id"],
                "input": value,
                "output_sha256": record["output_sha256"],
                "input_sha256": hex_digest("sha256", canonical_json(value)),
                "missing_input": "input_file" in record and value is None,
            }
        )
    return out


def _no_fixtures() -> FixturesJson:
    """The `fixtures` section of a lane that has none (a literal: the TypedDict is imported for type checking only)."""
    return {"tree": None, "digests": []}


@dataclass(frozen=True)
class FixtureLane(LaneResult):
    """The fixture lane's result: its section is the receipt's `fixtures`."""

    receipt: FixturesJson = field(default_factory=_no_fixtures)


def check_records(repo: Repo, baseline: str, head: str, config: Config) -> tuple[FixtureLane, list[dict[str, Any]]]:
    """The fixture lane: tree ids of baseline and head, and the baseline's digest records that the sealed run must
    check (none when the lane found a problem)."""
    trees = repo.object_ids([f"{baseline}:{config.fixtures.dir}", f"{head}:{config.fixtures.dir}"])
    receipt: FixturesJson = {
        "tree": trees[f"{baseline}:{config.fixtures.dir}"],
        "head_tree": trees[f"{head}:{config.fixtures.dir}"],
        "digests": [],
    }
    data = repo.read_blob(baseline, config.fixtures.digests)
    if data is None:
        return FixtureLane(receipt=receipt), []
    receipt["digests_sha256"] = sha256_digest(data)
    try:
        records = parse_records(data, config.fixtures.dir, config.fixtures.digests)
    except InputInvalid as exc:
        return FixtureLane((Violation(CONFIG_INVALID, exc.message, config.fixtures.digests, exc.line),), receipt), []
    if records and not config.fixtures.producer:
        return FixtureLane(
            (
                Violation(
                    CONFIG_INVALID,
                    f"{config.fixtures.digests} has digest records but `fixtures.producer` is not set; "
                    "name the function that produces outputs, e.g. `producer: mypkg.fixtures:produce`",
                    ".evidence-gate.yml",
                ),
            ),
            receipt,
        ), []
    receipt["digests"] = [{"id": r["id"], "output_sha256": r["output_sha256"], "status": "unchecked"} for r in records]
    return FixtureLane(receipt=receipt), records


def fixture_hash(receipt: Mapping[str, Any]) -> str | None:
    """What a seed ledger binds to: the baseline's fixture tree and digest records, or None when there are none."""
    tree = receipt.get("tree")
    if tree is None and "digests_sha256" not in receipt:
        return None
    text = f"tree={tree}\ndigests={receipt.get('digests_sha256')}\n"
    return sha256_digest(text.encode())
