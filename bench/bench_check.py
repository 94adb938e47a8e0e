"""Benchmark of `evidence-gate check --no-run` against its floor, on generated repositories.

    python bench/bench_check.py [--repeat N] [--sizes 10000,100000]

For each size it builds (once, cached under bench/out/) a repository of that many files, a tenth of them under
`fixtures/`, with pull requests of 50 and 500 changed files merged like GitHub's refs/pull/N/merge. It then times,
in the same run, the gate and its floor: `python3 -c "import yaml, jsonschema"` plus the exact git plumbing calls
the gate made (recorded from one in-process run), replayed by themselves. Wall time is the median of N runs; peak
memory is the largest resident set of the process and its children (GNU time). Results go to stdout as a
markdown table and to bench/out/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

OUT = Path(__file__).resolve().parent / "out"
GENERATOR_VERSION = "v1"
PATCH_SIZES = (50, 500)
PROPERTY_FILES = 10
TODAY = "2026-09-20"
STAMP = 1788264000
GIT = ("git", "-c", "core.quotepath=off", "-c", "safe.directory=*")  # the prefix Repo.run uses

CONFIG = b"""version: 1
agents: ["*[bot]", "agent-*"]
locked: ["tools/**"]
freeze: {file: freeze.yaml, mode: shrink-only}
properties: {list: SCORE_PROPERTIES, seeds: [1101, 1102, 1103, 1104], pythonpath: [src]}
"""
FREEZE = b"""version: 1
budget: {max_entries: 12, max_bytes: 4096, max_ttl_days: 14}
entries:
  - id: slow-case
    test: tests/test_slow.py::test_slow
    assertion_hash: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    added_at: "2026-09-15"
    expires: "2026-09-25"
    owner: humans
    reason: timing
