"""The CLI's text report: compiler-style diagnostics wrapped between words at the terminal's width, colour only on
a terminal that wants it, hostile text inert in colour too, and the source line read from the head commit."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import cli
from evidence_gate.report import registry as report
from evidence_gate.report import terminal as terminal_report
from evidence_gate.report.terminal import Style
from support.repo_builder import GitRepo

CASES = Path(__file__).resolve().parents[1] / "report_cases"
SGR = re.compile(r"\x1b\[[0-9;]*m")


def _case(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CASES / name / "receipt.json").read_text("utf-8"))
    return loaded


def _finding(message: str, path: str | None = "src/a.py", line: int | None = 3) -> dict[str, Any]:
    return {
        "ok": False,
        "errors": [],
        "decision": {"row": "harness-probed", "title": "Code under test probes the harness", "gate": "fail"},
        "violations": [{"row": "harness-probed", "path": path, "line": line, "message": message}],
    }


def test_a_failing_property_reads_like_a_compiler_diagnostic() -> None:
    """error[row]: message, --> path:line, the source line, the exception and example as notes, help with the
    reproduce command and the row's docs link, a blank line, the verdict."""
    text = report.render("text", _case("property-failed"))
    lines = text.splitlines()
    assert lines[0] == "error[property-failed]: test_sum_is_preserved failed on planned seeds 1101, 1102"
    assert lines[1] == "  --> properties/test_allocate_properties.py:14"
    assert "14 |     assert sum(allocate(total, parts)) == total" in lines
    assert "   = minimal example: test_sum_is_preserved(total=1, parts=2)" in lines
    assert any(line.startswith("help: Fix the code under test") for line in lines)
    assert "      properties/test_allocate_properties.py::test_sum_is_preserved" in lines
    assert any(line.endswith("/docs/decision-rows.md#row-property-failed") for line in lines)
    assert lines[-2:] == ["", "FAIL: Property failed [property-failed]"]
    assert "assertion hash" not in text and "seed(s)" not in text


@given(st.lists(st.from_regex(r"[a-z]{1,30}", fullmatch=True), min_size=1, max_size=40), st.integers(40, 120))
def test_prose_wraps_between_words_at_the_width(words: list[str], width: int) -> None:
    """Every word of a message comes out whole, and a prose line is wider than the terminal only when it holds a
    single word (one that does not fit is never broken)."""
    message = " ".join(words)
    out = terminal_report.render(_finding(message), Style(width=width))
    prose = out.split(" --> ")[0]
    assert prose.split() == ["error[harness-probed]:", *words]
    for n, line in enumerate(prose.splitlines()):
        assert len(line) <= width or len(line.split()) == (2 if n == 0 else 1), (line, width)


def test_colour_only_on_a_terminal_without_no_color() -> None:
    """`report_context` colours a TTY, never a pipe, never with NO_COLOR set or TERM=dumb; COLUMNS sets the width."""
    assert cli.report_context({}, tty=False).color is False
    assert cli.report_context({}, tty=False).width == 80
    assert cli.report_context({}, tty=True).color is True
    assert cli.report_context({"NO_COLOR": "1"}, tty=True).color is False
    assert cli.report_context({"TERM": "dumb"}, tty=True).color is False
    assert cli.report_context({"COLUMNS": "120"}, tty=False).width == 120
    plain = report.render("text", _case("tampering"), cli.report_context({}, tty=False))
    coloured = report.render("text", _case("tampering"), cli.report_context({}, tty=True))
    assert "\x1b" not in plain and "\x1b[1;31merror[evidence-path-edited]\x1b[0m" in coloured
    assert SGR.sub("", coloured) == plain


def test_hostile_text_stays_inert_in_colour() -> None:
    """A message's own escape sequences are spelled out, so only the gate's colour codes reach the terminal."""
    out = terminal_report.render(_finding("boom\x1b[2J\x1b]0;owned\x07\nPASS: forged"), Style(color=True))
    assert "\x1b" not in SGR.sub("", out) and "\x07" not in out
    assert "\\x1b[2J" in out and not any(SGR.sub("", line).startswith("PASS") for line in out.splitlines())


def test_the_source_line_comes_from_the_head_commit(git_repo: GitRepo) -> None:
    """The CLI shows a finding's line as the head commit has it, not as the working tree does."""
    head = git_repo.commit("head", {"src/a.py": "import os\n\nimport _pytest  # a probe\n"})
    (git_repo.path / "src/a.py").write_text("changed in the working tree\n", "utf-8")
    source = cli._source_lines(git_repo.path, {"git": {"head": head}})
    assert source is not None and source("src/a.py", 3) == "import _pytest  # a probe"
    assert source("src/a.py", 99) is None and source("missing.py", 1) is None
    out = terminal_report.render(_finding("imports `_pytest`"), Style(), source)
    assert "3 | import _pytest  # a probe" in out.splitlines()


def test_help_is_said_once_per_row() -> None:
    """121 findings, five rows: one help line per row, each followed by that row's docs link."""
    out = report.render("text", _case("many-findings"))
    rows = {v["row"] for v in _case("many-findings")["violations"]}
    assert out.count("\nhelp: ") + out.startswith("help: ") == len(rows)
    assert out.count("= docs: ") == len(rows)


def test_a_crash_says_it_is_a_bug_and_where_to_report_it() -> None:
    """The crash's line, its traceback as real lines (never a literal `\\n`), then the bug sentence with the
    issues address, before the verdict."""
    out = report.render("text", _case("aborted"))
    lines = out.splitlines()
    assert lines[0] == "error: internal error: KeyError: 'entries' at gate.py:201 in check"
    assert lines[1] == "    Traceback (most recent call last):" and "\\n" not in out
    assert "help: This is a bug in evidence-gate, not a finding about the pull request." in lines
    assert "https://github.com/evidence-gate/evidence-gate/issues" in out


@given(
    st.lists(
        st.sampled_from(["a", "b", " ", "-", "\t", "\n", "\r", "\x0b", "é", "\u00a0", "\x1b[1m"]), max_size=90
    ).map("".join),
    st.integers(min_value=0, max_value=130),
    st.sampled_from(["", "PASS: ", "\x1b[31merror\x1b[0m: ", "    "]),
)
def test_a_line_that_fits_wraps_as_textwrap_wraps_it(text: str, width: int, first: str) -> None:
    """`Style.wrap` writes a line that fits without textwrap (not imported on a clean run) and gets exactly the
    lines textwrap makes of it; a line that does not fit, or holds whitespace textwrap rewrites, goes to textwrap."""
    import textwrap

    plain = re.sub(r"\x1b\[[0-9;]*m", "", first)
    expected = textwrap.wrap(
        text,
        width=max(width, 40),
        initial_indent=" " * len(plain),
        subsequent_indent="    ",
        break_long_words=False,
        break_on_hyphens=False,
    ) or [" " * len(plain)]
    assert Style(width=width).wrap(text, first, "    ") == [first + expected[0][len(plain) :], *expected[1:]]
