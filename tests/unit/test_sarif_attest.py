"""The reporter registry, SARIF 2.1.0 (validated against OASIS's published schema) and the in-toto Statement beside
the receipt (checked with the in-toto project's own bindings, a schema written from the spec, and digests against
the real receipt file and the real head commit)."""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import shutil
import subprocess
import sys
import urllib.parse
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement

from evidence_gate import cli, decision
from evidence_gate.action import main as action
from evidence_gate.errors import EXIT_FAIL
from evidence_gate.report import attestation, sarif
from evidence_gate.report import registry as report
from support import published_schemas, scenario_repo
from support.action_env import outputs, pull_request, runner_env
from support.fake_github import FakeGitHub

ROOT = Path(__file__).resolve().parents[2]
CASES = sorted(p for p in (ROOT / "tests" / "report_cases").iterdir() if (p / "receipt.json").is_file())
DOCS = "https://github.example/octo/evidence-gate/blob/v1/README.md"
STATEMENT_SCHEMA = json.loads((ROOT / "tests" / "data" / "intoto-statement-v1.schema.json").read_text("utf-8"))


@pytest.fixture(scope="module")
def sarif_schema() -> jsonschema.Draft4Validator:
    """OASIS's SARIF 2.1.0 schema (draft-04), from the pinned wheel, with format checks on."""
    schema = published_schemas.load()
    assert schema["id"] == published_schemas.SARIF_SCHEMA.source
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


def _valid(validator: jsonschema.Draft4Validator, log: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(log)]
    assert errors == []


def _github_rules(log: dict[str, Any]) -> None:
    """What code scanning needs beyond the schema: a physical location with a relative URI on every result (one
    result without rejects the whole file), and a ruleId that names a rule."""
    (run,) = log["runs"]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    for res in run["results"]:
        assert ids[res["ruleIndex"]] == res["ruleId"]
        assert res["locations"], res
        for loc in res["locations"] + res.get("relatedLocations", []):
            art = loc["physicalLocation"]["artifactLocation"]
            assert art["uriBaseId"] == sarif.SRCROOT and not art["uri"].startswith("/") and "://" not in art["uri"]
            assert loc["physicalLocation"].get("region", {"startLine": 1})["startLine"] >= 1


