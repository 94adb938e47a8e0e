"""A real Hypothesis-tested project from PyPI, pinned by version and sha256, as a git repository to gate.

The sdist (attrs, see `ATTRS`; natsort, see `NATSORT`, the second suite the benchmarks can run, so that no figure
rests on one project) is downloaded once with the host's pip (`pip download --no-deps --no-binary :all:`), its
sha256 checked against the pin, and kept under `~/.cache/evidence-gate/sdists/`. Nothing here skips: a download
that fails or a hash that differs raises `ProjectUnavailable` with the fix, so CI fails loudly.

The repository is the sdist's tree as its baseline commit, plus the gate's configuration naming some of the
project's own test files as whole-file entries. Pull requests are branches merged like `refs/pull/N/merge`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from support.container_engine import cache_dir, locked
from support.repo_builder import GitRepo


@dataclass(frozen=True)
class Sdist:
    """A source distribution on PyPI, pinned by version and the sha256 of its file."""

    name: str
    version: str
    sha256: str

    @property
    def filename(self) -> str:
        """The file name PyPI serves it under."""
        return f"{self.name}-{self.version}.tar.gz"


# attrs ships its tests in the sdist: Hypothesis strategies (tests/strategies.py), a conftest with parametrized
# fixtures (`slots`, `frozen`), session fixtures, parametrize and test classes. It is also a dependency of the
# gate's own environment (through jsonschema), which is exactly what a sealed run must not confuse with the PR's.
ATTRS = Sdist("attrs", "26.1.0", "d03ceb89cb322a8fd706d4fb91940737b6642aa36998fe130a9bc96c985eff32")
# Test files that need only pytest and Hypothesis, run on every supported Python (no version skips), and
# exercise `@given` in classes, conftest fixtures with params, a session fixture and parametrize.
ENTRIES = ("tests/test_funcs.py", "tests/test_dunders.py")

# The pull requests, as text replacements (`path: (old, new)`, each old text found exactly once).
FUNCS = "src/attr/_funcs.py"
# A refactor with no change in behaviour: the field list is no longer bound to a local name.
HONEST = {
    FUNCS: (
        "    attrs = fields(inst.__class__)\n    rv = dict_factory()\n    for a in attrs:\n",
        "    rv = dict_factory()\n    for a in fields(inst.__class__):\n",
    )
}
# asdict stops turning tuples and sets into lists (retain_collection_types=False is ignored).
BUG = {FUNCS: ("cf = value_type if retain_collection_types is True else list", "cf = value_type")}
BROKEN_IMPORT = {
    "src/attr/__init__.py": (
        "from . import converters, exceptions",
        "raise ImportError('attr is broken by this PR')\nfrom . import converters, exceptions",
    )
}
# The cheapest way to green: one example per test, set in the locked conftest's own profile, plus the bug.
TAMPER = {
    **BUG,
    "tests/conftest.py": (
        "deadline=timedelta(milliseconds=400),",
        "deadline=timedelta(milliseconds=400), max_examples=1,",
    ),
}


# natsort ships its tests in the sdist too: a flat layout (the package `natsort/` at the top, so the code under test
# is on `pythonpath: ["."]`), no runtime dependencies (fastnumbers and PyICU are optional and absent here), and many
# small `@given` properties over text, bytes, floats and lists. These files need neither pytest-mock nor a locale
# other than C (the conftest's `with_locale_en_us` fails without en_US.UTF-8): 75 tests, 20 of them properties.
NATSORT = Sdist("natsort", "8.4.0", "45312c4a0e5507593da193dedd04abb1469253b601ecaf63445ad80f0a1ea581")
NATSORT_ENTRIES = (
    "tests/test_fake_fastnumbers.py",
    "tests/test_natsort_key.py",
    "tests/test_parse_bytes_function.py",
    "tests/test_utils.py",
)
NATSORT_UTILS = "natsort/utils.py"
# A refactor with no change in behaviour: sep_inserter's loop keeps one previous element instead of a pair.
NATSORT_HONEST = {
    NATSORT_UTILS: (
        "        for x in iterator:\n"
        "            first, second = second, x\n"
        "            if type(first) in types and type(second) in types:\n"
        "                yield sep\n"
        "            yield second\n",
        "        for x in iterator:\n"
        "            if type(second) in types and type(x) in types:\n"
        "                yield sep\n"
        "            yield x\n"
        "            second = x\n",
    )
}
# sep_inserter's loop puts a separator before every number after the second element, not only between two
# numbers: the examples (at most two elements) still pass, the property over lists of three or more does not.
NATSORT_BUG = {
    NATSORT_UTILS: (
        "            first, second = second, x\n            if type(first) in types and type(second) in types:\n",
        "            first, second = second, x\n            if type(second) in types:\n",
    )
}


@dataclass(frozen=True)
class Suite:
    """A pinned project with what the benchmarks need to gate it: the test files, where its code is, two PRs."""

    sdist: Sdist
    entries: tuple[str, ...]
    pythonpath: tuple[str, ...]
    honest: dict[str, tuple[str, str]]
    bug: dict[str, tuple[str, str]]


SUITES = {
    "attrs": Suite(ATTRS, ENTRIES, ("src",), HONEST, BUG),
    "natsort": Suite(NATSORT, NATSORT_ENTRIES, (".",), NATSORT_HONEST, NATSORT_BUG),
}


class ProjectUnavailable(RuntimeError):
    """The pinned sdist could not be had: no download, or a file whose hash is not the pinned one."""


def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cached_sdist(sdist: Sdist = ATTRS) -> Path:
    """The pinned sdist in the cache, downloaded and hash-checked on first use."""
    folder = cache_dir() / "sdists"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / sdist.filename
    with locked(f"sdist-{sdist.name}"):
        if target.is_file():
            if file_sha256(target) == sdist.sha256:
                return target
            target.unlink()  # a corrupt or foreign copy is never used, and never left for the next run
        with tempfile.TemporaryDirectory(prefix="evidence-gate-sdist-") as tmp:
            got = _download(sdist, Path(tmp))
            actual = file_sha256(got)
            if actual != sdist.sha256:
                raise ProjectUnavailable(
                    f"{sdist.filename} downloaded from the package index has sha256 {actual}, not the pinned "
                    f"{sdist.sha256}; the index (or a proxy) serves a different file: check the index URL in "
                    "`pip config list`, or update the pin in tests/support/real_project.py after verifying the file on PyPI"
                )
            partial = target.with_suffix(".partial")
            shutil.copyfile(got, partial)
            partial.replace(target)
    return target


def _download(sdist: Sdist, dest: Path) -> Path:
    """`pip download` of exactly the pinned sdist, the hash enforced by pip as well."""
    requirement = dest / "requirement.txt"
    requirement.write_text(f"{sdist.name}=={sdist.version} --hash=sha256:{sdist.sha256}\n", encoding="utf-8")
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--no-binary",
        ":all:",
        "--require-hashes",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest / "out"),
        "-r",
        str(requirement),
    ]
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=600, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProjectUnavailable(f"`pip download {sdist.name}=={sdist.version}` could not run: {exc}") from exc
    files = sorted((dest / "out").glob(f"{sdist.name}-*.tar.gz")) if (dest / "out").is_dir() else []
    if proc.returncode != 0 or not files:
        tail = (proc.stdout + proc.stderr).decode(errors="replace")[-2000:]
        raise ProjectUnavailable(
            f"`pip download --no-deps --no-binary :all: {sdist.name}=={sdist.version}` failed (exit "
            f"{proc.returncode}); the real-project tests need it once, then use the copy in "
            f"{cache_dir() / 'sdists'}. Give this machine access to the package index (or put the file there "
            f"by hand, sha256 {sdist.sha256}). pip said:\n{tail}"
        )
    return files[0]


def unpack(tarball: Path, dest: Path) -> Path:
    """Extract the sdist's single top folder into `dest`, refusing links and paths that leave it."""
    with tarfile.open(tarball, "r:gz") as archive:
        members = archive.getmembers()
        for member in members:
            parts = PurePosixPath(member.name).parts
            if member.name.startswith("/") or ".." in parts or not (member.isfile() or member.isdir()):
                raise ProjectUnavailable(f"{tarball.name}: unexpected member {member.name!r}")
        # The "data" filter (Python 3.11.4+) also refuses special files and strips modes; the check above suffices
        # where it is missing.
        safe: dict[str, str] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(dest, members=members, **safe)
    (top,) = [p for p in dest.iterdir() if p.is_dir()]
    return top


