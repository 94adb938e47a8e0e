"""Run the `harness-probed` lane over a real project's history: how many honest commits would it flag?

    python bench/probe_history.py GIT_DIR [--pythonpath src] [--limit 400] [--rev HEAD]
                                  [--lock-hypothesis] [--lock GLOB]

Each first-parent commit is judged against its first parent exactly as the gate would (the lane's own `check`,
with `properties.pythonpath` as given). Nothing is locked unless asked (then the lane keeps its rule by place):
`--lock GLOB` (repeatable) names property files by glob, `--lock-hypothesis` every test file (`test_*.py`,
`*_test.py`) that imports Hypothesis on the parent commit (its `@given` tests and state machines); the locked set is
built from those files as the gate builds it from `SCORE_PROPERTIES` (each file, the conftest.py and `__init__.py`
files above it, the modules outside pythonpath it imports). Commits that touch no `.py` file under the pythonpath
are counted but cost nothing. A commit whose parent has none of the pythonpath folders (the project before it moved
into `src/`) is not judged: the gate reads the configuration from the baseline, and no baseline configuration would
name a folder it lacks. Prints one line per flagged commit, why the lane kept its rule by place where files were
locked, and a summary line with the time per judged commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import posixpath
import re
import sys
import time
from collections import Counter
from pathlib import Path

from evidence_gate.config import Config, ProbesConfig, PropertiesConfig
from evidence_gate.git import Repo
from evidence_gate.lanes import harness_probes, locked_evidence
from evidence_gate.lanes.locked_paths import glob_matches
from evidence_gate.lanes.score_properties import PropertySpec

HYPOTHESIS = re.compile(rb"^[ \t]*(?:from|import)[ \t]+hypothesis\b", re.MULTILINE)


def locked_files(repo: Repo, commit: str, config: Config, globs: list[str], hypothesis: bool) -> frozenset[str]:
    """The locked set a configuration naming these property files would have on `commit` (empty when none)."""
    files = set()
    if globs:
        listed = repo.ls_tree(commit, recursive=True)
        files |= {t.path for t in listed if t.path.endswith(".py") and any(glob_matches(g, t.path) for g in globs)}
    if hypothesis:
        spelled = repo.grep_files(commit, ["hypothesis"])
        sources = repo.read_blobs(f"{commit}:{p}" for p in spelled if harness_probes.is_test_file(p))
        files |= {k.split(":", 1)[1] for k, data in sources.items() if data and HYPOTHESIS.search(data)}
    files -= {p for p in files if p.endswith("conftest.py")}
    if not files:
        return frozenset()
    specs = tuple(PropertySpec(f"{p}::test") for p in sorted(files))
    return locked_evidence.locked_set(repo, commit, config, specs).existing


def main(argv: list[str] | None = None) -> int:
    """Scan the history and print what the lane flags."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("--pythonpath", action="append", default=None)
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--lock", action="append", default=[], help="a glob of locked property files")
    parser.add_argument("--lock-hypothesis", action="store_true", help="lock the test files that import Hypothesis")
    parser.add_argument(
        "--learn",
        action="store_true",
        help="after each flagged commit, allow what it flagged (path: name), as a reviewer would",
    )
    args = parser.parse_args(argv)
    repo = Repo(args.git_dir)
    config = Config(properties=PropertiesConfig(pythonpath=tuple(args.pythonpath or ["src"])))
    # Oldest first, so that --learn allows a probe from the commit that introduced it onwards.
    commits = repo.out("rev-list", "--first-parent", "--reverse", f"--max-count={args.limit}", args.rev).split()
    started = time.monotonic()
    flagged = touched = unconfigured = narrowed = 0
    kept: Counter[str] = Counter()  # why a commit with locked files kept the rule by place
    folders = [p for p in config.properties.pythonpath if p.strip("/.")]
    # The lane's own reading of the folders ("." is the whole repository, "src/" is "src").
    roots = tuple("" if (n := posixpath.normpath(p).strip("/")) == "." else n for p in config.properties.pythonpath)
    for commit in commits:
        parents = repo.parents(commit)
        if not parents:
            continue
        diff = repo.diff_tree(parents[0], commit)
        if not any(harness_probes.in_pythonpath(e.path, roots) and e.path.endswith(".py") for e in diff):
            continue
        if folders and all(repo.tree_oid(parents[0], f.strip("/")) is None for f in folders):
            unconfigured += 1
            continue
        touched += 1
        locked = locked_files(repo, parents[0], config, args.lock, args.lock_hypothesis)
        lane = harness_probes.check(repo, parents[0], commit, config, diff, locked)
        rule = str(lane.receipt.get("code_under_test", ""))
        narrowed += rule.startswith("what")
        if locked and rule.startswith("every file"):  # (a gate before this rule has no such receipt entry)
            kept[re.sub(r" \(line \d+\)", "", rule)] += 1
        if lane.violations and args.learn:
            allow = {*config.probes.allow, *(f"{v.path}: {v.message.split('`')[1]}" for v in lane.violations)}
            config = dataclasses.replace(config, probes=ProbesConfig(tuple(sorted(allow))))
        if lane.violations:
            flagged += 1
            subject = repo.out("log", "-1", "--format=%ad %s", "--date=short", commit)
            print(f"{commit[:10]} {subject}")
            for v in lane.violations:
                print(f"    {v.path}:{v.line}: {v.message.split(';', 1)[0]}")
    seconds = time.monotonic() - started
    for rule, count in kept.most_common():
        print(f"  {count} x {rule}")
    print(
        f"{len(commits)} first-parent commits, {touched} touch Python under {list(config.properties.pythonpath)}, "
        f"{flagged} flagged{' (each probe allowed once flagged)' if args.learn else ''}, "
        f"{unconfigured} not judged (parent has no {folders}), {narrowed} judged on what the locked files import; "
        f"{seconds:.1f} s"
        f" ({1000 * seconds / max(touched, 1):.0f} ms per judged commit)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
