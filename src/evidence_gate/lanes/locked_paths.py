"""Pure path rules of the locked-evidence lane: globs, look-alike folding, hostile names, `.gitattributes` lines.

Glob semantics (locked globs and `.gitattributes` patterns share one matcher): a pattern is anchored at the
repository root; `*` matches within one path segment, `?` one character of a segment, `[abc]`/`[!abc]` a class;
`**` as a whole segment matches zero or more segments (`**/x` finds `x` at any depth); a trailing `/**` matches the
folder itself and everything below it (a file, symlink or submodule put where the folder was is still caught); a
trailing `/` means the same as `/**`.
"""

from __future__ import annotations

import posixpath
import re
import unicodedata
from functools import cache, lru_cache

from evidence_gate import visible
from evidence_gate.records import dataclass
from evidence_gate.visible import INVISIBLE, is_hostile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable

# The one sanitiser (visible.py), under the name the path rules' callers know it by.
display_path = visible.line
FIX_LOCKED = "locked evidence may only change in a human-reviewed PR to the base branch"


def _describe_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:
        return f"byte 0x{code - 0xDC00:02X} that is not valid UTF-8"
    name = unicodedata.name(ch, "")
    kind = {"Cc": "control", "Cf": "invisible format", "Cs": "surrogate", "Zl": "separator", "Zp": "separator"}.get(
        unicodedata.category(ch), "invisible"
    )
    return f"U+{code:04X} {name} ({kind} character)".replace("  ", " ")


def hostile_chars(path: str) -> list[str]:
    """Descriptions of every distinct hostile character in `path`, in order of first appearance."""
    seen = dict.fromkeys(ch for ch in path if is_hostile(ch))
    return [_describe_char(ch) for ch in seen]


def git_dir_alias(path: str) -> str | None:
    """A segment that a checkout could treat as the repository's own `.git` (`.GIT`, `.git.`, `GIT~1`), else None.

    Such a tree entry could plant hooks or config; git refuses it only when `core.protectNTFS`/`protectHFS` apply."""
    for seg in path.split("/"):
        if fold(seg) in {".git", "git~1"}:
            return seg
    return None


@lru_cache(maxsize=1 << 16)
def fold(path: str) -> str:
    """The name a case-insensitive, normalising file system sees: NFKC case fold, no invisible characters, no
    trailing dots or spaces on a segment (Windows drops them), so `Fixtures/`, `ﬁxtures/` and `fixtures./` meet."""
    text = unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", path).casefold())
    text = "".join(ch for ch in text if unicodedata.category(ch) != "Cf" and ord(ch) not in INVISIBLE)
    return "/".join(seg.rstrip(". ") or seg for seg in text.split("/"))


def _segment_regex(seg: str) -> str:
    """One path segment's glob as a regex that cannot backtrack badly.

    Between the first and the last `*`, each literal piece is placed at its leftmost occurrence and the choice is
    kept (an atomic group): for fixed-length pieces that is never worse than a later placement, and it turns
    `*a*a*a*a…` against a long name from polynomial-to-exponential work into linear work.
    """
    pieces: list[list[str]] = [[]]
    i = 0
    while i < len(seg):
        ch = seg[i]
        if ch == "*":
            while i + 1 < len(seg) and seg[i + 1] == "*":
                i += 1
            pieces.append([])
        elif ch == "?":
            pieces[-1].append("[^/]")
        elif ch == "[":
            end = seg.find("]", i + 2)
            if end < 0:
                pieces[-1].append(re.escape(ch))
            else:
                body = seg[i + 1 : end]
                negate = body[:1] in {"!", "^"}
                body = body[1:] if negate else body
                pieces[-1].append("[" + ("^/" if negate else "") + body.replace("\\", "\\\\") + "]")
                i = end
        elif ch == "\\" and i + 1 < len(seg):
            i += 1
            pieces[-1].append(re.escape(seg[i]))
        else:
            pieces[-1].append(re.escape(ch))
        i += 1
    texts = ["".join(p) for p in pieces]
    if len(texts) == 1:
        return texts[0]
    middle = "".join(f"(?>[^/]*?{t})" for t in texts[1:-1] if t)
    return f"{texts[0]}{middle}[^/]*{texts[-1]}"


@cache
def glob_regex(pattern: str) -> re.Pattern[str]:
    """The compiled matcher for a root-anchored glob (see the module docstring)."""
    pat = pattern.lstrip("/")
    if pat.endswith("/"):
        pat += "**"
    segs = pat.split("/")
    parts: list[str] = []
    for n, seg in enumerate(segs):
        last = n == len(segs) - 1
        if seg == "**":
            # `a/**` also matches `a` itself; `**/b` matches `b` at any depth.
            parts.append("(?:/.*)?" if last and n else "(?:.*/)?" if not last else ".*")
        else:
            prefix = "" if n == 0 or segs[n - 1] == "**" else "/"
            parts.append(prefix + _segment_regex(seg))
    return re.compile("".join(parts) + r"\Z", re.DOTALL)


def glob_matches(pattern: str, path: str) -> bool:
    """Whether `path` (repository-relative, `/`-separated) matches the glob `pattern`."""
    return glob_regex(pattern).match(path) is not None


def literal_prefix(pattern: str) -> str:
    """The deepest folder a glob is confined to (`fixtures/**` → `fixtures`, `docs/*.md` → `docs`, `**/x` → ``)."""
    fixed = []
    for seg in pattern.lstrip("/").rstrip("/").split("/")[:-1]:
        if any(c in seg for c in "*?[\\"):
            break
        fixed.append(seg)
    return "/".join(fixed)


