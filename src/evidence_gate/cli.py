"""Command line: argument parsing, the one error handler and the exit-code mapping."""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from contextlib import suppress
from datetime import UTC, date, datetime
from pathlib import Path

from evidence_gate import __version__, contexts, gate, visible
from evidence_gate.errors import EXIT_INTERNAL, GateError
from evidence_gate.receipt.write import write_receipt
from evidence_gate.records import replace
from evidence_gate.report import attestation
from evidence_gate.report.registry import DEFAULT_FORMAT, REPORTERS, Context, render
from evidence_gate.report.terminal import CRASH_HELP, SourceLine

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence
    from typing import Any, NoReturn

DESCRIPTION = (
    "A gate for pull requests written by coding agents: keeps the evidence (locked properties, fixtures, "
    "the freeze ledger) out of the patch's reach and writes receipt.json. Exit codes: 0 pass, 10 fail, "
    "11 precondition, 2 usage, 1 internal error."
)
RECEIPT_HELP = "where to write the receipt (default: ./receipt.json)"
FORMAT_HELP = "stdout: the text report (default), the receipt as JSON, or SARIF 2.1.0 for code scanning"
DOCS_ENV = "EVIDENCE_GATE_DOCS_URL"  # the README URL that SARIF rules link their help to (https only)


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date") from exc


def _shard(text: str) -> tuple[int, int]:
    k, sep, n = text.partition("/")
    if not (sep and k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text!r} is not K/N with 1 <= K <= N")
    return int(k), int(n)


