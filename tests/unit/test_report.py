"""The check run and job summary: goldens of real receipts, hostile text kept inert through cmark-gfm, the API's
limits, annotations on the failing line, and a reproduce command that really reproduces the failing seed."""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evidence_gate import decision
from evidence_gate.receipt import write as receipt
from evidence_gate.report import check_run as check_report
from evidence_gate.report import job_summary, markdown_limits, sarif
from evidence_gate.report import properties as property_report
from evidence_gate.report import row_docs as report_rows
from evidence_gate.report.job_summary import Links
from support import property_repo
from support.repo_builder import GitRepo

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "render_reports.py"
LINKS = Links(
    docs="https://github.com/o/gate/blob/v1/README.md",
    artifact="https://github.com/o/r/actions/runs/1/artifacts/2",
    blob="https://github.com/o/r/blob/" + "c" * 40,
)
CMARK = shutil.which("cmark-gfm")
needs_cmark = pytest.mark.skipif(CMARK is None, reason="cmark-gfm is not installed (apt-get install cmark-gfm)")


def _renderer() -> Any:
    spec = importlib.util.spec_from_file_location("render_reports", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RENDER = _renderer()
CASES = RENDER.case_dirs()


def case_receipt(name: str) -> dict[str, Any]:
    """The receipt of one report case."""
    loaded: dict[str, Any] = json.loads((RENDER.CASES / name / "receipt.json").read_text("utf-8"))
    return loaded


def test_every_case_folder_has_a_receipt() -> None:
    """Every folder under tests/report_cases is a case (one without receipt.json would be skipped by the glob)."""
    folders = sorted(p for p in RENDER.CASES.iterdir() if p.is_dir())
    assert folders and folders == CASES, sorted(set(folders) ^ set(CASES))


def test_cases_cover_the_required_renders() -> None:
    """A passing run, a failing property, a tampering PR and a many-findings PR are among the cases, with PNGs."""
    names = {c.name for c in CASES}
    assert {"pass", "property-failed", "tampering", "many-findings"} <= names
    for name in ("pass", "property-failed", "tampering", "many-findings"):
        for png in ("check-run.png", "job-summary.png"):
            assert (RENDER.CASES / name / png).read_bytes().startswith(b"\x89PNG"), (name, png)


@pytest.mark.parametrize("name", RENDER.PNG_CASES)
def test_pngs_were_rendered_from_the_current_markdown(name: str) -> None:
    """Each PNG's recorded source is today's Markdown: a change to the report without new screenshots fails."""
    stamp = (RENDER.CASES / name / RENDER.PNG_STAMP).read_text("utf-8")
    assert stamp == RENDER.png_stamp(RENDER.render_case(RENDER.CASES / name)), (
        f"the PNGs of {name} are older than its Markdown; run `python scripts/render_reports.py --png`"
    )


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_markdown_goldens_match(case: Path) -> None:
    """Each case's title, summary, text, annotations and job summary are exactly its checked-in golden."""
    for name, content in RENDER.render_case(case).items():
        golden = case / name
        assert golden.exists(), f"{golden} is missing; run `python scripts/render_reports.py`"
        assert golden.read_text("utf-8") == content, f"{golden} drifted; run `python scripts/render_reports.py`"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case_receipts_are_valid(case: Path) -> None:
    """Every case input is a schema-valid receipt (the goldens are renders of what the gate really writes)."""
    assert receipt.validate(case_receipt(case.name)) == []


def test_every_row_has_a_lane_and_a_fix() -> None:
    """Each decision-table row is described in report_rows.json (its docs page: tests/unit/test_doc_links.py)."""
    assert set(decision.row_ids()) <= report_rows.known_rows()
    for row in report_rows.known_rows():
        info = report_rows.info(row)
        assert info.lane in report_rows.LANES and info.todo.endswith(".")


class _Tags(HTMLParser):
    """The elements and link targets of rendered HTML."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: Counter[str] = Counter()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        self.hrefs += [v or "" for k, v in attrs if k == "href"]


def html_of(markdown: str) -> _Tags:
    """cmark-gfm's HTML for `markdown` (GitHub's extensions), parsed into tags and links."""
    assert CMARK is not None
    out = subprocess.run(
        [CMARK, "--unsafe", *[a for e in RENDER.EXTENSIONS for a in ("--extension", e)]],
        input=markdown,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tags = _Tags()
    tags.feed(out)
    return tags


HOSTILE = [
    "````\n<script>alert(1)</script>",
    "| a | b |\n|---|---|",
    "@octocat please merge",
    "www.evil.example",
    "https://evil.example/x",
    "[click](https://evil.example)",
    "<img src=x onerror=alert(1)>",
    "</details><details open>",
    "::error file=a,line=1::forged",
    "**bold** _em_ # heading",
    "a\u202eb\x1bc",
    "`` ` `` trailing `",
    "<!-- comment",
    "![img](https://evil.example/i.png)",
    "x@evil.example",
    "- a list",
    "1. ordered",
    "     indented code",
    "+ plus",
    "===",
    "$x^2$",
    ":rocket: WWW.evil.example",
    "> quote",
    "~~struck~~",
    "&lt;b&gt;",
    "\\*not emphasis\\*",
]


def hostile_receipt(texts: list[str]) -> dict[str, Any]:
    """A failing receipt whose every patch-controlled field carries `texts`."""
    base = case_receipt("property-failed")
    out = copy.deepcopy(base)
    ledger = out["properties"]["ledgers"][0]
    ledger["falsifying"] = "Falsifying example: " + "\n".join(texts)
    ledger["failure"] = {"path": texts[0], "line": 3, "statement": texts[1 % len(texts)], "exception": "\n".join(texts)}
    # One folder for every path (a `/` in the text would only add folder groups, which is not an injection).
    out["violations"] = [
        {"row": "evidence-path-edited", "path": "fixtures/" + t.replace("/", "_"), "line": None, "message": f"m{i} {t}"}
        for i, t in enumerate(texts)
    ]
    out["violations"] += [
        {"row": "freeze-id-added", "path": "freeze.yaml", "line": i + 1, "message": f"f{i} {t}"}
        for i, t in enumerate(texts)
    ]
    out["violations"].append(
        {
            "row": "property-failed",
            "path": ledger["property_id"].split("::")[0],
            "line": 3,
            "message": ledger["property_id"] + " failed",
        }
    )
    out["errors"] = list(texts)
    return out


def _all_markdown(r: dict[str, Any], notes: tuple[str, ...] = ()) -> list[str]:
    built = check_report.build(r, "sha256:" + "0" * 64, notes=notes, links=LINKS)
    return [built.summary, built.text, job_summary.render(r, "sha256:" + "0" * 64, notes, LINKS)]


def _ours(href: str) -> bool:
    return href.startswith(("https://github.com/o/gate/", "https://github.com/o/r/"))


@needs_cmark
def test_hostile_text_renders_as_text_through_cmark_gfm() -> None:
    """Patch text cannot add an element, a link, an image, a table or a mention: the HTML's structure equals that
    of the same receipt with plain words, apart from code spans (backticks and `@` in patch text become code)."""
    plain = [f"word{i}" for i in range(len(HOSTILE))]
    for hostile_md, plain_md in zip(
        _all_markdown(hostile_receipt(HOSTILE), tuple(HOSTILE)),
        _all_markdown(hostile_receipt(plain), tuple(plain)),
        strict=True,
    ):
        got, want = html_of(hostile_md), html_of(plain_md)
        assert all(_ours(h) for h in got.hrefs), got.hrefs
        assert {t: n for t, n in got.tags.items() if t != "code"} == {t: n for t, n in want.tags.items() if t != "code"}
        assert not {"script", "img", "iframe", "del", "input", "ol", "hr", "h1"} & set(got.tags)


@needs_cmark
@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.text(alphabet=st.sampled_from("ab1w `*_[]()<>|#!@:/.\\\n-=+~&;$"), min_size=1, max_size=30).filter(
            lambda t: "; " not in t
        ),
        min_size=1,
        max_size=4,
        unique_by=lambda t: re.sub(r"\S", "w", t),
    )
)
def test_any_patch_text_leaves_the_structure_alone(texts: list[str]) -> None:
    """For any text in paths, messages, examples and errors, the rendered HTML has the elements of the same receipt
    with every visible character replaced by a letter (same lines and blanks, so the same layout choices)."""
    plain = [re.sub(r"\S", "w", t) for t in texts]
    for hostile_md, plain_md in zip(
        _all_markdown(hostile_receipt(texts)), _all_markdown(hostile_receipt(plain)), strict=True
    ):
        got, want = html_of(hostile_md), html_of(plain_md)
        assert all(_ours(h) for h in got.hrefs)
        assert {t: n for t, n in got.tags.items() if t != "code"} == {t: n for t, n in want.tags.items() if t != "code"}


def test_limits_hold_for_ten_thousand_findings() -> None:
    """10,000 long findings: summary and text within 65,535 characters, the job summary within 1 MiB and its
    `<details>` closed, and the summary still opens with the verdict."""
    r = hostile_receipt(["é" * 300 + f" {i}" for i in range(5000)])
    built = check_report.build(r, "sha256:x", links=LINKS)
    assert len(built.summary) <= 65535 and len(built.text) <= 65535
    assert built.summary.startswith("❌ **Fail**")
    job = markdown_limits.truncate_bytes(job_summary.render(r, "sha256:x", (), LINKS))
    assert len(job.encode()) <= markdown_limits.STEP_SUMMARY_LIMIT
    assert job.count("<details>") == job.count("</details>")
    assert len(built.title) <= 255


def test_failing_property_is_annotated_on_its_failing_line() -> None:
    """The property's annotation sits on the ledger's `failure` line, carries the example and the error, and its
    details the reproduce command."""
    r = case_receipt("property-failed")
    ledger = r["properties"]["ledgers"][0]
    (first,) = [a for a in check_report.annotations_for(r) if a.title.startswith("Property failed")]
    assert (first.path, first.line, first.level) == (ledger["failure"]["path"], ledger["failure"]["line"], "failure")
    assert "AssertionError: assert 0 == 1" in first.message
    assert (
        "--hypothesis-seed=1101" in first.raw_details
        and "Minimal example: test_sum_is_preserved(total=1" in first.message
    )


def test_without_a_failure_record_the_finding_line_is_used() -> None:
    """A ledger without `failure` (an older sealed run) falls back to the violation's line, else line 1."""
    r = case_receipt("property-failed")
    del r["properties"]["ledgers"][0]["failure"]
    assert check_report.annotations_for(r)[0].line == 14
    r["violations"][0]["line"] = None
    assert check_report.annotations_for(r)[0].line == 1
    assert "**Failing line:** not recorded" in check_report.build(r, "sha256:x").summary


