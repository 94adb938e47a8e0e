"""The action's inputs (`INPUT_*`, read both as `INPUT_A-B` and `INPUT_A_B`), parsed into one value every mode
takes, and the step's exit code derived from the verdict and `fail-on`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date

from evidence_gate.errors import EXIT_PASS, EXIT_USAGE, GateError

# The input whose name states the risk it accepts: under pull_request_target the job holds a write token and the
# repository's secrets, and the property lane executes the pull request's code.
UNSAFE_INPUT = "unsafe-run-pr-code-with-write-token"
DEFAULTS = {
    "github-token": "",
    "check-name": "evidence-gate",
    "run-properties": "true",
    "upload-artifact": "true",
    "artifact-name": "evidence-gate-receipt",
    "receipt-path": "receipt.json",
    "today": "",
    "working-directory": ".",
    "max-annotations": "200",
    "job-summary": "true",
    "fail-on": "failure",
    UNSAFE_INPUT: "false",
    "mode": "gate",
    "shard": "",
}
MODES = ("gate", "merge", "publish")
FAIL_ON = ("failure", "never")
MAX_ANNOTATIONS_LIMIT = 10_000


@dataclass(frozen=True)
class Inputs:
    """The action's inputs, parsed."""

    token: str
    check_name: str
    run: bool
    upload: bool
    artifact_name: str
    receipt_path: str
    today: date | None
    working_directory: str = "."
    max_annotations: int = 200
    job_summary: bool = True
    fail_on: str = "failure"
    unsafe_pr_code: bool = False
    mode: str = "gate"
    shard: tuple[int, int] | None = None


def read_input(env: Mapping[str, str], name: str) -> str:
    """An input under either spelling the runner uses (`INPUT_CHECK-NAME` or `INPUT_CHECK_NAME`), else its default."""
    for key in (f"INPUT_{name.upper()}", f"INPUT_{name.upper().replace('-', '_')}"):
        value = env.get(key)
        if value is not None and value.strip():
            return value.strip()
    return DEFAULTS[name]


def _bool(env: Mapping[str, str], name: str) -> bool:
    value = read_input(env, name).lower()
    if value in ("true", "yes", "1", "on"):
        return True
    if value in ("false", "no", "0", "off"):
        return False
    raise GateError(f"input {name} is {value!r}, not true or false", fix=f"set `{name}: true` or `false`", usage=True)


def _check_name(env: Mapping[str, str]) -> str:
    check_name = read_input(env, "check-name")
    if len(check_name) > 100 or any(not c.isprintable() for c in check_name):
        raise GateError(
            "input check-name must be printable and at most 100 characters",
            usage=True,
            fix="set `check-name:` to a short name such as evidence-gate",
        )
    return check_name


def _count(env: Mapping[str, str], name: str, limit: int) -> int:
    text = read_input(env, name)
    if not text.isdigit() or int(text) > limit:
        raise GateError(
            f"input {name} is {text!r}, not a whole number from 0 to {limit}",
            fix=f"set `{name}:` to a number such as {DEFAULTS[name]}",
            usage=True,
        )
    return int(text)


def read_inputs(env: Mapping[str, str]) -> Inputs:
    """All inputs; a malformed one is a usage error that names it."""
    today_text = read_input(env, "today")
    try:
        today = date.fromisoformat(today_text) if today_text else None
    except ValueError as exc:
        raise GateError(
            f"input today is {today_text!r}, not YYYY-MM-DD", fix="leave it empty for today (UTC)", usage=True
        ) from exc
    fail_on = read_input(env, "fail-on").lower()
    if fail_on not in FAIL_ON:
        raise GateError(
            f"input fail-on is {fail_on!r}", fix="set `fail-on: failure` (the default) or `never`", usage=True
        )
    mode, shard = _mode_and_shard(env)
    if shard is not None and not _bool(env, "upload-artifact"):
        raise GateError(
            "input shard needs upload-artifact: true",
            fix="the merge job reads each shard's receipt from its artifact; remove `upload-artifact: false`",
            usage=True,
        )
    return Inputs(
        token=read_input(env, "github-token"),
        check_name=_check_name(env),
        run=_bool(env, "run-properties"),
        upload=_bool(env, "upload-artifact"),
        artifact_name=read_input(env, "artifact-name"),
        receipt_path=read_input(env, "receipt-path"),
        today=today,
        working_directory=read_input(env, "working-directory"),
        max_annotations=_count(env, "max-annotations", MAX_ANNOTATIONS_LIMIT),
        job_summary=_bool(env, "job-summary"),
        fail_on=fail_on,
        unsafe_pr_code=_bool(env, UNSAFE_INPUT),
        mode=mode,
        shard=shard,
    )


def _mode_and_shard(env: Mapping[str, str]) -> tuple[str, tuple[int, int] | None]:
    """`mode` and `shard: K/N`; a shard belongs to `mode: gate` only (the merge job reads N from the artifacts)."""
    mode = read_input(env, "mode")
    if mode not in MODES:
        raise GateError(f"input mode is {mode!r}", fix=f"set `mode:` to one of {', '.join(MODES)}", usage=True)
    text = read_input(env, "shard")
    if not text:
        return mode, None
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n) <= 1000):
        raise GateError(
            f"input shard is {text!r}, not K/N with 1 <= K <= N <= 1000",
            fix="set `shard: ${{ matrix.shard }}/N` with `matrix: {shard: [1, ..., N]}`",
            usage=True,
        )
    if mode != "gate":
        raise GateError(f"input shard is set in mode: {mode}", fix="set `shard:` on the matrix job only", usage=True)
    return mode, (int(k), int(n))


def fallback_inputs(env: Mapping[str, str]) -> Inputs:
    """What a run whose inputs are unusable still reports with: the token, a valid check name, no upload."""
    try:
        check_name = _check_name(env)
    except GateError:
        check_name = DEFAULTS["check-name"]
    return Inputs(
        token=read_input(env, "github-token"),
        check_name=check_name,
        run=False,
        upload=False,
        artifact_name=DEFAULTS["artifact-name"],
        receipt_path=DEFAULTS["receipt-path"],
        today=None,
    )


def step_exit(code: int, fail_on: str) -> int:
    """The step's exit code: the gate's, or 0 under `fail-on: never` (a usage error of the workflow still fails)."""
    return EXIT_PASS if fail_on == "never" and code != EXIT_USAGE else code
