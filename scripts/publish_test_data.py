"""Rebuild the data the `mode: publish` tests read, from the npm packages it was extracted from.

    npm pack @octokit/openapi@23.0.2 @octokit/webhooks-examples@7.6.1
    python scripts/publish_test_data.py octokit-openapi-23.0.2.tgz octokit-webhooks-examples-7.6.1.tgz tests/data

writes `github-api-publish.json` (the response schemas of listing a run's artifacts and getting a pull request,
from GitHub's REST API description) and `workflow_run.completed.json` (a real `workflow_run` webhook payload, the
first `completed` example that names a pull request). Both are extracted unchanged except for a `source` header.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from github_api_data import package_json  # the same tarball reader; run from scripts/ as a script

OPERATIONS = {
    "list_workflow_run_artifacts": ("/repos/{owner}/{repo}/actions/runs/{run_id}/artifacts", "200"),
    "get_pull_request": ("/repos/{owner}/{repo}/pulls/{pull_number}", "200"),
}


def schemas(openapi_tgz: Path) -> dict[str, Any]:
    """The response schemas the fake GitHub validates its publish-mode answers against."""
    spec = package_json(openapi_tgz, "package/generated/api.github.com.deref.json")
    out: dict[str, Any] = {
        "source": "GitHub REST API description, as packaged in the npm package @octokit/openapi "
        "23.0.2 (generated/api.github.com.deref.json). Extracted unchanged."
    }
    for key, (path, status) in OPERATIONS.items():
        schema = spec["paths"][path]["get"]["responses"][status]["content"]["application/json"]["schema"]
        out[key] = {"method": "GET", "path": path, f"response_{status}": schema}
    return out


def workflow_run(examples_tgz: Path) -> dict[str, Any]:
    """The first `workflow_run` `completed` example whose run names a pull request."""
    for group in package_json(examples_tgz, "package/api.github.com/index.json"):
        if group["name"] != "workflow_run":
            continue
        for payload in group["examples"]:
            if payload.get("action") == "completed" and payload["workflow_run"]["pull_requests"]:
                return dict(payload)
    raise SystemExit("no completed workflow_run example with a pull request")


def main(argv: list[str]) -> int:
    """Write both files into the output folder."""
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    out = Path(argv[2])
    out.mkdir(parents=True, exist_ok=True)
    (out / "github-api-publish.json").write_text(json.dumps(schemas(Path(argv[0])), indent=1) + "\n", "utf-8")
    payload = workflow_run(Path(argv[1]))
    (out / "workflow_run.completed.json").write_text(json.dumps(payload, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
