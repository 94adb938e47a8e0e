"""`evidence-gate history`: the ledger walked along real first-parent histories, gaps said and drawn, the picture
as a golden (SVG and text) with a Chromium screenshot made from it.

    python tests/test_history.py          # rewrite the goldens in tests/history_cases/built/
    python tests/test_history.py --png    # also screenshot the SVG with headless Chromium
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from evidence_gate import cli
from evidence_gate.commands import history
from evidence_gate.git import Repo
from evidence_gate.report import history_svg
from support import history_repo
from support.repo_builder import GitRepo

ROOT = Path(__file__).resolve().parents[2]
CASE = Path(__file__).resolve().parents[1] / "history_cases" / "built"
REPORT_CASES = Path(__file__).resolve().parents[1] / "report_cases"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SVG_NS = "{http://www.w3.org/2000/svg}"


def receipts_folder(path: Path) -> Path:
    """Receipts of real gate runs (the report cases), plus an aborted one and a file that is not JSON."""
    for name in ("pass", "property-failed", "run-problem", "tampering"):
        (path / name).mkdir(parents=True)
        shutil.copy(REPORT_CASES / name / "receipt.json", path / name / "receipt.json")
    shutil.copy(REPORT_CASES / "aborted" / "receipt.json", path / "aborted.json")
    (path / "broken.json").write_text("{not json", "utf-8")
    return path


def render_case(work: Path) -> dict[str, str]:
    """The case's outputs: the text `history` prints and the SVG it writes."""
    repo, marks = history_repo.build(work / "repo")
    out = io.StringIO()
    svg = work / "history.svg"
    code = history.main(repo.path, "HEAD", svg, receipts_folder(work / "receipts"), 2000, out, marks["proposed"])
    assert code == 0
    text = out.getvalue().replace(str(svg), "history.svg")
    return {"history.txt": text, "history.svg": svg.read_text("utf-8")}


