"""The property lane end to end: seed plans, ledgers, replays, tautologies, freezes and digests, on real runs."""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from pathlib import Path

import pytest

from evidence_gate.receipt import facts as run_facts
from evidence_gate.sealed import run as sealed_run
from evidence_gate.sealed.worker.assertion_hash import statement_hash
from support.property_repo import PROPERTY, base_files, judge, ledger, red_repo, rows, sealed_only
from support.repo_builder import GitRepo

SEED_PROPERTY = """\
import os


def test_seeded():
    assert int(os.environ["PROPERTY_SEED"]) != 12
    assert int(os.environ["PROPERTY_TRIALS"]) == 25
"""


def test_early_stop_example_attempts_every_planned_seed(git_repo: GitRepo, tmp_path: Path) -> None:
    """Plan of four, failure at the second: all four are attempted and the ledger names the failing seed."""
    files = base_files(fresh_seeds=0)
    files.update(
        {
            "SCORE_PROPERTIES": "properties/test_seeded.py::test_seeded\n",
            "properties/test_seeded.py": SEED_PROPERTY,
            "fixtures/a.txt": "x\n",
        }
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("noop", {"README.md": "changed\n"})
    receipt = judge(git_repo, tmp_path)
    found = ledger(receipt, "properties/test_seeded.py::test_seeded")
    assert sorted(found["attempted_seeds"]) == [11, 12, 13, 14]
    assert found["failing_seed"] == 12
    assert found["stopped_early"] is False
    assert found["reproduced"] is True
    assert found["shrink_stable"] is True
    assert found["status"] == "freeze_eligible"
    assert receipt["decision"]["row"] == "property-failed"
    assert receipt["properties"]["counts"] == {"open": 0, "closed_failures": 1, "budget_passes": 0}


def test_property_failed_message_names_the_whole_falsifying_example(git_repo: GitRepo, tmp_path: Path) -> None:
    """The property-failed message carries Hypothesis' shrunk arguments on one line, not just `test_double(`."""
    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("noop", {"README.md": "changed\n"})
    receipt = judge(git_repo, tmp_path)
    [found] = [v for v in receipt["violations"] if v["row"] == "property-failed"]
    assert found["message"].endswith("test case: test_double(x=1000))"), found["message"]


# The sealed worker may write only to its own tmp folder (Landlock), so the recorder writes there and the test
# copies the file out before the workspace is removed.
RECORDING = """\
import os

RECORD = os.path.join(os.environ["TMPDIR"], "seen.txt")


def double(x):
    with open(RECORD, "a") as handle:
        handle.write(f"{x}\\n")
    return x * 2
"""
ANSWER_KEY = """\
import json
from pathlib import Path

KEY = set(json.loads(Path(__file__).with_name("key.json").read_text()))


def double(x):
    return x * 2 if x in KEY else x
"""


def test_answer_key_for_the_plan_fails_on_a_fresh_seed(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An implementation correct only on the planned seeds' inputs is caught by the fresh seeds.

    The key is recorded by a first sealed run of the plan; both versions keep the same integer constants so that
    Hypothesis generates the same inputs for the same seed.
    """
    record_dir = Path(tempfile.mkdtemp(prefix="answer-key-"))
    record_dir.chmod(0o777)
    record = record_dir / "seen.txt"
    close = sealed_run.Workspace.close

    def keep_record(ws: sealed_run.Workspace) -> None:
        # The head's tmp, moved aside (`tmp.1`) when the baseline's census got a fresh one.
        for seen in sorted(ws.root.glob("tmp*/seen.txt")):
            shutil.copyfile(seen, record)
        close(ws)

    red_repo(git_repo, fresh_seeds=0)
    git_repo.commit("recorder", {"src/calc.py": RECORDING})
    with monkeypatch.context() as patched:
        patched.setattr(sealed_run.Workspace, "close", keep_record)
        assert judge(git_repo, tmp_path)["decision"]["row"] == "pass"
    key = sorted({int(line) for line in record.read_text().split()})
    shutil.rmtree(record_dir)
    git_repo.commit("answer key", {"src/calc.py": ANSWER_KEY, "src/key.json": json.dumps(key)})
    config = json.loads(git_repo.git("show", "main:.evidence-gate.yml"))
    assert config["properties"]["fresh_seeds"] == 0
    planned_only = judge(git_repo, tmp_path)
    assert planned_only["decision"]["row"] == "pass", planned_only["violations"]
    git_repo.checkout("main")
    git_repo.commit(
        "two fresh seeds",
        {".evidence-gate.yml": json.dumps({**config, "properties": {**config["properties"], "fresh_seeds": 2}})},
    )
    git_repo.checkout("patch")
    git_repo.git("merge", "-q", "--no-edit", "main")
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed-fresh-seed", receipt["violations"]
    assert ledger(receipt)["failing_seed"] in receipt["properties"]["fresh_seeds"]


def test_counterexample_accepted_is_a_tautology(git_repo: GitRepo, tmp_path: Path) -> None:
    """A documented counterexample that passes on the baseline tree makes the property a tautology."""
    files = base_files(fresh_seeds=0)
    files.update(
        {
            "SCORE_PROPERTIES": "properties/test_double.py::test_double counterexample=properties/test_cx.py::test_cx\n",
            "properties/test_cx.py": "def test_cx():\n    assert True\n",
        }
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-tautology", receipt["violations"]


def test_counterexample_rejected_passes(git_repo: GitRepo, tmp_path: Path) -> None:
    """A counterexample that fails on the baseline tree is what a real property looks like."""
    files = base_files(fresh_seeds=0)
    files.update(
        {
            "SCORE_PROPERTIES": "properties/test_double.py::test_double counterexample=properties/test_cx.py::test_cx\n",
            "properties/test_cx.py": "def test_cx():\n    assert 2 * 1000 == 1000\n",
        }
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


FREEZE = """\
version: 1
entries:
{entries}"""
ENTRY = """\
  - id: {id}
    test: {test}
    assertion_hash: "{hash}"
    added_at: "{added}"
    expires: "{expires}"
    owner: humans
    reason: timing
"""
FLAKY = "from flag import OK\n\n\ndef test_flaky():\n    assert OK\n"


def _freeze_repo(
    git_repo: GitRepo, cond_base: str, cond_head: str, entry_hash: str = "0" * 64, expires: str = "2026-09-20"
) -> None:
    files = base_files(fresh_seeds=0, removal_runs=2)
    entry = ENTRY.format(
        id="flaky", test="tests/test_flaky.py::test_flaky", hash=entry_hash, added="2026-09-10", expires=expires
    )
    # The frozen test reads code under test (src/flag.py): the replays run the baseline's copy of the test itself.
    files.update(
        {
            "src/calc.py": "def double(x):\n    return x * 2\n",
            "freeze.yaml": FREEZE.format(entries=entry),
            "tests/test_flaky.py": FLAKY,
            "src/flag.py": f"OK = {cond_base}\n",
        }
    )
    config = json.loads(files[".evidence-gate.yml"])  # type: ignore[arg-type]
    config["freeze"] = {"removal_runs": config["properties"].pop("removal_runs")}
    files[".evidence-gate.yml"] = json.dumps(config)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("head", {"src/flag.py": f"OK = {cond_head}\n"})


def test_removal_verified_by_replays_shrinks_the_ledger(git_repo: GitRepo, tmp_path: Path) -> None:
    """A removed entry whose test passes on both trees every time gives pass-freeze-shrank."""
    _freeze_repo(git_repo, "True", "True")
    git_repo.commit("remove", {"freeze.yaml": FREEZE.format(entries="  []\n").replace("entries:\n  []", "entries: []")})
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 12))
    assert receipt["decision"]["row"] == "pass-freeze-shrank", receipt["violations"]
    replay = receipt["freeze"]["replays"][0]
    assert replay["baseline"] == ["passed", "passed"] and replay["head"] == ["passed", "passed"]


def test_removal_of_a_still_failing_test_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """A removed entry whose test still fails on the head tree is freeze-removed-still-failing."""
    _freeze_repo(git_repo, "True", "False")
    git_repo.commit("remove", {"freeze.yaml": FREEZE.format(entries="").replace("entries:\n", "entries: []\n")})
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 12))
    assert "freeze-removed-still-failing" in rows(receipt), receipt["violations"]


def test_removal_proven_by_a_loosened_copy_of_the_test_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """The patch breaks the code and loosens the (unlocked) frozen test: the replay runs the baseline's copy."""
    _freeze_repo(git_repo, "True", "False")
    git_repo.commit(
        "loosen and remove",
        {
            "freeze.yaml": FREEZE.format(entries="").replace("entries:\n", "entries: []\n"),
            "tests/test_flaky.py": "def test_flaky():\n    assert True\n",
        },
    )
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 12))
    assert "freeze-removed-still-failing" in rows(receipt), receipt["violations"]
    replay = receipt["freeze"]["replays"][0]
    assert replay["baseline"] == ["passed", "passed"] and replay["head"] == ["failed", "failed"], replay
    assert receipt["freeze"]["replayed_from_baseline"] == ["tests/test_flaky.py"]


