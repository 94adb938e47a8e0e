"""Patch coverage: which of the pull request's changed lines of code under test the locked properties executed.

The changed lines are the head's lines the patch added or modified (`git diff -U0`) in Python files under
`properties.pythonpath` that are not locked evidence; of those, the lines of code are the ones the compiled file's
code objects name in their line tables (`co_lines`), as coverage.py counts them, less docstrings. The sealed run's
line recorder (`sealed/line_recorder.py`) reports which of them ran in the head's property workers; the receipt's
`patch_coverage` section records both, and `properties.min_patch_coverage` turns too little into
`patch-not-covered`.
"""

from __future__ import annotations

import ast
import base64
import posixpath
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evidence_gate.config import CONFIG_PATH, Config
from evidence_gate.git import Repo
from evidence_gate.model import Violation
from evidence_gate.receipt.types import CoveredFileJson, PatchCoverageJson
from evidence_gate.row_ids import PATCH_NOT_COVERED

ROW = PATCH_NOT_COVERED
REGULAR = ("100644", "100755")
MAX_FILE_BYTES = 2 * 1024 * 1024  # a bigger "source" file is not compiled (nor counted)
MAX_RANGES_SHOWN = 8


@dataclass(frozen=True)
class ChangedFile:
    """One changed file of code under test: its head text and its changed lines of code."""

    path: str
    source: bytes
    lines: tuple[int, ...]


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _docstring_lines(tree: ast.Module) -> set[int]:
    """The lines of every module, class and function docstring."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return out


def code_lines(source: bytes, filename: str) -> set[int] | None:
    """The lines of code of a Python file (its code objects' line tables, docstrings left out), or None when it does
    not compile (then it cannot run either)."""
    if len(source) > MAX_FILE_BYTES:
        return None
    try:
        module = compile(source, filename, "exec", dont_inherit=True)
        tree = ast.parse(source, filename)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    lines = {line for code in _codes(module) for _, _, line in code.co_lines() if line is not None and line > 0}
    return lines - _docstring_lines(tree)


def _under(path: str, folders: Iterable[str]) -> bool:
    for folder in folders:
        prefix = posixpath.normpath(folder).strip("/")
        if prefix in {"", "."} or path.startswith(prefix + "/"):
            return True
    return False


def _locked(path: str, locked: frozenset[str]) -> bool:
    return path in locked or any(entry.endswith("/") and path.startswith(entry) for entry in locked)


def changed_code(repo: Repo, baseline: str, head: str, config: Config, locked: frozenset[str]) -> list[ChangedFile]:
    """Every changed file of code under test with its changed lines of code (files with none left out)."""
    paths = [
        e.path
        for e in repo.diff_tree(baseline, head)
        if e.status in {"A", "M", "T"}
        and e.new_mode in REGULAR
        and e.path.endswith(".py")
        and _under(e.path, config.properties.pythonpath)
        and not _locked(e.path, locked)
    ]
    if not paths:
        return []
    changed = repo.changed_lines(baseline, head, paths)
    blobs = repo.read_blobs(f"{head}:{p}" for p in paths)
    out = []
    for path in sorted(paths):
        source = blobs.get(f"{head}:{path}")
        code = code_lines(source, path) if source is not None else None
        lines = sorted(changed.get(path, set()) & (code or set()))
        if source is not None and lines:
            out.append(ChangedFile(path, source, tuple(lines)))
    return out


def job_field(files: list[ChangedFile], tree: str) -> dict[str, dict[str, Any]]:
    """The worker job's `record_lines`: absolute path in the sealed tree -> relative path, head text, lines."""
    return {
        posixpath.join(tree, f.path): {
            "path": f.path,
            "source": base64.b64encode(f.source).decode("ascii"),
            "lines": list(f.lines),
        }
        for f in files
    }


def ranges(lines: Iterable[int]) -> list[tuple[int, int]]:
    """Consecutive runs of line numbers, as (first, last)."""
    out: list[tuple[int, int]] = []
    for n in sorted(set(lines)):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        else:
            out.append((n, n))
    return out


def range_text(path: str, first: int, last: int) -> str:
    """`src/x.py:40-41` (or `src/x.py:40`)."""
    return f"{path}:{first}" if first == last else f"{path}:{first}-{last}"


def section(files: list[ChangedFile], executed: dict[str, set[int]], minimum: float | None) -> PatchCoverageJson:
    """The receipt's `patch_coverage`: per file the changed lines of code and which ran, the totals and the share."""
    rows: list[CoveredFileJson] = []
    for f in files:
        ran = sorted(set(f.lines) & executed.get(f.path, set()))
        rows.append({"path": f.path, "lines": list(f.lines), "executed": ran})
    total = sum(len(r["lines"]) for r in rows)
    ran_total = sum(len(r["executed"]) for r in rows)
    unreached = [range_text(r["path"], a, b) for r in rows for a, b in ranges(set(r["lines"]) - set(r["executed"]))]
    return {
        "measured": True,
        "files": rows,
        "lines": total,
        "executed": ran_total,
        "percent": round(100 * ran_total / total, 1) if total else None,
        "min_percent": minimum,
        "unreached": unreached,
    }


def unreached_ranges(cov: Mapping[str, Any]) -> list[tuple[str, int, int]]:
    """(path, first, last) of every run of changed lines of code the properties did not execute."""
    out = []
    for row in cov.get("files") or ():
        if isinstance(row, Mapping) and isinstance(row.get("path"), str):
            missing = {int(n) for n in row.get("lines") or ()} - {int(n) for n in row.get("executed") or ()}
            out += [(str(row["path"]), a, b) for a, b in ranges(missing)]
    return out


def summary(cov: Mapping[str, Any]) -> str:
    """`the locked properties executed 12 of 14 changed lines of code; not reached: src/x.py:40-41`."""
    if not cov.get("measured"):
        return f"patch coverage was not measured: {cov.get('reason') or 'the property lane did not run'}"
    total, ran = int(cov.get("lines") or 0), int(cov.get("executed") or 0)
    if not total:
        return "the patch changes no line of code under test"
    text = f"the locked properties executed {ran} of {total} changed lines of code under test ({cov.get('percent')}%)"
    unreached = [str(u) for u in cov.get("unreached") or ()]
    if unreached:
        shown = ", ".join(unreached[:MAX_RANGES_SHOWN])
        more = f" and {len(unreached) - MAX_RANGES_SHOWN} more" if len(unreached) > MAX_RANGES_SHOWN else ""
        text += f"; not reached: {shown}{more}"
    return text


def violations(cov: Mapping[str, Any]) -> list[Violation]:
    """`patch-not-covered` when the share is below `properties.min_patch_coverage` (never without a minimum, and
    never for a patch without changed code)."""
    minimum, percent = cov.get("min_percent"), cov.get("percent")
    if minimum is None or percent is None or not cov.get("lines"):
        return []
    share = 100 * int(cov["executed"]) / int(cov["lines"])
    if share >= float(minimum):
        return []
    first = next((r for r in cov["files"] if set(r["lines"]) - set(r["executed"])), None)
    line = min(set(first["lines"]) - set(first["executed"])) if first else None
    return [
        Violation(
            ROW,
            f"{summary(cov)}; below properties.min_patch_coverage ({minimum}%). Reach these lines with a locked "
            f"property (a human adds it to SCORE_PROPERTIES on the base branch), or lower "
            f"properties.min_patch_coverage in the base branch's {CONFIG_PATH}",
            first["path"] if first else None,
            line,
        )
    ]


def not_measured(reason: str) -> PatchCoverageJson:
    """The section when no property worker ran on the head."""
    return {"measured": False, "reason": reason}
