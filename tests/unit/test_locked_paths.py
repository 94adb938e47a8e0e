"""Pure rules of the locked-evidence lane: globs, folding, hostile names, symlink targets, attributes, imports."""

from __future__ import annotations

import fnmatch
import posixpath
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate.lanes import import_scan, locked_paths
from evidence_gate.lanes.locked_evidence import LockedSet
from evidence_gate.lanes.locked_paths import AttrLine, fold, glob_matches

SEGMENT = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
REL_PATH = st.lists(SEGMENT, min_size=1, max_size=4).map("/".join)
HOSTILE = st.characters(categories=["Cc", "Cf", "Zl", "Zp"]) | st.sampled_from(
    sorted(chr(c) for c in locked_paths.INVISIBLE)
)


def _locked(paths: dict[str, str] | None = None, globs: tuple[str, ...] = ("fixtures/**",)) -> LockedSet:
    scan = import_scan.ImportScan(frozenset(), frozenset({("properties", "hypothesis"), ("", "alloc")}))
    paths = paths if paths is not None else {"SCORE_PROPERTIES": "the property list", "properties/test_p.py": "named"}
    return LockedSet(paths, globs, scan, frozenset(paths))


@given(
    st.lists(st.text(alphabet="ab*?", min_size=1, max_size=4), min_size=1, max_size=3),
    st.lists(st.text(alphabet="ab", min_size=1, max_size=4), min_size=1, max_size=3),
)
def test_single_star_never_crosses_a_folder(pattern_segs: list[str], path_segs: list[str]) -> None:
    """Without `**`, a glob matches exactly when it has as many segments and each matches like fnmatch."""
    segs = [re.sub(r"\*+", "*", s) for s in pattern_segs]
    pattern = "/".join(segs)
    expected = len(segs) == len(path_segs) and all(
        fnmatch.fnmatchcase(p, g) for g, p in zip(segs, path_segs, strict=False)
    )
    assert glob_matches(pattern, "/".join(path_segs)) is expected


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("fixtures/**", "fixtures/a.json", True),
        ("fixtures/**", "fixtures/deep/er/a.json", True),
        ("fixtures/**", "fixtures", True),
        ("fixtures/**", "fixtures_old/a.json", False),
        ("fixtures/", "fixtures/a.json", True),
        ("tools/*.sh", "tools/a.sh", True),
        ("tools/*.sh", "tools/sub/a.sh", False),
        ("**/*.snap", "a.snap", True),
        ("**/*.snap", "x/y/a.snap", True),
        ("a/**/b", "a/b", True),
        ("a/**/b", "a/x/y/b", True),
        ("a/**/b", "a/x/yb", False),
        ("data/?.csv", "data/1.csv", True),
        ("data/?.csv", "data/12.csv", False),
        ("data/[ab].csv", "data/b.csv", True),
        ("data/[!ab].csv", "data/b.csv", False),
        ("/rooted.txt", "rooted.txt", True),
        ("rooted.txt", "sub/rooted.txt", False),
    ],
)
def test_glob_semantics(pattern: str, path: str, expected: bool) -> None:
    """`**` crosses folders, `*` and `?` stay inside one segment, patterns are anchored at the root."""
    assert glob_matches(pattern, path) is expected


@pytest.mark.parametrize(
    ("pattern", "prefix", "folder"),
    [
        ("fixtures/**", "fixtures", "fixtures"),
        (".github/workflows/**", ".github/workflows", ".github/workflows"),
        ("**/*.snap", "", None),
        ("docs/*.md", "docs", None),
        ("a/*/b/**", "a", None),
    ],
)
def test_literal_prefix_and_folder(pattern: str, prefix: str, folder: str | None) -> None:
    """A glob's fixed folder is what the lane takes tree ids of and guards against replacement."""
    assert locked_paths.literal_prefix(pattern) == prefix
    assert locked_paths.locked_folder(pattern) == folder


@given(REL_PATH, st.lists(st.booleans(), min_size=8, max_size=8), st.booleans())
def test_every_case_variant_of_a_locked_path_is_caught(rest: str, upper: list[bool], trailing_dot: bool) -> None:
    """Any mix of letter case in `fixtures/` (and a Windows trailing dot) still lands on the locked glob."""
    folder = "".join(c.upper() if u else c for c, u in zip("fixtures", upper, strict=True))
    path = f"{folder}{'.' if trailing_dot else ''}/{rest}"
    assert _locked().classify(path) is not None


@given(st.lists(st.booleans(), min_size=16, max_size=16))
def test_every_case_variant_of_a_named_file_is_caught(upper: list[bool]) -> None:
    """Any case variant of SCORE_PROPERTIES collides with it on a case-insensitive checkout."""
    name = "".join(c.lower() if u else c for c, u in zip("SCORE_PROPERTIES", upper, strict=True))
    assert _locked().classify(name) is not None


