"""The contributors' .pre-commit-config.yaml parses, names the hooks CONTRIBUTING.md promises, pins release tags,
and every hook's file pattern still matches a file of this repository (a rename would leave it checking nothing)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / ".pre-commit-config.yaml"
EXPECTED = {
    "https://github.com/astral-sh/ruff-pre-commit": {"ruff-check", "ruff-format"},
    "https://github.com/pre-commit/mirrors-mypy": {"mypy"},
    "https://github.com/python-jsonschema/check-jsonschema": {
        "check-github-workflows",
        "check-github-actions",
        "check-dependabot",
        "check-metaschema",
        "check-jsonschema",
    },
    "https://github.com/zizmorcore/zizmor-pre-commit": {"zizmor"},
}
TAG = re.compile(r"v?\d+\.\d+\.\d+")


def _repos() -> list[dict[str, Any]]:
    data = yaml.safe_load(CONFIG.read_text("utf-8"))
    assert isinstance(data, dict) and isinstance(data.get("repos"), list), data
    return data["repos"]


def _hooks() -> list[dict[str, Any]]:
    return [hook for repo in _repos() for hook in repo["hooks"]]


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    return [p for p in out.decode().split("\0") if p]


def test_config_names_the_promised_hooks_at_release_tags() -> None:
    """ruff (check and format), mypy, check-jsonschema and zizmor, each repository pinned to a release tag."""
    found = {repo["repo"]: {h["id"] for h in repo["hooks"]} for repo in _repos()}
    assert found == EXPECTED
    for repo in _repos():
        assert TAG.fullmatch(str(repo["rev"])), (repo["repo"], repo["rev"])


def test_mypy_hook_is_strict_on_the_whole_package() -> None:
    """mypy runs --strict over src/evidence_gate as pyproject configures it, with the typed dependencies it needs."""
    [mypy] = [h for h in _hooks() if h["id"] == "mypy"]
    assert "--strict" in mypy["args"] and mypy["pass_filenames"] is False
    deps = {re.split(r"[<>=]", d, maxsplit=1)[0].lower() for d in mypy["additional_dependencies"]}
    assert {"pyyaml", "types-pyyaml", "jsonschema", "types-jsonschema", "pytest", "hypothesis"} <= deps


def test_every_file_pattern_matches_a_tracked_file() -> None:
    """Each hook restricted by `files` still has something to check, and each schema it names exists."""
    tracked = _tracked()
    for hook in _hooks():
        if "files" in hook:
            pattern = re.compile(hook["files"])
            assert any(pattern.search(p) for p in tracked), (hook["id"], hook.get("name"), hook["files"])
        args = hook.get("args", [])
        if "--schemafile" in args:
            assert (ROOT / args[args.index("--schemafile") + 1]).is_file(), args


def _check_jsonschema() -> str:
    tool = shutil.which("check-jsonschema", path=str(Path(sys.executable).parent))
    if tool is None:
        pytest.fail("check-jsonschema is not installed; ./dev test installs it with the [test] extra")
    return tool


def test_the_data_hooks_pass_on_this_repository() -> None:
    """The repository's own data validates against the schemas its hooks name (what the hooks would run)."""
    tracked = _tracked()
    hooks = [h for h in _hooks() if h["id"] == "check-jsonschema"]
    schemas = {Path(h["args"][h["args"].index("--schemafile") + 1]).name for h in hooks}
    assert schemas == {"config.schema.json", "freeze-yaml.schema.json", "digests.schema.json", "receipt.schema.json"}
    for hook in hooks:
        files = [p for p in tracked if re.search(hook["files"], p)]
        proc = subprocess.run(
            [_check_jsonschema(), *hook["args"], *files], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert proc.returncode == 0, (hook["name"], proc.stdout + proc.stderr)


def test_a_data_hook_rejects_a_broken_file(tmp_path: Path) -> None:
    """The configuration hook is live: a `version: 2` configuration fails it."""
    [hook] = [h for h in _hooks() if h["id"] == "check-jsonschema" and "config.schema.json" in " ".join(h["args"])]
    broken = tmp_path / ".evidence-gate.yml"
    broken.write_text((ROOT / ".evidence-gate.yml").read_text("utf-8").replace("version: 1", "version: 2"), "utf-8")
    proc = subprocess.run([_check_jsonschema(), *hook["args"], str(broken)], cwd=ROOT, capture_output=True, check=False)
    assert proc.returncode != 0
