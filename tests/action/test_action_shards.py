"""`shard: K/N` matrix jobs and the `mode: merge` job, end to end through `action.main` against the fakes.

Each shard is a real action run with its own runtime token (as matrix jobs have) that runs the sealed property lane
on its slice of the seed plan and uploads `<artifact-name>-K-of-N`; the merge job lists and downloads them through
the fake results service and posts the one check run.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL, EXIT_PASS, EXIT_PRECONDITION, EXIT_USAGE
from support.action_env import assert_fixed_delta, base_receipt, outputs, runner_env
from support.fake_github import FakeGitHub
from support.fake_results_service import FakeResultsService
from support.property_repo import GREEN, base_files
from support.repo_builder import GitRepo

NAME = "gate-receipt"


@dataclass
class Matrix:
    """A pull request whose agent patch fixes the red property, and the zips its two shard jobs uploaded."""

    root: Path
    repo: GitRepo
    base: str
    head: str
    merge: str
    event: Path
    zips: dict[str, bytes]


def _run(env: dict[str, str]) -> tuple[int, str]:
    out = io.StringIO()
    code = action.main(env, stdout=out, sleep=lambda _s: None)
    return code, out.getvalue()


def _pull_request(
    root: Path, shared_dir: Path, patch: dict[str, str | bytes | None]
) -> tuple[GitRepo, str, str, str, Path]:
    repo = GitRepo(root / "origin")
    base = repo.commit("baseline", base_files(fresh_seeds=0))
    repo.branch("pr")
    head = repo.commit("patch", patch)
    merge = repo.merge_ref(base, head)
    payload = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    pr = payload["pull_request"]
    pr["base"]["sha"], pr["head"]["sha"], pr["user"]["login"] = base, head, "agent-smith"
    payload["repository"]["full_name"] = pr["head"]["repo"]["full_name"] = "octo/repo"
    event = root / "event.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    return repo, base, head, merge, event


def _job_env(m: Matrix, results: FakeResultsService, job: str, github_url: str | None, **inputs: str) -> dict[str, str]:
    folder = m.root / job
    folder.mkdir(exist_ok=True)
    env = runner_env(folder, m.repo.path, m.event, github_url, artifact_name=NAME, run_properties="true", **inputs)
    env.update(
        {
            "ACTIONS_RUNTIME_TOKEN": results.job_token(f"job-{job}"),
            "ACTIONS_RESULTS_URL": results.url,
            "GITHUB_SHA": m.merge,
        }
    )
    return env


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, shared_dir: Path) -> Any:
    """Two real shard jobs of one run, run once for the module; their uploaded zips are replayed into each test."""
    from support.fake_github import FakeGitHub as Hub
    from support.fake_results_service import FakeResultsService as Service
    from support.fake_results_service import runtime_token

    root = tmp_path_factory.mktemp("matrix")
    repo, base, head, merge, event = _pull_request(root, shared_dir, {"src/calc.py": GREEN})
    m = Matrix(root, repo, base, head, merge, event, {})
    hub, service = Hub(shared_dir).start(), Service(runtime_token()).start()
    try:
        for k in (1, 2):
            code, printed = _run(_job_env(m, service, f"shard{k}", hub.url, shard=f"{k}/2"))
            assert code == EXIT_PASS, printed
            assert "::error" not in printed  # findings reach the PR through the merge job only
        assert hub.requests == []  # no check run, not even a lookup, from a shard
        assert sorted(a.name for a in service.state.artifacts) == [f"{NAME}-1-of-2", f"{NAME}-2-of-2"]
        assert service.state.problems == []
        m.zips = {a.name: a.data for a in service.state.artifacts}
    finally:
        hub.stop()
        service.stop()
    return m


def _plant(results: FakeResultsService, zips: dict[str, bytes]) -> None:
    for name, data in zips.items():
        results.plant(name, data, job_id=f"job-{name}")


def _merge(m: Matrix, results: FakeResultsService, github: FakeGitHub) -> tuple[int, str, dict[str, Any]]:
    env = _job_env(m, results, "merge", github.url, mode="merge")
    code, printed = _run(env)
    return code, printed, json.loads((m.repo.path / "receipt.json").read_text("utf-8"))


def _receipt_of(data: bytes) -> dict[str, Any]:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        value = json.loads(archive.read("receipt.json"))
    assert isinstance(value, dict)
    return value


def _zip(receipt: dict[str, Any]) -> bytes:
    from evidence_gate.github.artifact_upload import build_zip
    from evidence_gate.receipt.write import canonical_bytes

    return build_zip([("receipt.json", canonical_bytes(receipt))])


def test_merge_posts_one_check_run_over_every_seed(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """Two shards of a 4-seed plan: the merge job downloads both, posts success on the PR head, uploads the merge."""
    _plant(results, matrix.zips)
    code, printed, merged = _merge(matrix, results, github)
    assert code == EXIT_PASS, printed
    ((run_id, run),) = github.runs.items()
    assert (run["head_sha"], run["conclusion"], run["name"]) == (matrix.head, "success", "evidence-gate")
    assert run["output"]["title"] == "Pass: 1 property held"
    (ledger,) = merged["properties"]["ledgers"]
    assert sorted(ledger["attempted_seeds"]) == [11, 12, 13, 14]
    assert [m["shard"] for m in merged["merged_from"]] == [[1, 2], [2, 2]]
    assert sorted(results.state.downloads) == [f"{NAME}-1-of-2", f"{NAME}-2-of-2"]
    assert _receipt_of(results.state.blobs[NAME].data) == merged
    with zipfile.ZipFile(io.BytesIO(results.state.blobs[NAME].data)) as archive:
        # The merged SARIF log and Statement travel with the merged receipt, as in gate mode.
        for name in ("receipt.sarif", "receipt.intoto.json"):
            assert archive.read(name) == (matrix.repo.path / name).read_bytes(), name
    assert outputs(matrix.root / "merge" / "output")["check-run-id"] == str(run_id)
    (listed,) = results.state.listed
    assert listed["workflow_job_run_backend_id"] == "job-merge"


def test_a_missing_shard_is_a_failing_verdict_naming_it(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """Shard 2 was cancelled before it uploaded: the merge fails and names 2/2, never passes over half the seeds."""
    _plant(results, {k: v for k, v in matrix.zips.items() if k.endswith("-1-of-2")})
    code, printed, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL, printed
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"
    assert merged["decision"]["row"] == "run-integrity"
    (violation,) = merged["violations"]
    assert "shard 2/2 uploaded no receipt" in violation["message"] and f"{NAME}-2-of-2" in violation["message"]
    assert merged["properties"]["ledgers"] == []
    assert "shard 2/2 uploaded no receipt" in run["output"]["summary"]


def test_no_shard_at_all_fails(matrix: Matrix, results: FakeResultsService, github: FakeGitHub) -> None:
    """A run whose matrix uploaded nothing (every shard cancelled, or no `shard:` input) is a failure, not a pass."""
    results.plant("something-else", b"PK")
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL
    assert "no shard receipt" in merged["violations"][0]["message"]


def test_a_shard_of_another_pull_request_is_event_mismatch(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """A passing shard receipt that judged other commits is refused by this run's event, not merged."""
    other = _receipt_of(matrix.zips[f"{NAME}-2-of-2"])
    other["git"]["head"] = "f" * 40
    _plant(results, {f"{NAME}-1-of-2": matrix.zips[f"{NAME}-1-of-2"], f"{NAME}-2-of-2": _zip(other)})
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_PRECONDITION
    assert merged["decision"]["row"] == "event-mismatch"
    assert "shard 2/2" in merged["violations"][0]["message"]
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure"


