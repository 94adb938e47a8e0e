"""The gate's own pytest plugin, loaded explicitly inside the sealed run.

It runs each expected property once per seed in one pytest session (collection once), each (test, seed) through
pytest's full protocol: the test's function-scoped fixtures are torn down and set up again for every seed, higher
scopes live as long as pytest would keep them. It applies the seed itself (Hypothesis' `ci` profile would otherwise
derandomize), takes example counts and the reason a seed stopped from Hypothesis' own statistics, judges every
discarded example and every change to the harness by the code it came from, re-runs a failure twice from scratch,
and streams events to a pipe the trusted process owns. Standard library, pytest and Hypothesis only.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import os
from collections.abc import Callable, Generator
from typing import Any

import pytest
from _pytest.runner import runtestprotocol

from . import failures, harness_guard, steering_stats
from .assertion_hash import bound_failures, exception_hash
from .effects import Effects
from .protocol import EV, PLAN_KINDS, Event, Job, Kind, matches_spec, shrink_kind

# Per-example digests a result carries, so that two runs of one seed can name the first example that differs.
MAX_CASE_DIGESTS = 64
# How Hypothesis prefixes the minimal example in its exception notes (older and newer releases).
FALSIFYING = ("Falsifying", "Failing test case", "Failing explicit example")
HOOKED = (
    "a trace, profile or monitoring hook the gate did not install was found in this run (see the run-integrity "
    "row), so its outcome is not evidence"
)


def _test_function(item: pytest.Item) -> Any:
    """The function an item runs (a method's underlying function), or None."""
    obj = getattr(item, "obj", None)
    return getattr(obj, "__func__", obj)


class SealedPlugin:
    """Runs the job's seeds per item and reports every start and result through `emit`."""

    # Harness attributes the plugin replaces itself, before any repository code runs and before it takes the snapshot
    # every later check compares with (tests/unit/test_plugin_snapshot.py: these and nothing else).
    OWN_HOOKS = (
        "hypothesis.internal.conjecture.data:ConjectureData.conclude_test",
        "hypothesis.internal.conjecture.data:ConjectureData.freeze",
        "_pytest.monkeypatch:MonkeyPatch.setattr",
        "_pytest.monkeypatch:MonkeyPatch.delattr",
        "_pytest.runner:_update_current_test_var",
        "hypothesis.core:deterministic_PRNG",
        "_pytest.assertion.rewrite:_rewrite_test",
    )

    def __init__(
        self,
        job: Job,
        emit: Callable[[dict[str, Any]], None],
        effects: Effects | None = None,
    ) -> None:
        self.job = job
        self.emit = emit
        self.effects = effects or Effects(emit, str(job.get("tree", "")))
        self.effects.settle()
        self.seed = 0
        self.examples_run = 0
        self.trials = int(job["trials"])
        self.reruns = int(job.get("shrink_reruns", 2))
        self.runs: dict[str, list[list[Any]]] = job["runs"]
        self.tree = str(job.get("tree", "")).rstrip(os.sep)
        self.trusted_files = frozenset(str(f) for f in job.get("trusted_files", ()))
        from hypothesis import settings  # noqa: PLC0415 - built before repository code, so no profile of its own
        from hypothesis.core import StateForActualGivenExecution  # noqa: PLC0415
        from hypothesis.statistics import note_statistics  # noqa: PLC0415

        self.trusted_settings = settings.get_profile("default")
        self.origins = harness_guard.Origins(self.trusted_files)
        self.where = failures.Where(self.tree, self.origins, self.trusted_files)
        self.stop_reasons = steering_stats.StopReasons()
        # Statistics count only when Hypothesis' own engine delivered them (see _note_statistics).
        self.statistics_code = (note_statistics.__code__, StateForActualGivenExecution.run_engine.__code__)
        self.last_failure: dict[str, Any] = {}
        self.stats: list[dict[str, Any]] = []
        self.census = steering_stats.Census()
        self.culprits: list[str] = []
        self.excused: dict[str, int | None] = {}
        self.collected: list[str] = []
        self.cases, self.case_count = hashlib.sha256(), 0
        self.case_digests: list[str] = []
        self.running = False
        self._install_hooks()
        # The harness as the worker imported it, with the plugin's own hooks in place: only trusted code has run so far
        # (the worker builds the plugin before any repository path is on sys.path); watched from here on.
        self.identity = harness_guard.take()

    def _install_hooks(self) -> None:
        """Judge every example Hypothesis discards by its origin, note a locked test's monkeypatches, and hide
        PYTEST_CURRENT_TEST from the code under test (it must not know it is being tested)."""
        import _pytest.monkeypatch  # noqa: PLC0415
        import _pytest.runner  # noqa: PLC0415
        from hypothesis.errors import UnsatisfiedAssumption  # noqa: PLC0415
        from hypothesis.internal.conjecture.data import ConjectureData, Status  # noqa: PLC0415

        conclude = ConjectureData.conclude_test
        plugin = self

        def conclude_test(data: Any, status: Any, interesting_origin: Any = None) -> Any:
            if status != Status.INTERESTING:
                plugin._judge_discard(harness_guard.GETFRAME(1), UnsatisfiedAssumption)
            return conclude(data, status, interesting_origin)

        setattr(ConjectureData, "conclude_test", conclude_test)  # noqa: B010 - a method swap mypy would refuse
        freeze = ConjectureData.freeze

        def frozen(data: Any) -> None:
            first = not data.frozen
            freeze(data)
            if first and plugin.running:
                plugin._note_case(data)

        setattr(ConjectureData, "freeze", frozen)  # noqa: B010
        patch = _pytest.monkeypatch.MonkeyPatch
        for name in ("setattr", "delattr"):
            setattr(patch, name, self._noting(getattr(patch, name)))

        def hidden(item: pytest.Item, when: str | None) -> None:
            return None

        setattr(_pytest.runner, "_update_current_test_var", hidden)  # noqa: B010
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        self._reseed_examples()
        self._rewrite_untraced()

    def _rewrite_untraced(self) -> None:
        """A head worker's line recorder pauses while pytest rewrites a test file's asserts: parsing and compiling the
        source runs no repository code (the module is executed afterwards, traced), and the trace function on every
        call of the AST walk cost about 0.7 s of CPU a worker on attrs' suite."""
        recorder = self.effects.recorder
        from _pytest.assertion import rewrite  # noqa: PLC0415

        original = getattr(rewrite, "_rewrite_test", None)
        if recorder is None or not callable(original):
            return

        def rewrite_test(*args: Any, **kwargs: Any) -> Any:
            recorder.pause()
            try:
                return original(*args, **kwargs)
            finally:
                recorder.resume()

        setattr(rewrite, "_rewrite_test", rewrite_test)  # noqa: B010

    def _reseed_examples(self) -> None:
        """Hypothesis seeds the global `random` with 0 before every example, so inside one `random.getstate()` equals
        a fresh `Random(0)`'s: code under test could tell it is tested. Each example of a run gets its own seed,
        derived from the run's seed and the example's number (a re-run of the seed sees the same sequence). After
        each example the trace, profile and monitoring hooks are checked."""
        import hypothesis.core  # noqa: PLC0415

        original = getattr(hypothesis.core, "deterministic_PRNG")  # noqa: B009 - not re-exported by name
        plugin = self

        @contextlib.contextmanager
        def deterministic_prng(seed: int = 0) -> Generator[None, None, None]:
            if plugin.running:
                plugin.examples_run += 1
                text = f"evidence-gate:{plugin.seed}:{plugin.examples_run}".encode()
                seed = int.from_bytes(hashlib.sha256(text).digest()[:4], "big")
            try:
                with original(seed):
                    yield
            finally:
                if plugin.running:
                    plugin.effects.check("during an example", full=False)

        setattr(hypothesis.core, "deterministic_PRNG", deterministic_prng)  # noqa: B010

    def _noting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        plugin = self

        def patched(mp: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(mp, *args, **kwargs)
            plugin._note_patch(mp, harness_guard.GETFRAME(1), original.__name__)
            return result

        return patched

    def _note_patch(self, mp: Any, caller: Any, how: str) -> None:
        """A monkeypatch of a watched attribute is the test's own business when a locked file asked for it."""
        records = getattr(mp, "_setattr", None)
        if not records:
            return
        target, name = records[-1][0], str(records[-1][1])
        if isinstance(target, type(os)):
            key = f"{target.__name__}:{name}"
        elif isinstance(target, type):
            key = f"{target.__module__}:{target.__qualname__}.{name}"
        else:
            return
        culprit = self.origins.culprit(harness_guard.stack(caller))
        if culprit is None:
            value = getattr(target, name, None)
            self.excused[key] = id(value) if how == "setattr" else None
            for part, ident in harness_guard.function_parts(key, value):
                self.excused[part] = ident if how == "setattr" else None
        else:
            self.culprits.append(f"{self.where.rel(culprit)} monkeypatched {key.replace(':', '.', 1)}")

    def _note_case(self, data: Any) -> None:
        """One example Hypothesis ran: its choice sequence and status into the run's example digest."""
        choices = getattr(data, "choices", None)
        text = repr(choices) if choices is not None else bytes(getattr(data, "buffer", b"")).hex()
        case = hashlib.sha256(f"{getattr(data.status, 'name', data.status)}:{text}".encode()).hexdigest()
        self.cases.update(case.encode())
        self.case_count += 1
        if len(self.case_digests) < MAX_CASE_DIGESTS:
            self.case_digests.append(case[:12])

    def _judge_discard(self, frame: Any, assumption: type[BaseException]) -> None:
        """An example concluded early (discarded, overrun, or cut short): by whom? The failed assumption being
        handled tells where `assume`/`reject` was called; otherwise the frames running now do."""
        if not self.running:
            return
        handled = harness_guard.EXC_INFO()[1]
        frames = harness_guard.traceback_frames(handled) if isinstance(handled, assumption) else []
        culprit = self.origins.culprit([*frames, *harness_guard.stack(frame)])
        if culprit is not None:
            self.culprits.append(f"{self.where.rel(culprit)} discarded an example")

    def _tampered(self, *, every_part: bool = False) -> list[str]:
        """What changed in the harness. Between items the functions' code and defaults are read again only after the
        audit hook saw one written; `every_part` reads them all, whatever the hook saw: a write that raises no audit
        event (`PyFunction_SetDefaults` from C, which `_testcapi.function_set_defaults` reaches on 3.12+, or a
        pointer written through ctypes) is then still found, as every check found it before the skip."""
        self.identity.extend()
        # Without the audit hook installed (a plugin built outside a worker) the parts are always read.
        writes = self.effects.part_writes() if self.effects.installed else None
        return self.identity.changed(self.excused, None if every_part else writes)

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        """Report the plugins pytest loaded."""
        self.emit({EV: Event.CONFIGURED, "plugins": sorted(str(n) for n, _ in config.pluginmanager.list_name_plugin())})

    @pytest.hookimpl(wrapper=True)
    def pytest_load_initial_conftests(
        self, early_config: pytest.Config, parser: Any, args: list[str]
    ) -> Generator[None, Any, Any]:
        """A conftest that fails to import stops pytest before any session: say which file and why."""
        try:
            return (yield)
        except Exception as exc:
            self._collect_error(str(getattr(exc, "path", "conftest.py")), exc)
            raise

    def pytest_exception_interact(self, node: Any, call: pytest.CallInfo[Any], report: Any) -> None:
        """A collector that failed (an import error in a test module, a broken conftest): the real cause."""
        if not isinstance(node, pytest.Item) and call.excinfo is not None:
            self._collect_error(str(getattr(node, "nodeid", "") or getattr(node, "path", "")), call.excinfo.value)

    def _collect_error(self, where: str, exc: BaseException) -> None:
        cause = failures.root_cause(exc)
        what = failures.describe(cause)
        if isinstance(cause, ImportError) and cause.name:
            what = f"module {cause.name!r} could not be imported ({what})"
        frame = self.where.innermost(cause)
        at = f" at {frame[0]}:{frame[1]}" if frame else ""
        self.emit(
            {EV: Event.COLLECT_ERROR, "node": self.where.rel(where), "message": failures.text(f"{what}{at}", 600)}
        )

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        """Keep only the job's items: pytest then hands each the right next item, so scopes end where they should."""
        self.collected = [item.nodeid for item in items]
        keep = [item for item in items if self._specs_for(item.nodeid)]
        if len(keep) != len(items):
            config.hook.pytest_deselected(items=[item for item in items if not self._specs_for(item.nodeid)])
            items[:] = keep

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """Report what was collected, so a missing node is visible, and any hook the code under test implements."""
        self.emit({EV: Event.COLLECTED, "nodes": self.collected[:10000]})
        self._report_foreign_hooks(session.config)

    def _report_foreign_hooks(self, config: pytest.Config) -> None:
        """A hook sees, and can rewrite, every item and report: one defined outside the harness and the locked files
        (a plugin module under `pythonpath` that a locked conftest's `pytest_plugins` names) is code under test."""
        found = []
        manager = config.pluginmanager
        for _name, plugin in manager.list_name_plugin():
            for caller in manager.get_hookcallers(plugin) or ():
                for impl in caller.get_hookimpls():
                    code = getattr(impl.function, "__code__", None)
                    filename = str(getattr(code, "co_filename", "") or "")
                    if (
                        impl.plugin is plugin
                        and filename
                        and not self.origins.transparent(filename)
                        and filename not in self.trusted_files
                    ):
                        found.append(f"{caller.name} in {self.where.rel(filename)}")
        if found:
            self.emit({EV: Event.FOREIGN_HOOKS, "hooks": sorted(set(found))[:20]})

    def _specs_for(self, nodeid: str) -> list[str]:
        return [spec for spec in self.runs if matches_spec(nodeid, spec)]

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None) -> bool:
        """Run the item once per planned seed, each run a full setup/call/teardown.

        Between two runs of one item, pytest tears down "towards" a copy of the item (same parents, another
        identity): the item's own function-scoped fixtures end, its class, module and session scopes stay. The
        last run tears down towards pytest's real next item. A failure is re-run twice from scratch.
        """
        queue = [
            (spec, int(seed), str(kind)) for spec in self._specs_for(item.nodeid) for seed, kind in self.runs[spec]
        ]
        sibling = copy.copy(item)
        # The harness is checked once per item (and at the session's end): any change fails the whole worker.
        changed = self._tampered()
        if queue and all(kind == Kind.DESCRIBE for _spec, _seed, kind in queue):
            for spec, seed, kind in queue:
                self._describe_once(item, spec, seed, kind, changed)
            # Nothing was set up for this item; end what an earlier item left that the next one does not need.
            item.session._setupstate.teardown_exact(nextitem)
            return True
        while queue:
            spec, seed, kind = queue.pop(0)
            result = self._run_once(item, spec, seed, kind, sibling if queue else nextitem, changed)
            if result["outcome"] == "failed" and kind in PLAN_KINDS:
                queue[0:0] = [(spec, seed, shrink_kind(n + 1)) for n in range(self.reruns)]
        return True

    def _run_once(
        self, item: pytest.Item, spec: str, seed: int, kind: str, nextitem: pytest.Item | None, changed: list[str]
    ) -> dict[str, Any]:
        self.emit({EV: Event.START, "node": item.nodeid, "spec": spec, "seed": seed, "kind": kind})
        self.effects.check(f"before {item.nodeid} ran on seed {seed}")
        self.seed, self.examples_run = seed, 0
        hooked = self.effects.count
        foreign = self._foreign_test(item)
        self.stats, self.culprits, self.last_failure = [], [], {}
        self.cases, self.case_count, self.case_digests = hashlib.sha256(), 0, []
        self.census = steering_stats.Census()
        restore, is_hypothesis = self._apply_seed(item, seed)
        replay = (self.job.get("replays") or {}).get(spec, {}).get(str(seed))
        unsteer = steering_stats.prepare(_test_function(item), kind, replay, self.census)
        if is_hypothesis:
            # The seed is applied to Hypothesis directly; exporting it too would tell the code under test it is tested.
            os.environ.pop("PROPERTY_SEED", None)
            os.environ.pop("PROPERTY_TRIALS", None)
        else:
            os.environ["PROPERTY_SEED"] = str(seed)
            os.environ["PROPERTY_TRIALS"] = str(self.trials)
        for attr in ("_report_sections", "user_properties"):  # a fresh report per run, not the sum of all runs
            if isinstance(getattr(item, attr, None), list):
                setattr(item, attr, [])
        interrupted = ""
        self.running = True
        try:
            reports = runtestprotocol(item, log=False, nextitem=nextitem)
        except BaseException as exc:  # noqa: BLE001 - pytest.exit or similar from the code under test: record it
            reports = []
            interrupted = f"the run was interrupted: {failures.describe(exc)}"
        finally:
            self.running = False
            unsteer()
            restore()
        outcome, message = failures.outcome(reports, interrupted)
        stats = self.stats[-1] if self.stats else {}
        self.effects.check(f"while {item.nodeid} ran on seed {seed}")
        if self.effects.count > hooked:
            outcome, message = "error", HOOKED
        elif foreign is not None:
            outcome, message = "error", f"the test function that ran was defined in {foreign}, not the locked file"
        elif self.culprits and outcome == "passed":
            outcome, message = (
                "error",
                (
                    f"the code under test steered Hypothesis: "
                    f"{'; '.join(list(dict.fromkeys(self.culprits))[:3])} (only the property, "
                    "its locked helpers and their strategies may discard examples)"
                ),
            )
        result = {
            EV: Event.RESULT,
            "node": item.nodeid,
            "spec": spec,
            "seed": seed,
            "kind": kind,
            "outcome": outcome,
            "message": message,
            "hypothesis": is_hypothesis,
            "examples": stats.get("examples"),
            "stopped_because": stats.get("stopped_because"),
            "stop": stats.get("stop"),
            "assertion_hash": self.last_failure.get("hash"),
            "falsifying": self.last_failure.get("example"),
            "failure": self.last_failure.get("failure"),
            "assertion_bound": self.last_failure.get("bound"),
            "tampered": changed[:20],
            "examples_digest": self.cases.hexdigest() if self.case_count else None,
            "cases": self.case_count,
            "case_digests": self.case_digests,
            **self._steering(item, stats),
        }
        self.emit(result)
        return result

    def _describe_once(self, item: pytest.Item, spec: str, seed: int, kind: str, changed: list[str]) -> None:
        """Report the property's strategies without running it (no fixture, no example): steering's census of a
        property whose head run discarded too few examples to be steered. Resolving a strategy runs code under test."""
        self.emit({EV: Event.START, "node": item.nodeid, "spec": spec, "seed": seed, "kind": kind})
        self.effects.check(f"before {item.nodeid} was described")
        hooked, foreign = self.effects.count, self._foreign_test(item)
        described = steering_stats.strategies(_test_function(item))
        self.effects.check(f"while {item.nodeid} was described")
        outcome, message = ("error", HOOKED) if self.effects.count > hooked else ("passed", "")
        if foreign is not None and outcome == "passed":
            outcome, message = "error", f"the test function that ran was defined in {foreign}, not the locked file"
        result = {EV: Event.RESULT, "node": item.nodeid, "spec": spec, "seed": seed, "kind": kind}
        self.emit({**result, "outcome": outcome, "message": message, **steering_stats.described(described, changed)})

    def _steering(self, item: pytest.Item, stats: dict[str, Any]) -> dict[str, Any]:
        """What the steering comparison reads: the strategies, the discards, the census' failures, the blob."""
        return {
            "strategies": steering_stats.strategies(_test_function(item)),
            "discards": stats.get("discards"),
            "census_failures": self.census.failures,
            "blob": self.last_failure.get("blob"),
        }

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

    def _pin_stateful(self, item: pytest.Item) -> tuple[Callable[[], None], bool]:
        """A Hypothesis state machine's TestCase: its settings were built from whatever profile was loaded when the
        test module imported (after the code under test), so they are pinned here; returns the undo."""
        from hypothesis import Phase, settings  # noqa: PLC0415

        cls = getattr(item, "cls", None)
        current = getattr(cls, "settings", None)
        if cls is None or not isinstance(current, settings):
            return (lambda: None), False
        cls.settings = settings(
            current,
            max_examples=max(self.trials, current.max_examples),
            derandomize=False,
            database=None,
            deadline=None,
            backend="hypothesis",
            phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
            stateful_step_count=max(current.stateful_step_count, self.trusted_settings.stateful_step_count),
        )

        def restore() -> None:
            cls.settings = current

        return restore, True

    def _apply_seed(self, item: pytest.Item, seed: int) -> tuple[Callable[[], None], bool]:
        """Seed and pin Hypothesis for one run: a @given test through its own attributes, a state machine through
        the seed `--hypothesis-seed` would set; returns the undo and whether Hypothesis runs the test."""
        import hypothesis.core  # noqa: PLC0415

        forced = hypothesis.core.global_force_seed
        setattr(hypothesis.core, "global_force_seed", seed)  # noqa: B010 - typed as None in Hypothesis
        target = _test_function(item)
        if not getattr(target, "is_hypothesis_test", False) or getattr(target, "hypothesis", None) is None:
            undo, stateful = self._pin_stateful(item)

            def restore_plain() -> None:
                setattr(hypothesis.core, "global_force_seed", forced)  # noqa: B010
                undo()

            return restore_plain, stateful
        from hypothesis import Phase, settings  # noqa: PLC0415

        saved = (target._hypothesis_internal_use_settings, target._hypothesis_internal_use_seed)
        target._hypothesis_internal_use_settings = settings(
            saved[0],
            max_examples=self.trials,
            derandomize=False,
            database=None,
            deadline=None,
            phases=(Phase.explicit, Phase.generate, Phase.target, Phase.shrink),
            print_blob=True,  # the minimal example's blob, which the baseline replays to judge a freeze excuse
            # Hypothesis' own backend: a provider the code under test registered must not choose the inputs.
            backend="hypothesis",
        )
        target._hypothesis_internal_use_seed = seed

        def restore() -> None:
            target._hypothesis_internal_use_settings, target._hypothesis_internal_use_seed = saved
            setattr(hypothesis.core, "global_force_seed", forced)  # noqa: B010

        return restore, True

    @pytest.hookimpl(wrapper=True, trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        """Receive Hypothesis' own statistics for this call (innermost, so no other collector takes them)."""
        from hypothesis.statistics import collector  # noqa: PLC0415

        with collector.with_value(self._note_statistics):  # type: ignore[arg-type]  # typed for its None default
            return (yield)

    def _note_statistics(self, stats: dict[str, Any]) -> None:
        """Hypothesis' engine reports a finished search: how many examples were valid and why it stopped. Only a
        call from `note_statistics` inside `run_engine` counts; anything else is the code under test forging it."""
        caller = harness_guard.GETFRAME(1)
        engine = caller.f_back
        note, run_engine = self.statistics_code
        if caller.f_code is not note or engine is None or engine.f_code is not run_engine:
            culprit = self.origins.culprit(harness_guard.stack(caller)) or caller.f_code.co_filename
            self.culprits.append(f"{self.where.rel(culprit)} reported Hypothesis statistics itself")
            return
        cases = [
            case
            for phase in ("reuse-phase", "generate-phase")
            for case in (stats.get(phase) or {}).get("test-cases", ())
        ]
        text = stats.get("stopped-because")
        self.stats.append(
            {
                "examples": sum(1 for c in cases if c.get("status") in {"valid", "interesting"}),
                "stopped_because": str(text) if text is not None else None,
                "stop": self.stop_reasons.name(str(text) if text is not None else None),
                "discards": steering_stats.discards(cases),
            }
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        """Keep the failure's record (the locked line that failed), hash and Hypothesis' falsifying example, and a
        message in the user's terms (the failing fixture, the test's own line) on the report."""
        report = yield
        if call.excinfo is None or call.excinfo.errisinstance((pytest.skip.Exception, pytest.xfail.Exception)):
            return report
        exc = call.excinfo.value
        if call.when == "call":
            # Hypothesis notes the example on the exception, or on each leaf of the group of distinct failures.
            notes = [
                str(n)
                for e in (exc, failures.leaf(exc))
                for n in getattr(e, "__notes__", ())
                if str(n).startswith(FALSIFYING)
            ][:1]
            own = str(getattr(item, "path", "")) or None
            failure = self.where.failure_record(exc)
            self.last_failure = {
                "hash": exception_hash(exc, own_file=own),
                "failure": failure,
                "example": failures.text("\n".join(notes)) if notes else None,
                "bound": bound_failures(exc, own_file=own)[:20],
                "blob": steering_stats.blob(exc),
            }
            where = (failure["path"], failure["line"]) if failure else self.where.innermost(failures.leaf(exc))
            report._gate_message = failures.describe(exc) + (f" ({where[0]}:{where[1]})" if where else "")
        else:
            report._gate_message = self.where.fixture_message(call.when, exc)
        return report

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        """The marker that the session completed (after a last look for hooks registered while tests ran)."""
        self._report_foreign_hooks(session.config)
        self.effects.check("by the end of the session")
        self.emit({EV: Event.FINISHED, "exitstatus": int(exitstatus), "tampered": self._tampered(every_part=True)[:20]})
