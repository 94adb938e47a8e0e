"""The harness-probe scan: every evasion an optimizer would try is a reference, honest code is not, moves are free."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate.lanes.harness_probes import new_references
from evidence_gate.lanes.probe_scan import references
from support.property_repo import GREEN, RED, judge, red_repo, rows
from support.repo_builder import GitRepo

# Each evasion: source added to code under test → a name the scan must report (on that source's last line).
EVASIONS = {
    "sys-modules": ('import sys\nx = "hypothesis" in sys.modules\n', "sys.modules"),
    "harness-string": ('import sys\nx = sys.modules.get("hypothesis")\n', "hypothesis"),
    "from-import-alias": ("from sys import modules as m\n", "sys.modules"),
    "module-alias": ("import sys as s\nf = s._getframe(1)\n", "sys._getframe"),
    "module-as-value": ("import sys\nm = sys\n", "sys (as a value)"),
    "vars-sys": ('import sys\nm = vars(sys)["modules"]\n', "sys (as a value)"),
    "sys-dict": ('import sys\nm = sys.__dict__["modules"]\n', "sys.__dict__"),
    "getattr-built-name": ('import sys\nf = getattr(sys, "_get" + "frame")\n', "sys._getframe"),
    "getattr-computed": ("import sys\nf = getattr(sys, name)\n", "getattr(sys, non-literal)"),
    "getattr-joined": ('f = getattr(x, "".join(["f_", "back"]))\n', "f_back"),
    "getattr-reversed": ('f = getattr(x, "kcab_f"[::-1])\n', "f_back"),
    "dunder-import-built": ('g = __import__("g" + "c")\n', "__import__"),
    "dunder-import-literal": ('o = __import__("gc").get_objects()\n', "gc.get_objects"),
    "import-module": ('import importlib\nm = importlib.import_module("gc")\n', "importlib.import_module"),
    "importlib-util": ("import importlib.util\n", "importlib.util"),
    "sys-through-os": ("import os\nm = os.sys.modules\n", "sys.modules"),
    "sys-through-getattr": ('import os\nm = getattr(os, "sys").modules\n', "sys"),
    "sys-from-os": ("from os import sys\nf = sys._getframe()\n", "sys._getframe"),
    "os-dict-lookup": ('import os\nm = os.__dict__["sys"]\n', "sys"),
    "gc-walk": ("import gc\nobjs = gc.get_objects()\n", "gc.get_objects"),
    "gc-alias": ("import gc as g\nobjs = g.get_referrers(x)\n", "gc.get_referrers"),
    "gc-from-import": ("from gc import get_objects\n", "gc.get_objects"),
    "getframe": ("import sys\nf = sys._getframe(1).f_back\n", "sys._getframe"),
    "frame-attr": ("f = frame.f_back.f_locals\n", "f_back"),
    "traceback-frame": ("f = err.__traceback__.tb_frame\n", "tb_frame"),
    "frame-below-module-name": ("f = report.traceback.tb_frame\n", "tb_frame"),
    "traceback-computed": ("f = getattr(err.__traceback__, codecs.decode('go_senzr', 'rot13'))\n", "__traceback__"),
    "exc-info": ("import sys\ntb = sys.exc_info()[2]\n", "sys.exc_info"),
    # A parameter or a comprehension target shadows a module alias only where Python binds it there.
    "module-as-a-parameter-default": ("import sys\nf = lambda sys=sys: sys.modules\n", "sys (as a value)"),
    "alias-in-a-comprehension-first-iterable": ("import sys as t\nX = [t for t in t.modules]\n", "sys.modules"),
    "global-alias-under-a-parameter": (
        "import sys\n\n\ndef f(sys):\n    def g():\n        global sys\n        return sys.modules\n",
        "sys.modules",
    ),
    # `sys.exc_info()[1]` is a handler's own exception only in its except body, in its frame; else it may be the harness's.
    "exc-info-traceback-in-a-handler": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    tb = sys.exc_info()[2]\n",
        "sys.exc_info",
    ),
    "exc-info-whole-in-a-handler": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    q.put(sys.exc_info())\n",
        "sys.exc_info",
    ),
    "exc-info-computed-index": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    e = sys.exc_info()[i]\n",
        "sys.exc_info",
    ),
    "exc-info-outside-a-handler": ("import sys\n\n\ndef f():\n    return sys.exc_info()[1]\n", "sys.exc_info"),
    "exc-info-in-finally": ("import sys\ntry:\n    f()\nfinally:\n    e = sys.exc_info()[1]\n", "sys.exc_info"),
    "exc-info-def-in-a-handler": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    def g():\n        return sys.exc_info()[1]\n",
        "sys.exc_info",
    ),
    "exc-info-lambda-in-a-handler": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    g = lambda: sys.exc_info()[1]\n",
        "sys.exc_info",
    ),
    "exc-info-generator-in-a-handler": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    g = (sys.exc_info()[1] for _ in x)\n",
        "sys.exc_info",
    ),
    "exc-info-traceback-of-the-exception": (
        "import sys\ntry:\n    f()\nexcept OSError:\n    t = sys.exc_info()[1].__traceback__\n",
        "__traceback__",
    ),
    "pickle-literal": ("import pickle\nx = pickle.loads(b'cbuiltins\\nexec\\n(Vx=1\\ntR.')\n", "loads(literal bytes)"),
    "generator-frame": ("f = gen.gi_frame\n", "gi_frame"),
    "inspect-stack": ("import inspect\ns = inspect.stack()\n", "inspect.stack"),
    "inspect-currentframe": ("from inspect import currentframe\n", "inspect.currentframe"),
    "logging-currentframe": ("import logging\nf = logging.currentframe()\n", "currentframe"),
    "traceback-walk": ("import traceback\nfor f, _ in traceback.walk_stack(None): pass\n", "traceback.walk_stack"),
    "settrace": ("import sys\nsys.settrace(hook)\n", "sys.settrace"),
    "setprofile": ("import sys\nsys.setprofile(hook)\n", "sys.setprofile"),
    "threading-settrace": ("import threading\nthreading.settrace(hook)\n", "threading.settrace"),
    "monitoring": ("import sys\nsys.monitoring.use_tool_id(3, 'x')\n", "sys.monitoring"),
    "audit-hook": ("import sys\nsys.addaudithook(hook)\n", "sys.addaudithook"),
    "meta-path": ("import sys\nsys.meta_path.insert(0, finder)\n", "sys.meta_path"),
    "path-hooks": ("import sys\nsys.path_hooks.append(hook)\n", "sys.path_hooks"),
    "ctypes": ("import ctypes\n", "ctypes"),
    "runpy": ("import runpy\n", "runpy"),
    "code-write": ("f.__code__ = g.__code__\n", "__code__ (write)"),
    "globals-setattr": ('setattr(f, "__globals__", {})\n', "__globals__"),
    "cell-write": ("f.__closure__[0].cell_contents = 1\n", "cell_contents (write)"),
    "builtins-write": ("import builtins\nbuiltins.len = fake\n", "builtins.len (write)"),
    "builtins-setattr": ('import builtins\nsetattr(builtins, "len", fake)\n', "builtins.len (write)"),
    "dunder-builtins": ('__builtins__["len"] = fake\n', "__builtins__"),
    "subclasses": ("objs = object.__subclasses__()\n", "__subclasses__"),
    "import-hypothesis": ("from hypothesis import reject\n", "hypothesis"),
    "import-pytest": ("import pytest\n", "pytest"),
    "import-_pytest": ("import _pytest.runner\n", "_pytest"),
    "import-pluggy": ("import pluggy\n", "pluggy"),
    "import-gate": ("from evidence_gate import pytest_plugin\n", "evidence_gate"),
    "import-main": ("import __main__\n", "__main__"),
    "env-name": ('import os\nt = os.environ.get("PYTEST_CURRENT_TEST")\n', "PYTEST_CURRENT_TEST"),
    "env-name-built": ('import os\nt = os.environ.get("PYTEST_" + "VERSION")\n', "PYTEST_VERSION"),
    "env-hypothesis": ('import os\np = os.environ["HYPOTHESIS_PROFILE"]\n', "HYPOTHESIS_PROFILE"),
    "exec-literal": ('exec("import gc; gc.get_objects()")\n', "gc.get_objects"),
    "exec-computed": ("exec(code)\n", "exec(non-literal)"),
    "eval-computed": ("v = eval(chr(103) + chr(99))\n", "eval(non-literal)"),
    "compile-computed": ('c = compile(src, "x", "exec")\n', "compile(non-literal)"),
    # `eval(name)` is `eval(compile(...))` only for a function's local bound by compile alone; anything else counts.
    "eval-code-name-rebound": (
        'def f(s):\n    code = compile(s, "<x>", "eval")\n    code = s\n    return eval(code)\n',
        "eval(non-literal)",
    ),
    "eval-a-parameter": ("def f(code):\n    return eval(code)\n", "eval(non-literal)"),
    "eval-a-module-global-code": ('code = compile(s, "<x>", "eval")\nx = eval(code)\n', "eval(non-literal)"),
    "eval-code-compile-shadowed": (
        'def compile(s, f, m):\n    return s\n\n\ndef f(s):\n    code = compile(s, "<x>", "eval")\n    return eval(code)\n',
        "eval(non-literal)",
    ),
    "eval-code-declared-global": (
        'def f(s):\n    global code\n    code = compile(s, "<x>", "eval")\n    return eval(code)\n',
        "eval(non-literal)",
    ),
    "eval-code-rebound-by-walrus": (
        'def f(s):\n    code = compile(s, "<x>", "eval")\n    return [eval(code) for _ in [code := s]]\n',
        "eval(non-literal)",
    ),
    "eval-code-rebound-by-a-closure": (
        'def f(s):\n    code = compile(s, "<x>", "eval")\n\n    def g():\n        nonlocal code\n'
        "        code = s\n\n    g()\n    return eval(code)\n",
        "eval(non-literal)",
    ),
    "exec-code-after-star-import": (
        'from m import *\n\n\ndef f(s):\n    code = compile(s, "<x>", "exec")\n    exec(code)\n',
        "exec(non-literal)",
    ),
    "eval-code-compiled-from-a-probe": (
        'import sys\n\n\ndef f():\n    code = compile(sys.modules["m"].S, "<x>", "eval")\n    return eval(code)\n',
        "code (bound to a probe)",
    ),
    "exec-as-value": ("run = exec\n", "exec (as a value)"),
    "nested-exec": ("exec(\"exec('import ctypes')\")\n", "ctypes"),
    "stdlib-monkeypatch": ("import os\nos.write = rewrite\n", "os.write (write)"),
    "stdlib-setattr": ('import json as j\nsetattr(j, "dumps", fake)\n', "json.dumps (write)"),
    "argv": ("import sys\nfd = int(sys.argv[-1])\n", "sys.argv"),
    "importlib-alias": ('import importlib as il\nm = il.import_module("gc")\n', "importlib.import_module"),
    "import-module-alias": ("from importlib import import_module as im\n", "importlib.import_module"),
    "sys-by-dunder-import": ('sys = __import__("sys")\n', "__import__"),
    "exec-file": ('exec(open("payload.txt").read())\n', "exec(non-literal)"),
    "compile-forged-file": ('exec(compile("assert True", "properties/test_double.py", "exec"))\n', "compile(filename)"),
    "marshal": ("import marshal\n", "marshal"),
    "code-replace": ("f.__code__ = g.__code__.replace(co_code=raw)\n", "co_code= (code object rebuilt)"),
    "forged-filename": (
        'c = code.replace(co_filename="properties/test_double.py")\n',
        "co_filename= (code object rebuilt)",
    ),
    "getattr-stdlib-computed": (
        "import os\nm = getattr(os, bytes([115, 121, 115]).decode())\n",
        "getattr(os, non-literal)",
    ),
    "vars-stdlib": ("import os\nm = vars(os)[key]\n", "vars(os)"),
    "stdlib-dict": ("import logging\nm = logging.__dict__[key]\n", "logging.__dict__"),
    "mock-any": ("from unittest.mock import ANY\n", "unittest.mock"),
    "mock-module": ("from unittest import mock\n", "unittest.mock"),
    "weak-eq-truthy": ("class R:\n    def __eq__(self, other):\n        return 1\n", "__eq__ returns True"),
    "weak-eq": ("class R:\n    def __eq__(self, other):\n        return True\n", "__eq__ returns True"),
    "weak-eq-lambda": ("class R:\n    __eq__ = lambda self, other: True\n", "__eq__ returns True"),
    "weak-ne": (
        "class R:\n    def __ne__(self, other):\n        '''never differs'''\n        return False\n",
        "__ne__ returns False",
    ),
    "unparsable": ("def broken(:\n", "unparsable source"),
    # Computed-name resolvers: a string made at run time becomes a module, an object or executed code.
    "pydoc-locate": ("import pydoc\nhook = pydoc.locate(name)\n", "pydoc.locate"),
    "pydoc-from": ("from pydoc import locate\n", "pydoc.locate"),
    "pkgutil-resolve": ("import pkgutil\nf = pkgutil.resolve_name(name)\n", "pkgutil.resolve_name"),
    "entry-point": ("from importlib.metadata import EntryPoint as E\n", "importlib.metadata.EntryPoint"),
    "entry-point-attr": (
        "import importlib.metadata\nf = importlib.metadata.EntryPoint(n, v, g).load()\n",
        "importlib.metadata.EntryPoint",
    ),
    "entry-point-alias": (
        "from importlib import metadata as md\nep = md.EntryPoint\n",
        "importlib.metadata.EntryPoint",
    ),
    "entry-points": ("from importlib.metadata import entry_points\n", "importlib.metadata.entry_points"),
    "logging-config": (
        "import logging.config\nlogging.config.dictConfig({'()': name})\n",
        "logging.config.dictConfig",
    ),
    "logging-config-from": ("from logging import config\nconfig.dictConfig(c)\n", "logging.config.dictConfig"),
    "logging-config-getattr": (
        "import logging\ngetattr(logging, 'config').dictConfig(c)\n",
        "logging.config.dictConfig",
    ),
    "logging-configurator": (
        "from logging.config import BaseConfigurator\n",
        "logging.config.BaseConfigurator",
    ),
    "pickle-non-literal": ("import pickle\nx = pickle.loads(data)\n", "pickle.loads"),
    "pickle-alias": ("import pickle as p\nx = p.load(stream)\n", "pickle.load"),
    "pickle-from": ("from pickle import loads\n", "pickle.loads"),
    "unpickler": ("import _pickle\nu = _pickle.Unpickler(f)\n", "_pickle.Unpickler"),
    "get-type-hints": ("import typing\nh = typing.get_type_hints(f)\n", "typing.get_type_hints"),
    "get-type-hints-from": ("from typing import get_type_hints\n", "typing.get_type_hints"),
    "forward-ref": ("from typing import ForwardRef\n", "typing.ForwardRef"),
    "get-annotations-eval": (
        "import inspect\na = inspect.get_annotations(f, eval_str=True)\n",
        "get_annotations(eval_str)",
    ),
    "string-annotation": ("def f(x: \"__import__('gc').get_objects()\"): pass\n", "gc.get_objects"),
    "string-return-annotation": ("def f() -> 'sys._getframe(1)': pass\n", "_getframe"),
    "string-annotation-nested": ("x: 'list[__import__(\"ctypes\")]' = []\n", "__import__"),
    "annotations-write": ("f.__annotations__ = {'x': code}\n", "__annotations__ (write)"),
    "doctest": ("import doctest\n", "doctest"),
    "doctest-from": ("from doctest import run_docstring_examples\n", "doctest"),
    "bdb": ("import bdb\n", "bdb"),
    "pdb": ("from pdb import Pdb\n", "pdb"),
    "trace-module": ("import trace\n", "trace"),
    "cprofile": ("import cProfile\n", "cProfile"),
    "builtins-import": ("import builtins\nm = builtins.__import__(name)\n", "builtins.__import__"),
    "builtins-import-from": ("from builtins import __import__ as imp\n", "builtins.__import__"),
    "builtins-getattr": ("import builtins\nm = getattr(builtins, '__imp' + 'ort__')\n", "builtins.__import__"),
    "builtins-exec": ("import builtins as b\nb.exec(src)\n", "builtins.exec"),
    "breakpoint": ("breakpoint()\n", "breakpoint"),
    "breakpointhook": ("import sys\nsys.breakpointhook = hook\n", "sys.breakpointhook"),
    "frame-lineno": ("frame.f_lineno = 12\n", "f_lineno (write)"),
    "frame-trace-lines": ("frame.f_trace_lines = False\n", "f_trace_lines"),
    "code-interact": ("import code\ncode.InteractiveInterpreter().runsource(s)\n", "code.InteractiveInterpreter"),
    "timeit-exec": ("import timeit\ntimeit.timeit(stmt)\n", "timeit.timeit"),
    "shelve": ("import shelve\nd = shelve.open(path)\n", "shelve.open"),
    # Evasions of the resolver rules: an aliased module used as a value, vars() of a dotted module.
    "resolver-module-as-value": ("import pydoc\nm = pydoc\n", "pydoc (as a value)"),
    "logging-as-value": ("import logging\nm = logging\n", "logging (as a value)"),
    "vars-dotted-module": ("import logging.config\nf = vars(logging.config)[name]\n", "vars(logging.config)"),
    "vars-aliased-stdlib": ("import pickle as p\nf = vars(p)[name]\n", "vars(pickle)"),
    "getattr-resolver-computed": ("import pydoc\nf = getattr(pydoc, name)\n", "getattr(pydoc, non-literal)"),
    "membership-names-a-resolver": ('import builtins\nx = "__import__" in dir(builtins)\n', "builtins.__import__"),
    "membership-computed-name": ("x = name in __builtins__\n", "__builtins__"),
    "pickle-through-attr": ("import copyreg\nx = copyreg.pickle.loads(d)\n", "pickle.loads"),
    # Red team, issue 21's round: a path of attributes in one string, and a name made with a method of str.
    "attrgetter-dotted": ('import operator\nf = operator.attrgetter("gi_frame.f_back")\n', "gi_frame"),
    "formatter-field": ('import string\nf = string.Formatter().get_field("0.gi_frame.f_back", [g], {})\n', "gi_frame"),
    "format-field": ('x = "{0.f_back}".format(g)\n', "f_back"),
    "reduce-split": ('import functools\nf = functools.reduce(getattr, "gi_frame f_back".split(), g)\n', "gi_frame"),
    "method-built-name": ('f = getattr(g, "gi_" + "FRAME".lower())\n', "gi_frame"),
    "replace-built-name": ('f = getattr(g, "gi_X".replace("X", "frame"))\n', "gi_frame"),
    # Review of the signed channel: the standard library patched through a dotted module or a from-imported name
    # (the worker's JSON encoder, OpenSSL's HMAC), and a module reached as a key of a path in a string.
    "dotted-stdlib-write": (
        "import json.encoder\njson.encoder.c_make_encoder = f\n",
        "json.encoder.c_make_encoder (write)",
    ),
    "from-stdlib-write": (
        "from json import encoder\nencoder.c_make_encoder = f\n",
        "json.encoder.c_make_encoder (write)",
    ),
    "from-stdlib-class-write": (
        "from json import JSONEncoder\nJSONEncoder.encode = f\n",
        "json.JSONEncoder.encode (write)",
    ),
    "from-stdlib-alias-write": (
        "from hmac import _hashopenssl as h\nh.hmac_digest = spy\n",
        "hmac._hashopenssl.hmac_digest (write)",
    ),
    "setattr-dotted-stdlib": (
        'import hashlib\nsetattr(hashlib._hashlib, "hmac_digest", spy)\n',
        "hashlib._hashlib.hmac_digest (write)",
    ),
    "string-path-globals": (
        "import string, logging\nm = string.Formatter().get_field('0.__init__.__globals__[sys]', [logging.Logger], {})\n",
        "__globals__",
    ),
    "string-path-long": ('x = ("a " * 2100 + "gi_frame f_back").split()[-2:]\n', "gi_frame"),
}

HONEST = [
    "import sys\nsys.stderr.write('x')\nprint(sys.version_info, sys.platform, sys.maxsize)\n",
    "import inspect\nsig = inspect.signature(f)\nok = inspect.isclass(c)\n",
    "import importlib.metadata\nv = importlib.metadata.version('attrs')\n",
    "from importlib import metadata\n",
    "import gc\ngc.collect()\n",
    "__all__ = ['inspect', 'sys', 'gc']\n",
    '"""Docs: run the tests with pytest and hypothesis, or read sys.modules."""\n',
    "v = getattr(self, name)\nsetattr(self, name, v)\n",
    "from attrs import inspect\nx = inspect(cls)\n",
    "import traceback\nmsg = traceback.format_exc()\n",
    "import os\nhome = os.environ.get('HOME')\n",
    "class P:\n    def __eq__(self, other):\n        return self.x == other.x\n",
    "code = f.__code__\nname = f.__code__.co_name\n",
    "import os\nself.write = os.write\nx.attr = 1\n",
    "class P:\n    def __eq__(self, other):\n        return NotImplemented\n",
    "import operator\nf = getattr(operator, 'add')\n",
    "exec(compile('x = 1', '<generated>', 'exec'))\n",
    "import logging\nlog = logging.getLogger(__name__)\nlogging.basicConfig()\n",
    "import typing\nfrom typing import Optional\nT = typing.TypeVar('T')\n",
    "def f(x: 'Optional[int]', y: 'list[str]') -> 'Literal[\"some text\"]':\n    pass\n",
    "import inspect\na = inspect.get_annotations(f)\n",
    "from importlib.metadata import version, PackageNotFoundError\n",
    "import json\nx = json.loads(data)\n",
    "x.code = 1\ny = err.code\nz = self.trace\n",
    "frame = node.lineno\nprint(frame)\n",
    # bidict 678c007d39, 869f7c2fb0: `import typing as t`, then `t` as a comprehension target or a parameter.
    "import typing as t\nX = tuple(t for t in types if issubclass(t, M))\n",
    "import typing as t\nF = S.filter(lambda t: t[0] != t[1])\n",
    "import typing as t\n\n\ndef first(t):\n    return t[0]\n",
    # Objects made from standard-library classes, written to: not the standard library itself.
    "from collections import OrderedDict\nd = OrderedDict()\nd.x = 1\n",
    "from argparse import ArgumentParser\np = ArgumentParser()\np.prog = 'tool'\nself.parser.prog = 'x'\n",
    # Dotted and spaced names in strings, and str methods on literals, that reach nothing.
    'import logging\nlog = logging.getLogger("app.frames.back")\nx = "{0.name}".format(item)\n',
    'parts = "a.b.c".split(".")\nkey = "Frame Back".lower().replace(" ", "_")\n',
    # pyrsistent 11362c5d62, 058ccde77c (setup.py): the Python 2 spelling of `except OSError as e`.
    "import sys\ntry:\n    f()\nexcept OSError:\n    e = sys.exc_info()[1]\n    log(e)\n",
]


@pytest.mark.parametrize("case", sorted(EVASIONS))
def test_evasion_is_a_reference(case: str) -> None:
    """Each evasion is reported under its name, on the line that does it."""
    source, name = EVASIONS[case]
    found = list(references(source.encode()))
    assert name in {r.name for r in found}, found
    last = len(source.splitlines())
    assert any(r.name == name and (r.line == last or case.startswith("weak")) for r in found), found


@pytest.mark.parametrize("source", HONEST)
def test_honest_code_is_not_a_probe(source: str) -> None:
    """Ordinary uses of sys, inspect, importlib.metadata, gc.collect and getattr on own objects are not probes."""
    assert list(references(source.encode())) == []


PROBE_LINES = [s.rstrip("\n") for s, n in EVASIONS.values() if "\n" not in s.rstrip("\n") and n != "unparsable source"]


@given(lines=st.lists(st.sampled_from([*PROBE_LINES, "x = 1", "y = x + 1"]), max_size=12), seed=st.randoms())
def test_moving_lines_within_a_file_adds_nothing(lines: list[str], seed: random.Random) -> None:
    """Reordering a file's lines (moved code) never yields a new probe."""
    moved = list(lines)
    seed.shuffle(moved)
    sides = {"src/m.py": ("\n".join(lines).encode() + b"\n", "\n".join(moved).encode() + b"\n")}
    assert new_references(sides) == []


