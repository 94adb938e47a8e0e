"""The image's build step (`python3 -m evidence_gate.sealed.prebuild`): Hypothesis' Unicode tables, made once by a
harness-only process from a runner built as a sealed run builds it, and stored where every run finds them."""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from evidence_gate.sealed import hypothesis_tables, runner_env


def prebuild(root: Path = hypothesis_tables.SYSTEM_ROOT) -> int:
    """Build the image's entry: 0, or 1 with the reason."""
    with tempfile.TemporaryDirectory() as tmp:
        runner = runner_env.build(Path(tmp) / "runner")
        version = dict(runner.distributions).get("hypothesis", "")
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
        built = Path(tempfile.mkdtemp(dir=root, prefix=".building-"))
        failed = hypothesis_tables.produce(runner.sys_path, built)
        if failed:
            print(failed, file=sys.stderr)
            return 1
        for extra in built.iterdir():
            if extra.name != hypothesis_tables.TABLES:
                shutil.rmtree(extra) if extra.is_dir() else extra.unlink()
        hypothesis_tables.write_manifest(built)
        for path in [built, *built.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        hypothesis_tables.store(built, root / hypothesis_tables.cache_key(version))
    print(f"Hypothesis tables in {root / hypothesis_tables.cache_key(version)}")
    return 0


if __name__ == "__main__":
    sys.exit(prebuild())
