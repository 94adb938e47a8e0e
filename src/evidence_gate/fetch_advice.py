"""The `git fetch` a message tells the user to run when a revision is not in the clone."""

from __future__ import annotations

from evidence_gate.git import FULL_ID

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

    from evidence_gate.git import Repo


def is_full_id(rev: str) -> bool:
    """Whether `rev` is a whole commit id (sha1 or sha256), not a name or an abbreviation (git's own pattern)."""
    return FULL_ID.fullmatch(rev) is not None


def remote_names(repo: Repo) -> list[str]:
    """The names of the clone's remotes (none when git cannot list them)."""
    proc = repo.run("remote", check=False)
    return proc.stdout.decode("utf-8", "replace").split() if proc.returncode == 0 else []


def fetch_command(rev: str, remotes: Iterable[str] = ()) -> str:
    """The `git fetch` that brings `rev` into the clone, as a user types it.

    A remote-tracking name (`origin/main`, `refs/remotes/origin/main`) is fetched by its branch into that ref, since
    the remote knows no branch called `origin/main`; anything else (a branch, a tag, a commit id) is asked of origin.
    """
    name = rev.removeprefix("refs/remotes/")
    remote, slash, branch = name.partition("/")
    if slash and branch and (name != rev or remote in remotes or remote == "origin"):
        return f"git fetch --no-tags {remote} {branch}:refs/remotes/{remote}/{branch}"
    return f"git fetch --no-tags origin {rev.removeprefix('refs/heads/')}"
