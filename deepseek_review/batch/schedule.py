"""A batch's scheduling: its request gate (``jobs`` slots, and the halts that stop new
reviews), the board of counters its events carry, and each entry's event sink.

A review *starts* when its first request gets a slot: that is where budget, fail-fast and
interrupts stop new work (the gate refuses, and the job reports "not started"). Writing an
answer holds no slot, so while one review's files are written the next request is already
on its way and the server stays busy. Every event carries a snapshot taken under the board's
lock, as it happened, and is queued for the calling thread (:meth:`Board.drain`).
"""

from __future__ import annotations

import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from deepseek_review.batch.plan import Action
from deepseek_review.batch.report import STATUSES, EntryReport
from deepseek_review.chat.endpoint import safe_url
from deepseek_review.chat.types import Completion
from deepseek_review.errors import Interrupted, ReviewError, ServerError
from deepseek_review.ollama import pricing
from deepseek_review.options.table import name_of
from deepseek_review.reviewing.job import JobResult
from deepseek_review.reviewing.pool import Pool, Server


@dataclass(frozen=True)
class Progress:
    """A snapshot of the batch, carried by every event, taken as the event happened: the
    snapshots of successive events never go back, and ``finished + pending + in_flight +
    waiting`` is ``total`` in each."""

    total: int
    counts: Mapping[str, int]
    in_flight: int
    """Reviews started (their first request got a slot) and not finished: asking the server,
    or writing what it answered."""
    tokens: int
    """Tokens of the answers received by this run."""
    elapsed: float
    tokens_estimated: bool = False
    """Some of ``tokens`` are estimates (the server reported no usage)."""
    requests: int = 0
    """Requests in flight, each holding one of the ``jobs`` slots (at most ``jobs``)."""
    streaming: int = 0
    """Tokens of the answers still streaming in, estimated from their bytes of text; counted
    in ``tokens`` (as the server's count, where it gives one) once each answer is complete."""

    @property
    def finished(self) -> int:
        """Entries that came to an end: ok, skipped, truncated or failed."""
        return sum(self.counts.values()) - self.pending

    @property
    def pending(self) -> int:
        """Entries that never will in this run: interrupted, or not started after a halt (a
        resumed batch takes them up)."""
        return self.counts.get("pending", 0)

    @property
    def waiting(self) -> int:
        """Entries not started yet (and not given up)."""
        return self.total - self.finished - self.pending - self.in_flight


@dataclass(frozen=True)
class BatchEvent:
    """What happened, in the order it happened:

    * ``start``: a review's first request got its slot and is sent now;
    * ``continue``: a continuation request got its slot and is sent now (``message`` says
      which answer it continues, as ``run`` logs it);
    * ``answered``: a request gave its slot back, with its answer's ``tokens`` (None when
      it failed or was stopped);
    * ``done``: an entry is finished (``entry`` is its report), skipped or not started;
    * ``halt``: no new review will start, and why; ``tick``: a fresh snapshot.
    """

    kind: Literal["start", "continue", "answered", "done", "halt", "tick"]
    progress: Progress
    entry: EntryReport | None = None
    topic: str | None = None
    action: Action | None = None
    message: str = ""
    tokens: int | None = None
    """``answered``: the answer's tokens (the server's count, else an estimate)."""
    tokens_estimated: bool = False


EventFn = Callable[[BatchEvent], None]


