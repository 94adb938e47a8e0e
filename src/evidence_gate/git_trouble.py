"""What a failed git command means to the user: an object absent or damaged (`history-missing`, with the way to
repair the clone), a checkout this process may not read, or a plain failure naming the command."""

from __future__ import annotations

import os

from evidence_gate.errors import GateError
from evidence_gate.row_ids import HISTORY_MISSING

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

# What git prints when an object a tree or commit names is absent or damaged (git 2.30-2.47 wordings).
_OBJECT_TROUBLE = (
    "could not read",
    "unable to read",
    "bad object",
    "bad tree object",
    "missing blob",
    "missing tree",
    "invalid object",
    "inflate",
    "corrupt",
    "unable to unpack",
    "not a tree object",
    "does not point to a valid object",
    "not a valid object",
    "loose object",
    "packed object",
)
FSCK_FIX = (
    "the clone is incomplete or damaged: run `git fsck --full` to see which objects, then fetch again with "
    "`fetch-depth: 0` on actions/checkout (or `git fetch --refetch origin`), or re-clone"
)


def unreadable_checkout(path: Path, detail: str) -> GateError:
    """The error for a checkout this process may not read, naming the user it runs as and the way out."""
    uid = os.geteuid()
    return GateError(
        f"the checkout {path} cannot be read by uid {uid}, the user evidence-gate runs as ({detail})",
        fix=f"make the checkout readable by uid {uid}: run the step as the checkout's owner (on a self-hosted "
        "runner: Docker without user-namespace remapping, or a job `container:` running as the checkout's "
        "user), or `chmod -R a+rX` the checkout in a step before this one",
    )


def failure(path: Path, args: Sequence[str], raw_stderr: bytes) -> GateError:
    """The error for `git ARGS` that failed in `path`, from what it printed."""
    stderr = "\n".join(
        line for line in raw_stderr.decode(errors="replace").strip().splitlines() if not line.startswith("hint:")
    )
    if "permission denied" in stderr.lower():  # before the object check: a fetch would not help
        return unreadable_checkout(path, stderr[:500])
    if any(t in stderr.lower() for t in _OBJECT_TROUBLE):
        # An object the comparison needs is absent or damaged: never a lane's finding, never a crash.
        return GateError(
            f"`git {args[0]}` cannot read an object in {path}: {stderr[:500]}",
            fix=FSCK_FIX,
            row=HISTORY_MISSING,
        )
    return GateError(
        f"`git {' '.join(args)}` failed in {path}: {stderr}",
        fix="run the gate inside a git checkout of the pull request",
    )
