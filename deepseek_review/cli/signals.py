"""SIGINT and SIGTERM, handled in one place for every command.

By default a command stops where it is when either signal arrives: the signal becomes
:class:`Signalled`, which unwinds like Ctrl-C (temporary files are removed on the way out, no
file is half-written) and :func:`.app.main` turns into exit 130 with one line. A shell's
``kill`` or a container runtime's SIGTERM then behaves exactly like Ctrl-C, instead of ending
the process silently with 143.

``batch`` asks for a gentler stop with :func:`graceful_stop`: the first signal only stops new
work (the reviews in flight are finished and written), a second one exits at once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

#: The signals that interrupt a command.
SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Signalled(BaseException):
    """A SIGINT or SIGTERM arrived (a BaseException, like KeyboardInterrupt, so that no
    ``except Exception`` on the way, such as a retry loop, can swallow it)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.name = signal.Signals(signum).name


def _install(handler: Callable[[int, FrameType | None], Any]) -> Callable[[], None]:
    """Install ``handler`` for :data:`SIGNALS`; returns what restores the previous ones.

    Only the main thread may install handlers; elsewhere (a library caller's worker thread)
    nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = {s: signal.signal(s, handler) for s in SIGNALS}

    def restore() -> None:
        for s, h in previous.items():
            signal.signal(s, h)

    return restore


@contextlib.contextmanager
def interrupting() -> Iterator[None]:
    """While inside, SIGINT and SIGTERM raise :class:`Signalled` in the main thread."""

    def handler(signum: int, frame: FrameType | None) -> None:
        raise Signalled(signum)

    restore = _install(handler)
    try:
        yield
    finally:
        restore()


@contextlib.contextmanager
def graceful_stop(stop: threading.Event, exit_code: int) -> Iterator[None]:
    """First SIGINT/SIGTERM: set ``stop`` (start no new work). Second: exit at once with
    ``exit_code`` (every write is atomic, so nothing is half-written)."""

    def handler(signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            sys.stderr.write(
                f"\ndeepseek-review: {name} again: exiting now (no file is half-written; "
                "run the same command again to resume)\n"
            )
            sys.stderr.flush()
            os._exit(exit_code)
        stop.set()
        from deepseek_review.util.logs import log

        log.warning(
            "%s: starting no new reviews; waiting for the ones in flight to be written "
            "(%s again to exit now)",
            name,
            name,
        )

    restore = _install(handler)
    try:
        yield
    finally:
        restore()