def test_one_shard_uploaded_twice_under_two_names_is_refused(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """Shard 1's receipt renamed to 2-of-2 (seeds 11 and 13 twice, 12 and 14 never) fails naming the swap."""
    one = matrix.zips[f"{NAME}-1-of-2"]
    _plant(results, {f"{NAME}-1-of-2": one, f"{NAME}-2-of-2": one})
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL
    assert "holds the receipt of shard [1, 2], not 2/2" in merged["violations"][0]["message"]


@pytest.mark.parametrize(
    ("label", "mutate"),
    [
        ("not a zip", lambda z, r: b"this is not a zip"),
        ("zip without receipt", lambda z, r: _zip_files([("report.txt", b"PASS")])),
        ("receipt not JSON", lambda z, r: _zip_files([("receipt.json", b"{'ok': true}")])),
        ("schema broken", lambda z, r: _zip({**r, "ok": "yes"})),
        ("aborted receipt", lambda z, r: _zip({**r, "state": "aborted", "errors": ["internal error: boom"]})),
        ("inflates past the cap", lambda z, r: _zip_files([("receipt.json", b" " * (1 << 20) + b"{}")])),
        ("two receipts", lambda z, r: _zip_files([("receipt.json", b"{}"), ("receipt.json", b"{}")])),
    ],
)
def test_an_unusable_shard_artifact_fails_naming_it(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub, label: str, mutate: Any
) -> None:
    """Hostile or broken shard artifacts are a failing row naming the shard, never merged."""
    two = f"{NAME}-2-of-2"
    bad = mutate(matrix.zips[two], _receipt_of(matrix.zips[two]))
    _plant(results, {f"{NAME}-1-of-2": matrix.zips[f"{NAME}-1-of-2"], two: bad})
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL, label
    assert merged["decision"]["row"] == "run-integrity", label
    assert any(f"shard 2/2 (artifact {two})" in v["message"] for v in merged["violations"]), merged["violations"]


@pytest.mark.parametrize("over", [0, 1])
def test_a_shard_receipt_over_the_cap_fails_naming_the_shard_and_the_cap(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub, over: int
) -> None:
    """Shard 2's own receipt, padded with whitespace (the same JSON) to exactly the receipt cap, merges; one byte more
    is a failing verdict naming shard 2/2 and the cap, on the check run too, never a merge over shard 1 alone."""
    from evidence_gate.receipt.shard_merge import MAX_RECEIPT

    two = f"{NAME}-2-of-2"
    raw = _receipt_bytes(matrix.zips[two])
    padded = raw + b" " * (MAX_RECEIPT + over - len(raw))
    assert len(padded) == MAX_RECEIPT + over and json.loads(padded) == json.loads(raw)
    _plant(results, {f"{NAME}-1-of-2": matrix.zips[f"{NAME}-1-of-2"], two: _zip_files([("receipt.json", padded)])})
    code, printed, merged = _merge(matrix, results, github)
    (run,) = github.runs.values()
    if not over:
        assert code == EXIT_PASS, printed
        assert sorted(merged["properties"]["ledgers"][0]["attempted_seeds"]) == [11, 12, 13, 14]
        return
    assert code == EXIT_FAIL, printed
    assert merged["decision"]["row"] == "run-integrity"
    (violation,) = merged["violations"]
    assert f"shard 2/2 (artifact {two})" in violation["message"]
    assert f"over the {MAX_RECEIPT}-byte cap" in violation["message"]
    assert merged["properties"]["ledgers"] == []
    assert run["conclusion"] == "failure" and f"over the {MAX_RECEIPT}-byte cap" in run["output"]["summary"]


def _zip_files(files: list[tuple[str, bytes]]) -> bytes:
    import warnings

    from evidence_gate.github.artifact_upload import build_zip

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns about the duplicate name on purpose
        return build_zip(files)


@pytest.mark.parametrize("listed", [None, 100])
def test_an_oversized_artifact_is_cut_at_the_gate_s_own_cap(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub, listed: int | None
) -> None:
    """A 5 MiB artifact is read no further than the 4 MiB cap and fails naming shard 2/2, whether the service lists
    its true size or a small one."""
    results.listed_size = listed
    _plant(results, {f"{NAME}-1-of-2": matrix.zips[f"{NAME}-1-of-2"], f"{NAME}-2-of-2": b"x" * (5 << 20)})
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL
    (violation,) = merged["violations"]
    assert f"shard 2/2 (artifact {NAME}-2-of-2)" in violation["message"]
    assert "larger than 4194304 bytes" in violation["message"]


def test_a_size_the_service_computed_is_recorded_not_trusted(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """act's ListArtifacts lists 4096 bytes (its folder) and no digest for each shard zip: the merge proves both
    shards by their content, passes, and records the disagreeing size in the receipt and on the check run."""
    results.listed_size = 4096
    _plant(results, matrix.zips)
    code, printed, merged = _merge(matrix, results, github)
    assert code == EXIT_PASS, printed
    assert sorted(merged["properties"]["ledgers"][0]["attempted_seeds"]) == [11, 12, 13, 14]
    for entry in merged["merged_from"]:
        size = len(matrix.zips[entry["receipt"]])
        assert f"listed 4096 bytes for artifact {entry['receipt']}; {size} were downloaded" in entry["note"]
    (run,) = github.runs.values()
    assert run["conclusion"] == "success" and "listed 4096 bytes" in run["output"]["summary"]


def _stored_zip(files: list[tuple[str, bytes]]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, data in files:
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize("listed", [None, 4096])
@pytest.mark.parametrize("damage", ["truncated", "report's CRC broken", "forged receipt"])
def test_a_damaged_shard_fails_naming_it_whatever_size_is_listed(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub, damage: str, listed: int | None
) -> None:
    """A truncated zip, a zip whose other member fails its CRC, or a receipt edited to claim another seed plan is a
    failing verdict naming shard 2/2, with the service's sizes true or act's."""
    two = f"{NAME}-2-of-2"
    receipt = _receipt_bytes(matrix.zips[two])
    if damage == "truncated":
        bad = matrix.zips[two][: len(matrix.zips[two]) // 2]
    elif damage == "report's CRC broken":
        bad = _stored_zip([("receipt.json", receipt), ("report.txt", b"PASS PASS")]).replace(b"PASS PASS", b"FAIL PASS")
    else:
        forged = json.loads(receipt)
        forged["properties"]["plan"] = [1, 2, 3, 4]
        bad = _zip(forged)
    results.listed_size = listed
    _plant(results, {f"{NAME}-1-of-2": matrix.zips[f"{NAME}-1-of-2"], two: bad})
    code, printed, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL, printed
    assert merged["decision"]["row"] == "run-integrity", merged["violations"]
    (violation,) = merged["violations"]
    assert f"shard 2/2 (artifact {two})" in violation["message"], violation
    if damage == "forged receipt":
        assert "judged another seed plan than shard 1/2" in violation["message"]
    assert merged["properties"]["ledgers"] == []


def test_a_red_shard_fails_the_merge(
    tmp_path: Path, shared_dir: Path, results: FakeResultsService, github: FakeGitHub
) -> None:
    """A patch that leaves the property red: the shard that drew the failing seed decides the merged verdict."""
    repo, base, head, merge, event = _pull_request(tmp_path, shared_dir, {"README.md": "changed\n"})
    m = Matrix(tmp_path, repo, base, head, merge, event, {})
    codes = [_run(_job_env(m, results, f"shard{k}", github.url, shard=f"{k}/2"))[0] for k in (1, 2)]
    assert EXIT_FAIL in codes and github.runs == {}
    code, printed, merged = _merge(m, results, github)
    assert code == EXIT_FAIL, printed
    assert merged["decision"]["row"] == "property-failed"
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (head, "failure")
    assert github.annotations[run["id"]], "the failing property is annotated"


def test_merge_without_the_results_service_fails_closed(matrix: Matrix, github: FakeGitHub) -> None:
    """Without ACTIONS_RUNTIME_TOKEN the shards cannot be listed: a failing check run that says why."""
    env = runner_env(matrix.root / "nosvc", matrix.repo.path, matrix.event, github.url, mode="merge")
    (matrix.root / "nosvc").mkdir(exist_ok=True)
    code, _ = _run(env)
    assert code == EXIT_FAIL
    (run,) = github.runs.values()
    assert run["conclusion"] == "failure" and "cannot list this run's artifacts" in run["output"]["summary"]


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"shard": "3/2"}, "not K/N"),
        ({"shard": "1/2", "mode": "merge"}, "set `shard:` on the matrix job only"),
        ({"mode": "matrix"}, "input mode is 'matrix'"),
        ({"shard": "1/2", "upload_artifact": "false"}, "upload-artifact"),
    ],
)
def test_bad_mode_and_shard_inputs_are_usage_errors(
    tmp_path: Path, shared_dir: Path, inputs: dict[str, str], message: str
) -> None:
    """A malformed `shard` or `mode` input stops with exit 2 and says what to write instead."""
    repo, *_rest, event = _pull_request(tmp_path, shared_dir, {"src/calc.py": GREEN})
    code, printed = _run(runner_env(tmp_path, repo.path, event, None, **inputs))
    assert code == EXIT_USAGE
    assert message in printed


