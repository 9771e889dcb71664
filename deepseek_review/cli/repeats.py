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

from deepseek_review.cli.parsing import Flag


class Repeated(Exception):
    """A single-valued option given more than once: a usage error (exit 2)."""


def repeated_flag(options: Sequence[Flag], args: Sequence[str]) -> str | None:
    """The first single-valued option of ``options`` that ``args`` give twice (its long
    flag), or None."""
    spelled = {s: f for f in options for s in f.spellings}
    seen: set[str] = set()
    words = iter(args)
    for word in words:
        if word == "--":
            return None
        found: list[Flag | None]
        if word.startswith("--"):
            name, eq, _ = word.partition("=")
            found = [spelled.get(name)]
            if found[0] is not None and found[0].takes_value and not eq:
                next(words, None)
        elif word.startswith("-") and len(word) > 1:
            found = []
            for i, letter in enumerate(word[1:], start=2):
                f = spelled.get("-" + letter)
                found.append(f)
                if f is None:
                    break
                if f.takes_value:
                    if i == len(word):  # the value is the next word, else the rest of this one
                        next(words, None)
                    break
        else:
            continue
        for f in found:
            if f is None or f.repeatable or not f.takes_value:
                continue
            if f.name in seen:
                return next((s for s in f.spellings if s.startswith("--")), f.spellings[0])
            seen.add(f.name)
    return None


def refuse_repeats(options: Sequence[Flag], args: Sequence[str]) -> None:
    """:class:`Repeated` when ``args`` give one of ``options``' single-valued options twice."""
    flag = repeated_flag(options, args)
    if flag is not None:
        raise Repeated(
            f"{flag} was given more than once; it takes one value (only the last would be "
            "used, silently)"
        )
