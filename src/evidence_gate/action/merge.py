"""`mode: merge`: one verdict over the receipts a `shard: K/N` matrix uploaded to this workflow run.

The job lists the run's artifacts through the results service, downloads every `<artifact-name>-K-of-N` under the
gate's own caps, proves each by what arrived (every member's CRC, strict JSON, schema, final state, the shard it
claims, the commits this run judges; a size the service listed is only recorded when it disagrees), and
merges them with the code `evidence-gate merge` uses. A shard that is missing, unreadable or from another run is a
failing row that names it: the merge never decides over fewer seeds than the plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evidence_gate import contexts
from evidence_gate.action import verdict as action_verdict
from evidence_gate.action.event import EventContext
from evidence_gate.errors import GateError
from evidence_gate.github import artifact_download
from evidence_gate.github.artifact_download import Listed, ReceiptUnusable, index_from_zip, receipt_from_zip
from evidence_gate.model import Violation
from evidence_gate.receipt import shard_merge
from evidence_gate.receipt.types import ReceiptJson
from evidence_gate.receipt.write import empty_receipt, finalise, sha256_of, write_receipt
from evidence_gate.report.registry import violations_of
from evidence_gate.row_ids import EVENT_MISMATCH, RUN_INTEGRITY, SEED_LEDGER_OPEN

if TYPE_CHECKING:
    from evidence_gate.action.inputs import Inputs

_SHARD = re.compile(r"-(?P<k>[1-9][0-9]{0,3})-of-(?P<n>[1-9][0-9]{0,3})")
RERUN = "re-run the failed or cancelled shard jobs (Re-run failed jobs), then this job"


def shard_artifact(name: str, shard: tuple[int, int]) -> str:
    """`<artifact-name>-K-of-N`, the name a shard job uploads its receipt under."""
    return f"{name}-{shard[0]}-of-{shard[1]}"


def expected_commits(event: EventContext, run_sha: str | None) -> tuple[str, str | None]:
    """(baseline, head) every shard of this run must have judged: the event's base, and the commit checked out."""
    if event.event_name == "merge_group":
        return event.base_sha, event.head_sha
    return event.base_sha, run_sha  # pull_request: the head is the test merge commit, GITHUB_SHA of this run


@dataclass
class Collected:
    """The shard receipts that held up, and a row for each that did not."""

    total: int | None = None
    receipts: dict[int, tuple[str, ReceiptJson]] = field(default_factory=dict)  # shard -> (artifact, its receipt)
    problems: list[Violation] = field(default_factory=list)
    notes: dict[int, str] = field(default_factory=dict)  # shard -> a size the service listed that was not downloaded
    # With contexts: shard -> (artifact, its index), and each judged context's receipt that shard's index records.
    indexes: dict[int, tuple[str, dict[str, Any]]] = field(default_factory=dict)
    contexts: dict[int, dict[str, ReceiptJson]] = field(default_factory=dict)

    def uploads(self) -> list[tuple[int, tuple[str, Mapping[str, Any]]]]:
        """What each shard uploaded that held up, in shard order: its receipt, or its index with contexts."""
        return sorted([*self.receipts.items(), *self.indexes.items()])


def _shards_of(listed: list[Listed], artifact_name: str) -> dict[tuple[int, int], Listed]:
    found: dict[tuple[int, int], Listed] = {}
    for item in listed:
        if not item.name.startswith(artifact_name):
            continue
        m = _SHARD.fullmatch(item.name[len(artifact_name) :])
        if m and int(m["k"]) <= int(m["n"]):
            found[(int(m["k"]), int(m["n"]))] = item
    return found


