"""`properties.install`: a sealed install step into a site folder that the workers append to `sys.path` last."""

from __future__ import annotations

import base64
import hashlib
import io
import time
import zipfile
from pathlib import Path
from typing import Any

import pytest

from support.property_repo import GREEN, judge, red_repo
from support.repo_builder import GitRepo

# The property needs `dep`, which lives only in vendor/ (not a package, not on pythonpath): only the install finds it.
DEP_PROPERTY = """\
from hypothesis import given, strategies as st

from calc import double
from dep import factor


@given(st.integers(-10**6, 10**6))
def test_double(x):
    assert double(x) == factor() * x
"""
DEP = "def factor():\n    return 2\n"
COPY_DEP = 'cp vendor/dep.py "$EVIDENCE_GATE_SITE"/'
# What an install could drop next to `dep` to take over the run, were the site folder processed or put first. The
# script writes them itself: the sealed tree leaves such names out of the repository's own files.
SHADOWS = """\
set -e
cd "$EVIDENCE_GATE_SITE"
mkdir hypothesis
echo "raise SystemExit('the site folder shadowed hypothesis')" > hypothesis/__init__.py
echo "raise SystemExit('the site folder shadowed pytest')" > pytest.py
echo "raise SystemExit('the site folder shadowed the standard library')" > fractions.py
echo "import os; os._exit(7)" > zz_evil.pth
"""
COPY_SHADOWS = COPY_DEP + " && sh vendor/shadows.sh"


def dep_repo(
    repo: GitRepo, tmp: Path, install: str, extra: dict[str, str | bytes | None] | None = None, **properties: Any
) -> dict[str, Any]:
    """A baseline whose property imports `dep`, a green patch, judged with `install`; returns the receipt."""
    files: dict[str, str | bytes | None] = {"properties/test_double.py": DEP_PROPERTY, "vendor/dep.py": DEP}
    files.update(extra or {})
    red_repo(repo, files, install=install, fresh_seeds=0, **properties)
    repo.commit("honest", {"src/calc.py": GREEN})
    return judge(repo, tmp)


def install_runs(receipt: dict[str, Any]) -> list[dict[str, Any]]:
    """The receipt's record of the install step."""
    return list(receipt["sealed"]["install"]["runs"])


def test_installed_dependency_is_importable(git_repo: GitRepo, tmp_path: Path) -> None:
    """A dependency the install copies into the site folder is importable by the property, and the receipt says so."""
    receipt = dep_repo(git_repo, tmp_path, COPY_DEP)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert receipt["sealed"]["install"]["command"] == COPY_DEP
    # The baseline tree is built too (the steering comparison runs the same seeds there), so it is installed too.
    assert [r["tree"] for r in install_runs(receipt)] == ["base", "head"]
    run = install_runs(receipt)[-1]
    assert run["exit_code"] == 0
    assert run["timed_out"] is False
    assert run["files"] == 1
    assert run["seconds"] >= 0


def test_without_install_the_dependency_is_missing(git_repo: GitRepo, tmp_path: Path) -> None:
    """Control: the same repository with no install cannot import `dep`, so the pass above is the install's doing."""
    receipt = dep_repo(git_repo, tmp_path, "")
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "install" not in receipt["sealed"]


def test_failing_install_is_run_integrity_with_exit_code_and_output(git_repo: GitRepo, tmp_path: Path) -> None:
    """A non-zero install exit stops the run: run-integrity naming the code and the end of the output, escaped."""
    receipt = dep_repo(git_repo, tmp_path, "echo 'no such requirement \x1b[31mred'; exit 3")
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    message = receipt["violations"][0]["message"]
    assert "properties.install exited with code 3" in message
    assert "no such requirement \\x1b[31mred" in message
    assert "\x1b" not in message
    assert "EVIDENCE_GATE_SITE" in message  # the fix says how to reproduce it
    assert install_runs(receipt)[0]["exit_code"] == 3
    assert receipt["properties"].get("ledgers", []) == []


def test_install_output_in_the_message_is_bounded(git_repo: GitRepo, tmp_path: Path) -> None:
    """A failing install that prints a lot contributes only a bounded tail to the message."""
    receipt = dep_repo(git_repo, tmp_path, "yes aaaaaaaaaaaaaaaa | head -c 200000; echo END; exit 1")
    message = receipt["violations"][0]["message"]
    assert "END" in message
    assert len(message) < 1200