def test_a_human_patch_gets_notices_and_a_neutral_conclusion() -> None:
    """A human patch's findings are notices, never failures, and the summary does not say PASS over a failure."""
    r = case_receipt("human-patch")
    built = check_report.build(r, "sha256:x")
    assert built.conclusion == "neutral"
    assert {a.level for a in built.annotations} == {"notice"}
    assert built.summary.startswith("ℹ️ **Not scored**") and "❌" not in built.summary


def test_max_annotations_is_said_in_the_summary() -> None:
    """Annotations cut by `max_annotations` are counted in a note at the top of the summary."""
    r = case_receipt("many-findings")
    built = check_report.build(r, "sha256:x", max_annotations=10)
    assert len(built.annotations) == 10
    assert "111 of 121 annotations were left out" in built.summary.split("### What failed")[0]


def test_titles_lead_with_the_verdict_and_fit_a_list() -> None:
    """Titles give the verdict and its counts first, within 54 characters (GitHub's lists cut the rest), and
    never the row id (the summary's first line has it)."""
    titles = {c.name: check_report.build(case_receipt(c.name), "sha256:x").title for c in CASES}
    assert titles["many-findings"] == "Fail: 101 locked paths touched, 20 ledger findings"
    assert titles["property-failed"] == "Fail: 1 of 3 properties failed"
    assert titles["pass"] == "Pass: 3 properties held"
    assert titles["static-only"] == "Pass: properties not run"
    assert titles["aborted"] == "Gate crashed: nothing was scored"
    for name, shown in titles.items():
        row = str(case_receipt(name)["decision"]["row"])
        assert len(shown) <= job_summary.TITLE_CHARS and row not in shown, (name, shown)


