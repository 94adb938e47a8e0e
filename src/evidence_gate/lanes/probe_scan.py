"""Harness probes in one source file: references to the test harness, the gate, or introspection with reach.

Pure: source bytes in, references out. A reference is a stable name on a line (`sys._getframe`, `hypothesis`,
`exec(non-literal)`) with the statement it sits in; the `harness-probed` lane compares (name, statement) pairs,
baseline against head, so a statement that was already there (or only moved) never counts and one the patch wrote
always does. Computed-name resolvers (`pydoc.locate`, `pickle.loads`, `typing.get_type_hints`, `logging.config`,
`builtins.__import__`, …) are import machinery; string annotations are scanned as code; a name bound to a probe
(`m = sys.modules`) is that probe where it is used. The scan is syntactic and deliberately wide where the cheap
evasions live: a module used as a value (`m = sys`, `vars(sys)`, `getattr(sys, name)`), a frame attribute on any
object, strings built from literals (`"_get" + "frame"`, `"".join(...)`, slices), and literal code given to
`exec`/`eval`/`compile` (scanned as code); a non-literal argument to those is a probe in itself.

What counts is data in `probe_rules.py` (the watched modules and attributes, and why each counts); strings built
from literals are read by `literal_fold.py`. This module walks the tree.
"""

from __future__ import annotations

import ast