def _columns() -> int:
    """The width `shutil.get_terminal_size((80, 24)).columns` gives: `COLUMNS`, else stdout's terminal, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns if sys.__stdout__ else 0
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns if columns > 0 else 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's help, at the width argparse takes itself (the terminal's less 2) read without `shutil`: argparse
    makes a formatter for every `add_argument`, and shutil (with bz2 and lzma) was ≈ 3 ms of each run's start-up."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, _columns() - 2 if width is None else width)


class _Parser(argparse.ArgumentParser):
    """An argument parser with `_HelpFormatter` (its subcommands' parsers are of its class, so theirs too)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(**kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser for every subcommand; with `command`, the other subcommands are named (usage lists
    them) but get no arguments: each `add_argument` costs a run's start-up, and `check` needs only its own."""
    parser = _Parser(prog="evidence-gate", description=DESCRIPTION)
    parser.add_argument("--version", action="version", version=f"evidence-gate {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (help_text, add_arguments) in _SUBCOMMANDS.items():
        made = sub.add_parser(name, help=help_text)
        if command in (None, name):
            add_arguments(made)
    return parser


def _check_arguments(check: argparse.ArgumentParser) -> None:
    _repo_option(check)
    check.add_argument(
        "--base",
        default=None,
        metavar="REV",
        help="the target branch; required unless --head is a merge commit (refs/pull/N/merge)",
    )
    check.add_argument("--head", default="HEAD", metavar="REV", help="the commit to judge (default: HEAD)")
    check.add_argument(
        "--event",
        type=Path,
        default=None,
        metavar="FILE",
        help="a GitHub event payload (pull_request, pull_request_target, merge_group)",
    )
    check.add_argument("--event-name", default=None, help=argparse.SUPPRESS)
    check.add_argument(
        "--author",
        default=None,
        metavar="LOGIN",
        help="the patch's author; without it and --event the patch is scored as an agent's",
    )
    check.add_argument("--receipt", type=Path, default=Path("receipt.json"), metavar="PATH", help=RECEIPT_HELP)
    check.add_argument(
        "--today", type=_date, default=None, metavar="YYYY-MM-DD", help="date for expiry checks (default: today, UTC)"
    )
    check.add_argument("--no-run", action="store_true", help="static lanes only")
    check.add_argument("--shard", type=_shard, default=None, metavar="K/N", help="run slice K of N of the seed plan")
    check.add_argument("--format", choices=tuple(REPORTERS), default=DEFAULT_FORMAT, help=FORMAT_HELP)
    check.add_argument(
        "--previous",
        type=Path,
        default=None,
        metavar="RECEIPT",
        help="the base branch's last receipt: the text report adds the findings new and fixed since it",
    )


def _demo_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--workdir", type=Path, default=None, help="keep the demo repositories here")
    demo.add_argument("--no-run", action="store_true", help="static lanes only (faster)")


def _verify_arguments(verify: argparse.ArgumentParser) -> None:
    verify.add_argument("receipt", type=Path, metavar="RECEIPT", help="the receipt.json to verify")
    verify.add_argument("--repo", type=Path, default=Path(), help="the git checkout holding its commits (default: .)")


def _merge_arguments(merge: argparse.ArgumentParser) -> None:
    merge.add_argument("receipts", nargs="+", type=Path, metavar="RECEIPT", help="one receipt per shard 1..N")
    merge.add_argument("--receipt", type=Path, default=Path("receipt.json"), metavar="PATH", help=RECEIPT_HELP)
    merge.add_argument("--format", choices=tuple(REPORTERS), default=DEFAULT_FORMAT, help=FORMAT_HELP)


def _freeze_arguments(freeze: argparse.ArgumentParser) -> None:
    fsub = freeze.add_subparsers(dest="freeze_command", required=True)
    fhash = fsub.add_parser("hash", help="the assertion hash of a failing test")
    fhash.add_argument("node", metavar="NODE", help="a pytest node id, e.g. properties/test_x.py::test_y")
    _repo_option(fhash)
    propose = fsub.add_parser("propose", help="a ledger entry, only for a freeze_eligible seed ledger")
    propose.add_argument("--receipt", type=Path, required=True, metavar="R", help="a receipt from `check`")
    propose.add_argument("--test", required=True, metavar="NODE", help="the node id whose seed ledger to use")
    propose.add_argument(
        "--today",
        type=_date,
        default=None,
        metavar="YYYY-MM-DD",
        help="the entry's added_at; it expires 14 days later (default: today, UTC)",
    )


def _repo_option(parser: argparse.ArgumentParser) -> None:
    """`--repo DIR`, the git checkout every subcommand that reads git takes."""
    parser.add_argument("--repo", type=Path, default=Path(), metavar="DIR", help="the git checkout (default: .)")


def _pre_push_arguments(push: argparse.ArgumentParser) -> None:
    _repo_option(push)
    push.add_argument(
        "--against",
        default=None,
        metavar="REF",
        help="the branch pull requests target (default: the remote's default branch, else the upstream)",
    )
    push.add_argument("--head", default=None, metavar="REV", help="the commit pushed (default: what pre-commit says)")
    push.add_argument("--today", type=_date, default=None, metavar="YYYY-MM-DD", help="date for expiry checks")
    push.add_argument("--receipt", type=Path, default=None, metavar="PATH", help="also write the receipt here")


def _history_arguments(history: argparse.ArgumentParser) -> None:
    _repo_option(history)
    history.add_argument("--branch", default="HEAD", metavar="REF", help="the base branch to walk (default: HEAD)")
    history.add_argument("--svg", type=Path, default=None, metavar="FILE", help="write the picture here")
    history.add_argument(
        "--receipts", type=Path, default=None, metavar="DIR", help="receipts whose seed-ledger counts to draw too"
    )
    history.add_argument("--limit", type=int, default=2000, metavar="N", help="newest N commits at most")
    history.add_argument(
        "--proposed",
        default=None,
        metavar="REV",
        help="also draw the ledger at REV (a pull request's merge or head commit) as `this PR`",
    )


# Each subcommand, in the order `--help` lists them: its help and what adds its arguments.
_SUBCOMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None]]] = {
    "check": ("judge a pull request on a git checkout", _check_arguments),
    "demo": ("run the gate on a built-in example with honest and tampering patches", _demo_arguments),
    "verify": ("re-derive a receipt from git objects and its seeds; name what differs", _verify_arguments),
    "action": ("run as the GitHub Action (reads INPUT_* and GITHUB_* variables)", lambda _parser: None),
    "merge": ("close seed ledgers over the receipts of --shard runs", _merge_arguments),
    "freeze": ("helpers for the people who own the freeze ledger", _freeze_arguments),
    "pre-push": ("the static lanes on the commit being pushed (a pre-commit hook)", _pre_push_arguments),
    "history": ("the freeze ledger's entries and bytes over the base branch (SVG)", _history_arguments),
}


