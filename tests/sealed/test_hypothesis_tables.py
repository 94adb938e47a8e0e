"""Hypothesis' Unicode tables: produced by a harness-only process, cached with hashes, handed to workers read-only."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from evidence_gate.sealed import hypothesis_tables, runner_env
from evidence_gate.sealed import run as sealed_run
from support.property_repo import base_files, judge
from support.repo_builder import GitRepo

UPPER = """\
from hypothesis import given, strategies as st

from calc import double


@given(st.characters(categories=["Lu"]))
def test_double(c):
    assert double(len(c)) == 2
    assert c == "A", c
"""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh gate-user cache folder."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    return tmp_path / "xdg" / "evidence-gate" / "hypothesis-tables"


def _entry(cache: Path) -> Path:
    [entry] = [p for p in cache.iterdir() if p.name.startswith("hypothesis-")]
    return entry


def _only_upper_a(entry: Path) -> None:
    """Rewrite the cached charmap so that category Lu holds only "A", with a matching manifest."""
    [charmap] = entry.rglob("charmap.json.gz")
    table = dict(json.loads(gzip.decompress(charmap.read_bytes())))
    table["Lu"] = [[65, 65]]
    charmap.chmod(0o600)
    charmap.write_bytes(gzip.compress(json.dumps(sorted(table.items())).encode(), mtime=1))
    hypothesis_tables.write_manifest(entry)


def test_tables_are_built_once_then_copied_from_the_cache(cache: Path, tmp_path: Path) -> None:
    """The first runner builds and caches them (per Hypothesis and Python version); the next copies them."""
    first = runner_env.build(tmp_path / "r1")
    assert first.tables.source == "cache" and first.tables.note == "built now and cached"
    entry = _entry(cache)
    assert "cpython" in entry.name and "hypothesis-" in entry.name
    second = runner_env.build(tmp_path / "r2")
    assert second.tables == hypothesis_tables.Tables("cache", first.tables.sha256)
    copied = sorted(p.relative_to(second.storage).as_posix() for p in second.storage.rglob("*.gz"))
    assert copied and all(c.startswith("unicode_data/") for c in copied)
    assert not (second.storage / "examples").exists() and not (second.storage / "constants").exists()
    assert all(not p.stat().st_mode & 0o222 for p in second.storage.rglob("*.gz"))


def test_a_tampered_table_is_not_used_and_is_rebuilt(cache: Path, tmp_path: Path) -> None:
    """A table whose hash no longer matches its manifest is rejected; the entry is rebuilt from the harness."""
    good = runner_env.build(tmp_path / "r1").tables
    [charmap] = _entry(cache).rglob("charmap.json.gz")
    charmap.chmod(0o600)
    charmap.write_bytes(gzip.compress(b'[["Lu", [[65, 65]]]]'))
    again = runner_env.build(tmp_path / "r2").tables
    assert good.sha256 and again.note == "built now and cached"
    assert b"[65, 65]]]]" not in gzip.decompress(charmap.read_bytes())
    assert hypothesis_tables.digest_files(_entry(cache)) == hypothesis_tables.digest_files(
        tmp_path / "r2" / "hypothesis-storage"
    )


def test_an_unwritable_cache_builds_the_tables_for_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the cache folder cannot be made, the tables are still built (once, for this run) and handed in."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    runner = runner_env.build(tmp_path / "r")
    assert runner.tables.source == "built" and "not writable" in runner.tables.note
    assert list(runner.storage.rglob("charmap.json.gz"))


def test_the_worker_reads_the_handed_in_tables_and_writes_none(
    cache: Path, git_repo: GitRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a (validly hashed) table whose Lu is only "A", every drawn uppercase letter is "A": the workers read the
    tables the trusted side handed in; no worker wrote `unicode_data` anywhere. Tampered, it is not used."""
    runner_env.build(tmp_path / "warm")
    _only_upper_a(_entry(cache))
    written: list[str] = []
    close = sealed_run.Workspace.close

    def watching_close(ws: sealed_run.Workspace) -> None:
        storage = ws.root / "runner" / runner_env.STORAGE_FOLDER
        written.extend(str(p) for p in ws.root.rglob("unicode_data") if storage not in p.parents)
        close(ws)

    monkeypatch.setattr(sealed_run.Workspace, "close", watching_close)
    files = base_files(fresh_seeds=0)
    files["properties/test_double.py"] = UPPER
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("honest", {"src/calc.py": "def double(x):\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["runner"]["hypothesis_tables"]["source"] == "cache"
    assert written == []
    assert not list(git_repo.path.rglob("unicode_data"))
    [charmap] = _entry(cache).rglob("charmap.json.gz")
    charmap.write_bytes(charmap.read_bytes() + b"\0")  # tampered after its manifest was written
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "property-failed", receipt["violations"]
