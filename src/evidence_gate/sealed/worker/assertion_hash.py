"""The assertion hash: sha256 of the exception's type and the failing statement's source, normalised through the AST.

Whitespace, comments and line breaks do not change the hash; any change to the statement itself does, and so does
another exception type raised on the same line (a `TypeError` is not the frozen `AssertionError`). An exception
group hashes like its leaf when every leaf is the same failure; leaves that differ give a hash of their own (so an
entry for one of them excuses none), and a leaf with no hash leaves the group with none. This module is imported
inside the sealed run by the gate's pytest plugin, so it uses the standard library only.
"""

from __future__ import annotations

import ast
import hashlib
import os
from types import TracebackType

MIN_PREFIX = 32


def normalized_statement(source: str, lineno: int) -> str | None:
    """The innermost statement covering `lineno` (an `assert` preferred), unparsed to canonical text."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    best: ast.stmt | None = None
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        end = node.end_lineno or node.lineno
        if node.lineno <= lineno <= end and (best is None or node.lineno >= best.lineno):
            if isinstance(best, ast.Assert) and not isinstance(node, ast.Assert):
                continue
            best = node
    return None if best is None else ast.unparse(best)


def statement_hash(source: str, lineno: int, exc_type: str = "AssertionError") -> str | None:
    """sha256 hex of `exc_type` and the normalised statement at `lineno`; None when the source does not parse there."""
    text = normalized_statement(source, lineno)
    return None if text is None else hashlib.sha256(f"{exc_type}\n{text}".encode()).hexdigest()


def type_name(exc: BaseException) -> str:
    """The exception's class as the hash binds it: `AssertionError` for builtins, else `module.QualName`."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions an exception group (nested ones included) is made of; `[exc]` for any other exception."""
    if isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        return [leaf for inner in exc.exceptions for leaf in leaves(inner)]
    return [exc]


def failing_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    """(filename, line) of the innermost frame, the one that raised."""
    where = None
    while tb is not None:
        where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return where


def leaf_hash(exc: BaseException, own_file: str | None = None) -> str | None:
    """The hash of one raised exception: its type and the statement of the frame that raised it.

    With `own_file` (the property's module), only a statement of that file raising counts: a failure raised deeper,
    in code under test, has no hash, so a copy of a frozen assertion's text there cannot pass for it.
    """
    where = failing_frame(exc.__traceback__)
    if where is None or (own_file is not None and where[0] != own_file):
        return None
    try:
        with open(where[0], encoding="utf-8") as handle:  # noqa: PTH123 - plain open keeps the sealed import light
            source = handle.read()
    except OSError:
        return None
    return statement_hash(source, where[1], type_name(exc))


def exception_hash(exc: BaseException, own_file: str | None = None) -> str | None:
    """The assertion hash of an exception raised by a test; for a group, every leaf must be the same failure."""
    hashes = [leaf_hash(leaf, own_file) for leaf in leaves(exc)]
    if any(h is None for h in hashes):
        return None
    distinct = sorted({h for h in hashes if h is not None})
    if len(distinct) == 1:
        return distinct[0]
    return hashlib.sha256(("group\n" + "\n".join(distinct)).encode()).hexdigest()


def bound_failures(exc: BaseException, own_file: str | None = None) -> list[str]:
    """What the hash binds, one line per distinct leaf (`TypeError at /x/test_a.py:8`), for people reading it."""
    lines = []
    tree = os.getcwd() + os.sep  # noqa: PTH109 - the sealed tree is the worker's folder; paths shown relative to it
    for leaf in leaves(exc):
        where = failing_frame(leaf.__traceback__)
        place = "no frame" if where is None else f"{where[0].removeprefix(tree)}:{where[1]}"
        if own_file is not None and where is not None and where[0] != own_file:
            place += " (outside the property's file: no hash)"
        lines.append(f"{type_name(leaf)} at {place}")
    return list(dict.fromkeys(lines))


def matches(entry_hash: str | None, actual: str | None) -> bool:
    """Whether a ledger entry's hash (a prefix of at least 32 hex digits) names this failure."""
    if not entry_hash or not actual or len(entry_hash) < MIN_PREFIX:
        return False
    return actual.startswith(entry_hash.lower())
