"""`dataclass`, `field` and `replace` for the modules `check` imports, without the `dataclasses` module.

`import dataclasses` brings `inspect` (with `dis`, `tokenize`, `linecache`), and Python 3.11 compiles every method it
generates separately: for the ≈ 40 value classes `check --no-run` loads that was ≈ 15 ms of a 0.12 s run. This
module makes the same classes with one compiled `__init__` each and shared `__repr__`, `__eq__`, `__hash__` and
frozen `__setattr__`/`__delattr__`: the same values, reprs, equality, hashes (a tuple of the compared fields) and
`FrozenInstanceError` (an `AttributeError`). mypy checks them as the dataclasses they mirror. What they do not
have is `__dataclass_fields__`: use this module's `replace`, not `dataclasses.replace`/`fields`/`asdict`.
Supported: `frozen`, `field(default=, default_factory=, init=, repr=, compare=)`, `__post_init__` and inheritance
between these classes; anything else is a `TypeError` at class creation.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (≈ 3 ms)

__all__ = ["FrozenInstanceError", "dataclass", "field", "replace"]

if TYPE_CHECKING:
    from dataclasses import FrozenInstanceError, dataclass, field, replace
else:
    _MISSING = object()

    class FrozenInstanceError(AttributeError):
        """Assignment to a field of a frozen record (as `dataclasses.FrozenInstanceError`)."""

    class Field:
        """One field's options, as `dataclasses.field` records them."""

        __slots__ = ("compare", "default", "default_factory", "init", "name", "repr")

        def __init__(self, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
            if default is not _MISSING and default_factory is not _MISSING:
                raise ValueError("cannot specify both default and default_factory")
            self.name = ""
            self.default, self.default_factory = default, default_factory
            self.init, self.repr, self.compare = init, repr, compare

    def field(*, default=_MISSING, default_factory=_MISSING, init=True, repr=True, compare=True):
        """A field with options (`dataclasses.field`'s keywords that these records support)."""
        return Field(default, default_factory, init, repr, compare)

    def dataclass(cls=None, /, *, frozen=False):
        """Make `cls` a record of its annotated fields (`@dataclass` or `@dataclass(frozen=True)`)."""

        def wrap(cls):
            return _process(cls, frozen)

        return wrap if cls is None else wrap(cls)

    def replace(obj, /, **changes):
        """A copy of the record `obj` with `changes` (as `dataclasses.replace`)."""
        for f in obj.__record_fields__:
            if f.init and f.name not in changes:
                changes[f.name] = getattr(obj, f.name)
            elif not f.init and f.name in changes:
                raise ValueError(f"field {f.name} is declared with init=False, it cannot be specified with replace()")
        return obj.__class__(**changes)

    def _fields(cls):
        inherited = {}
        for base in reversed(cls.__mro__[1:]):
            for f in base.__dict__.get("__record_fields__", ()):
                inherited[f.name] = f
        for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 - inspect is what this module avoids
            value = cls.__dict__.get(name, _MISSING)
            f = value if isinstance(value, Field) else Field(default=value)
            f.name = name
            if f.default is _MISSING:
                if isinstance(value, Field):
                    delattr(cls, name)
            else:
                setattr(cls, name, f.default)
            inherited[name] = f  # an overridden field keeps its base's place, as in dataclasses
        return tuple(inherited.values())

    def _init(cls, fields, frozen):
        """`__init__`, compiled once: the one method whose speed (and signature) a record's users see."""
        scope = {"__MISSING": _MISSING, "__set": object.__setattr__}
        params, body = [], []
        for f in fields:
            if f.default_factory is not _MISSING:
                scope[f"__factory_{f.name}"] = f.default_factory
                value = f"__factory_{f.name}()"
                if f.init:
                    params.append(f"{f.name}=__MISSING")
                    value = f"__factory_{f.name}() if {f.name} is __MISSING else {f.name}"
            elif f.init:
                if f.default is not _MISSING:
                    scope[f"__default_{f.name}"] = f.default
                params.append(f"{f.name}=__default_{f.name}" if f.default is not _MISSING else f.name)
                value = f.name
            elif f.default is not _MISSING:
                value = f"__default_{f.name}"
                scope[value] = f.default
            else:
                continue
            body.append(f"__set(self, {f.name!r}, {value})" if frozen else f"self.{f.name} = {value}")
        if hasattr(cls, "__post_init__"):
            body.append("self.__post_init__()")
        source = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
        exec(source, scope)  # noqa: S102 - source built from the class's own field names, as dataclasses does
        init = scope["__init__"]
        init.__qualname__ = f"{cls.__qualname__}.__init__"
        return init

    def _repr(self):
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__record_fields__ if f.repr)
        return f"{self.__class__.__qualname__}({shown})"

    def _compared(self):
        return tuple(getattr(self, f.name) for f in self.__record_fields__ if f.compare)

    def _eq(self, other):
        if other.__class__ is self.__class__:
            return _compared(self) == _compared(other)
        return NotImplemented

    def _hash(self):
        return hash(_compared(self))

    def _frozen_setattr(self, name, value):
        if self.__class__ is getattr(self, "__record_class__", None) or name in self.__record_names__:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        object.__setattr__(self, name, value)

    def _frozen_delattr(self, name):
        if self.__class__ is getattr(self, "__record_class__", None) or name in self.__record_names__:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        object.__delattr__(self, name)

    _OWN = ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__")

    def _process(cls, frozen):
        own = [name for name in _OWN if name in cls.__dict__ and not (name == "__hash__" and cls.__hash__ is None)]
        if own:
            raise TypeError(f"{cls.__qualname__} defines {', '.join(own)}: records make their own")
        fields = _fields(cls)
        cls.__record_fields__ = fields
        cls.__record_names__ = frozenset(f.name for f in fields)
        cls.__record_class__ = cls
        cls.__match_args__ = tuple(f.name for f in fields if f.init)
        cls.__init__ = _init(cls, fields, frozen)
        cls.__repr__ = _repr
        cls.__eq__ = _eq
        if frozen:
            cls.__hash__ = _hash
            cls.__setattr__ = _frozen_setattr
            cls.__delattr__ = _frozen_delattr
        else:
            cls.__hash__ = None
        return cls
