"""What typer's parser knows about a command line: the one module that reads its objects.

typer hands a callback the parser's context (:class:`typer.Context`, documented as click's
Context) but has no public view of a command's options and no public class per usage error.
Two things need them: refusing a single-valued option given twice (:mod:`.repeats`) and
naming an unknown option with a close suggestion only (:func:`unknown_option`). Everything
typer-specific they read is here, through attributes its vendored click documents (a group's
``commands``; a command's ``params``, each with ``opts``, ``secondary_opts``, ``multiple``,
``nargs``, ``is_flag``, ``count``; a NoSuchOption's ``option_name`` and ``ctx``), and
tests/cli/test_repeated_options.py fails first if a typer release moves them.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

import typer


@dataclass(frozen=True)
class Flag:
    """One option of a command, as its command line spells it."""

    name: str
    """The parameter it sets (two spellings of one option share it)."""
    spellings: tuple[str, ...]
    """Every way to write it: ``--endpoint``, ``-e``, ``--no-stream``."""
    takes_value: bool
    """The next word (or the rest of the word) is its value."""
    repeatable: bool
    """It collects every value given (``-c a -c b``)."""


def _flag(param: Any) -> Flag | None:
    if getattr(param, "param_type_name", None) != "option":
        return None
    takes_value = not param.is_flag and not param.count and param.nargs != 0
    return Flag(
        name=str(param.name),
        spellings=(*param.opts, *param.secondary_opts),
        takes_value=takes_value,
        repeatable=bool(param.multiple),
    )


def flags(command: Any) -> list[Flag]:
    """The options of a parsed command object (a command's context's ``command``)."""
    return [f for f in map(_flag, getattr(command, "params", [])) if f is not None]


def subcommand_flags(ctx: typer.Context, name: str) -> list[Flag] | None:
    """The options of command ``name`` of the group whose callback got ``ctx``; None if the
    group has no such command."""
    command = getattr(ctx.command, "commands", {}).get(name)
    return None if command is None else flags(command)


def unknown_option(exc: Exception) -> str | None:
    """A usage error that names an option the command does not have, as one line with a
    suggestion only when one of the command's options is really close (click offers any
    loose match); None for any other error."""
    if type(exc).__name__ != "NoSuchOption":
        return None
    name = str(getattr(exc, "option_name", ""))
    ctx = getattr(exc, "ctx", None)
    spellings = [s for f in flags(ctx.command if ctx else None) for s in f.spellings]
    longs = {s[2:]: s for s in spellings if s[:2] == "--"}
    text = f"no such option {name}"
    close = difflib.get_close_matches(name.lstrip("-"), longs, n=1, cutoff=0.7)
    if close:
        text += f" (did you mean {longs[close[0]]}?)"
    return text