@pytest.fixture(scope="module")
def case(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The built case, rendered once."""
    return render_case(tmp_path_factory.mktemp("history"))


def test_goldens_match(case: dict[str, str]) -> None:
    """The text and the SVG are exactly the checked-in goldens (`python tests/test_history.py` rewrites them)."""
    for name, content in case.items():
        assert (CASE / name).read_text("utf-8") == content, f"{name} drifted; run `python tests/test_history.py`"


def test_png_was_rendered_from_the_current_svg() -> None:
    """The screenshot's recorded source is today's SVG (`python tests/test_history.py --png` re-renders it)."""
    digest = hashlib.sha256((CASE / "history.svg").read_bytes()).hexdigest()
    assert (CASE / "png-sources.sha256").read_text("utf-8") == f"{digest}  history.png\n"
    assert (CASE / "history.png").read_bytes().startswith(b"\x89PNG")


def test_text_names_every_change_and_every_gap(case: dict[str, str]) -> None:
    """One line per change: growth, the garbled and the lost ledger (each said to be a gap), the move to JSON."""
    text = case["history.txt"]
    assert "freeze.yaml: 2 entries (max 6), 347 bytes (max 1500)" in text
    assert "invalid: freeze.yaml:28: does not parse: duplicate key 'version'" in text
    assert "unreadable: the blob " in text and text.count("(drawn as a gap)") == 2
    assert "ci/freeze.json: 1 entry (max 4)" in text and "absent: freeze.yaml is absent" in text
    assert "receipt skipped: aborted.json: an aborted run" in text and "receipt skipped: broken.json: " in text
    assert "tampering/receipt.json: the properties were not run" in text
    assert "property-failed/receipt.json (7a981d4fc7d4, 2026-09-20): 0 open, 1 closed failure, 2 budget passes" in text


def test_hostile_receipt_files_are_skipped_not_read(tmp_path: Path) -> None:
    """A FIFO, a link to a device and a receipt with forged counts are each listed as skipped; nothing blocks."""
    folder = receipts_folder(tmp_path / "receipts")
    os.mkfifo(folder / "fifo.json")
    (folder / "zero.json").symlink_to("/dev/zero")
    (folder / "forged.json").write_text(
        json.dumps({"schema": "evidence-gate/receipt/v1", "state": "final", "properties": {"counts": {"open": -1}}}),
        "utf-8",
    )
    patches, skipped = history.read_receipts(folder)
    assert [p.name for p in patches] == [
        "pass/receipt.json",
        "property-failed/receipt.json",
        "run-problem/receipt.json",
    ]
    reasons = dict(s.split(": ", 1) for s in skipped)
    assert reasons["fifo.json"] == reasons["zero.json"] == "not a regular file"
    assert reasons["forged.json"] == "properties.counts is missing or not three counts"


def test_only_the_first_parent_chain_is_walked(tmp_path: Path) -> None:
    """The side branch's nine-entry ledger never reaches the base branch, so it is not a point of its history."""
    repo, marks = history_repo.build(tmp_path / "repo")
    walked = history.collect(Repo(repo.path), "main")
    commits = [p.commit for p in walked.points]
    assert marks["side-peak"] not in commits and marks["merge"] in commits
    assert max(p.entries or 0 for p in walked.points) == 5
    states = {p.commit: p.state for p in walked.points}
    assert states[marks["garbled"]] == "invalid" and states[marks["lost"]] == "unreadable"
    assert states[marks["start"]] == "absent" and states[marks["tip"]] == "measured"
    assert walked.branch == "main" and not walked.shallow


def test_each_distinct_blob_is_parsed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty-eight commits, most changing another file, share one configuration and three ledgers: three ledger
    parses and one configuration parse, not 28 of each (the action walks 1,000 commits after every run)."""
    repo = history_repo.DatedRepo(tmp_path / "repo")
    repo.commit("start", {".evidence-gate.yml": history_repo.CONFIG, "freeze.yaml": history_repo.ledger(1)})
    for n in range(27):  # the dates run to 2026-09-28
        files = {"README": f"{n}\n"} | ({"freeze.yaml": history_repo.ledger(2 + n // 14)} if n % 14 == 0 else {})
        repo.commit(f"change {n}", files)
    calls = {"ledger": 0, "config": 0}
    measure, parse_config = history.freeze_ledger.measure, history.parse_config

    def counted_measure(data: bytes, file: str) -> object:
        calls["ledger"] += 1
        return measure(data, file)

    def counted_config(data: bytes | None) -> object:
        calls["config"] += 1
        return parse_config(data)

    monkeypatch.setattr(history.freeze_ledger, "measure", counted_measure)
    monkeypatch.setattr(history, "parse_config", counted_config)
    walked = history.collect(Repo(repo.path), "main")
    assert [p.entries for p in walked.points] == [1] + [2] * 14 + [3] * 13
    assert calls == {"ledger": 3, "config": 1}


def test_svg_is_well_formed_titled_and_escaped(case: dict[str, str]) -> None:
    """The SVG parses as XML, is 960 px wide, has a title, and spells out the hostile commit subject."""
    svg = case["history.svg"]
    root = ET.fromstring(svg)
    assert root.tag == f"{SVG_NS}svg" and root.get("width") == "960"
    assert root.find(f"{SVG_NS}title") is not None
    titles = [t.text or "" for t in root.iter(f"{SVG_NS}title")]
    assert any("ledger <empty> & \\u202eevil" in t for t in titles)
    assert "\u202e" not in svg
    texts = [t.text or "" for t in root.iter(f"{SVG_NS}text")]
    assert {"Entries", "Canonical bytes", "Seed ledgers per patch (receipts)"} <= set(texts)
    assert {"budget (max_entries)", "budget (max_bytes)", "budget passes"} <= set(texts)


def _point(day: float, entries: int | None, state: str = "measured", cap: int | None = None) -> history.Point:
    """A point `day` days after 2026-09-01 (noon UTC)."""
    when = 1_788_264_000 + int(day * 86400)
    if state != "measured":
        return history.Point(f"{int(day * 24):040x}", when, "s", "freeze.yaml", state, "why")
    return history.Point(f"{int(day * 24):040x}", when, "s", "freeze.yaml", state, "", entries, 10, cap, None)


def _dots(svg: str, colour: str) -> list[float]:
    root = ET.fromstring(svg)
    return [float(c.get("cx") or 0) for c in root.iter(f"{SVG_NS}circle") if c.get("fill") == colour]


def test_the_x_axis_is_time_not_commits() -> None:
    """Three commits on days 0, 1 and 16: the quiet fortnight is fifteen times as wide as the first day, and a
    committer date that goes backwards is drawn at the commit before it, never left of it."""
    points = (_point(0, 1), _point(1, 2), _point(16, 3))
    xs = _dots(history_svg.render(history.History("main", "f" * 40, points)), history_svg.SERIES["entries"])
    entries = xs[: len(xs) // 2] if len(xs) == 6 else xs
    first, second, third = entries[:3]
    assert abs((third - second) / (second - first) - 15) < 0.01
    backwards = (_point(0, 1), _point(5, 2), _point(2, 3))
    xs = _dots(history_svg.render(history.History("main", "f" * 40, backwards)), history_svg.SERIES["entries"])
    assert xs[1] == xs[2]


def _legend(svg: str) -> set[str]:
    return {t.text or "" for t in ET.fromstring(svg).iter(f"{SVG_NS}text")}


def test_the_legend_names_only_what_is_drawn() -> None:
    """No gap, no budget, no pull request: none of them in the legend or the notes; each appears once drawn."""
    plain = history_svg.render(history.History("main", "f" * 40, (_point(0, 1), _point(3, 2))))
    assert not {"gap", "budget (max_entries)", "this PR"} & _legend(plain)
    assert "Shaded" not in plain and "Dashed red" not in plain and "Orange" not in plain
    points = (_point(0, 1, cap=4), _point(1, None, "invalid"), _point(3, 2, cap=4))
    proposal = history.Proposal(_point(4, 3, cap=4), "a" * 40, ("x",), ())
    full = history_svg.render(history.History("main", "f" * 40, points, proposal=proposal))
    assert {"gap", "budget (max_entries)", "this PR"} <= _legend(full)
    assert "Shaded red" in full and "Dashed red" in full and "Orange band" in full


def test_the_pull_requests_ledger_is_drawn_after_the_tip_and_escaped() -> None:
    """The proposed ledger is a diamond in the pull request's colour right of every commit, labelled with the
    change; its hostile entry id and commit subject are spelled out inside one text node, never markup."""
    points = (_point(0, 1), _point(2, 2))
    hostile = '<script>alert(1)</script>&\u202e"'
    proposal = history.Proposal(_point(3, 3), "b" * 40, (hostile,), ("gone",))
    svg = history_svg.render(history.History("main", "f" * 40, points, proposal=proposal))
    root = ET.fromstring(svg)
    assert "<script" not in svg and "\u202e" not in svg
    diamonds = [p for p in root.iter(f"{SVG_NS}path") if p.get("fill") == history_svg.SERIES["pr"]]
    assert len(diamonds) == 2  # one per panel
    (title,) = diamonds[0].iter(f"{SVG_NS}title")
    assert (title.text or "").startswith(f"this PR ({'b' * 12}, 2026-09-04): 3 entries")
    bands = [
        r.find(f"{SVG_NS}title") for r in root.iter(f"{SVG_NS}rect") if r.get("fill") == history_svg.SERIES["pr-band"]
    ]
    said = [t.text or "" for t in bands if t is not None]
    assert len(said) == 2 and "<script>alert(1)</script>" in said[0] and "gone" in said[0]
    assert "+1 −1 → 3" in _legend(svg)
    tip_x = max(_dots(svg, history_svg.SERIES["entries"]))
    assert float(diamonds[0].get("d", "M0").split()[0][1:]) > tip_x


@pytest.mark.parametrize(
    ("span", "label"),
    [
        (3 * 3600, "Sep 1 13:00"),
        (10 * 86400, "Sep 4"),
        (40 * 86400, "Sep 7, 2026"),
        (400 * 86400, "Jan 2027"),
        (30 * 365 * 86400, "2030"),
    ],
)
def test_time_ticks_are_few_and_readable(span: int, label: str) -> None:
    """From hours to decades: at most seven ticks, in order, inside the axis, labelled as a person writes dates."""
    lo = 1_788_264_000.0  # 2026-09-01 12:00 UTC
    ticks = history_svg.time_ticks(lo, lo + span)
    assert 2 <= len(ticks) <= history_svg.MAX_TICKS
    assert [t for t, _ in ticks] == sorted(t for t, _ in ticks) and all(lo <= t <= lo + span for t, _ in ticks)
    assert label in [text for _, text in ticks], ticks


def test_a_date_far_in_the_future_draws() -> None:
    """A committer date past year 9999 (git accepts any number) is clamped when read, and the picture still draws."""
    far = history.Point("e" * 40, 10**13, "s", "freeze.yaml", "measured", "", 1, 10)
    ET.fromstring(history_svg.render(history.History("main", "e" * 40, (_point(0, 1), far))))


STATES = st.sampled_from(["measured", "measured", "measured", "absent", "invalid", "unreadable"])
POINTS = st.lists(
    st.tuples(STATES, st.integers(0, 50), st.integers(0, 10**6), st.none() | st.integers(0, 60), st.text(max_size=20)),
    min_size=1,
    max_size=60,
)


@given(POINTS)
def test_any_history_draws_a_well_formed_picture(rows: list[tuple[str, int, int, int | None, str]]) -> None:
    """For any run of ledger states, the SVG parses, every shaded gap is an invalid or unreadable run, and there is
    one entries dot per change of the measured value."""
    points = tuple(
        history.Point(f"{i:040x}", 1_790_000_000 + i * 86400, subject, "freeze.yaml", state, "why", n, size, cap, cap)
        if state == "measured"
        else history.Point(f"{i:040x}", 1_790_000_000 + i * 86400, subject, "freeze.yaml", state, "why")
        for i, (state, n, size, cap, subject) in enumerate(rows)
    )
    root = ET.fromstring(history_svg.render(history.History("main", "f" * 40, points)))
    values = [p.entries if p.state == "measured" else None for p in points]
    changes = sum(v is not None and (i == 0 or values[i - 1] != v) for i, v in enumerate(values))
    dots = [c for c in root.iter(f"{SVG_NS}circle") if c.get("fill") == history_svg.SERIES["entries"]]
    assert len(dots) == changes
    gaps = [
        r
        for r in root.iter(f"{SVG_NS}rect")
        if r.get("fill") == history_svg.SERIES["gap"] and r.find(f"{SVG_NS}title") is not None
    ]
    runs = sum(
        p.state in ("invalid", "unreadable") and (i == 0 or points[i - 1].state not in ("invalid", "unreadable"))
        for i, p in enumerate(points)
    )
    assert len(gaps) == 2 * runs  # one band per run in each of the two panels


@given(POINTS, st.integers(-(10**6), 10**7), st.lists(st.text(max_size=60), max_size=5), st.none() | st.integers(0, 50))
def test_any_proposal_draws_after_the_tip(
    rows: list[tuple[str, int, int, int | None, str]], offset: int, ids: list[str], entries: int | None
) -> None:
    """Whatever the history, the pull request's date (even before the tip) and its entry ids, the SVG parses, every
    id is inside text, and the proposal's diamond is never left of a commit's dot."""
    points = tuple(
        history.Point(f"{i:040x}", 1_790_000_000 + i * 3600, subject, "freeze.yaml", state, "why", n, size, cap, cap)
        if state == "measured"
        else history.Point(f"{i:040x}", 1_790_000_000 + i * 3600, subject, "freeze.yaml", state, "why")
        for i, (state, n, size, cap, subject) in enumerate(rows)
    )
    when = points[-1].when + offset
    measured = history.Point("c" * 40, when, "pr", "freeze.yaml", "measured", "", entries, 10, None, None)
    shown = measured if entries is not None else history.Point("c" * 40, when, "pr", "freeze.yaml", "absent", "gone")
    proposal = history.Proposal(shown, "d" * 40, tuple(ids), ())
    root = ET.fromstring(history_svg.render(history.History("main", "f" * 40, points, proposal=proposal)))
    dots = [float(c.get("cx") or 0) for c in root.iter(f"{SVG_NS}circle")]
    diamonds = [p for p in root.iter(f"{SVG_NS}path") if p.get("fill") == history_svg.SERIES["pr"]]
    assert len(diamonds) == (2 if entries is not None else 0)
    for d in diamonds:
        assert all(float((d.get("d") or "M0").split()[0][1:]) >= x - 0.05 for x in dots)


@given(st.text())
def test_any_text_stays_text(text: str) -> None:
    """Whatever a commit subject or file name holds, the escaped form is one XML text node with no markup."""
    element = ET.fromstring(f"<t>{history_svg.esc(text, 10_000)}</t>")
    assert len(element) == 0


def test_this_repositorys_own_history(tmp_path: Path) -> None:
    """This repository's real history (it keeps no freeze ledger) walks without a crash and says so; a shallow
    clone of it says where its history is cut."""
    walked = history.collect(Repo(ROOT), "HEAD")
    assert len(walked.points) > 100 and {p.state for p in walked.points} == {"absent"}
    lines = history.text_lines(walked)
    assert "no commit has a readable ledger: nothing to draw" in lines
    ET.fromstring(history_svg.render(walked))
    shallow = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "5", ROOT.as_uri(), str(shallow)], check=True)
    cut = history.collect(Repo(shallow), "HEAD")
    # Every first-parent commit the clone holds: 5, or more when a merge within the depth brought older ones along.
    held = subprocess.run(
        ["git", "-C", str(shallow), "rev-list", "--first-parent", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert len(held) >= 5 and len(cut.points) == len(held) and cut.shallow
    assert any(line.startswith("shallow clone: history starts at ") for line in history.text_lines(cut))


@pytest.mark.parametrize(
    ("kind", "detail"),
    [("folder", "not a regular file (mode 40000)"), ("symlink", "not a regular file (mode 120000)")],
)
def test_a_ledger_that_is_not_a_file_is_an_invalid_point(tmp_path: Path, kind: str, detail: str) -> None:
    """A ledger path holding a folder or a symlink at some commit is an invalid point with the mode, never a read
    of the link's target or a crash."""
    repo = history_repo.DatedRepo(tmp_path / "repo")
    repo.commit("ledger", {"freeze.yaml": history_repo.ledger(2)})
    if kind == "folder":
        repo.commit("folder", {"freeze.yaml": None, "freeze.yaml/x": "y\n"})
    else:
        repo.write({"freeze.yaml": None})
        (repo.path / "freeze.yaml").symlink_to("/etc/passwd")
        repo.commit("link")
    walked = history.collect(Repo(repo.path), "HEAD")
    assert [p.state for p in walked.points] == ["measured", "invalid"]
    assert walked.points[-1].detail == f"freeze.yaml is {detail}"


def test_cli_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown branch, a folder of receipts that is not one, and an unwritable picture are usage errors."""
    repo, _ = history_repo.build(tmp_path / "repo")
    assert cli.main(["history", "--repo", str(repo.path), "--branch", "nope"]) == 2
    assert "'nope' is not a commit" in capsys.readouterr().err
    assert cli.main(["history", "--repo", str(repo.path), "--receipts", str(tmp_path / "none")]) == 2
    assert cli.main(["history", "--repo", str(repo.path), "--svg", str(tmp_path / "no" / "x.svg")]) == 2
    assert cli.main(["history", "--repo", str(repo.path), "--limit", "3"]) == 0
    assert ": 3 commits" in capsys.readouterr().out


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def screenshot(svg: Path, png: Path) -> None:
    """Headless Chromium's rendering of the SVG at its own size."""
    height = ET.parse(svg).getroot().get("height")
    with tempfile.TemporaryDirectory(prefix="chromium-") as profile:
        subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                f"--user-data-dir={profile}",
                f"--window-size=960,{height}",
                f"--screenshot={png}",
                svg.as_uri(),
            ],
            capture_output=True,
            timeout=120,
            check=True,
        )


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed")
def test_chromium_renders_the_picture(tmp_path: Path, case: dict[str, str]) -> None:
    """Chromium draws the SVG at 960 px and its own height, and the picture is not blank."""
    svg = tmp_path / "history.svg"
    svg.write_text(case["history.svg"], "utf-8")
    png = tmp_path / "history.png"
    screenshot(svg, png)
    data = png.read_bytes()
    assert png_size(data) == (960, int(ET.fromstring(case["history.svg"]).get("height") or 0))
    assert len(data) > 20_000  # a blank page compresses to a few hundred bytes