@given(lines=st.lists(st.sampled_from(PROBE_LINES), min_size=1, max_size=8), cut=st.integers(0, 8))
def test_moving_lines_between_files_adds_nothing(lines: list[str], cut: int) -> None:
    """Lines moved from one code-under-test file to another (or a new one) are not new probes."""
    text = "\n".join(lines).encode() + b"\n"
    kept, moved = lines[:cut], lines[cut:]
    sides = {
        "src/a.py": (text, "\n".join(kept).encode() + b"\n"),
        "src/b.py": (None, "\n".join(moved).encode() + b"\n"),
    }
    assert new_references(sides) == []


@given(lines=st.lists(st.sampled_from(PROBE_LINES), max_size=8), extra=st.sampled_from(PROBE_LINES))
def test_one_more_occurrence_is_new(lines: list[str], extra: str) -> None:
    """A probe line added to a file counts even when the file already had the same line."""
    base = "\n".join(lines).encode() + b"\n"
    head = "\n".join([*lines, extra]).encode() + b"\n"
    hits = new_references({"src/m.py": (base, head)})
    expected = {r.name for r in references(extra.encode())}
    assert expected, extra  # else the next line holds for any result, a scanner that finds nothing included
    assert expected <= {h.ref.name for h in hits}, hits


def test_a_new_probe_cannot_hide_behind_a_moved_one() -> None:
    """Moving one `sys._getframe` line and adding a second one elsewhere reports exactly the added one."""
    base = b"import sys\n\ndef a():\n    return sys._getframe(1)\n"
    head = b"import sys\n\ndef b():\n    return sys._getframe(1)\n\ndef c():\n    return sys._getframe(2)\n"
    hits = new_references({"src/m.py": (base, head)})
    assert [(h.ref.name, h.ref.line) for h in hits] == [("sys._getframe", 7)]


