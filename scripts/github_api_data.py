"""Rebuild the tests' GitHub API reference data from the npm packages it was extracted from.

The test suite reads GitHub's check-run schemas and real webhook payloads from `../shared/github-api/` (laid beside
the checkout on the project's machines). Elsewhere, e.g. on GitHub-hosted CI, this script recreates that folder:

    npm pack @octokit/openapi@23.0.2 @octokit/webhooks-examples@7.6.1
    python scripts/github_api_data.py octokit-openapi-23.0.2.tgz octokit-webhooks-examples-7.6.1.tgz OUT/github-api

then point the tests at it with EVIDENCE_GATE_SHARED=OUT.
"""

from __future__ import annotations

import json
import sys
import tarfile
from collections import Counter
from pathlib import Path
from typing import Any

EVENTS = ("pull_request", "merge_group", "push")
ACTIONS = {"pull_request": ("opened", "reopened", "synchronize"), "merge_group": ("checks_requested",), "push": (None,)}


def package_json(tgz: Path, name: str) -> Any:
    """The JSON file `name` inside an npm package tarball."""
    with tarfile.open(tgz) as archive:
        handle = archive.extractfile(name)
        if handle is None:
            raise SystemExit(f"{tgz} has no file {name}")
        return json.load(handle)


def check_runs(openapi_tgz: Path) -> dict[str, Any]:
    """The request and response schemas of creating and updating a check run."""
    spec = package_json(openapi_tgz, "package/generated/api.github.com.deref.json")
    create = spec["paths"]["/repos/{owner}/{repo}/check-runs"]["post"]
    update = spec["paths"]["/repos/{owner}/{repo}/check-runs/{check_run_id}"]["patch"]

    def body(op: dict[str, Any], key: str) -> Any:
        node = op["requestBody"] if key == "request" else op["responses"][key]
        return node["content"]["application/json"]["schema"]

    return {
        "source": "GitHub REST API description, as packaged in the npm package @octokit/openapi 23.0.2 "
        "(generated/api.github.com.deref.json). Extracted unchanged except for this header.",
        "create_check_run": {
            "method": "POST",
            "path": "/repos/{owner}/{repo}/check-runs",
            "request": body(create, "request"),
            "response_201": body(create, "201"),
        },
        "update_check_run": {
            "method": "PATCH",
            "path": "/repos/{owner}/{repo}/check-runs/{check_run_id}",
            "request": body(update, "request"),
            "response_200": body(update, "200"),
        },
    }


def events(examples_tgz: Path) -> dict[str, Any]:
    """Payload files named `EVENT.ACTION.N.json` (`default` for events without an action)."""
    groups = package_json(examples_tgz, "package/api.github.com/index.json")
    out: dict[str, Any] = {}
    seen: Counter[str] = Counter()
    for group in groups:
        if group["name"] not in EVENTS:
            continue
        for payload in group["examples"]:
            action = payload.get("action")
            if action not in ACTIONS[group["name"]]:
                continue
            stem = f"{group['name']}.{action or 'default'}"
            seen[stem] += 1
            out[f"{stem}.{seen[stem]}.json"] = payload
    return out


def main(argv: list[str]) -> int:
    """Write check-runs.json and events/ into the output folder."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    openapi, examples, out = Path(argv[0]), Path(argv[1]), Path(argv[2])
    (out / "events").mkdir(parents=True, exist_ok=True)
    (out / "check-runs.json").write_text(json.dumps(check_runs(openapi), indent=1) + "\n", "utf-8")
    for name, payload in events(examples).items():
        (out / "events" / name).write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
