"""Shapes the probe scan reads: a statement's code, and values that reach nothing (code objects, handled exceptions).

`shape` is a statement's identity (a reference is old when the baseline has it in the same shape). The scan also
asks whether an assigned value is a code object that holds no probe but its own compile call (then the name it is
bound to is no probe), whether a local name given to `eval`/`exec` can hold
nothing but such a code object (then the call is `eval(compile(...))` split in two statements); and whether a
subscript is `sys.exc_info()[1]`, the exception an `except` body handles (its traceback is `[2]`).
"""

from __future__ import annotations

import ast

from evidence_gate.lanes.literal_fold import fold
from evidence_gate.lanes.probe_rules import CONSTANT_COMPARE
from evidence_gate.records import dataclass, field

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping


@dataclass(frozen=True)
class Reference:
    """One probe: its stable name, where it is, and why it counts."""

    name: str
    line: int
    why: str
    # The statement the reference sits in, positions left out (a compound statement's header only): a probe kept
    # in a statement the patch did not touch is old; the same name in a statement the patch wrote is new.
    context: str = field(default="", compare=False)
    # For a name bound to a probe (`m = sys.modules`, then `m`): that probe, so an allow entry for it covers the name.
    bound_to: str = field(default="", compare=False)


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


def handled_exception(node: ast.Subscript, module_of: Callable[[ast.AST], str | None]) -> bool:
    """Whether `node` is `X.exc_info()[0]` or `[1]`: the type or the exception being handled, not the traceback
    (`[2]`, a slice, a computed index or the whole tuple reach frames). Only inside an `except` body, in the
    handler's own frame, is that the handler's own exception (anywhere else it may be the harness's)."""
    call, index = node.value, node.slice
    return (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "exc_info"
        and module_of(call.func.value) == "sys"
        and not call.args
        and not call.keywords
        and isinstance(index, ast.Constant)
        and type(index.value) is int
        and index.value in {0, 1}
    )


def is_code_object(value: ast.expr | None, found: list[Reference]) -> bool:
    """Whether `value` is a `compile(...)` call with no probe but the call's own: a code object reaches nothing. The
    call is the probe, judged in its own statement; the object runs only what that call compiled."""
    return is_compile(value) and all(r.name.startswith("compile(") for r in found)


# Compound statements: their bodies are statements of their own, so only the header is a reference's context.
_BODIES = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


def shape(node: ast.AST) -> str:
    """A statement's code without positions (a compound statement's header only): equal for a moved statement."""
    parts = []
    for name, value in ast.iter_fields(node):
        if name in _BODIES:
            continue
        items = value if isinstance(value, list) else [value]
        parts.append(name + "=" + ",".join(ast.dump(v) if isinstance(v, ast.AST) else repr(v) for v in items))
    return f"{type(node).__name__}({'; '.join(parts)})"


def namespace_of(
    node: ast.expr, stdlib: Mapping[str, str], aliases: Mapping[str, str], module_of: Callable[[ast.AST], str | None]
) -> str | None:
    """The module whose names `node` lists (`__builtins__`, `dir(m)`, `vars(m)`), else None."""
    if isinstance(node, ast.Name) and node.id == "__builtins__":
        return "builtins"
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id in {"dir", "vars"}
        and len(node.args) == 1
        and not node.keywords
    ):
        return None
    arg = node.args[0]
    if isinstance(arg, ast.Name) and arg.id == "__builtins__":
        return "builtins"
    if isinstance(arg, ast.Name) and arg.id in stdlib and arg.id not in aliases:
        return stdlib[arg.id]
    return module_of(arg)


def parameters(args: ast.arguments) -> set[str]:
    """The names a function's or a lambda's parameters bind in its body."""
    return {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg] if a}


def constant_compare(name: str, value: ast.expr | None) -> str | None:
    """`__eq__` that returns a truthy constant, `__ne__` a falsy one (a function's one statement or a lambda's
    body; `NotImplemented` defers to the other operand): the probe's name, else None."""
    if (
        name in CONSTANT_COMPARE
        and isinstance(value, ast.Constant)
        and bool(value.value) is CONSTANT_COMPARE[name]
        and value.value is not NotImplemented
    ):
        return f"{name} returns {CONSTANT_COMPARE[name]}"
    return None


def claims_file(node: ast.Call) -> bool:
    """Whether a `compile(...)` call claims its code comes from a file: a literal filename (`""` and `"<...>"` name
    none) or a computed one."""
    given = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "filename"), None)
    filename = fold(given) if given is not None else "<none>"
    return filename is None or (bool(filename) and not filename.startswith("<"))
