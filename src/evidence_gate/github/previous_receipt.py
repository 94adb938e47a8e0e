"""The base branch's last receipt, for the action's delta: the receipt artifact of the newest gate run on the
pull request's baseline commit (a merge-queue run, whose commit is what landed; or any run of this repository's own
branches on that commit), found through the REST artifacts API.

Everything it returns is untrusted until `artifact_download.receipt_from_zip` has read it under size caps as strict,
schema-valid, final JSON and it names the baseline as the commit it judged. No receipt on the baseline is no delta
(None), as is an API without the endpoint (404); artifacts that cannot be listed (403: no `actions: read`), or one
that cannot be downloaded or read, is a `Delta` that says why. Nothing here changes the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence_gate.github.artifact_download import MAX_ZIP, ReceiptUnusable, receipt_from_zip
from evidence_gate.github.run_artifacts import Rest, RestError
from evidence_gate.receipt.delta import Delta, compare


def _ours(artifact: dict[str, Any], baseline: str) -> bool:
    """An artifact of a run on `baseline` from this repository's own branches (a fork can name any commit)."""
    run = artifact.get("workflow_run")
    if not isinstance(run, dict) or run.get("head_sha") != baseline:
        return False
    return isinstance(run.get("repository_id"), int) and run.get("head_repository_id") == run.get("repository_id")


def delta(
    rest: Rest, repository: str, name: str, baseline: str, current: Mapping[str, Any], branch: str
) -> Delta | None:
    """The change since the newest receipt artifact `name` of a run on `baseline`; None when there is none."""
    against = f"{branch}'s last receipt"
    try:
        listed = rest.repository_artifacts(repository, name)
    except RestError as exc:
        if exc.status == 404:  # an API without the artifacts endpoint: nothing to compare against
            return None
        fix = "; give the job `actions: read`" if exc.status in (401, 403) else ""
        return Delta(against, why_not=f"the receipt artifacts could not be listed: {str(exc)[:300]}{fix}")
    found = [a for a in listed if _ours(a, baseline)]
    if not found:
        return None
    newest = found[0]
    size = newest.get("size_in_bytes")
    if not isinstance(size, int) or size > MAX_ZIP:
        return Delta(against, why_not=f"artifact {newest['id']} is {size} bytes, over the {MAX_ZIP}-byte cap")
    try:
        data = rest.artifact_zip(repository, newest["id"], MAX_ZIP)
    except RestError as exc:
        return Delta(against, why_not=f"the receipt artifact {newest['id']} could not be downloaded: {str(exc)[:300]}")
    try:
        previous, _raw = receipt_from_zip(data)
    except ReceiptUnusable as exc:
        return Delta(against, why_not=f"artifact {newest['id']}: {str(exc)[:300]}")
    judged = (previous.get("git") or {}).get("head")
    if judged != baseline:
        return Delta(against, why_not=f"artifact {newest['id']} judged {str(judged)[:12]}, not the baseline")
    return compare(previous, current, against)
