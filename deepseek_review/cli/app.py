"""The typer application, its shared options and helpers, and the one place errors exit.

Results go to stdout (paths, or one JSON object with ``--json``); status, progress and errors
go to stderr. Every :class:`~deepseek_review.errors.ReviewError` is caught in :func:`main`
alone and becomes a one-line message and its exit code; ``--verbose`` adds the traceback.
Commands live in sibling modules, one per area, and only parse arguments and render results.

This module and the command modules do not postpone annotations (no ``from __future__ import
annotations``): typer reads each command's and each option callback's annotations twice
(``inspect.signature(eval_str=True)``, then ``get_type_hints``), compiling every one that is
a string; objects it takes as they are (an empty ``verify`` ran 3.4M instructions fewer).
"""

import contextlib
import os
import posixpath
import sys
import traceback
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TextIO

import typer

from deepseek_review._version import __version__
from deepseek_review.cli.parsing import subcommand_flags, unknown_option
from deepseek_review.cli.repeats import Repeated, refuse_repeats
from deepseek_review.cli.signals import Signalled, interrupting
from deepseek_review.cli.streams import PipeGuard, StdoutClosed, stdout_closed
from deepseek_review.errors import ConfigError, Interrupted, NothingNew, ReviewError
from deepseek_review.options.table import OPTIONS, naming
from deepseek_review.util import logs
from deepseek_review.util.redact import redact
from deepseek_review.util.textsafe import escape, escape_lines, json_safe

if TYPE_CHECKING:
    from logging import Logger


def example(command_line: str) -> str:
    """A command's help epilog: its example, printed after the options (not re-wrapped)."""
    return f"\b\nExample: {command_line}"


app = typer.Typer(
    name="deepseek-review",
    help="Ask a DeepSeek model to review repository files, and keep verifiable receipts.\n\n"
    "Paths you type are relative to the current folder and must lie inside the repository "
    "root (--repo-root, else the enclosing git work tree, else the current folder); paths in "
    "receipts, records and JSON output are relative to the root.",
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=example('deepseek-review run --context docs/spec.md --prompt "Check the arithmetic."'),
)


class _State:
    verbose = False
    quiet = False
    secret: str | None = None
    json = False
    """``--json`` was given: a failure prints a JSON error object on stdout."""
    json_written = False
    """A JSON document is already on stdout (so a failure after it adds none)."""
    args: tuple[str, ...] = ()
    """The command line :func:`main` is parsing."""


STATE = _State()


def _setup_logging(verbose: bool, quiet: bool) -> None:
    """Our handler on the package's logger, at ``-v``/``-q``'s level: installed once a module
    that logs is loaded (:func:`util.logs.configure`), so a command that never logs never
    imports :mod:`logging`."""

    def setup(log: "Logger") -> None:
        from deepseek_review.cli.logsetup import install

        install(log, verbose=verbose, quiet=quiet, secret=lambda: STATE.secret)

    logs.configure(setup)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"deepseek-review {__version__}")
        raise typer.Exit()


def _set_verbose(value: bool) -> None:
    if value:
        STATE.verbose = True
        _setup_logging(STATE.verbose, STATE.quiet)


def _set_quiet(value: bool) -> None:
    if value:
        STATE.quiet = True
        _setup_logging(STATE.verbose, STATE.quiet)


def _set_json(value: bool) -> bool:
    if value:
        STATE.json = True
    return value


_VERBOSE_HELP = "More status lines; tracebacks on errors."
_QUIET_HELP = "Only warnings and errors."

# The same two flags on every command, so `deepseek-review run ... -v` works too.
VerboseOpt = Annotated[
    bool,
    typer.Option(
        "--verbose",
        "-v",
        callback=_set_verbose,
        expose_value=False,
        help=_VERBOSE_HELP,
    ),
]
QuietOpt = Annotated[
    bool,
    typer.Option("--quiet", "-q", callback=_set_quiet, expose_value=False, help=_QUIET_HELP),
]


# The root's own flags, named so that typer, which reads every command line's root callback,
# evaluates a name (annotations are strings here) rather than compiling each whole option.
_RootVerbose = Annotated[bool, typer.Option("--verbose", "-v", help=_VERBOSE_HELP)]
_RootQuiet = Annotated[bool, typer.Option("--quiet", "-q", help=_QUIET_HELP)]
_RootVersion = Annotated[
    bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version.")
]


