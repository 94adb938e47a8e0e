"""The shell command that re-runs one (property, seed) locally the way the sealed run ran it.

The sealed plugin (`pytest_plugin.SealedPlugin._apply_seed`) gives a Hypothesis test the seed itself and settings
`max_examples=trials, derandomize=False, database=None, deadline=None, phases=(explicit, generate, target, shrink)`.
Locally the same comes from Hypothesis' own pytest options: `--hypothesis-seed=N` (which a `derandomize` profile
would override, so the command registers and loads a profile with exactly those settings; the explain phase only
adds comments, and pytest's cache does not change a single node's result). A test that is not a Hypothesis test gets `PROPERTY_SEED` and `PROPERTY_TRIALS`, as in the
sealed run. `properties.pythonpath` goes into `PYTHONPATH`, as the sealed run puts it on `sys.path`, and the head's
workers' `PYTHONHASHSEED` (drawn per run, in the receipt's `sealed.workers`) into `PYTHONHASHSEED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from evidence_gate.receipt.types import SeedLedgerJson

PROFILE = "gate"
# `python -c`'s script: registers the sealed run's settings as a profile, then runs pytest. Each line fits 80
# columns, so the whole command is one screen in a terminal and in a check run's code block.
_RUNNER = """import sys, pytest, hypothesis as h
h.settings.register_profile("{profile}", max_examples={trials}, database=None,
    deadline=None, derandomize=False, phases=set(h.Phase) - {{h.Phase.explain}})
sys.exit(pytest.main(sys.argv[1:]))"""


def is_hypothesis(ledger: SeedLedgerJson) -> bool:
    """Whether the sealed run counted Hypothesis examples for this property (only Hypothesis tests have counts)."""
    examples = ledger.get("examples")
    return isinstance(examples, dict) and bool(examples)


def command(
    node: str,
    seed: int,
    trials: int,
    *,
    hypothesis: bool,
    pythonpath: Sequence[str] = (),
    hash_seed: int | None = None,
) -> str:
    """A copy-paste POSIX shell command, run from the repository root, that reproduces `node` on `seed`.

    For a Hypothesis test it is `python -c` with a four-line script that registers the profile: six lines, each
    within 80 columns but the node id's and, by the length of its environment (the hash seed, `PYTHONPATH`), the
    first."""
    import shlex  # noqa: PLC0415 - only a failing seed is reproduced

    env = [] if hash_seed is None else [f"PYTHONHASHSEED={int(hash_seed)}"]
    paths = [p for p in pythonpath if p and p != "."]
    if paths:
        env.append("PYTHONPATH=" + shlex.quote(":".join(paths)))
    if not hypothesis:
        env += [f"PROPERTY_SEED={int(seed)}", f"PROPERTY_TRIALS={int(trials)}"]
        return " ".join([*env, "python -m pytest", shlex.quote(node), "-p no:cacheprovider"])
    # hypothesis is imported before pytest starts, so pytest's assertion-rewrite warning about it is noise
    lines = [
        " ".join([*env, "python -c", shlex.quote(_RUNNER.format(profile=PROFILE, trials=int(trials)))])
        + f" --hypothesis-seed={int(seed)}",
        f"  --hypothesis-profile={PROFILE} -W ignore::pytest.PytestAssertRewriteWarning",
        "  " + shlex.quote(node),
    ]
    return " \\\n".join(lines)


def for_ledger(receipt: Mapping[str, Any], ledger: SeedLedgerJson, seed: int) -> str:
    """The command for one ledger's seed, with the trials and pythonpath the receipt records."""
    properties = receipt.get("properties") or {}
    effective = ((receipt.get("config") or {}).get("effective") or {}).get("properties") or {}
    trials = properties.get("trials", effective.get("trials", 200))
    pythonpath = effective.get("pythonpath") or []
    return command(
        str(ledger.get("property_id")),
        seed,
        int(trials),
        hypothesis=is_hypothesis(ledger),
        pythonpath=[str(p) for p in pythonpath if isinstance(p, str)],
        hash_seed=head_hash_seed(receipt),
    )


def head_hash_seed(receipt: Mapping[str, Any]) -> int | None:
    """The PYTHONHASHSEED the head's property workers ran with, when the receipt records one."""
    workers = (receipt.get("sealed") or {}).get("workers") or []
    for worker in workers if isinstance(workers, list) else []:
        seed = worker.get("hash_seed") if isinstance(worker, Mapping) else None
        if str(worker.get("name", "")).startswith("head-") and type(seed) is int and 0 < seed < 1 << 32:
            return seed
    return None