class Board:
    """The batch's counters, halts and event queue, shared by every worker (thread-safe)."""

    def __init__(
        self,
        total: int,
        stop: threading.Event,
        *,
        fail_fast: bool,
        max_total_tokens: int | None,
        spend: pricing.Spend,
    ) -> None:
        self.total = total
        self.stop = stop
        self.fail_fast = fail_fast
        self.max_total_tokens = max_total_tokens
        self.spend = spend
        """What this run's answers cost (``max_cost`` halts on it)."""
        self.lock = threading.RLock()
        """Guards the counters; an event is queued under it, so events are in the order of
        their snapshots."""
        self.events: queue.Queue[BatchEvent] = queue.Queue()
        self.halt = threading.Event()
        self.halt_reason: str | None = None
        self.tokens = 0
        """Tokens of the receipts written by this run (estimated where unreported)."""
        self.received = 0
        """Tokens of the answers received by this run (each gets its receipt right after)."""
        self.estimated = False
        """Some of ``tokens`` are estimates: the server reported no usage."""
        self.received_estimated = False
        """Some of ``received`` are estimates."""
        self.counts: Counter[str] = Counter()
        self.in_flight = 0
        self.requests = 0
        self.streaming: dict[object, int] = {}
        """Pieces streamed so far of each answer still arriving, by entry."""
        self.started = time.monotonic()

    def snapshot(self) -> Progress:
        return Progress(
            total=self.total,
            counts={s: self.counts.get(s, 0) for s in STATUSES},
            in_flight=self.in_flight,
            tokens=max(self.tokens, self.received),
            elapsed=time.monotonic() - self.started,
            tokens_estimated=self.estimated or self.received_estimated,
            requests=self.requests,
            streaming=sum(self.streaming.values()),
        )

    def emit(self, kind: Any, **kw: Any) -> None:
        with self.lock:
            self.events.put(BatchEvent(kind=kind, progress=self.snapshot(), **kw))

    def drain(self, on_event: EventFn | None) -> None:
        """Hand the queued events to ``on_event`` (the calling thread's)."""
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if on_event is not None:
                on_event(event)

    def halt_with(self, reason: str, message: str) -> None:
        with self.lock:
            if self.halt.is_set():
                return
            self.halt_reason = reason
            self.halt.set()
        self.emit("halt", message=message)

    def check_halts(self) -> None:
        if self.stop.is_set():
            self.halt_with(
                "interrupted",
                "interrupted: starting no new reviews; the ones in flight finish and are written",
            )
        budget = self.max_total_tokens
        used = max(self.tokens, self.received)
        if budget is not None and used >= budget:
            how = (
                f"about {used} tokens (estimated: the server reported no usage)"
                if self.estimated or self.received_estimated
                else f"{used} tokens"
            )
            self.halt_with(
                "budget",
                f"token budget reached: this run's answers used {how} "
                f"({name_of('max_total_tokens')} {budget}); starting no new reviews",
            )
        if self.spend.reached():
            self.halt_with(
                "cost",
                f"cost limit reached: this run's answers cost {self.spend.cost:g} "
                f"({name_of('max_cost')} {self.spend.limit:g}); starting no new reviews",
            )

    def failed(self, topic: str) -> None:
        """An entry's request or review failed: with ``fail_fast``, nothing new starts."""
        if self.fail_fast:
            self.halt_with(
                "fail-fast", f"{topic} failed: {name_of('fail_fast')}, starting no new reviews"
            )

    def may_start(self) -> bool:
        """Asked as a review's first request gets its slot: start it, unless halted."""
        self.check_halts()
        with self.lock:
            return not self.halt.is_set()

    def finish(self, report: EntryReport, *, started: bool) -> EntryReport:
        with self.lock:
            if started:
                self.in_flight -= 1
            self.counts[report.status] += 1
            self.tokens += report.new_tokens
            self.estimated = self.estimated or report.new_tokens_estimated
            self.emit("done", entry=report, topic=report.topic)
        if report.status == "failed":
            self.failed(report.topic)
        self.check_halts()
        return report


class RequestSlots:
    """The batch's request slots: at most ``jobs`` requests in flight across the batch; a
    review's first request also asks the board whether new reviews may start. Once ``stop``
    is set nothing more is admitted.

    Reviews start in the manifest's order: there are more workers than slots, so without
    turns the next free slot went to whichever worker asked first, and ``--jobs 1`` with a
    token budget could run the second entry and leave the first pending. A review's first
    request waits until every earlier review has started or ended (:meth:`leave`)."""

    def __init__(self, jobs: int, board: Board) -> None:
        self._sem = threading.Semaphore(jobs)
        self._board = board
        self._turns = threading.Condition()
        self._unstarted: dict[int, None] = {}  # in start order

    def queue(self, keys: Iterable[int]) -> None:
        """The reviews that will ask for a first slot, in the order they are to start."""
        with self._turns:
            self._unstarted.update(dict.fromkeys(keys))

    def gate(self, key: int) -> EntryGate:
        """The :class:`~deepseek_review.reviewing.job.RequestGate` of one queued review."""
        return EntryGate(self, key)

    def leave(self, key: int) -> None:
        """The review started, or ended without starting: the next one may start."""
        with self._turns:
            if key in self._unstarted:
                del self._unstarted[key]
                self._turns.notify_all()

    def acquire(self, *, first: bool, key: int | None = None) -> bool:
        if not first or key is None:
            return self._acquire(first=first)
        try:
            return self._my_turn(key) and self._acquire(first=True)
        finally:
            self.leave(key)

    def release(self) -> None:
        self._sem.release()

    def _my_turn(self, key: int) -> bool:
        stop = self._board.stop
        with self._turns:
            while key in self._unstarted and next(iter(self._unstarted)) != key:
                if stop.is_set():
                    return False
                self._turns.wait(0.1)
        return True

    def _acquire(self, *, first: bool) -> bool:
        stop = self._board.stop
        while not self._sem.acquire(timeout=0.1):
            if stop.is_set():
                return False
        if (first and not self._board.may_start()) or (not first and stop.is_set()):
            self._sem.release()
            return False
        return True