RED_SOURCE = RED


# Same file, same count of each name as the baseline, but the probe is used in a statement the patch wrote.
CHANGED_USE = {
    "statement-edited": (
        "import sys\nA = 'json' in sys.modules\n",
        "import sys\nA = name in sys.modules\n",
        "sys.modules",
    ),
    "one-removed-one-added": (
        "import sys\nA = 'json' in sys.modules\n",
        "import sys\n\n\ndef f(n):\n    return n in sys.modules\n",
        "sys.modules",
    ),
    "bound-name": (
        "import sys\nm = sys.modules\n",
        "import sys\nm = sys.modules\nx = 'a' in m\n",
        "m (bound to a probe)",
    ),
    "bound-by-for": (
        "import sys\nfor m in [sys.modules]:\n    pass\n",
        "import sys\nfor m in [sys.modules]:\n    pass\ny = m\n",
        "m (bound to a probe)",
    ),
    "bound-by-with": (
        "import sys\nwith keep(sys.modules) as m:\n    pass\n",
        "import sys\nwith keep(sys.modules) as m:\n    pass\ny = m\n",
        "m (bound to a probe)",
    ),
    "bound-by-walrus": (
        "import sys\nif (m := sys.modules):\n    pass\n",
        "import sys\nif (m := sys.modules):\n    pass\ny = m\n",
        "m (bound to a probe)",
    ),
    "function-returns-probe": (
        "import sys\n\n\ndef mods():\n    return sys.modules\n",
        "import sys\n\n\ndef mods():\n    return sys.modules\n\n\nN = len(mods())\n",
        "mods (bound to a probe)",
    ),
    "binding-moved-then-used": (
        "import sys\n\n\ndef f():\n    x = sys.modules\n",
        "import sys\n\n\ndef g():\n    x = sys.modules\n    return x['a']\n",
        "x (bound to a probe)",
    ),
    "bound-to-compiled-literal-code": (
        'import gc\ncode = compile("gc.get_objects()", "<x>", "eval")\n',
        'import gc\ncode = compile("gc.get_objects()", "<x>", "eval")\nrun(code)\n',
        "code (bound to a probe)",
    ),
    "bound-to-a-compile-that-probes": (
        'import sys\ncode = compile(sys.modules["m"].SRC, "<x>", "exec")\n',
        'import sys\ncode = compile(sys.modules["m"].SRC, "<x>", "exec")\nrun(code)\n',
        "code (bound to a probe)",
    ),
    "import-alias-added": ("from sys import modules\n", "from sys import modules as m\n", "sys.modules"),
    # Renames (attrs 9b9a69140d) are old statements only when consistent through the whole file and meaning-neutral.
    "rename-leaves-the-old-name": (
        "import typing\nh = typing.get_type_hints(C)\nlog(h)\n",
        "import typing\nh = typing.get_type_hints(C)\nlog(h)\nsend(h)\n",
        "h (bound to a probe)",
    ),
    "rename-split-in-two": (
        "import typing\nh = typing.get_type_hints(C)\nlog(h)\nlog(h)\n",
        "import typing\nh = typing.get_type_hints(C)\nkeep(h)\nsend(h)\n",
        "h (bound to a probe)",
    ),
    "rename-to-a-builtin": (
        'import sys\nf = sys._getframe(1)\n_keep(f, "f_lineno", 9)\n',
        'import sys\nf = sys._getframe(1)\nsetattr(f, "f_lineno", 9)\n',
        "f (bound to a probe)",
    ),
    "rename-to-a-dunder": (
        "import sys\nm = sys.modules\n_lookup = m.get\n",
        "import sys\nm = sys.modules\n__getattr__ = m.get\n",
        "m (bound to a probe)",
    ),
    "rename-a-bound-name-to-another-probe": (
        "import sys\nimport typing\nh = typing.get_type_hints(C)\nuse(h)\n",
        "import sys\nimport typing\nk = sys._getframe(1)\nuse(k)\n",
        "k (bound to a probe)",
    ),
    "rename-kept-in-a-string": (
        "import typing\nh = typing.get_type_hints(C)\n_set(h)\n",
        'import typing\nh = typing.get_type_hints(C)\n_SET(h)\nNAME = "_set"\n',
        "h (bound to a probe)",
    ),
    "string-annotation-edited": (
        "def f(x: 'int') -> None:\n    pass\n",
        "def f(x: 'list[__import__(\"gc\").get_objects()]') -> None:\n    pass\n",
        "gc.get_objects",
    ),
}


