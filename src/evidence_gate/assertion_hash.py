"""The assertion hash: sha256 of the failing statement's source, normalised through the AST.

Whitespace, comments and line breaks do not change the hash; any change to the statement itself does. This module
is imported inside the sealed run by the gate's pytest plugin, so it uses the standard library only.
"""

from __future__ import annotations

import ast
import hashlib
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


def statement_hash(source: str, lineno: int) -> str | None:
    """sha256 hex of the normalised statement at `lineno`, or None when the source does not parse there."""
    text = normalized_statement(source, lineno)
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def failing_frame(tb: TracebackType | None) -> tuple[str, int] | None:
    """(filename, line) of the innermost frame, the one that raised."""
    where = None
    while tb is not None:
        where = (tb.tb_frame.f_code.co_filename, tb.tb_lineno)
        tb = tb.tb_next
    return where


def exception_hash(exc: BaseException, own_file: str | None = None) -> str | None:
    """The assertion hash of an exception raised by a test (first leaf of an exception group).

    With `own_file` (the property's module), only a statement of that file raising counts: a failure raised deeper,
    in code under test, has no hash, so a copy of a frozen assertion's text there cannot pass for it.
    """
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    where = failing_frame(exc.__traceback__)
    if where is None or (own_file is not None and where[0] != own_file):
        return None
    try:
        with open(where[0], encoding="utf-8") as handle:  # noqa: PTH123 - plain open keeps the sealed import light
            source = handle.read()
    except OSError:
        return None
    return statement_hash(source, where[1])


def matches(entry_hash: str | None, actual: str | None) -> bool:
    """Whether a ledger entry's hash (a prefix of at least 32 hex digits) names this failure."""
    if not entry_hash or not actual or len(entry_hash) < MIN_PREFIX:
        return False
    return actual.startswith(entry_hash.lower())