@dataclass(frozen=True)
class RealProject:
    """The project's repository: `main` is the sdist plus the gate's configuration."""

    repo: GitRepo
    baseline: str
    sdist: Sdist


def config(
    seeds: list[int], trials: int, fresh_seeds: int = 1, jobs: int = 2, pythonpath: tuple[str, ...] = ("src",)
) -> str:
    """The gate's configuration: a small plan over the project's own tests, code under test in `pythonpath`."""
    props = {
        "seeds": seeds,
        "fresh_seeds": fresh_seeds,
        "trials": trials,
        "jobs": jobs,
        "pythonpath": list(pythonpath),
        "timeout_s": 300,
    }
    return json.dumps({"version": 1, "properties": props}, indent=2) + "\n"


def build(
    path: Path,
    *,
    seeds: list[int],
    trials: int,
    fresh_seeds: int = 1,
    jobs: int = 2,
    entries: tuple[str, ...] = ENTRIES,
    sdist: Sdist = ATTRS,
    pythonpath: tuple[str, ...] = ("src",),
) -> RealProject:
    """A git repository of the pinned sdist with the gate configured on `entries`; HEAD on `main`."""
    with tempfile.TemporaryDirectory(prefix="evidence-gate-unpack-") as tmp:
        top = unpack(cached_sdist(sdist), Path(tmp))
        shutil.copytree(top, path, symlinks=True)
    repo = GitRepo(path)
    listing = "".join(f"{entry}\n" for entry in entries)
    baseline = repo.commit(
        f"{sdist.name} {sdist.version} from its PyPI sdist (sha256 {sdist.sha256[:12]})",
        {
            ".evidence-gate.yml": config(seeds, trials, fresh_seeds, jobs, pythonpath),
            "SCORE_PROPERTIES": listing,
        },
    )
    return RealProject(repo, baseline, sdist)


def pull_request(
    project: RealProject,
    branch: str,
    edit: dict[str, tuple[str, str]] | None = None,
    files: dict[str, str | bytes | None] | None = None,
) -> str:
    """A PR branch off the baseline that replaces text (`path: (old, new)`, each old exactly once) and writes
    `files`, merged into `main` like `refs/pull/N/merge`; returns the merge commit (HEAD is left detached on it)."""
    repo = project.repo
    repo.git("checkout", "-q", "-B", branch, project.baseline)
    changes: dict[str, str | bytes | None] = dict(files or {})
    for rel, (old, new) in (edit or {}).items():
        text = (repo.path / rel).read_text(encoding="utf-8")
        if text.count(old) != 1:
            raise AssertionError(f"{rel}: the text to replace occurs {text.count(old)} times, not once: {old!r}")
        changes[rel] = text.replace(old, new)
    repo.commit(f"PR {branch}", changes)
    return repo.merge_ref("main", branch)


def env_without_git() -> dict[str, str]:
    """The caller's environment without GIT_* variables (a pinned identity would hide the repository's)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
