"""What the steering comparison needs from one run, collected inside the sealed worker.

Each `@given` argument's strategy as its `repr` after resolution and the elements it samples from, Hypothesis'
discard count, the minimal example's `@reproduce_failure` blob; the baseline's census run (failures counted, not
stopping the search, so a red baseline still shows how many examples its own code makes the property discard) and
the replay of a head's minimal example on the baseline; and the name of Hypothesis' reason a search stopped
(`StopReasons`). Standard library and Hypothesis only.
"""

from __future__ import annotations

import enum
import hashlib
import itertools
import re
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .protocol import Kind

MAX_STRATEGIES = 32
MAX_DESCRIPTION = 400
MAX_SAMPLED = 10_000  # elements of one sampled_from rendered; a longer one is shown by its length and first ones
MAX_WALK = 2_000  # strategies and containers looked into per argument to find the sampled_froms nested in it
# Hypothesis' note: `... by temporarily adding @reproduce_failure('6.1.0', b'AXic...') as a decorator ...`.
BLOB = re.compile(r"@reproduce_failure\('([0-9A-Za-z.+-]{1,40})', b'([A-Za-z0-9+/=]{1,4000})'\)")
ADDRESS = re.compile(r"0x[0-9a-fA-F]{4,}")


def _repr(value: object) -> str:
    """A bounded `repr` with memory addresses blanked (they differ between any two processes)."""
    try:
        text = repr(value)
    except Exception as exc:  # noqa: BLE001 - a repr that raises is a description too
        text = f"<repr raised {type(exc).__name__}>"
    text = ADDRESS.sub("0x…", text)
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def describe(strategy: object) -> str:
    """`repr(strategy)`, and after `=` the repr of what a lazy or deferred strategy resolves to, when it differs;
    then, after `sampling`, the elements of the `sampled_from`s nested in it (`_sampled`).
    Resolved first: a deferred strategy's own repr changes once resolved, and a run that drew examples resolved it,
    so a description without a run (`describe`) must read the same as one after it."""
    try:
        validate = getattr(strategy, "validate", None)
        if callable(validate):
            validate()  # what a run does first: resolves the deferred strategies nested in it (one_of's branches)
        resolved = getattr(strategy, "wrapped_strategy", None)
    except Exception as exc:  # noqa: BLE001 - resolving ran code under test; that it raised is the description
        return f"{_repr(strategy)} = <resolving raised {type(exc).__name__}>"
    shown = _repr(strategy)
    if resolved is not None and resolved is not strategy:
        after = _repr(resolved)
        shown = shown if after == shown else f"{shown} = {after}"
    sampled = _sampled(strategy)
    return f"{shown} sampling {sampled}" if sampled else shown


def _sampled(strategy: object) -> str:
    """The elements of every `sampled_from` nested in a (validated) strategy, bounded, with a digest when cut.

    Its repr may name the source instead (`sampled_from(calc.Unit)` for an enum whose `_member_names_` the patch
    shortened), and a long one is cut by `_repr`. Only instance fields are read (no property, no resolution: the
    validation before resolved what a run resolves), and only the elements' own `repr` runs.
    """
    from hypothesis.strategies._internal.misc import JustStrategy  # noqa: PLC0415
    from hypothesis.strategies._internal.strategies import SampledFromStrategy, SearchStrategy  # noqa: PLC0415

    found: list[str] = []
    seen: set[int] = set()
    pending = deque([strategy])
    walked = 0
    while pending and walked < MAX_WALK:
        node = pending.popleft()
        if id(node) in seen:
            continue
        seen.add(id(node))
        walked += 1
        kind = type(node)
        if issubclass(kind, SampledFromStrategy):
            fields = getattr(node, "__dict__", {})
            elements = fields.get("elements")
            if isinstance(elements, tuple) and all(issubclass(type(e), SearchStrategy) for e in elements):
                # a sampler over strategies (one_of's branch sampler, made on drawing): its branches are walked
                pending.extend(elements[:MAX_WALK])
                continue
            # Listed only where the repr does not show the elements: a forced one (an enum's class name) or one the
            # description cuts. `just(x)` shows its value, and Hypothesis makes some while drawing (a `from_regex`
            # inside `emails()`): listing those would read differently after a run than before it.
            if issubclass(kind, JustStrategy) or not (fields.get("force_repr") or len(_repr(node)) >= MAX_DESCRIPTION):
                continue
            shown = _elements(elements)
            if shown not in found:
                found.append(shown)
            continue
        if isinstance(node, (tuple, list)):  # only exact builtins are queued: iterating them runs no code
            values: Iterable[object] = node
        elif isinstance(node, dict):
            values = node.values()
        elif issubclass(kind, SearchStrategy) and isinstance(fields := getattr(node, "__dict__", None), dict):
            # Its fields: branches, wrapped, mapped and filtered strategies, a lazy one's arguments and, once
            # resolved, what it resolved to (`_LazyStrategy__wrapped_strategy`, `_wrapped_strategy`).
            values = fields.values()
        else:
            continue
        pending.extend(
            v
            for v in itertools.islice(values, MAX_WALK)
            if type(v) in (tuple, list, dict) or issubclass(type(v), SearchStrategy)
        )
    text = "; ".join(found) + (" …" if pending else "")
    if len(text) <= MAX_DESCRIPTION:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "backslashreplace")).hexdigest()[:16]
    return f"{text[: MAX_DESCRIPTION - 28]}… sha256:{digest}"


