"""One error path: a GateError's exit code is its decision-table row's, and every entry point records it alike."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli, decision, gate, row_ids
from evidence_gate.action import main as action
from evidence_gate.action.event import load_event
from evidence_gate.errors import EXIT_INTERNAL, EXIT_USAGE, GateError, InputInvalid
from support.action_env import pull_request, runner_env
from support.property_repo import red_repo
from support.repo_builder import GitRepo

SRC = Path(__file__).resolve().parents[2] / "src" / "evidence_gate"
TODAY = "2026-09-10"


def _row_named(value: ast.expr) -> str | None:
    """The row id a `row=` argument names: a `row_ids` constant or a literal; None for anything computed."""
    if isinstance(value, ast.Name) and isinstance(getattr(row_ids, value.id, None), str):
        return str(getattr(row_ids, value.id))
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    return None


def _raised_rows() -> dict[str, list[str]]:
    """Every named `row=` a `GateError(...)` call in src/ passes, with the places that pass it."""
    found: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "GateError":
                for kw in node.keywords:
                    if kw.arg == "row" and (row_id := _row_named(kw.value)) is not None:
                        found.setdefault(row_id, []).append(f"{path.name}:{node.lineno}")
    return found


def test_every_raised_row_exits_as_the_table_says() -> None:
    """Each row a GateError is raised with in src/ is a failing table row, and the error exits with its exit_code."""
    raised = _raised_rows()
    assert {"config-invalid", "history-missing", "event-mismatch", "run-integrity"} <= set(raised), raised
    for row_id, places in raised.items():
        row = decision.row(row_id)  # KeyError names a row that is not in the table
        assert row.gate == "fail", places
        assert GateError("x", row=row_id).exit_code == row.exit_code, places


@pytest.mark.parametrize("row", decision.table(), ids=lambda r: r.id)
def test_each_table_row_decides_the_exit_code(row: decision.Row) -> None:
    """A failing row gives its own exit_code; a pass row is refused when the error is made, not at exit."""
    if row.gate == "fail":
        assert GateError("x", row=row.id).exit_code == row.exit_code
        assert GateError("x", row=row.id, usage=True).exit_code == EXIT_USAGE
    else:
        with pytest.raises(ValueError, match="not a failing row"):
            GateError("x", row=row.id)


def test_rowless_errors_and_unknown_rows() -> None:
    """No row is the gate's own failure (1) or a usage error (2); an id outside the table is a programming error."""
    assert GateError("x").exit_code == EXIT_INTERNAL
    assert GateError("x", usage=True).exit_code == EXIT_USAGE
    with pytest.raises(KeyError):
        GateError("x", row="history-mising")


def test_the_input_errors_are_one_class() -> None:
    """Configuration and strict-parse errors are the one (message, line) class, and src defines no other exception."""
    from evidence_gate.config import parse_config
    from evidence_gate.strict_parse import load_json

    with pytest.raises(InputInvalid) as bad_json:
        load_json(b'{"a": 1, "a": 2}')
    with pytest.raises(InputInvalid) as bad_config:
        parse_config(b"version: [")
    assert bad_json.value.message and bad_config.value.message
    error = InputInvalid("bad", 3)
    assert (error.message, error.line, str(error)) == ("bad", 3, "bad")
    src = Path(__file__).resolve().parents[2] / "src" / "evidence_gate"
    defined = {
        node.name
        for path in src.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
        if isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id in {"Exception", "ValueError"} for b in node.bases)
    }
    assert "InputInvalid" in defined
    assert not {"ConfigInvalid", "PropertiesInvalid", "ParseError"} & defined, defined


def test_freeze_hash_on_run_integrity_exits_as_the_table_says(
    git_repo: GitRepo, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failing properties.install stops `freeze hash` on run-integrity, which exits 10 as the table says (not 11)."""
    red_repo(git_repo, install="echo broken-install >&2; exit 3")
    code = cli.main(["freeze", "hash", "properties/test_double.py::test_double", "--repo", str(git_repo.path)])
    assert code == decision.row("run-integrity").exit_code == 10
    assert "[run-integrity]" in capsys.readouterr().err


def _three_ways(tmp_path: Path, repo: Path, event: Path) -> list[tuple[dict[str, Any], int]]:
    """The receipt and exit code from `check --event`, from the action, and from `gate.evaluate`."""
    cli_receipt = tmp_path / "cli.json"
    code = cli.main(
        [
            "check",
            "--repo",
            str(repo),
            "--event",
            str(event),
            "--no-run",
            "--today",
            TODAY,
            "--receipt",
            str(cli_receipt),
        ]
    )
    ways = [(json.loads(cli_receipt.read_text("utf-8")), code)]
    env = runner_env(tmp_path, repo, event, None, upload_artifact="false")
    code = action.main(env, stdout=io.StringIO(), sleep=lambda _s: None)
    ways.append((json.loads((repo / "receipt.json").read_text("utf-8")), code))
    try:
        context = load_event(event, "pull_request")
    except GateError:
        return ways  # an unusable event stops before the gate: only `check` and the action take it
    opts = gate.CheckOptions(repo=repo, event=context, run=False)
    receipt, code = gate.evaluate(opts, tmp_path / "api.json")
    ways.append((json.loads((tmp_path / "api.json").read_text("utf-8")), code))
    assert receipt == ways[-1][0]
    return ways


@pytest.mark.parametrize("broken", ["parents", "sha"])
def test_three_entry_points_write_the_same_precondition_receipt(broken: str, tmp_path: Path, shared_dir: Path) -> None:
    """An event that disagrees with the merge commit (or names no commit) gives one receipt, however the gate ran."""
    pr = pull_request(tmp_path, shared_dir, tamper=False)
    pr.repo.git("checkout", "-q", "--detach", pr.merge)
    payload = json.loads(pr.event.read_text("utf-8"))
    payload["pull_request"]["base"]["sha"] = pr.head if broken == "parents" else "zz"
    pr.event.write_text(json.dumps(payload), "utf-8")
    ways = _three_ways(tmp_path, pr.repo.path, pr.event)
    assert len(ways) == (3 if broken == "parents" else 2)
    first, code = ways[0]
    assert code == decision.row("event-mismatch").exit_code
    assert first["state"] == "final" and first["decision"]["row"] == "event-mismatch"
    assert [v["row"] for v in first["violations"]] == ["event-mismatch"]
    assert first["errors"] == [first["violations"][0]["message"] + " [event-mismatch]"]
    for receipt, other_code in ways[1:]:
        assert (receipt, other_code) == (first, code)