@pytest.mark.parametrize("case", sorted(CHANGED_USE))
def test_a_probe_used_in_a_new_statement_is_new(case: str) -> None:
    """Counts do not hide a probe: the same names as the baseline, used in a statement the patch wrote, are new."""
    base, head, name = CHANGED_USE[case]
    hits = new_references({"src/m.py": (base.encode(), head.encode())})
    assert name in {h.ref.name for h in hits}, hits


def test_editing_an_import_list_leaves_its_probes_old() -> None:
    """Adding or dropping other names in an import statement (cattrs' "Drop Python 3.8") is not a new probe."""
    base = b"import sys, os\nfrom typing import Any, get_type_hints\nfrom hypothesis import given\n"
    head = b"import json, sys\nfrom typing import get_type_hints, List\nfrom hypothesis import given, note\n"
    assert new_references({"src/m.py": (base, head)}) == []


# Honest edits from real histories that the scan once misread (bench/probe_history.py on attrs and cattrs): each
# base → head must add no probe.
HONEST_EDITS = {
    # attrs 3040bdabbc, 9de675f4b4: reading a closure through getattr is `f.__closure__`, a read; only writes rebind.
    "getattr-reads-a-write-only-attribute": (
        "def cells(item):\n    return None\n",
        'def cells(item):\n    return getattr(item.fget, "__closure__", None)\n',
    ),
    # attrs fb724af0f9, cfa6d2e99f: a name bound to a code object from an old `compile(...)`, used in an edited call.
    "code-object-used-in-an-edited-statement": (
        'def make(script, name):\n    code = compile(script, name, "exec")\n    run(code, {"a": 1})\n',
        'def make(script, name):\n    code = compile(script, name, "exec")\n    run(code, {"a": 1, "b": 2})\n',
    ),
    # cattrs 59edafdac3, 4f0840c8e4: testing one literal name against builtins' namespace is `hasattr(builtins, ...)`.
    "literal-name-in-builtins": (
        "import builtins\n",
        'import builtins\nOLD = "ExceptionGroup" not in __builtins__\nNEW = "ExceptionGroup" in dir(builtins)\n',
    ),
    # attrs 9b9a69140d: a constant renamed through the whole file, in a statement that uses a probe-bound name.
    "consistent-rename": (
        "import typing\n\n_obj_setattr = object.__setattr__\n\n\ndef resolve(cls):\n"
        "    hints = typing.get_type_hints(cls)\n    for field in cls.fields:\n"
        '        _obj_setattr(field, "type", hints[field.name])\n',
        "import typing\n\n_OBJ_SETATTR = object.__setattr__\n\n\ndef resolve(cls):\n"
        "    hints = typing.get_type_hints(cls)\n    for field in cls.fields:\n"
        '        _OBJ_SETATTR(field, "type", hints[field.name])\n',
    ),
    "probe-bound-name-renamed": (
        "import sys\nmods = sys.modules\nok = 'json' in mods\n",
        "import sys\nloaded = sys.modules\nok = 'json' in loaded\n",
    ),
    # attrs dcfbb7b955: `exec_(bytecode, ...)` became `eval(bytecode, ...)` of a local bound only by compile.
    "eval-of-a-local-code-object": (
        'def make(script, globs):\n    bytecode = compile(script, "", "exec")\n    exec_(bytecode, globs, {})\n',
        'def make(script, globs):\n    bytecode = compile(script, "", "exec")\n    eval(bytecode, globs, {})\n',
    ),
}


