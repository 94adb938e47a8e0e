"""action.yml and the project's workflows: schema-valid, zizmor-clean, and documented from one source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import doc_pages

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
INPUTS = {
    "github-token": "${{ github.token }}",
    "check-name": "evidence-gate",
    "run-properties": "true",
    "upload-artifact": "true",
    "artifact-name": "evidence-gate-receipt",
    "receipt-path": "receipt.json",
    "today": "",
    "working-directory": ".",
    "max-annotations": "200",
    "job-summary": "true",
    "fail-on": "failure",
    "unsafe-run-pr-code-with-write-token": "false",
    "mode": "gate",
    "shard": "",
}
OUTPUTS = [
    "decision",
    "row",
    "ok",
    "conclusion",
    "title",
    "receipt-path",
    "check-run-id",
    "check-run-url",
    "artifact-id",
    "findings",
    "finding-counts",
    "sarif-path",
    "attestation-path",
    "attestation-subject-name",
    "attestation-subject-digest",
    "attestation-predicate-type",
    "attestation-predicate-path",
]
PINNED_CHECKOUT = "actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683"


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{name} is not installed beside {sys.executable}; run ./dev test (it installs '.[test]')")
    return str(path)


def _check_jsonschema(schema: str, *files: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_tool("check-jsonschema"), "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        check=False,
    )


def _zizmor(*paths: Path) -> tuple[int, list[dict[str, object]]]:
    # --offline: no GitHub API calls (CI here has no token); --no-config: only zizmor's own rules count.
    proc = subprocess.run(
        [_tool("zizmor"), "--offline", "--no-config", "--format=json", "--min-severity=medium", *map(str, paths)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        findings = json.loads(proc.stdout or "[]")
    except json.JSONDecodeError:
        pytest.fail(f"zizmor printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.returncode, findings


def _load(path: Path) -> dict[str, object]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    return data


def test_action_yml_matches_the_action_metadata_schema() -> None:
    """check-jsonschema's vendor.github-actions schema accepts action.yml."""
    proc = _check_jsonschema("vendor.github-actions", ROOT / "action.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_metadata_schema_rejects_a_broken_action(tmp_path: Path) -> None:
    """The schema check is live: an action whose runs.using is misspelt fails it."""
    broken = tmp_path / "action.yml"
    broken.write_text(
        (ROOT / "action.yml").read_text(encoding="utf-8").replace("using: docker", "using: dockr"), encoding="utf-8"
    )
    assert _check_jsonschema("vendor.github-actions", broken).returncode != 0


def test_action_declares_the_contracted_inputs_outputs_and_image() -> None:
    """Inputs with their defaults, outputs, branding, and a Docker action built from the repository's Dockerfile."""
    action = _load(ROOT / "action.yml")
    inputs = action["inputs"]
    assert isinstance(inputs, dict)
    assert {name: spec.get("default") for name, spec in inputs.items()} == INPUTS
    assert all(spec.get("required") is False for spec in inputs.values())
    outputs = action["outputs"]
    assert isinstance(outputs, dict)
    assert list(outputs) == OUTPUTS
    assert action["runs"] == {"using": "docker", "image": "Dockerfile"}
    assert set(action["branding"]) == {"icon", "color"}  # type: ignore[arg-type]


def test_workflows_match_the_workflow_schema() -> None:
    """check-jsonschema's vendor.github-workflows schema accepts every workflow."""
    assert {p.name for p in WORKFLOWS} >= {"ci.yml", "self-test.yml", "release.yml"}
    proc = _check_jsonschema("vendor.github-workflows", *WORKFLOWS)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_dependabot_config_matches_its_schema() -> None:
    """The dependabot file that refreshes the pins is valid."""
    proc = _check_jsonschema("vendor.dependabot", ROOT / ".github" / "dependabot.yml")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_zizmor_finds_nothing_of_medium_or_higher() -> None:
    """zizmor, offline, reports no medium or high finding for the workflows, dependabot and action.yml."""
    code, findings = _zizmor(ROOT / ".github", ROOT / "action.yml")
    summary = [(f.get("ident"), f.get("determinations")) for f in findings]
    assert findings == [], summary
    assert code == 0


def test_zizmor_is_live_on_a_template_injection(tmp_path: Path) -> None:
    """The zizmor check can fail: a PR title expanded into a shell script is reported."""
    bad = tmp_path / ".github" / "workflows" / "bad.yml"
    bad.parent.mkdir(parents=True)
    bad.write_text(
        "on: pull_request_target\npermissions: write-all\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
        "      - uses: actions/checkout@v4\n        with: {ref: '${{ github.event.pull_request.head.sha }}'}\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n',
        encoding="utf-8",
    )
    code, findings = _zizmor(bad)
    idents = {f.get("ident") for f in findings}
    assert code != 0
    assert {"template-injection", "dangerous-triggers"} <= idents, idents


def test_workflows_pin_actions_and_drop_checkout_credentials() -> None:
    """Every remote `uses:` is pinned by a full commit sha and every checkout sets persist-credentials: false."""
    for path in WORKFLOWS:
        data = _load(path)
        assert data.get("permissions") == {}, f"{path.name}: default permissions must be empty"
        for job in data["jobs"].values():  # type: ignore[union-attr]
            assert "permissions" in job, f"{path.name}: every job names its permissions"
            for step in job["steps"]:
                uses = step.get("uses")
                if uses is None or uses.startswith("./"):
                    continue
                ref = uses.partition("@")[2]
                assert len(ref) == 40 and all(c in "0123456789abcdef" for c in ref), f"{path.name}: {uses}"
                if uses.startswith("actions/checkout@"):
                    assert uses == PINNED_CHECKOUT
                    assert step["with"]["persist-credentials"] is False


def test_self_test_runs_the_local_action_on_pull_requests_and_merge_groups() -> None:
    """The self-test triggers on pull_request and merge_group and runs `uses: ./` with checks: write."""
    data = _load(ROOT / ".github" / "workflows" / "self-test.yml")
    triggers = data[True] if True in data else data["on"]  # type: ignore[index]  # YAML 1.1 reads `on` as True
    assert set(triggers) == {"pull_request", "merge_group"}  # type: ignore[arg-type]
    (job,) = data["jobs"].values()  # type: ignore[union-attr]
    assert job["permissions"] == {"checks": "write", "contents": "read"}
    assert any(step.get("uses") == "./" for step in job["steps"])
    assert job["steps"][0]["with"]["fetch-depth"] == 0


def test_python_defaults_match_action_yml() -> None:
    """The defaults `evidence-gate action` falls back to equal action.yml's (github-token excepted: an expression)."""
    from evidence_gate.action import inputs as action_inputs

    expected = {name: default for name, default in INPUTS.items() if name != "github-token"}
    assert {k: v for k, v in action_inputs.DEFAULTS.items() if k != "github-token"} == expected


def test_entrypoint_is_bash_because_sh_drops_hyphenated_inputs() -> None:
    """The runner's `INPUT_CHECK-NAME` survives bash but not dash, so the entrypoint must be a bash script."""
    assert (ROOT / "entrypoint").read_text(encoding="utf-8").startswith("#!/bin/bash\n")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "INPUT_CHECK-NAME": "kept"}
    through_bash = subprocess.run(["bash", "-c", "exec env"], capture_output=True, text=True, env=env, check=True)
    assert "INPUT_CHECK-NAME=kept" in through_bash.stdout.splitlines()
    if Path("/bin/dash").exists():
        through_dash = subprocess.run(
            ["/bin/dash", "-c", "exec env"], capture_output=True, text=True, env=env, check=True
        )
        assert "INPUT_CHECK-NAME=kept" not in through_dash.stdout.splitlines()


