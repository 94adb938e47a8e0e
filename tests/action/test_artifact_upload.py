"""Artifact upload through the results-service protocol against a fake service and blob store on 127.0.0.1."""

from __future__ import annotations

import io
import random
import zipfile

import pytest

from evidence_gate.github import artifact_upload
from evidence_gate.github.artifact_upload import ArtifactError, ArtifactUnavailable
from support.fake_results_service import JOB_ID, RUN_ID, FakeResultsService, runtime_token

FILES = [("receipt.json", b'{"ok": false}\n'), ("report.txt", b"FAIL: Locked evidence touched\n")]


def env_for(fake: FakeResultsService) -> dict[str, str]:
    """The two variables the runner sets for a container step."""
    return {"ACTIONS_RUNTIME_TOKEN": fake.token, "ACTIONS_RESULTS_URL": fake.url}


def test_upload_size_and_hash_match_what_the_store_received(results: FakeResultsService) -> None:
    """FinalizeArtifact reports the size and sha256 of the bytes the blob store got; the zip holds the files."""
    done = artifact_upload.upload(env_for(results), "evidence-gate-receipt", FILES, sleep=lambda _s: None)
    blob = results.state.blobs["evidence-gate-receipt"]
    final = results.state.finalized[0]
    assert (final["size"], final["hash"]) == (str(len(blob.data)), blob.sha256)
    assert (done.size, done.sha256, done.artifact_id) == (len(blob.data), blob.sha256, "4242")
    assert len(blob.blocks) == 1  # a zip under 8 MiB is one Put Block, then the Put Block List
    assert {k.lower(): v for k, v in blob.headers.items()}.get("x-ms-blob-content-type") == "application/zip"
    with zipfile.ZipFile(io.BytesIO(_read_back(results, "evidence-gate-receipt"))) as archive:
        assert {n: archive.read(n) for n in archive.namelist()} == dict(FILES)
    created = results.state.created[0]
    assert (created["workflow_run_backend_id"], created["workflow_job_run_backend_id"]) == (RUN_ID, JOB_ID)


def _read_back(results: FakeResultsService, name: str) -> bytes:
    """The stored artifact `name`, downloaded through ListArtifacts, GetSignedArtifactURL and the signed URL."""
    from evidence_gate.github import artifact_download

    client, ids = artifact_download.client_for(env_for(results), sleep=lambda _s: None)
    (item,) = [a for a in artifact_download.list_run_artifacts(client, ids) if a.name == name]
    return artifact_download.download(client, item)


