"""What bounded contexts cost: working out which contexts a pull request touches, against one static gate run.

    .venv/bin/python bench/bench_contexts.py [--repeat 7]

Builds the three-context monorepo of the tests (tests/support/context_repo.py: alpha, beta and gamma, each with its
own properties, list and code; alpha and beta lock a shared folder) and two pull requests: one that changes beta's
code (beta is judged) and one that changes only a root README (no context owns it, so every context is judged).
In one run, interleaved, median of --repeat, CPU time of this process (`time.process_time`, plus the git children
it waited for): the plan alone (`contexts._plan`: the diff, each context's ownership and locked lane), against the
static lanes of one context (`gate.evaluate` with `run=False` for beta), the floor the plan is quoted against. A
bench, not a test: it asserts nothing about time.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import replace
from datetime import date
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "src"))

from evidence_gate import contexts, gate  # noqa: E402
from support.context_repo import BROKEN, monorepo  # noqa: E402


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(call: Callable[[], object]) -> float:
    start = _cpu()
    call()
    return _cpu() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="evidence-gate-bench-contexts-") as tmp:
        repo = monorepo(Path(tmp) / "mono")
        base = repo.git("rev-parse", "HEAD").strip()
        beta = repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
        repo.git("checkout", "-q", "-B", "docs", base)
        docs = repo.commit("docs", {"README.md": "monorepo, documented\n"})
        opts = gate.CheckOptions(
            repo=repo.path, base=base, head=beta, author="agent-x", run=False, today=date(2026, 9, 20)
        )
        cases = {
            "plan, a PR changing beta's code": lambda: contexts._plan(opts, False),
            "plan, a PR changing only a root README": lambda: contexts._plan(replace(opts, head=docs), False),
            "floor: static lanes of beta (gate.evaluate, run=False)": lambda: gate.evaluate(
                replace(opts, context="beta"), Path(tmp) / "receipt.json"
            ),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.repeat):
            for name, call in cases.items():
                times[name].append(_timed(call))
    floor = statistics.median(times["floor: static lanes of beta (gate.evaluate, run=False)"])
    print(f"three contexts, median of {args.repeat} (CPU of this process and its git children)")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:58} {median * 1000:7.1f} ms  ({median / floor:.2f}x the floor)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