@pytest.mark.parametrize(
    "path",
    [
        "\ufb01xtures/a.json",  # ligature fi, NFKC-equal
        "ｆｉｘｔｕｒｅｓ/a.json",  # full-width letters
        "FIXTURES/a.json",
        "fixtures./a.json",  # Windows drops the trailing dot
        "fix\u200dtures/a.json",  # zero-width joiner, ignored by HFS+
        "properties/Test_P.py",
        "Properties",  # a link or gitlink standing in for the folder
    ],
)
def test_look_alikes_are_locked(path: str) -> None:
    """NFKC, case folding, invisible joiners and trailing dots cannot make a locked path look new."""
    assert _locked().classify(path) is not None


@pytest.mark.parametrize(
    "path",
    [
        "properties/__pycache__/test_p.cpython-311.pyc",
        "__pycache__/alloc.cpython-312.pyc",
        "properties/__pycache__/hypothesis.cpython-311.pyc",
    ],
)
def test_compiled_copies_of_locked_modules_are_locked(path: str) -> None:
    """A committed .pyc (unchecked-hash pycs are loaded without looking at the source) is locked like its source."""
    assert "compiled copy" in (_locked().classify(path) or "")


@pytest.mark.parametrize(
    "path",
    [
        "src/alloc.py",
        "fixtures_old/a.json",
        "src/__pycache__/alloc.cpython-311.pyc",
        "docs/fixtures.md",
        "properties/other.py",
        "tests/test_x.py",
        "prop/test_p.py",
    ],
)
def test_ordinary_paths_are_not_locked(path: str) -> None:
    """Controls: paths that only resemble locked ones in part stay editable."""
    assert _locked().classify(path) is None


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("properties/hypothesis.py", "hypothesis"),
        ("properties/hypothesis/__init__.py", "hypothesis"),
        ("alloc.py", "alloc"),
        ("alloc.cpython-311-x86_64-linux-gnu.so", "alloc"),
        ("alloc.pyc", "alloc"),
    ],
)
def test_import_shadows(path: str, name: str) -> None:
    """A new module file that would be imported in place of a property's import is locked."""
    assert _locked().imports.shadowed(path) == name
    assert _locked().imports.shadowed("properties/hypothesis_notes.md") is None


@given(st.text(alphabet="ab/.", max_size=6), HOSTILE, st.text(alphabet="cd/", max_size=6))
def test_hostile_characters_are_found_and_escaped(before: str, bad: str, after: str) -> None:
    """Every control or format character is reported, and the display form contains none."""
    path = before + bad + after
    assert locked_paths.hostile_chars(path)
    shown = locked_paths.display_path(path)
    assert not any(locked_paths.is_hostile(c) for c in shown)
    assert shown.isprintable()


def test_invalid_utf8_is_hostile() -> None:
    """Bytes that are not UTF-8 (lone surrogates after surrogateescape) are named as bytes."""
    path = b"fixtures/\xffa.json".decode("utf-8", "surrogateescape")
    assert locked_paths.hostile_chars(path) == ["byte 0xFF that is not valid UTF-8"]
    assert locked_paths.display_path(path) == "fixtures/\\xffa.json"


@pytest.mark.parametrize(
    ("path", "alias"),
    [
        (".GIT/hooks/post-checkout", ".GIT"),
        ("sub/.git./config", ".git."),
        ("GIT~1/config", "GIT~1"),
        (".git\u200c/hooks/x", ".git\u200c"),
        ("docs/.github/x", None),
        ("docs/git/x", None),
    ],
)
def test_git_dir_aliases(path: str, alias: str | None) -> None:
    """Names a Windows or macOS checkout would treat as `.git` are recognised; `.github` is not one."""
    assert locked_paths.git_dir_alias(path) == alias


def test_plain_unicode_is_not_hostile() -> None:
    """Control: accented, combining and non-Latin names are ordinary."""
    assert locked_paths.hostile_chars("docs/café/cafe\u0301/日本/한국어.md") == []


def test_hangul_filler_is_invisible() -> None:
    """A default-ignorable letter (U+3164) is hostile even though its category is Lo."""
    assert locked_paths.hostile_chars("fixtures\u3164/a") == ["U+3164 HANGUL FILLER (invisible character)"]


@given(st.lists(st.sampled_from(["a", "b", "..", "."]), max_size=6), st.integers(0, 3))
def test_symlink_escape_is_conservative(target_segs: list[str], depth: int) -> None:
    """Whenever the normalised target climbs out of the repository, the lexical check says so too."""
    link = "/".join(["d"] * depth + ["link"])
    target = "/".join(target_segs)
    resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    if resolved == ".." or resolved.startswith("../"):
        assert locked_paths.symlink_escapes(link, target)


@pytest.mark.parametrize(
    ("link", "target", "escapes"),
    [
        ("docs/passwd", "../../etc/passwd", True),
        ("docs/x", "/etc/passwd", True),
        ("x", "C:\\windows", True),
        ("docs/x", "../src/alloc.py", False),
        ("a/b/c", "../../d", False),
        ("a/l", "b/../../..", True),
        ("docs/x", "../.git/hooks/pre-commit", True),
        ("docs/x", "../.GIT./config", True),
    ],
)
def test_symlink_escape_examples(link: str, target: str, escapes: bool) -> None:
    """Absolute targets and `..` above the root leave the repository; a sibling link does not."""
    assert locked_paths.symlink_escapes(link, target) is escapes


