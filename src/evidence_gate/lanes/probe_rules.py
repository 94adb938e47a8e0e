"""What counts as a harness probe: the modules, attributes and names the scan watches, why each counts, and the
names a file binds to those modules.

Rules are data: `probe_scan` walks one file's tree and asks these tables; nothing here walks code but the two alias
maps (file-wide, flow-insensitive, so rebinding cannot hide a module).
"""

from __future__ import annotations

import ast
import re
import sys

HARNESS = frozenset(
    {
        "pytest",
        "_pytest",
        "hypothesis",
        "_hypothesis_pytestplugin",
        "_hypothesis_globals",
        "pluggy",
        "evidence_gate",
        "__main__",
    }
)
ENV_PREFIXES = ("PYTEST_", "HYPOTHESIS_", "EVIDENCE_GATE_")
# Per module: (attributes that reach, or None for "every attribute but the harmless ones", the harmless ones).
_SYS = frozenset(
    {
        "_getframe",
        "_getframemodulename",
        "_current_frames",
        "_current_exceptions",
        "settrace",
        "setprofile",
        "gettrace",
        "getprofile",
        "monitoring",
        "addaudithook",
        "modules",
        "meta_path",
        "path_hooks",
        "path_importer_cache",
        "path",
        "__dict__",
        "_clear_type_cache",
        "argv",
        "orig_argv",
        "exc_info",
        "last_traceback",
        "last_exc",
        "breakpointhook",
        "__breakpointhook__",
    }
)
_GC_HARMLESS = frozenset(
    {
        "collect",
        "enable",
        "disable",
        "isenabled",
        "get_count",
        "get_threshold",
        "set_threshold",
        "get_stats",
        "is_tracked",
        "is_finalized",
        "freeze",
        "unfreeze",
        "get_freeze_count",
        "DEBUG_STATS",
        "DEBUG_COLLECTABLE",
        "DEBUG_UNCOLLECTABLE",
        "DEBUG_SAVEALL",
        "DEBUG_LEAK",
    }
)
_INSPECT = frozenset(
    {
        "currentframe",
        "stack",
        "trace",
        "getouterframes",
        "getinnerframes",
        "getframeinfo",
        "getgeneratorlocals",
        "getcoroutinelocals",
        "getasyncgenlocals",
        "getclosurevars",
        "__dict__",
    }
)
_TRACEBACK = frozenset({"walk_stack", "walk_tb", "extract_stack", "format_stack", "print_stack"})
_THREADING = frozenset({"settrace", "setprofile", "settrace_all_threads", "setprofile_all_threads"})
_PKGUTIL = frozenset({"walk_packages", "get_loader", "find_loader", "iter_importers", "resolve_name"})
# Computed-name resolvers: each turns a string made at run time into a module, an object or executed code, so the
# scan cannot see what they reach (`pydoc.locate(name)` is `import_module` by another name).
_UNPICKLE = frozenset({"loads", "load", "Unpickler", "_loads", "_load", "_Unpickler"})
_TYPE_EVAL = frozenset({"get_type_hints", "ForwardRef", "_eval_type", "evaluate_forward_ref", "_type_check"})
_ENTRY_POINTS = frozenset({"EntryPoint", "entry_points"})
RESOLVERS: dict[str, frozenset[str]] = {
    "pickle": _UNPICKLE,
    "_pickle": _UNPICKLE,
    "dill": _UNPICKLE,
    "cloudpickle": _UNPICKLE,
    "shelve": frozenset({"open", "Shelf", "DbfilenameShelf", "BsdDbShelf"}),
    "typing": _TYPE_EVAL,
    "typing_extensions": _TYPE_EVAL,
    "importlib.metadata": _ENTRY_POINTS,
    "importlib_metadata": _ENTRY_POINTS,
}
# Resolver modules with no harmless attribute in code under test (any use counts, the import itself does not).
RESOLVE_ANY = frozenset({"pydoc", "logging.config", "code", "codeop", "timeit"})
# Debuggers, tracers, profilers and doctest: importing them is the probe (they install hooks or exec docstrings).
RESOLVE_WHOLE = frozenset({"doctest", "bdb", "pdb", "trace", "profile", "cProfile", "_lsprof"})
# Builtins that resolve a computed name or run a computed string (read through `builtins`).
BUILTIN_RESOLVERS = frozenset({"__import__", "exec", "eval", "compile", "breakpoint", "__build_class__"})
IMPORTLIB_HARMLESS = frozenset({"metadata", "resources"})  # package data and versions: no code is imported
DENY: dict[str, frozenset[str]] = {
    "sys": _SYS,
    "inspect": _INSPECT,
    "traceback": _TRACEBACK,
    "threading": _THREADING,
    "pkgutil": _PKGUTIL,
    **RESOLVERS,
}
ALLOW_ONLY: dict[str, frozenset[str]] = {
    "gc": _GC_HARMLESS,
    "importlib": IMPORTLIB_HARMLESS,
    "ctypes": frozenset(),
    "_ctypes": frozenset(),
    "cffi": frozenset(),
    "runpy": frozenset(),
    "imp": frozenset(),
    "zipimport": frozenset(),
    "_imp": frozenset(),
    "marshal": frozenset(),
    **{module: frozenset() for module in RESOLVE_ANY},
}
# Importing these at all is the probe (no harmless use in code under test).
WHOLE = (
    frozenset({"ctypes", "_ctypes", "cffi", "runpy", "imp", "_imp", "zipimport", "marshal"}) | HARNESS | RESOLVE_WHOLE
)
# Used as a value (aliased, passed to vars/getattr/dir) these hand over everything they hold.
VALUE_REACH = frozenset({"sys", "gc", "inspect", "builtins", "importlib"}) | (WHOLE - RESOLVE_WHOLE)
# An alias of these used as a value hands the resolvers over too (names too common to judge as attributes).
VALUE_ALIAS = VALUE_REACH | RESOLVE_WHOLE | RESOLVE_ANY | frozenset(RESOLVERS) | {"pkgutil", "logging", "typing"}
# Attribute names that reach other frames, objects or the import system whichever object they are read from.
REACH_ATTRS = frozenset(
    {
        "f_back",
        "f_locals",
        "f_globals",
        "f_builtins",
        "f_trace",
        "f_trace_lines",
        "f_trace_opcodes",
        "tb_frame",
        "gi_frame",
        "cr_frame",
        "ag_frame",
        "_getframe",
        "_current_frames",
        "settrace",
        "setprofile",
        "addaudithook",
        "get_objects",
        "get_referrers",
        "get_referents",
        "currentframe",
        "getouterframes",
        "getinnerframes",
        "meta_path",
        "path_hooks",
        "path_importer_cache",
        "__subclasses__",
        "walk_stack",
        "__builtins__",
    }
)
# Attributes that rebind what a function runs or sees, when written.
WRITE_ATTRS = frozenset(
    {
        "__code__",
        "__globals__",
        "__closure__",
        "__defaults__",
        "__kwdefaults__",
        "cell_contents",
        "__builtins__",
        "f_lineno",
    }
)
DYNAMIC = frozenset({"exec", "eval", "compile"})
# Rebuilding a code object runs bytecode (or claims a file) the scan never sees.
CODE_FIELDS = frozenset({"co_code", "co_names", "co_consts", "co_filename", "co_varnames"})
# `unittest.mock.ANY` (and friends) compare equal to everything: returned from code under test they fool `==`.
MOCK = ("unittest.mock", "mock")