def _elements(elements: object) -> str:
    """`(n: e1, e2, …)`, each element's bounded repr, at most MAX_SAMPLED of them (a tuple, or a range)."""
    if not isinstance(elements, (tuple, range)):
        return f"({_repr(elements)})"
    # A long text or bytes element is cut before its repr is made: its repr is cut to MAX_DESCRIPTION anyway.
    cut = (e[:MAX_DESCRIPTION] if type(e) in (str, bytes) else e for e in itertools.islice(elements, MAX_SAMPLED))
    shown = ", ".join(map(_element, cut))
    return f"({len(elements)}: {shown}{', …' if len(elements) > MAX_SAMPLED else ''})"


STAND_IN = " (not the member its class names)"


def _element(element: object) -> str:
    """An element's repr; an enum member that is not what its class gives under its name is marked: a stand-in the
    patch put in the members' map (`Unit._member_map_["KILO"] = fake`), with the same repr as the real one, is drawn
    while code under test still gets the real member from `Unit.KILO` (red team)."""
    shown = _repr(element)
    if isinstance(element, enum.Enum):
        fields = getattr(element, "__dict__", None)
        name = fields.get("_name_") if isinstance(fields, dict) else None
        try:
            same = isinstance(name, str) and getattr(type(element), name, None) is element
        except Exception:  # noqa: BLE001 - a class's own attribute lookup raised: not the member either
            same = False
        if not same:
            shown += STAND_IN
    return shown


def strategies(target: object) -> dict[str, str] | None:
    """Each `@given` argument's strategy description, or None for a test Hypothesis does not run through @given."""
    handle = getattr(target, "hypothesis", None)
    given = getattr(handle, "_given_kwargs", None)
    if not isinstance(given, Mapping):
        return None
    return {str(name): describe(given[name]) for name in sorted(given, key=str)[:MAX_STRATEGIES]}


def described(strategies: dict[str, str] | None, tampered: list[str]) -> dict[str, Any]:
    """The rest of a `describe` run's result event: the strategies, and nothing run (no example, discard or blob)."""
    return {
        "hypothesis": strategies is not None,
        "examples": None,
        "stopped_because": None,
        "stop": None,
        "assertion_hash": None,
        "falsifying": None,
        "failure": None,
        "assertion_bound": None,
        "tampered": tampered[:20],
        "examples_digest": None,
        "cases": 0,
        "case_digests": [],
        "strategies": strategies,
        "discards": None,
        "census_failures": 0,
        "blob": None,
    }


def discards(cases: Iterable[Mapping[str, Any]]) -> int:
    """Examples Hypothesis generated and threw away (`assume`, filters, overruns), from its own statistics."""
    return sum(1 for c in cases if c.get("status") in {"invalid", "overrun"})


def blob(exc: BaseException) -> str | None:
    """The `version|blob` of the minimal example Hypothesis printed for a failure (print_blob is on), or None."""
    pending: list[BaseException] = [exc]
    while pending:
        current = pending.pop()
        for note in getattr(current, "__notes__", ()) or ():
            found = BLOB.search(str(note))
            if found:
                return f"{found.group(1)}|{found.group(2)}"
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
    return None


class Census:
    """How many examples failed during a census run (they were counted and the search went on)."""

    def __init__(self) -> None:
        self.failures = 0


def prepare(target: Any, kind: str, replay: str | None, census: Census) -> Callable[[], None]:
    """Set a @given test up for its kind; returns the undo.

    `steer-base` (the baseline's census): a failing example is counted and turned into a pass, so Hypothesis runs
    every example of the seed and its discard count covers the whole search. `excuse-base`: Hypothesis replays the
    head's minimal example (`replay`, `version|blob`) instead of searching.
    """
    handle = getattr(target, "hypothesis", None)
    if handle is None or not getattr(target, "is_hypothesis_test", False):
        return lambda: None
    if kind == Kind.STEER_BASE:
        from hypothesis.errors import UnsatisfiedAssumption  # noqa: PLC0415

        inner = handle.inner_test

        def counted(*args: Any, **kwargs: Any) -> Any:
            try:
                return inner(*args, **kwargs)
            except UnsatisfiedAssumption:
                raise
            except Exception:  # noqa: BLE001 - the census counts failures; the plan runs judge them
                census.failures += 1
                return None

        handle.inner_test = counted

        def restore_inner() -> None:
            handle.inner_test = inner

        return restore_inner
    if kind == Kind.EXCUSE_BASE and replay and "|" in replay:
        version, data = replay.split("|", 1)
        saved = getattr(target, "_hypothesis_internal_use_reproduce_failure", None)
        target._hypothesis_internal_use_reproduce_failure = (version, data.encode("ascii"))

        def restore_replay() -> None:
            target._hypothesis_internal_use_reproduce_failure = saved

        return restore_replay
    return lambda: None


class StopReasons:
    """Hypothesis' own reasons a search stopped (engine.ExitReason), matched on the text its statistics carry."""

    def __init__(self) -> None:
        from hypothesis.internal.conjecture.engine import ExitReason  # noqa: PLC0415 - version-stable enum

        self.patterns = [
            (m.name, re.compile(re.escape(str(m.value)).replace(re.escape("{s.max_examples}"), r"\d+")))
            for m in sorted(ExitReason, key=lambda m: -len(str(m.value)))
        ]

    def name(self, text: str | None) -> str | None:
        """The ExitReason member's name for a `stopped-because` text, or None."""
        for name, pattern in self.patterns:
            if text is not None and pattern.fullmatch(text):
                return name
        return None