def main(argv: list[str]) -> int:
    """Rewrite the goldens (and with --png the screenshot and its stamp)."""
    CASE.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, content in render_case(Path(tmp)).items():
            (CASE / name).write_text(content, "utf-8")
    if "--png" in argv:
        screenshot(CASE / "history.svg", CASE / "history.png")
        digest = hashlib.sha256((CASE / "history.svg").read_bytes()).hexdigest()
        (CASE / "png-sources.sha256").write_text(f"{digest}  history.png\n", "utf-8")
    print(f"goldens written to {CASE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def test_the_note_counts_in_words_and_names_the_file_at_fault() -> None:
    """One commit, one entry: singular nouns; a baseline whose configuration is unusable is not called an invalid
    ledger (the note quotes the point's own detail)."""
    one = history.Point("a" * 40, 0, "s", "freeze.yaml", "measured", entries=1, size=10)
    note = history.summary_note(history.History("main", "a" * 40, (one,)))
    assert note is not None and note.startswith("1 first-parent commit of main:") and "peak 1 entry on" in note
    bad = history.Point("b" * 40, 1, "s", "freeze.yaml", "invalid", detail=".evidence-gate.yml is not a mapping")
    note = history.summary_note(history.History("main", "b" * 40, (one, bad)))
    assert note is not None and "at the baseline .evidence-gate.yml is not a mapping" in note
    assert "ledger is invalid" not in note and "1 commit drawn as gaps" in note


def test_one_commit_is_counted_in_the_singular(git_repo: GitRepo) -> None:
    """A history of one commit says `1 commit`, not `1 commits`."""
    git_repo.commit("one", {"a.txt": "1\n"})
    first = history.text_lines(history.collect(Repo(git_repo.path), "HEAD"))[0]
    assert ": 1 commit, " in first