@app.callback(invoke_without_command=True)
def _root(
    ctx: typer.Context,
    verbose: _RootVerbose = False,
    quiet: _RootQuiet = False,
    version: _RootVersion = False,
) -> None:
    """Ask a DeepSeek model to review repository files, and keep verifiable receipts."""
    STATE.verbose, STATE.quiet = verbose, quiet
    _setup_logging(verbose, quiet)
    name = ctx.invoked_subcommand
    if name is None:  # no command: the whole help, as a usage error
        sys.stderr.write(ctx.get_help().rstrip("\n") + "\n")
        raise typer.Exit(2)
    # The root's own options are switches: the command is the first word that is not one.
    words = [i for i, a in enumerate(STATE.args) if not a.startswith("-")]
    options = subcommand_flags(ctx, name)
    if words and STATE.args[words[0]] == name and options is not None:
        refuse_repeats(options, STATE.args[words[0] + 1 :])


# --------------------------------------------------------------------------- helpers


def json_out(obj: Any) -> None:
    """One JSON object on stdout: readable UTF-8, but no raw control character (C1, bidi)."""
    import json

    STATE.json_written = True
    sys.stdout.write(json_safe(json.dumps(obj, indent=2, ensure_ascii=False)) + "\n")
    sys.stdout.flush()


def write_lines(stream: TextIO, lines: Iterable[str]) -> None:
    """Human-readable output, one line each, with control characters shown as escapes: the
    lines quote file names, receipts and config values, which anyone may have written."""
    stream.write(escape_lines(list(lines)))
    stream.flush()


def parse_json_object(text: str | None, option: str) -> dict[str, Any]:
    if not text:
        return {}
    from deepseek_review.util import safejson

    try:
        value = safejson.loads(text, what="value")
    except safejson.JSONRefused as exc:
        raise ConfigError(f"{option}: {exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{option}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option}: must be a JSON object")
    return value


# --------------------------------------------------------------------------- shared options

RepoRootOpt = Annotated[
    str | None,
    typer.Option(help=OPTIONS["repo_root"].help_text(), show_default=False),
]
AllowedSignersOpt = Annotated[
    str | None,
    typer.Option(help=OPTIONS["allowed_signers"].help_text(), show_default=False),
]
TrustedRevOpt = Annotated[
    str | None,
    typer.Option(help=OPTIONS["trusted_rev"].help_text(), show_default=False),
]
JsonOpt = Annotated[
    bool,
    typer.Option(
        "--json",
        callback=_set_json,
        help="One JSON object on stdout, also on failure.",
    ),
]


def _cwd_in(root: Path) -> str | None:
    """The current folder relative to ``root`` ("" at the root); None when outside it."""
    try:
        rel = Path.cwd().resolve().relative_to(root)
    except (OSError, ValueError):
        return None
    return "" if rel == Path(".") else rel.as_posix()


def typed_path(root: Path, user_path: str) -> str:
    """A path typed on the command line, as the core takes it: relative to the root.

    The one rule for every command: a path you type is relative to the current folder, like
    any Unix tool's, and must lead inside the repository root. Run from outside the root
    (``--repo-root`` elsewhere), relative paths are taken from the root, as there is no
    other sensible base. Globs work the same way (``-c '*.py'`` in ``src/`` is
    ``src/*.py``). Paths written inside files (receipts, records, manifests, the config
    file) keep their own base: the root, or the manifest's folder.
    """
    here = _cwd_in(root)
    if not here or not user_path.strip() or os.path.isabs(user_path):
        return user_path
    return posixpath.normpath(posixpath.join(here, user_path))


def shown_path(root: Path, rel: str) -> str:
    """A repo-relative path as the user types it from the current folder (see typed_path)."""
    here = _cwd_in(root)
    if not here:
        return rel
    return posixpath.relpath(rel, here)


# --------------------------------------------------------------------------- main


def _scrub(text: str) -> str:
    return redact(text, STATE.secret)


