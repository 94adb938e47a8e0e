"""`evidence-gate demo`: an example repository, an honest patch and tampering patches, the gate on each.

The example project ships as package data (`data/demo/`). Every pull request is built with `git fast-import`
(pinned identities and dates in the stream itself) as a branch plus a merge commit into the untouched base, like
GitHub's `refs/pull/N/merge`, and judged by the same `gate.evaluate` that `check` uses. The demo is itself a
check: it exits 0 only when every patch lands on the row it is expected to.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import date
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from evidence_gate import gate
from evidence_gate.errors import EXIT_USAGE
from evidence_gate.git import Repo
from evidence_gate.report.registry import render_text
from evidence_gate.row_ids import (
    EVIDENCE_PATH_EDITED,
    FIXTURE_DIGEST_MISMATCH,
    FREEZE_EXPIRY_EXTENDED,
    FREEZE_ID_ADDED,
    HARNESS_PROBED,
    HUMAN_PATCH,
    PASS,
    PROPERTY_FAILED,
    RUN_INTEGRITY,
)

TODAY = date(2026, 9, 20)
BASE_TIME = 1788264000  # 2026-09-01T12:00:00Z
HUMAN = "Maria Maintainer <maria@example.com>"
AGENT_LOGIN = "alloc-agent[bot]"
AGENT = f"{AGENT_LOGIN} <agent@example.com>"
# Package data skips dot files, so these are stored under a plain name and committed under their real one.
RENAMED = {"evidence-gate.yml": ".evidence-gate.yml"}
RUNNER_MISSING = "not available in this build"

# A file change: bytes (regular file), ("symlink", target), or None (delete).
Change = bytes | tuple[str, str] | None


@dataclass(frozen=True)
class Patch:
    """One pull request of the demo and the row the gate must name for it."""

    name: str
    explain: str
    changes: dict[str, Change]
    expect: str
    author: str = AGENT_LOGIN
    needs_run: bool = False
    # Row expected instead when the sealed runner is a fail-closed stub (only for patches that reach it).
    expect_without_runner: str | None = None


@dataclass
class Outcome:
    """What the gate said about one patch."""

    patch: Patch
    expected: str
    row: str
    ok: bool
    exit_code: int
    receipt: Path
    notes: list[str] = field(default_factory=list)
    report: str = ""  # the receipt as `evidence-gate check` prints it

    @property
    def as_expected(self) -> bool:
        """Whether the patch landed on its expected row."""
        return self.row == self.expected


def example_files() -> dict[str, bytes]:
    """The example project's files, by repository path."""
    root = resources.files("evidence_gate").joinpath("data/demo")
    files: dict[str, bytes] = {}

    def walk(node: Traversable, prefix: str) -> Iterator[tuple[str, Traversable]]:
        for child in sorted(node.iterdir(), key=lambda c: c.name):
            if child.name in {"__pycache__", ".hypothesis", ".pytest_cache"}:
                continue
            rel = f"{prefix}{child.name}"
            if child.is_dir():
                yield from walk(child, rel + "/")
            else:
                yield rel, child

    for rel, node in walk(root, ""):
        files[RENAMED.get(rel, rel)] = node.read_bytes()
    return files


