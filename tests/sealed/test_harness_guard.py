"""The harness identity check (harness_guard.Snapshot) on a real module registered as part of the harness.

The check runs before every test item of a sealed worker, so it has a fast path (C-level identity comparisons per
namespace); these cases pin that the fast path and the name-by-name judgement agree on every kind of change.
"""

from __future__ import annotations

import gc
import sys
import types
from collections.abc import Iterator

import pytest

from evidence_gate.sealed.worker import harness_guard

NAME = "_pytest._evidence_gate_guard_probe"  # under `_pytest`: judged as harness, every attribute watched


class _Equal:
    """An object that claims to equal anything: identity, not equality, must decide."""

    def __eq__(self, other: object) -> bool:
        return True

    def __hash__(self) -> int:
        return 0


def _source() -> str:
    return (
        "LIMIT = 10\n"
        "def helper(x, y=1):\n    return x + y\n"
        "def other(x, y=1):\n    return x - y\n"
        "class Report:\n"
        "    def passed(self):\n        return True\n"
        "    @property\n"
        "    def outcome(self):\n        return 'passed'\n"
    )


def _registered(source: str) -> Iterator[types.ModuleType]:
    """`source` as the harness module NAME (its `Report` class defined there), unregistered afterwards."""
    module = types.ModuleType(NAME)
    exec(compile(source, f"<{NAME}>", "exec"), vars(module))
    module.Report.__module__ = NAME
    sys.modules[NAME] = module
    try:
        yield module
    finally:
        sys.modules.pop(NAME, None)


@pytest.fixture
def probe() -> Iterator[types.ModuleType]:
    yield from _registered(_source())


def _snapshot(module: types.ModuleType) -> harness_guard.Snapshot:
    snap = harness_guard.Snapshot()
    snap.add_module(NAME, module)
    return snap


