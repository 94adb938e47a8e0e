"""The base branch's last receipt, for the action's delta: the receipt artifact of the newest gate run on the
pull request's baseline commit (a merge-queue run, whose commit is what landed; or any run of this repository's own
branches on that commit), found through the REST artifacts API.

Everything it returns is untrusted until `artifact_download.receipt_from_zip` has read it under size caps as strict,
schema-valid, final JSON and it names the baseline as the commit it judged. No receipt on the baseline is no delta
(None), as is an API without the endpoint (404); artifacts that cannot be listed (403: no `actions: read`), or one
that cannot be downloaded or read, is a `Delta` that says why. A receipt that judged another commit is passed over
for the next older one (up to `MAX_TRIED`). Nothing here changes the verdict.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evidence_gate.github.artifact_download import MAX_ZIP, ReceiptUnusable, receipt_from_zip
from evidence_gate.github.run_artifacts import Rest, RestError
from evidence_gate.receipt.delta import Delta, compare
from evidence_gate.receipt.types import ReceiptJson

# Receipts on the baseline read before giving up: the newest can be another job's on that commit (`mode: publish`
# runs on the base branch's tip and uploads the fork PR's receipt under the same name), never the baseline's.
MAX_TRIED = 3
NOT_THE_BASELINE = ", not the baseline"


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
    why = ""
    for artifact in found[:MAX_TRIED]:
        previous = _read(rest, repository, artifact, baseline)
        if not isinstance(previous, str):
            return compare(previous, current, against)
        why = previous
        if not why.endswith(NOT_THE_BASELINE):
            break  # only another receipt on the commit (a publisher's, of a fork PR) is passed over
    return Delta(against, why_not=why)


def _read(rest: Rest, repository: str, artifact: dict[str, Any], baseline: str) -> ReceiptJson | str:
    """The final, schema-valid receipt in `artifact` that judged `baseline`, or why it is not one."""
    size = artifact.get("size_in_bytes")
    if not isinstance(size, int) or size > MAX_ZIP:
        return f"artifact {artifact['id']} is {size} bytes, over the {MAX_ZIP}-byte cap"
    try:
        data = rest.artifact_zip(repository, artifact["id"], MAX_ZIP)
    except RestError as exc:
        return f"the receipt artifact {artifact['id']} could not be downloaded: {str(exc)[:300]}"
    try:
        previous, _raw = receipt_from_zip(data)
    except ReceiptUnusable as exc:
        return f"artifact {artifact['id']}: {str(exc)[:300]}"
    judged = (previous.get("git") or {}).get("head")
    if judged != baseline:
        return f"artifact {artifact['id']} judged {str(judged)[:12]}{NOT_THE_BASELINE}"
    return previous
