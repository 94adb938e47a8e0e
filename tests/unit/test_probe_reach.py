"""Code under test is what the sealed run can import from the locked files: every way a hostile patch could make an
unscanned file importable is still flagged, and the honest files outside the package are left alone."""

from __future__ import annotations

import pytest

from evidence_gate.config import CONFIG_PATH, Config, PropertiesConfig
from evidence_gate.git import Repo
from evidence_gate.lanes import harness_probes, locked_evidence
from evidence_gate.lanes.probe_reach import facts
from evidence_gate.lanes.score_properties import parse_properties
from support.repo_builder import GitRepo

PROPERTY = "from hypothesis import given, strategies as st\n\nfrom pkg.calc import double\n\n\n@given(st.integers())\n"
PROPERTY += "def test_double(x):\n    assert double(x) == x + x\n"
# A root-layout project (`pythonpath: ["."]`): the package, and the files around it that are not the package.
BASE: dict[str, str | bytes | None] = {
    CONFIG_PATH: '{"version": 1, "properties": {"pythonpath": ["."]}}',
    "SCORE_PROPERTIES": "tests/test_double.py::test_double\n",
    "tests/test_double.py": PROPERTY,
    "pkg/__init__.py": "",
    "pkg/calc.py": "def double(x):\n    return x * 2\n",
    "pkg/unused.py": "X = 1\n",
    "setup.py": "import sys\nARGS = sys.argv\n",
    "docs/conf.py": "import os\n",
    "scripts/tool.py": "def main():\n    return 0\n",
    "examples/demo.py": "from pkg.calc import double\n",
}
PROBE = "import sys\n\n\ndef peek():\n    return sys._getframe(1)\n"
LINK = "-> "
SO = b"\x7fELF\x02\x01\x01"
CALC_IMPORTS = "def double(x):\n    return x * 2\n\n\nimport {}\n"