def _end(exit_code: int, line: str, document: dict[str, Any]) -> NoReturn:
    """End the command: one stderr line, ``document`` on stdout when ``--json`` asked for
    JSON and none was printed yet, and the exit code."""
    # The line may quote a server, a receipt or a file name: shown, never obeyed.
    sys.stderr.write(escape(_scrub(line).replace("\n", " ")) + "\n")
    sys.stderr.flush()
    if STATE.json and not STATE.json_written:
        with contextlib.suppress(StdoutClosed):
            json_out(document)
    sys.exit(exit_code)


def _report(kind: str, exit_code: int, line: str, message: str, hint: str = "") -> NoReturn:
    """The one way a command fails: :func:`_end` with the JSON error object."""
    error = {"kind": kind, "exit_code": exit_code, "message": _scrub(message)}
    if hint:
        error["hint"] = _scrub(hint)
    _end(exit_code, line, {"error": error})


def _nothing_new(exc: ReviewError) -> NoReturn:
    """Not a failure: one line, ``--json`` says so, exit 0."""
    message = _scrub(exc.message)
    _end(0, f"deepseek-review: {exc.message}", {"status": "nothing_new", "message": message})


def _fail(exc: ReviewError) -> NoReturn:
    if isinstance(exc, NothingNew):
        _nothing_new(exc)
    line = f"deepseek-review: error: {exc.message}"
    if exc.hint:
        line += f" ({exc.hint})"
    if STATE.verbose:
        sys.stderr.write(escape("".join(traceback.format_exception(exc)), multiline=True))
    _report(type(exc).__name__, exc.exit_code, line, exc.message, exc.hint)


def _noted(exc: BaseException) -> str:
    """What the library noted on an interruption (how much of an answer had arrived)."""
    notes = getattr(exc, "__notes__", None) or []
    return "".join(f" ({note})" for note in notes)


def _usage_message(exc: typer.TyperException) -> str:
    """A usage error as one line: an unknown option is named, with a suggestion only when
    one of the command's options is really close."""
    return unknown_option(exc) or exc.format_message().replace("\n", " ")


def main(argv: list[str] | None = None) -> None:
    """The console script: one place maps every failure to its exit code."""
    args = sys.argv[1:] if argv is None else argv
    STATE.json = STATE.json_written = False
    STATE.secret = None
    STATE.args = tuple(args)
    real_stdout = sys.stdout
    sys.stdout = PipeGuard(real_stdout)
    try:
        with interrupting(), naming("flag"):  # errors name options as flags here
            code = app(args=args, prog_name="deepseek-review", standalone_mode=False)
    except ReviewError as exc:
        _fail(exc)
    except Signalled as exc:
        _fail(Interrupted(f"interrupted by {exc.name}{_noted(exc)}"))
    except (KeyboardInterrupt, typer.Abort) as exc:
        _fail(Interrupted(f"interrupted{_noted(exc)}"))
    except (typer.TyperException, Repeated) as exc:  # usage errors from argument parsing
        if "--json" in args[: args.index("--") if "--" in args else len(args)]:
            STATE.json = True
        text = _usage_message(exc) if isinstance(exc, typer.TyperException) else str(exc)
        _report("UsageError", 2, f"deepseek-review: error: {text} (see --help)", text)
    except StdoutClosed:
        stdout_closed()
    except Exception as exc:  # a bug: say so, briefly, unless --verbose
        if STATE.verbose:
            raise
        first = str(exc).splitlines()[0] if str(exc) else ""
        message = f"{type(exc).__name__}: {first}"
        _report(
            "InternalError",
            1,
            f"deepseek-review: internal error: {message} (run with --verbose for details)",
            message,
        )
    finally:
        sys.stdout = real_stdout
    if code == 130:  # typer turns Ctrl-C into a bare exit code 130
        _fail(Interrupted("interrupted"))
    code = code if isinstance(code, int) else 0
    sys.exit(code)


def tokens_text(known: int | None, estimated: int | None) -> str:
    """Tokens for a human: the server's count, or "unknown" (with an estimate marked as one)."""
    if known is not None:
        return f"{known} tokens"
    about = f", ~{estimated} estimated" if estimated else ""
    return f"unknown tokens (the server reported no usage{about})"