def test_removal_proven_by_a_loosened_helper_or_conftest_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """Loosening a helper the frozen test imports, or adding a conftest that skips it, proves nothing either."""
    files = base_files(fresh_seeds=0)
    entry = ENTRY.format(
        id="flaky", test="tests/test_flaky.py::test_flaky", hash="0" * 64, added="2026-09-10", expires="2026-09-20"
    )
    files.update(
        {
            "src/calc.py": "def double(x):\n    return x * 2\n",
            "freeze.yaml": FREEZE.format(entries=entry),
            "src/flag.py": "OK = True\n",
            "tests/test_flaky.py": "from check import verdict\n\n\ndef test_flaky():\n    assert verdict()\n",
            "tests/check.py": "from flag import OK\n\n\ndef verdict():\n    return OK\n",
        }
    )
    config = json.loads(str(files[".evidence-gate.yml"]))
    config["freeze"] = {"removal_runs": 1}
    files[".evidence-gate.yml"] = json.dumps(config)
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit(
        "break, loosen the helper, skip in a conftest",
        {
            "freeze.yaml": FREEZE.format(entries="").replace("entries:\n", "entries: []\n"),
            "src/flag.py": "OK = False\n",
            "tests/check.py": "def verdict():\n    return True\n",
            "tests/conftest.py": "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef _skip():\n    pytest.skip()\n",
        },
    )
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 12))
    assert "freeze-removed-still-failing" in rows(receipt), receipt["violations"]
    replay = receipt["freeze"]["replays"][0]
    assert replay["baseline"] == ["passed"] and replay["head"] == ["failed"], replay
    assert "tests/check.py" in receipt["freeze"]["replayed_from_baseline"]


