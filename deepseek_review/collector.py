"""Python's cyclic garbage collector, paused while the console script starts.

Start-up creates some hundred thousand objects that live as long as the process (modules,
classes, functions of ~350 modules): the collector would scan them dozens of times, for
nothing, about a tenth of a short ``run``. The console script pauses it first thing; once
the command is named it is resumed with those objects frozen out of its scans, unless the
command is one review or one read (``run``, ``continue``, ``show``, ``config``): their
cyclic garbage is bounded by one review and freed when the process ends. ``verify`` stays
paused too: its checks run with the collector off anyway (:func:`..verification.verify`), and
resuming it afterwards cost a pass over every object the run made (40 ms at 10,000
receipts) just before the process ends. Library calls and in-process
:func:`~deepseek_review.cli.main` calls never touch it.
"""

from __future__ import annotations

import gc

#: Commands that end after one review or one read: the collector may stay paused.
BRIEF_COMMANDS = frozenset({"run", "continue", "show", "config", "verify"})
_paused = False


def pause() -> None:
    """Pause the collector (the console script, first thing)."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def command_named(name: str | None) -> None:
    """The command line named ``name``: resume the collector unless that command is brief."""
    global _paused
    if _paused and name not in BRIEF_COMMANDS:
        _paused = False
        gc.freeze()  # what start-up made lives as long as the process: never scanned again
        gc.enable()
