"""The release rewrite: a tagged action.yml that refers to the published image by digest, valid for GitHub, with
everything else unchanged; and the release workflow that runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from test_action_metadata import _check_jsonschema  # the vendor schema check, one copy

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import release_action  # noqa: E402 - scripts/ is not a package, so it is imported from its folder

DIGEST = "sha256:" + "0123456789abcdef" * 4
REFERENCE = f"ghcr.io/octo-org/evidence-gate@{DIGEST}"


def _released(tmp_path: Path, reference: str = REFERENCE) -> Path:
    out = tmp_path / "action.yml"
    out.write_text((ROOT / "action.yml").read_text(encoding="utf-8"), encoding="utf-8")
    code = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "release_action.py"), reference, "--action", str(out)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert code.returncode == 0, code.stderr
    return out


def test_the_rewritten_action_is_schema_valid_and_pinned_by_digest(tmp_path: Path) -> None:
    """check-jsonschema's vendor.github-actions schema accepts the release's action.yml; runs.image is the digest."""
    released = _released(tmp_path)
    proc = _check_jsonschema("vendor.github-actions", released)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(released.read_text(encoding="utf-8"))
    assert data["runs"] == {"using": "docker", "image": f"docker://{REFERENCE}"}


def test_only_the_image_line_changes(tmp_path: Path) -> None:
    """Inputs, outputs, comments and layout are byte for byte the default branch's; one line differs."""
    before = (ROOT / "action.yml").read_text(encoding="utf-8").split("\n")
    after = _released(tmp_path).read_text(encoding="utf-8").split("\n")
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed == [("  image: Dockerfile", f"  image: docker://{REFERENCE}")]


def test_the_default_branch_keeps_building_from_the_dockerfile() -> None:
    """`uses: ./` must keep building from source: the committed action.yml names the Dockerfile."""
    assert yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))["runs"]["image"] == "Dockerfile"


@pytest.mark.parametrize(
    "reference",
    [
        "ghcr.io/octo-org/evidence-gate:v1.2.3",  # a tag can move after the release
        f"ghcr.io/Octo-Org/evidence-gate@{DIGEST}",  # registries want lowercase paths
        "ghcr.io/octo-org/evidence-gate@sha256:1234",  # a short digest
        f"evidence-gate@{DIGEST}",  # no registry
        f"ghcr.io/octo-org/evidence-gate@{DIGEST}\n  using: node20",  # an injected line
        f"docker://ghcr.io/octo-org/evidence-gate@{DIGEST}",  # the scheme is added, not passed
    ],
)
def test_references_not_pinned_by_digest_are_refused(reference: str) -> None:
    """Only `registry/path@sha256:<64 hex>` is accepted."""
    with pytest.raises(release_action.ReleaseError):
        release_action.rewrite((ROOT / "action.yml").read_text(encoding="utf-8"), reference)


def test_a_release_commit_is_not_released_twice(tmp_path: Path) -> None:
    """Re-running on an action.yml that already names an image fails instead of stacking rewrites."""
    released = _released(tmp_path).read_text(encoding="utf-8")
    with pytest.raises(release_action.ReleaseError, match="already a release commit"):
        release_action.rewrite(released, REFERENCE)


def test_the_release_workflow_publishes_by_digest_and_retags_the_release_commit() -> None:
    """release.yml pushes the image, reads its digest, runs the rewrite and moves the tags to that commit."""
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text(encoding="utf-8")
    data = yaml.safe_load(workflow)
    (job,) = data["jobs"].values()
    assert job["permissions"] == {"contents": "write", "packages": "write"}
    script = "\n".join(step.get("run", "") for step in job["steps"])
    assert "scripts/release_action.py" in script
    assert "RepoDigests" in script and "git/commits" in script and "git/refs/tags/" in script
    assert "${{" not in script, "expressions reach run: only through env"