def test_expiry_cleared_by_a_loosened_copy_of_the_test_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """An expired entry's test loosened by the patch still runs as the baseline wrote it: freeze-expired."""
    _freeze_repo(git_repo, "False", "False", expires="2026-09-11")
    git_repo.commit("loosen", {"tests/test_flaky.py": "def test_flaky():\n    assert True\n"})
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 20))
    assert receipt["decision"]["row"] == "freeze-expired", receipt["violations"]


def test_expired_entry_whose_test_fails(git_repo: GitRepo, tmp_path: Path) -> None:
    """An expired entry's test runs unfrozen; its failure is freeze-expired."""
    _freeze_repo(git_repo, "False", "False", expires="2026-09-11")
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 20))
    assert receipt["decision"]["row"] == "freeze-expired", receipt["violations"]


def _property_hash() -> str:
    source = base_files()["properties/test_double.py"]
    assert isinstance(source, str)
    digest = statement_hash(source, 8)
    assert digest is not None
    return digest


@pytest.mark.parametrize(("entry_hash", "row"), [("match", "pass"), ("f" * 64, "property-failed")])
def test_active_freeze_excuses_only_the_same_assertion(
    git_repo: GitRepo, tmp_path: Path, entry_hash: str, row: str
) -> None:
    """A frozen property's failure is excused only when the failing assertion's hash matches the entry."""
    files = base_files(fresh_seeds=0)
    digest = _property_hash()[:32] if entry_hash == "match" else entry_hash
    files["freeze.yaml"] = FREEZE.format(
        entries=ENTRY.format(
            id="double",
            test="properties/test_double.py::test_double",
            hash=digest,
            added="2026-09-10",
            expires="2026-09-20",
        )
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("noop", {"README.md": "x\n"})
    receipt = judge(git_repo, tmp_path, today=__import__("datetime").date(2026, 9, 12))
    assert receipt["decision"]["row"] == row, receipt["violations"]


def test_missing_node_is_run_integrity(git_repo: GitRepo, tmp_path: Path) -> None:
    """A listed property that is not collected is run-integrity, never a pass."""
    red_repo(git_repo, extra={"SCORE_PROPERTIES": "properties/test_double.py::test_gone\n"}, fresh_seeds=0)
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]