from evidence_gate.lanes import probe_binds as binds
from evidence_gate.lanes.literal_fold import fold
from evidence_gate.lanes.probe_binds import Reference
from evidence_gate.lanes.probe_rules import (
    ALLOW_ONLY,
    ANNOTATIONS,
    BUILTIN_RESOLVERS,
    CODE_FIELDS,
    DENY,
    DYNAMIC,
    IMPORTLIB_HARMLESS,
    MOCK,
    PREFIXES,
    REACH_ATTRS,
    STDLIB,
    SUBMODULES,
    VALUE_ALIAS,
    VALUE_REACH,
    WHOLE,
    WHY,
    WRITE_ATTRS,
    evaluates_annotations,
    module_aliases,
    stdlib_aliases,
    stdlib_imported,
    string_probe,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

_MAX_DEPTH = 3


class _Scanner(ast.NodeVisitor):
    """Collects references; module aliases are file-wide (flow-insensitive, so rebinding cannot hide one)."""

    def __init__(
        self,
        aliases: dict[str, str],
        offset: int,
        depth: int,
        held: Mapping[tuple[str, str], str] | None = None,
        context: str = "",
    ) -> None:
        self.aliases = aliases
        self.stdlib: dict[str, str] = {}
        self.stdlib_from: dict[str, str] = {}  # names `from <stdlib module> import` bound: their attributes are its
        self.offset = offset
        self.depth = depth
        self.found: list[Reference] = []
        self.context = context
        self.scope = ""
        # (scope, name) → the probe a name was bound to (`m = sys.modules`): later uses of `m` count as the probe.
        self.held: Mapping[tuple[str, str], str] = held or {}
        self.binds: dict[tuple[str, str], str] = {}
        self.returned: str | None = None  # the first probe the current function returns
        self.tree: ast.AST = ast.Module(body=[], type_ignores=[])
        self.function: ast.FunctionDef | ast.AsyncFunctionDef | None = None  # the innermost one
        self.handling = False  # in an `except` body, in its own frame (not a nested def, lambda or generator)
        self.local: frozenset[str] = frozenset()  # parameters and comprehension targets: no module alias here

    def add(self, node: ast.AST, name: str, why: str, bound_to: str = "") -> None:
        line = getattr(node, "lineno", 1)
        self.found.append(Reference(name, line + self.offset if self.offset else line, why, self.context, bound_to))

    def visit(self, node: ast.AST) -> None:
        if isinstance(node, ast.stmt | ast.excepthandler | ast.match_case):
            saved = self.context
            self.context = binds.shape(node)
            try:
                super().visit(node)
            finally:
                self.context = saved
        else:
            super().visit(node)

    def module_of(self, node: ast.AST) -> str | None:
        """The watched module an expression names (`sys`, an alias of it, `os.sys`), else None."""
        if isinstance(node, ast.Name):
            return None if node.id in self.local else self.aliases.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.module_of(node.value)
            if parent is not None and f"{parent}.{node.attr}" in PREFIXES:
                return f"{parent}.{node.attr}"  # `logging.config`, `importlib.util`
            if node.attr in VALUE_REACH or node.attr in DENY:
                return node.attr  # `os.sys`, `logging.sys`: a module reached through another one
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.args:
            if node.func.id == "__import__":
                text = fold(node.args[0])
                return text.split(".", 1)[0] if text else None
            if node.func.id == "getattr" and len(node.args) >= 2:
                text = fold(node.args[1])  # `getattr(os, "sys")`, `getattr(logging, "config")`
                parent = self.module_of(node.args[0])
                if parent is not None and text and f"{parent}.{text}" in PREFIXES:
                    return f"{parent}.{text}"
                return text if text in VALUE_REACH else None
        return None

    def stdlib_owner(self, node: ast.AST) -> str | None:
        """The standard-library object an expression names through imported names and attributes only (`json`,
        `json.encoder`, `encoder` from `from json import encoder`, `JSONEncoder.encode`), else None."""
        if isinstance(node, ast.Name) and node.id not in self.local:
            return self.stdlib.get(node.id) or self.stdlib_from.get(node.id)
        if isinstance(node, ast.Attribute):
            parent = self.stdlib_owner(node.value)
            return None if parent is None else f"{parent}.{node.attr}"
        return None

    def attribute(self, node: ast.AST, module: str, attr: str, store: bool) -> None:
        """`module.attr` read or written: a reference when that module's rule says so."""
        full = f"{module}.{attr}"
        top = module.split(".", 1)[0]
        if top in WHOLE:
            self.add(node, top, "uses the test harness, the gate or a module with no harmless use here")
        elif module in SUBMODULES:
            self.add(node, full, WHY.get(top, "introspection that reaches other frames or objects"))
        elif module == "builtins":
            if store:
                self.add(node, f"builtins.{attr} (write)", "rebinds a builtin for every module, the harness included")
            elif attr == "__dict__":
                self.add(node, "builtins.__dict__", "reaches every builtin")
            elif attr in BUILTIN_RESOLVERS:
                self.add(node, f"builtins.{attr}", WHY["resolver"])
        elif module in DENY and attr in DENY[module]:
            self.add(node, full, WHY.get(module, WHY["resolver"]))
        elif module in ALLOW_ONLY and attr not in ALLOW_ONLY[module]:
            self.add(node, full, WHY.get(module, WHY.get(top, WHY["resolver"])))
        elif store and top in STDLIB:
            self.add(node, f"{full} (write)", WHY["patch"])
        elif attr == "__dict__" and top in STDLIB:
            self.add(node, f"{full}", WHY["lookup"])
        elif attr in REACH_ATTRS:  # `x.traceback.tb_frame`: an attribute named like a module does not hide it
            self.add(node, attr, "reaches other frames, objects or the import system")

    # ---- imports ----------------------------------------------------------------------------------------------

    def visit_Import(self, node: ast.Import) -> None:
        # Contexts per imported name: adding `json` to `import sys, os` leaves the `sys` reference where it was.
        for alias in node.names:
            self.context = f"Import({alias.name} as {alias.asname})"
            top = alias.name.split(".", 1)[0]
            if alias.name.startswith(MOCK) and alias.name.split(".")[-1] == "mock":
                self.add(node, "unittest.mock", WHY["mock"])
            if top in WHOLE:
                self.add(node, top, "imports the test harness, the gate or a module with no harmless use here")
            elif (
                top == "importlib" and alias.name != "importlib" and alias.name.split(".")[1] not in IMPORTLIB_HARMLESS
            ):
                self.add(node, alias.name, WHY["importlib"])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        top = module.split(".", 1)[0]
        if node.level or not module:
            return
        self.context = f"ImportFrom({module})"  # editing the list of names imported leaves the module's reference
        if module in MOCK or (module == "unittest" and any(a.name == "mock" for a in node.names)):
            self.add(node, "unittest.mock", WHY["mock"])
            return
        if top in WHOLE:
            self.add(node, top, "imports the test harness, the gate or a module with no harmless use here")
            return
        if module in DENY or module in ALLOW_ONLY or module in SUBMODULES or module == "builtins":
            # `from importlib.metadata import EntryPoint`, `from builtins import __import__`
            for alias in node.names:
                self.context = f"ImportFrom({module}: {alias.name} as {alias.asname})"
                if alias.name == "*":
                    self.add(node, f"{module}.*", "imports every name of a module that reaches other frames")
                else:
                    self.attribute(node, module, alias.name, store=False)
        elif top == "importlib" and module.split(".")[1] not in IMPORTLIB_HARMLESS:
            self.add(node, module, WHY["importlib"])

    # ---- names, attributes, calls -----------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        module = None if node.id in self.local else self.aliases.get(node.id)
        held = self.held.get((self.scope, node.id)) or self.held.get(("", node.id))
        if held is not None and isinstance(node.ctx, ast.Load):
            self.add(node, f"{node.id} (bound to a probe)", f"uses a name bound to `{held}`", bound_to=held)
        if module is not None and (module in VALUE_ALIAS or module.split(".", 1)[0] in VALUE_REACH):
            self.add(
                node,
                f"{module} (as a value)",
                "hands a module that reaches other frames or objects to code the scan cannot follow",
            )
        elif node.id == "__builtins__":
            self.add(node, "__builtins__", "reaches every builtin")
        elif node.id in DYNAMIC or node.id == "__import__":
            self.add(node, f"{node.id} (as a value)", "runs code or imports modules the scan cannot see")
        elif node.id == "breakpoint" and node.id not in self.aliases:
            self.add(node, "breakpoint", WHY["resolver"])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        store = isinstance(node.ctx, ast.Store | ast.Del)
        module = self.module_of(node.value)
        if module is not None:
            self.attribute(node, module, node.attr, store)
            if not isinstance(node.value, ast.Name):
                self._visit_base(node.value)
            return
        base = node.value.id if isinstance(node.value, ast.Name) else None
        owner = self.stdlib_owner(node.value) if store else None
        if owner is not None:
            self.add(node, f"{owner}.{node.attr} (write)", WHY["patch"])
        elif base in self.stdlib and node.attr == "__dict__":
            self.add(node, f"{self.stdlib[base]}.__dict__", WHY["lookup"])
        elif node.attr in REACH_ATTRS:
            self.add(node, node.attr, "reaches other frames, objects or the import system")
        elif node.attr == "__traceback__" and not store:
            # A traceback leads to frames (`tb_frame.f_back`: the harness's), also through computed names.
            self.add(node, "__traceback__", "hands over a traceback, whose frames reach the harness's")
        elif store and (node.attr in WRITE_ATTRS or node.attr in ANNOTATIONS):
            self.add(node, f"{node.attr} (write)", "rebinds what a function runs or sees")
        elif node.attr in VALUE_REACH and node.attr != "__main__":
            self.add(
                node,
                f"{node.attr} (reached as an attribute)",
                "reaches the test harness or a module that reaches other frames, through another object",
            )
        self.generic_visit(node)

    def visit_Compare(self, node: ast.Compare) -> None:
        """`"name" in __builtins__` and `"name" in dir(module)` test one literal name: judged as `hasattr` is."""
        single = len(node.ops) == 1 and isinstance(node.ops[0], ast.In | ast.NotIn)
        namespace = node.comparators[0] if single else None
        module = (
            binds.namespace_of(namespace, self.stdlib, self.aliases, self.module_of) if namespace is not None else None
        )
        text = fold(node.left)
        if namespace is None or module is None or text is None:
            self.generic_visit(node)
            return
        self.attribute(node, module, text, store=False)
        self._children(node, skip=(namespace,))
        if isinstance(namespace, ast.Call) and not isinstance(namespace.args[0], ast.Name):
            self._visit_base(namespace.args[0])

    def _visit_base(self, node: ast.AST) -> None:
        """Visit the inside of a module expression (`os.sys` → `os`) without reporting the module itself twice."""
        if isinstance(node, ast.Attribute):
            self._visit_base(node.value)
        elif not isinstance(node, ast.Name):
            self.visit(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._in_frame(True, lambda: self.generic_visit(node))

    # A lambda or a generator runs later, when another exception may be handled; its parameters are its own.
    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._in_frame(False, lambda: self._scoped(node, binds.parameters(node.args), [node.args]))

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        self._in_frame(False, lambda: self._comprehension(node))

    def _in_frame(self, handling: bool, visit: Callable[[], None]) -> None:
        saved, self.handling = self.handling, handling
        try:
            visit()
        finally:
            self.handling = saved

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp) -> None:
        """The first iterable runs in the enclosing scope; every target is local to the whole comprehension."""
        first = node.generators[0]
        self._child(first, first.iter)
        targets = {n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)}
        saved, self.local = self.local, self.local | targets
        try:
            for generator in node.generators:
                self._children(generator, skip=(first.iter,))
            self._children(node, skip=tuple(node.generators))
        finally:
            self.local = saved

    visit_ListComp = visit_SetComp = visit_DictComp = _comprehension

    def _scoped(self, node: ast.AST, names: set[str], outer: list[ast.AST]) -> None:
        """Visit `node`'s children, those in `outer` (decorators, defaults) in the enclosing scope, the others with
        `names` local (a parameter named `sys` is not the module `sys` in its function)."""
        for child in outer:
            self._child(node, child)
        saved, self.local = self.local, self.local | names
        try:
            self._children(node, skip=tuple(outer))
        finally:
            self.local = saved

    def visit_Subscript(self, node: ast.Subscript) -> None:
        if not (self.handling and binds.handled_exception(node, self.module_of)):  # `except ... as e`'s exception
            self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else None
        if name == "__import__":
            self.add(node, "__import__", WHY["importlib"])
            for arg in [*node.args, *node.keywords]:
                self.visit(arg)
            return
        if name in DYNAMIC:
            self._dynamic(node, name)
            return
        for keyword in node.keywords:
            if keyword.arg in CODE_FIELDS:
                self.add(
                    node, f"{keyword.arg}= (code object rebuilt)", "runs bytecode or claims a file the scan never sees"
                )
        if (
            isinstance(func, ast.Attribute)
            and func.attr in {"loads", "load"}
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, bytes)
        ):
            self.add(
                node, f"{func.attr}(literal bytes)", "unpickles a payload the scan cannot read (it may call anything)"
            )
        if (
            name in {"vars", "dir"}
            and node.args
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id in self.stdlib
        ):
            self.add(node, f"{name}({self.stdlib[node.args[0].id]})", WHY["lookup"])
        elif name == "vars" and node.args and (reached := self.module_of(node.args[0])) is not None:
            self.add(node, f"vars({reached})", WHY["lookup"])  # `vars(logging.config)`
        if isinstance(func, ast.Attribute) and func.attr == "get_annotations" and evaluates_annotations(node):
            self.add(node, "get_annotations(eval_str)", WHY["resolver"])
        if name in {"getattr", "setattr", "delattr", "hasattr"} and len(node.args) >= 2:
            module = self.module_of(node.args[0])
            attr = fold(node.args[1])
            if (
                module is None
                and attr is None
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in self.stdlib
            ):
                self.add(node, f"{name}({self.stdlib[node.args[0].id]}, non-literal)", WHY["lookup"])
            if module is not None:
                if attr is None:
                    self.add(
                        node,
                        f"{name}({module}, non-literal)",
                        "looks up a computed name on a module that reaches other frames or objects",
                    )
                else:
                    self.attribute(node, module, attr, store=name not in {"getattr", "hasattr"})
                self._visit_base(node.args[0])
                for arg in [*node.args[1:], *node.keywords]:
                    self.visit(arg)
                return
            if name in {"getattr", "hasattr"} and attr in WRITE_ATTRS and attr not in REACH_ATTRS:
                # `getattr(f, "__closure__", None)` reads, as `f.__closure__` does: only writing one rebinds
                self._children(node, skip=(node.args[1],))
                return
            if name == "setattr" and (attr in WRITE_ATTRS or attr in ANNOTATIONS):
                self.add(node, f"{attr} (write)", "rebinds what a function runs or sees")
            elif name in {"setattr", "delattr"} and (owner := self.stdlib_owner(node.args[0])) is not None:
                self.add(node, f"{owner}.{attr or '(non-literal)'} (write)", WHY["patch"])
        self.generic_visit(node)

    def _dynamic(self, node: ast.Call, name: str) -> None:
        first = node.args[0] if node.args else None
        if name != "compile" and (
            binds.is_compile(first)
            or (isinstance(first, ast.Name) and self.function and binds.holds_code(self.tree, self.function, first.id))
        ):
            # `exec(compile(...))`: the compile call is judged (and its literal scanned) itself; `code = compile(...)`
            # then `eval(code)` is the same in two statements (a compile whose arguments hold a probe binds `code`)
            for arg in [*node.args, *node.keywords]:
                self.visit(arg)
            return
        code = fold(first) if first is not None else None
        if name == "compile" and binds.claims_file(node):
            self.add(
                node, "compile(filename)", "compiles code that claims to come from a file (a locked test's would pass)"
            )
        if code is None or self.depth >= _MAX_DEPTH:
            self.add(node, f"{name}(non-literal)", "runs code the scan cannot read")
            if first is not None:
                self.visit(first)
        else:
            try:
                tree = ast.parse(code)
            except (SyntaxError, ValueError):
                tree = None
            if tree is None:
                self.add(node, f"{name}(unparsable literal)", "runs code the scan cannot read")
            else:
                self._inner(tree, node)
        for arg in [*node.args[1:], *node.keywords]:
            self.visit(arg)

    # ---- strings and weak equality ----------------------------------------------------------------------------

    def visit_Expr(self, node: ast.Expr) -> None:
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstrings and bare strings: never evaluated
        self.generic_visit(node)

    def generic_visit(self, node: ast.AST) -> None:
        self._children(node)

    def _children(self, node: ast.AST, skip: tuple[ast.AST, ...] = ()) -> None:
        """Visit every child but those in `skip`."""
        for child in ast.iter_child_nodes(node):
            if not any(child is s for s in skip):
                self._child(node, child)

    def _child(self, node: ast.AST, child: ast.AST) -> None:
        """Visit one child of `node`; a child that folds to a string is judged as that string."""
        if isinstance(child, ast.expr) and not isinstance(child, ast.Name | ast.Attribute):
            text = fold(child)
            if text is not None:
                lookup = (isinstance(node, ast.Subscript) and child is node.slice) or (
                    isinstance(node, ast.Call) and child in node.args
                )
                hit = string_probe(text, lookup)
                if hit is not None:
                    self.add(child, *hit)
                return
        self.visit(child)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        saved, self.scope = self.scope, f"{self.scope}.{node.name}"
        try:
            self.generic_visit(node)
        finally:
            self.scope = saved

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if node.returns is not None:
            self._annotation(node.returns)
        saved, self.scope = self.scope, f"{self.scope}.{node.name}"
        returned, self.returned = self.returned, None
        function, self.function = self.function, node
        handling, self.handling = self.handling, False
        try:
            self._weak_equality(node)
        finally:
            self.scope, self.function, self.handling = saved, function, handling
            # `def mods(): return sys.modules` kept as it was: a new call `mods()` is the probe used anew.
            if self.returned is not None:
                self.binds.setdefault((saved, node.name), self.returned)
            self.returned = returned

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Return(self, node: ast.Return) -> None:
        before = len(self.found)
        self.generic_visit(node)
        if (
            len(self.found) > before
            and self.returned is None
            and not binds.is_code_object(node.value, self.found[before:])
        ):
            self.returned = self.found[before].name.split(" (bound to ", 1)[0]

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        before = len(self.found)
        self.visit(node.iter)
        self._hold([node.target], before)
        for child in [node.target, *node.body, *node.orelse]:
            self.visit(child)

    visit_AsyncFor = visit_For

    def visit_withitem(self, node: ast.withitem) -> None:
        before = len(self.found)
        self.visit(node.context_expr)
        if node.optional_vars is not None:
            self._hold([node.optional_vars], before)
            self.visit(node.optional_vars)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        before = len(self.found)
        self.visit(node.value)
        self._hold([node.target], before, node.value)

    def visit_arg(self, node: ast.arg) -> None:
        if node.annotation is not None:
            self._annotation(node.annotation)
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._annotation(node.annotation)
        self._bind([node.target], node)

    def _annotation(self, node: ast.expr) -> None:
        """String annotations are code: `typing.get_type_hints` (and Hypothesis' `builds`/`from_type`, which call
        it) evaluate them in the module's namespace, so each string that parses as an expression is scanned."""
        for part in ast.walk(node):
            if isinstance(part, ast.Constant) and isinstance(part.value, str) and self.depth < _MAX_DEPTH:
                try:
                    tree = ast.parse(part.value.strip(), mode="eval")
                except (SyntaxError, ValueError):
                    continue  # `Literal["some text"]`: never evaluated as a name
                self._inner(tree, part)

    def _inner(self, tree: ast.AST, at: ast.AST) -> None:
        """Scan literal code found at `at` (given to exec, or a string annotation), reporting on `at`'s line."""
        line = getattr(at, "lineno", 1)
        inner = _Scanner(
            self.aliases | module_aliases(tree), line - 1 + self.offset, self.depth + 1, None, self.context
        )
        inner.scan(tree)
        self.found += [Reference(r.name, line + self.offset, r.why, self.context) for r in inner.found]

    def _bind(self, targets: list[ast.expr], node: ast.Assign | ast.AnnAssign) -> None:
        """Visit an assignment; a plain name bound to a value that holds a probe keeps the probe (`m = sys.modules`
        then `m[...]` in a statement the patch wrote is the probe used there)."""
        before = len(self.found)
        self.generic_visit(node)
        self._hold(targets, before, node.value)

    def _hold(self, targets: list[ast.expr], before: int, value: ast.expr | None = None) -> None:
        """Bind the plain names among `targets` to the first probe found since `before` (if any) in `value`."""
        if len(self.found) > before and not binds.is_code_object(value, self.found[before:]):
            probe = self.found[before].name.split(" (bound to ", 1)[0]
            names: list[ast.expr] = [t for t in targets if isinstance(t, ast.Name)]
            names += [e for t in targets if isinstance(t, ast.Tuple | ast.List) for e in t.elts]
            for name in names:
                if isinstance(name, ast.Name):
                    self.binds.setdefault((self.scope, name.id), probe)

    def _weak_equality(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
        if (
            len(body) == 1
            and isinstance(body[0], ast.Return)
            and (weak := binds.constant_compare(node.name, body[0].value))
        ):
            self.add(node, weak, WHY["weak"])
        declared = {n for part in ast.walk(node) if isinstance(part, ast.Global) for n in part.names}
        outer = [*node.decorator_list, node.args, *([node.returns] if node.returns else [])]
        self._scoped(node, binds.parameters(node.args) - declared, outer)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            weak = isinstance(node.value, ast.Lambda) and binds.constant_compare(
                getattr(target, "id", ""), node.value.body
            )
            if weak:
                self.add(node, weak, WHY["weak"])
        self._bind(node.targets, node)

    def scan(self, tree: ast.AST) -> None:
        """Visit the whole tree."""
        self.stdlib = stdlib_aliases(tree)
        self.stdlib_from = stdlib_imported(tree)
        self.tree = tree
        self.visit(tree)


def references(source: bytes) -> Iterator[Reference]:
    """Every probe in one file's source; a file that does not parse is one reference (the scan cannot read it)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        yield Reference("unparsable source", 1, "the scan cannot read it, so it cannot vouch for it")
        return
    aliases = module_aliases(tree)
    first = _Scanner(aliases, 0, 0)
    first.scan(tree)
    if not first.binds:
        yield from first.found
        return
    # A second pass knows which names hold a probe, wherever they are used (flow-insensitive, per scope).
    scanner = _Scanner(aliases, 0, 0, first.binds)
    scanner.scan(tree)
    yield from scanner.found
