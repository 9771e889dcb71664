"""Refuse a single-valued option given more than once (``--endpoint A --endpoint B``).

click keeps the last value without a word, so a command line that names two servers, two
models or two output folders would run with one of them. Until an option accepts several, its
repetition is a usage error naming the flag (exit 2). The command line is read as click reads
it: a ``--flag=value`` or ``--flag value``, short flags grouped (``-vq``, ``-cpath``), the word
after an option that takes a value is that value whatever it looks like, and ``--`` ends the
options. Switches (``--stream``/``--no-stream``, ``-v``) and repeatable options (``-c``) are
left alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from typer import _click
from typer._click.exceptions import UsageError
from typer.core import TyperOption


def _options(command: _click.Command) -> dict[str, TyperOption]:
    return {
        name: p
        for p in command.params
        if isinstance(p, TyperOption)
        for name in (*p.opts, *p.secondary_opts)
    }


def _takes_value(p: TyperOption) -> bool:
    return not p.is_flag and not p.count and p.nargs != 0


def repeated_flag(command: _click.Command, args: Sequence[str]) -> str | None:
    """The first single-valued option of ``command`` that ``args`` give twice (its long
    flag), or None."""
    options = _options(command)
    seen: set[str | None] = set()
    words = iter(args)
    for word in words:
        if word == "--":
            return None
        if word.startswith("--"):
            name, eq, _ = word.partition("=")
            found = [options.get(name)]
            if found[0] is not None and _takes_value(found[0]) and not eq:
                next(words, None)
        elif word.startswith("-") and len(word) > 1:
            found = []
            for i, letter in enumerate(word[1:], start=2):
                p = options.get("-" + letter)
                found.append(p)
                if p is None:
                    break
                if _takes_value(p):
                    if i == len(word):  # the value is the next word, else the rest of this one
                        next(words, None)
                    break
        else:
            continue
        for p in found:
            if p is None or p.multiple or not _takes_value(p):
                continue
            if p.name in seen:
                return next((o for o in p.opts if o.startswith("--")), p.opts[0])
            seen.add(p.name)
    return None


def refuse_repeats(ctx: _click.Context, command: _click.Command, args: Sequence[str]) -> None:
    """A usage error when ``args`` give one of ``command``'s single-valued options twice."""
    flag = repeated_flag(command, args)
    if flag is not None:
        raise UsageError(
            f"{flag} was given more than once; it takes one value (only the last would be "
            "used, silently)",
            ctx=ctx,
        )
