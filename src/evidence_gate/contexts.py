"""Bounded contexts: each context a pull request touches is judged on its own by `gate.evaluate`, into a receipt
of its own (`receipt-<name>.json` beside the index), and `receipt.json` becomes the index that lists them.

A context is judged when the patch changes a path it owns (under its root, or matched by its `paths:` globs) or
a path it locks (its locked lane finds a touch: the configuration, `.github/workflows/**`, a shared `conftest.py`,
the top-level `locked:` globs, ...); a patch that changes a path no context owns judges every context. Every other
context is listed in the index as not judged, with why, and runs nothing. Without `contexts:` this module hands the run to `gate.evaluate` unchanged.
"""

from __future__ import annotations

import json

from evidence_gate import __version__, gate
from evidence_gate.config import CONFIG_PATH, BoundedContext, schema_errors
from evidence_gate.digest import sha256_digest
from evidence_gate.errors import EXIT_INTERNAL, GateError, InputInvalid
from evidence_gate.git import DiffEntry, Repo
from evidence_gate.lanes import locked_evidence
from evidence_gate.receipt.write import MAX_RECEIPT, canonical_bytes, empty_receipt, scrub, write_atomic, write_receipt
from evidence_gate.records import dataclass, field, replace
from evidence_gate.row_ids import PASS
from evidence_gate.strict_parse import load_json

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path
    from typing import Any

    from evidence_gate.receipt.types import ReceiptJson

INDEX_SCHEMA_ID = "evidence-gate/receipt-index/v1"
# Worst first: the gate's own failure, a usage error, a precondition, a failing decision, a pass.
_SEVERITY = {EXIT_INTERNAL: 4, 2: 3, 11: 2, 10: 1, 0: 0}


@dataclass(frozen=True)
class Judged:
    """One judged context: its name, where its receipt is, the receipt and its exit code."""

    name: str
    path: Path
    receipt: ReceiptJson
    code: int


@dataclass
class Outcome:
    """What `evaluate` wrote: `receipt.json` (the index with contexts, else the one receipt) and each context's."""

    receipt: Mapping[str, Any]  # as written: the index (`is_index`) with contexts, else the one receipt
    code: int
    judged: list[Judged] = field(default_factory=list)


@dataclass(frozen=True)
class _Plan:
    commits: gate.Commits
    config_blob: str | None
    contexts: list[tuple[BoundedContext, str, bool]]  # (context, why, judged)


def receipt_path_for(index: Path, name: str) -> Path:
    """A context's receipt beside the index: `receipt.json` → `receipt-<name>.json` (`x.json` → `x-<name>.json`)."""
    stem, dot, ext = index.name.rpartition(".")
    return index.with_name(f"{stem}-{name}.{ext}" if dot and stem else f"{index.name}-{name}")


def worst(codes: list[int]) -> int:
    """The exit code of the worst outcome (internal error > usage > precondition > fail > pass)."""
    return max(codes, key=lambda c: _SEVERITY.get(c, 4), default=0)


def evaluate(opts: gate.CheckOptions, receipt_path: Path, *, shards: bool = False) -> Outcome:
    """Judge the pull request: one receipt without `contexts:`, else one per touched context plus the index.

    With `opts.shard`, contexts are judged shard by shard only when `shards` says the caller can merge them
    (`evidence-gate merge` takes the shards' index files); otherwise the gate refuses, `config-invalid` with the fix.
    """
    gate.first_write(receipt_path)  # a stale receipt.json never outlives a killed run
    # One repository for the plan and every judgement: what the plan asked git (the root, the commits, the
    # configuration's listing) is not asked again, and a ref that moves meanwhile cannot split the run.
    repo = Repo(opts.repo, pin_revisions=True)
    # The plan's object reads and the first judgement's static lanes share one kept-open `cat-file` (`gate.check`
    # ends it before the property lane).
    repo.start_batch_session()
    try:
        return _judge(opts, receipt_path, shards, repo)
    finally:
        repo.end_batch_session()


