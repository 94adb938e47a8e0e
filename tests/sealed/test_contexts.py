"""Bounded contexts: one receipt per context a pull request touches, an index listing every context, and a locked
path shared by several contexts failing each of them (a real monorepo, real Hypothesis properties)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from evidence_gate import cli, gate
from evidence_gate.config import parse_config, schema_errors
from evidence_gate.contexts import receipt_path_for
from evidence_gate.errors import InputInvalid
from support.context_repo import BROKEN, GREEN, NAMES, PLAN, PROPERTY, monorepo
from support.repo_builder import GitRepo


def check(repo: GitRepo, tmp_path: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    """`evidence-gate check` on main..patch as an agent's patch; the exit code and the index."""
    index = tmp_path / "out" / "receipt.json"
    args = ["check", "--repo", str(repo.path), "--base", "main", "--head", "HEAD", "--author", "agent-x"]
    code = cli.main([*args, "--receipt", str(index), "--today", "2026-09-20", *extra])
    return code, json.loads(index.read_text())


def by_context(index: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {row["context"]: row for row in index["contexts"]}


def context_receipt(tmp_path: Path, name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(receipt_path_for(tmp_path / "out" / "receipt.json", name).read_text())
    return loaded


def test_a_patch_touching_one_context_runs_only_that_ones_properties(tmp_path: Path) -> None:
    """A bug planted in beta's code is judged by beta's properties alone; alpha and gamma are not judged, run
    nothing and get no receipt; the index names beta's receipt by digest and row."""
    repo = monorepo(tmp_path)
    repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
    code, index = check(repo, tmp_path)
    assert schema_errors(index, "receipt-index.schema.json") == []
    rows = by_context(index)
    assert code == 10 and index["ok"] is False and index["exit_code"] == 10
    assert [n for n in NAMES if rows[n]["judged"]] == ["beta"]
    for name in ("alpha", "gamma"):
        assert rows[name]["receipt"] is None and rows[name]["row"] is None
        assert "changes nothing under" in rows[name]["why"]
        assert not receipt_path_for(tmp_path / "out" / "receipt.json", name).exists()
    beta = context_receipt(tmp_path, "beta")
    assert rows["beta"]["receipt"] == "receipt-beta.json" and rows["beta"]["row"] == beta["decision"]["row"]
    assert rows["beta"]["sha256"].startswith("sha256:")
    assert beta["context"] == {"name": "beta", "root": "services/beta", "paths": []}
    assert beta["decision"]["gate"] == "fail", beta["decision"]
    ran = [ledger["property_id"] for ledger in beta["properties"]["ledgers"]]
    assert ran == ["services/beta/properties/test_beta.py::test_beta_double"]
    assert (tmp_path / "out" / "receipt-beta.intoto.json").is_file()
    assert not (tmp_path / "out" / "receipt.intoto.json").exists()


def test_a_green_patch_in_one_context_passes_with_that_context_alone(tmp_path: Path) -> None:
    repo = monorepo(tmp_path)
    repo.commit("refactor alpha", {"services/alpha/src/alpha_calc.py": "def double(x):\n    return x + x\n"})
    code, index = check(repo, tmp_path)
    rows = by_context(index)
    assert code == 0 and index["ok"] is True
    assert rows["alpha"]["judged"] and rows["alpha"]["ok"] is True and rows["alpha"]["exit_code"] == 0
    assert not rows["beta"]["judged"] and not rows["gamma"]["judged"]
    assert context_receipt(tmp_path, "alpha")["properties"]["ledgers"][0]["property_id"].startswith("services/alpha/")


def test_a_shared_locked_path_fails_each_context_that_locks_it(tmp_path: Path) -> None:
    """libs/shared/ is locked by alpha and beta: editing it fails both (evidence-path-edited, no test runs), and
    gamma, which does not lock it, is not judged."""
    repo = monorepo(tmp_path)
    repo.commit("edit shared", {"libs/shared/notes.txt": "rewritten by the agent\n"})
    code, index = check(repo, tmp_path)
    rows = by_context(index)
    assert code == 10
    assert [n for n in NAMES if rows[n]["judged"]] == ["alpha", "beta"]
    for name in ("alpha", "beta"):
        receipt = context_receipt(tmp_path, name)
        assert rows[name]["row"] == "evidence-path-edited" == receipt["decision"]["row"]
        assert "which this context locks" in rows[name]["why"]
        assert [v["path"] for v in receipt["violations"]] == ["libs/shared/notes.txt"]
    assert not rows["gamma"]["judged"]


def test_the_configuration_is_locked_in_every_context(tmp_path: Path) -> None:
    """The gate's configuration is built-in locked evidence of every context: editing it fails all three."""
    repo = monorepo(tmp_path)
    repo.commit("loosen", {".evidence-gate.yml": json.dumps({"version": 1})})
    code, index = check(repo, tmp_path, "--no-run")
    rows = by_context(index)
    assert code == 10
    assert all(rows[n]["judged"] and rows[n]["row"] == "evidence-path-edited" for n in NAMES)


def test_a_patch_outside_every_context_judges_every_context(tmp_path: Path) -> None:
    """A path no context owns could change what any of them runs (a root file an install reads), so a patch that
    touches only such a path is judged in every context, never passed unjudged."""
    repo = monorepo(tmp_path)
    repo.commit("docs", {"README.md": "monorepo, documented\n"})
    code, index = check(repo, tmp_path, "--format", "json")
    assert code == 0 and index["ok"] is True
    assert all(row["judged"] for row in index["contexts"]), index["contexts"]
    assert all("README.md, which no context owns" in row["why"] for row in index["contexts"]), index["contexts"]


def shard_run(repo: GitRepo, folder: Path, shard: str) -> int:
    args = ["check", "--repo", str(repo.path), "--base", "main", "--head", "HEAD", "--author", "agent-x"]
    return cli.main([*args, "--receipt", str(folder / "receipt.json"), "--today", "2026-09-20", "--shard", shard])


def test_shards_per_context_merge_to_the_unsharded_verdict(tmp_path: Path) -> None:
    """`check --shard K/N` judges each touched context's slice of its seed plan; `merge` over the shards' index
    files merges each context's shard receipts into receipt-<name>.json, with the verdict of an unsharded run."""
    repo = monorepo(tmp_path)
    repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
    assert [shard_run(repo, tmp_path / f"s{k}", f"{k}/2") for k in (1, 2)] == [10, 10]
    shard_index = json.loads((tmp_path / "s1" / "receipt.json").read_text())
    assert shard_index["shard"] == [1, 2] and by_context(shard_index)["beta"]["judged"]
    merged = tmp_path / "merged" / "receipt.json"
    code = cli.main(
        ["merge", str(tmp_path / "s1/receipt.json"), str(tmp_path / "s2/receipt.json"), "--receipt", str(merged)]
    )
    index = json.loads(merged.read_text())
    assert code == 10 and schema_errors(index, "receipt-index.schema.json") == []
    assert index["shard"] is None and [r["context"] for r in index["contexts"] if r["judged"]] == ["beta"]
    beta = json.loads((tmp_path / "merged" / "receipt-beta.json").read_text())
    assert [m["shard"] for m in beta["merged_from"]] == [[1, 2], [2, 2]]
    [ledger] = beta["properties"]["ledgers"]
    assert sorted(ledger["attempted_seeds"]) == [11, 12]
    _code, whole = check(repo, tmp_path)
    assert by_context(index)["beta"]["row"] == by_context(whole)["beta"]["row"] == beta["decision"]["row"]
    assert (tmp_path / "merged" / "receipt-beta.intoto.json").is_file()
    assert not (tmp_path / "merged" / "receipt.intoto.json").exists()


def test_merge_refuses_a_shard_receipt_its_index_does_not_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = monorepo(tmp_path)
    repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
    for k in (1, 2):
        shard_run(repo, tmp_path / f"s{k}", f"{k}/2")
    edited = tmp_path / "s2" / "receipt-beta.json"
    edited.write_text(edited.read_text().replace('"ok": false', '"ok": true', 1))
    code = cli.main(
        [
            "merge",
            str(tmp_path / "s1/receipt.json"),
            str(tmp_path / "s2/receipt.json"),
            "--receipt",
            str(tmp_path / "m.json"),
        ]
    )
    assert code == 2
    assert "is not the receipt of context beta" in capsys.readouterr().err


HOSTILE_NAMES = ["../x", "a b", "x" * 41, "Billing", "-lead", "a/b", "a\nb", "receipt.json", ""]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_a_hostile_context_name_is_config_invalid(name: str) -> None:
    data = json.dumps({"version": 1, "contexts": {name: {"root": "services/a"}}}).encode()
    with pytest.raises(InputInvalid, match=r"context name .* is not allowed: use 1 to 40 lowercase"):
        parse_config(data)


def test_a_hostile_context_name_fails_the_check_closed(tmp_path: Path) -> None:
    """Through `check`: one receipt, config-invalid (exit 11), and no file named after the hostile name."""
    repo = GitRepo(tmp_path / "repo")
    hostile = json.dumps({"version": 1, "contexts": {"../../x": {"root": "services/a"}}})
    repo.commit("baseline", {".evidence-gate.yml": hostile, "services/a/x.py": "x = 1\n"})
    repo.branch("patch")
    repo.commit("change", {"services/a/x.py": "x = 2\n"})
    code, receipt = check(repo, tmp_path, "--no-run")
    assert code == 11 and receipt["decision"]["row"] == "config-invalid"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["receipt.intoto.json", "receipt.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "repo"]


@pytest.mark.parametrize(
    ("contexts", "message"),
    [
        ({"a": {"root": "svc"}, "b": {"root": "svc/b"}}, "overlap"),
        ({"a": {"root": "svc"}, "b": {"root": "svc/"}}, "overlap"),
        ({"a": {"root": "../svc"}}, "is not a folder of the repository"),
        ({"a": {"root": "/svc"}}, "is not a folder of the repository"),
        ({"a": {"root": "svc/*"}}, "is not a folder of the repository"),
        ({"a": {"root": "."}}, "is not a folder of the repository"),
        ({"a": {"root": "svc", "lockd": []}}, "'lockd' was unexpected.*takes only root, paths, locked, freeze"),
        ({"a": {"properties": {}}}, "'root' is a required property"),
        (
            {"a": {"root": "svc", "properties": {"pythonpath": ["../other"]}}},
            r"inside the repository \(relative to the context's root",
        ),
        ({}, "`contexts:` is empty"),
    ],
)
def test_an_unusable_contexts_mapping_is_config_invalid(contexts: dict[str, Any], message: str) -> None:
    with pytest.raises(InputInvalid, match=message):
        parse_config(json.dumps({"version": 1, "contexts": contexts}).encode())


def test_sections_beside_contexts_are_config_invalid() -> None:
    data = json.dumps({"version": 1, "freeze": {"mode": "locked"}, "contexts": {"a": {"root": "svc"}}}).encode()
    with pytest.raises(InputInvalid, match="move it under each context"):
        parse_config(data)


def test_context_paths_are_joined_to_the_root_and_a_leading_slash_anchors_at_the_repository() -> None:
    data = {
        "version": 1,
        "locked": ["tools/**"],
        "contexts": {
            "billing": {
                "root": "services/billing",
                "paths": ["/libs/money/**", "docs/**"],
                "locked": ["/libs/shared/", "evidence/**"],
                "freeze": {"file": "ledger.json"},
                "properties": {"list": "PROPS", "pythonpath": ["src", "."]},
                "fixtures": {"dir": "golden"},
                "probes": {"allow": ["src/log.py: sys._getframe"]},
            }
        },
    }
    [ctx] = parse_config(json.dumps(data).encode()).contexts
    config = ctx.config
    assert ctx.paths == ("libs/money/**", "services/billing/docs/**")
    assert config.locked == ("tools/**", "libs/shared/", "services/billing/evidence/**")
    assert config.freeze.file == "services/billing/ledger.json"
    assert config.properties.list == "services/billing/PROPS"
    assert config.properties.pythonpath == ("services/billing/src", "services/billing")
    assert (config.fixtures.dir, config.fixtures.digests) == (
        "services/billing/golden",
        "services/billing/fixtures/digests.json",
    )
    assert config.probes.allow == ("services/billing/src/log.py: sys._getframe",)
    assert ctx.owns("services/billing/src/x.py") and ctx.owns("libs/money/a.py")
    assert not ctx.owns("services/billingx/a.py") and not ctx.owns("libs/other.py")


def test_a_shared_library_on_a_contexts_pythonpath_judges_that_context(tmp_path: Path) -> None:
    """`pythonpath: [src, /libs/money]`: the library is alpha's code under test, so a change to it alone judges
    alpha (and runs alpha's property against it), while beta and gamma stay not judged."""
    repo = GitRepo(tmp_path / "repo")
    config = {
        "version": 1,
        "contexts": {
            "alpha": {"root": "services/alpha", "properties": {**PLAN, "pythonpath": ["src", "/libs/money"]}},
            "beta": {"root": "services/beta", "properties": {**PLAN}},
        },
    }
    property_file = PROPERTY.format(name="alpha").replace("from alpha_calc import", "from money import")
    repo.commit(
        "baseline",
        {
            ".evidence-gate.yml": json.dumps(config),
            "services/alpha/SCORE_PROPERTIES": "services/alpha/properties/test_alpha.py::test_alpha_double\n",
            "services/alpha/properties/test_alpha.py": property_file,
            "services/alpha/src/keep.py": "",
            "libs/money/money.py": GREEN,
            "services/beta/SCORE_PROPERTIES": "services/beta/properties/test_beta.py::test_beta_double\n",
            "services/beta/properties/test_beta.py": PROPERTY.format(name="beta"),
            "services/beta/src/beta_calc.py": GREEN,
        },
    )
    repo.branch("patch")
    repo.commit("break the shared library", {"libs/money/money.py": BROKEN})
    code, index = check(repo, tmp_path)
    rows = by_context(index)
    assert code == 10 and rows["alpha"]["judged"] and not rows["beta"]["judged"]
    assert rows["alpha"]["row"] == "property-failed", context_receipt(tmp_path, "alpha")["decision"]
    assert rows["alpha"]["why"] == "the pull request changes libs/money/money.py"


def test_pythonpath_outside_the_repository_is_config_invalid() -> None:
    body = {"root": "svc", "properties": {"pythonpath": ["/../etc"]}}
    with pytest.raises(InputInvalid, match="must stay inside the repository"):
        parse_config(json.dumps({"version": 1, "contexts": {"a": body}}).encode())


def test_a_hostile_path_is_printed_inert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The changed path that judged a context reaches the index and the text report as one visible line."""
    repo = monorepo(tmp_path)
    repo.commit("odd name", {"services/alpha/src/a\x1b[31m\nFAKE.py": "x = 1\n"})
    _code, index = check(repo, tmp_path, "--no-run")
    printed = capsys.readouterr().out
    assert "\x1b" not in printed
    assert by_context(index)["alpha"]["judged"]


def test_pre_push_judges_each_context_it_touches(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo = monorepo(tmp_path)
    repo.commit("edit shared", {"libs/shared/notes.txt": "rewritten by the agent\n"})
    code = cli.main(
        ["pre-push", "--repo", str(repo.path), "--against", "main", "--head", "HEAD", "--today", "2026-09-20"]
    )
    printed = capsys.readouterr().out
    assert code == 10
    assert "context alpha:\n" in printed and "context beta:\n" in printed
    assert "context gamma: not judged (the pull request changes nothing under services/gamma/" in printed


def test_the_publishers_one_repository_judgement_refuses_contexts(tmp_path: Path) -> None:
    """The fork publisher re-derives the static lanes with one `gate.evaluate` for the whole repository; with
    `contexts:` that is config-invalid naming what to use, never a verdict over the wrong evidence."""
    repo = monorepo(tmp_path)
    repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
    opts = gate.CheckOptions(repo=repo.path, base="main", head="HEAD", author="agent-x", run=False)
    receipt, code = gate.evaluate(opts, tmp_path / "receipt.json")
    assert code == 11 and receipt["decision"]["row"] == "config-invalid"
    message = receipt["violations"][0]["message"]
    assert "declares bounded contexts (alpha, beta, gamma)" in message
    assert "the fork publisher (`mode: publish`) does not support `contexts:` yet" in message


@pytest.mark.parametrize(("name", "beside"), [("r.json", "r-alpha.json"), ("r", "r-alpha"), (".json", ".json-alpha")])
def test_context_receipts_are_named_after_the_index(tmp_path: Path, name: str, beside: str) -> None:
    repo = monorepo(tmp_path)
    repo.commit("refactor alpha", {"services/alpha/src/alpha_calc.py": "def double(x):\n    return x + x\n"})
    index_path = tmp_path / "out" / name
    args = ["check", "--repo", str(repo.path), "--base", "main", "--author", "agent-x", "--no-run"]
    assert cli.main([*args, "--receipt", str(index_path), "--today", "2026-09-20"]) == 0
    index = json.loads(index_path.read_text())
    assert index["state"] == "final" and by_context(index)["alpha"]["receipt"] == beside
    assert json.loads((tmp_path / "out" / beside).read_text())["context"]["name"] == "alpha"


def test_verify_reproduces_a_contexts_receipt(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`verify` on one context's receipt judges that context again (the receipt names it), not the whole repository."""
    repo = monorepo(tmp_path)
    repo.commit("break beta", {"services/beta/src/beta_calc.py": BROKEN})
    assert check(repo, tmp_path)[0] == 10
    capsys.readouterr()
    beta = receipt_path_for(tmp_path / "out" / "receipt.json", "beta")
    assert cli.main(["verify", str(beta), "--repo", str(repo.path)]) == 0, capsys.readouterr().out
    assert capsys.readouterr().out == "reproduced\n"