def test_parse_attributes_keeps_checkout_attributes_only() -> None:
    """Presentation-only attributes and comments are dropped; quoted patterns and macros are read."""
    data = (
        b"# comment\n*.md diff=markdown linguist-generated\nfixtures/* -text diff\n"
        b'"with space/*" eol=crlf\n[attr]bin -text -diff\n*.png !filter\n'
    )
    assert locked_paths.parse_attributes(data) == [
        AttrLine(3, "fixtures/*", ("-text",)),
        AttrLine(4, "with space/*", ("eol=crlf",)),
        AttrLine(5, "bin", ("-text",), macro=True),
        AttrLine(6, "*.png", ("!filter",)),
    ]


@pytest.mark.parametrize(
    ("attr_dir", "pattern", "path", "expected"),
    [
        ("", "*.json", "fixtures/deep/a.json", True),
        ("", "fixtures/*", "fixtures/a.json", True),
        ("", "fixtures/*", "fixtures/deep/a.json", False),
        ("", "/a.json", "fixtures/a.json", False),
        ("sub", "*", "fixtures/a.json", False),
        ("fixtures", "*", "fixtures/a.json", True),
        ("", "FIXTURES/**", "fixtures/a.json", True),
        ("", "!fixtures/*", "fixtures/a.json", False),
    ],
)
def test_attribute_pattern_scope(attr_dir: str, pattern: str, path: str, expected: bool) -> None:
    """gitignore rules: a pattern without `/` matches at any depth below its file's folder."""
    assert locked_paths.first_matching(attr_dir, pattern, [path]) == ([path] if expected else [])


def _reader(files: dict[str, str]) -> import_scan.Reader:
    def read(paths: list[str]) -> dict[str, bytes | None]:
        return {p: files[p].encode() if p in files else None for p in paths}

    return read


def test_import_scan_follows_helpers_but_not_pythonpath() -> None:
    """Helpers reached directly, relatively, through plugins or import_module are locked; src/ is not."""
    files = {
        "props/test_p.py": "import importlib\nfrom alloc import allocate\nfrom strategies import s\n"
        "def f():\n    importlib.import_module('late')\n",
        "props/strategies.py": "from .deep import d\n",
        "props/deep.py": "X = 1\n",
        "props/conftest.py": "pytest_plugins = ['plug']\n",
        "plug.py": "",
        "late.py": "",
        "src/alloc.py": "from alloc_util import x\n",
        "src/alloc_util.py": "",
    }
    start = {p: files[p].encode() for p in ("props/test_p.py", "props/conftest.py")}
    scan = import_scan.scan(_reader(files), start, ("src",))
    assert scan.files == {"props/strategies.py", "props/deep.py", "plug.py", "late.py"}
    assert scan.shadowed("alloc.py") == "alloc"
    assert scan.shadowed("src/alloc_util.py") is None
    assert scan.shadowed("props/importlib.py") == "importlib"


def test_import_scan_keeps_pythonpath_files_editable_from_any_root() -> None:
    """A helper importing `src.alloc` through the root does not lock code under test in src/."""
    files = {"p/test.py": "import helper\n", "helper.py": "from src.alloc import allocate\n", "src/alloc.py": ""}
    scan = import_scan.scan(_reader(files), {"p/test.py": files["p/test.py"].encode()}, ("src",))
    assert scan.files == {"helper.py"}


def test_import_scan_with_root_on_pythonpath_still_locks_property_helpers() -> None:
    """With pythonpath `.`, root modules are code under test but a helper beside the property stays locked."""
    files = {"p/test.py": "import strategies\nimport alloc\n", "p/strategies.py": "", "alloc.py": ""}
    scan = import_scan.scan(_reader(files), {"p/test.py": files["p/test.py"].encode()}, (".",))
    assert scan.files == {"p/strategies.py"}


def test_import_scan_reads_dot_folders_on_pythonpath() -> None:
    """A pythonpath entry such as `./.lib/` is the folder `.lib`, not `lib`."""
    files = {"p/test.py": "import alloc\nimport helper\n", ".lib/alloc.py": "", "lib/helper.py": ""}
    scan = import_scan.scan(_reader(files), {"p/test.py": files["p/test.py"].encode()}, ("./.lib/",))
    assert scan.files == frozenset()
    assert scan.shadowed("alloc.py") == "alloc" and scan.shadowed(".lib/alloc.py") is None


def test_import_scan_ignores_files_that_do_not_parse() -> None:
    """A property file with a syntax error adds nothing (the property run reports it)."""
    assert import_scan.scan(_reader({}), {"p/test.py": b"def (:\n"}, ("src",)).files == frozenset()


def test_fold_is_idempotent_on_examples() -> None:
    """Folding twice gives the same key (the look-alike table is stable)."""
    for path in ["Fixtures/A.JSON", "\ufb01xtures", "straße/ǅ", "fixtures. /x"]:
        assert fold(fold(path)) == fold(path)
