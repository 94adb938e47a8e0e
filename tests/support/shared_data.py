"""Where the GitHub API reference data lives: `../shared` beside the checkout, or $EVIDENCE_GATE_SHARED."""

from __future__ import annotations

import os
from pathlib import Path

SHARED = Path(os.environ.get("EVIDENCE_GATE_SHARED") or Path(__file__).resolve().parents[3] / "shared")
GITHUB_API = SHARED / "github-api"
EVENTS = GITHUB_API / "events"