def test_a_file_that_fails_to_import_is_one_row_naming_the_cause(git_repo: GitRepo, tmp_path: Path) -> None:
    """A whole-file entry whose code under test fails to import: one run-integrity row names the import error, not
    one more per test the file defines (an adopter saw 17 rows for one missing import)."""
    three = PROPERTY + "".join(
        f"\n\n@given(st.integers())\ndef test_more_{i}(x):\n    assert double(x) == x + x\n" for i in range(3)
    )
    red_repo(
        git_repo,
        extra={"SCORE_PROPERTIES": "properties/test_double.py\n", "properties/test_double.py": three},
        fresh_seeds=0,
    )
    git_repo.commit("broken import", {"src/calc.py": "import no_such_module\n\n\ndef double(x):\n    return 2 * x\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    messages = [v["message"] for v in receipt["violations"] if v["row"] == "run-integrity"]
    assert not [m for m in messages if "is defined in the locked file" in m], messages
    [entry] = [m for m in messages if "was not collected in the sealed run" in m]
    assert "No module named 'no_such_module'" in entry, entry


def test_exhausted_search_space_is_recorded_and_accepted(git_repo: GitRepo, tmp_path: Path) -> None:
    """Hypothesis stops `booleans()` after its two examples: that is the whole space, not a short run."""
    prop = (
        "from hypothesis import given, strategies as st\n\n\n@given(st.booleans())\ndef test_double(b):\n"
        "    assert b in (True, False)\n"
    )
    red_repo(git_repo, extra={"properties/test_double.py": prop}, fresh_seeds=0)
    git_repo.commit("noop", {"README.md": "x\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    found = ledger(receipt)
    assert found["examples"] == {"11": 2, "12": 2, "13": 2, "14": 2}
    assert found["exhausted_seeds"] == [11, 12, 13, 14] or sorted(found["exhausted_seeds"]) == [11, 12, 13, 14]
    assert set(found["stopped_because"].values()) == {"nothing left to do"}
    assert "every distinct example" in found["status_reason"]


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        ({"stop": "max_iterations", "examples": 9}, "discarded by the property's own assume()/filter()"),
        ({"stop": "max_examples", "examples": 9}, "ran 9 examples on seed 11, fewer than the 25 declared"),
        ({"stop": None, "examples": None}, "Hypothesis reported no statistics for seed 11"),
        ({"stop": "finished", "examples": 2}, None),
        ({"stop": "max_examples", "examples": 25}, None),
    ],
)
def test_short_runs_are_judged_by_hypothesis_stop_reason(result: dict[str, object], expected: str | None) -> None:
    """Why Hypothesis stopped decides: an exhausted space passes, a search starved by discards or a count below the
    plan does not, and a Hypothesis run without statistics cannot be counted at all."""
    issue = run_facts.seed_issue(11, {"outcome": "passed", "hypothesis": True, **result}, 25)
    assert (issue is None) if expected is None else (issue is not None and expected in issue), issue


def test_one_issue_on_several_seeds_is_named_once() -> None:
    """The same problem on every seed is one line listing the seeds, not one line per seed."""
    issues = [
        run_facts.seed_issue(s, {"outcome": "skipped", "message": "Skipped: Pre-3.10 only."}, 25) for s in (1, 2, 3)
    ]
    [line] = run_facts.grouped([i for i in issues if i])
    assert line.startswith("skipped on seeds 1, 2, 3: Skipped: Pre-3.10 only. (not evidence: list only"), line


def test_secrets_and_ci_do_not_reach_the_test(
    git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GITHUB_TOKEN, INPUT_* and CI stay outside; with CI=true the seeds still differ between runs."""
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_secret")
    monkeypatch.setenv("INPUT_TOKEN", "secret")
    monkeypatch.setenv("CI", "true")
    prop = (
        "import os\n\n\ndef test_double():\n"
        "    assert not {k for k in os.environ if k.startswith(('GITHUB', 'INPUT_', 'ACTIONS_', 'CI'))}\n"
    )
    red_repo(git_repo, extra={"properties/test_double.py": prop}, fresh_seeds=0)
    git_repo.commit("noop", {"README.md": "x\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


DIGEST_PRODUCER = "import json\n\n\ndef produce(value):\n    return {'doubled': [x * 2 for x in value]}\n"
# A wrong producer that swaps hashlib.sha256 so the worker reports the recorded digest (read from the fixture).
FORGING_PRODUCER = """\
import hashlib
import json

with open("fixtures/digests.json") as handle:
    EXPECTED = {json.dumps(r["input"]): r["output_sha256"] for r in json.load(handle)["records"]}
PENDING = []
REAL = hashlib.sha256


class Fake:
    def __init__(self, digest):
        self.digest = digest

    def hexdigest(self):
        return self.digest


def forged(data=b"", **kwargs):
    return Fake(PENDING.pop()) if PENDING else REAL(data, **kwargs)


hashlib.sha256 = forged


def produce(value):
    PENDING.append(EXPECTED[json.dumps(value)])
    return {"doubled": [x + 2 for x in value]}
"""


@pytest.mark.parametrize(
    ("producer", "row"),
    [
        (DIGEST_PRODUCER, "pass"),
        (DIGEST_PRODUCER.replace("x * 2", "x + 2"), "fixture-digest-mismatch"),
        (FORGING_PRODUCER, "fixture-digest-mismatch"),
    ],
)
def test_fixture_digest_records(git_repo: GitRepo, tmp_path: Path, producer: str, row: str) -> None:
    """Digest records are checked in the sealed run by the configured producer."""
    expected = hashlib.sha256(json.dumps({"doubled": [2, 4]}, separators=(",", ":")).encode()).hexdigest()
    digests = {"version": 1, "records": [{"id": "two", "input": [1, 2], "output_sha256": expected}]}
    files = base_files(fresh_seeds=0)
    config = json.loads(files[".evidence-gate.yml"])  # type: ignore[arg-type]
    config["fixtures"] = {"producer": "calc:produce"}
    files.update(
        {
            ".evidence-gate.yml": json.dumps(config),
            "fixtures/digests.json": json.dumps(digests),
            "src/calc.py": "def double(x):\n    return x * 2\n\n\n" + DIGEST_PRODUCER,
        }
    )
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("producer", {"src/calc.py": "def double(x):\n    return x * 2\n\n\n" + producer})
    receipt = judge(git_repo, tmp_path)
    if producer == FORGING_PRODUCER:
        # Swapping hashlib.sha256 is a harness probe, so nothing runs; the sealed lane alone still catches it.
        assert receipt["decision"]["row"] == "harness-probed", receipt["violations"]
        alone = sealed_only(git_repo, tmp_path / "alone")
        assert row in {v.row for v in alone.violations}, alone.violations
        return
    assert receipt["decision"]["row"] == row, receipt["violations"]
    assert receipt["fixtures"]["digests"][0]["status"] == ("match" if row == "pass" else "mismatch")