def test_install_timeout_is_run_integrity_without_hanging(git_repo: GitRepo, tmp_path: Path) -> None:
    """An install that outlives `timeout_s` is killed with its process group and reported as run-integrity."""
    started = time.monotonic()
    receipt = dep_repo(git_repo, tmp_path, "sleep 600 & sleep 600", timeout_s=3)
    assert time.monotonic() - started < 60
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert "timed out after 3s" in receipt["violations"][0]["message"]
    assert install_runs(receipt)[0]["timed_out"] is True


def test_site_folder_cannot_shadow_the_gate_pytest_hypothesis_or_stdlib(git_repo: GitRepo, tmp_path: Path) -> None:
    """Packages named like Hypothesis, pytest or a stdlib module, and a `.pth` file, in the site folder do nothing."""
    receipt = dep_repo(git_repo, tmp_path, COPY_SHADOWS, {"vendor/shadows.sh": SHADOWS})
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert install_runs(receipt)[0]["files"] == 5


def test_install_writes_only_to_the_site_folder(git_repo: GitRepo, tmp_path: Path) -> None:
    """The install runs confined like a worker: writing into the sealed tree fails, and that fails the install."""
    receipt = dep_repo(git_repo, tmp_path, "echo x > src/calc.py")
    assert receipt["decision"]["row"] == "run-integrity", receipt["violations"]
    assert install_runs(receipt)[0]["exit_code"] not in (0, None)


@pytest.mark.parametrize("variable", ["GITHUB_TOKEN", "INPUT_SECRET"])
def test_install_environment_is_the_allow_list(
    git_repo: GitRepo, tmp_path: Path, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install sees the sealed allow-list plus its two variables, never the gate's secrets."""
    monkeypatch.setenv(variable, "s3cret")
    receipt = dep_repo(git_repo, tmp_path, f'test -z "${variable}" && test -x "$EVIDENCE_GATE_PYTHON" && ' + COPY_DEP)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]


COUNTEREXAMPLE = """\
from dep import factor


def test_broken_factor():
    assert factor() == 3
"""


def test_baseline_tree_gets_its_own_install_before_its_replays(git_repo: GitRepo, tmp_path: Path) -> None:
    """A counterexample on the baseline tree that needs `dep` runs after a separate install into the baseline's site."""
    extra: dict[str, str | bytes | None] = {
        "SCORE_PROPERTIES": "properties/test_double.py::test_double "
        "counterexample=properties/counterexamples.py::test_broken_factor\n",
        "properties/counterexamples.py": COUNTEREXAMPLE,
    }
    receipt = dep_repo(git_repo, tmp_path, COPY_DEP, extra)
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert [(r["tree"], r["exit_code"], r["files"]) for r in install_runs(receipt)] == [("base", 0, 1), ("head", 0, 1)]


def wheel(module: str, source: str) -> bytes:
    """A minimal pure-Python wheel holding one module, built in memory (no network, no build backend)."""
    info = f"{module}-1.0.dist-info"
    files = {
        f"{module}.py": source.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {module}\nVersion: 1.0\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{name},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()}"
            f",{len(data)}\n"
            for name, data in files.items()
        )
        + f"{info}/RECORD,,\n"
    )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in {**files, f"{info}/RECORD": record.encode()}.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_pip_install_target_works_sealed(git_repo: GitRepo, tmp_path: Path) -> None:
    """The README's pip form (`--target "$EVIDENCE_GATE_SITE"`) works as the sandbox user, offline, from a wheel."""
    command = (
        '"$EVIDENCE_GATE_PYTHON" -m pip install --no-index --disable-pip-version-check --target '
        '"$EVIDENCE_GATE_SITE" vendor/dep-1.0-py3-none-any.whl'
    )
    receipt = dep_repo(
        git_repo, tmp_path, command, {"vendor/dep.py": None, "vendor/dep-1.0-py3-none-any.whl": wheel("dep", DEP)}
    )
    assert receipt["decision"]["row"] == "pass", receipt["violations"]
    assert install_runs(receipt)[0]["files"] >= 4  # dep.py and the dist-info's files