def locked_folder(pattern: str) -> str | None:
    """The folder a `folder/**` glob locks whole (its tree id is recorded), else None."""
    pat = pattern.lstrip("/")
    pat = pat + "**" if pat.endswith("/") else pat
    if pat.endswith("/**") and literal_prefix(pat) == pat[:-3]:
        return pat[:-3]
    return None


def ancestors(path: str) -> list[str]:
    """Every proper ancestor folder of `path`, nearest first (`a/b/c` → `a/b`, `a`)."""
    out = []
    parent = posixpath.dirname(path)
    while parent:
        out.append(parent)
        parent = posixpath.dirname(parent)
    return out


def symlink_escapes(link_path: str, target: str) -> bool:
    """Whether a symlink's target can leave the repository, judged lexically (`a/..` is not collapsed, since `a`
    could itself be a link): absolute targets, and any `..` that climbs above the root."""
    if target.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", target):
        return True
    depth = link_path.count("/")
    for seg in re.split(r"[/\\]", target):
        if fold(seg) == ".git":
            return True  # into the repository's own metadata: hooks and config live there
        if seg == "..":
            depth -= 1
            if depth < 0:
                return True
        elif seg not in {"", "."}:
            depth += 1
    return False


# ---- .gitattributes ---------------------------------------------------------------------------------------------

# Attributes that only change how a diff or merge is *presented*; the lane compares object ids, so these cannot hide
# a change from the gate. Every other attribute (text, eol, crlf, working-tree-encoding, filter, ident, export-ignore,
# export-subst, binary, lockable, and unknown names that may be macros) can change the bytes or the presence of a
# file in a checkout or an archive, and so counts.
PRESENTATION_ONLY = frozenset({"diff", "merge", "whitespace", "conflict-marker-size", "delta", "encoding"})


def affects_checkout(attr_name: str) -> bool:
    """Whether an attribute can change what a checkout (or `git archive`) of a path contains."""
    return attr_name not in PRESENTATION_ONLY and not attr_name.startswith(("linguist-", "gitlab-"))


@dataclass(frozen=True)
class AttrLine:
    """One meaningful line of a `.gitattributes` file: the pattern and the checkout-affecting attribute tokens."""

    line: int
    pattern: str
    tokens: tuple[str, ...]
    macro: bool = False

    @property
    def key(self) -> tuple[str, tuple[str, ...], bool]:
        """What a line means, independent of where it sits."""
        return (self.pattern, self.tokens, self.macro)


def _unquote(text: str) -> tuple[str, str]:
    """A C-quoted pattern at the start of `text` (as git writes it) and the rest of the line."""
    escapes = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}
    raw = bytearray()
    i = 1
    while i < len(text) and text[i] != '"':
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            if re.match(r"[0-7]{3}", text[i + 1 : i + 4]):
                raw.append(int(text[i + 1 : i + 4], 8))
                i += 4
                continue
            raw += escapes.get(text[i + 1], text[i + 1]).encode("utf-8", "surrogateescape")
            i += 2
            continue
        raw += ch.encode("utf-8", "surrogateescape")
        i += 1
    return raw.decode("utf-8", "surrogateescape"), text[i + 1 :]


def parse_attributes(data: bytes) -> list[AttrLine]:
    """The lines of a `.gitattributes` file that carry checkout-affecting attributes (`[attr]` macros included)."""
    lines = []
    for number, raw in enumerate(data.decode("utf-8", "surrogateescape").split("\n"), 1):
        text = raw.strip(" \t\r")
        if not text or text.startswith("#"):
            continue
        if text.startswith('"'):
            pattern, rest = _unquote(text)
        else:  # git ends a pattern at a space, tab or carriage return (`a.json\reol=crlf` sets eol)
            pattern, _, rest = text.replace("\t", " ").replace("\r", " ").partition(" ")
        tokens = tuple(t for t in rest.split() if affects_checkout(t.lstrip("-!").partition("=")[0]))
        if tokens:
            macro = pattern.startswith("[attr]")
            lines.append(AttrLine(number, pattern[6:] if macro else pattern, tokens, macro))
    return lines


def attr_pattern_glob(attr_dir: str, pattern: str) -> str | None:
    """A `.gitattributes` pattern in folder `attr_dir` as a root-anchored glob; None for a negative pattern (git
    rejects those). A pattern without `/` matches a name at any depth below the file's folder."""
    if pattern.startswith("!"):
        return None
    body = pattern.rstrip("/")
    if "/" not in body:
        body = "**/" + body
    body = body.lstrip("/")
    if pattern.endswith("/"):
        body += "/**"
    return f"{attr_dir}/{body}" if attr_dir else body


# A pattern with more `**` than this is taken to apply everywhere: matching `**/a/**/a/**/a/...` against a deep path
# backtracks over every way to split it, and a patch may bring thousands of such lines.
MAX_PATTERN_GLOBSTARS = 4


def first_matching(attr_dir: str, pattern: str, paths: Iterable[str]) -> list[str]:
    """The paths an attributes line at `attr_dir` applies to, in the given order; case-insensitive, as on a
    `core.ignorecase` checkout, so the answer errs on the side of "it applies"."""
    glob = attr_pattern_glob(attr_dir, pattern)
    if glob is None:
        return []
    if glob.count("**") > MAX_PATTERN_GLOBSTARS:
        return list(paths)
    regex = glob_regex(fold(glob))
    return [p for p in paths if regex.match(fold(p)) is not None]
