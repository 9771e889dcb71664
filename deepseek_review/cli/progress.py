"""Progress on stderr: a live line drawn with rich on a terminal, plain lines otherwise.

On a terminal (stderr a TTY that can redraw a line, not ``TERM=dumb``, no ``--quiet``) one
line is redrawn in place, and every log record is printed through the same rich console: the
console erases the line, prints the record at column 0 and draws the line again below it, so a
warning is never printed over the progress.

Off a terminal, ``batch`` prints one plain line per event, each starting with counters that
never go back and add up (``[3/6 finished, 2 asking, 0 writing, 1 waiting]``); ``run`` and
``continue`` print nothing more than their log lines.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, TextIO

from deepseek_review.cli.app import STATE, tokens_text
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

    from deepseek_review.batch.run import BatchEvent, EntryReport, Progress
    from deepseek_review.chat.types import ProgressFn

#: Terminals that cannot redraw a line in place.
_DUMB_TERMINALS = ("dumb", "unknown")


def live_wanted(stream: TextIO) -> bool:
    """Whether to draw a live line on ``stream``: a terminal that can redraw it, no --quiet."""
    if STATE.quiet or os.environ.get("TERM", "") in _DUMB_TERMINALS:
        return False
    try:
        return stream.isatty()
    except (ValueError, OSError):  # closed or detached
        return False


class _ConsoleStream:
    """Stands in for stderr in the log handlers while a live line is drawn: each record goes
    through the live line's console, which prints it above the line, never over it."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def write(self, text: str) -> int:
        # Already one escaped line (the handlers' formatter): no markup, wrap or highlighting.
        self.console.out(text, end="", highlight=False)
        return len(text)

    def flush(self) -> None:
        """The console flushes after each record."""


@contextlib.contextmanager
def live_line(render: Callable[[], RenderableType]) -> Iterator[None]:
    """Redraw ``render()`` on one stderr line (4 times a second) while inside; log records
    are printed above it; the line is erased at the end."""
    from rich.console import Console
    from rich.live import Live

    # The caller decided it is a terminal: rich must not guess otherwise (FORCE_COLOR,
    # TTY_COMPATIBLE...). No colour or other style is ever printed (color_system=None), so
    # NO_COLOR holds whatever it is set to.
    console = Console(
        file=sys.stderr,
        force_terminal=True,
        force_interactive=True,
        highlight=False,
        color_system=None,
    )
    live = Live(
        get_renderable=render,
        console=console,
        transient=True,
        refresh_per_second=4,
        redirect_stdout=False,  # results and --json go to stdout untouched
        redirect_stderr=True,  # a stray write to stderr is printed above the line too
    )
    stderr = (sys.stderr, sys.__stderr__)
    handlers = [h for h in log.handlers if type(h) is logging.StreamHandler and h.stream in stderr]
    with live:
        # rich hides the cursor while live; a second Ctrl-C exits at once (os._exit), and
        # would leave the user's terminal without one.
        console.show_cursor(True)
        swapped = [(h, h.setStream(_ConsoleStream(console))) for h in handlers]
        try:
            yield
        finally:
            for h, old in swapped:
                if old is not None:
                    h.setStream(old)


def _one_line(text: str) -> Text:
    """A rich Text that stays on one line (cut with an ellipsis): the live line is redrawn
    by erasing one line, so it must never wrap."""
    from rich.text import Text

    return Text(text, no_wrap=True, overflow="ellipsis", end="")


# --------------------------------------------------------------------------- run, continue


class _Receiving:
    """The answer's tokens as they stream (estimated from the bytes of text received, and
    labelled so: no server counts them before the end), or how long the request has waited
    for its first one."""

    def __init__(self) -> None:
        self.since = time.monotonic()
        self.tokens = 0
        self.elapsed = 0.0

    def __call__(self, tokens: int, elapsed: float) -> None:
        self.tokens, self.elapsed = tokens, elapsed
        self.since = time.monotonic() - elapsed  # this request's (or retry's) start

    def render(self) -> RenderableType:
        return _one_line(self.text())

    def text(self) -> str:
        if not self.tokens:
            waited = time.monotonic() - self.since
            return f"  waiting for the answer: {_fmt_seconds(waited)}"
        rate = self.tokens / self.elapsed if self.elapsed > 0 else 0.0
        return f"  receiving: {_estimated(self.tokens)}, ~{rate:.1f} tokens/s"


def _estimated(tokens: int) -> str:
    return f"~{tokens} tokens (estimated)"


@contextlib.contextmanager
def review_progress() -> Iterator[ProgressFn | None]:
    """The ``progress`` callback for one review: a live line on a terminal, else None."""
    if not live_wanted(sys.stderr):
        yield None
        return
    receiving = _Receiving()
    with live_line(receiving.render):
        yield receiving


# --------------------------------------------------------------------------- batch