def _judge(opts: gate.CheckOptions, receipt_path: Path, shards: bool, repo: Repo) -> Outcome:
    """`evaluate` on the one repository of the run."""
    try:
        plan = _plan(opts, shards, repo)
    except GateError:  # history, event or configuration unusable: the one receipt says so, as without contexts
        plan = None
    except Exception as exc:  # noqa: BLE001 - the gate's own failure, recorded like gate.evaluate records its own
        import traceback  # noqa: PLC0415 - only a crash records one (with textwrap, ≈ 1.4 ms to import)

        out = empty_receipt()
        out["errors"] += [gate.describe_crash(exc), traceback.format_exc(limit=8)]
        write_receipt(receipt_path, out)
        return Outcome(out, EXIT_INTERNAL)
    if plan is None:
        out, code = gate.evaluate(opts, receipt_path, repo, first_written=True)
        return Outcome(out, code)
    judged: list[Judged] = []
    for ctx, _why, run in plan.contexts:
        if run:
            path = receipt_path_for(receipt_path, ctx.name)
            workdir = opts.workdir / ctx.name if opts.workdir is not None else None
            out, code = gate.evaluate(replace(opts, context=ctx.name, workdir=workdir), path, repo)
            judged.append(Judged(ctx.name, path, out, code))
    git = {"baseline": plan.commits.baseline, "head": plan.commits.head, "merge_base": plan.commits.merge_base}
    rows = [(ctx.name, ctx.root, why) for ctx, why, _run in plan.contexts]
    index = build_index(git, plan.config_blob, rows, judged, opts.shard)
    write_index(receipt_path, index)
    return Outcome(index, index["exit_code"], judged)


def _plan(opts: gate.CheckOptions, shards: bool, repo: Repo) -> _Plan | None:
    """Which contexts the patch touches, and why each is judged or not; None without contexts (or with a shard
    the caller cannot merge per context, which the gate then refuses itself with the fix)."""
    if opts.event is None and opts.base is not None:
        repo.ask_revisions([opts.head, opts.base], merge_base_of=(opts.base, opts.head))
    else:
        repo.ask_revisions([opts.head])
    repo.toplevel()
    commits = gate.resolve_commits(repo, opts.head, opts.base, opts.event)
    config, blob = gate.read_config(repo, commits.baseline)
    if not config.contexts or (opts.shard is not None and not shards):
        return None
    diff = repo.diff_tree(commits.baseline, commits.head)
    outside = any(not any(c.owns(e.path) for c in config.contexts) for e in diff)
    touched = [(ctx, *_touched(repo, commits, ctx, diff, claims=outside)) for ctx in config.contexts]
    claimed = {p for _ctx, _why, _run, paths in touched for p in paths}
    unowned = [e.path for e in diff if e.path not in claimed and not any(c.owns(e.path) for c in config.contexts)]
    planned = [(ctx, why, run) for ctx, why, run, _paths in touched]
    if unowned:
        # A path no context owns (a root `setup.cfg`, a script an install command runs) could change what any of
        # them runs: nothing escapes judgement by living between contexts, so every context is judged.
        why = f"the pull request changes {unowned[0]}, which no context owns, so every context is judged"
        planned = [(ctx, reason if run else why, True) for ctx, reason, run in planned]
    return _Plan(commits, blob, planned)


def _touched(
    repo: Repo, commits: gate.Commits, ctx: BoundedContext, diff: list[DiffEntry], *, claims: bool
) -> tuple[str, bool, set[str]]:
    """Why `ctx` is judged (True) or not (False), and the changed paths its locked evidence claims (looked for only
    when the patch changes a path no context owns, or when `ctx` owns none of the changes)."""
    owned = [e.path for e in diff if ctx.owns(e.path)]
    if owned and not claims:
        more = f" and {len(owned) - 1} more of its files" if len(owned) > 1 else ""
        return f"the pull request changes {owned[0]}{more}", True, set()
    try:
        _config, _blob, specs, _list = gate.read_trusted(repo, commits.baseline, ctx.name)
    except GateError as exc:  # judged: the context's own receipt carries the finding and the fix
        return f"its configuration is unusable: {exc.message}", True, set()
    locked = locked_evidence.check(repo, commits.baseline, commits.head, ctx.config, specs, diff)
    claimed = {v.path for v in locked.violations if v.path}
    if owned:
        more = f" and {len(owned) - 1} more of its files" if len(owned) > 1 else ""
        return f"the pull request changes {owned[0]}{more}", True, claimed
    if locked.violations:
        first = locked.violations[0].path or "its locked evidence"
        return f"the pull request changes {first}, which this context locks", True, claimed
    return f"the pull request changes nothing under {ctx.root}/, in its `paths:` or that it locks", False, claimed