STDLIB = frozenset(sys.stdlib_module_names)
SUBMODULES = frozenset(
    {"importlib.util", "importlib.machinery", "importlib.abc", "importlib._bootstrap", "importlib._bootstrap_external"}
)
# Written, these hold strings that `get_type_hints` evaluates (code the scan cannot read).
ANNOTATIONS = frozenset({"__annotations__", "__annotate__"})
# Dotted modules with rules of their own, and the packages that lead to them (`logging` → `logging.config`).
_DOTTED = SUBMODULES | frozenset(m for m in [*DENY, *ALLOW_ONLY] if "." in m)
PREFIXES = _DOTTED | frozenset(m.rsplit(".", 1)[0] for m in _DOTTED)

CONSTANT_COMPARE: dict[str, bool] = {"__eq__": True, "__ne__": False}
WHY = {
    "sys": "introspection that reaches other frames, modules or the import system",
    "gc": "walks the interpreter's objects (the harness's included)",
    "inspect": "reads other frames or closures",
    "traceback": "walks the call stack (the harness's frames included)",
    "threading": "installs a tracing or profiling hook",
    "pkgutil": "imports modules by computed name",
    "importlib": "import machinery: loads or replaces modules by computed name",
    "lookup": "looks up a computed name on a standard-library module (which may hand over `sys`)",
    "mock": "a mock object compares equal to anything (a weak-property trick)",
    "resolver": "resolves a computed name into a module, an object or executed code (import machinery by another name)",
    "doctest": "runs the examples in docstrings as code (an exec the scan cannot read)",
    "bdb": "a debugger: installs a trace function that can rewrite the tests' frames",
    "pdb": "a debugger: installs a trace function that can rewrite the tests' frames",
    "trace": "installs a trace function that can rewrite the tests' frames",
    "profile": "installs a profiling hook that sees every frame",
    "cProfile": "installs a profiling hook that sees every frame",
    "pickle": "unpickling calls any importable object named in the data (a computed import)",
    "patch": "rebinds a standard-library name for every module, the harness's included",
    "weak": "an equality that always holds makes every `==` in a property true (a weak-property trick)",
}


