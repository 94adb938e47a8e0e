"""`evidence-gate history`: the freeze ledger's entries and bytes along the base branch's first-parent history.

Every commit's configuration and ledger are read from git objects (never a checkout), in a few batched `cat-file`
calls: the root trees of all commits, then the folders on the way to each file, then the distinct blobs. A ledger
that is absent, invalid, or named by a tree whose object is gone is a point of its own kind, drawn as a gap and
said in the text, never a crash. With a folder of receipts, the seed-ledger counts of each patch are read too.
"""

from __future__ import annotations

import json
import os
import posixpath
import stat
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from evidence_gate.config import CONFIG_PATH, Config, parse_config
from evidence_gate.errors import GateError, InputInvalid
from evidence_gate.git import Repo
from evidence_gate.lanes.freeze import ledger as freeze_ledger
from evidence_gate.lanes.freeze.history import MAX_TIME, History, PatchCounts, Point, Proposal, change_words
from evidence_gate.lanes.locked_paths import display_path
from evidence_gate.lanes.tree_entries import parse_tree
from evidence_gate.model import Violation
from evidence_gate.report import history_svg

BLOB_MODES = frozenset({b"100644", b"100755"})
RECEIPT_SCHEMA = "evidence-gate/receipt/v1"
MAX_RECEIPT_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class _Found:
    """What a path names in one tree: a blob id, or why there is none (`absent`, `unreadable: …`, `not a file`)."""

    blob: str | None
    why: str = ""