def today_utc() -> date:
    """The clock, read once at the edge."""
    return datetime.now(UTC).date()


def run_check(args: argparse.Namespace) -> int:
    """`evidence-gate check`: the receipt is written whatever happens."""
    try:
        event = None
        if args.event:
            from evidence_gate.action.event import load_event  # noqa: PLC0415 - only a run given an event reads one

            event = load_event(args.event, args.event_name)
    except GateError as exc:  # the receipt is written in every case, also for an unusable event
        failed, code = gate.error_receipt(exc)
        write_receipt(args.receipt, failed)
        out: Mapping[str, Any] = failed
    else:
        opts = gate.CheckOptions(
            repo=args.repo,
            head=args.head,
            base=args.base,
            event=event,
            author=args.author,
            today=args.today or today_utc(),
            run=not args.no_run,
            shard=args.shard,
        )
        outcome = contexts.evaluate(opts, args.receipt, shards=True)  # `merge` takes the shards' index files
        if outcome.judged or contexts.is_index(outcome.receipt):
            return _report_contexts(args, outcome)
        out, code = outcome.receipt, outcome.code
    _attest(args.receipt)
    if out["state"] == "final" or args.format == "sarif":  # SARIF says itself that the run did not finish
        context = report_context(source=_source_lines(args.repo, out))
        if args.previous is not None:
            from evidence_gate.receipt import delta as receipt_delta  # noqa: PLC0415 - only --previous needs it

            context = replace(context, delta=receipt_delta.from_file(args.previous, out))
        sys.stdout.write(render(args.format, out, context))
    _say_errors(out, code)
    return code


def _say_errors(out: Mapping[str, Any], code: int) -> None:
    if out["state"] != "final":
        for error in out["errors"]:
            print(f"evidence-gate: error: {visible.lines(error)}", file=sys.stderr)
        if code == EXIT_INTERNAL:
            print(f"evidence-gate: {CRASH_HELP}", file=sys.stderr)


def _report_contexts(args: argparse.Namespace, outcome: contexts.Outcome) -> int:
    """With `contexts:`: each judged context's receipt attested, the reports (see contexts.render_outcome)."""
    _attest(args.receipt)
    context = report_context(source=_source_lines(args.repo, outcome.receipt))
    sys.stdout.write(contexts.render_outcome(outcome, args.format, context))
    for judged in outcome.judged:
        _say_errors(judged.receipt, judged.code)
    return outcome.code


def report_context(
    env: dict[str, str] | None = None, *, tty: bool | None = None, source: SourceLine | None = None
) -> Context:
    """What the reporters may use: the README named by `EVIDENCE_GATE_DOCS_URL` (https only), else nothing; the
    terminal's width (`COLUMNS`, else the terminal's, else 80) and colour only on a terminal without `NO_COLOR`."""
    found: Mapping[str, str] = os.environ if env is None else env
    docs = found.get(DOCS_ENV, "")
    on_tty = sys.stdout.isatty() if tty is None else tty
    columns = found.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() else _terminal_columns() if on_tty else 80
    return Context(
        docs=docs.split("#", 1)[0] if docs.startswith("https://") else None,
        width=width,
        color=on_tty and not found.get("NO_COLOR") and found.get("TERM") != "dumb",
        source=source,
    )


def _terminal_columns() -> int:
    """The terminal's width, 80 when it cannot be asked."""
    import shutil  # noqa: PLC0415 - only a terminal needs it (with lzma and bz2, ≈ 5 ms to import)

    return shutil.get_terminal_size((80, 24)).columns


def _source_lines(repo: Path, receipt: Mapping[str, Any]) -> SourceLine | None:
    """A finding's source line, read from the head commit's blob (never the working tree, which may differ)."""
    head = str((receipt.get("git") or {}).get("head") or "")
    if not head:
        return None
    from evidence_gate.git import Repo  # noqa: PLC0415 - only the text report needs it

    def line_of(path: str, line: int) -> str | None:
        try:
            data = Repo(repo).read_blob(head, path)
        except (GateError, OSError, ValueError):
            return None
        rows = data.decode("utf-8", "replace").split("\n") if data is not None else []
        return rows[line - 1] if 1 <= line <= len(rows) and len(rows[line - 1]) <= 300 else None

    return line_of


