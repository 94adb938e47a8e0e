"""Run the `harness-probed` lane over a real project's history: how many honest commits would it flag?

    python bench/probe_history.py GIT_DIR [--pythonpath src] [--limit 400] [--rev HEAD]

Each first-parent commit is judged against its first parent exactly as the gate would (the lane's own `check`,
with `properties.pythonpath` as given and nothing locked); commits that touch no `.py` file under the pythonpath
are counted but cost nothing. A commit whose parent has none of the pythonpath folders (the project before it moved
into `src/`) is not judged: the gate reads the configuration from the baseline, and no baseline configuration would
name a folder it lacks. Prints one line per flagged commit and a summary line with the time per judged commit.
"""

from __future__ import annotations

import argparse
import dataclasses
import posixpath
import sys
import time
from pathlib import Path

from evidence_gate.config import Config, ProbesConfig, PropertiesConfig
from evidence_gate.git import Repo
from evidence_gate.lanes import harness_probes


def main(argv: list[str] | None = None) -> int:
    """Scan the history and print what the lane flags."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path)
    parser.add_argument("--pythonpath", action="append", default=None)
    parser.add_argument("--limit", type=int, default=400)
    parser.add_argument("--rev", default="HEAD")
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
    flagged = touched = unconfigured = 0
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
        lane = harness_probes.check(repo, parents[0], commit, config, diff, frozenset())
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
    print(
        f"{len(commits)} first-parent commits, {touched} touch Python under {list(config.properties.pythonpath)}, "
        f"{flagged} flagged{' (each probe allowed once flagged)' if args.learn else ''}, "
        f"{unconfigured} not judged (parent has no {folders}); {seconds:.1f} s"
        f" ({1000 * seconds / max(touched, 1):.0f} ms per judged commit)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