def test_an_empty_filename_claims_no_file() -> None:
    """attrs' and cattrs' generated code compiles under the filename "" (cattrs 075146bfb9, attrs 024a16c434): no
    file has that name, so only the non-literal source counts, not a forged file."""
    names = {r.name for r in references(b'exec(compile(src, "", "exec"))\n')}
    assert names == {"compile(non-literal)"}, names
    assert "compile(filename)" in {r.name for r in references(b'exec(compile(src, "tests/test_a.py", "exec"))\n')}


@pytest.mark.parametrize("case", sorted(HONEST_EDITS))
def test_an_honest_edit_from_a_real_history_adds_no_probe(case: str) -> None:
    """The shapes of honest commits the scan flagged on attrs' and cattrs' histories, minimal: none is a new probe."""
    base, head = HONEST_EDITS[case]
    assert new_references({"src/m.py": (base.encode(), head.encode())}) == []


def test_a_move_counts_only_out_of_code_under_test() -> None:
    """A statement removed from a file that was not code under test on the baseline does not make its copy old."""
    line = b"import sys\nF = sys._getframe\n"
    sides = {"scripts/tool.py": (line, None), "src/m.py": (None, line)}
    assert new_references(sides, move_from={"src/m.py"}) != []
    assert new_references(sides, move_from={"scripts/tool.py", "src/m.py"}) == []


