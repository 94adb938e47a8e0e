"""Render the report goldens: what the check run and the job summary show for each case in tests/report_cases.

    python scripts/render_reports.py            # rewrite the Markdown goldens of every case
    python scripts/render_reports.py --png      # also render them as GitHub does and screenshot them
    python scripts/render_reports.py --check    # exit 1 when a Markdown golden differs (what the tests check)
    python scripts/render_reports.py --receipt receipt.json --out preview/ [--png]   # look at any receipt

Each case folder holds its input, `receipt.json` (from a real gate run, see the folder's README), and optionally
`context.json` (`notes`, the runner `env` the links come from, `artifact_id`, `check_name`, and `previous`: another
case's receipt, as the base branch's last receipt the delta is against). The outputs beside it:
`check-title.txt`, `check-summary.md`, `check-text.md`, `annotations.json`, `job-summary.md`, `cli.txt` (what
`evidence-gate check` prints at 80 columns without colour), `receipt.sarif`, and with `--png`
`check-run.png` (title, summary and text, as on the pull request's Checks tab) and `job-summary.png` (for the
cases in PNG_CASES).

The PNGs come from `cmark-gfm` (table, autolink, strikethrough and tasklist extensions, as GitHub uses) wrapped in
GitHub-like CSS, screenshotted by headless Chromium in a 1280 px window, full height (the first 800 px are the
first screen). The page's column is GitHub's check-run column: 1012 px at most, beside the checks list.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from evidence_gate.receipt import delta as receipt_delta
from evidence_gate.report import check_run as check_report
from evidence_gate.report import job_summary, markdown_limits
from evidence_gate.report import registry as reporters

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "report_cases"
WIDTH = 1280  # the window the issue measures the first screen in (1280×800)
FIRST_SCREEN = 800
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
)
EXTENSIONS = ("table", "autolink", "strikethrough", "tasklist")
# Cases screenshotted by `--png` (the PNGs are large; the Markdown goldens of every case are checked in tests).
PNG_CASES = (
    "pass",
    "property-failed",
    "tampering",
    "many-findings",
    "human-patch",
    "fork-fallback",
    "freeze-entry-added",
    "config-invalid",
    "aborted",
)
PNG_STAMP = "png-sources.sha256"
# GitHub-like, written for this script: system font stack, 16px markdown body, GitHub's greys and borders.
CSS = """
body { margin: 0; background: #fff; color: #1f2328; }
.page { box-sizing: border-box; width: 100%; max-width: 1012px; padding: 24px 16px; }
.checkhead { font: 600 20px/1.25 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif;
  border-bottom: 1px solid #d1d9e0; padding-bottom: 8px; margin: 0 0 16px; }
.markdown-body { font: 16px/1.5 -apple-system, "Segoe UI", "Noto Sans", Helvetica, Arial, sans-serif,
  "Noto Color Emoji"; word-wrap: break-word; }
.markdown-body h2 { font-size: 1.5em; border-bottom: 1px solid #d1d9e0; padding-bottom: .3em; }
.markdown-body h3 { font-size: 1.25em; } .markdown-body h4 { font-size: 1em; }
.markdown-body h2, .markdown-body h3, .markdown-body h4 { font-weight: 600; line-height: 1.25;
  margin: 24px 0 16px; }
.markdown-body p, .markdown-body ul, .markdown-body pre, .markdown-body table, .markdown-body blockquote,
.markdown-body details { margin: 0 0 16px; }
.markdown-body ul { padding-left: 2em; } .markdown-body li + li { margin-top: .25em; }
.markdown-body code { font: 85%/1.45 ui-monospace, SFMono-Regular, "SF Mono", Menlo, Consolas,
  "Liberation Mono", monospace; background: rgba(129,139,152,.12); border-radius: 6px; padding: .2em .4em;
  white-space: break-spaces; }
.markdown-body pre { background: #f6f8fa; border-radius: 6px; padding: 16px; overflow: auto; line-height: 1.45; }
.markdown-body pre code { background: transparent; padding: 0; font-size: 85%; white-space: pre; }
.markdown-body table { border-collapse: collapse; display: block; width: max-content; max-width: 100%;
  overflow: auto; }
.markdown-body th, .markdown-body td { border: 1px solid #d1d9e0; padding: 6px 13px; }
.markdown-body tr:nth-child(2n) { background: #f6f8fa; } .markdown-body th { font-weight: 600; }
.markdown-body blockquote { color: #59636e; border-left: .25em solid #d1d9e0; padding: 0 1em; margin-left: 0; }
.markdown-body a { color: #0969da; text-decoration: none; } .markdown-body sub { color: #59636e; }
.markdown-body summary { cursor: pointer; }
"""


def case_dirs() -> list[Path]:
    """Every case folder (one with a receipt.json), sorted."""
    return sorted(p.parent for p in CASES.glob("*/receipt.json"))


def render_case(case: Path) -> dict[str, str]:
    """The golden files of one case, by file name, from its receipt and context."""
    context: dict[str, Any] = {}
    if (case / "context.json").exists():
        context = json.loads((case / "context.json").read_text("utf-8"))
    return render_receipt((case / "receipt.json").read_bytes(), context)


def render_receipt(data: bytes, context: dict[str, Any]) -> dict[str, str]:
    """The rendered files of one receipt (its bytes, for the sha256 the summary quotes), by file name."""
    receipt = json.loads(data)
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    env = context.get("env") or {}
    links = check_report.links_from(env, env.get("GITHUB_REPOSITORY", ""), receipt, str(context.get("artifact_id", "")))
    notes = tuple(context.get("notes") or ())
    delta = delta_of(context, receipt)
    report = check_report.build(receipt, digest, notes=notes, links=links, delta=delta)
    job = markdown_limits.truncate_bytes(
        job_summary.render(receipt, digest, notes, links, context.get("check_name", "evidence-gate"), delta=delta)
    )
    return {
        "check-title.txt": report.title + "\n",
        "check-summary.md": report.summary,
        "check-text.md": report.text,
        "annotations.json": json.dumps([a.to_json() for a in report.annotations], indent=1, ensure_ascii=False) + "\n",
        "job-summary.md": job,
        "cli.txt": reporters.render("text", receipt, reporters.Context(docs=links.docs, delta=delta)),
        "receipt.sarif": reporters.render("sarif", receipt, reporters.Context(docs=links.docs)),
    }


def delta_of(context: dict[str, Any], receipt: dict[str, Any]) -> receipt_delta.Delta | None:
    """The delta against the case named by `previous` (as the action shows it: `main's last receipt`), if any."""
    name = context.get("previous")
    if not name:
        return None
    found = receipt_delta.parse((CASES / name).read_bytes())
    if isinstance(found, str):
        return receipt_delta.Delta("main's last receipt", why_not=found)
    return receipt_delta.compare(found, receipt, "main's last receipt")


def png_sources(files: dict[str, str]) -> dict[str, tuple[str, str | None]]:
    """Each PNG's Markdown and heading: the check run (title, summary, text) and the job summary."""
    return {
        "check-run.png": (
            files["check-summary.md"] + "\n\n" + files["check-text.md"],
            files["check-title.txt"].strip(),
        ),
        "job-summary.png": (files["job-summary.md"], None),
    }


def png_stamp(files: dict[str, str]) -> str:
    """`sha256  png` lines: what each PNG was rendered from, so a test can tell a PNG older than its Markdown."""
    lines = []
    for png, (markdown, heading) in png_sources(files).items():
        digest = hashlib.sha256(f"{heading}\n{markdown}".encode()).hexdigest()
        lines.append(f"{digest}  {png}")
    return "\n".join(lines) + "\n"


def to_html(markdown: str) -> str:
    """GitHub-flavoured Markdown to HTML with cmark-gfm (raw HTML kept, as GitHub keeps `<details>`)."""
    args = ["cmark-gfm", "--unsafe", "--to", "html"]
    for ext in EXTENSIONS:
        args += ["--extension", ext]
    return subprocess.run(args, input=markdown, capture_output=True, text=True, check=True).stdout


def page(body_html: str, heading: str | None = None) -> str:
    """A standalone page: the rendered Markdown in GitHub-like CSS, with an optional check-run title."""
    head = f'<h1 class="checkhead">{html.escape(heading)}</h1>' if heading else ""
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{CSS}</style></head><body>'
        f'<div class="page">{head}<div class="markdown-body">{body_html}</div></div></body></html>'
    )


def _chromium(args: list[str], workdir: Path) -> str:
    profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
    proc = subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"chromium failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return proc.stdout


def screenshot(document: str, target: Path) -> None:
    """Screenshot `document` at GitHub's width and its full height."""
    with tempfile.TemporaryDirectory(prefix="render-") as tmp:
        work = Path(tmp)
        probe = work / "probe.html"
        probe.write_text(
            document.replace(
                "</body>", "<script>document.title = String(document.documentElement.scrollHeight);</script></body>"
            ),
            "utf-8",
        )
        dom = _chromium([f"--window-size={WIDTH},800", "--dump-dom", probe.as_uri()], work)
        found = re.search(r"<title>(\d+)</title>", dom)
        height = min(int(found.group(1)) if found else 4000, 16000)
        shot = work / "page.html"
        shot.write_text(document, "utf-8")
        _chromium([f"--window-size={WIDTH},{height}", f"--screenshot={target}", shot.as_uri()], work)


def preview(receipt: Path, out: Path, png: bool) -> int:
    """Render one receipt (say, a CI run's artifact) into `out`, screenshots too with `png`."""
    out.mkdir(parents=True, exist_ok=True)
    files = render_receipt(receipt.read_bytes(), {})
    for name, content in files.items():
        (out / name).write_text(content, "utf-8")
    if png:
        for name, (markdown, heading) in png_sources(files).items():
            screenshot(page(to_html(markdown), heading), (out / name).resolve())
    print(f"rendered {receipt} into {out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Write (or `--check`) every case's goldens; `--png` also screenshots them."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="compare instead of writing; exit 1 on a difference")
    parser.add_argument("--png", action="store_true", help="also render PNGs with cmark-gfm and headless chromium")
    parser.add_argument("cases", nargs="*", help="case folder names (default: all)")
    parser.add_argument("--receipt", type=Path, help="preview any receipt.json instead of the cases (with --out)")
    parser.add_argument("--out", type=Path, help="folder for the preview of --receipt")
    args = parser.parse_args(argv)
    if args.receipt:
        return preview(args.receipt, args.out or Path(), args.png)
    cases = [CASES / c for c in args.cases] if args.cases else case_dirs()
    if args.png and not (shutil.which("cmark-gfm") and Path(CHROMIUM).exists()):
        print(
            "render_reports: --png needs cmark-gfm and chromium (apt-get install cmark-gfm chromium)", file=sys.stderr
        )
        return 2
    drift = []
    for case in cases:
        for name, content in render_case(case).items():
            path = case / name
            if args.check:
                if not path.exists() or path.read_text("utf-8") != content:
                    drift.append(str(path.relative_to(ROOT)))
                continue
            path.write_text(content, "utf-8")
        if args.png and not args.check and case.name in PNG_CASES:
            files = render_case(case)
            for png, (markdown, heading) in png_sources(files).items():
                screenshot(page(to_html(markdown), heading), case / png)
            (case / PNG_STAMP).write_text(png_stamp(files), "utf-8")
        print(f"rendered {case.name}")
    if drift:
        print(
            "golden renders differ (regenerate with `python scripts/render_reports.py`):\n  " + "\n  ".join(drift),
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