def test_readme_workflow_is_valid_and_its_only_zizmor_finding_is_the_tag_pin(tmp_path: Path) -> None:
    """The README's copy-paste workflow passes the workflow schema; zizmor flags only the `@v1` tag of the action."""
    snippet = doc_pages.readme_workflow()
    workflow = tmp_path / ".github" / "workflows" / "evidence-gate.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text(snippet, encoding="utf-8")
    proc = _check_jsonschema("vendor.github-workflows", workflow)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    jobs = yaml.safe_load(snippet)["jobs"]
    (job,) = jobs.values()
    # `actions: read` lets the gate find the base branch's last receipt artifact, for the delta; nothing more.
    assert job["permissions"] == {"checks": "write", "contents": "read", "actions": "read"}
    assert job["steps"][0]["with"]["fetch-depth"] == 0
    _, findings = _zizmor(workflow)
    assert {f.get("ident") for f in findings} == {"unpinned-uses"}
    assert "OWNER/evidence-gate@v1" in json.dumps(findings)


def test_dockerfile_pins_the_base_by_digest_where_dependabot_sees_it() -> None:
    """The base is debian:trixie-slim@sha256:<64 hex> on a literal FROM line; the build argument only redirects it."""
    lines = (ROOT / "Dockerfile").read_text(encoding="utf-8").splitlines()
    froms = [line.split() for line in lines if line.startswith("FROM ")]
    assert froms[-1] == ["FROM", "${BASE}"]
    assert "ARG BASE=pinned-base" in lines
    (pinned,) = [f for f in froms if f[-2:] == ["AS", "pinned-base"]]
    name, _, digest = pinned[1].partition("@sha256:")
    assert name == "debian:trixie-slim"
    assert len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)