def _check_one(
    item: Listed, shard: tuple[int, int], data: bytes, expected: tuple[str, str | None], out: Collected
) -> None:
    label = f"shard {shard[0]}/{shard[1]} (artifact {item.name})"
    single: ReceiptJson | None = None
    try:
        found = index_from_zip(data)
        if found is None:
            single = receipt_from_zip(data)[0]
    except ReceiptUnusable as exc:
        out.problems.append(Violation(RUN_INTEGRITY, f"{label}: {exc}; {RERUN}"))
        return
    receipt: Mapping[str, Any] = found[0] if found is not None else single or {}
    claimed = receipt.get("shard") if found is not None else receipt.get("mode", {}).get("shard")
    if claimed != list(shard):
        out.problems.append(
            Violation(
                RUN_INTEGRITY,
                f"{label} holds the receipt of shard {claimed}, not "
                f"{shard[0]}/{shard[1]}; upload each shard under its own name",
            )
        )
        return
    git = receipt.get("git", {})
    baseline, head = expected
    if git.get("baseline") != baseline or (head is not None and git.get("head") != head):
        out.problems.append(
            Violation(
                EVENT_MISMATCH,
                f"{label} judged {str(git.get('baseline'))[:12]}..."
                f"{str(git.get('head'))[:12]}, not this run's {baseline[:12]}..."
                f"{(head or '?')[:12]}; merge only the shards of this workflow run",
            )
        )
        return
    if single is not None:
        out.receipts[shard[0]] = (item.name, single)
    if found is not None:
        out.indexes[shard[0]] = (item.name, found[0])
        out.contexts[shard[0]] = dict(found[1])
    note = artifact_download.size_note(item, data)
    if note:
        out.notes[shard[0]] = note


def collect(
    listed: list[Listed], artifact_name: str, fetch: Callable[[Listed], bytes], expected: tuple[str, str | None]
) -> Collected:
    """Download and check every shard receipt; name each shard that is missing or does not hold up."""
    out = Collected()
    shards = _shards_of(listed, artifact_name)
    sizes = sorted({n for _, n in shards})
    if not shards:
        out.problems.append(
            Violation(
                RUN_INTEGRITY,
                f"no shard receipt (artifact {artifact_name}-K-of-N) in this workflow run: no property "
                "was judged; give the matrix job `shard: ${{ matrix.shard }}/N`, keep `upload-artifact: true`, and "
                "make this job `needs:` it",
            )
        )
        return out
    if len(sizes) > 1:
        out.problems.append(
            Violation(
                RUN_INTEGRITY,
                f"shard receipts of matrices of different sizes ({sizes}): every shard job must use the same N",
            )
        )
    out.total = sizes[-1]
    for k in range(1, out.total + 1):
        item = shards.get((k, out.total))
        if item is None:
            out.problems.append(
                Violation(
                    RUN_INTEGRITY,
                    f"shard {k}/{out.total} uploaded no receipt (artifact "
                    f"{shard_artifact(artifact_name, (k, out.total))} is missing): the job "
                    f"failed, was cancelled or never ran; {RERUN}",
                )
            )
            continue
        try:
            data = fetch(item)
        except Exception as exc:  # noqa: BLE001 - ArtifactError or a transport failure: this shard is not evidence
            out.problems.append(
                Violation(
                    RUN_INTEGRITY,
                    f"shard {k}/{out.total} (artifact {item.name}) could not be downloaded: {exc}; {RERUN}",
                )
            )
            continue
        _check_one(item, (k, out.total), data, expected, out)
    return out


def _failing(collected: Collected, expected: tuple[str, str | None], extra: list[Violation]) -> ReceiptJson:
    """A final, failing receipt for a merge that could not be made; the usable shards' findings are kept."""
    usable = [r for _, (_, r) in sorted(collected.receipts.items())]
    out = usable[0].copy() if usable else empty_receipt()
    if not usable:
        out["git"] = {"baseline": expected[0], "head": expected[1], "merge_base": None}
    violations = list(collected.problems) + extra
    seen = {(v.row, v.message) for v in violations}
    for receipt in usable:
        for v in violations_of(receipt):
            if (v.row, v.message) not in seen and v.row != SEED_LEDGER_OPEN:
                seen.add((v.row, v.message))
                violations.append(v)
    out["mode"] = {**out.get("mode", {}), "shard": None}
    # Shard 1's ledgers alone would read as a complete run; a failed merge shows none.
    out["properties"] = {
        **out["properties"],
        "ledgers": [],
        "shard": None,
        "counts": {"open": 0, "closed_failures": 0, "budget_passes": 0},
        "skipped": "not merged: a shard receipt is missing or does not hold up (see the findings)",
    }
    out["merged_from"] = [
        {"receipt": name, "shard": r["mode"]["shard"], "sha256": sha256_of(r)}
        for _, (name, r) in sorted(collected.receipts.items())
    ]
    finalise(out, violations)
    return out