"""


def _data(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def _code_path(i: int) -> str:
    return f"src/pkg{i // 500:04d}/mod{i:06d}.py"


def base_files(total: int) -> dict[str, bytes]:
    """The baseline's files: a tenth fixtures, a few properties and the gate's inputs, the rest code."""
    files: dict[str, bytes] = {
        ".evidence-gate.yml": CONFIG,
        "freeze.yaml": FREEZE,
        ".github/workflows/ci.yml": b"on: pull_request\njobs: {}\n",
        "properties/conftest.py": b"",
        "properties/strategies.py": b"from hypothesis import strategies as st\n\nints = st.integers()\n",
        "tests/test_slow.py": b"def test_slow():\n    assert True\n",
        "tools/check.sh": b"#!/bin/sh\nexit 0\n",
    }
    listing = []
    for k in range(PROPERTY_FILES):
        name = f"properties/test_prop{k:02d}.py"
        files[name] = (
            b"from hypothesis import given\n\nfrom properties.strategies import ints\n\n\n"
            b"@given(ints)\ndef test_prop(x):\n    assert x == x\n"
        )
        listing.append(f"{name}::test_prop\n")
    files["SCORE_PROPERTIES"] = "".join(listing).encode()
    fixtures = total // 10
    for i in range(fixtures):
        files[f"fixtures/set{i // 250:03d}/case{i:06d}.json"] = b'{"case": %d, "expected": %d}\n' % (i, i * 7)
    i = 0
    while len(files) < total:
        files[_code_path(i)] = b"VALUE = %d\n" % i
        i += 1
    return files


def build(total: int) -> Path:
    """The cached repository for `total` files; built with one `git fast-import` stream."""
    path = OUT / f"repo-{total}-{GENERATOR_VERSION}"
    if (path / ".complete").exists():
        return path
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    git = ["git", "-C", str(path)]
    subprocess.run([*git, "init", "-q"], check=True)
    who = f"Bench <bench@example.com> {STAMP} +0000"
    files = base_files(total)
    chunks = [f"commit refs/heads/main\nmark :1\nauthor {who}\ncommitter {who}\n".encode(), _data(b"baseline\n")]
    chunks += [f"M 100644 inline {p}\n".encode() + _data(c) for p, c in sorted(files.items())]
    chunks.append(b"\n")
    for n, size in enumerate(PATCH_SIZES, start=1):
        changes = b"".join(
            f"M 100644 inline {_code_path(i * 97 % (total // 2))}\n".encode() + _data(b"VALUE = -%d  # patched\n" % i)
            for i in range(size)
        )
        chunks += [
            f"commit refs/pull/{n}/head\nmark :{10 * n}\nauthor {who}\ncommitter {who}\n".encode(),
            _data(b"patch\n"),
            b"from :1\n",
            changes,
            b"\n",
        ]
        chunks += [
            f"commit refs/pull/{n}/merge\nauthor {who}\ncommitter {who}\n".encode(),
            _data(b"merge\n"),
            f"from :1\nmerge :{10 * n}\n".encode(),
            changes,
            b"\n",
        ]
    chunks.append(b"done\n")
    subprocess.run([*git, "fast-import", "--quiet", "--done"], input=b"".join(chunks), check=True)
    subprocess.run([*git, "gc", "-q", "--aggressive" if total <= 10_000 else "--auto"], check=True)
    (path / ".complete").write_text(f"{total} files, patches {PATCH_SIZES}\n", "utf-8")
    return path


@dataclass(frozen=True)
class Sample:
    """One process run: wall seconds, CPU seconds (user + system, children included) and exit code."""

    seconds: float
    cpu: float
    code: int


def peak_kib(cmd: list[str], cwd: Path | None = None, stdin: bytes | None = None) -> int | None:
    """Peak resident set of `cmd` (and its children) in KiB, via GNU time; None when it is not installed.

    Measured through a small launcher because Linux charges a child the high-water mark of the process it was
    spawned from: a child of this (large) benchmark process would report at least the benchmark's own size.
    """
    time_bin = Path("/usr/bin/time")
    if not time_bin.exists():
        return None
    report = OUT / "time.txt"
    subprocess.run(
        [str(time_bin), "-f", "%M", "-o", str(report), *cmd], cwd=cwd, input=stdin, capture_output=True, check=False
    )
    return int(report.read_text("utf-8").split()[-1])


def measure(cmd: list[str], cwd: Path | None = None, stdin: bytes | None = None) -> Sample:
    """Run `cmd` once; wall time from spawn to reap (its rusage memory is not trusted, see `peak_kib`)."""
    start = time.perf_counter()
    proc = subprocess.Popen(
        cmd,
        cwd=cwd,
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return Sample(seconds, usage.ru_utime + usage.ru_stime, proc.returncode)


def gate_command(repo: Path, pr: int) -> list[str]:
    """The command a CI job would run."""
    script = Path(sys.executable).with_name("evidence-gate")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "evidence_gate"]
    return [
        *head,
        "check",
        "--repo",
        str(repo),
        "--head",
        f"refs/pull/{pr}/merge",
        "--no-run",
        "--author",
        "agent-bench",
        "--today",
        TODAY,
        "--receipt",
        str(OUT / "receipt.json"),
    ]


def record_git_calls(repo: Path, pr: int) -> tuple[list[tuple[tuple[str, ...], bytes | None]], str]:
    """Every git call one in-process gate run makes (arguments and stdin), and the row it decided."""
    from evidence_gate import contexts, gate  # noqa: PLC0415 - only the recording needs the package in-process
    from evidence_gate.git import Repo, _BatchSession  # noqa: PLC0415

    calls: list[tuple[tuple[str, ...], bytes | None]] = []
    session_reads: list[bytes] = []  # what the kept-open `cat-file --batch` was asked: one process in the floor
    original, original_ask = Repo.run, _BatchSession.ask

    def asking(self: _BatchSession, stdin: bytes, count: int) -> bytes:
        session_reads.append(stdin)
        return original_ask(self, stdin, count)

    def recording(
        self: Repo, *args: str, stdin: bytes | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[bytes]:
        calls.append((args, stdin))
        return original(self, *args, stdin=stdin, check=check)

    Repo.run = recording  # type: ignore[method-assign]
    _BatchSession.ask = asking  # type: ignore[method-assign]
    try:
        opts = gate.CheckOptions(
            repo=repo, head=f"refs/pull/{pr}/merge", author="agent-bench", today=date.fromisoformat(TODAY), run=False
        )
        # The CLI's path (the contexts plan, then the judgement), so the floor replays the calls `check` makes.
        receipt = contexts.evaluate(opts, OUT / "receipt-recorded.json", shards=True).receipt
    finally:
        Repo.run = original  # type: ignore[method-assign]
        _BatchSession.ask = original_ask  # type: ignore[method-assign]
    if session_reads:
        calls.append((("cat-file", "--batch"), b"".join(session_reads)))
    return calls, str(receipt["decision"]["row"])


def floor_once(repo: Path, calls: list[tuple[tuple[str, ...], bytes | None]]) -> Sample:
    """The floor: the imports the gate cannot avoid plus its git calls, each run by itself."""
    parts = [measure([sys.executable, "-c", "import yaml, jsonschema"])]
    parts += [measure([*GIT, *args], cwd=repo, stdin=stdin) for args, stdin in calls]
    return Sample(sum(p.seconds for p in parts), sum(p.cpu for p in parts), 0)


def run_case(total: int, pr: int, repeat: int) -> dict[str, object]:
    """Gate and floor, interleaved so both see the same machine load."""
    repo = build(total)
    calls, row = record_git_calls(repo, pr)
    gate_runs, floor_runs = [], []
    measure(gate_command(repo, pr))  # warm the page cache for both
    for _ in range(repeat):
        gate_runs.append(measure(gate_command(repo, pr)))
        floor_runs.append(floor_once(repo, calls))
    gate_peak = peak_kib(gate_command(repo, pr))
    floor_peaks = [peak_kib([sys.executable, "-c", "import yaml, jsonschema"])]
    floor_peaks += [peak_kib([*GIT, *args], cwd=repo, stdin=stdin) for args, stdin in calls]
    floor_peak = None if None in floor_peaks else max(p for p in floor_peaks if p is not None)
    codes = sorted({s.code for s in gate_runs})
    gate_s = statistics.median(s.seconds for s in gate_runs)
    floor_s = statistics.median(s.seconds for s in floor_runs)
    return {
        "files": total,
        "patch_files": PATCH_SIZES[pr - 1],
        "row": row,
        "exit_codes": codes,
        "git_calls": len(calls),
        "git_commands": sorted({a[0] if a[0] != "--literal-pathspecs" else a[1] for a, _ in calls}),
        "gate_cpu_median_s": round(statistics.median(s.cpu for s in gate_runs), 4),
        "floor_cpu_median_s": round(statistics.median(s.cpu for s in floor_runs), 4),
        "gate_median_s": round(gate_s, 4),
        "floor_median_s": round(floor_s, 4),
        "ratio": round(gate_s / floor_s, 2),
        "gate_peak_mib": None if gate_peak is None else round(gate_peak / 1024, 1),
        "floor_peak_mib": None if floor_peak is None else round(floor_peak / 1024, 1),
    }


def markdown(results: list[dict[str, object]]) -> str:
    """The README table."""
    lines = [
        "| files | changed | row | gate wall | floor wall | ratio | gate CPU | floor CPU | gate peak RSS "
        "| floor peak RSS |",
        "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['files']:,} | {r['patch_files']} | `{r['row']}` | {r['gate_median_s']:.3f} s | "
            f"{r['floor_median_s']:.3f} s | {r['ratio']}× | {r['gate_cpu_median_s']:.3f} s | "
            f"{r['floor_cpu_median_s']:.3f} s | {r['gate_peak_mib']} MiB | "
            f"{r['floor_peak_mib']} MiB |"
        )
    return "\n".join(lines)


def main() -> int:
    """Build (or reuse) the repositories, measure, print and save the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    results = []
    for total in (int(s) for s in args.sizes.split(",")):
        t0 = time.perf_counter()
        build(total)
        print(f"repository of {total:,} files ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        for pr in range(1, len(PATCH_SIZES) + 1):
            results.append(run_case(total, pr, args.repeat))
            print(json.dumps(results[-1]), file=sys.stderr)
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    (OUT / "results.json").write_text(
        json.dumps({"machine": machine, "repeat": args.repeat, "results": results}, indent=2) + "\n", "utf-8"
    )
    print(f"evidence-gate check --no-run vs floor; median of {args.repeat}; {machine}\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
