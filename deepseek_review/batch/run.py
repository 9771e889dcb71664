"""``batch``: many reviews from a manifest, in parallel, resumable, shardable, honestly reported.

Every entry does exactly what ``run`` does (the same plan, request, files and continuations);
the batch adds scheduling around it:

* the manifest is checked and planned first (:mod:`batch.manifest`): one problem anywhere and
  nothing is sent or written;
* ``jobs`` reviews run at once on one shared HTTP client per endpoint (one connection pool)
  with one :class:`~deepseek_review.chat.client.Throttle` per endpoint, so a 429 slows every job
  sending there;
* resume: an entry whose chain already exists (a primary receipt with the planned
  ``prompt_sha256``, endpoint and topic, and its request record) is ``skipped`` without a
  request; a chain left cut off is continued, never restarted. An answer without a receipt is
  not a finished review: it is listed in the report's ``orphans`` and the review is redone;
* a ``stop`` event (the CLI sets it on SIGINT/SIGTERM), ``fail_fast`` and
  ``max_total_tokens`` stop *starting* work; what is in flight finishes and is written.

The outcome is a :class:`BatchReport`: one record per entry of the shard, never fabricated.
"""

from __future__ import annotations

import contextvars
import queue
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from deepseek_review.batch.plan import (
    BatchOptions,
    PreparedBatch,
    Work,
    prepare_batch,
    remove_stale_temp_files,
)
from deepseek_review.batch.report import (
    BatchReport,
    EntryReport,
    Status,
    check_report_path,
    existing_usage,
    finding_counts,
    one_line,
    segments_usage,
    truncated_advice,
    write_report,
)
from deepseek_review.batch.schedule import (
    BatchEvent,
    Board,
    EntryEvents,
    EventFn,
    PoolGate,
    Progress,
    RequestSlots,
    on_pool,
)
from deepseek_review.batch.sizing import keep_loaded
from deepseek_review.batch.spread import grouped
from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.retry import Throttle
from deepseek_review.chat.server_hints import Advice
from deepseek_review.chat.transport import make_http_client
from deepseek_review.errors import Interrupted, ReviewError
from deepseek_review.ollama import pricing
from deepseek_review.options.table import name_of, naming_as, naming_at
from deepseek_review.records.stored import ChainSegment
from deepseek_review.reviewing.job import JobResult, job_from_plan, run_job
from deepseek_review.reviewing.job_spec import Job
from deepseek_review.reviewing.plan import ReviewPlan
from deepseek_review.reviewing.pool import Pool, Server, affinity
from deepseek_review.reviewing.segment import Segment
from deepseek_review.util.logs import log

# What the CLI and the library import from here (the rest lives in batch_plan, batch_report
# and scheduler).
__all__ = [
    "BatchEvent",
    "BatchOptions",
    "BatchReport",
    "EntryReport",
    "EventFn",
    "PreparedBatch",
    "Progress",
    "check_report_path",
    "execute_batch",
    "prepare_batch",
    "remove_stale_temp_files",
    "run_batch",
    "write_report",
]


def _client_key(plan: ReviewPlan, ep: Endpoint) -> tuple[str, str | None, Advice]:
    """Entries share a client when they share its endpoint, key and hints (--server)."""
    options = plan.options
    return ep.url, ep.api_key, Advice.of(ep, options.continuation.server, options.api_key_env)


