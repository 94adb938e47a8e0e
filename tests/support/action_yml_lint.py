"""Read action.yml as the Actions runner does: `${{ }}` only where its schema allows it, with its contexts.

The runner loads an action with `src/Runner.Worker/action_yaml.json` (actions/runner): a field whose definition
lists `context` takes expressions naming only those contexts; every other string (names, descriptions, `image`,
`using`, keys) is read as a literal, and act refuses `${{` there ("expressions are not allowed here"), while
GitHub's runner fails the load on a named value it does not know there. The table below is that schema's `context`
lists, by the path of the field they govern (`*` is any key or list item; `name()` is a function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

# Built-in expression functions (docs: "Expressions", functions); status functions only in `if` conditions.
FUNCTIONS = frozenset({"contains", "startswith", "endswith", "format", "join", "tojson", "fromjson"})
LITERALS = frozenset({"true", "false", "null", "nan", "infinity"})

_STEP_CONTEXTS = ("github", "inputs", "strategy", "matrix", "steps", "job", "runner", "env", "hashFiles()")
# action_yaml.json: input-default-context, output-value, container-runs-args/-env, string-steps-context, step-env.
ALLOWED: dict[tuple[str, ...], tuple[str, ...]] = {
    ("inputs", "*", "default"): ("github", "strategy", "matrix", "job", "runner", "hashFiles()"),
    ("outputs", "*", "value"): ("github", "strategy", "matrix", "steps", "inputs", "job", "runner", "env"),
    ("runs", "args", "*"): ("inputs",),
    ("runs", "env", "*"): ("inputs",),
    ("runs", "steps", "*", "name"): _STEP_CONTEXTS,
    ("runs", "steps", "*", "run"): _STEP_CONTEXTS,
    ("runs", "steps", "*", "working-directory"): _STEP_CONTEXTS,
    ("runs", "steps", "*", "env", "*"): _STEP_CONTEXTS,
    ("runs", "steps", "*", "with", "*"): _STEP_CONTEXTS,
}

_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)
_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")
_NAME = re.compile(r"(?<![.\w-])([A-Za-z_][A-Za-z0-9_-]*)(\s*\()?")


@dataclass(frozen=True)
class Finding:
    """One place where the runner would refuse the file: line (1-based), field path, what is wrong."""

    line: int
    path: str
    message: str

    def __str__(self) -> str:
        return f"action.yml:{self.line}: {self.path}: {self.message} [action-yml-expression]"


def lint_file(path: Path) -> list[Finding]:
    """Findings for the action metadata file at `path`."""
    return lint_text(path.read_text("utf-8"))


def lint_text(text: str) -> list[Finding]:
    """Findings for action metadata given as YAML text (a file the runner cannot parse is one finding)."""
    try:
        root = yaml.compose(text)
    except yaml.YAMLError as exc:
        return [Finding(1, "", f"not YAML the runner can read: {exc}")]
    if root is None:
        return [Finding(1, "", "empty file; the runner needs `runs:`")]
    findings: list[Finding] = []
    _walk(root, (), text, findings)
    return findings


def _walk(node: yaml.Node, path: tuple[str, ...], source: str, findings: list[Finding]) -> None:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = str(key.value)
            _check(key, (*path, name), None, source, findings)  # keys are never expressions
            _walk(value, (*path, name), source, findings)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, str(index)), source, findings)
    elif isinstance(node, yaml.ScalarNode):
        _check(node, path, _allowed(path), source, findings)


def _allowed(path: tuple[str, ...]) -> tuple[str, ...] | None:
    for pattern, contexts in ALLOWED.items():
        if len(pattern) == len(path) and all(p in ("*", part) for p, part in zip(pattern, path, strict=True)):
            return contexts
    return None


def _check(
    node: yaml.Node, path: tuple[str, ...], allowed: tuple[str, ...] | None, source: str, out: list[Finding]
) -> None:
    text = str(node.value)
    if "${{" not in text:
        return
    where = ".".join(path)
    # The line of the first `${{` in the node's source (a block scalar starts at its `>-` or `|`).
    found = source.find("${{", node.start_mark.index, node.end_mark.index)
    line = source.count("\n", 0, found if found >= 0 else node.start_mark.index) + 1
    if allowed is None:
        out.append(Finding(line, where, "expressions are not allowed here; write it in words"))
        return
    if text.count("${{") != len(_EXPRESSION.findall(text)):
        out.append(Finding(line, where, "an expression is not closed with `}}`"))
    values = {c.lower() for c in allowed if not c.endswith("()")}
    functions = FUNCTIONS | {c[:-2].lower() for c in allowed if c.endswith("()")}
    for body in _EXPRESSION.findall(text):
        for name, call in _NAME.findall(_STRING_LITERAL.sub("''", body)):
            if name.lower() in (functions if call else values | LITERALS):
                continue
            kind = "function" if call else "named-value"
            out.append(Finding(line, where, f"unrecognized {kind} {name!r}; allowed here: {', '.join(allowed)}"))