def test_a_title_too_long_for_a_list_keeps_whole_phrases() -> None:
    """Counts that do not fit are left out whole and marked `…`, never cut mid-word."""
    r = case_receipt("many-findings")
    r["violations"].append({"row": "harness-probed", "path": "src/a.py", "line": 3, "message": "probe"})
    assert check_report.build(r, "sha256:x").title == "Fail: 101 locked paths touched, 1 harness probe, …"


def test_static_only_names_the_input_not_the_cli_flag_alone() -> None:
    """With `run-properties: false` the properties lane says so in the action's terms."""
    summary = check_report.build(case_receipt("static-only"), "sha256:x").summary
    assert "not run: static lanes only (`run-properties: false`, or `--no-run`)" in summary


def test_precondition_message_appears_once() -> None:
    """A precondition's message (kept in both `violations` and `errors`) is shown once in the summary."""
    built = check_report.build(case_receipt("history-missing"), "sha256:x")
    assert built.summary.count("is not in this clone") == 1 and built.text.count("is not in this clone") == 1


def test_reproduce_command_reproduces_the_failing_seed(git_repo: GitRepo, tmp_path: Path) -> None:
    """The summary's copy-paste command, run in a checkout of the head, fails the property on its seed with the
    minimal example the sealed run recorded."""
    property_repo.red_repo(git_repo)
    git_repo.commit("patch", {"README.md": "an unrelated change\n"})
    r = property_repo.judge(git_repo, tmp_path)
    ledger = property_repo.ledger(r)
    assert ledger["failing_seed"] is not None, ledger
    summary = check_report.build(r, "sha256:x").summary
    command = re.search(r"^```sh\n(.*?)\n```$", summary, re.MULTILINE | re.DOTALL)
    assert command is not None, summary
    head_seed = {w["name"]: w["hash_seed"] for w in r["sealed"]["workers"]}["head-0"]
    assert command.group(1).startswith(f"PYTHONHASHSEED={head_seed} "), command.group(1)  # the head's, drawn per run
    checkout = tmp_path / "checkout"
    git_repo.git("worktree", "add", "-q", "--detach", str(checkout), r["git"]["head"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "HYPOTHESIS_", "PYTHON"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        ["bash", "-c", command.group(1)],
        cwd=checkout,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    example = re.sub(r"\s+", "", str(ledger["falsifying"]).split(":", 1)[1])
    shown = "".join(re.sub(r"\s+", "", line.removeprefix("E")) for line in proc.stdout.splitlines())
    assert example in shown, (example, proc.stdout)


def test_truncation_closes_the_details_but_ignores_details_inside_fences() -> None:
    """A cut job summary closes its own `<details>`; a `<details>` line inside patch text's fence is not counted."""
    text = "<details><summary>x</summary>\n\n```text\n<details>\n</details>\n<details>\n```\n" + "line\n" * 5000
    cut = markdown_limits.truncate_bytes(text, 4000)
    assert cut.count("\n</details>\n") == 1 + text[:4000].count("\n</details>\n")
    assert (
        markdown_limits.truncate_bytes("<details>\n" + "y\n" * 3000, 1000)
        .rstrip()
        .endswith(markdown_limits.TRUNCATED_MARKER.strip())
    )


def test_many_failing_properties_are_capped_in_the_summary() -> None:
    """Fifteen failing properties: ten shown in full, the rest counted; every one keeps its annotation."""
    r = case_receipt("property-failed")
    first = r["properties"]["ledgers"][0]
    r["properties"]["ledgers"] = [dict(first, property_id=f"{first['property_id']}_{i}") for i in range(15)]
    r["violations"] = [
        dict(r["violations"][0], message=f"{x['property_id']} failed on planned seed(s) 1101")
        for x in r["properties"]["ledgers"]
    ]
    built = check_report.build(r, "sha256:x")
    assert built.summary.count("```sh") == 10 and "5 more failing properties" in built.summary
    assert len([a for a in built.annotations if a.line == first["failure"]["line"]]) == 15


def test_provenance_is_listed_in_the_text() -> None:
    """The sealed run's provenance (the `runner` interface) is in the full detail, outside-the-tree loads marked."""
    r = case_receipt("pass")
    r["sealed"]["provenance"] = [
        {"package": "alloc", "loaded_from": "src/alloc.py", "from_tree": True},
        {"package": "evil", "loaded_from": "/usr/lib/evil.py", "from_tree": False},
    ]
    text = check_report.build(r, "sha256:x").text
    assert "- `alloc` from `src/alloc.py`\n- `evil` from `/usr/lib/evil.py` (**outside the sealed tree**)" in text


def test_links_come_only_from_the_runner_and_the_receipt() -> None:
    """README, artifact and blob links are built from the runner's variables; `uses: ./` gets no README link,
    a non-http server none at all, and `EVIDENCE_GATE_DOCS_URL` overrides the README."""
    r = case_receipt("pass")
    env = {
        "GITHUB_SERVER_URL": "https://ghe.example",
        "GITHUB_RUN_ID": "7",
        "GITHUB_ACTION_REPOSITORY": "o/gate",
        "GITHUB_ACTION_REF": "v1",
    }
    links = check_report.links_from(env, "o/r", r, "42")
    assert links == Links(
        docs="https://ghe.example/o/gate/blob/v1/README.md",
        artifact="https://ghe.example/o/r/actions/runs/7/artifacts/42",
        blob=f"https://ghe.example/o/r/blob/{r['git']['head']}",
        base_blob=f"https://ghe.example/o/r/blob/{r['git']['baseline']}",
    )
    assert check_report.links_from({**env, "GITHUB_ACTION_REPOSITORY": ""}, "o/r", r).docs is None
    assert check_report.links_from({**env, "GITHUB_ACTION_REPOSITORY": ""}, "o/r", r).artifact is None
    assert check_report.links_from({**env, "GITHUB_SERVER_URL": "javascript:alert(1)"}, "o/r", r) == Links()
    docs = check_report.links_from({**env, "EVIDENCE_GATE_DOCS_URL": "https://docs.example/README.md#x"}, "o/r", r)
    assert docs.docs == "https://docs.example/README.md"


def test_root_files_are_grouped_under_the_repository_root() -> None:
    """A locked file at the root (a new conftest.py) is listed under 'repository root', by its name."""
    r = case_receipt("tampering")
    r["violations"] = [
        {
            "row": "evidence-path-edited",
            "path": "conftest.py",
            "line": None,
            "message": "conftest.py was added (locked: a conftest.py above properties/test_p.py)",
        }
    ]
    summary = check_report.build(r, "sha256:x").summary
    assert "**repository root** (1)\n- `conftest.py` was added" in summary


@needs_cmark
@pytest.mark.skipif(not Path(RENDER.CHROMIUM).exists(), reason="chromium is not installed (apt-get install chromium)")
def test_first_screen_of_a_failing_property_holds_the_example_and_the_command(tmp_path: Path) -> None:
    """Rendered as GitHub renders it in a 1280 by 800 window, the property-failed check run shows its minimal example
    and the whole reproduce command (no line wider than the block) above the fold."""
    files = RENDER.render_case(RENDER.CASES / "property-failed")
    markdown, heading = RENDER.png_sources(files)["check-run.png"]
    probe = """<script>
    const pre = [...document.querySelectorAll('pre')].find(p => p.textContent.includes('--hypothesis-seed='));
    const code = [...document.querySelectorAll('code')].find(c => c.textContent.startsWith('test_sum_is_preserved('));
    document.title = JSON.stringify({pre: pre && [pre.getBoundingClientRect().bottom, pre.scrollWidth - pre.clientWidth],
      example: code && code.getBoundingClientRect().bottom, lines: pre && pre.textContent.trim().split('\\n').length});
    </script></body>"""
    page = tmp_path / "check-run.html"
    page.write_text(RENDER.page(RENDER.to_html(markdown), heading).replace("</body>", probe), "utf-8")
    dom = RENDER._chromium(["--window-size=1280,800", "--dump-dom", page.as_uri()], tmp_path)
    found = re.search(r"<title>(.*?)</title>", dom)
    assert found is not None, dom[:2000]
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    assert seen["example"] is not None and seen["example"] <= 800, seen
    assert seen["pre"] is not None and seen["pre"][0] <= 800 and seen["pre"][1] == 0, seen
    assert seen["lines"] <= 6, seen


@needs_cmark
@pytest.mark.skipif(not Path(RENDER.CHROMIUM).exists(), reason="chromium is not installed (apt-get install chromium)")
def test_first_screen_of_the_freeze_entry_check_run_holds_the_delta(tmp_path: Path) -> None:
    """Rendered as GitHub renders it at 1280 by 800, the freeze-entry check run shows the delta against main's last
    receipt (its heading, its counts and the new entry) above the fold, before the lanes."""
    files = RENDER.render_case(RENDER.CASES / "freeze-entry-added")
    markdown, heading = RENDER.png_sources(files)["check-run.png"]
    probe = """<script>
    const at = t => { const e = [...document.querySelectorAll('h3, p, li')].find(x => x.textContent.includes(t));
      return e ? e.getBoundingClientRect().bottom : null; };
    document.title = JSON.stringify({heading: at("Since main's last receipt"), counts: at('1 new finding, 1 fixed'),
      added: at('new · freeze-id-added'), lanes: at('Lanes')});
    </script></body>"""
    page = tmp_path / "check-run.html"
    page.write_text(RENDER.page(RENDER.to_html(markdown), heading).replace("</body>", probe), "utf-8")
    dom = RENDER._chromium(["--window-size=1280,800", "--dump-dom", page.as_uri()], tmp_path)
    found = re.search(r"<title>(.*?)</title>", dom)
    assert found is not None, dom[:2000]
    seen = json.loads(found.group(1).replace("&quot;", '"'))
    assert None not in seen.values(), seen
    assert seen["heading"] < seen["counts"] < seen["added"] < seen["lanes"] <= 800, seen


def test_the_project_addresses_are_pyprojects() -> None:
    """The README and issues addresses the reports print are the ones pyproject.toml publishes."""
    import tomllib

    urls = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["urls"]
    assert urls["Documentation"] == report_rows.PROJECT_README and urls["Issues"] == report_rows.ISSUES_URL


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_no_noise_in_what_people_read(case: Path) -> None:
    """Summary and text hold no Python `True`/`False`, no SPEC status slug, no assertion hash and no full-length
    digest outside a link's address (identities are 12-digit prefixes in one collapsed line)."""
    built = check_report.build(case_receipt(case.name), "sha256:" + "e" * 64)
    for shown in (built.summary, built.text):
        words = re.sub(r"\(<[^>]*>\)", "", shown)  # link targets may carry a full commit id
        assert not re.search(r"`(True|False)`", words), case.name
        assert not re.search(r"[0-9a-f]{40}", words), case.name
        assert "assertion hash" not in words and "seed(s)" not in words, case.name
        assert not any(f"`{slug}`" in words for slug in property_report.STATUS_WORDS), case.name
    assert built.text.startswith("<details><summary>Identities")
    assert "freeze_eligible" not in built.text


def test_nothing_is_said_twice() -> None:
    """An annotation's message neither repeats its title's row id nor holds the exception twice; a precondition's
    fix is What to do and not repeated in its finding; a finding line does not start with its own path."""
    for c in CASES:
        for a in check_report.build(case_receipt(c.name), "sha256:x").annotations:
            assert not re.search(r"\[[a-z-]+\]$", a.message), (c.name, a.message)
            assert a.message.count("AssertionError") + a.raw_details.count("AssertionError") <= 1, a
    summary = check_report.build(case_receipt("config-invalid"), "sha256:x").summary
    assert summary.count("the patch's copy is never read") == 1, summary
    summary = check_report.build(case_receipt("property-failed"), "sha256:x").summary
    assert "- [`properties/test_allocate_properties.py" not in summary
    text = check_report.build(case_receipt("property-failed"), "sha256:x").text
    assert "` test\\_sum\\_is\\_preserved failed on planned seeds 1101, 1102" in text


@needs_cmark
def test_the_crash_page_leads_with_the_bug_sentence_and_an_address() -> None:
    """A crash's summary says it is the gate's bug, outside any code block, right after the verdict, with the
    repository's issues address; the traceback is collapsed."""
    summary = check_report.build(case_receipt("aborted"), "sha256:x", links=LINKS).summary
    second = summary.split("\n\n")[1]
    assert second.startswith("**This is a bug in evidence-gate, not a finding about the pull request.**")
    assert f"{report_rows.ISSUES_URL}/new" in html_of(summary).hrefs
    assert "<details><summary>Traceback</summary>" in summary


def test_links_point_at_the_pr_head_and_a_deleted_file_at_the_base(shared_dir: Path) -> None:
    """With a real pull_request event's head.sha, a line in the head links that commit (not the test merge commit,
    which changes on every push); a locked file the patch deleted links the baseline, the only commit that has it."""
    event = json.loads((shared_dir / "github-api/events/pull_request.opened.1.json").read_text("utf-8"))
    head = event["pull_request"]["head"]["sha"]
    r = case_receipt("freeze-entry-added")
    env = {"GITHUB_SERVER_URL": "https://github.com"}
    links = check_report.links_from(env, "o/r", r, head=head)
    summary = check_report.build(r, "sha256:x", links=links).summary
    assert f"https://github.com/o/r/blob/{head}/freeze.yaml#L" in summary and r["git"]["head"] not in summary
    r["violations"] = [
        {"row": "evidence-path-edited", "path": "fixtures/a.json", "line": 1, "message": "fixtures/a.json was deleted"}
    ]
    text = check_report.build(r, "sha256:x", links=links).text
    assert f"https://github.com/o/r/blob/{r['git']['baseline']}/fixtures/a.json#L1" in text and head not in text
    assert (
        check_report.links_from(env, "o/r", r, head="not-a-sha").blob
        == f"https://github.com/o/r/blob/{r['git']['head']}"
    )


def test_a_failure_through_changed_code_is_shown_in_the_diff(git_repo: GitRepo, tmp_path: Path) -> None:
    """A real sealed run whose failing example raises on a line the patch changed: every finding of that property
    (check-run annotations, SARIF results) has a location inside the PR's diff, and the summary names the line."""
    files = property_repo.base_files()
    files["src/calc.py"] = property_repo.GREEN
    git_repo.commit("baseline", files)
    git_repo.branch("patch")
    git_repo.commit("patch", {"src/calc.py": property_repo.RAISES_ON_THE_PATCH})
    r = property_repo.judge(git_repo, tmp_path)
    ledger = property_repo.ledger(r)
    assert ledger["failing_seed"] is not None, r["violations"]
    assert ledger["failure"]["in_patch"] == [{"path": "src/calc.py", "line": 3}], ledger["failure"]
    diff = {("src/calc.py", n) for n in (2, 3)}  # the lines the patch added
    notes = [a for a in check_report.annotations_for(r) if a.title.startswith("Property failed")]
    assert ("src/calc.py", 3) in {(a.path, a.line) for a in notes}
    results = sarif.sarif_log(r)["runs"][0]["results"]
    where = [
        (
            x["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
            x["locations"][0]["physicalLocation"].get("region", {}).get("startLine"),
        )
        for x in results
        if x["ruleId"] in property_report.FAILED_ROWS
    ]
    assert set(where) & diff, where
    summary = check_report.build(r, "sha256:x").summary
    assert "**In this pull request's diff:** `src/calc.py:3`" in summary
