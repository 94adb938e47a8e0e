"""action.yml read as the Actions runner reads it: `${{ }}` only in the fields and contexts its schema allows."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.action_yml_lint import lint_file, lint_text

ROOT = Path(__file__).resolve().parents[2]

# The receipt-path input as released before issue 16: act refused the file, GitHub's runner failed its load.
OLD_RECEIPT_PATH = """\
name: x
description: y
inputs:
  receipt-path:
    description: >-
      Where the receipt is written, relative to the workspace (`${{ runner.temp }}/...` also works: the action
      maps it to the runner's temp folder in its container).
    default: receipt.json
runs:
  using: docker
  image: Dockerfile
"""


def _action(inputs: str = "", runs: str = "", outputs: str = "") -> str:
    text = "name: x\ndescription: y\n"
    if inputs:
        text += "inputs:\n" + inputs
    if outputs:
        text += "outputs:\n" + outputs
    return text + "runs:\n  using: docker\n  image: Dockerfile\n" + runs


def test_the_shipped_action_yml_loads() -> None:
    """The repository's action.yml has no expression the runner would refuse."""
    assert [str(f) for f in lint_file(ROOT / "action.yml")] == []


def test_the_released_receipt_path_description_is_refused() -> None:
    """The description that broke the action (issue 16) is a finding on its own line, naming the field."""
    findings = [str(f) for f in lint_text(OLD_RECEIPT_PATH)]
    assert findings == [
        "action.yml:6: inputs.receipt-path.description: expressions are not allowed here; write it in words"
        " [action-yml-expression]"
    ]


@pytest.mark.parametrize(
    "text",
    [
        _action(inputs="  t:\n    description: d\n    default: ${{ github.token }}\n"),
        _action(inputs="  t:\n    description: d\n    default: ${{ runner.temp }}/r.json\n"),
        _action(inputs="  t:\n    description: d\n    default: ${{ hashFiles('a/**') }}\n"),
        _action(inputs="  t:\n    description: d\n    default: \"${{ matrix.k || 'none' }}\"\n"),
        _action(inputs="  t:\n    description: d\n    default: \"${{ format('{0}', job.status) }}\"\n"),
        _action(inputs='  t:\n    description: d\n    default: "${{ github.event.pull_request.head.sha }}"\n'),
        _action(inputs="  t:\n    description: d\n    default: \"${{ contains('env.secrets', 'x') }}\"\n"),
        _action(runs="  args:\n    - ${{ inputs.t }}\n  env:\n    T: ${{ inputs.t }}\n"),
        _action(outputs="  o:\n    description: d\n    value: ${{ steps.s.outputs.o }}\n"),
    ],
)
def test_expressions_where_the_runner_takes_them(text: str) -> None:
    """Input defaults, args, env and output values take expressions naming the contexts the schema lists."""
    assert lint_text(text) == []


@pytest.mark.parametrize(
    ("text", "path", "message"),
    [
        (_action(inputs="  t:\n    description: ${{ runner.temp }}\n"), "inputs.t.description", "not allowed"),
        ("name: ${{ github.repository }}\nruns:\n  using: docker\n  image: Dockerfile\n", "name", "not allowed"),
        (_action(outputs="  o:\n    description: the ${{ github.sha }}\n"), "outputs.o.description", "not allowed"),
        (
            "name: x\nruns:\n  using: docker\n  image: docker://i:${{ github.sha }}\n",
            "runs.image",
            "not allowed",
        ),
        (_action(inputs="  t:\n    description: d\n    default: ${{ env.T }}\n"), "inputs.t.default", "'env'"),
        (_action(inputs="  t:\n    description: d\n    default: ${{ secrets.T }}\n"), "inputs.t.default", "'secrets'"),
        (_action(inputs="  t:\n    description: d\n    default: ${{ inputs.u }}\n"), "inputs.t.default", "'inputs'"),
        (_action(inputs="  t:\n    description: d\n    default: ${{ steps.s.x }}\n"), "inputs.t.default", "'steps'"),
        (_action(runs="  args:\n    - ${{ github.sha }}\n"), "runs.args.0", "'github'"),
        (_action(runs="  env:\n    T: ${{ hashFiles('x') }}\n"), "runs.env.T", "function 'hashFiles'"),
        (
            _action(inputs="  t:\n    description: d\n    default: ${{ hashFiles }}\n"),
            "inputs.t.default",
            "'hashFiles'",
        ),
        (_action(inputs="  t:\n    description: d\n    default: ${{ always() }}\n"), "inputs.t.default", "'always'"),
        (_action(inputs="  t:\n    description: d\n    default: ${{ github.token\n"), "inputs.t.default", "not closed"),
        (_action(inputs="  ${{ github.sha }}:\n    description: d\n"), "inputs.${{ github.sha }}", "not allowed"),
    ],
)
def test_expressions_the_runner_refuses(text: str, path: str, message: str) -> None:
    """`${{` outside an expression field, or a context the field does not list, is one finding naming the field."""
    findings = lint_text(text)
    assert len(findings) == 1, findings
    assert findings[0].path == path and message in findings[0].message, findings[0]
    assert str(findings[0]).endswith("[action-yml-expression]")
