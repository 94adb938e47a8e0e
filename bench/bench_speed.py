"""Benchmark of where the gate's cost grows: the freeze ledger, `history`, and start-up, each against a comparison
measured in the same run.

    python bench/bench_speed.py [--repeat N] [--quick] [--other-src DIR]

1. The ledger lane in-process (`freeze_ledger.check` on the baseline and head ledgers, CPU time; the baseline has
   one entry more, so both sides are parsed): YAML ledgers of 500, 2,000 and 5,000 entries (the largest just under
   the 1 MiB cap), a JSON one near the cap, and hostile ones near the cap that fail (100,000 empty entries, one
   line of 1 MB, 500,000 `[`, one mapping of 60,000 unknown keys).
2. `check --no-run` end to end (CPU of the process and its git children; started as the image's `evidence-gate`
   script and pip's console script start it, a script importing `evidence_gate.cli`) on a 10-file pull request of a small
   repository with a 2,000-entry ledger and with a one-entry one, against bench/article_freeze_budget.py on the
   same commits (pure-Python `yaml.safe_load`, as the article's script; and with `--libyaml`).
3. `history` over 1,000 first-parent commits with 21 distinct ledgers (30 entries each): the process's CPU.
4. Start-up: `python -c "import evidence_gate.cli"` against the standard library it needs (with yaml), `python -c
   "import yaml"` and `python -c pass`.

`--other-src DIR` also runs part 2's gate from another copy of its `src/` folder (`git archive REV src | tar -x -C
DIR`), interleaved in the same run, for before/after figures under the same load. `--parts check,import` runs only
those parts (the `check --no-run` ratio against the article's script takes about a minute alone).

CPU time (user + system, from os.times / wait4) is the steady figure on a shared machine; each is the median of N
runs, interleaved with its comparison. Bytecode is compiled first (the image ships it; an editable install under
PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every start). Results go to stdout as Markdown
and to bench/out/speed.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
TODAY = "2026-09-20"
STAMP = 1788264000
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ARTICLE = ROOT / "bench" / "article_freeze_budget.py"


def yaml_ledger(count: int, salt: str = "") -> bytes:
    """A valid freeze.yaml of `count` entries, about 200 bytes each."""
    lines = ["version: 1", f"budget: {{max_entries: {count + 10}, max_bytes: 10000000, max_ttl_days: 14}}", "entries:"]
    for i in range(count):
        lines += [
            f"  - id: t/t{i:04d}.py::t_{i}{salt}",
            f"    test: t/t{i:04d}.py::t_{i}{salt}",
            f'    assertion_hash: "{i:032x}"',
            '    added_at: "2026-09-15"',
            '    expires: "2026-09-25"',
            "    owner: humans",
            "    reason: timing",
        ]
    return ("\n".join(lines) + "\n").encode()


def json_ledger(count: int) -> bytes:
    """A valid freeze.json of `count` entries, one member per line."""
    frozen = [
        {"id": f"t/t{i:05d}.py::t_{i}", "added": "2026-09-15", "expires": "2026-09-25", "owner": "humans"}
        for i in range(count)
    ]
    return (json.dumps({"version": 1, "frozen": frozen}, indent=1) + "\n").encode()


def cpu_of(cmd: list[str], cwd: Path | None = None, env: dict[str, str] | None = None) -> float:
    """CPU seconds of one process and its children (wait4's rusage)."""
    proc = subprocess.Popen(cmd, cwd=cwd, env=env or ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, _, usage = os.wait4(proc.pid, 0)
    return usage.ru_utime + usage.ru_stime


def cpu_in_process(fn: Callable[[], object]) -> float:
    """CPU seconds of one call in this process."""
    before = os.times()
    fn()
    after = os.times()
    return (after.user - before.user) + (after.system - before.system)


def medians(samples: dict[str, list[float]]) -> dict[str, float]:
    """The median of each series, rounded to the millisecond."""
    return {k: round(statistics.median(v), 3) for k, v in samples.items()}


def interleaved(repeat: int, runs: dict[str, Callable[[], float]]) -> dict[str, float]:
    """Each named run `repeat` times, round-robin so all see the same load; medians."""
    samples: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeat):
        for name, run in runs.items():
            samples[name].append(run())
    return medians(samples)


def fast_import(path: Path, commits: list[dict[str, bytes]], branch: str = "main") -> list[str]:
    """A repository at `path` whose `branch` is the given commits in order (each a dict of changed files)."""
    subprocess.run(["git", "init", "-q", "-b", branch, str(path)], check=True)
    who = f"Bench <bench@example.com> {STAMP} +0000"
    chunks = []
    for n, files in enumerate(commits, start=1):
        chunks.append(f"commit refs/heads/{branch}\nmark :{n}\ncommitter {who}\ndata 7\ncommit\n".encode())
        if n > 1:
            chunks.append(f"from :{n - 1}\n".encode())
        for name, data in sorted(files.items()):
            chunks.append(f"M 100644 inline {name}\ndata {len(data)}\n".encode() + data + b"\n")
        chunks.append(b"\n")
    subprocess.run(["git", "-C", str(path), "fast-import", "--quiet"], input=b"".join(chunks), check=True)
    log = subprocess.run(["git", "-C", str(path), "rev-list", "--reverse", branch], capture_output=True, check=True)
    return log.stdout.decode().split()


def pr_repo(path: Path, ledger: bytes) -> tuple[str, str]:
    """A small repository: a baseline with the ledger and 40 modules, a head that changes 10 of them."""
    if not (path / ".complete").exists():
        base = {".evidence-gate.yml": b"version: 1\n", "freeze.yaml": ledger, "README.md": b"bench\n"}
        base |= {"SCORE_PROPERTIES": b"properties/test_prop.py::test_prop\n", "properties/conftest.py": b""}
        base["properties/test_prop.py"] = b"from hypothesis import given, strategies as st\n\n\n@given(st.integers())\n"
        base["properties/test_prop.py"] += b"def test_prop(x):\n    assert x == x\n"
        base |= {f"src/pkg/mod{i:02d}.py": b"VALUE = %d\n" % i for i in range(40)}
        head = {f"src/pkg/mod{i:02d}.py": b"VALUE = -%d  # patched\n" % i for i in range(10)}
        commits = fast_import(path, [base, head])
        subprocess.run(["git", "-C", str(path), "branch", "-f", "base", commits[0]], check=True)
        (path / ".complete").write_text("ok\n", "utf-8")
    return "base", "main"


def history_repo(path: Path, commits: int = 1000, distinct: int = 21) -> None:
    """`commits` first-parent commits; the ledger changes `distinct - 1` times, another file every commit."""
    if (path / ".complete").exists():
        return
    every = commits // distinct + 1
    series = []
    for n in range(commits):
        files = {"log.txt": b"%d\n" % n}
        if n % every == 0:
            files["freeze.yaml"] = yaml_ledger(30, salt=f"v{n // every}")
        if n == 0:
            files[".evidence-gate.yml"] = b"version: 1\n"
        series.append(files)
    fast_import(path, series)
    (path / ".complete").write_text("ok\n", "utf-8")


# The `evidence-gate` command as the action's image writes it (Dockerfile) and as pip's console script runs it: a
# script calling `evidence_gate.cli.entry` (a --other-src checkout from before it existed: its `main`), not `python -m
# evidence_gate` (runpy and importlib.util, ~3 ms more).
ENTRY = "import sys\nfrom evidence_gate import cli\nsys.exit(getattr(cli, 'entry', cli.main)())\n"


def gate_cmd(repo: Path, base: str, head: str) -> list[str]:
    """`evidence-gate check --no-run` as a CI job runs it (the image's entry script)."""
    entry = OUT / "evidence-gate"
    if not entry.exists() or entry.read_text("utf-8") != ENTRY:
        entry.write_text(ENTRY, "utf-8")
    return [
        sys.executable, str(entry), "check", "--repo", str(repo), "--base", base, "--head", head,
        "--no-run", "--author", "agent-bench", "--today", TODAY, "--receipt", str(OUT / "speed-receipt.json"),
    ]  # fmt: skip


def bench_ledgers(repeat: int, quick: bool) -> list[dict[str, Any]]:
    """Part 1: the ledger lane in-process."""
    from evidence_gate.config import Config, FreezeConfig  # noqa: PLC0415
    from evidence_gate.lanes.freeze import ledger as freeze_ledger  # noqa: PLC0415 - the subprocess parts must not pay for it here

    today = date.fromisoformat(TODAY)
    cases: list[tuple[str, bytes, bytes, Config]] = []
    for count in (500, 2000) if quick else (500, 2000, 5000):
        cases.append((f"YAML, {count:,} entries", yaml_ledger(count + 1), yaml_ledger(count), Config()))
    if not quick:
        json_config = Config(freeze=FreezeConfig(file="freeze.json"))
        cases.append(("JSON, 6,500 entries", json_ledger(6501), json_ledger(6500), json_config))
        base = yaml_ledger(10)
        cases.append(
            (
                "hostile YAML: 100,000 empty entries",
                base,
                b"version: 1\nentries: [" + b"{}," * 100_000 + b"]\n",
                Config(),
            )
        )
        cases.append(
            ("hostile YAML: one line of 1 MB", base, b"version: 1\nentries: [" + b"x" * 1_040_000 + b"]\n", Config())
        )
        cases.append(("hostile YAML: 500,000 `[`", base, b"[" * 500_000, Config()))
        keys = b"".join(b"k%05d: 1, " % i for i in range(60_000))
        cases.append(
            ("hostile YAML: 60,000 unknown keys", base, b"{version: 1, entries: [], " + keys + b"}\n", Config())
        )
    rows = []
    for name, base, head, config in cases:
        assert len(head) <= 1 << 20, (name, len(head))
        result = freeze_ledger.check(base, head, config, today)
        row = interleaved(repeat, {"cpu_s": lambda b=base, h=head, c=config: cpu_in_process(
            lambda: freeze_ledger.check(b, h, c, today))})  # fmt: skip
        rows.append({"case": name, "bytes": len(head), "violations": len(result.lane.violations), **row})
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def bench_check(repeat: int, other_src: Path | None) -> list[dict[str, Any]]:
    """Part 2: `check --no-run` against the article's script on the same pull request (and the other `src/`)."""
    other_env = dict(ENV, PYTHONPATH=str(other_src)) if other_src else None
    rows = []
    for count in (1, 2000):
        repo = OUT / f"speed-pr-{count}"
        base, head = pr_repo(repo, yaml_ledger(count))
        runs = {
            "gate_cpu_s": lambda r=repo, b=base, h=head: cpu_of(gate_cmd(r, b, h)),
            "article_cpu_s": lambda r=repo, b=base, h=head: cpu_of([sys.executable, str(ARTICLE), str(r), b, h]),
            "article_libyaml_cpu_s": lambda r=repo, b=base, h=head: cpu_of(
                [sys.executable, str(ARTICLE), str(r), b, h, "--libyaml"]
            ),
            # The gate's start-up alone, in the same rounds: what of the ratio is imports, what is the run.
            "gate_import_cpu_s": lambda: cpu_of([sys.executable, "-c", "import evidence_gate.cli"]),
        }
        if other_env:
            runs["other_cpu_s"] = lambda r=repo, b=base, h=head: cpu_of(gate_cmd(r, b, h), env=other_env)
        runs["gate_cpu_s"]()  # warm the page cache
        row = interleaved(repeat, runs)
        receipt = json.loads((OUT / "speed-receipt.json").read_text("utf-8"))
        rows.append(
            {
                "entries": count,
                "row": receipt["decision"]["row"],
                **row,
                "ratio": round(row["gate_cpu_s"] / row["article_cpu_s"], 2),
                "ratio_libyaml": round(row["gate_cpu_s"] / row["article_libyaml_cpu_s"], 2),
                "import_ratio": round(row["gate_import_cpu_s"] / row["article_cpu_s"], 2),
            }
        )
        if other_env:
            rows[-1]["other_ratio"] = round(row["other_cpu_s"] / row["article_cpu_s"], 2)
            rows[-1]["over_other"] = round(row["gate_cpu_s"] / row["other_cpu_s"], 2)
        print(json.dumps(rows[-1]), file=sys.stderr)
    return rows


def bench_history(repeat: int) -> dict[str, Any]:
    """Part 3: `history` over 1,000 commits with 21 distinct ledgers."""
    repo = OUT / "speed-history-1000"
    history_repo(repo)
    cmd = [sys.executable, "-m", "evidence_gate", "history", "--repo", str(repo), "--branch", "main", "--limit",
           "1000", "--svg", str(OUT / "speed-history.svg")]  # fmt: skip
    floor = [sys.executable, "-c", "import evidence_gate.cli"]
    row = interleaved(repeat, {"history_cpu_s": lambda: cpu_of(cmd), "import_cpu_s": lambda: cpu_of(floor)})
    result = {"commits": 1000, "distinct_ledgers": 21, **row}
    print(json.dumps(result), file=sys.stderr)
    return result


def bench_import(repeat: int) -> dict[str, float]:
    """Part 4: start-up."""
    code = {
        "pass": "pass",
        "import_yaml": "import yaml",
        # The standard library the gate cannot start without: the CLI's parser, paths (pathlib brings urllib.parse
        # and ipaddress), the probe scan's ast, git calls (value classes, typing and hashing no longer need any).
        "import_stdlib": "import yaml, json, subprocess, argparse, pathlib, ast",
        "import_article": "import yaml, json, subprocess",  # what bench/article_freeze_budget.py imports
        "import_cli": "import evidence_gate.cli",
    }
    row = interleaved(repeat, {k: lambda c=c: cpu_of([sys.executable, "-c", c]) for k, c in code.items()})
    print(json.dumps(row), file=sys.stderr)
    return row


def markdown(results: dict[str, Any]) -> str:
    """The tables the README's Speed section quotes (of the parts that ran)."""
    out: list[str] = []
    if "ledgers" in results:
        out += [
            "| ledger (in-process `freeze_ledger.check`, both sides) | bytes | violations | CPU |",
            "|---|---:|---:|---:|",
        ]
        out += [
            f"| {r['case']} | {r['bytes']:,} | {r['violations']} | {r['cpu_s']:.3f} s |" for r in results["ledgers"]
        ]
        out.append("")
    if "check" in results:
        out += ["| `check --no-run`, 10-file PR | row | gate CPU | article CPU | ratio | article on libyaml | ratio | "
                "gate start-up | its ratio |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        out += [
            f"| {r['entries']:,}-entry ledger | `{r['row']}` | {r['gate_cpu_s']:.3f} s | {r['article_cpu_s']:.3f} s | "
            f"{r['ratio']}× | {r['article_libyaml_cpu_s']:.3f} s | {r['ratio_libyaml']}× | "
            f"{r['gate_import_cpu_s']:.3f} s | {r['import_ratio']}× |"
            for r in results["check"]
        ]
        out += [
            f"- {r['entries']:,}-entry ledger, the gate from --other-src: {r['other_cpu_s']:.3f} s, {r['other_ratio']}× "
            f"the article's script; this checkout costs {r['over_other']} of it."
            for r in results["check"]
            if "other_cpu_s" in r
        ]
        out.append("")
    if "history" in results:
        h = results["history"]
        out.append(
            f"`history`, {h['commits']:,} commits, {h['distinct_ledgers']} distinct ledgers: {h['history_cpu_s']:.3f} s "
            f"of CPU (of which start-up {h['import_cpu_s']:.3f} s)."
        )
    if "import" in results:
        i = results["import"]
        out.append(
            f"Start-up: `import evidence_gate.cli` {i['import_cli']:.3f} s, the standard library it needs (with yaml) "
            f"{i['import_stdlib']:.3f} s, the article script's imports (yaml, json, subprocess) "
            f"{i['import_article']:.3f} s, `import yaml` {i['import_yaml']:.3f} s, `pass` {i['pass']:.3f} s of CPU "
            f"(`import evidence_gate.cli` is {i['import_cli'] / i['import_article']:.2f}× the article's imports)."
        )
    return "\n".join(out).strip()


PARTS = ("ledgers", "check", "history", "import")


def main() -> int:
    """Compile the bytecode, build (or reuse) the repositories, measure, print and save."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="fewer ledger sizes (a smoke run)")
    parser.add_argument("--other-src", type=Path, help="also time part 2's gate from this copy of src/")
    parser.add_argument("--parts", default=",".join(PARTS), help=f"a comma-separated subset of {','.join(PARTS)}")
    args = parser.parse_args()
    parts = args.parts.split(",")
    if not set(parts) <= set(PARTS):
        parser.error(f"--parts: choose from {','.join(PARTS)}")
    OUT.mkdir(parents=True, exist_ok=True)
    for src in [ROOT / "src", *([args.other_src] if args.other_src else [])]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(src) / "evidence_gate")], check=True)
    started = time.perf_counter()
    other = args.other_src.resolve() if args.other_src else None
    run: dict[str, Callable[[], Any]] = {
        "ledgers": lambda: bench_ledgers(args.repeat, args.quick),
        "check": lambda: bench_check(args.repeat, other),
        "history": lambda: bench_history(args.repeat),
        "import": lambda: bench_import(args.repeat),
    }
    results: dict[str, Any] = {part: run[part]() for part in PARTS if part in parts}
    load = os.getloadavg()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    results["machine"], results["load"] = machine, [round(x, 1) for x in load]
    name = "speed.json" if len(parts) == len(PARTS) else f"speed-{'-'.join(p for p in PARTS if p in parts)}.json"
    (OUT / name).write_text(json.dumps(results, indent=2) + "\n", "utf-8")
    print(f"bench_speed: median of {args.repeat}; {machine}; load average at the end {load[0]:.1f}; "
          f"{time.perf_counter() - started:.0f} s\n")  # fmt: skip
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