def build_index(
    git: dict[str, Any],
    config_blob: str | None,
    contexts: list[tuple[str, str, str]],
    judged: list[Judged],
    shard: tuple[int, int] | list[int] | None = None,
) -> dict[str, Any]:
    """The index: every declared context (name, root, why), judged (with its receipt's file, digest and row) or
    not (with why)."""
    by_name = {j.name: j for j in judged}
    rows: list[dict[str, Any]] = []
    for name, root, why in contexts:
        row: dict[str, Any] = {"context": name, "root": root, "judged": name in by_name, "why": why}
        done = by_name.get(name)
        if done is None:
            row |= {"receipt": None, "sha256": None, "row": None, "ok": None, "exit_code": None}
        else:
            decision = done.receipt.get("decision") or {}
            final = done.receipt.get("state") == "final"
            row |= {
                "receipt": done.path.name,
                "sha256": sha256_digest(done.path.read_bytes()),  # the bytes on disk
                "row": str(decision.get("row")) if final else "aborted",
                "ok": done.receipt.get("ok") is True,
                "exit_code": done.code,
            }
        rows.append(row)
    code = worst([j.code for j in judged])
    return {
        "schema": INDEX_SCHEMA_ID,
        "version": __version__,
        "state": "final",
        "ok": code == 0,
        "exit_code": code,
        "shard": list(shard) if shard else None,
        "git": dict(git),
        "config": {"path": CONFIG_PATH, "blob": config_blob},
        "contexts": rows,
    }


def write_index(path: Path, index: dict[str, Any]) -> None:
    """Validate the index against its schema and write it; an index that fails it is written as a failing one."""
    index = scrub(index)
    problems = schema_errors(index, "receipt-index.schema.json")
    if problems:
        index = {
            **index,
            "ok": False,
            "state": "aborted",
            "exit_code": EXIT_INTERNAL,
            "contexts": [],
            "errors": [f"internal: the index failed its schema: {p}" for p in problems[:20]],
        }
    write_atomic(path, canonical_bytes(index))


def is_index(value: Any) -> bool:
    """Whether a parsed `receipt.json` is a contexts index rather than one receipt."""
    return isinstance(value, dict) and value.get("schema") == INDEX_SCHEMA_ID


def sarif_log(judged: list[Judged], docs: str | None = None) -> str:
    """One SARIF log whose runs are each judged context's, each its own code-scanning category
    (`automationDetails.id` = `evidence-gate/<name>/`); no run at all when no context was judged."""
    from evidence_gate.report import sarif  # noqa: PLC0415 - only `--format sarif` and the action need it

    merged = sarif.sarif_log(empty_receipt(), docs)
    merged["runs"] = []
    for done in judged:
        for run in sarif.sarif_log(done.receipt, docs).get("runs", []):
            run["automationDetails"] = {"id": f"evidence-gate/{done.name}/"}
            merged["runs"].append(run)
    return json.dumps(merged, indent=2, ensure_ascii=False) + "\n"


def worst_row(index: Mapping[str, Any]) -> str:
    """The index's row: the worst judged context's (the first of equals), `pass` when every judged one passed."""
    judged = [r for r in index.get("contexts", []) if r.get("judged")]
    failing = [r for r in judged if r.get("ok") is not True]
    if not failing:
        return PASS
    return str(max(failing, key=lambda r: _SEVERITY.get(r.get("exit_code") or 1, 4))["row"])


def title(index: Mapping[str, Any]) -> str:
    """One line for the index: how many contexts fail, pass and were not judged (at most 255 characters)."""
    rows = index.get("contexts", [])
    failing = [f"{r['context']} ({r['row']})" for r in rows if r.get("judged") and r.get("ok") is not True]
    passing = [r["context"] for r in rows if r.get("judged") and r.get("ok") is True]
    skipped = [r["context"] for r in rows if not r.get("judged")]
    parts = [f"{len(failing)} failing: {', '.join(failing)}"] if failing else []
    parts += [f"{len(passing)} passing"] if passing else []
    parts += [f"{len(skipped)} not judged"] if skipped else []
    lead = "Fail" if failing or index.get("ok") is not True else "Pass"
    line = f"{lead}: " + ("; ".join(parts) if parts else "no context declared")
    return line if len(line) <= 255 else line[:254] + "…"


