"""The per-test provenance check: skipped while nothing it judges changed, never while something did."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from typing import Any

import pytest

from evidence_gate.sealed.worker import provenance

NAME = "evgate_probe_module"


def _plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, types.ModuleType, list[Any], list[int]]:
    where = tmp_path / f"{NAME}.py"
    module = types.ModuleType(NAME)
    module.__file__ = str(where)
    monkeypatch.setitem(sys.modules, NAME, module)
    calls: list[int] = []
    full = provenance.check

    def counted(expected: dict[str, str], modules: dict[str, Any] | None = None, bounds: Any = None) -> dict[str, Any]:
        calls.append(1)
        return full(expected, modules, bounds)

    monkeypatch.setattr(provenance, "check", counted)
    events: list[Any] = []
    return provenance.ProvenancePlugin({NAME: str(where)}, events.append), module, events, calls


def test_an_unchanged_sys_modules_is_not_judged_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plugin, _module, events, calls = _plugin(tmp_path, monkeypatch)
    for _ in range(5):
        plugin.report(final=False)
    assert (len(calls), events) == (1, [])
    plugin.report(final=True)  # the session's last check is always a full one
    assert len(calls) == 2
    assert events[-1]["loaded"] == {NAME: str(tmp_path / f"{NAME}.py")}


@pytest.mark.parametrize("how", ["file", "swap", "path", "cwd"])
def test_a_module_that_moved_since_the_last_check_is_judged_and_reported(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin, module, events, _calls = _plugin(tmp_path, monkeypatch)
    plugin.report(final=False)
    elsewhere = "/elsewhere/" + NAME + ".py"
    if how == "file":
        module.__file__ = elsewhere
    elif how == "swap":
        other = types.ModuleType(NAME)
        other.__file__ = elsewhere
        monkeypatch.setitem(sys.modules, NAME, other)
    elif how == "path":
        module.__file__ = None  # type: ignore[assignment]
        module.__path__ = ["/elsewhere"]
    else:  # a relative `__file__` that pointed into the tree from the working folder, judged from another one
        monkeypatch.chdir(tmp_path)
        module.__file__ = f"{NAME}.py"
        plugin.report(final=False)
        assert events == []
        monkeypatch.chdir(tmp_path.parent)
    plugin.report(final=False)
    assert [m["module"] for e in events for m in e["mismatches"]] == [NAME]


def test_bounds_name_a_tree_module_neither_locked_nor_code_under_test(tmp_path: Path) -> None:
    """With bounds, a module with code from the tree is judged: locked files and modules below a root pass; one
    elsewhere in the tree is reported once as unlocked; a namespace package (no code) and modules outside the
    tree are not judged."""
    tree = tmp_path / "tree"
    locked, under, helper = tree / "properties" / "test_x.py", tree / "src" / "calc.py", tree / "tools" / "checker.py"
    modules: dict[str, Any] = {}
    for name, file in (("test_x", locked), ("calc", under), ("checker", helper), ("os_copy", tmp_path / "os.py")):
        modules[name] = types.ModuleType(name)
        modules[name].__file__ = str(file)
    modules["tools"] = types.ModuleType("tools")
    modules["tools"].__path__ = [str(tree / "tools")]
    bounds = provenance.Bounds(str(tree), [str(tree / "src")], frozenset({str(locked)}))
    found = provenance.check({}, modules, bounds)
    assert [(m["module"], m["file"], m.get("unlocked")) for m in found["mismatches"]] == [("checker", str(helper), "1")]
    assert provenance.check({}, modules)["mismatches"] == []


def test_bounds_take_a_locked_file_reached_through_a_symlinked_folder(tmp_path: Path) -> None:
    """`properties/shared -> ../common` with `common/checker.py` locked: loaded as `properties/shared/checker.py`,
    it is the locked file (review of the bounds: it was reported)."""
    tree = tmp_path / "tree"
    (tree / "common").mkdir(parents=True)
    (tree / "properties").mkdir()
    (tree / "common" / "checker.py").write_text("X = 1\n")
    (tree / "properties" / "shared").symlink_to("../common")
    module = types.ModuleType("checker")
    module.__file__ = str(tree / "properties" / "shared" / "checker.py")
    bounds = provenance.Bounds(str(tree), [], frozenset({str(tree / "common" / "checker.py")}))
    assert provenance.check({}, {"checker": module}, bounds)["mismatches"] == []
    (tree / "properties" / "other.py").write_text("Y = 1\n")
    module.__file__ = str(tree / "properties" / "other.py")
    assert len(provenance.check({}, {"checker": module}, bounds)["mismatches"]) == 1
