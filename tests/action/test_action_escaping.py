"""Everything printed for GitHub goes through one escaping function; patch text can't forge commands or Markdown."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from evidence_gate.action.workflow_commands import annotation, append_outputs, escape_data, log_text, output_entry
from evidence_gate.report import job_summary, markdown_limits

HOSTILE = [
    "::stop-commands::pwned",
    "x\n::error file=README.md,line=1::fake annotation",
    "  ::warning::indented",
    "100% sure %0A not a newline %25",
    "\r\n::add-mask::secret",
    "##[error]legacy syntax",
    "a,b:c=d",
]


def runner_commands(log: str) -> list[tuple[str, dict[str, str], str]]:
    """What the Actions runner would parse as commands from `log` (name, properties, decoded message)."""
    found = []
    for line in log.split("\n"):
        text = line.strip()
        if text.startswith("##["):
            found.append(("legacy", {}, text))
            continue
        m = re.match(r"^::([A-Za-z-]+)(?: ([^:]*))?::(.*)$", text)
        if not m:
            continue
        props = {}
        for pair in filter(None, (m.group(2) or "").split(",")):
            key, _, value = pair.partition("=")
            props[key] = (
                value.replace("%3A", ":")
                .replace("%2C", ",")
                .replace("%0D", "\r")
                .replace("%0A", "\n")
                .replace("%25", "%")
            )
        data = m.group(3).replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")
        found.append((m.group(1), props, data))
    return found


def test_hostile_text_in_an_annotation_stays_one_command() -> None:
    """Each hostile message and path yields exactly one error command that decodes back to the original text."""
    for text in HOSTILE:
        line = annotation("error", text, path=text, line=3, title=text)
        assert "\n" not in line and "\r" not in line
        assert runner_commands(line) == [("error", {"file": text, "line": "3", "title": text}, text)]


def test_hostile_text_as_a_log_line_is_no_command() -> None:
    """Plain log lines of patch text never parse as a command, not even `::stop-commands::`."""
    for text in HOSTILE:
        assert runner_commands(log_text(text)) == []


@given(st.text())
def test_any_log_text_is_inert(text: str) -> None:
    """For any text, the log line is a single line the runner does not read as a command."""
    line = log_text(text)
    assert "\n" not in line and "\r" not in line
    assert runner_commands(line) == []


@given(st.text())
def test_escape_data_round_trips(text: str) -> None:
    """The runner's decoding of escaped data gives the original text back."""
    assert escape_data(text).replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%") == text


def test_outputs_use_a_delimiter_the_value_does_not_contain(tmp_path: Path) -> None:
    """A value containing newlines and a fake delimiter survives as one output."""
    value = "line1\nghadelimiter_x\nrow=pass"
    entry = output_entry("row", value)
    name, _, rest = entry.partition("<<")
    delimiter, _, body = rest.partition("\n")
    assert name == "row" and delimiter not in value
    assert body == value + "\n" + delimiter + "\n"
    path = tmp_path / "out"
    append_outputs(path, {"a": "1", "b": value})
    assert path.read_text().count("<<ghadelimiter_") == 2


def receipt_with(messages: list[str], errors: tuple[str, ...] = ()) -> dict[str, object]:
    """A final failing receipt whose violations carry `messages`."""
    return {
        "state": "final",
        "ok": False,
        "decision": {
            "row": "evidence-path-edited",
            "gate": "fail",
            "title": "Locked evidence touched",
            "matched": ["evidence-path-edited"],
        },
        "git": {"baseline": "a" * 40, "head": "b" * 40, "merge_base": None},
        "violations": [
            {"row": "evidence-path-edited", "path": f"fixtures/{i}`|<b>.txt", "line": None, "message": m}
            for i, m in enumerate(messages)
        ],
        "properties": {"ledgers": [], "skipped": "locked evidence touched"},
        "errors": list(errors),
    }


def test_summary_escapes_patch_text() -> None:
    """Backticks, pipes, HTML and command text from the patch stay inert text in the summary and the detail."""
    hostile = "````\n<script>alert(1)</script>\n| a | b |\n::stop-commands::x"
    md = job_summary.render(receipt_with([hostile]), "sha256:" + "0" * 64)
    assert "<script>" not in md and "\\<script\\>" in md
    assert "\n| a | b |" not in md  # no line of patch text starts a table row
    assert "\n::stop-commands::" not in md
    assert "- ❌ **Locked evidence** — 1 path touched" in md
    assert "sha256:" + "0" * 12 in md  # identities are shown as 12-digit prefixes; the receipt holds them whole


def test_summary_lists_seed_ledgers_in_words() -> None:
    """The full detail has one line per seed ledger in words: the result, the seeds, who wrote the oracle."""
    receipt = receipt_with([])
    receipt["properties"] = {
        "ledgers": [
            {
                "property_id": "p.py::test_a",
                "status": "budget_pass_no_freeze",
                "planned_seeds": [1, 2],
                "attempted_seeds": [1, 2],
                "failing_seed": None,
                "oracle_source": "human_reviewed",
                "examples": {"1": 50, "2": 50},
            }
        ]
    }
    md = job_summary.details(receipt, "sha256:x")
    assert (
        "- `p.py::test_a` — **held on every seed** · seeds 1, 2 · 50 examples per seed · oracle reviewed by a human"
    ) in md
    assert "budget_pass_no_freeze" not in md  # the SPEC status stays in the receipt


def test_step_summary_is_truncated_under_1_mib_with_a_closed_fence() -> None:
    """A 3 MiB report is cut under 1 MiB, ends with the marker, and leaves no fence open."""
    md = job_summary.render(receipt_with(["é" * 300 + f" {i}" for i in range(10_000)]), "sha256:x")
    assert len(md.encode()) > 3 * 1024 * 1024
    cut = markdown_limits.truncate_bytes(md)
    assert len(cut.encode()) <= markdown_limits.STEP_SUMMARY_LIMIT
    assert len(cut.encode()) > markdown_limits.STEP_SUMMARY_LIMIT - 4096
    assert cut.endswith(markdown_limits.TRUNCATED_MARKER)
    assert markdown_limits._open_fence(cut) == ""
    assert markdown_limits.truncate_bytes("short") == "short"


def test_check_summary_is_cut_to_65535_characters() -> None:
    """The check-run summary respects the API's character limit."""
    md = job_summary.render(receipt_with(["x" * 1000] * 200), "sha256:x")
    cut = markdown_limits.truncate_chars(md)
    assert len(md) > 65535 >= len(cut)
    assert cut.endswith(markdown_limits.TRUNCATED_MARKER)
    assert markdown_limits._open_fence(cut) == ""


@given(
    st.lists(st.text(alphabet=st.sampled_from("ab`\n|é:%"), max_size=80), max_size=40),
    st.integers(min_value=200, max_value=3000),
)
def test_truncation_never_exceeds_the_limit_or_leaves_a_fence_open(messages: list[str], limit: int) -> None:
    """For any findings and limit, the cut report fits, keeps whole lines, and closes every fence it opened."""
    md = job_summary.render(receipt_with(messages), "sha256:x")
    for cut, size in (
        (markdown_limits.truncate_bytes(md, limit), lambda s: len(s.encode())),
        (markdown_limits.truncate_chars(md, limit), len),
    ):
        assert size(cut) <= limit
        if cut != md:
            assert cut.endswith(markdown_limits.TRUNCATED_MARKER)
            assert markdown_limits._open_fence(cut) == ""
            assert cut.split("\n", 1)[0] == md.split("\n", 1)[0]
