"""Point a release's action.yml at the published image by digest, so `uses: OWNER/evidence-gate@vX` pulls instead
of building the Dockerfile on every run.

    python scripts/release_action.py ghcr.io/owner/evidence-gate@sha256:<64 hex> [--action action.yml]

Only the `image:` line under `runs:` changes (`Dockerfile` -> `docker://REF@sha256:...`); comments, inputs and
layout stay byte for byte. The reference must be a lowercase registry path pinned by a sha256 digest, never a tag:
a tag can be moved after the release, a digest cannot. The release workflow runs this on the tagged commit; the
default branch keeps `image: Dockerfile`, so `uses: ./` still builds from source.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

# registry[:port]/path...@sha256:<64 hex>, all lowercase (Docker's reference grammar, digest form only).
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
REFERENCE = re.compile(rf"^(?P<name>[a-z0-9.-]+(?::[0-9]+)?(?:/{_COMPONENT})+)@sha256:(?P<digest>[0-9a-f]{{64}})$")
_IMAGE_LINE = re.compile(r"^(?P<indent>[ ]+)image:[ ]*(?P<value>\S.*?)[ ]*$")


class ReleaseError(Exception):
    """The action.yml or the image reference cannot be released as asked."""


def pinned_reference(reference: str) -> str:
    """`reference` checked to be `registry/path@sha256:<64 hex>`; raises ReleaseError naming what is wrong."""
    if REFERENCE.match(reference) is None:
        raise ReleaseError(
            f"{reference!r} is not an image reference pinned by digest "
            "(lowercase registry/path@sha256:<64 hex>, no tag)"
        )
    return reference


def rewrite(action_yml: str, reference: str) -> str:
    """action.yml with its one `runs.image: Dockerfile` line replaced by `docker://<reference>`."""
    pinned = pinned_reference(reference)
    lines = action_yml.split("\n")
    in_runs = False
    hits: list[int] = []
    for index, line in enumerate(lines):
        if line and not line.startswith((" ", "#")):
            in_runs = line.rstrip() == "runs:"
            continue
        match = _IMAGE_LINE.match(line)
        if in_runs and match:
            hits.append(index)
    if len(hits) != 1:
        raise ReleaseError(f"expected one `image:` line under `runs:`, found {len(hits)}")
    match = _IMAGE_LINE.match(lines[hits[0]])
    assert match is not None
    value = match.group("value").strip("'\"")
    if value != "Dockerfile":
        raise ReleaseError(f"runs.image is {value!r}, not Dockerfile: is this commit already a release commit?")
    lines[hits[0]] = f"{match.group('indent')}image: docker://{pinned}"
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Rewrite the file in place; exit 1 with the reason when it cannot."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("reference", help="the pushed image, e.g. ghcr.io/owner/evidence-gate@sha256:<64 hex>")
    parser.add_argument("--action", type=Path, default=Path("action.yml"), help="the file to rewrite")
    args = parser.parse_args(argv)
    try:
        text = rewrite(args.action.read_text(encoding="utf-8"), args.reference)
    except (OSError, ReleaseError) as exc:
        sys.stderr.write(f"release_action: {exc}\n")
        return 1
    args.action.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