def _attest(receipt: Path) -> None:
    """The in-toto Statement beside the receipt (beside each context's receipt when it is an index, which is no
    receipt to attest); a failure to write one is said, the verdict stands."""
    try:
        index = contexts.load_index(receipt) if receipt.is_file() else None
    except GateError:
        index = None
    if index is not None:
        attestation.statement_path(receipt).unlink(missing_ok=True)
        for row in index["contexts"]:
            if row["judged"]:
                _attest_one(contexts.receipt_path_for(receipt, row["context"]))
        return
    _attest_one(receipt)


def _attest_one(receipt: Path) -> None:
    try:
        attestation.write_beside(receipt)
    except (OSError, ValueError) as exc:
        print(
            f"evidence-gate: warning: no in-toto Statement beside {visible.lines(str(receipt))} ({exc}); fix: "
            "make its folder writable (the receipt itself was written)",
            file=sys.stderr,
        )


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "check":
        return run_check(args)
    if args.command == "demo":
        from evidence_gate.commands import demo  # noqa: PLC0415 - subcommands load their modules on demand

        return demo.main(workdir=args.workdir, run=not args.no_run)
    if args.command == "verify":
        from evidence_gate.commands import verify  # noqa: PLC0415

        return verify.main(args.receipt, args.repo)
    if args.command == "action":
        from evidence_gate.action import main as action  # noqa: PLC0415

        return action.main(dict(os.environ))
    if args.command == "merge":
        from evidence_gate.commands import merge  # noqa: PLC0415

        code = merge.main(args.receipts, args.receipt, args.format, report_context())
        _attest(args.receipt)
        return code
    if args.command == "pre-push":
        from evidence_gate.commands import prepush  # noqa: PLC0415

        opts = prepush.PrePushOptions(args.repo, args.against, args.head, args.today or today_utc(), args.receipt)
        return prepush.main(opts, os.environ)
    if args.command == "history":
        from evidence_gate.commands import history  # noqa: PLC0415

        return history.main(args.repo, args.branch, args.svg, args.receipts, args.limit, proposed=args.proposed)
    if args.command == "freeze":
        from evidence_gate.commands import freeze as freeze_tools  # noqa: PLC0415

        return freeze_tools.main(args, today_utc)
    raise GateError(f"unknown command {args.command!r}", usage=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the `evidence-gate` command."""
    words = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(words[0] if words and words[0] in _SUBCOMMANDS else None)
    args = parser.parse_args(words)
    try:
        return _dispatch(args)
    except GateError as exc:
        print(f"evidence-gate: error: {visible.lines(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return 130


def entry() -> NoReturn:
    """The `evidence-gate` command (pip's console script, the image's, `python -m evidence_gate`): `main`, then out
    without tearing the interpreter down, which frees every module and object one by one (≈ 6 ms of the ≈ 85 a small
    `check --no-run` costs). Exit handlers run and stdout and stderr are flushed first; while a thread other than
    daemons still runs, the exit is Python's own. Output its reader closed (`| head`) is exit 120, as Python's own
    exit makes it, said once on stderr, never a traceback."""
    try:
        code = main()
    except BrokenPipeError:
        code = _output_lost()
    except SystemExit as exc:  # argparse's --help, --version and usage errors: their output is flushed below too
        if not isinstance(exc.code, int | None):
            raise
        code = exc.code or 0
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr) if code != _OUTPUT_LOST else (sys.stderr,):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            code = _output_lost() if stream is sys.stdout else code or _OUTPUT_LOST
    os._exit(code)


_OUTPUT_LOST = 120  # what CPython exits with when it cannot flush stdout at its exit


def _output_lost() -> int:
    with suppress(OSError, ValueError):
        print(
            "evidence-gate: error: standard output was closed before the report was written whole (the receipt "
            "holds the verdict); fix: let the reader take the whole report (`| head` stops early), or read the receipt",
            file=sys.stderr,
            flush=True,
        )
    return _OUTPUT_LOST