def _disagreeing(collected: Collected) -> list[Violation]:
    """A row naming each shard whose commits, configuration, property list or seed plan differ from the lowest
    shard's (a forged or foreign receipt), so the failure says which artifact to look at."""
    shards = sorted(collected.receipts.items())
    if not shards:
        return []
    first, (_, reference) = shards[0]
    out = []
    for k, (name, receipt) in shards[1:]:
        fields = [
            what
            for what, a, b in zip(
                shard_merge.IDENTITY, shard_merge.identity(reference), shard_merge.identity(receipt), strict=True
            )
            if a != b
        ]
        if fields:
            out.append(
                Violation(
                    RUN_INTEGRITY,
                    f"shard {k}/{collected.total} (artifact {name}) judged another {' and '.join(fields)} than shard "
                    f"{first}/{collected.total}: every shard of one run judges the same ones; {RERUN}",
                )
            )
    return out


def merged_receipt(collected: Collected, expected: tuple[str, str | None]) -> ReceiptJson:
    """The merged receipt when every shard held up, else a failing one naming what did not."""
    collected.problems.extend(_disagreeing(collected))
    if collected.problems:
        return _failing(collected, expected, [])
    ordered = sorted(collected.receipts.items())
    try:
        merged = shard_merge.merge([r for _, (_, r) in ordered], [name for _, (name, _) in ordered])
    except GateError as exc:
        return _failing(collected, expected, [Violation(RUN_INTEGRITY, exc.describe())])
    except (KeyError, TypeError, ValueError, IndexError) as exc:  # schema-valid yet unmergeable: fail closed
        return _failing(
            collected,
            expected,
            [
                Violation(
                    RUN_INTEGRITY,
                    f"the shard receipts could not be merged ({type(exc).__name__}: {exc}); re-run the matrix",
                )
            ],
        )
    for entry in merged["merged_from"]:
        note = collected.notes.get(entry["shard"][0])
        if note:
            entry["note"] = note
    return merged


def run(reporter: action_verdict.Reporter, inputs: Inputs, event: EventContext, now: Callable[[], datetime]) -> int:
    """The merge job: list, download, verify, merge, then post like `mode: gate` does; returns the exit code."""
    env = reporter.env
    expected = expected_commits(event, env.get("GITHUB_SHA") or None)
    try:
        client, ids = artifact_download.client_for(env, sleep=reporter.sleep)
        listed = artifact_download.list_run_artifacts(client, ids)
    except Exception as exc:  # noqa: BLE001 - no service, refused, or malformed answers: nothing can be merged
        collected = Collected(
            problems=[
                Violation(
                    RUN_INTEGRITY,
                    f"cannot list this run's artifacts through the results service ({exc}): the shard "
                    "receipts cannot be merged; run `mode: merge` as a step of a job in the same workflow run as the "
                    "matrix",
                )
            ]
        )
    else:
        collected = collect(
            listed, inputs.artifact_name, lambda item: artifact_download.download(client, item), expected
        )
    receipt_path = Path(inputs.receipt_path)
    if not receipt_path.is_absolute():
        receipt_path = Path(env.get("GITHUB_WORKSPACE") or ".") / receipt_path
    if collected.contexts:
        return _post_contexts(reporter, inputs, event, now, collected, expected, receipt_path)
    receipt = merged_receipt(collected, expected)
    target = action_verdict.Target(
        repository=env.get("GITHUB_REPOSITORY") or event.repository or "",
        check_sha=event.check_sha,
        check_name=inputs.check_name,
        token=inputs.token,
        receipt_path=receipt_path,
        receipt_path_input=inputs.receipt_path,
        upload_name=inputs.artifact_name if inputs.upload else None,
        delta_artifact=inputs.artifact_name,  # the base branch's last receipt, as `mode: gate` compares against
        base_branch=env.get("GITHUB_BASE_REF") or "",
    )
    reporter.notes.append(
        f"merged {len(collected.receipts)} of {collected.total or '?'} shard receipts ({inputs.artifact_name}-K-of-N)"
    )
    reporter.notes.extend(note for _, note in sorted(collected.notes.items()))
    return action_verdict.post(reporter, target, receipt, now)