def _check(repo: Path, tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    receipt = tmp_path / "out" / "receipt.json"
    argv = [sys.executable, "-m", "evidence_gate", "check", "--repo", str(repo), "--receipt", str(receipt)]
    proc = subprocess.run(
        [*argv, "--today", "2026-09-20", "--no-run", *args], capture_output=True, text=True, timeout=300, check=False
    )
    return proc, receipt


def _rev(repo: Path, rev: str) -> str:
    return subprocess.run(
        ["git", "rev-parse", rev], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


def _statement_ok(path: Path, receipt_file: Path, commit: str) -> dict[str, Any]:
    """The Statement parses with in-toto's bindings (unknown fields rejected), passes their validate(), matches the
    schema written from the spec, and its digests are those of the real file and the real commit."""
    text = path.read_text("utf-8")
    Statement.copy_from_pb(json_format.Parse(text, statement_pb2.Statement())).validate()
    value = json.loads(text)
    jsonschema.Draft202012Validator(STATEMENT_SCHEMA).validate(value)
    assert value["predicateType"] == attestation.PREDICATE_TYPE
    commit_subject, file_subject = value["subject"]
    assert commit_subject["digest"] == {"gitCommit": commit}
    assert file_subject == {
        "name": receipt_file.name,
        "digest": {"sha256": hashlib.sha256(receipt_file.read_bytes()).hexdigest()},
    }
    assert value["predicate"] == json.loads(receipt_file.read_bytes())
    return dict(value)


def test_format_choices_come_from_the_registry() -> None:
    """`check` and `merge` offer exactly the registered reporters; every reporter renders a receipt."""
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("check", "merge"):
        (fmt,) = [a for a in sub.choices[command]._actions if a.dest == "format"]
        assert tuple(fmt.choices) == tuple(report.REPORTERS) == ("text", "json", "sarif")
    receipt = json.loads((ROOT / "tests/report_cases/pass/receipt.json").read_text("utf-8"))
    assert report.render("text", receipt).endswith("[pass]\n")
    assert json.loads(report.render("json", receipt)) == receipt
    assert json.loads(report.render("sarif", receipt))["version"] == "2.1.0"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_report_case_is_valid_sarif(case: Path, sarif_schema: jsonschema.Draft4Validator) -> None:
    """Each real receipt (written by a gate run) gives valid SARIF: one rule per row that fired, one result per
    violation."""
    receipt = json.loads((case / "receipt.json").read_text("utf-8"))
    log = sarif.sarif_log(receipt, DOCS)
    _valid(sarif_schema, log)
    _github_rules(log)
    (run,) = log["runs"]
    fired = {v["row"] for v in receipt["violations"]}
    assert [r["id"] for r in run["tool"]["driver"]["rules"]] == [r for r in decision.row_ids() if r in fired]
    assert [r["ruleId"] for r in run["results"]] == [v["row"] for v in receipt["violations"]]
    assert run["invocations"][0]["executionSuccessful"] is (receipt["state"] == "final")


def test_rules_link_to_anchors_the_rendered_decision_table_has(sarif_schema: jsonschema.Draft4Validator) -> None:
    """Every rule's helpUri is the decision table's page beside the README plus `#row-ID`, and cmark-gfm's rendering
    of that page has that id."""
    cmark = shutil.which("cmark-gfm")
    assert cmark, "cmark-gfm renders the docs as GitHub does; install it (apt-get install cmark-gfm)"
    page = ROOT / "docs" / "decision-rows.md"
    html = subprocess.run(
        [cmark, "--unsafe", "-e", "table"], input=page.read_bytes(), capture_output=True, check=True
    ).stdout.decode()
    ids = set(re.findall(r'<a id="([^"]+)"></a>', html))
    rules = [sarif.rule(r, DOCS) for r in decision.table()]
    for rule in rules:
        base, fragment = rule["helpUri"].split("#")
        assert base == urllib.parse.urljoin(DOCS, "docs/decision-rows.md"), rule["helpUri"]
        assert fragment == f"row-{rule['id']}" and fragment in ids, rule["id"]
        assert rule["help"]["text"] and rule["shortDescription"]["text"] == decision.row(rule["id"]).title
    assert "helpUri" not in sarif.rule(decision.table()[0], None)


def test_check_format_sarif_on_a_grown_ledger(tmp_path: Path, sarif_schema: jsonschema.Draft4Validator) -> None:
    """A patch adding a freeze entry: exit 10, SARIF on stdout with the finding on the ledger line as an error,
    and the Statement beside the receipt naming the real head commit and the receipt's real bytes."""
    ledger = scenario_repo.DEFAULT_BASE["freeze.yaml"] + scenario_repo.FREEZE_ADD
    repo = scenario_repo.build({"patch": {"files": {"freeze.yaml": ledger}}}, tmp_path / "repo").path
    proc, receipt_file = _check(repo, tmp_path, "--format", "sarif")
    assert proc.returncode == 10, proc.stderr
    log = json.loads(proc.stdout)
    _valid(sarif_schema, log)
    _github_rules(log)
    receipt = json.loads(receipt_file.read_text("utf-8"))
    (violation,) = receipt["violations"]
    (res,) = log["runs"][0]["results"]
    assert (res["ruleId"], res["level"]) == ("freeze-id-added", "error")
    assert res["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "freeze.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": violation["line"]},
    }
    assert violation["line"] == ledger.splitlines().index("  - id: a-new-quarantine") + 1
    statement = receipt_file.with_name("receipt.intoto.json")
    _statement_ok(statement, receipt_file, _rev(repo, "HEAD"))


def test_locked_path_and_no_path_findings_have_a_location(
    tmp_path: Path, sarif_schema: jsonschema.Draft4Validator
) -> None:
    """A touched locked file is a file-level result on that path; a precondition without a path is shown on the
    configuration file and says so (code scanning rejects a whole file for one result without a location)."""
    repo = scenario_repo.build({"patch": {"files": {"fixtures/golden.json": "{}\n"}}}, tmp_path / "repo").path
    proc, _ = _check(repo, tmp_path, "--format", "sarif")
    assert proc.returncode == 10, proc.stderr
    log = json.loads(proc.stdout)
    _valid(sarif_schema, log)
    (res,) = log["runs"][0]["results"]
    assert res["ruleId"] == "evidence-path-edited"
    assert res["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "fixtures/golden.json", "uriBaseId": "%SRCROOT%"}
    }
    missing = json.loads((ROOT / "tests/report_cases/history-missing/receipt.json").read_text("utf-8"))
    (res,) = sarif.sarif_log(missing)["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == ".evidence-gate.yml"
    assert "no file of its own: shown on .evidence-gate.yml" in res["message"]["text"]


def test_failed_property_is_shown_on_the_failing_assert() -> None:
    """A failed property's result sits on the assertion the sealed run recorded; when the finding names another
    line (here: the property's `def`), that line is a related location, and it is not repeated when it is the same."""
    receipt = json.loads((ROOT / "tests/report_cases/property-failed/receipt.json").read_text("utf-8"))
    (ledger,) = [x for x in receipt["properties"]["ledgers"] if x.get("failure")]
    (res,) = sarif.sarif_log(receipt)["runs"][0]["results"]
    where = res["locations"][0]["physicalLocation"]
    assert where["artifactLocation"]["uri"] == ledger["failure"]["path"]
    assert where["region"] == {
        "startLine": ledger["failure"]["line"],
        "snippet": {"text": ledger["failure"]["statement"]},
    }
    assert res["message"]["text"].startswith("test_sum_is_preserved failed on planned seeds 1101, 1102")
    assert "relatedLocations" not in res  # the finding's own line is the assertion's
    receipt["violations"][0]["line"] = 3
    (res,) = sarif.sarif_log(receipt)["runs"][0]["results"]
    assert res["locations"][0]["physicalLocation"]["region"]["startLine"] == ledger["failure"]["line"]
    (related,) = res["relatedLocations"]
    assert related["physicalLocation"]["region"] == {"startLine": 3} and related["id"] == 0


def test_levels_follow_the_rows_gate() -> None:
    """Scored findings are errors; a human patch's findings are notes (as its check-run annotations are notices)."""
    human = json.loads((ROOT / "tests/report_cases/human-patch/receipt.json").read_text("utf-8"))
    assert {r["level"] for r in sarif.sarif_log(human)["runs"][0]["results"]} == {"note"}
    many = json.loads((ROOT / "tests/report_cases/many-findings/receipt.json").read_text("utf-8"))
    assert {r["level"] for r in sarif.sarif_log(many)["runs"][0]["results"]} == {"error"}
    rules = {r["id"]: r for r in sarif.sarif_log(many)["runs"][0]["tool"]["driver"]["rules"]}
    assert sarif.rule(decision.row("pass"), None)["defaultConfiguration"]["level"] == "note"
    assert rules["freeze-id-added"]["defaultConfiguration"]["level"] == "error"


_TEXT = st.text(st.characters(codec="utf-8"), max_size=60)
_PATH = st.lists(st.text(st.characters(codec="utf-8", exclude_characters="/\x00"), min_size=1, max_size=12), max_size=4)


@settings(max_examples=150, deadline=None)
@given(message=_TEXT, parts=_PATH, line=st.one_of(st.none(), st.integers(-3, 10**6)))
def test_hostile_text_stays_data(message: str, parts: list[str], line: int | None) -> None:
    """Whatever the patch puts in a path or message: the URI decodes back to the path, a message never carries an
    unescaped `[`/`]` (no forged embedded links) nor a control character, and a bad line is no region."""
    path = "/".join(parts) or "x"
    log = sarif.sarif_log(
        {
            "state": "final",
            "violations": [{"row": "evidence-path-edited", "path": path, "line": line, "message": message}],
        }
    )
    (res,) = log["runs"][0]["results"]
    physical = res["locations"][0]["physicalLocation"]
    assert urllib.parse.unquote(physical["artifactLocation"]["uri"]) == path.lstrip("/")
    assert ("region" in physical) is (line is not None and line >= 1)
    text = res["message"]["text"]
    assert not re.search(r"(?<!\\)(\\\\)*[\[\]]", text.removesuffix(" \\[evidence-path-edited\\]"))
    assert not any(ord(c) < 0x20 and c != "\n" for c in text)


def test_forged_link_in_a_message_is_escaped() -> None:
    """The instance of the class above that a patch would try: a Markdown link and a fake decision line."""
    v = {"row": "freeze-id-added", "path": "freeze.yaml", "line": 3, "message": "[fix](https://evil.example)\nPASS:"}
    (res,) = sarif.sarif_log({"violations": [v]})["runs"][0]["results"]
    assert res["message"]["text"] == "\\[fix\\](https://evil.example)\nPASS: \\[freeze-id-added\\]"


def test_aborted_run_prints_sarif_that_says_so(tmp_path: Path, sarif_schema: jsonschema.Draft4Validator) -> None:
    """Not a repository: exit 2, and `--format sarif` still prints a valid log whose invocation did not succeed;
    no Statement is left (nothing was judged), also not a stale one from an earlier run."""
    (tmp_path / "empty").mkdir()
    stale = tmp_path / "out" / "receipt.intoto.json"
    stale.parent.mkdir()
    stale.write_text("{}", "utf-8")
    proc, _ = _check(tmp_path / "empty", tmp_path, "--format", "sarif")
    assert proc.returncode == 2
    log = json.loads(proc.stdout)
    _valid(sarif_schema, log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert "not a git repository" in invocation["toolExecutionNotifications"][0]["message"]["text"]
    assert not stale.exists()


def test_statement_names_the_pull_request_head_and_detects_a_changed_receipt(tmp_path: Path) -> None:
    """Given the event's head (the PR's commit, not the test merge), the Statement names it; a receipt edited after
    the fact no longer matches the Statement's sha256."""
    repo = scenario_repo.build({}, tmp_path / "repo").path
    proc, receipt_file = _check(repo, tmp_path)
    assert proc.returncode == 0, proc.stderr
    pr_head = _rev(repo, "HEAD^2")
    written = attestation.write_beside(receipt_file, commit=pr_head)
    assert written is not None
    path, data = written
    assert path == receipt_file.with_name("receipt.intoto.json") and path.read_bytes() == data
    _statement_ok(path, receipt_file, pr_head)
    receipt_file.write_bytes(receipt_file.read_bytes().replace(b'"ok": true', b'"ok": false'))
    with pytest.raises(AssertionError):
        _statement_ok(path, receipt_file, pr_head)
    with pytest.raises(ValueError, match="not a full commit id"):
        attestation.write_beside(receipt_file, commit="HEAD")


def test_action_writes_sarif_and_statement_with_attest_outputs(
    tmp_path: Path, shared_dir: Path, github: FakeGitHub, sarif_schema: jsonschema.Draft4Validator
) -> None:
    """`mode: gate` writes receipt.sarif and receipt.intoto.json beside the receipt, and its outputs are exactly what
    actions/attest takes in custom-predicate mode; the Statement names the PR head, which the check run is on."""
    pr = pull_request(tmp_path, shared_dir)
    env = runner_env(tmp_path, pr.repo.path, pr.event, github.url, upload_artifact="false")
    env["GITHUB_ACTION_REPOSITORY"], env["GITHUB_ACTION_REF"] = "octo/evidence-gate", "v1"
    assert action.main(env, stdout=io.StringIO(), sleep=lambda _s: None) == EXIT_FAIL
    out = outputs(tmp_path / "output")
    receipt_file = pr.repo.path / "receipt.json"
    assert out["sarif-path"] == "receipt.sarif" and out["attestation-path"] == "receipt.intoto.json"
    assert out["attestation-subject-name"] == "receipt.json"
    assert out["attestation-subject-digest"] == "sha256:" + hashlib.sha256(receipt_file.read_bytes()).hexdigest()
    assert out["attestation-predicate-type"] == attestation.PREDICATE_TYPE
    assert out["attestation-predicate-path"] == "receipt.json"
    log = json.loads((pr.repo.path / "receipt.sarif").read_text("utf-8"))
    _valid(sarif_schema, log)
    _github_rules(log)
    assert len(log["runs"][0]["results"]) == len(json.loads(receipt_file.read_text("utf-8"))["violations"])
    docs = "https://github.example/octo/evidence-gate/blob/v1/README.md"
    assert log["runs"][0]["tool"]["driver"]["rules"][0]["helpUri"] == urllib.parse.urljoin(
        docs, "docs/decision-rows.md#row-evidence-path-edited"
    )
    (run,) = github.runs.values()
    assert run["head_sha"] == pr.head
    _statement_ok(pr.repo.path / "receipt.intoto.json", receipt_file, pr.head)


def test_planted_side_files_never_redirect_or_stop_the_action(tmp_path: Path, shared_dir: Path) -> None:
    """The checkout may hold what the patch committed at the side files' paths: a folder named receipt.sarif and a
    symlink receipt.intoto.json pointing out of the workspace. The verdict stands, the SARIF output is empty with a
    warning naming the fix, the symlink is replaced by the real Statement, and its target is never written."""
    pr = pull_request(tmp_path, shared_dir)
    (pr.repo.path / "receipt.sarif").mkdir()
    (pr.repo.path / "receipt.sarif" / "x").write_text("planted\n", "utf-8")
    victim = tmp_path / "victim.json"
    victim.write_text("untouched\n", "utf-8")
    (pr.repo.path / "receipt.intoto.json").symlink_to(victim)
    env = runner_env(tmp_path, pr.repo.path, pr.event, None, upload_artifact="false")
    printed = io.StringIO()
    assert action.main(env, stdout=printed, sleep=lambda _s: None) == EXIT_FAIL
    out = outputs(tmp_path / "output")
    assert out["row"] == "evidence-path-edited" and out["sarif-path"] == ""
    assert any(
        line.startswith("::warning::") and "SARIF file could not be written" in line and "fix:" in line
        for line in printed.getvalue().splitlines()
    ), printed.getvalue()
    assert victim.read_text("utf-8") == "untouched\n"
    statement = pr.repo.path / "receipt.intoto.json"
    assert not statement.is_symlink() and out["attestation-path"] == "receipt.intoto.json"
    _statement_ok(statement, pr.repo.path / "receipt.json", pr.head)


def test_merge_prints_sarif_of_the_merged_receipt(tmp_path: Path, sarif_schema: jsonschema.Draft4Validator) -> None:
    """`merge --format sarif` over two real shard receipts: valid SARIF of the merged verdict, and the Statement
    beside the merged receipt."""
    ledger = scenario_repo.DEFAULT_BASE["freeze.yaml"] + scenario_repo.FREEZE_ADD
    repo = scenario_repo.build({"patch": {"files": {"freeze.yaml": ledger}}}, tmp_path / "repo").path
    shards = [tmp_path / f"shard-{k}.json" for k in (1, 2)]
    for k, shard in enumerate(shards, 1):
        argv = ["check", "--repo", str(repo), "--receipt", str(shard), "--today", "2026-09-20", "--shard", f"{k}/2"]
        assert cli.main(argv) == EXIT_FAIL
    merged = tmp_path / "merged.json"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "evidence_gate",
            "merge",
            *map(str, shards),
            "--receipt",
            str(merged),
            "--format",
            "sarif",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == EXIT_FAIL, proc.stderr
    log = json.loads(proc.stdout)
    _valid(sarif_schema, log)
    assert [r["ruleId"] for r in log["runs"][0]["results"]] == ["freeze-id-added"]
    _statement_ok(tmp_path / "merged.intoto.json", merged, _rev(repo, "HEAD"))


def test_a_failing_propertys_rule_gives_the_command() -> None:
    """The property-failed rule's help, which says to reproduce with a command, holds that command (SARIF has no
    'below'); a run's log carries only the rules that fired."""
    receipt = json.loads((ROOT / "tests/report_cases/property-failed/receipt.json").read_text("utf-8"))
    (rule,) = sarif.sarif_log(receipt)["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "property-failed" and "below" not in rule["help"]["text"]
    for help_text in (rule["help"]["text"], rule["help"]["markdown"]):
        assert "--hypothesis-seed=1101" in help_text and "test_sum_is_preserved" in help_text
    assert "```sh\nPYTHONPATH=src python -c" in rule["help"]["markdown"]
    passed = json.loads((ROOT / "tests/report_cases/pass/receipt.json").read_text("utf-8"))
    assert sarif.sarif_log(passed)["runs"][0]["tool"]["driver"]["rules"] == []