# name → (baseline files beyond BASE, the patch's files, the files the lane must flag)
HOSTILE: dict[str, tuple[dict[str, str | bytes | None], dict[str, str | bytes | None], set[str]]] = {
    "package-imports-setup-with-a-probe-added": (
        {},
        {"pkg/calc.py": CALC_IMPORTS.format("setup"), "setup.py": PROBE},
        {"setup.py"},
    ),
    "package-imports-a-script": (
        {},
        {"pkg/calc.py": CALC_IMPORTS.format("scripts.tool"), "scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "unimported-module-of-the-package": ({}, {"pkg/unused.py": PROBE}, {"pkg/unused.py"}),
    "new-module-of-the-package": ({}, {"pkg/extra.py": PROBE}, {"pkg/extra.py"}),
    "sitecustomize": ({}, {"sitecustomize.py": PROBE}, {"sitecustomize.py"}),
    "pth-file": ({}, {"evil.pth": "import scripts.tool\n", "scripts/tool.py": PROBE}, {"scripts/tool.py"}),
    "shadow-a-third-party-import": (
        {"pkg/calc.py": CALC_IMPORTS.format("yaml")},
        {"yaml.py": PROBE},
        {"yaml.py"},
    ),
    "shadow-a-stdlib-import": ({"pkg/calc.py": CALC_IMPORTS.format("typing")}, {"typing.py": PROBE}, {"typing.py"}),
    "new-top-level-module-nothing-imports": ({}, {"ujson.py": PROBE}, {"ujson.py"}),
    "computed-import-in-unchanged-code": (
        {"pkg/calc.py": "import importlib\n\n\ndef double(x):\n    return importlib.import_module(x)\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "computed-import-below-a-literal-prefix": (
        {
            "pkg/calc.py": "from importlib import import_module\n\n\ndef load(n):\n    return import_module(f'plug.{n}')\n"
        },
        {"plug/a.py": PROBE},
        {"plug/a.py"},
    ),
    "exec-in-unchanged-code": (
        {"pkg/calc.py": "def double(x, code=''):\n    exec(code)\n    return x * 2\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "sys-path-in-unchanged-code": (
        {"pkg/calc.py": "import sys\n\nsys.path.insert(0, 'scripts')\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "package-path-extended": (
        {"pkg/__init__.py": "__path__.append('scripts')\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "conftest-plugin": (
        {"conftest.py": "pytest_plugins = ['helpers.plug']\n", "helpers/plug.py": "X = 1\n"},
        {"helpers/plug.py": PROBE},
        {"helpers/plug.py"},
    ),
    "conftest-computed-plugin": (
        {"conftest.py": "import os\n\npytest_plugins = [os.environ.get('P', 'x')]\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "pickled-object-renamed-to-a-script": (
        {"tests/test_double.py": PROPERTY + "\n\nimport pickle\n\nY = pickle.loads(pickle.dumps(double))\n"},
        {
            "pkg/calc.py": "def double(x):\n    return x * 2\n\n\ndouble.__module__ = 'scripts.tool'\n",
            "scripts/tool.py": PROBE,
        },
        {"scripts/tool.py"},
    ),
    "pickled-object-given-a-computed-module": (
        {"tests/test_double.py": PROPERTY + "\n\nimport pickle\n\nY = pickle.loads(pickle.dumps(double))\n"},
        {
            "pkg/calc.py": "import os\n\n\ndef double(x):\n    return x * 2\n\n\ndouble.__module__ = os.sep\n",
            "scripts/tool.py": PROBE,
        },
        {"scripts/tool.py"},
    ),
    "unpickling-data-the-package-made": (
        {"tests/test_double.py": PROPERTY + "\n\nimport pickle\n\nY = pickle.loads(double(b''))\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "monkeypatch-target-in-a-locked-test": (
        {
            "tests/test_double.py": PROPERTY
            + "\n\ndef test_m(monkeypatch):\n    monkeypatch.setattr('scripts.tool.main', 1)\n"
        },
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "mock-patch-of-a-computed-name": (
        {"tests/test_double.py": PROPERTY + "\n\nfrom unittest import mock\n\nP = mock.patch(str(1))\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "pkg-resources-entry-points": (
        {"pkg/__init__.py": "import pkg_resources\n\nE = pkg_resources.iter_entry_points('x')\n"},
        {"scripts/tool.py": PROBE},
        {"scripts/tool.py"},
    ),
    "compiled-module-in-the-package": (
        {},
        {"pkg/_speed.cpython-312-x86_64-linux-gnu.so": SO},
        {"pkg/_speed.cpython-312-x86_64-linux-gnu.so"},
    ),
    "symlinked-folder-in-the-package": ({"lib/x.py": "X = 1\n"}, {"pkg/vendor": LINK + "../lib"}, {"pkg/vendor"}),
    "symlinked-folder-an-import-looks-in": (
        {"pkg/calc.py": CALC_IMPORTS.format("docs.static.x"), "lib/x.py": "X = 1\n"},
        {"docs/static": LINK + "../lib"},
        {"docs/static"},
    ),
    "unparsable-reached-file": ({"pkg/unused.py": "print 'x'\n"}, {"scripts/tool.py": PROBE}, {"scripts/tool.py"}),
}
# name → (baseline files beyond BASE, the patch's files): honest edits outside what the run can import.
HONEST: dict[str, tuple[dict[str, str | bytes | None], dict[str, str | bytes | None]]] = {
    "setup-reads-argv": ({}, {"setup.py": "import sys\nARGS = sys.argv\nPY = 'pytest'\n"}),
    "docs-conf-extends-sys-path": ({}, {"docs/conf.py": "import os\nimport sys\n\nsys.path.insert(0, '..')\n"}),
    "script-walks-frames": ({}, {"scripts/tool.py": PROBE}),
    "example-uses-argv": ({}, {"examples/demo.py": "import sys\n\nprint(sys.argv)\n"}),
    "docs-static-folder-symlinked": ({"lib/x.py": "X = 1\n"}, {"docs/_static": LINK + "../lib"}),
    "compiled-module-of-a-benchmark": ({"bench/__init__.py": ""}, {"bench/_fast.cpython-312-x86_64-linux-gnu.so": SO}),
    "benchmark-in-an-existing-folder": (
        {"bench/__init__.py": ""},
        {"bench/run.py": "import timeit\n\nT = timeit.timeit('1')\n"},
    ),
    "literal-import-module-in-the-package": (
        {"pkg/calc.py": "import importlib\n\nM = importlib.import_module('pkg.unused')\n"},
        {"scripts/tool.py": PROBE},
    ),
    "computed-import-below-a-literal-prefix": (
        {
            "pkg/calc.py": "from importlib import import_module\n\n\ndef load(n):\n    return import_module(f'plug.{n}')\n"
        },
        {"scripts/tool.py": PROBE},
    ),
    "pickle-round-trip-in-a-locked-test": (
        {"tests/test_double.py": PROPERTY + "\n\nimport pickle\n\nB = pickle.dumps(double)\nY = pickle.loads(B)\n"},
        {"scripts/tool.py": PROBE},
    ),
    "package-version-from-pkg-resources": (
        {"pkg/__init__.py": "import pkg_resources\n\nV = pkg_resources.get_distribution('pkg').version\n"},
        {"scripts/tool.py": PROBE},
    ),
    "mock-patch-of-a-literal-target": (
        {"tests/test_double.py": PROPERTY + "\n\nfrom unittest import mock\n\nP = mock.patch('pkg.calc.double')\n"},
        {"scripts/tool.py": PROBE},
    ),
}


def _commit(repo: GitRepo, message: str, files: dict[str, str | bytes | None]) -> str:
    """Commit `files`; a value `-> TARGET` is a symlink to TARGET."""
    repo.write({p: v for p, v in files.items() if not (isinstance(v, str) and v.startswith(LINK))})
    for path, value in files.items():
        if isinstance(value, str) and value.startswith(LINK):
            (repo.path / path).parent.mkdir(parents=True, exist_ok=True)
            (repo.path / path).symlink_to(value.removeprefix(LINK))
    return repo.commit(message)


def _judge(
    repo: GitRepo, base: dict[str, str | bytes | None], patch: dict[str, str | bytes | None], lock: bool = True
) -> tuple[set[str], str]:
    """The lane's flagged paths, and its rule for code under test, with the locked set the gate would build."""
    baseline = _commit(repo, "baseline", {**BASE, **base})
    head = _commit(repo, "patch", patch)
    git = Repo(repo.path)
    config = Config(properties=PropertiesConfig(pythonpath=(".",)))
    specs = parse_properties(b"tests/test_double.py::test_double\n")
    locked = locked_evidence.locked_set(git, baseline, config, specs).existing if lock else frozenset()
    lane = harness_probes.check(git, baseline, head, config, git.diff_tree(baseline, head), locked)
    return {v.path for v in lane.violations if v.path}, str(lane.receipt["code_under_test"])


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_file_made_importable_is_still_flagged(case: str, git_repo: GitRepo) -> None:
    base, patch, expected = HOSTILE[case]
    flagged, _rule = _judge(git_repo, base, patch)
    assert flagged == expected, case


@pytest.mark.parametrize("case", sorted(HONEST))
def test_a_file_the_run_cannot_import_is_not_code_under_test(case: str, git_repo: GitRepo) -> None:
    base, patch = HONEST[case]
    flagged, rule = _judge(git_repo, base, patch)
    assert (flagged, rule) == (set(), "what the locked files can import"), case


@pytest.mark.parametrize("case", sorted(HONEST))
def test_with_nothing_locked_every_file_below_pythonpath_counts(case: str, git_repo: GitRepo) -> None:
    """Fail closed: no property file to start from keeps the rule by place (the honest edits are flagged then)."""
    base, patch = HONEST[case]
    flagged, rule = _judge(git_repo, base, patch, lock=False)
    assert rule.startswith("every file below pythonpath (nothing is locked"), rule
    assert flagged == set(patch), flagged


def test_an_old_probe_in_a_file_the_patch_first_imports_stays_old(git_repo: GitRepo) -> None:
    """A limit (docs/limits.md): the reach only acquits what the rule by place flags, and below pythonpath `.` an
    unchanged `setup.py` was code under test by place on the baseline too, so its `sys.argv` is old even when the
    patch is the first to import it. A `src/` layout, or `setup.py` outside `pythonpath`, makes it new."""
    flagged, rule = _judge(git_repo, {}, {"pkg/calc.py": CALC_IMPORTS.format("setup")})
    assert (flagged, rule) == (set(), harness_probes.NOTHING_FOUND)


def test_facts_bound_a_computed_import_by_its_literal_prefix() -> None:
    found = facts(b"import importlib\nM = importlib.import_module(f'pkg.backends.{NAME}')\n", "pkg/x.py")
    assert (found.tops, found.unbounded) == (frozenset({"pkg"}), "")
    assert "computed name" in facts(b"import importlib\nM = importlib.import_module(NAME)\n", "x.py").unbounded


def test_receipt_names_the_rule_and_why(git_repo: GitRepo) -> None:
    _flagged, rule = _judge(git_repo, HOSTILE["exec-in-unchanged-code"][0], {"scripts/tool.py": PROBE})
    assert (
        rule
        == "every file below pythonpath (on the head: pkg/calc.py may import what the scan cannot name: `exec` (line 2))"
    )
