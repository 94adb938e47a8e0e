"""What recording patch coverage costs: the same `evidence-gate check` with and without the line recorder.

    .venv/bin/python bench/bench_patch_coverage.py [--seeds 4] [--trials 200] [--repeat 3]

Builds bench_property_lane's repository (three Hypothesis properties over `allocate`) with two patches: `hot`
rewrites `src/alloc.py`, the function every example calls (each of its lines is traced on every example: the worst
case), and `cold` adds `src/report.py`, which no property imports (only the one-look-up-per-call global tracer
runs). Each is judged by the real CLI in a subprocess (`jobs: 1`, no fresh seeds), once as shipped and once with
`patch_coverage.changed_code` answering no changed file, so the head's workers install no recorder — the same run
otherwise. Reported: the median of --repeat (interleaved) of the CPU time (user + system) of the gate and every
worker it reaped, and of the head worker's wall time from the receipt, and their ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from bench_property_lane import ALLOC, PROPERTIES  # noqa: E402

from support.repo_builder import GitRepo  # noqa: E402

HOT = ALLOC.replace("whole = sum(weights)", "whole = sum(w for w in weights)")
COLD = "def render(rows):\n    return '\\n'.join(str(r) for r in rows)\n"
GATE = """
import sys
from evidence_gate import cli, patch_coverage
if sys.argv[1] == "off":
    patch_coverage.changed_code = lambda *args, **kwargs: []
sys.exit(cli.main(sys.argv[2:]))
"""


def build(path: Path, seeds: list[int], trials: int, patch: dict[str, str | bytes | None]) -> GitRepo:
    """The repository: the baseline, then one agent patch."""
    repo = GitRepo(path)
    config = {
        "version": 1,
        "properties": {"seeds": seeds, "fresh_seeds": 0, "trials": trials, "jobs": 1, "pythonpath": ["src"]},
    }
    repo.commit(
        "baseline",
        {
            ".evidence-gate.yml": json.dumps(config),
            "SCORE_PROPERTIES": "properties/test_alloc.py\n",
            "properties/test_alloc.py": PROPERTIES,
            "src/alloc.py": ALLOC,
        },
    )
    repo.branch("patch")
    repo.commit("patch", patch)
    return repo


def run_gate(repo: GitRepo, receipt: Path, recorder: str) -> tuple[float, float, dict[str, object]]:
    """CPU seconds of the gate and its workers, the head worker's wall seconds, and the receipt."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    args = ["check", "--repo", str(repo.path), "--base", "main", "--head", "HEAD", "--author", "agent-bench"]
    proc = subprocess.run(
        [sys.executable, "-c", GATE, recorder, *args, "--receipt", str(receipt)], capture_output=True, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"gate failed:\n{proc.stdout.decode()}{proc.stderr.decode()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    data = json.loads(receipt.read_text())
    head = sum(w["seconds"] for w in data["sealed"]["workers"] if str(w["name"]).startswith("head-"))
    return cpu, head, data


def main() -> int:
    """Run the benchmark and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    seeds = [1101 + i for i in range(args.seeds)]
    patches: dict[str, dict[str, str | bytes | None]] = {"hot": {"src/alloc.py": HOT}, "cold": {"src/report.py": COLD}}
    print(f"cores: {os.cpu_count()}  load: {os.getloadavg()[0]:.1f}  seeds: {len(seeds)}  trials: {args.trials}")
    with tempfile.TemporaryDirectory(prefix="bench-patch-coverage-") as tmp:
        for name, patch in patches.items():
            repo = build(Path(tmp) / name, seeds, args.trials, patch)
            runs: dict[str, list[tuple[float, float]]] = {"on": [], "off": []}
            coverage: object = None
            for i in range(args.repeat):
                for recorder in ("off", "on"):
                    cpu, head, data = run_gate(repo, Path(tmp) / f"{name}-{recorder}-{i}.json", recorder)
                    runs[recorder].append((cpu, head))
                    if recorder == "on":
                        coverage = data.get("patch_coverage")
            on_cpu, off_cpu = (statistics.median(c for c, _ in runs[k]) for k in ("on", "off"))
            on_head, off_head = (statistics.median(h for _, h in runs[k]) for k in ("on", "off"))
            print(f"{name}: {json.dumps(coverage)[:160]}")
            print(
                f"  CPU of the whole check: recorder {on_cpu:.2f}s, none {off_cpu:.2f}s, ratio {on_cpu / off_cpu:.2f}x"
            )
            print(
                f"  head worker wall time:  recorder {on_head:.2f}s, none {off_head:.2f}s, "
                f"ratio {on_head / off_head:.2f}x"
            )
    print(f"load after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
