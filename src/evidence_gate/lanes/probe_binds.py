"""What a name in one file is bound to, for the probe scan: code objects from `compile(...)` reach nothing.

`probe_scan.py` asks two things here: whether an assigned value is a code object that holds no probe but its own
compile call (then the name it is bound to is no probe), and whether a local name given to `eval`/`exec` can hold
nothing but such a code object (then the call is `eval(compile(...))` split in two statements).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evidence_gate.lanes.probe_scan import Reference


def binds(node: ast.AST, name: str) -> Iterator[ast.AST]:
    """Every node below `node` that binds `name` or may: assignment targets, parameters, imports (a `*` import binds
    any name), definitions, handlers, patterns, type parameters, `global`/`nonlocal` declarations."""
    for part in ast.walk(node):
        if isinstance(part, ast.Name):
            if part.id == name and not isinstance(part.ctx, ast.Load):
                yield part
        elif isinstance(part, ast.alias):
            if part.name == "*" or (part.asname or part.name.split(".", 1)[0]) == name:
                yield part
        elif isinstance(part, ast.Global | ast.Nonlocal):
            if name in part.names:
                yield part
        elif isinstance(part, ast.keyword):
            continue  # `f(code=...)` names a parameter of the callee
        elif name in {getattr(part, "name", None), getattr(part, "arg", None), getattr(part, "rest", None)}:
            yield part  # def, class, except ... as, match patterns, type parameters, parameters


def is_compile(node: ast.AST | None) -> bool:
    """Whether `node` is a call of the builtin name `compile`."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "compile"


def holds_code(tree: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether `name` in `function` is a local that can only hold a code object: every binding of it there (nested
    scopes included) is `name = compile(...)`, no scope of the file declares it `global` or `nonlocal` (another
    module can rebind a global, a closure a nonlocal), and nothing in the file rebinds `compile` (or may: `*`)."""
    if any(binds(tree, "compile")):
        return False
    if any(isinstance(b, ast.Global | ast.Nonlocal) for b in binds(tree, name)):
        return False
    compiled = {
        id(a.targets[0])
        for a in ast.walk(function)
        if isinstance(a, ast.Assign) and len(a.targets) == 1 and is_compile(a.value)
    }
    bound = list(binds(function, name))
    return bool(bound) and all(id(b) in compiled for b in bound)


def is_code_object(value: ast.expr | None, found: list[Reference]) -> bool:
    """Whether `value` is a `compile(...)` call with no probe but the call's own: a code object reaches nothing. The
    call is the probe, judged in its own statement; the object runs only what that call compiled."""
    return is_compile(value) and all(r.name.startswith("compile(") for r in found)
