"""Every link the docs and the reports print lands on a real page and a real heading: a row's docs page (check run,
job summary), the decision table's `row-ID` anchors (SARIF helpUri, terminal), and every relative link between the
README and the pages under docs/."""

from __future__ import annotations

import re
from urllib.parse import urljoin, urlsplit

from evidence_gate import decision
from evidence_gate.report import row_docs
from support import doc_pages
from support.doc_pages import ROOT

README_URL = "https://github.com/o/r/blob/main/README.md"
# The gate's own files (the pages' `src/pkg/...`, `tests/test_x.py` are a user's repository, examples).
REPO_PATH = re.compile(
    r"`((?:src/evidence_gate|tests/(?:unit|sealed|action|support)|scripts|bench|\.github)/[^`*\s]+?\.\w+)`"
)


def _resolves(page: str) -> bool:
    """`page` (`docs/x.md#anchor`, relative to the root) names an existing file and, if given, a heading on it."""
    path, _, fragment = page.partition("#")
    target = ROOT / path
    if not target.is_file():
        return False
    return not fragment or fragment in doc_pages.anchors(target.read_text("utf-8"))


def test_every_rows_page_and_anchor_exist() -> None:
    """Each row's docs page (the check run's and summary's link) exists and has the anchor; an aborted run's link
    and an unknown row's too."""
    assert set(decision.row_ids()) <= row_docs.known_rows()
    for row in row_docs.known_rows():
        page = row_docs.info(row).page
        assert page.startswith("docs/") and _resolves(page), (row, page)
    assert _resolves(row_docs.EXIT_CODES)
    assert _resolves(row_docs.info("a-row-this-version-does-not-know").page)


def test_every_row_url_points_at_its_line_of_the_decision_table() -> None:
    """SARIF's helpUri and the terminal's docs link: beside the README, on the decision table's page, `#row-ID`."""
    anchors = doc_pages.anchors(doc_pages.read(row_docs.DECISION_ROWS))
    for row in decision.row_ids():
        url = row_docs.row_url(README_URL, row)
        assert url == f"https://github.com/o/r/blob/main/docs/decision-rows.md#row-{row}"
        assert urlsplit(url).fragment in anchors, row
    page = row_docs.docs_url(README_URL, row_docs.info("freeze-id-added").page)
    assert page == "https://github.com/o/r/blob/main/docs/freeze-ledger.md#freeze-ledger"


def test_every_relative_link_in_the_docs_resolves() -> None:
    """Every relative link in README.md and docs/*.md names an existing file, and a Markdown file's fragment is a
    heading (or an `<a id>`) on that file; a bare `#fragment` is one on the same page."""
    broken = []
    for document in doc_pages.documents():
        here = document.relative_to(ROOT).as_posix()
        for link in doc_pages.links(document.read_text("utf-8")):
            if re.match(r"[a-z][a-z0-9+.-]*:", link):
                continue  # https:, mailto:
            target = urljoin(here, link)
            path, _, fragment = target.partition("#")
            resolved = ROOT / (path or here)
            if not resolved.exists():
                broken.append(f"{here}: {link} (no {path})")
            elif (
                fragment and resolved.suffix == ".md" and fragment not in doc_pages.anchors(resolved.read_text("utf-8"))
            ):
                broken.append(f"{here}: {link} (no heading #{fragment})")
    assert not broken, "\n".join(broken)


def test_docs_pages_name_real_files() -> None:
    """Every file of the gate the pages name in backticks exists (a move or a rename that forgets them fails here)."""
    missing = []
    for page in doc_pages.pages():
        for path in REPO_PATH.findall(page.read_text("utf-8")):
            if not any(part.isupper() for part in path.split("/")[:-1]) and not (ROOT / path).exists():
                missing.append(f"docs/{page.name}: {path}")
    assert not missing, missing


def test_the_slug_follows_githubs_rules() -> None:
    """Punctuation goes, spaces become hyphens, case folds, code and links keep their text, repeats are numbered."""
    assert doc_pages.slug("Properties: the sealed run") == "properties-the-sealed-run"
    assert doc_pages.slug("Never `pull_request_target` with a checkout of the PR's code") == (
        "never-pull_request_target-with-a-checkout-of-the-prs-code"
    )
    assert doc_pages.slug("The delta against the base branch's last receipt") == (
        "the-delta-against-the-base-branchs-last-receipt"
    )
    assert doc_pages.anchors("# A\n\n```\n# not a heading\n```\n## A\n") == {"a", "a-1"}