def load_index(path: Path) -> dict[str, Any] | None:
    """The index at `path` (bounded, strictly parsed, schema-checked), or None when the file is one receipt."""
    value = _load_json(path, "the index of a --shard run")
    if not is_index(value):
        return None
    index: dict[str, Any] = value
    problems = schema_errors(index, "receipt-index.schema.json")
    if problems or index.get("state") != "final":
        raise GateError(
            f"{path} is not a final index: {problems[0] if problems else 'its run did not finish'}",
            fix="pass the receipt.json each --shard run wrote, unedited",
            usage=True,
        )
    return index


def _load_json(path: Path, what: str) -> Any:
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_RECEIPT + 1)
        if len(data) > MAX_RECEIPT:
            raise InputInvalid(f"over the {MAX_RECEIPT}-byte cap")
        return load_json(data)
    except (OSError, InputInvalid) as exc:
        raise GateError(f"cannot read {path}: {exc}", fix=f"pass {what}", usage=True) from exc


def merge_indexes(paths: list[Path], indexes: list[dict[str, Any]], out: Path) -> Outcome:
    """`evidence-gate merge` over the shards' index files: each judged context's shard receipts (found beside each
    index, each matching the digest its index records) merged into `receipt-<name>.json` beside `out`, and the
    merged index at `out`. Every index must judge the same commits, configuration and contexts."""
    from evidence_gate.receipt import shard_merge  # noqa: PLC0415 - merge only

    def identity(index: dict[str, Any]) -> tuple[Any, ...]:
        judged = tuple((r["context"], r["root"], r["judged"]) for r in index["contexts"])
        return (index["git"]["baseline"], index["git"]["head"], index["config"]["blob"], judged)

    if len({identity(i) for i in indexes}) != 1 or any(i.get("shard") is None for i in indexes):
        raise GateError(
            "the index files are not the shards of one run (they judge different commits, configurations or "
            "contexts, or one is not a --shard run's)",
            fix="merge the receipt.json of each `check --shard K/N` run of one matrix",
            usage=True,
        )
    first = indexes[0]
    write_receipt(out, empty_receipt())
    judged: list[Judged] = []
    for row in first["contexts"]:
        if not row["judged"]:
            continue
        name = row["context"]
        parts, names = [], []
        for path, index in zip(paths, indexes, strict=True):
            entry = next(r for r in index["contexts"] if r["context"] == name)
            file = path.parent / str(entry["receipt"])
            data = file.read_bytes() if file.is_file() else b""
            if sha256_digest(data) != entry["sha256"]:
                raise GateError(
                    f"{file} is not the receipt of context {name} that {path} records (missing, or its sha256 differs)",
                    fix="keep each shard's receipt-<name>.json files beside its receipt.json, unedited",
                    usage=True,
                )
            receipt = shard_merge.load(file)
            judges = receipt.get("context")
            if (judges["name"] if judges else None) != name:
                raise GateError(f"{file} judges another context than {name}", fix="re-run the matrix", usage=True)
            parts.append(receipt)
            names.append(str(file))
        merged = shard_merge.merge(parts, names)
        target = receipt_path_for(out, name)
        write_receipt(target, merged)
        judged.append(Judged(name, target, merged, int(merged["decision"]["exit_code"])))
    rows = [(r["context"], r["root"], r["why"]) for r in first["contexts"]]
    index = build_index(first["git"], first["config"]["blob"], rows, judged)
    write_index(out, index)
    return Outcome(index, index["exit_code"], judged)


def render_outcome(outcome: Outcome, fmt: str, context: Any = None) -> str:
    """stdout with contexts: the index as JSON, one SARIF log with a run per judged context, or each judged
    context's text report under its name and a line per context not judged."""
    from evidence_gate import visible  # noqa: PLC0415
    from evidence_gate.report.registry import Context, render  # noqa: PLC0415 - reporters load on demand

    ctx = context if context is not None else Context()
    if fmt == "json":
        return render("json", outcome.receipt, ctx)
    if fmt == "sarif":
        return sarif_log(outcome.judged, ctx.docs)
    parts = []
    for judged in outcome.judged:
        parts.append(visible.line(f"== context {judged.name}: {judged.path} ==") + "\n")
        if judged.receipt.get("state") == "final":
            parts.append(render("text", judged.receipt, ctx))
    for row in outcome.receipt["contexts"]:
        if not row["judged"]:
            parts.append(visible.line(f"== context {row['context']}: not judged ({row['why']}) ==") + "\n")
    verdict = "pass" if outcome.receipt["ok"] else "fail"
    parts.append(f"index: {verdict}, exit {outcome.code} ({title(outcome.receipt)})\n")
    return "".join(parts)
