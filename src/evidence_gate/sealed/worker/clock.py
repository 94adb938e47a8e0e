"""A shifted wall clock for the code under test, so a property whose outcome reads the clock shows it.

Worker-side (standard library only). `shift` moves `time.time`, `time.time_ns`, the no-argument forms of
`time.localtime`, `gmtime`, `ctime`, `asctime` and `strftime`, and `datetime.datetime.now`/`utcnow`/`today` and
`datetime.date.today` by a fixed number of seconds. It only rebinds names in `time` and `datetime` (no trace, audit
or frame hook, so the effect checks have nothing to see), before any repository module is imported. The monotonic
and performance counters are left alone: they have no meaning but differences, which a shift would not change.
`datetime.datetime` and `datetime.date` become subclasses that construct the real types, and whose `isinstance`
accepts real instances, so values built elsewhere (Hypothesis' strategies) are the ordinary ones.
"""

from __future__ import annotations

import datetime
import time
from typing import Any

_MISSING = object()


class _Real(type):
    """The metaclass of the shifted types: an instance or subclass of the real type counts as one of them."""

    real: type

    def __instancecheck__(cls, obj: object) -> bool:
        return isinstance(obj, cls.real)

    def __subclasscheck__(cls, sub: type) -> bool:
        return issubclass(sub, cls.real)


def shift(seconds: float) -> None:
    """Move the wall clock the process reads by `seconds` (see the module's docstring)."""
    if not seconds:
        return
    real_time, real_ns = time.time, time.time_ns
    offset_ns = round(seconds * 1e9)

    def shifted_time() -> float:
        return real_time() + seconds

    def shifted_ns() -> int:
        return real_ns() + offset_ns

    time.time, time.time_ns = shifted_time, shifted_ns
    for name in ("localtime", "gmtime", "ctime"):
        setattr(time, name, _defaulting(getattr(time, name), shifted_time))
    real_strftime, real_asctime, real_localtime = time.strftime, time.asctime, time.localtime

    def strftime(fmt: str, t: Any = _MISSING) -> str:
        return real_strftime(fmt, real_localtime() if t is _MISSING else t)

    def asctime(t: Any = _MISSING) -> str:
        return real_asctime(real_localtime() if t is _MISSING else t)

    time.strftime, time.asctime = strftime, asctime
    _shift_datetime(shifted_time)


def _defaulting(real: Any, clock: Any) -> Any:
    """`real(secs=None)` with the shifted clock for a missing or None argument."""

    def shifted(secs: float | None = None) -> Any:
        return real(clock() if secs is None else secs)

    shifted.__name__ = real.__name__
    return shifted


def _shift_datetime(clock: Any) -> None:
    real_date: Any = datetime.date
    real_datetime: Any = datetime.datetime

    class ShiftedDate(real_date, metaclass=_Real):  # type: ignore[misc]  # the real type, whatever the stubs say
        real = real_date

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real_date(*args, **kwargs)

        @classmethod
        def today(cls) -> Any:
            return real_date.fromtimestamp(clock())

    class ShiftedDatetime(real_datetime, metaclass=_Real):  # type: ignore[misc]
        real = real_datetime

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return real_datetime(*args, **kwargs)

        @classmethod
        def now(cls, tz: Any = None) -> Any:
            return real_datetime.fromtimestamp(clock(), tz)

        @classmethod
        def utcnow(cls) -> Any:
            return real_datetime.fromtimestamp(clock(), datetime.UTC).replace(tzinfo=None)

        @classmethod
        def today(cls) -> Any:
            return real_datetime.fromtimestamp(clock())

    for cls, real in ((ShiftedDate, real_date), (ShiftedDatetime, real_datetime)):
        cls.__name__, cls.__qualname__, cls.__module__ = real.__name__, real.__qualname__, "datetime"
    datetime.date, datetime.datetime = ShiftedDate, ShiftedDatetime  # type: ignore[misc]