# ---- the lane in the gate, on real repositories ------------------------------------------------------------------


def _probe_config(**extra: object) -> str:
    config = {
        "version": 1,
        "properties": {
            "seeds": [11, 12],
            "fresh_seeds": 0,
            "trials": 25,
            "timeout_s": 60,
            "jobs": 1,
            "pythonpath": ["src"],
        },
        **extra,
    }
    return json.dumps(config)


def test_probe_fails_before_any_test_runs(git_repo: GitRepo, tmp_path: Path) -> None:
    """A new probe in src/ is harness-probed on its line, and no property runs."""
    red_repo(git_repo)
    git_repo.commit("probe", {"src/calc.py": "import gc\n\n\ndef double(x):\n    gc.get_objects()\n    return x * 2\n"})
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "harness-probed", receipt["violations"]
    [violation] = receipt["violations"]
    assert (violation["path"], violation["line"]) == ("src/calc.py", 5)
    assert "probes.allow" in violation["message"] and "src/calc.py: gc.get_objects" in violation["message"]
    assert "probes the harness" in receipt["properties"]["skipped"]
    assert receipt["probes"]["scanned"] == ["src/calc.py"]


def test_module_outside_pythonpath_imported_by_code_under_test_is_scanned(git_repo: GitRepo, tmp_path: Path) -> None:
    """Code under test importing a new module at the root puts that module in the scan too."""
    red_repo(git_repo)
    git_repo.commit(
        "helper",
        {
            "src/calc.py": "import tools.probe\n\n\ndef double(x):\n    return x * 2\n",
            "tools/__init__.py": "",
            "tools/probe.py": "import sys\nS = sys._getframe()\n",
            "tools/test_unrelated.py": "import pytest\n",
        },
    )
    receipt = judge(git_repo, tmp_path, run=False)
    assert [(v["path"], v["row"]) for v in receipt["violations"]] == [("tools/probe.py", "harness-probed")]