# The demo's patch contents: a ledger entry the patch adds, an honest rewrite, a broken one, a loosening conftest.
NEW_ENTRY = (
    b"  - id: alloc-three-ways-flaky\n"
    b"    test: tests/test_alloc.py::test_three_ways\n"
    b'    assertion_hash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"\n'
    b'    added_at: "2026-09-20"\n'
    b'    expires: "2026-09-30"\n'
    b"    owner: humans\n"
    b"    reason: timing\n"
)
PRODUCER = (
    b"\n\ndef produce(record: dict[str, int]) -> list[int]:\n"
    b'    """The fixture producer: a digest record\'s input to the output whose sha256 is recorded."""\n'
    b'    return allocate(record["total"], record["parts"])\n'
)
REFACTOR = (
    b'"""Split an integer total into near-equal integer parts."""\n\n\n'
    b"def allocate(total: int, parts: int) -> list[int]:\n"
    b'    """`parts` integers that sum to `total`, differing by at most one, larger shares first."""\n'
    b"    if parts <= 0:\n"
    b'        raise ValueError("parts must be positive")\n'
    b"    base, extra = divmod(total, parts)\n"
    b"    return [base + 1] * extra + [base] * (parts - extra)\n"
) + PRODUCER
BROKEN = (
    b'"""Split an integer total into near-equal integer parts."""\n\n\n'
    b"def allocate(total: int, parts: int) -> list[int]:\n"
    b'    """Rounds every share down (and so loses the remainder)."""\n'
    b"    return [total // parts] * parts\n"
) + PRODUCER
SKIP_ALL = (
    b'"""Loosening: skip every test so the run is green."""\n\n'
    b"import pytest\n\n\n"
    b"def pytest_collection_modifyitems(items):\n"
    b"    for item in items:\n"
    b'        item.add_marker(pytest.mark.skip(reason="flaky"))\n'
)
DESELECT_ALL = b"[pytest]\naddopts = -k 'not allocate' -p no:hypothesis\n"
PROPERTY_FILE = "properties/test_allocate_properties.py"


def patches(files: dict[str, bytes]) -> list[Patch]:
    """The demo's pull requests: one honest change, then one trick per surface the gate protects."""
    return [*_static_tricks(files), *_running_tricks(files)]


def _static_tricks(files: dict[str, bytes]) -> list[Patch]:
    """The honest change, a maintainer's edit, and the tricks the gate refuses before any test runs."""
    freeze = files["freeze.yaml"]
    return [
        Patch(
            "honest-refactor",
            "rewrites allocate() with divmod; only code under test changes",
            {"src/alloc.py": REFACTOR},
            PASS,
            expect_without_runner=RUN_INTEGRITY,
        ),
        Patch(
            "human-fixture-edit",
            "a maintainer (not an agent) updates a golden file: passes, not scored",
            {
                "fixtures/golden.json": files["fixtures/golden.json"]
                .replace(b"-5", b"-6")
                .replace(b"[-2, -3]", b"[-3, -3]")
            },
            HUMAN_PATCH,
            author="maria-maintainer",
        ),
        Patch(
            "freeze-entry-added",
            "quarantines a second test in freeze.yaml; the ledger may only shrink",
            {"freeze.yaml": freeze + NEW_ENTRY},
            FREEZE_ID_ADDED,
        ),
        Patch(
            "freeze-expiry-pushed",
            "moves an entry's expiry from 2026-09-25 to 2026-09-28",
            {"freeze.yaml": freeze.replace(b'expires: "2026-09-25"', b'expires: "2026-09-28"')},
            FREEZE_EXPIRY_EXTENDED,
        ),
        Patch(
            "fixture-via-symlink",
            "replaces fixtures/golden.json by a symlink to a file the patch wrote",
            {
                "notes/golden.json": b'[{"total": 10, "parts": 3, "expected": [3, 3, 3]}]\n',
                "fixtures/golden.json": ("symlink", "../notes/golden.json"),
            },
            EVIDENCE_PATH_EDITED,
        ),
        Patch(
            "property-renamed-away",
            "renames the locked property file so nothing named in SCORE_PROPERTIES runs",
            {PROPERTY_FILE: None, "properties/old_allocate_properties.py": files[PROPERTY_FILE]},
            EVIDENCE_PATH_EDITED,
        ),
        Patch(
            "conftest-skips-all",
            "adds a root conftest.py that marks every test skipped",
            {"conftest.py": SKIP_ALL},
            EVIDENCE_PATH_EDITED,
        ),
        Patch(
            "tells-it-is-tested",
            "the same broken allocate, correct only when 'hypothesis' is not in "
            "sys.modules; refused before any test runs",
            {
                "src/alloc.py": BROKEN.replace(
                    b"def allocate(",
                    b"import sys\n\n\ndef _tested():\n    return 'hypothesis' in sys.modules\n\n\ndef allocate(",
                    1,
                )
            },
            HARNESS_PROBED,
        ),
    ]


