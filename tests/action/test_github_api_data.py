"""scripts/github_api_data.py rebuilds shared/github-api from the npm tarballs with the same file names."""

from __future__ import annotations

import io
import json
import runpy
import tarfile
from pathlib import Path
from typing import Any

from support import shared_data

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "github_api_data.py"


def _tgz(path: Path, name: str, value: Any) -> Path:
    data = json.dumps(value).encode()
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def _op(request: Any, status: str, response: Any) -> dict[str, Any]:
    return {
        "requestBody": {"content": {"application/json": {"schema": request}}},
        "responses": {status: {"content": {"application/json": {"schema": response}}}},
    }


def test_rebuilds_names_and_schemas(tmp_path: Path) -> None:
    """Events are numbered per action in package order; the four check-run schemas are copied unchanged."""
    shared = json.loads((shared_data.GITHUB_API / "check-runs.json").read_text("utf-8"))
    spec = {
        "paths": {
            "/repos/{owner}/{repo}/check-runs": {
                "post": _op(shared["create_check_run"]["request"], "201", shared["create_check_run"]["response_201"])
            },
            "/repos/{owner}/{repo}/check-runs/{check_run_id}": {
                "patch": _op(shared["update_check_run"]["request"], "200", shared["update_check_run"]["response_200"])
            },
        }
    }
    examples = [
        {
            "name": "pull_request",
            "examples": [{"action": "opened", "n": 1}, {"action": "closed"}, {"action": "opened", "n": 2}],
        },
        {"name": "push", "examples": [{"ref": "refs/heads/main"}]},
        {"name": "issues", "examples": [{"action": "opened"}]},
    ]
    openapi = _tgz(tmp_path / "o.tgz", "package/generated/api.github.com.deref.json", spec)
    hooks = _tgz(tmp_path / "w.tgz", "package/api.github.com/index.json", examples)
    module = runpy.run_path(str(SCRIPT))
    assert module["main"]([str(openapi), str(hooks), str(tmp_path / "out")]) == 0
    names = sorted(p.name for p in (tmp_path / "out" / "events").iterdir())
    assert names == ["pull_request.opened.1.json", "pull_request.opened.2.json", "push.default.1.json"]
    assert json.loads((tmp_path / "out" / "events" / "pull_request.opened.2.json").read_text())["n"] == 2
    rebuilt = json.loads((tmp_path / "out" / "check-runs.json").read_text("utf-8"))
    assert rebuilt == shared