class _Runner:
    def __init__(
        self,
        prepared: PreparedBatch,
        options: BatchOptions,
        stop: threading.Event,
        on_event: EventFn | None,
        now: Callable[[], datetime],
    ) -> None:
        self.prepared = prepared
        self.options = options
        self.root = prepared.planned.root
        self.on_event = on_event
        self.now = now
        self.pool = (
            Pool(options.endpoints, options.jobs, options.jobs_per_endpoint, stop)
            if len(options.endpoints) > 1
            else None
        )
        spend = pricing.Spend(pricing.parse(options.prices), options.max_cost)
        for w in prepared.work:  # before anything is sent: every cost must be countable
            for ep in self._endpoints(w.planned.plan):
                spend.check_priced(w.planned.plan.options.model, ep.url)
        self.board = Board(
            len(prepared.work),
            stop,
            fail_fast=options.fail_fast,
            max_total_tokens=options.max_total_tokens,
            spend=spend,
        )
        self.slots = RequestSlots(options.jobs, self.board)
        self.http = make_http_client(
            options.timeouts,
            https=any(
                ep.url.startswith("https:")
                for w in prepared.work
                for ep in self._endpoints(w.planned.plan)
            ),
        )
        # One client per endpoint, key and hints, sharing one set of connections; one throttle
        # per endpoint (a pool's server: its own), so a 429 slows every job sending there.
        throttles: dict[str, Throttle] = {}
        self.clients: dict[tuple[str, str | None, Advice], ChatClient] = {}
        for w in prepared.work:
            plan = w.planned.plan
            if self.pool is not None and self._pooled(plan):
                sends = [(s.serving(plan.endpoint), s.throttle) for s in self.pool.servers]
            else:
                sends = [(plan.endpoint, throttles.setdefault(plan.endpoint.url, Throttle(stop)))]
            for ep, throttle in sends:
                key = _client_key(plan, ep)
                if key not in self.clients:
                    self.clients[key] = ChatClient(
                        ep.url,
                        ep.api_key,
                        policy=options.retry,
                        timeouts=options.timeouts,
                        throttle=throttle,
                        http=self.http,
                        advice=key[2],
                    )

    def _pooled(self, plan: ReviewPlan) -> bool:
        """The entry goes to the pool: its endpoint is the operator's (a manifest entry that
        names its own server is sent there)."""
        return self.pool is not None and plan.endpoint.source == "endpoint"

    def _endpoints(self, plan: ReviewPlan) -> list[Endpoint]:
        """Where the entry may be sent: its endpoint, or each server of the pool."""
        if self.pool is None or not self._pooled(plan):
            return [plan.endpoint]
        return [s.serving(plan.endpoint) for s in self.pool.servers]

    # -- one entry (a worker thread) -----------------------------------------------------

    def _not_started(self, work: Work) -> EntryReport:
        reason = {
            "interrupted": "not started: interrupted",
            "budget": f"not started: {name_of('max_total_tokens')} reached",
            "cost": f"not started: {name_of('max_cost')} reached",
            "fail-fast": f"not started: {name_of('fail_fast')} after a failure",
        }.get(self.board.halt_reason or "", "not started")
        existing = work.existing
        return EntryReport(
            topic=work.topic,
            index=work.planned.entry.index,
            status="pending",
            answer_paths=[s.answer_path for s in existing],
            receipt_paths=[s.receipt_path for s in existing],
            error=reason,
            **existing_usage(existing),
        )

    def run_one(self, work: Work) -> EntryReport:
        """One entry, in a worker thread; it starts when its first request gets a slot."""
        try:
            if self.board.halt.is_set():
                return self.board.finish(self._not_started(work), started=False)
            url = work.planned.plan.endpoint.url
            events = EntryEvents(self.board, work.topic, work.action, url)
            with (
                naming_as(work.planned.plan.names),  # DEEPSEEK_REVIEW_MODEL, a config file's key
                naming_at(work.planned.entry.places),  # model (entry 3, line 12)
            ):
                report = self._review(work, events)
            report.attempts = events.attempts
            return self.board.finish(report, started=events.started)
        finally:
            self.slots.leave(work.planned.entry.index)  # started or not: the next may start

    def _review(self, work: Work, events: EntryEvents) -> EntryReport:
        """The entry's review job; what differs from ``run``: resuming what exists, and the
        report bookkeeping (every outcome is a report, an error too)."""
        plan = work.planned.plan
        if work.planned.split is not None:
            return self._review_split(work, events)
        cap = plan.options.continuation.max_continuations
        done = JobResult()
        status: Status
        error: str | None = None
        try:
            existing = _loaded(self.root, work.existing)
            if self._pooled(plan):
                self._on_pool(work, existing, events, done)
            else:
                run_job(
                    self._job(work, existing),
                    self.clients[_client_key(plan, plan.endpoint)],
                    gate=self.slots.gate(work.planned.entry.index),
                    events=events,
                    result=done,
                    now=self.now,
                )
            if done.not_started:
                return self._not_started(work)
            status = "truncated" if done.segments[-1].truncated else "ok"
            if status == "truncated":
                error = truncated_advice(done.segments, cap)
        except Interrupted as exc:
            status, error = "pending", f"interrupted: {exc.message}"
        except ReviewError as exc:
            status, error = "failed", one_line(exc)
        except Exception as exc:  # a bug must not lose the rest of the batch's report
            log.debug("internal error in %s", work.topic, exc_info=True)
            status, error = "failed", f"internal error: {type(exc).__name__}: {exc}"
        segments, new = done.segments, done.new_segments
        refined = [*done.extraction, *done.self_check]  # their tokens count as the review's
        return EntryReport(
            topic=work.topic,
            index=work.planned.entry.index,
            status=status,
            answer_paths=[s.answer_path for s in segments],
            receipt_paths=[s.receipt_path for s in segments],
            error=error,
            new_segments=len(new),
            new_tokens=sum(s.counted_tokens for s in [*new, *refined]),
            new_tokens_estimated=not all(s.usage_reported for s in [*new, *refined]),
            findings=finding_counts(self.root, done.extraction or segments, done.extraction or new),
            **segments_usage([*segments, *refined]),
        )

    def _job(self, work: Work, chain: tuple[Segment, ...]) -> Job:
        """The entry's job, extending ``chain`` (what exists of it) when there is one."""
        plan = work.planned.plan
        cap = plan.options.continuation.max_continuations
        # Continuations already on disk count against the cap.
        left = max(cap - (len(chain) - 1), 0) if chain else None
        first = work.existing[0].record if work.existing else None
        job = job_from_plan(
            plan,
            chain,
            max_continuations=left,
            label=work.topic,
            existing_git=plan.pins if first is None else first.git,
        )
        return job._replace(keep_loaded=keep_loaded(plan.prepared))

    def _on_pool(
        self, work: Work, chain: tuple[Segment, ...], events: EntryEvents, done: JobResult
    ) -> None:
        """The entry on a server of the pool: the one chosen as its first request gets a slot;
        if that server stops answering, it is drained and the entry (what it wrote of its
        chain kept) goes on on another."""
        assert self.pool is not None
        pool = self.pool
        plan = work.planned.plan
        gate = PoolGate(self.slots, pool, work.planned.entry.index, affinity(plan))
        wrote = [chain]  # what the chain is when a server is drained under it

        def send(server: Server) -> None:
            ep = server.serving(plan.endpoint)
            events.url, events.on_answer = ep.url, partial(pool.answered, server)
            try:
                run_job(
                    self._job(work, wrote[0])._replace(endpoint=ep),
                    self.clients[_client_key(plan, ep)],
                    gate=gate,
                    events=events,
                    result=done,
                    now=self.now,
                )
            finally:
                wrote[0] = tuple(done.segments)

        if not on_pool(gate, pool, done, send):
            done.not_started = True

    def _review_split(self, work: Work, events: EntryEvents) -> EntryReport:
        """A split entry's parts and synthesis (:mod:`.split_send`), each request through the
        batch's slots."""
        from deepseek_review.batch.split_send import PooledSplitEntry, SplitEntry, review_split
        from deepseek_review.trust.rule import TrustPolicy

        plan = work.planned.plan
        index = work.planned.entry.index
        entry: SplitEntry
        if self.pool is not None and self._pooled(plan):  # its parts spread over the servers
            entry = PooledSplitEntry(
                lambda p, ep: self.clients[_client_key(p, ep)],
                plan,
                self.pool,
                self.slots,
                index,
                events,
                self.now,
            )
        else:
            client = self.clients[_client_key(plan, plan.endpoint)]
            entry = SplitEntry(client, self.slots.gate(index), events, self.now)
        return review_split(
            work,
            entry,
            root=self.root,
            jobs=self.options.jobs,
            policy=TrustPolicy.configured(self.options.trusted_rev),
            resume=self.options.resume,
            halted=lambda: self._not_started(work).error or "not started",
        )

    # -- the main thread -----------------------------------------------------------------

    def run(self) -> BatchReport:
        """Every entry: the skipped reported at once, the others reviewed by the workers."""
        results: dict[int, EntryReport] = {}
        todo = grouped(self._skip(results))
        self.board.drain(self.on_event)
        try:
            self._work(todo, results)
        finally:
            self.http.close()
        self.board.drain(self.on_event)
        if self.pool is not None:
            log.info("answers by server: %s", self.pool.served())
        return self._report(results)

    def _skip(self, results: dict[int, EntryReport]) -> list[tuple[int, Work]]:
        """Report each skipped entry into ``results``; the others, by position, to work on."""
        todo: list[tuple[int, Work]] = []
        for i, w in enumerate(self.prepared.work):
            if w.action == "skip":
                report = EntryReport(
                    topic=w.topic,
                    index=w.planned.entry.index,
                    status="skipped",
                    reason=w.reason,
                    answer_paths=[s.answer_path for s in w.existing],
                    receipt_paths=[s.receipt_path for s in w.existing],
                    **existing_usage(w.existing),
                )
                results[i] = self.board.finish(report, started=False)
            else:
                todo.append((i, w))
        return todo

    def _work(self, todo: list[tuple[int, Work]], results: dict[int, EntryReport]) -> None:
        """Review ``todo`` in worker threads, reporting into ``results``; this thread checks
        the halts and passes the board's events on while they run."""
        board = self.board
        last_tick = time.monotonic()
        # Twice as many workers as request slots: while some write their files, the next
        # requests are already waiting for a slot, so the endpoint never idles on us.
        workers = 2 * self.options.jobs
        with ThreadPoolExecutor(workers, thread_name_prefix="batch") as pool:
            # Each worker runs in a copy of the caller's context: errors name options
            # as the caller's layer does (the command line: its flags).
            self.slots.queue(w.planned.entry.index for _, w in todo)
            futures = {
                pool.submit(contextvars.copy_context().run, self.run_one, w): i for i, w in todo
            }
            # Each entry's future says it is done here, once (``wait`` on the set of those
            # still running would walk all of them at every wake-up).
            finished: queue.SimpleQueue[Future[EntryReport]] = queue.SimpleQueue()
            for f in futures:
                f.add_done_callback(finished.put)
            left = len(futures)
            while left:
                for f in _finished_within(finished, 0.1):
                    results[futures[f]] = f.result()
                    left -= 1
                board.check_halts()
                if time.monotonic() - last_tick >= 0.25:  # a live line shows streaming
                    last_tick = time.monotonic()
                    board.emit("tick")
                board.drain(self.on_event)

    def _report(self, results: dict[int, EntryReport]) -> BatchReport:
        """The batch's report: every entry's, in manifest order, and the board's totals."""
        board = self.board
        planned = self.prepared.planned
        return BatchReport(
            manifest=planned.manifest.shown,
            entries=[results[i] for i in range(len(self.prepared.work))],
            orphans=list(self.prepared.orphans),
            total_tokens=None if board.estimated else board.tokens,
            estimated_tokens=board.tokens if board.estimated else None,
            stopped=board.halt_reason,
            cost=board.spend.spent(),
            beyond_usage=dict(board.spend.beyond),
            shard=str(planned.shard) if planned.shard else None,
            entries_in_manifest=planned.total_entries,
            elapsed=time.monotonic() - board.started,
        )


def _loaded(root: Path, chain: tuple[ChainSegment, ...]) -> tuple[Segment, ...]:
    """A chain left on disk, loaded to be continued (with ``continue``'s machinery)."""
    if not chain:
        return ()
    from deepseek_review.reviewing.continuation import segment_from

    return tuple(segment_from(root, cs) for cs in chain)


def _finished_within(
    finished: queue.SimpleQueue[Future[EntryReport]], timeout: float
) -> list[Future[EntryReport]]:
    """The futures that finished: waiting up to ``timeout`` for the first, then all that
    are there."""
    try:
        done = [finished.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            done.append(finished.get_nowait())
        except queue.Empty:
            return done


def execute_batch(
    prepared: PreparedBatch,
    options: BatchOptions,
    *,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> BatchReport:
    """Run a prepared batch. ``on_event`` is called in the calling thread only."""
    runner = _Runner(prepared, options, stop or threading.Event(), on_event, now)
    return runner.run()


def run_batch(
    options: BatchOptions,
    *,
    env: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
) -> BatchReport:
    """Check, plan and run a whole batch (the library entry point)."""
    prepared = prepare_batch(options, env=env)
    return execute_batch(prepared, options, stop=stop, on_event=on_event)