def test_nothing_changed_is_empty_on_every_call(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    assert snap.changed() == []
    assert snap.changed() == []


def test_a_rebound_function_is_found_even_when_the_new_object_claims_equality(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    probe.helper = _Equal()
    assert snap.changed() == [f"{NAME}.helper"]


def test_a_deleted_name_and_a_replaced_module_are_found(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    del probe.LIMIT
    assert snap.changed() == [f"{NAME}.LIMIT"]
    probe.LIMIT = 10  # a fresh int object of the same value is the same object (small ints are cached)
    assert snap.changed() == []
    sys.modules[NAME] = types.ModuleType(NAME)
    assert snap.changed() == [f"sys.modules.{NAME}"]


def test_code_defaults_and_property_accessors_swapped_in_place_are_found(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    code = probe.helper.__code__
    probe.helper.__code__ = probe.other.__code__
    assert snap.changed() == [f"{NAME}.helper#__code__"]
    probe.helper.__code__ = code
    assert snap.changed() == []
    probe.other.__defaults__ = (2,)
    assert snap.changed() == [f"{NAME}.other#__defaults__"]


def test_a_class_that_gains_a_watched_attribute_is_found(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    probe.Report.failed = property(lambda self: False)
    assert snap.changed() == [f"{NAME}.Report.failed"]


def test_a_replacement_cannot_take_the_freed_original_s_identity(probe: types.ModuleType) -> None:
    """Ids are addresses: were the original freed, its replacement could be allocated at the same address and pass
    an id comparison. The snapshot holds every watched object, so that cannot happen."""
    snap = _snapshot(probe)
    original_id = id(probe.helper)
    del probe.helper
    gc.collect()
    exec("def helper(x, y=1):\n    return x * y\n", vars(probe))
    assert id(probe.helper) != original_id
    assert snap.changed() == [f"{NAME}.helper"]


def test_an_excused_write_is_not_a_change_and_an_unexcused_one_still_is(probe: types.ModuleType) -> None:
    snap = _snapshot(probe)
    replacement = _Equal()
    probe.helper = replacement
    probe.other = _Equal()
    assert snap.changed({f"{NAME}:helper": id(replacement)}) == [f"{NAME}.other"]


def test_extend_watches_harness_modules_imported_later_and_never_others(probe: types.ModuleType) -> None:
    snap = harness_guard.Snapshot()
    snap.extend()
    assert NAME in snap.modules
    later = types.ModuleType("pluggy._evidence_gate_guard_later")
    plain = types.ModuleType("evidence_gate_guard_not_harness")
    sys.modules[later.__name__], sys.modules[plain.__name__] = later, plain
    try:
        later.hook = lambda: None
        plain.hook = lambda: None
        snap.extend()
        assert later.__name__ in snap.modules
        assert plain.__name__ not in snap.modules
        later.hook = lambda: 1
        plain.hook = lambda: 1
        assert snap.changed() == ["pluggy._evidence_gate_guard_later.hook"]
    finally:
        sys.modules.pop(later.__name__, None)
        sys.modules.pop(plain.__name__, None)


def test_a_class_that_gains_plain_data_is_no_change_and_hides_nothing_after_it(probe: types.ModuleType) -> None:
    """The harness's own classes gain lower-case data during an honest run; that is not reported, and a rebinding
    after it still is (the fast path must not give up for good on a grown class)."""
    snap = _snapshot(probe)
    probe.Report.cache = {}
    assert snap.changed() == []
    probe.Report.passed = lambda self: False
    assert snap.changed() == [f"{NAME}.Report.passed"]


def test_a_lasting_excused_write_keeps_every_later_change_visible(probe: types.ModuleType) -> None:
    """pytest's legacypath plugin keeps a monkeypatch on Config for the whole session (excused): the checks after
    it still find an unexcused write, a write on top of the excused one, and the undo back to the original."""
    snap = _snapshot(probe)
    original, patched = probe.helper, _Equal()
    probe.helper = patched
    excused = {f"{NAME}:helper": id(patched)}
    assert snap.changed(excused) == []
    assert snap.changed(excused) == []
    probe.other = _Equal()
    assert snap.changed(excused) == [f"{NAME}.other"]
    del probe.other
    exec("def other(x, y=1):\n    return x - y\n", vars(probe))
    assert snap.changed(excused) == [f"{NAME}.other"]
    probe.helper = _Equal()
    assert snap.changed(excused) == [f"{NAME}.helper", f"{NAME}.other"]
    probe.helper = original
    assert snap.changed(excused) == [f"{NAME}.other"]


WRAPPERS = """\
import contextlib, functools
def build(x, *, strict=False):
    return x
@contextlib.contextmanager
def scope(x):
    yield x
@functools.lru_cache(maxsize=None)
def cached(x):
    return x
class Report:
    @classmethod
    def make(cls, x):
        return x
    @staticmethod
    def check(x):
        return x
    @property
    def passed(self):
        return self.outcome == 'passed'
"""


@pytest.fixture
def wrappers() -> Iterator[types.ModuleType]:
    yield from _registered(WRAPPERS)


def _true(self: object) -> bool:
    return True


def test_a_property_accessor_s_own_code_written_in_place_is_found(wrappers: types.ModuleType) -> None:
    """`Report.passed.fget.__code__ = …` keeps the property and its fget: only the accessor's code tells."""
    snap = _snapshot(wrappers)
    wrappers.Report.passed.fget.__code__ = _true.__code__
    assert wrappers.Report().passed is True  # every report passes now
    assert snap.changed() == [f"{NAME}.Report.passed#fget.__code__"]


@pytest.mark.parametrize(("name", "kind"), [("make", classmethod), ("check", staticmethod)])
def test_a_classmethod_or_staticmethod_reinitialised_in_place_is_found(
    wrappers: types.ModuleType, name: str, kind: type
) -> None:
    """`classmethod.__init__(wrapper, other)` swaps the function the class's own wrapper object holds (no audited
    event, the same object in the class's dict, the old function's code untouched)."""
    snap = _snapshot(wrappers)
    kind.__init__(vars(wrappers.Report)[name], lambda *a: "forged")
    assert getattr(wrappers.Report, name)(1) == "forged"
    assert snap.changed() == [f"{NAME}.Report.{name}#__func__"]


@pytest.mark.parametrize("name", ["scope", "cached"])
def test_the_code_of_a_function_a_wrapper_wraps_is_watched(wrappers: types.ModuleType, name: str) -> None:
    """A context manager's generator function, an lru_cache's function: reached through `__wrapped__`, what the
    watched wrapper runs."""
    snap = _snapshot(wrappers)
    inner = getattr(wrappers, name).__wrapped__
    inner.__code__ = (lambda x: "forged").__code__ if name == "cached" else inner.__code__.replace(co_name="forged")
    assert snap.changed(written={id(inner)}) == [f"{NAME}.{name}#__wrapped__.__code__"]


def test_a_keyword_default_written_into_the_function_s_own_dict_is_found(wrappers: types.ModuleType) -> None:
    """`f.__kwdefaults__` is the function's own dict: writing into it is no audited event and keeps its identity."""
    snap = _snapshot(wrappers)
    wrappers.build.__kwdefaults__["strict"] = True
    assert snap.changed(written=set()) == [f"{NAME}.build#__kwdefaults__[strict]"]
    wrappers.build.__kwdefaults__["strict"] = False
    assert snap.changed(written=set()) == []