def _running_tricks(files: dict[str, bytes]) -> list[Patch]:
    """The patches only the sealed run catches."""
    reformatted = files["src/alloc.py"].replace(
        b'    return allocate(record["total"], record["parts"])',
        b'    return {"shares": allocate(record["total"], record["parts"])}',
    )
    return [
        Patch(
            "broken-allocate",
            "rounds every share down; only running the properties can catch it",
            {"src/alloc.py": BROKEN},
            PROPERTY_FAILED,
            needs_run=True,
            expect_without_runner=RUN_INTEGRITY,
        ),
        Patch(
            "pytest-ini-loosens",
            "the same broken allocate plus a pytest.ini that deselects every property; the "
            "sealed run never reads the patch's pytest configuration",
            {"src/alloc.py": BROKEN, "pytest.ini": DESELECT_ALL},
            PROPERTY_FAILED,
            needs_run=True,
            expect_without_runner=RUN_INTEGRITY,
        ),
        Patch(
            "producer-output-changed",
            "the fixture producer returns a new shape; properties still pass, the digest records do not",
            {"src/alloc.py": reformatted},
            FIXTURE_DIGEST_MISMATCH,
            needs_run=True,
            expect_without_runner=RUN_INTEGRITY,
        ),
    ]


def _quote(path: str) -> str:
    if any(c in path for c in ' "\n\\') or not path.isascii():
        raise ValueError(f"demo paths are plain ASCII without spaces: {path!r}")
    return path


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _modify(changes: dict[str, Change]) -> bytes:
    out = b""
    for path, change in changes.items():
        if change is None:
            out += f"D {_quote(path)}\n".encode()
        elif isinstance(change, tuple):
            out += f"M 120000 inline {_quote(path)}\n".encode() + _data(change[1].encode())
        else:
            out += f"M 100644 inline {_quote(path)}\n".encode() + _data(change)
    return out


def _commit(ref: str, mark: int, who: str, when: int, message: str, body: bytes, parents: tuple[str, ...]) -> bytes:
    head = f"commit {ref}\nmark :{mark}\nauthor {who} {when} +0000\ncommitter {who} {when} +0000\n".encode()
    head += _data(message.encode())
    for i, parent in enumerate(parents):
        head += f"{'from' if i == 0 else 'merge'} {parent}\n".encode()
    return head + body + b"\n"


def build_repository(path: Path, files: dict[str, bytes], prs: list[Patch]) -> None:
    """A repository with `main`, and per patch `refs/pull/N/head` plus the merge `refs/pull/N/merge`."""
    path.mkdir(parents=True, exist_ok=True)
    repo = Repo(path)
    repo.run("init", "-q")
    stream = _commit(
        "refs/heads/main", 1, HUMAN, BASE_TIME, "The allocation example\n", _modify(dict(sorted(files.items()))), ()
    )
    for n, pr in enumerate(prs, start=1):
        who = AGENT if pr.author == AGENT_LOGIN else f"{pr.author} <{pr.author}@example.com>"
        when = BASE_TIME + 3600 * n
        body = _modify(pr.changes)
        stream += _commit(f"refs/pull/{n}/head", 10 * n, who, when, f"{pr.name}\n", body, (":1",))
        # The base did not move, so the merge's tree is the base plus the patch: GitHub's test merge commit.
        stream += _commit(
            f"refs/pull/{n}/merge",
            10 * n + 1,
            "GitHub <noreply@github.com>",
            when + 60,
            f"Merge {pr.name} into main\n",
            body,
            (":1", f":{10 * n}"),
        )
    repo.run("fast-import", "--quiet", "--done", stdin=stream + b"done\n")
    repo.run("symbolic-ref", "HEAD", "refs/heads/main")
    repo.run("read-tree", "-u", "--reset", "HEAD")  # a work tree to look at; the gate reads objects only


def _runner_missing(receipt: Mapping[str, object]) -> bool:
    violations = receipt.get("violations")
    return isinstance(violations, list) and any(
        isinstance(v, dict) and v.get("row") == RUN_INTEGRITY and RUNNER_MISSING in str(v.get("message"))
        for v in violations
    )


