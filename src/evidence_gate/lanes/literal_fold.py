"""The string an expression built only from literals evaluates to: the cheap way to spell a probe's name
(`"_get" + "frame"`, f-strings, `"".join(...)`, slices, `"FRAME".lower()`) without writing it."""

from __future__ import annotations

import ast


def fold(node: ast.AST) -> str | None:
    """The string an expression built only from literals evaluates to (`"g" + "c"`, f-strings, join, slices)."""
    if isinstance(node, ast.Constant):
        return node.value if isinstance(node.value, str) else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = fold(node.left), fold(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult):
        text, count = fold(node.left), node.right
        if text is not None and isinstance(count, ast.Constant) and type(count.value) is int:
            return text * min(count.value, 64)
        return None
    if isinstance(node, ast.JoinedStr):
        parts = [fold(v.value) if isinstance(v, ast.FormattedValue) else fold(v) for v in node.values]
        return None if any(p is None for p in parts) else "".join(p for p in parts if p is not None)
    if isinstance(node, ast.Subscript):
        return _fold_subscript(node)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and len(node.args) == 1:
        sep = fold(node.func.value)
        if sep is not None and node.func.attr == "join" and isinstance(node.args[0], ast.List | ast.Tuple):
            parts = [fold(e) for e in node.args[0].elts]
            return None if any(p is None for p in parts) else sep.join(p for p in parts if p is not None)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return fold(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TEXT_METHODS:
        return _fold_method(node, node.func)
    return None


# Methods of `str` that only make another string of the same text and literal arguments: a name spelled through
# them (`"frame".upper().lower()`, `"gi_X".replace("X", "frame")`) is still that name.
TEXT_METHODS = frozenset(
    {
        "lower",
        "upper",
        "casefold",
        "swapcase",
        "title",
        "capitalize",
        "strip",
        "lstrip",
        "rstrip",
        "replace",
        "removeprefix",
        "removesuffix",
        "format",
    }
)


def _fold_method(node: ast.Call, func: ast.Attribute) -> str | None:
    text = fold(func.value)
    if text is None or node.keywords or len(text) > 4096:
        return None
    args = [fold(a) for a in node.args]
    if any(a is None for a in args) or len(args) > 2:
        return None
    try:
        out = getattr(str, func.attr)(text, *args)
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return out if isinstance(out, str) and len(out) <= 8192 else None


def _int(node: ast.AST | None) -> tuple[bool, int | None]:
    """(is it a literal int or absent, its value): slice bounds and indexes of a folded string."""
    if node is None:
        return True, None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        ok, inner = _int(node.operand)
        return (True, -inner) if ok and inner is not None else (False, None)
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return True, node.value
    return False, None


def _fold_subscript(node: ast.Subscript) -> str | None:
    text = fold(node.value)
    if text is None:
        return None
    index = node.slice
    if isinstance(index, ast.Slice):
        bounds = [_int(index.lower), _int(index.upper), _int(index.step)]
        if not all(ok for ok, _ in bounds) or bounds[2][1] == 0:
            return None
        return text[slice(*(value for _, value in bounds))]
    ok, position = _int(index)
    if ok and position is not None and -len(text) <= position < len(text):
        return text[position]
    return None
