"""The gate's own pytest plugin, loaded explicitly inside the sealed run.

It runs each expected property once per seed in one pytest session (no repeated collection), applies the seed
itself (Hypothesis' `ci` profile would otherwise derandomize), counts examples, re-runs a failure twice from
scratch, and streams events to a pipe the trusted process owns. Standard library, pytest and Hypothesis only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Generator
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from .assertion_hash import bound_failures, exception_hash

MAX_TEXT = 2000
# How Hypothesis prefixes the minimal example in its exception notes (older and newer releases).
FALSIFYING = ("Falsifying", "Failing test case")
# Modules whose functions a patch might swap at import time to fake a green run.
# `os`, `json` and `builtins` too: the result channel writes through them, and `__import__` decides what an import
# statement returns.
# The gate's own modules by the name they have here (a private one inside the sealed run, see runner_env).
WATCHED_MODULES = ("hypothesis", "hypothesis.strategies", "hypothesis.core", "pytest", "_pytest.runner",
                   "_pytest.python", "_pytest.reports", f"{__package__}.pytest_plugin", f"{__package__}.assertion_hash",
                   "__main__", "os", "posix", "json", "json.encoder", "builtins")


def snapshot(modules: tuple[str, ...] = WATCHED_MODULES) -> dict[str, dict[str, int]]:
    """Identity of every public callable in the watched modules, taken before repository code loads."""
    import sys  # noqa: PLC0415 - local: this module must stay importable without side effects

    out: dict[str, dict[str, int]] = {}
    for name in modules:
        module = sys.modules.get(name)
        if module is None:
            continue
        attrs = {k: id(v) for k, v in vars(module).items()
                 if callable(v) and (not k.startswith("__") or k in {"__import__", "__build_class__"})}
        # Methods of the module's own classes too: swapping `Class.method` keeps the class's identity. Not for
        # builtins: the built-in types' methods cannot be reassigned.
        classes = {} if name == "builtins" else {k: v for k, v in vars(module).items()
                                                 if isinstance(v, type) and v.__module__ == module.__name__}
        for k, cls in classes.items():
            attrs.update({f"{k}.{m}": id(f) for m, f in vars(cls).items() if callable(f)})
        out[name] = attrs
    return out


def tampered(before: dict[str, dict[str, int]]) -> list[str]:
    """Names whose object changed since `before`."""
    now = snapshot(tuple(before))
    return sorted(f"{m}.{k}" for m, attrs in before.items() for k, ident in attrs.items()
                  if now.get(m, {}).get(k) != ident)


def _text(value: object) -> str:
    text = str(value)
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + "…"


def matches_spec(nodeid: str, spec: str) -> bool:
    """Whether a collected node id belongs to a SCORE_PROPERTIES entry (file, node, or parametrized node)."""
    if "::" not in spec:
        return nodeid.startswith(spec + "::")
    return nodeid == spec or nodeid.startswith((spec + "[", spec + "::"))


def assumption_origin(exc: BaseException, test_file: str) -> str | None:
    """Where an assume/reject came from when that is not the property's own module (None: the property's own).

    The nearest frame below Hypothesis' own is what called `assume`; only the property may discard examples, never
    the code under test (which would drop exactly the inputs it gets wrong).
    """
    import hypothesis  # noqa: PLC0415

    package = hypothesis.__file__.rsplit(os.sep, 1)[0] + os.sep
    files = []
    tb = exc.__traceback__
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    caller = next((f for f in reversed(files) if not f.startswith(package)), None)
    return None if caller in {None, test_file} else str(caller)


def _test_function(item: pytest.Item) -> Any:
    """The function an item runs (a method's underlying function), or None."""
    obj = getattr(item, "obj", None)
    return getattr(obj, "__func__", obj)


class SealedPlugin:
    """Runs the job's seeds per item and reports every start and result through `emit`."""

    def __init__(self, job: dict[str, Any], emit: Callable[[dict[str, Any]], None],
                 baseline_snapshot: dict[str, dict[str, int]]) -> None:
        self.job = job
        self.emit = emit
        self.trials = int(job["trials"])
        self.reruns = int(job.get("shrink_reruns", 2))
        self.runs: dict[str, list[list[Any]]] = job["runs"]
        self.snapshot = baseline_snapshot
        self.trusted_files = frozenset(str(f) for f in job.get("trusted_files", ()))
        from hypothesis import settings  # noqa: PLC0415 - built before repository code, so no profile of its own

        self.trusted_settings = settings.get_profile("default")
        self.last_failure: dict[str, Any] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """Hide PYTEST_CURRENT_TEST from the code under test: it must not know it is being tested."""
        import _pytest.runner  # noqa: PLC0415 - pytest internals, imported only once pytest runs

        def hidden(item: pytest.Item, when: str | None) -> None:
            return None

        _pytest.runner._update_current_test_var = hidden  # hide the variable pytest would export
        self.snapshot.setdefault("_pytest.runner", {})["_update_current_test_var"] = id(hidden)
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        self.emit({"ev": "configured", "plugins": sorted(str(n) for n, _ in config.pluginmanager.list_name_plugin())})

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Report what was collected, so a missing node is visible."""
        self.emit({"ev": "collected", "nodes": [item.nodeid for item in session.items][:10000]})

    def _specs_for(self, nodeid: str) -> list[str]:
        return [spec for spec in self.runs if matches_spec(nodeid, spec)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        """Run the item once per planned seed; items outside the job are not run at all."""
        for spec in self._specs_for(item.nodeid):
            runs = self.runs[spec]
            for index, (seed, kind) in enumerate(runs):
                last = index == len(runs) - 1
                result = self._run_once(item, spec, int(seed), str(kind), item if not last else nextitem)
                if result["outcome"] == "failed" and kind in {"plan", "fresh"}:
                    for rerun in range(self.reruns):
                        self._run_once(item, spec, int(seed), f"shrink{rerun + 1}", item)
        return True

    def _run_once(self, item: pytest.Item, spec: str, seed: int, kind: str,
                  nextitem: pytest.Item | None) -> dict[str, Any]:
        changed = tampered(self.snapshot)
        self.emit({"ev": "start", "node": item.nodeid, "spec": spec, "seed": seed, "kind": kind})
        foreign = self._foreign_test(item)
        counter = [0]
        steered: list[str] = []
        restore, is_hypothesis = self._apply_seed(item, seed, counter, steered)
        if is_hypothesis:
            # The seed is applied to Hypothesis directly; exporting it too would tell the code under test it is tested.
            os.environ.pop("PROPERTY_SEED", None)
            os.environ.pop("PROPERTY_TRIALS", None)
        else:
            os.environ["PROPERTY_SEED"] = str(seed)
            os.environ["PROPERTY_TRIALS"] = str(self.trials)
        self.last_failure = {}
        outcome = "passed"
        message = ""
        try:
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
        except BaseException as exc:  # noqa: BLE001 - pytest.exit or similar from the code under test: record it
            reports = []
            outcome, message = "error", f"the run was interrupted: {type(exc).__name__}: {_text(exc)}"
        finally:
            restore()
        for report in reports:
            if report.passed and not hasattr(report, "wasxfail"):
                continue
            if hasattr(report, "wasxfail"):
                outcome = "xfailed" if report.skipped else "xpassed"
            elif report.skipped:
                outcome = "skipped"
            elif report.when == "call":
                outcome = "failed" if outcome == "passed" else outcome
            else:
                outcome = "error"
            message = message or _text(report.longreprtext.splitlines()[-1] if report.longreprtext else "")
            if outcome != "failed":
                break
        if foreign is not None:
            outcome, message = "error", f"the test function that ran was defined in {foreign}, not the locked file"
        elif steered and outcome == "passed":
            outcome, message = "error", (f"the code under test discarded examples (assume/reject or an example "
                                         f"marked invalid, from {steered[0]}, not from the property)")
        changed = changed or tampered(self.snapshot)
        result = {"ev": "result", "node": item.nodeid, "spec": spec, "seed": seed, "kind": kind, "outcome": outcome,
                  "message": message, "examples": counter[0] if is_hypothesis else None,
                  "assertion_hash": self.last_failure.get("hash"), "falsifying": self.last_failure.get("example"),
                  "assertion_bound": self.last_failure.get("bound"),
                  "tampered": changed[:20]}
        self.emit(result)
        return result

    def _foreign_test(self, item: pytest.Item) -> str | None:
        """Where the test body comes from when that is not a locked file (it was swapped after the import), or None."""
        target = _test_function(item)
        if getattr(target, "is_hypothesis_test", False):
            target = getattr(getattr(target, "hypothesis", None), "inner_test", None)
        if target is None:
            return None  # a unittest-style item resolves its method at setup (a state machine's is Hypothesis')
        code = getattr(target, "__code__", None)
        where = str(getattr(code, "co_filename", "")) or repr(target)[:200]
        return None if where in self.trusted_files | {str(getattr(item, "path", ""))} else where

    def _pin_stateful(self, item: pytest.Item) -> Callable[[], None]:
        """A Hypothesis state machine's TestCase: its settings were built from whatever profile was loaded when the
        test module imported (after the code under test), so they are pinned here; returns the undo."""
        from hypothesis import Phase, settings  # noqa: PLC0415

        cls = getattr(item, "cls", None)
        current = getattr(cls, "settings", None)
        if cls is None or not isinstance(current, settings):
            return lambda: None
        cls.settings = settings(current, max_examples=max(self.trials, current.max_examples), derandomize=False,
                                database=None, deadline=None, backend="hypothesis",
                                phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
                                stateful_step_count=max(current.stateful_step_count,
                                                        self.trusted_settings.stateful_step_count))

        def restore() -> None:
            cls.settings = current

        return restore

    def _apply_seed(self, item: pytest.Item, seed: int, counter: list[int], steered: list[str]
                    ) -> tuple[Callable[[], None], bool]:
        target = _test_function(item)
        handle = getattr(target, "hypothesis", None)
        if not getattr(target, "is_hypothesis_test", False) or handle is None:
            return self._pin_stateful(item), False
        from hypothesis import Phase, settings  # noqa: PLC0415
        from hypothesis.errors import StopTest, UnsatisfiedAssumption  # noqa: PLC0415

        saved = (target._hypothesis_internal_use_settings, target._hypothesis_internal_use_seed, handle.inner_test)
        inner = handle.inner_test

        @functools.wraps(inner)
        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                value = inner(*args, **kwargs)
            except (UnsatisfiedAssumption, StopTest) as exc:  # assume/reject, or the example marked invalid/overrun
                origin = assumption_origin(exc, str(getattr(item, "path", "")))
                if origin is not None:
                    steered.append(origin)
                raise
            counter[0] += 1
            return value

        handle.inner_test = counted
        target._hypothesis_internal_use_settings = settings(
            saved[0], max_examples=self.trials, derandomize=False, database=None, deadline=None,
            phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
            # Hypothesis' own backend: a provider the code under test registered must not choose the inputs.
            backend="hypothesis",
        )
        target._hypothesis_internal_use_seed = seed

        def restore() -> None:
            target._hypothesis_internal_use_settings, target._hypothesis_internal_use_seed, handle.inner_test = saved

        return restore, True

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Keep the failing assertion's hash and Hypothesis' falsifying example of a failed call."""
        report = yield
        if call.when == "call" and call.excinfo is not None:
            exc = call.excinfo.value
            notes = [str(n) for n in getattr(exc, "__notes__", ()) if str(n).startswith(FALSIFYING)]
            own = str(getattr(item, "path", "")) or None
            self.last_failure = {"hash": exception_hash(exc, own_file=own),
                                 "example": _text("\n".join(notes)) if notes else None,
                                 "bound": bound_failures(exc, own_file=own)[:20]}
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The marker that the session completed."""
        self.emit({"ev": "finished", "exitstatus": int(exitstatus), "tampered": tampered(self.snapshot)[:20]})