def _fmt_seconds(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _in_flight(p: Progress) -> str:
    """Reviews in flight: asking the server (each holds one of the --jobs slots, so there are
    never more), or writing an answer (the slot is already free for the next request)."""
    return f"{p.requests} asking, {p.in_flight - p.requests} writing"


def _counters(p: Progress) -> str:
    pending = f"{p.pending} pending, " if p.pending else ""
    return f"[{p.finished}/{p.total} finished, {pending}{_in_flight(p)}, {p.waiting} waiting]"


class _TopicFilter(logging.Filter):
    """Prefixes log lines of a batch entry's review job with the entry's topic (the job
    passes it to its log lines as ``batch_topic``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        topic = getattr(record, "batch_topic", None)
        if isinstance(topic, str) and not getattr(record, "_batch_prefixed", False):
            record.msg = f"{topic}: {record.msg}"
            record._batch_prefixed = True
        return True


class BatchProgress:
    """``batch``'s events, shown: a live line on a terminal (warnings and continuations
    printed above it), one plain line per event otherwise, in the order of the events.

    A plain ``answered`` line (a request gave its slot back) is held back: if the next line
    is its own review's finish line, that says it all and the ``answered`` line is dropped;
    otherwise it is printed first (so a request that starts is always preceded by the line
    of the answer whose slot it took). ``--verbose`` prints every one at once.
    """

    def __init__(self, stream: TextIO) -> None:
        self.live = live_wanted(stream)
        self.last: Progress | None = None
        self.held: dict[str, str] = {}

    @contextlib.contextmanager
    def attached(self) -> Iterator[BatchProgress]:
        """While inside: worker log lines name their entry, and the live line is drawn."""
        handlers = [h for h in log.handlers if isinstance(h, logging.StreamHandler)]
        topic_filter = _TopicFilter()
        for h in handlers:
            h.addFilter(topic_filter)
        try:
            with live_line(self._render) if self.live else contextlib.nullcontext():
                yield self
        finally:
            for h in handlers:
                h.removeFilter(topic_filter)

    # -- events (the main thread, in the order they happened)

    def __call__(self, event: BatchEvent) -> None:
        self.last = p = event.progress
        topic = event.topic or ""
        where = "" if self.live else _counters(p) + " "  # the live line shows the counters
        if event.kind == "halt":
            self._say(logging.WARNING, event.message)
        elif event.kind == "start" and not self.live:
            action = " (continuing its chain)" if event.action == "continue" else ""
            self._say(logging.INFO, f"{where}start {topic}{action}")
        elif event.kind == "continue":
            self._say(logging.INFO, f"{where}{topic}: {event.message}")
        elif event.kind == "answered" and not self.live:
            self.held[topic] = f"{where}{_answered(topic, event)}"
            if STATE.verbose:
                self._release_held()
        elif event.kind == "done" and event.entry is not None:
            self.held.pop(topic, None)
            self._done_line(event.entry, where)

    def _say(self, level: int, line: str) -> None:
        """Log ``line`` after the held ``answered`` lines: they happened first."""
        self._release_held()
        log.log(level, "%s", line)

    def _release_held(self) -> None:
        for held in self.held.values():
            log.info("%s", held)
        self.held.clear()

    def _done_line(self, e: EntryReport, where: str) -> None:
        if e.status in ("failed", "truncated") or (e.status == "pending" and e.error):
            if e.status == "pending" and e.error and e.error.startswith("not started"):
                return  # the halt said why; the summary counts them
            self._say(logging.WARNING, f"{where}{e.status} {e.topic}: {e.error}")
            return
        if self.live:
            return
        known = e.usage["total_tokens"] if e.usage is not None else None
        segs = len(e.receipt_paths)
        detail = f"{segs} segment{'s' if segs != 1 else ''}, "
        if e.split is not None:
            detail = f"{e.split['parts']} parts and a synthesis, {detail}"
        detail += tokens_text(known, e.estimated_tokens)
        if e.status != "skipped":
            detail += f", {e.attempts} request{'s' if e.attempts != 1 else ''}"
        if e.reason is not None:
            detail = e.reason
        self._say(logging.INFO, f"{where}{e.status} {e.topic} ({detail})")

    # -- the live line

    def _render(self) -> RenderableType:
        from rich.progress_bar import ProgressBar
        from rich.table import Table

        p = self.last
        grid = Table.grid(padding=(0, 1))
        grid.add_column(width=20, no_wrap=True)
        grid.add_column(no_wrap=True, overflow="ellipsis")
        if p is None:
            grid.add_row(ProgressBar(total=None, width=20), _one_line("starting"))
            return grid
        grid.add_row(
            ProgressBar(total=p.total or 1, completed=p.finished, width=20), _one_line(_status(p))
        )
        return grid


def _answered(topic: str, event: BatchEvent) -> str:
    if event.tokens is None:
        return f"no answer for {topic} (the request failed or was stopped)"
    if event.tokens_estimated:
        return f"answered {topic} (~{event.tokens} tokens, estimated)"
    return f"answered {topic} ({event.tokens} tokens)"


def _status(p: Progress) -> str:
    """The live line's text: counts, what is in flight, tokens (with those still streaming
    in, an estimate until the answer's count arrives), time and ETA."""
    c = p.counts
    parts = [f"{p.finished}/{p.total}", f"{c['ok']} ok", f"{c['skipped']} skipped"]
    parts.append(f"{c['failed']} failed")
    if c["truncated"]:
        parts.append(f"{c['truncated']} truncated")
    if p.pending:
        parts.append(f"{p.pending} pending")
    parts += [_in_flight(p), f"{p.waiting} waiting"]
    tokens = p.tokens + p.streaming
    estimated = p.tokens_estimated or p.streaming > 0
    parts.append(_estimated(tokens) if estimated else f"{tokens} tokens")
    ran = p.finished - c["skipped"]
    remaining = p.total - p.finished - p.pending
    if remaining == 0:
        eta = "done"
    elif ran > 0:
        eta = "ETA " + _fmt_seconds(p.elapsed / ran * remaining)
    else:
        eta = "ETA --"
    parts += [_fmt_seconds(p.elapsed), eta]
    return "  ".join(parts)