def test_a_zip_over_one_block_is_staged_in_blocks_and_committed_in_order(results: FakeResultsService) -> None:
    """Put Block for each 1000-byte chunk under ids of one length, Put Block List in order: the stored artifact, read
    back, is the zip that was built, byte for byte."""
    files = [("receipt.json", random.Random(16).randbytes(5000))]  # incompressible: several blocks
    done = artifact_upload.upload(env_for(results), "big", files, sleep=lambda _s: None, block_size=1000)
    blob = results.state.blobs["big"]
    assert len(blob.blocks) == -(-done.size // 1000) > 2
    assert len({len(b) for b in blob.blocks}) == 1 and len(set(blob.blocks)) == len(blob.blocks)
    assert _read_back(results, "big") == artifact_upload.build_zip(files)
    assert artifact_upload.build_zip(files) == blob.data and done.sha256 == blob.sha256


def test_zip_bytes_depend_only_on_the_files() -> None:
    """Two builds of the same files give identical bytes (fixed timestamps), different files different bytes."""
    assert artifact_upload.build_zip(FILES) == artifact_upload.build_zip(FILES)
    assert artifact_upload.build_zip(FILES) != artifact_upload.build_zip(FILES[:1])


def test_missing_variables_are_unavailable_not_an_error() -> None:
    """Without ACTIONS_RUNTIME_TOKEN / ACTIONS_RESULTS_URL the upload says which are missing."""
    with pytest.raises(ArtifactUnavailable, match="ACTIONS_RUNTIME_TOKEN and ACTIONS_RESULTS_URL"):
        artifact_upload.upload({}, "x", FILES)
    with pytest.raises(ArtifactUnavailable, match="ACTIONS_RESULTS_URL"):
        artifact_upload.upload({"ACTIONS_RUNTIME_TOKEN": runtime_token()}, "x", FILES)


def test_backend_ids_come_from_the_results_scope() -> None:
    """The run and job ids are read from the Actions.Results scope, skipping other scopes."""
    assert artifact_upload.backend_ids(runtime_token()) == (RUN_ID, JOB_ID)
    for bad in (runtime_token("Actions.GenericRead:abc"), "not-a-jwt", "a.!!!.c"):
        with pytest.raises(ArtifactError):
            artifact_upload.backend_ids(bad)


def test_server_errors_are_retried_then_succeed(results: FakeResultsService) -> None:
    """A 503 on CreateArtifact and a 500 on the blob PUT are retried after 1 s each."""
    results.fail("CreateArtifact", 503)
    results.fail("blob", 500)
    sleeps: list[float] = []
    done = artifact_upload.upload(env_for(results), "r", FILES, sleep=sleeps.append)
    assert sleeps == [1.0, 1.0]
    assert done.sha256 == results.state.blobs["r"].sha256


def test_client_errors_are_not_retried(results: FakeResultsService) -> None:
    """A 400 from FinalizeArtifact fails at once."""
    results.fail("FinalizeArtifact", 400)
    sleeps: list[float] = []
    with pytest.raises(ArtifactError, match="HTTP 400"):
        artifact_upload.upload(env_for(results), "r", FILES, sleep=sleeps.append)
    assert sleeps == []


def test_wrong_token_is_refused(results: FakeResultsService) -> None:
    """The service sees the runtime token as a Bearer token; another token gets 401, which is not retried."""
    env = {**env_for(results), "ACTIONS_RUNTIME_TOKEN": runtime_token("Actions.Results:" + RUN_ID + ":other")}
    with pytest.raises(ArtifactError, match="HTTP 401"):
        artifact_upload.upload(env, "r", FILES, sleep=lambda _s: None)
    results.state.auth.clear()


def test_a_camel_case_service_is_understood_for_upload(results: FakeResultsService) -> None:
    """A service that answers the lowerCamelCase JSON names (`signedUploadUrl`, `artifactId`), as act's does."""
    results.camel = True
    done = artifact_upload.upload(env_for(results), "r", FILES, sleep=lambda _s: None)
    assert (done.artifact_id, done.sha256) == ("4242", results.state.blobs["r"].sha256)


def test_a_camel_case_service_is_understood_for_list_and_download(results: FakeResultsService) -> None:
    """ListArtifacts' `databaseId`, `workflowJobRunBackendId` and GetSignedArtifactURL's `signedUrl` are read."""
    from evidence_gate.github import artifact_download

    results.camel = True
    data = artifact_upload.build_zip(FILES)
    results.plant("shard-1-of-1", data, job_id="job-other")
    client, ids = artifact_download.client_for(env_for(results), sleep=lambda _s: None)
    (listed,) = artifact_download.list_run_artifacts(client, ids)
    assert (listed.name, listed.artifact_id, listed.job_backend_id, listed.size) == (
        "shard-1-of-1",
        "4242",
        "job-other",
        len(data),
    )
    assert artifact_download.download(client, listed) == data


def test_an_answer_naming_one_field_twice_is_refused() -> None:
    """`signed_upload_url` and `signedUploadUrl` in one answer is malformed (protobuf's parser refuses it too)."""
    assert artifact_upload.json_name("workflow_job_run_backend_id") == "workflowJobRunBackendId"
    assert artifact_upload.answer_field({"databaseId": "7"}, "database_id") == "7"
    with pytest.raises(ArtifactError, match="both 'signed_url' and 'signedUrl'"):
        artifact_upload.answer_field({"signed_url": "a", "signedUrl": "b"}, "signed_url")