class EntryGate:
    """One review's view of the :class:`RequestSlots`: its first request takes its turn."""

    def __init__(self, slots: RequestSlots, key: int) -> None:
        self._slots = slots
        self._key = key

    def acquire(self, *, first: bool) -> bool:
        return self._slots.acquire(first=first, key=self._key)

    def release(self) -> None:
        self._slots.release()


class PoolGate:
    """A review's view of the slots in a batch over several servers: one of the batch's
    ``jobs`` and one of a server's. :meth:`start` holds both for the next request and chooses
    its server (the review's client is that server's); the chain's later requests stay
    there. A server drained under it ends the job with an unreachable :class:`ServerError`,
    and the review starts again on another (:meth:`start`)."""

    def __init__(self, slots: RequestSlots, pool: Pool, index: int, key: Hashable) -> None:
        self._slots, self._pool, self._index, self._key = slots, pool, index, key
        self.server: Server | None = None
        self._held = False

    def start(self, *, first: bool) -> Server | None:
        """Hold a slot for the review's next request on the server chosen for it; None when
        nothing may start (halted, stopped). ``first``: the review's first request, which
        takes its turn."""
        if not self._slots.acquire(first=first, key=self._index if first else None):
            return None
        try:
            server = self._pool.take(self._key)
        except ServerError:
            self._slots.release()
            raise
        if server is None:
            self._slots.release()
            return None
        self.server, self._held = server, True
        return server

    def acquire(self, *, first: bool) -> bool:
        if self._held:  # the slots :meth:`start` took
            self._held = False
            return True
        if not self._slots.acquire(first=False):
            return False
        server = self.server
        if server is None or self._pool.take(self._key, on=server) is None:
            self._slots.release()
            if server is not None and not server.alive:
                error = ServerError(f"{safe_url(server.url)} was drained")
                error.unreachable = True
                raise error
            return False
        return True

    def release(self) -> None:
        if self.server is not None:
            self._pool.give_back(self.server)
        self._slots.release()

    def abandon(self) -> None:
        """The job ended before using the slots :meth:`start` held: give them back."""
        if self._held:
            self._held = False
            self.release()


def on_pool(gate: PoolGate, pool: Pool, done: JobResult, send: Callable[[Server], None]) -> bool:
    """``send`` a review on the server the pool gives it through ``gate``, again on another
    when that one stops answering (drained); False when it never started (the batch halts)."""
    while True:
        server = gate.start(first=not done.started)
        if server is None:
            if not done.started:
                return False
            raise Interrupted("interrupted before sending")
        try:
            send(server)
            return True
        except ServerError as exc:
            pool.drain_or_raise(server, exc)
        finally:
            gate.abandon()


class EntryEvents:
    """One entry's :class:`~deepseek_review.reviewing.job.EventSink`: its requests, counted and told
    to the board as events naming the entry."""

    def __init__(self, board: Board, topic: str, action: Action, url: str) -> None:
        self.board = board
        self.url = url
        """The endpoint's URL, which a price may name."""
        self.topic = topic
        self.action = action
        self.attempts = 0
        """HTTP requests sent for the entry (retries included)."""
        self.started = False
        """The review started: its first request got a slot and was sent."""
        self.on_answer: Callable[[], None] | None = None
        """Told of each answer (a pool: the server that gave it)."""
        self._answered: tuple[int, bool] | None = None

    def sending(self, *, first: bool, note: str | None) -> None:
        """A request holds its slot and goes out now: the one moment to say it starts, and
        to say a continuation's line (one that never gets a slot is never said)."""
        b = self.board
        with b.lock:
            b.requests += 1
            if first:
                self.started = True
                b.in_flight += 1
                b.emit("start", topic=self.topic, action=self.action)
            if note:
                b.emit("continue", topic=self.topic, message=note)

    def attempt(self) -> None:
        self.attempts += 1

    def streamed(self, tokens: int, elapsed: float) -> None:
        with self.board.lock:
            self.board.streaming[self] = tokens

    def answered(self, completion: Completion, tokens: int, estimated: bool, model: str) -> None:
        b = self.board
        with b.lock:
            b.received += tokens
            b.received_estimated = b.received_estimated or estimated
            b.streaming.pop(self, None)
        self._answered = (tokens, estimated)
        if self.on_answer is not None:
            self.on_answer()
        b.check_halts()
        b.spend.add(completion, model, self.url)
        b.check_halts()

    def failed(self, error: ReviewError) -> None:
        self.board.failed(self.topic)

    def returned(self) -> None:
        """A request gives its slot back: with its answer's tokens, or none (it failed)."""
        answered, self._answered = self._answered, None
        tokens, estimated = answered if answered is not None else (None, False)
        b = self.board
        with b.lock:
            b.requests -= 1
            b.streaming.pop(self, None)
            b.emit("answered", topic=self.topic, tokens=tokens, tokens_estimated=estimated)
