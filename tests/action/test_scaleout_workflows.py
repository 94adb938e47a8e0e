"""The documented matrix workflow and fork-publisher pair: schema-valid, zizmor-clean, and wired as the modes expect."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml
from test_action_metadata import _check_jsonschema, _zizmor

from evidence_gate.report import attestation
from support import doc_pages

ROOT = Path(__file__).resolve().parents[2]


def _snippets(heading: str) -> list[str]:
    """The ```yaml blocks of the docs section titled `heading`, on whichever page holds it."""
    return doc_pages.yaml_blocks(doc_pages.holding(heading))


def _checked(tmp_path: Path, name: str, snippet: str) -> dict[str, Any]:
    """Schema-check and zizmor one workflow; its only finding may be the `@v1` tag of the gate."""
    workflow = tmp_path / ".github" / "workflows" / name
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(snippet, encoding="utf-8")
    proc = _check_jsonschema("vendor.github-workflows", workflow)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _, findings = _zizmor(workflow)
    assert {f.get("ident") for f in findings} <= {"unpinned-uses"}, findings
    assert all("OWNER/evidence-gate@v1" in json.dumps(f) for f in findings)
    data = yaml.safe_load(snippet)
    assert isinstance(data, dict)
    return data


def test_readme_matrix_workflow_shards_and_merges(tmp_path: Path) -> None:
    """K/N follows the matrix, fail-fast is off, and the merge job runs after failed shards with checks: write."""
    (snippet,) = _snippets("Shards over a matrix")
    jobs = _checked(tmp_path, "evidence-gate.yml", snippet)["jobs"]
    shard, merge = jobs["shard"], jobs["gate"]
    matrix = shard["strategy"]["matrix"]["shard"]
    assert shard["strategy"]["fail-fast"] is False
    gate_step = shard["steps"][-1]
    assert gate_step["with"]["shard"] == "${{ matrix.shard }}/" + str(len(matrix))
    assert matrix == list(range(1, len(matrix) + 1))
    assert shard["permissions"] == {"contents": "read"}  # a shard posts no check run
    assert merge["needs"] == "shard" and merge["if"] == "${{ always() }}"
    assert merge["permissions"] == {"checks": "write"}
    assert merge["steps"][-1]["with"] == {"mode": "merge"}


def test_readme_publisher_pair_is_wired_to_the_gate_workflow(tmp_path: Path) -> None:
    """The publisher runs on workflow_run of the gate workflow's name, for pull requests, with least privilege."""
    gate_snippet, publish_snippet = _snippets("Pull requests from forks")
    gate_wf = _checked(tmp_path, "evidence-gate.yml", gate_snippet)
    publish_wf = _checked(tmp_path, "evidence-gate-publish.yml", publish_snippet)
    trigger = publish_wf[True]["workflow_run"]  # PyYAML reads the key `on` as True
    assert trigger == {"workflows": [gate_wf["name"]], "types": ["completed"]}
    (job,) = publish_wf["jobs"].values()
    assert job["if"] == "${{ github.event.workflow_run.event == 'pull_request' }}"
    assert job["permissions"] == {"actions": "read", "checks": "write", "contents": "read", "pull-requests": "read"}
    checkout, gate_step = job["steps"]
    assert checkout["with"] == {"fetch-depth": 0, "persist-credentials": False} and "ref" not in checkout["with"]
    assert gate_step["with"] == {"mode": "publish"}
    assert "pull_request" in gate_wf[True]


def test_the_publisher_workflow_without_its_ignore_comment_is_flagged(tmp_path: Path) -> None:
    """The zizmor check is live here: without the justified inline ignore, `workflow_run` is reported."""
    _, publish_snippet = _snippets("Pull requests from forks")
    bare = publish_snippet.replace("  # zizmor: ignore[dangerous-triggers]", "  # ")
    workflow = tmp_path / ".github" / "workflows" / "p.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(bare, encoding="utf-8")
    _, findings = _zizmor(workflow)
    assert "dangerous-triggers" in {f.get("ident") for f in findings}


def test_readme_upload_and_attest_workflows_are_valid(tmp_path: Path) -> None:
    """The docs' code-scanning and attestation workflows pass the workflow schema and zizmor (only the gate's
    `@v1` tag is reported), pin both actions by full commit sha, and feed them the outputs the action sets."""
    (upload,) = _snippets("Upload to code scanning")
    job = _checked(tmp_path, "evidence-gate.yml", upload)["jobs"]["gate"]
    assert job["permissions"]["security-events"] == "write"
    step = job["steps"][-1]
    assert re.fullmatch(r"github/codeql-action/upload-sarif@[0-9a-f]{40}", step["uses"])
    assert step["with"]["sarif_file"] == "${{ steps.gate.outputs.sarif-path }}" and "always()" in step["if"]
    (attest,) = _snippets("Attestation of the receipt")
    job = _checked(tmp_path, "evidence-gate-publish.yml", attest)["jobs"]["publish"]
    assert job["permissions"]["id-token"] == job["permissions"]["attestations"] == "write"
    gate_step, attest_step = job["steps"][-2:]
    assert gate_step["with"] == {"mode": "publish"}
    assert re.fullmatch(r"actions/attest@[0-9a-f]{40}", attest_step["uses"])
    declared = set(yaml.safe_load((ROOT / "action.yml").read_text("utf-8"))["outputs"])
    for name, value in attest_step["with"].items():
        assert value == f"${{{{ steps.gate.outputs.attestation-{name} }}}}" and f"attestation-{name}" in declared
    assert attestation.PREDICATE_TYPE in doc_pages.holding("Attestation of the receipt")