def test_shards_of_matrices_of_different_sizes_are_refused(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """A stray `-1-of-3` beside a complete 2-shard set: named, and 2/3 and 3/3 reported missing."""
    _plant(
        results,
        {
            **matrix.zips,
            f"{NAME}-1-of-3": matrix.zips[f"{NAME}-1-of-2"],
            f"{NAME}-01-of-2": b"ignored: not a shard name",
            f"{NAME}-x-1-of-2": b"ignored too",
        },
    )
    code, _, merged = _merge(matrix, results, github)
    assert code == EXIT_FAIL
    messages = [v["message"] for v in merged["violations"]]
    assert any("matrices of different sizes ([2, 3])" in m for m in messages), messages
    assert any("shard 3/3 uploaded no receipt" in m for m in messages), messages
    assert results.state.downloads == [f"{NAME}-1-of-3"]  # the look-alike names are not shards


def test_cli_merge_applies_the_receipt_size_cap_and_the_schema(
    matrix: Matrix, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`evidence-gate merge` refuses a receipt file over 1 MiB before parsing it, and one that breaks the schema."""
    from evidence_gate import cli

    good = tmp_path / "one.json"
    good.write_bytes(_receipt_bytes(matrix.zips[f"{NAME}-1-of-2"]))
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (1 << 20) + b"{}")
    assert cli.main(["merge", str(good), str(big), "--receipt", str(tmp_path / "m.json")]) == EXIT_USAGE
    assert "over the 1048576-byte cap" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**json.loads(good.read_text()), "ok": "yes"}), encoding="utf-8")
    assert cli.main(["merge", str(good), str(broken), "--receipt", str(tmp_path / "m.json")]) == EXIT_USAGE
    assert "breaks the receipt schema" in capsys.readouterr().err


def _receipt_bytes(data: bytes) -> bytes:
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        return archive.read("receipt.json")


def test_a_merge_group_matrix_merges_on_the_group_commit(
    tmp_path: Path, shared_dir: Path, results: FakeResultsService, github: FakeGitHub
) -> None:
    """In a merge queue the shards judge the group's commit; the merge posts on it (no GITHUB_SHA needed)."""
    repo, base, head, _merge_sha, _event = _pull_request(tmp_path, shared_dir, {"src/calc.py": GREEN})
    repo.checkout(head)
    payload = json.loads((shared_dir / "github-api/events/merge_group.checks_requested.1.json").read_text("utf-8"))
    payload["merge_group"]["base_sha"], payload["merge_group"]["head_sha"] = base, head
    payload["repository"]["full_name"] = "octo/repo"
    event = tmp_path / "merge_group.json"
    event.write_text(json.dumps(payload), encoding="utf-8")
    m = Matrix(tmp_path, repo, base, head, head, event, {})
    for job, inputs in (("s1", {"shard": "1/2"}), ("s2", {"shard": "2/2"}), ("merge", {"mode": "merge"})):
        env = _job_env(m, results, job, github.url, **inputs)
        env["GITHUB_EVENT_NAME"] = "merge_group"
        del env["GITHUB_SHA"]
        code, printed = _run(env)
        assert code == EXIT_PASS, printed
    (run,) = github.runs.values()
    assert (run["head_sha"], run["conclusion"]) == (head, "success")


def test_merge_reads_a_service_answering_camel_case(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """act's (and Gitea's, Forgejo's) results service answers `databaseId`, `signedUrl`: the merge lists, downloads
    and merges both shards, and uploads the merged receipt through the same dialect."""
    results.camel = True
    _plant(results, matrix.zips)
    code, printed, merged = _merge(matrix, results, github)
    assert code == EXIT_PASS, printed
    assert sorted(results.state.downloads) == [f"{NAME}-1-of-2", f"{NAME}-2-of-2"]
    assert _receipt_of(results.state.blobs[NAME].data) == merged


def test_an_unwritable_step_summary_keeps_the_merge_verdict(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """`mode: merge` with $GITHUB_STEP_SUMMARY unwritable (a folder): the failing verdict keeps exit 10 and its
    outputs, and a `::warning::` names the file."""
    results.plant("something-else", b"PK")
    env = _job_env(matrix, results, "merge-nosummary", github.url, mode="merge")
    env["GITHUB_STEP_SUMMARY"] = str(matrix.root)
    code, printed = _run(env)
    assert code == EXIT_FAIL, printed
    assert outputs(matrix.root / "merge-nosummary" / "output")["row"] == "run-integrity"
    assert any(line.startswith("::warning::") and "GITHUB_STEP_SUMMARY" in line for line in printed.splitlines())


def _merge_on_main(m: Matrix, results: FakeResultsService, github: FakeGitHub) -> tuple[int, str, str, str]:
    """The merge job of a pull request into main: its exit code, log, check run summary and job summary."""
    _plant(results, m.zips)
    env = _job_env(m, results, "merge", github.url, mode="merge")
    env["GITHUB_BASE_REF"] = "main"
    Path(env["GITHUB_STEP_SUMMARY"]).write_text("", "utf-8")  # the module's matrix folder is every test's
    code, printed = _run(env)
    ((_id, run),) = github.runs.items()
    assert (run["conclusion"], run["output"]["title"]) == ("success", "Pass: 1 property held")  # whatever the delta
    return code, printed, run["output"]["summary"], Path(env["GITHUB_STEP_SUMMARY"]).read_text("utf-8")


def test_merge_shows_the_delta_against_the_base_branch_s_last_receipt(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """The receipt artifact of this repository's run on the baseline (a fork's on the same commit is never used):
    the merged verdict's check run, job summary and log say what the PR fixed, as mode gate's do."""
    github.add_artifact(5, NAME, base_receipt(matrix.base, ok=True), head_sha=matrix.base, head_repository_id=2)
    github.add_artifact(6, NAME, base_receipt(matrix.base), head_sha=matrix.base, head_repository_id=1)
    code, printed, summary, job = _merge_on_main(matrix, results, github)
    assert code == EXIT_PASS, printed
    assert_fixed_delta((summary, job), printed, matrix.base)


@pytest.mark.parametrize(
    ("label", "why"),
    [
        ("schema broken", "breaks the receipt schema"),
        ("listed over the cap", "-byte cap"),
        ("another commit", "not the baseline"),
    ],
)
def test_a_hostile_base_receipt_is_no_delta_and_the_same_merged_verdict(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub, label: str, why: str
) -> None:
    """A base-branch artifact that breaks the schema, is listed over the cap or judged another commit is said as
    `no delta (why)`; the merged verdict and its exit code stand. No artifact on the baseline is no delta section."""
    data = {
        "schema broken": _zip({"schema": "evidence-gate/receipt/v1", "ok": True}),
        "listed over the cap": b"small",
        "another commit": base_receipt("1" * 40),
    }[label]
    size = 5 << 20 if label == "listed over the cap" else None
    github.add_artifact(6, NAME, data, size=size, head_sha=matrix.base, head_repository_id=1)
    code, printed, summary, job = _merge_on_main(matrix, results, github)
    assert code == EXIT_PASS, printed
    for text in (summary, job):
        plain = text.replace("\\", "")
        assert "no delta (artifact " in plain and why in plain, (label, plain)


def test_merge_without_a_base_receipt_shows_no_delta(
    matrix: Matrix, results: FakeResultsService, github: FakeGitHub
) -> None:
    """Nothing on the baseline: no previous receipt, no delta section, the same verdict."""
    code, printed, summary, job = _merge_on_main(matrix, results, github)
    assert code == EXIT_PASS and "Since main" not in summary + job and "since main" not in printed