def test_test_files_and_unimported_scripts_are_not_code_under_test(git_repo: GitRepo, tmp_path: Path) -> None:
    """Tests that import pytest, and scripts nothing imports, are not scanned: the honest patch passes."""
    red_repo(git_repo)
    git_repo.commit(
        "fix with tests",
        {
            "src/calc.py": GREEN,
            "tests/test_calc.py": "import pytest\nimport gc\n",
            "src/pkg/test_inner.py": "from hypothesis import given\n",
            "scripts/debug.py": "import sys\nprint(sys._getframe())\n",
        },
    )
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


def test_allow_lets_one_probe_through(git_repo: GitRepo, tmp_path: Path) -> None:
    """`probes.allow` on the baseline lets exactly the named probe through; the receipt records it."""
    red_repo(git_repo, extra={".evidence-gate.yml": _probe_config(probes={"allow": ["src/*.py: sys._getframe"]})})
    git_repo.commit(
        "logging helper",
        {
            "src/calc.py": "import sys\n\n\ndef double(x):\n"
            "    _caller = sys._getframe(0).f_code.co_name\n"
            "    return x * 2\n"
        },
    )
    receipt = judge(git_repo, tmp_path)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert [a["name"] for a in receipt["probes"]["allowed"]] == ["sys._getframe"]


def test_allowing_a_probe_covers_the_names_bound_to_it(git_repo: GitRepo, tmp_path: Path) -> None:
    """An allow entry for `sys._getframe` also lets `f = sys._getframe` and `f(0)` through in that file, and no other
    probe: a name bound to `sys.modules` in the same file still fails."""
    red_repo(git_repo, extra={".evidence-gate.yml": _probe_config(probes={"allow": ["src/calc.py: sys._getframe"]})})
    bound = "import sys\n\n_frame = sys._getframe\n\n\ndef double(x):\n    _caller = _frame(0).f_code.co_name\n"
    git_repo.commit("bound helper", {"src/calc.py": bound + "    return x * 2\n"})
    receipt = judge(git_repo, tmp_path, run=False)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert {a["name"] for a in receipt["probes"]["allowed"]} == {"sys._getframe", "_frame (bound to a probe)"}
    git_repo.commit(
        "and another",
        {"src/calc.py": bound + "    _mods = sys.modules\n    return x * 2 if 'hypothesis' in _mods else x\n"},
    )
    receipt = judge(git_repo, tmp_path, run=False)
    names = {v["message"].split("`")[1] for v in receipt["violations"] if v["row"] == "harness-probed"}
    assert names and not names & {"sys._getframe", "_frame (bound to a probe)"}, receipt["violations"]