def merged_contexts(collected: Collected, expected: tuple[str, str | None], index_path: Path) -> contexts.Outcome:
    """With contexts: each judged context's shard receipts merged as one repository's are (a missing or unusable
    shard fails every context), written beside the merged index at `index_path`."""
    shards = collected.uploads()
    problems = list(collected.problems)
    indexes = [(k, index) for k, (_name, index) in shards if k in collected.contexts]
    odd = [k for k, _ in shards if k not in collected.contexts]
    identities = {_index_identity(index) for _, index in indexes}
    if odd or len(identities) > 1:
        problems.append(
            Violation(
                RUN_INTEGRITY,
                f"the shards of this run disagree on the contexts they judged (shard {(odd or [indexes[-1][0]])[0]}"
                f"/{collected.total} differs): every shard of one run judges the same commits and configuration; "
                f"{RERUN}",
            )
        )
    first = indexes[0][1]
    judged: list[contexts.Judged] = []
    for row in first["contexts"]:
        if not row["judged"]:
            continue
        name = str(row["context"])
        per = Collected(
            total=collected.total,
            receipts={
                k: (f"{collected.indexes[k][0]}/{row['receipt']}", collected.contexts[k][name])
                for k, _ in indexes
                if name in collected.contexts[k]
            },
            problems=list(problems),
            notes=collected.notes,
        )
        merged = merged_receipt(per, expected)
        path = contexts.receipt_path_for(index_path, name)
        write_receipt(path, merged)
        judged.append(contexts.Judged(name, path, merged, int(merged["decision"]["exit_code"])))
    rows = [(str(r["context"]), str(r["root"]), str(r["why"])) for r in first["contexts"]]
    index = contexts.build_index(first["git"], first["config"]["blob"], rows, judged)
    if problems and not judged:  # nothing judged, yet a shard did not hold up: never a pass
        index = {**index, "ok": False, "exit_code": 10}
    contexts.write_index(index_path, index)
    return contexts.Outcome(index, index["exit_code"], judged)


def _index_identity(index: Mapping[str, Any]) -> tuple[Any, ...]:
    judged = tuple((r["context"], r["root"], r["judged"]) for r in index["contexts"])
    return (index["git"]["baseline"], index["git"]["head"], index["config"]["blob"], judged)


def _post_contexts(
    reporter: action_verdict.Reporter,
    inputs: Inputs,
    event: EventContext,
    now: Callable[[], datetime],
    collected: Collected,
    expected: tuple[str, str | None],
    index_path: Path,
) -> int:
    from evidence_gate.action import contexts as action_contexts  # noqa: PLC0415

    outcome = merged_contexts(collected, expected, index_path)
    reporter.notes.append(
        f"merged {len(collected.uploads())} of {collected.total or '?'} shard receipts ({inputs.artifact_name}-K-of-N)"
        f" for {len(outcome.judged)} contexts"
    )
    where = action_contexts.Where(
        check_name=inputs.check_name,
        token=inputs.token,
        max_annotations=inputs.max_annotations,
        upload_name=inputs.artifact_name if inputs.upload else None,
        job_summary=inputs.job_summary,
        index_file=index_path,
        index_shown=inputs.receipt_path,
        check_sha=event.check_sha,
    )
    repository = reporter.env.get("GITHUB_REPOSITORY") or event.repository or ""
    return action_contexts.post_merged(reporter, where, outcome, now, repository)