def _present(repo: Repo, oids: Iterable[str]) -> set[str]:
    """The ids among `oids` whose objects are in this clone."""
    keys = sorted(set(oids))
    if not keys:
        return set()
    stdin = "".join(f"{k}\n" for k in keys).encode()
    lines = repo.run("cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=stdin).stdout.splitlines()
    return {k for k, line in zip(keys, lines, strict=True) if not line.endswith((b" missing", b" ambiguous"))}


def _read(repo: Repo, oids: Iterable[str], kind: str) -> dict[str, bytes | None]:
    """Objects by id; None for one that is gone, of another type, or corrupt (read one by one to tell which)."""
    wanted = sorted(set(oids))
    present = _present(repo, wanted)
    out: dict[str, bytes | None] = dict.fromkeys(wanted)
    try:
        out.update(repo.read_objects(sorted(present), kind))
    except GateError:
        for oid in present:
            try:
                out[oid] = repo.read_objects([oid], kind)[oid]
            except GateError:
                out[oid] = None
    return out


def lookup(repo: Repo, trees: Iterable[str], path: str) -> dict[str, _Found]:
    """What `path` names in each of `trees` (root tree ids), one batched read per folder level."""
    parts = [p.encode("utf-8", "surrogateescape") for p in path.split("/")]
    where = {t: t for t in set(trees)}  # root tree -> the tree currently looked in
    found: dict[str, _Found] = {}
    for depth, name in enumerate(parts):
        raw = _read(repo, where.values(), "tree")
        last = depth == len(parts) - 1
        nxt: dict[str, str] = {}
        for root, oid in where.items():
            data = raw.get(oid)
            entries = None if data is None else parse_tree(data, len(oid) // 2)
            if entries is None:
                found[root] = _Found(None, f"unreadable: the tree {oid[:12]} is not in this clone or is damaged")
                continue
            hit = next(((m, o.hex()) for m, n, o in entries if n == name), None)
            if hit is None or (not last and hit[0] != b"40000"):  # git follows no link or file on the way
                found[root] = _Found(None, "absent")
            elif last and hit[0] in BLOB_MODES:
                found[root] = _Found(hit[1])
            elif not last:
                nxt[root] = hit[1]
            else:
                found[root] = _Found(None, f"not a regular file (mode {hit[0].decode()})")
        where = nxt
    return found


def _first_parent(repo: Repo, tip: str, limit: int) -> list[tuple[str, str, int, str]]:
    """(commit, root tree, committer time, subject) along the first-parent chain, oldest first."""
    raw = repo.run("log", "--first-parent", f"--max-count={limit}", "-z", "--format=%H %T %ct %s", tip, "--").stdout
    out = []
    for record in raw.split(b"\0"):
        if record.strip():
            commit, tree, when, subject = [*record.decode("utf-8", "replace").split(" ", 3), ""][:4]
            out.append((commit, tree, min(max(int(when), 0), MAX_TIME), subject))
    return out[::-1]


def _configs(repo: Repo, trees: set[str]) -> dict[str, Config | str]:
    """Each root tree's configuration, or why it cannot be used."""
    looked = lookup(repo, trees, CONFIG_PATH)
    blobs = _read(repo, [f.blob for f in looked.values() if f.blob], "blob")
    out: dict[str, Config | str] = {}
    by_blob: dict[str, Config | str] = {}  # a branch has few distinct configurations: parse each blob once
    for tree, f in looked.items():
        if f.blob is None and f.why == "absent":
            out[tree] = Config()
            continue
        data = blobs.get(f.blob) if f.blob else None
        if data is None or f.blob is None:
            out[tree] = f"{CONFIG_PATH} is {f.why or 'unreadable: its blob is not in this clone or is damaged'}"
            continue
        if f.blob not in by_blob:
            try:
                by_blob[f.blob] = parse_config(data)
            except InputInvalid as exc:
                by_blob[f.blob] = f"{exc.message}" + (f" (line {exc.line})" if exc.line else "")
        out[tree] = by_blob[f.blob]
    return out


def _measure(data: bytes | None, found: _Found, file: str) -> dict[str, Any]:
    """Point fields for one ledger blob."""
    if found.blob is None:
        state = "absent" if found.why == "absent" else "unreadable" if found.why.startswith("unreadable") else "invalid"
        return {"state": state, "detail": f"{file} is {found.why}"}
    if data is None:
        return {"state": "unreadable", "detail": f"the blob {found.blob[:12]} of {file} is not in this clone"}
    measured = freeze_ledger.measure(data, file)
    if isinstance(measured, Violation):
        return {"state": "invalid", "detail": f"{file}:{measured.line}: {measured.message}"}
    entries, size, budget = measured
    limits = {k: None if budget[k] == float("inf") else int(budget[k]) for k in ("max_entries", "max_bytes")}
    return {"state": "measured", "entries": entries, "size": size, **limits}


def collect(repo: Repo, branch: str, limit: int = 2000, label: str = "") -> History:
    """The ledger at each of the newest `limit` first-parent commits of `branch` (named `label` in the output)."""
    repo.toplevel()
    tip = repo.resolve(branch)
    if tip is None:
        raise GateError(
            f"{branch!r} is not a commit in this clone", fix="pass --branch naming the base branch", usage=True
        )
    if branch == "HEAD":  # name the branch checked out, as a reader of the picture knows it
        proc = repo.run("symbolic-ref", "--short", "-q", "HEAD", check=False)
        branch = proc.stdout.decode("utf-8", "replace").strip() or branch
    commits = _first_parent(repo, tip, limit)
    configs = _configs(repo, {tree for _, tree, _, _ in commits})
    by_file: dict[str, set[str]] = {}
    for tree, config in configs.items():
        if isinstance(config, Config):
            by_file.setdefault(posixpath.normpath(config.freeze.file), set()).add(tree)
    ledgers: dict[tuple[str, str], tuple[_Found, bytes | None]] = {}
    for file, trees in by_file.items():
        looked = lookup(repo, trees, file)
        blobs = _read(repo, [f.blob for f in looked.values() if f.blob], "blob")
        ledgers.update({(t, file): (f, blobs.get(f.blob) if f.blob else None) for t, f in looked.items()})
    points = []
    measured: dict[tuple[str, str], dict[str, Any]] = {}  # (blob, file): each distinct ledger is parsed once
    for commit, tree, when, subject in commits:
        config = configs[tree]
        if isinstance(config, str):
            fields: dict[str, Any] = {"state": "invalid", "detail": config}
            file = CONFIG_PATH
        else:
            file = posixpath.normpath(config.freeze.file)
            found, data = ledgers[(tree, file)]
            if found.blob is None or data is None:
                fields = _measure(data, found, file)
            else:
                key = (found.blob, file)
                if key not in measured:
                    measured[key] = _measure(data, found, file)
                fields = measured[key]
        points.append(Point(commit, when, subject, file, **fields))
    # Cut by the clone: the walk ended before the limit at a commit whose object names parents (a boundary of a
    # shallow clone, its parent missing or reached only through another side of a merge).
    oldest_parents = repo.parents(commits[0][0]) if commits and len(commits) < limit else []
    shallow = bool(oldest_parents) and repo.is_shallow()
    return History(label or branch, tip, tuple(points), shallow=shallow)


def propose(repo: Repo, walked: History, commit: str, dated: str | None = None) -> Proposal:
    """The ledger at `commit` (the pull request's merge commit) read as the base branch's tip configuration names
    it, dated by `dated` (its head commit; `commit` itself when None), never before the tip."""
    resolved = repo.resolve(commit)
    if resolved is None:
        raise GateError(
            f"{commit!r} is not a commit in this clone", fix="pass --proposed naming the PR's head", usage=True
        )
    (_, tree, when, subject), *_ = _first_parent(repo, resolved, 1)
    head = repo.resolve(dated) if dated else resolved
    if head is not None and head != resolved:
        when = _first_parent(repo, head, 1)[0][2]
    tip = walked.points[-1]
    if tip.file == CONFIG_PATH:  # the base branch's configuration is unusable: it names no ledger
        point = Point(resolved, when, subject, tip.file, "invalid", tip.detail)
        return Proposal(point, head or resolved)
    found = lookup(repo, [tree], tip.file)[tree]
    data = _read(repo, [found.blob], "blob").get(found.blob) if found.blob else None
    point = Point(resolved, when, subject, tip.file, **_measure(data, found, tip.file))
    base_tree = _first_parent(repo, tip.commit, 1)[0][1]
    base = lookup(repo, [base_tree], tip.file)[base_tree]
    base_data = _read(repo, [base.blob], "blob").get(base.blob) if base.blob else None
    before = () if base.why == "absent" else freeze_ledger.entry_ids(base_data, tip.file) if base_data else None
    after = () if found.why == "absent" else freeze_ledger.entry_ids(data, tip.file) if data else None
    if before is None or after is None:
        return Proposal(point, head or resolved)
    old, new = set(before), set(after)
    return Proposal(
        point, head or resolved, tuple(i for i in after if i not in old), tuple(i for i in before if i not in new)
    )


def read_receipts(folder: Path) -> tuple[tuple[PatchCounts, ...], tuple[str, ...]]:
    """The seed-ledger counts of every receipt below `folder` (`*.json`), and the files left out with why."""
    if not folder.is_dir():
        raise GateError(f"--receipts {folder} is not a folder", fix="pass a folder of receipt.json files", usage=True)
    patches, skipped = [], []
    for path in sorted(folder.rglob("*.json")):
        name = display_path(str(path.relative_to(folder)))
        try:
            patch = _patch_counts(json.loads(bounded_read(path)), name)
        except (OSError, ValueError) as exc:
            skipped.append(f"{name}: {str(exc)[:200]}")
            continue
        if isinstance(patch, str):
            skipped.append(f"{name}: {patch}")
        else:
            patches.append(patch)
    patches.sort(key=lambda p: (p.day, p.name))
    return tuple(patches), tuple(skipped)


def bounded_read(path: Path) -> bytes:
    """A regular file's bytes, at most MAX_RECEIPT_BYTES: a FIFO, a device or a huge file is refused, not read."""
    with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise ValueError("not a regular file")
        data = handle.read(MAX_RECEIPT_BYTES + 1)
    if len(data) > MAX_RECEIPT_BYTES:
        raise ValueError(f"larger than {MAX_RECEIPT_BYTES // (1024 * 1024)} MiB")
    return data


def _section(receipt: dict[str, Any], key: str) -> dict[str, Any]:
    value = receipt.get(key)
    return value if isinstance(value, dict) else {}


def _patch_counts(receipt: Any, name: str) -> PatchCounts | str:
    """One receipt's counts, or why it is not drawn."""
    if not isinstance(receipt, dict) or receipt.get("schema") != RECEIPT_SCHEMA:
        return f"not an evidence-gate receipt (schema is not {RECEIPT_SCHEMA})"
    if receipt.get("state") != "final":
        return "an aborted run: no counts"
    props = _section(receipt, "properties")
    counts = props.get("counts")
    keys = ("open", "closed_failures", "budget_passes")
    if not isinstance(counts, dict) or not all(type(counts.get(k)) is int and counts[k] >= 0 for k in keys):
        return "properties.counts is missing or not three counts"
    if not props.get("ledgers"):
        return f"the properties were not run ({display_path(str(props.get('skipped') or 'no seed ledgers'))[:200]})"
    git, mode = _section(receipt, "git"), _section(receipt, "mode")
    head, day = str(git.get("head") or ""), str(mode.get("today") or "")
    return PatchCounts(name, head, day, counts["open"], counts["closed_failures"], counts["budget_passes"])


def _day(when: int) -> str:
    return datetime.fromtimestamp(min(max(when, 0), MAX_TIME), UTC).date().isoformat()


def _describe(p: Point) -> str:
    if p.state != "measured":
        return f"{p.state}: {p.detail}"
    limit_e = f" (max {p.max_entries})" if p.max_entries is not None else " (no max_entries)"
    limit_b = f" (max {p.max_bytes})" if p.max_bytes is not None else " (no max_bytes)"
    return f"{p.file}: {p.entries} {'entry' if p.entries == 1 else 'entries'}{limit_e}, {p.size} bytes{limit_b}"


def text_lines(history: History) -> list[str]:
    """The text output: the walk, one line per change of the ledger (gaps included), the receipts."""
    pts = history.points
    out = [
        f"freeze ledger along the first-parent history of {history.branch} ({history.tip[:12]}): "
        f"{_count(len(pts), 'commit')}, {_day(pts[0].when)} .. {_day(pts[-1].when)}"
    ]
    if history.shallow:
        out.append(f"shallow clone: history starts at {pts[0].commit[:12]}; fetch with `fetch-depth: 0` for all of it")
    previous = ""
    for p in pts:
        line = _describe(p)
        if line != previous:
            gap = " (drawn as a gap)" if p.state in ("invalid", "unreadable") else ""
            out.append(f"{_day(p.when)} {p.commit[:12]} {line}{gap}")
        previous = line
    measured = [p for p in pts if p.state == "measured"]
    if not measured:
        out.append("no commit has a readable ledger: nothing to draw")
    else:
        peak = max(measured, key=lambda p: p.entries or 0)
        out.append(
            f"now: {_describe(pts[-1])}; peak {_count(peak.entries or 0, 'entry', 'entries')} on {_day(peak.when)} "
            f"({peak.commit[:12]})"
        )
    gaps = sum(p.state in ("invalid", "unreadable") for p in pts)
    if gaps:
        out.append(f"{_count(gaps, 'commit')} with an invalid or unreadable ledger or configuration, drawn as gaps")
    if history.proposal is not None:
        out.append(proposal_line(history))
    for patch in history.patches:
        out.append(
            f"receipt {patch.name} ({patch.head[:12] or 'no head'}, {patch.day or 'no date'}): {patch.open} open, "
            f"{_count(patch.closed_failures, 'closed failure')}, {_count(patch.budget_passes, 'budget pass', 'budget passes')}"
        )
    out += [f"receipt skipped: {s}" for s in history.skipped]
    return [display_path(line) for line in out]


def proposal_line(walked: History) -> str:
    """The text line of the pull request's proposed ledger."""
    proposal = walked.proposal
    assert proposal is not None
    p = proposal.point
    change = change_words(proposal)
    return f"this PR ({proposal.head[:12]}, {_day(p.when)}): {_describe(p)}" + (f"; entries {change}" if change else "")


def main(
    repo_dir: Path,
    branch: str,
    svg: Path | None,
    receipts: Path | None,
    limit: int,
    out: TextIO | None = None,
    proposed: str | None = None,
) -> int:
    """`evidence-gate history`: print the walk and write the picture."""
    out = out or sys.stdout
    if limit < 1:
        raise GateError("--limit must be at least 1", usage=True)
    history = collect(Repo(repo_dir), branch, limit)
    patches, skipped = read_receipts(receipts) if receipts is not None else ((), ())
    found = propose(Repo(repo_dir), history, proposed) if proposed else None
    history = History(history.branch, history.tip, history.points, patches, skipped, history.shallow, found)
    for line in text_lines(history):
        out.write(line + "\n")
    if svg is not None:
        try:
            svg.write_text(history_svg.render(history), "utf-8")
        except OSError as exc:
            raise GateError(
                f"cannot write {svg}: {exc.strerror}", fix="pass --svg naming a writable file", usage=True
            ) from exc
        out.write(f"picture: {svg}\n")
    return 0


def _count(n: int, word: str, many: str | None = None) -> str:
    """`1 entry`, `2 entries`."""
    return f"{n} {word if n == 1 else many or word + 's'}"


PICTURE = "ledger-history.svg"  # the action writes it beside the receipt and uploads it with the artifact


def summary_note(walked: History) -> str | None:
    """One plain sentence for the job summary, or None when no commit (nor the pull request) has a readable ledger."""
    measured = [p for p in walked.points if p.state == "measured"]
    proposal = walked.proposal
    if not measured and (proposal is None or proposal.point.state != "measured"):
        return None
    last = walked.points[-1]
    # an unusable configuration is not an invalid ledger: the point's detail names the file at fault
    now = f"at the baseline {_describe(last)}" if last.state == "measured" else f"at the baseline {last.detail}"
    peak = max(measured, key=lambda p: p.entries or 0) if measured else None
    gaps = sum(p.state in ("invalid", "unreadable") for p in walked.points)
    pr = ""
    if proposal is not None:
        shown = proposal.point
        change = change_words(proposal)
        pr = f"; this PR: {_describe(shown) if shown.state == 'measured' else shown.detail}" + (
            f" (entries {change})" if change else ""
        )
    return (
        f"{_count(len(walked.points), 'first-parent commit')} of {walked.branch}: {now}"
        + (f"; peak {_count(peak.entries or 0, 'entry', 'entries')} on {_day(peak.when)}" if peak else "")
        + (f"; {_count(gaps, 'commit')} drawn as gaps (invalid or unreadable ledger or configuration)" if gaps else "")
        + pr
    )


def picture_for(
    repo_dir: Path, baseline: str, label: str, proposed: tuple[str, str | None] | None = None, limit: int = 1000
) -> tuple[str, str] | None:
    """The SVG and the summary note of the base branch's history up to `baseline`, with the ledger the pull request
    proposes (`proposed`: its merge commit and its head commit) drawn after it; None when no commit has a ledger."""
    repo = Repo(repo_dir)
    walked = collect(repo, baseline, limit, label)
    if proposed is not None:
        found = propose(repo, walked, *proposed)
        walked = History(walked.branch, walked.tip, walked.points, shallow=walked.shallow, proposal=found)
    note = summary_note(walked)
    return None if note is None else (history_svg.render(walked), note)