def judge(repo_path: Path, receipts: Path, prs: list[Patch], run: bool) -> list[Outcome]:
    """Run the gate on every pull request's merge ref and compare the row with the expectation."""
    outcomes: list[Outcome] = []
    runner_missing = False
    for n, pr in enumerate(prs, start=1):
        if pr.needs_run and (not run or runner_missing):
            continue
        receipt_path = receipts / f"{n:02d}-{pr.name}.json"
        opts = gate.CheckOptions(repo=repo_path, head=f"refs/pull/{n}/merge", author=pr.author, today=TODAY, run=run)
        receipt, code = gate.evaluate(opts, receipt_path)
        notes: list[str] = []
        if run and _runner_missing(receipt):
            runner_missing = True
        expected = pr.expect_without_runner if runner_missing and pr.expect_without_runner else pr.expect
        if runner_missing and pr.expect_without_runner:
            notes.append("the sealed runner is a fail-closed stub in this build")
        if receipt.get("state") != "final":
            notes.extend(str(e).splitlines()[0] for e in receipt.get("errors", [])[:1])
        elif receipt["decision"]["row"] != expected:  # say why, e.g. the runner's dependencies are missing
            notes.extend(
                [
                    str(v.get("message"))[:200]
                    for v in receipt.get("violations", [])
                    if v.get("row") == receipt["decision"]["row"]
                ][:1]
            )
        outcomes.append(
            Outcome(
                pr,
                expected,
                str(receipt["decision"]["row"]),
                bool(receipt["ok"]),
                code,
                receipt_path,
                notes,
                render_text(receipt) if receipt.get("state") == "final" else "",
            )
        )
    return outcomes


def render(outcomes: list[Outcome]) -> str:
    """The table: patch -> row -> verdict -> receipt, then one line of explanation per patch."""
    header = ("patch", "row", "verdict", "expected", "receipt")
    rows = [
        (
            o.patch.name,
            o.row,
            "PASS" if o.ok else "FAIL",
            "yes" if o.as_expected else f"NO ({o.expected})",
            str(o.receipt),
        )
        for o in outcomes
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = []
    for r in [header, *rows]:
        lines.append("  ".join(r[i].ljust(widths[i]) for i in range(4)) + "  " + r[4])
    lines.append("")
    for o in outcomes:
        extra = f" ({'; '.join(o.notes)})" if o.notes else ""
        lines.append(f"{o.patch.name}: {o.patch.explain} -> {o.row}, exit {o.exit_code}{extra}")
    for o in outcomes:
        lines += ["", f"--- {o.patch.name}: {o.receipt.name}"]
        lines += [f"    {line}" for line in o.report.splitlines()]
    return "\n".join(lines) + "\n"


def main(workdir: Path | None, run: bool) -> int:
    """Build the example repository, apply each patch, run the gate, print the table; 0 when all as expected."""
    root = workdir if workdir is not None else Path(tempfile.mkdtemp(prefix="evidence-gate-demo-"))
    repo_path = root / "repo"
    if repo_path.exists() and any(repo_path.iterdir()):
        print(f"evidence-gate demo: {repo_path} already exists; pass an empty --workdir", file=sys.stderr)
        return EXIT_USAGE
    files = example_files()
    prs = patches(files)
    build_repository(repo_path, files, prs)
    outcomes = judge(repo_path, root / "receipts", prs, run)
    mode = "static lanes only (--no-run)" if not run else "static lanes and the sealed property run"
    print(f"evidence-gate demo: {len(outcomes)} pull requests against {repo_path}, {mode}, today={TODAY}\n")
    sys.stdout.write(render(outcomes))
    skipped = [p.name for p in prs if p.needs_run and p.name not in {o.patch.name for o in outcomes}]
    if skipped:
        print(f"\nnot shown ({'needs the property run' if not run else 'runner unavailable'}): {', '.join(skipped)}")
    wrong = [o for o in outcomes if not o.as_expected]
    if wrong:
        print(
            f"\n{len(wrong)} patch(es) did not land on the expected row: {', '.join(o.patch.name for o in wrong)}",
            file=sys.stderr,
        )
        return 1
    print(f"\nevery patch landed on its expected row; receipts in {root / 'receipts'}")
    return 0