def test_allow_in_the_patch_is_ignored(git_repo: GitRepo, tmp_path: Path) -> None:
    """A patch that allows its own probe still fails: the allow list is read from the baseline only."""
    red_repo(git_repo)
    git_repo.commit(
        "self-allowed",
        {
            ".evidence-gate.yml": _probe_config(probes={"allow": ["src/calc.py: sys.modules"]}),
            "src/calc.py": "import sys\n\n\ndef double(x):\n    return x * 2 if 'hypothesis' in sys.modules else x\n",
        },
    )
    receipt = judge(git_repo, tmp_path, run=False)
    assert {"evidence-path-edited", "harness-probed"} <= set(rows(receipt)), receipt["violations"]


@pytest.mark.parametrize(
    ("name", "target"),
    [
        ("src/fast.so", ""),
        ("src/calc_link.py", "calc.py"),
        ("src/calcs", "."),  # a folder: a package
        ("src/README", "missing"),  # to nothing: the sealed run may have something there
        ("src/README", "/etc/hostname"),  # out of the repository
        ("src/README", "../src"),
    ],
)
def test_unreadable_code_under_test_is_a_probe(git_repo: GitRepo, tmp_path: Path, name: str, target: str) -> None:
    """A compiled module or a symlinked module under pythonpath cannot be scanned, so it counts."""
    red_repo(git_repo)
    if name.endswith(".so"):
        git_repo.commit("binary", {name: b"\x7fELF\x02\x01\x01"})
    else:
        (git_repo.path / name).symlink_to(target)
        git_repo.commit("link")
    receipt = judge(git_repo, tmp_path, run=False)
    probes = [(v["path"], v["row"]) for v in receipt["violations"] if v["row"] == "harness-probed"]
    assert probes == [(name, "harness-probed")]  # an absolute link is also evidence-path-edited


def test_a_symlink_to_a_file_that_no_import_can_name_is_not_a_probe(git_repo: GitRepo, tmp_path: Path) -> None:
    """pyrsistent fe39c81abc (pythonpath "."): `README` → `README.rst`; a name without `.py` that points at a file
    is never imported (a file is no package), so it is not unreadable code under test."""
    red_repo(git_repo)
    git_repo.commit("readme", {"src/README.rst": "Calc\n"})
    (git_repo.path / "src/README").symlink_to("README.rst")
    git_repo.commit("link")
    receipt = judge(git_repo, tmp_path, run=False)
    assert [v for v in receipt["violations"] if v["row"] == "harness-probed"] == []


def test_invalid_allow_entry_is_config_invalid(git_repo: GitRepo, tmp_path: Path) -> None:
    """An allow entry that is not `path: name` is config-invalid, not silently ignored."""
    red_repo(git_repo, extra={".evidence-gate.yml": _probe_config(probes={"allow": ["sys._getframe"]})})
    git_repo.commit("fix", {"src/calc.py": GREEN})
    receipt = judge(git_repo, tmp_path, run=False)
    assert receipt["decision"]["row"] == "config-invalid", receipt["violations"]


def test_test_named_module_imported_by_code_under_test_is_scanned(git_repo: GitRepo, tmp_path: Path) -> None:
    """Hiding the probe in `src/test_support.py` does not help once code under test imports it."""
    red_repo(git_repo)
    git_repo.commit(
        "support",
        {
            "src/calc.py": "from test_support import tested\n\n\ndef double(x):\n"
            "    return x * 2 if tested() or x < 1000 else x\n",
            "src/test_support.py": "import sys\n\n\ndef tested():\n    return 'hypothesis' in sys.modules\n",
        },
    )
    receipt = judge(git_repo, tmp_path, run=False)
    assert {(v["path"], v["line"]) for v in receipt["violations"]} == {("src/test_support.py", 5)}
    assert receipt["decision"]["row"] == "harness-probed"


LOG = "import sys\n\n\ndef caller():\n    return sys._getframe(1)\n"


def test_moving_a_probe_into_src_from_code_under_test_is_not_new(git_repo: GitRepo, tmp_path: Path) -> None:
    """A package moved into src/ (its old files deleted) keeps the probes it had when code under test imported it."""
    red_repo(git_repo, extra={"lib/log.py": LOG, "src/calc.py": "import lib.log\n" + RED_SOURCE})
    git_repo.commit("move", {"lib/log.py": None, "src/log.py": LOG, "src/calc.py": "import log\n" + RED_SOURCE})
    receipt = judge(git_repo, tmp_path, run=False)
    assert "harness-probed" not in rows(receipt), receipt["violations"]
    assert receipt["probes"]["scanned"] == ["src/calc.py", "src/log.py"]


def test_moving_a_probe_in_from_a_module_nothing_tested_imported_is_new(git_repo: GitRepo, tmp_path: Path) -> None:
    """The same move from a module that was not code under test (nothing under test imported it) is a new probe."""
    red_repo(git_repo, extra={"lib/log.py": LOG})
    git_repo.commit("move", {"lib/log.py": None, "src/log.py": LOG})
    receipt = judge(git_repo, tmp_path, run=False)
    assert [(v["path"], v["line"]) for v in receipt["violations"]] == [("src/log.py", 5)]


def test_probe_two_imports_away_from_code_under_test_is_found(git_repo: GitRepo, tmp_path: Path) -> None:
    """src/calc.py → tools/relay.py (unchanged) → tools/probe.py (changed): the backward search finds the chain."""
    calc = "import tools.relay\n\n\ndef double(x):\n    return x * 2 if x < 1000 else x\n"
    red_repo(
        git_repo,
        extra={
            "tools/__init__.py": "",
            "tools/relay.py": "from tools import probe\n",
            "tools/probe.py": "X = 1\n",
            "src/calc.py": calc,
        },
    )
    git_repo.commit("probe", {"tools/probe.py": "import gc\nX = len(gc.get_objects())\n"})
    receipt = judge(git_repo, tmp_path, run=False)
    assert [(v["path"], v["line"]) for v in receipt["violations"]] == [("tools/probe.py", 2)]