_PARTS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def string_probe(text: str, lookup: bool) -> tuple[str, str] | None:
    """(name, why) for a string that names the harness, its environment or a reaching attribute; with `lookup`
    (an index or a call argument: `vars(os)["sys"]`) also one that names a reaching module."""
    top = text.split(".", 1)[0]
    if top in HARNESS and top != "__main__":
        return top, "names the test harness or the gate"
    if text.startswith(ENV_PREFIXES):
        return text[:40], "reads the test harness's environment"
    if text in REACH_ATTRS or text in WRITE_ATTRS:
        return text, "names an attribute that reaches other frames or objects"
    # A dotted or spaced path in one string (`attrgetter("gi_frame.f_back")`, `Formatter().get_field("0.f_back",
    # ...)`, `"{0.f_back}".format(g)`, `reduce(getattr, "gi_frame f_back".split(), g)`) reads each part in turn.
    path = "." in text or "[" in text
    for part in _PARTS.findall(text):
        if part in REACH_ATTRS or (path and part in WRITE_ATTRS):
            return part, "names an attribute that reaches other frames or objects (one part of a path in a string)"
        if f"[{part}]" in text and (part in VALUE_REACH or part in HARNESS):
            return part, "names a module that reaches other frames or objects (a key of a path in a string)"
    if lookup and text in VALUE_REACH:
        return text, "names a module that reaches other frames or objects (looked up by name)"
    return None


def evaluates_annotations(node: ast.Call) -> bool:
    """`get_annotations(obj, eval_str=...)` with anything but a literal false: it evaluates string annotations."""
    for keyword in node.keywords:
        if keyword.arg == "eval_str":
            return not (isinstance(keyword.value, ast.Constant) and not keyword.value.value)
    return len(node.args) >= 4


def module_aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to watched modules anywhere in the file (`import sys as s`, `from os import sys`)."""
    out: dict[str, str] = {}
    watched = VALUE_ALIAS | frozenset(DENY) | frozenset(ALLOW_ONLY) | PREFIXES
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".", 1)[0]
                if alias.asname and alias.name in watched:
                    out[alias.asname] = alias.name
                elif not alias.asname and top in watched:
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in STDLIB:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if full in PREFIXES:
                    out[alias.asname or alias.name] = full  # `from logging import config`
                elif alias.name in watched:
                    out[alias.asname or alias.name] = alias.name
    return out


def stdlib_aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound to standard-library modules by `import X [as Y]` (a write through one is a monkeypatch)."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".", 1)[0] in STDLIB:
                    out[alias.asname or alias.name.split(".", 1)[0]] = (
                        alias.name if alias.asname else alias.name.split(".", 1)[0]
                    )
    return out


def stdlib_imported(tree: ast.AST) -> dict[str, str]:
    """Local names bound by `from X import Y [as Z]` with X in the standard library: a submodule, a class or a
    function of it, so a write to an attribute of one (`encoder.c_make_encoder = f`) patches the standard library."""
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] in STDLIB:
            for alias in node.names:
                if alias.name != "*":
                    out[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return out
