"""``batch``: many reviews from a manifest, in parallel, resumable, shardable, honestly reported.

Every entry does exactly what ``run`` does (the same plan, request, files and continuations);
the batch adds scheduling around it:

* the manifest is checked and planned first (:mod:`.manifest`): one problem anywhere and
  nothing is sent or written;
* ``jobs`` reviews run at once on one shared HTTP client per endpoint (one connection pool)
  with one :class:`~deepseek_review.client.Throttle` per endpoint, so a 429 slows every job
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
import json
import logging
import os
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

import httpx

from .batch_resume import existing_chain, index_folder, trusted_files
from .calls import Completion, ProgressFn, RetryPolicy, Timeouts
from .client import ChatClient
from .context import Output
from .errors import Interrupted, OutputError, ReviewError
from .manifest import PlannedEntry, PlannedManifest, Shard, plan_manifest
from .ollama import pricing
from .options import OPTIONS, check, default, name_of
from .pipeline import (
    Chain,
    ReviewPlan,
    continue_chain,
    no_progress_message,
    plan_review,
    review_longest_name,
    send_review,
)
from .records.receipt import fast_validators
from .records.stored import ChainSegment
from .repo import find_repo_root, resolve_inside
from .resume import segment_from
from .retry import Throttle
from .segment import Segment
from .serverhints import Advice
from .storage import check_writable_dir, stale_temp_files, write_replacing
from .tokens import estimate_exchange
from .transport import make_http_client, tls_context

log = logging.getLogger("deepseek_review")

Status = Literal["ok", "skipped", "truncated", "failed", "pending"]
STATUSES: tuple[Status, ...] = ("ok", "skipped", "truncated", "failed", "pending")
Action = Literal["new", "continue", "skip"]
#: Temporary files older than this are left-overs of a killed writer and are removed.
STALE_TEMP_SECONDS = 60.0
REPORT_SCHEMA = "deepseek_review_batch_report_v1"


@dataclass(frozen=True)
class BatchOptions:
    """A batch run, as plain values (the CLI builds this from its flags)."""

    manifest: str
    format: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Flags given to ``batch`` (entry keys): between the entry and ``[defaults]``."""
    repo_root: str | None = None
    shard: str | None = None
    """``K/N`` (0-based K): run only the entries whose topic hashes to shard K of N."""
    jobs: int = default("jobs")
    fail_fast: bool = default("fail_fast")
    max_total_tokens: int | None = default("max_total_tokens")
    max_cost: float | None = default("max_cost")
    prices: Mapping[str, Any] = field(default_factory=dict)
    """The ``prices`` setting (:mod:`.ollama.pricing`): what ``max_cost`` counts in."""
    operator_prices: bool = False
    """``prices`` came from the operator (the environment), not the repository's config: only
    then may ``max_cost`` count with it (a repository could price its reviews at 0)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    resume: bool = default("resume")
    """Adopt what earlier runs left (receipts of finished or cut-off chains)."""
    trusted_rev: str | None = None
    """Adopt only receipts, answers and records committed unchanged in this git revision: in
    CI on a pull request, the base branch, so receipts the change brings are not believed."""
    report: str | None = None
    """Where the report will be written (the CLI's ``--report``): never any entry's context."""

    def __post_init__(self) -> None:
        check("jobs", self.jobs)
        if self.max_total_tokens is not None:
            check("max_total_tokens", self.max_total_tokens)
        if self.max_cost is not None:
            check("max_cost", self.max_cost)
            pricing.check_trusted(self.operator_prices)
        pricing.parse(self.prices)
        if self.shard is not None:
            Shard.parse(self.shard)


@dataclass
class EntryReport:
    """What happened to one entry. Paths and usage come from receipts that exist, only."""

    topic: str
    index: int
    status: Status
    answer_paths: list[str] = field(default_factory=list)
    receipt_paths: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    """Summed over the chain's receipts (all of them, also those of earlier runs); None when
    there are none, or when the server reported no usage for one of them (unknown, not 0)."""
    usage_reported: bool | None = None
    """Whether every receipt of the chain holds the server's count; None without receipts."""
    estimated_tokens: int | None = None
    """When some usage is unknown: counts and estimates for this run's segments, else None."""
    attempts: int = 0
    """HTTP requests this run made for the entry (retries included)."""
    error: str | None = None
    new_segments: int = 0
    """Segments (receipts) this run wrote for the entry."""
    new_tokens: int = 0
    """Tokens of the receipts this run wrote for the entry (estimated where unreported)."""
    new_tokens_estimated: bool = False
    findings: dict[str, int] | None = None
    """Finding counts by severity, from the findings file beside the chain's last segment
    (``findings = true``); None without one."""

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "index": self.index,
            "status": self.status,
            "answer_paths": list(self.answer_paths),
            "receipt_paths": list(self.receipt_paths),
            "usage": dict(self.usage) if self.usage is not None else None,
            "usage_reported": self.usage_reported,
            "estimated_tokens": self.estimated_tokens,
            "attempts": self.attempts,
            "new_segments": self.new_segments,
            "error": self.error,
            "findings": self.findings,
        }


@dataclass
class BatchReport:
    manifest: str
    entries: list[EntryReport]
    orphans: list[str] = field(default_factory=list)
    total_tokens: int | None = 0
    """Tokens of the receipts written by this run (what ``--max-total-tokens`` counts); None
    when the server reported no usage for some of them."""
    estimated_tokens: int | None = None
    """When some usage is unknown: what the budget counted, with estimates; else None."""
    stopped: str | None = None
    """Why work stopped early: ``interrupted``, ``budget``, ``cost`` or ``fail-fast``; None
    if not."""
    cost: float | None = None
    """What this run's answers cost at the ``prices`` setting; None when none had a price."""
    beyond_usage: dict[str, int] = field(default_factory=dict)
    """This run's reasoning tokens and prompt-cache hits and misses, as servers reported."""
    shard: str | None = None
    entries_in_manifest: int = 0
    elapsed: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(e.status for e in self.entries)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def complete(self) -> bool:
        return all(e.status in ("ok", "skipped") for e in self.entries)

    @property
    def status(self) -> str:
        return "complete" if self.complete else "incomplete"

    def as_json(self) -> dict[str, Any]:
        return {
            "report": REPORT_SCHEMA,
            "status": self.status,
            "counts": self.counts,
            "total_tokens": self.total_tokens,
            "estimated_tokens": self.estimated_tokens,
            "cost": self.cost,
            **self.beyond_usage,
            "stopped": self.stopped,
            "manifest": self.manifest,
            "shard": self.shard,
            "entries_in_manifest": self.entries_in_manifest,
            "elapsed_seconds": round(self.elapsed, 3),
            "orphans": list(self.orphans),
            "entries": [e.as_json() for e in self.entries],
        }


@dataclass(frozen=True)
class Work:
    """One entry of the shard and what the batch will do with it."""

    planned: PlannedEntry
    action: Action
    existing: tuple[ChainSegment, ...] = ()
    """The chain already on disk (``skip`` and ``continue``)."""

    @property
    def topic(self) -> str:
        return self.planned.topic


@dataclass(frozen=True)
class PreparedBatch:
    planned: PlannedManifest
    work: tuple[Work, ...]
    orphans: tuple[str, ...]
    removed_temp_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class Progress:
    """A snapshot of the batch, carried by every event, taken as the event happened: the
    snapshots of successive events never go back, and ``finished + in_flight + waiting`` is
    ``total`` in each."""

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
    """Pieces of the answers still streaming in: an estimate of their tokens, counted in
    ``tokens`` (as the server's count, where it gives one) once each answer is complete."""

    @property
    def finished(self) -> int:
        return sum(self.counts.values())

    @property
    def waiting(self) -> int:
        """Entries not started yet."""
        return self.total - self.finished - self.in_flight


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


# --------------------------------------------------------------------------- the run's threads

_local = threading.local()


def current_topic() -> str | None:
    """The topic the calling batch worker thread is reviewing (for log prefixes), or None."""
    topic = getattr(_local, "topic", None)
    return topic if isinstance(topic, str) else None


def _count_request(request: httpx.Request) -> None:
    _local.requests = getattr(_local, "requests", 0) + 1


class _NotStarted(Exception):
    """The review's first request was never sent (the batch stopped starting work)."""


class _RequestSlots:
    """At most ``jobs`` requests in flight across the batch; the gate for new reviews.

    A review *starts* when its first request gets a slot: that is where budget, fail-fast and
    interrupts stop new work. Writing an answer holds no slot, so while one review's files
    are written the next request is already on its way and the server stays busy.
    """

    def __init__(self, jobs: int, stop: threading.Event, may_start: Callable[[], bool]) -> None:
        self._sem = threading.Semaphore(jobs)
        self._stop = stop
        self._may_start = may_start

    def acquire(self) -> None:
        first = getattr(_local, "first_request", False)
        while not self._sem.acquire(timeout=0.1):
            if self._stop.is_set():
                raise _NotStarted() if first else Interrupted("interrupted before sending")
        if first:
            _local.first_request = False
            if not self._may_start():
                self._sem.release()
                raise _NotStarted()
        elif self._stop.is_set():
            self._sem.release()
            raise Interrupted("interrupted before sending")

    def release(self) -> None:
        self._sem.release()


def _client_key(plan: ReviewPlan) -> tuple[str, str | None, Advice]:
    """Entries share a client when they share its endpoint, key and hints (--server)."""
    ep, options = plan.endpoint, plan.options
    return ep.url, ep.api_key, Advice.of(ep, options.continuation.server, options.api_key_env)


class _BatchClient(ChatClient):
    """A shared client whose requests each take one of the batch's request slots."""

    slots: _RequestSlots | None = None
    on_usage: Callable[[int, bool], None] | None = None
    """Told the tokens of each answer as it arrives, before its slot is given back, and
    whether they are an estimate (the server reported no usage)."""
    on_failure: Callable[[], None] | None = None
    """Told of a request that failed for good, before its slot is given back."""
    on_cost: Callable[[Completion, str, str], None] | None = None
    """Told of each answer (with its model and URL), for what it cost."""
    on_sending: Callable[[], None] | None = None
    """Told that a request holds its slot and is sent now."""
    on_streamed: Callable[[int], None] | None = None
    """Told how many pieces of the answer have streamed in so far."""
    on_returned: Callable[[], None] | None = None
    """Told that a request is over (answered or not), before its slot is given back."""

    def complete(
        self,
        body: bytes,
        *,
        model: str,
        stream: bool,
        progress: ProgressFn | None = None,
    ) -> Completion:
        if self.slots is None:
            return super().complete(body, model=model, stream=stream, progress=progress)
        self.slots.acquire()

        def streamed(pieces: int, elapsed: float) -> None:
            if self.on_streamed is not None:
                self.on_streamed(pieces)
            if progress is not None:
                progress(pieces, elapsed)

        try:
            if self.on_sending is not None:
                self.on_sending()
            completion = super().complete(body, model=model, stream=stream, progress=streamed)
            if self.on_usage is not None:
                if completion.usage is not None:
                    self.on_usage(completion.usage.total_tokens, False)
                else:
                    guess = estimate_exchange(len(body), completion.content, completion.reasoning)
                    self.on_usage(guess, True)
            if self.on_cost is not None:
                self.on_cost(completion, model, self.url)
            return completion
        except ReviewError as exc:
            if self.on_failure is not None and not isinstance(exc, Interrupted):
                self.on_failure()
            raise
        finally:
            if self.on_returned is not None:
                self.on_returned()
            self.slots.release()


def remove_stale_temp_files(folder: Path, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove ``.deepseek-review-*.tmp`` left by a killed writer (only old ones)."""
    removed = []
    cutoff = time.time() - older_than
    for path in stale_temp_files(folder):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed


def _report_output(options: BatchOptions) -> tuple[Output, ...]:
    """The report file as an :class:`Output`, when it lies inside the repository."""
    if options.report is None:
        return ()
    try:
        root = find_repo_root(options.repo_root)
        _, rel = resolve_inside(root, os.path.abspath(options.report), what=name_of("report"))
    except ReviewError:
        return ()
    return (Output(rel, "the batch report"),)


def prepare_batch(
    options: BatchOptions, *, env: Mapping[str, str] | None = None, clean: bool = True
) -> PreparedBatch:
    """Check and plan the manifest, index what earlier runs left, and decide each entry.

    Raises :class:`~deepseek_review.manifest.ManifestError` (nothing sent, nothing written)
    when the manifest has problems. ``clean`` removes stale temporary files of killed runs.
    """
    # Load the CA bundle (~50 ms, without the GIL) while the manifest is planned.
    tls = threading.Thread(target=tls_context, name="tls-context", daemon=True)
    tls.start()
    planned = plan_manifest(
        Path(options.manifest),
        fmt=options.format,
        overrides=options.overrides,
        shard=Shard.parse(options.shard) if options.shard else None,
        repo_root=options.repo_root,
        retry=options.retry,
        timeouts=options.timeouts,
        env=env,
        plan=partial(plan_review, check_output=False),  # each folder once, below
        outputs=_report_output(options),
    )
    folders = list(dict.fromkeys(p.plan.out_dir for p in planned.entries))
    for folder in folders:  # before anything is sent (a dry run finds it too)
        there = [p for p in planned.entries if p.plan.out_dir == folder]
        names = [review_longest_name(p.plan.options) for p in there]
        longest = max(names, key=lambda n: len(n.encode("utf-8")))
        first = there[names.index(longest)]
        shown = f"output_dir {first.plan.options.output_dir} (entry {first.topic})"
        check_writable_dir(folder, shown=shown, root=planned.root, longest=longest)
    removed: list[str] = []
    if clean:
        for folder in folders:
            for path in remove_stale_temp_files(folder):
                removed.append(path.relative_to(planned.root).as_posix())
    indexes = {folder: index_folder(planned.root, folder) for folder in folders}
    trusted = trusted_files(options.trusted_rev, planned.root, folders)
    work = []
    for p in planned.entries:
        chain = (
            existing_chain(indexes[p.plan.out_dir], planned.root, p, trusted)
            if options.resume
            else None
        )
        if chain is None:
            work.append(Work(p, "new"))
        elif chain[-1].finish_reason == "length":
            work.append(Work(p, "continue", tuple(chain)))
        else:
            work.append(Work(p, "skip", tuple(chain)))
    orphans = [o for idx in indexes.values() for o in idx.orphans]
    tls.join()
    return PreparedBatch(planned, tuple(work), tuple(orphans), tuple(removed))


# --------------------------------------------------------------------------- running


def _usage_fields(chain: Sequence[tuple[Mapping[str, int], bool]]) -> dict[str, Any]:
    """A report entry's ``usage`` and ``usage_reported`` from its receipts' (usage, whether
    the server reported it): a chain with an unknown count has an unknown sum, not a low one."""
    if not chain:
        return {"usage": None, "usage_reported": None}
    if not all(reported for _, reported in chain):
        return {"usage": None, "usage_reported": False}
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    usage = {k: sum(int(u.get(k, 0)) for u, _ in chain) for k in keys}
    return {"usage": usage, "usage_reported": True}


def _existing_usage(existing: Sequence[ChainSegment]) -> dict[str, Any]:
    return _usage_fields([(s.receipt.usage, s.usage_reported) for s in existing])


def _finding_counts(root: Path, segments: list[Segment]) -> dict[str, int] | None:
    from .finding.sidecar import counts_beside

    return counts_beside(root, segments[-1].answer_path) if segments else None


def _segments_usage(segments: Sequence[Segment]) -> dict[str, Any]:
    fields = _usage_fields([(s.usage.as_dict(), s.usage_reported) for s in segments])
    if fields["usage_reported"] is False:
        fields["estimated_tokens"] = sum(s.counted_tokens for s in segments)
    return fields


def _truncated_advice(segments: Sequence[Segment], cap: int) -> str:
    """What to do about a chain still cut off: advice that works. (A different ``max_tokens``
    changes the request, so the review would start over; a plain re-run sends nothing once
    ``max_continuations`` is used up; at the same cap, a segment that added no text would be
    repeated for nothing.)"""
    last = segments[-1]
    used = len(segments) - 1
    more = f"max_continuations (e.g. {OPTIONS['max_continuations'].long_flag} {2 * max(cap, 1)})"
    if last.made_no_progress:
        also = f" and {more}" if used >= cap else ""
        return (
            f"{no_progress_message(last)}; raise continuation_max_tokens (the cap of each "
            f"continuation){also} and run the batch again to continue it"
        )
    return (
        f"still cut off at the token cap after {used} continuation(s) (max_continuations "
        f"{cap}); to continue it, run the batch again with a higher {more}, or run "
        f"`deepseek-review continue {last.answer_path}`; a different max_tokens would restart "
        "the review instead"
    )


def _one_line(exc: ReviewError) -> str:
    text = exc.message + (f" ({exc.hint})" if exc.hint else "")
    return " ".join(text.split())


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
        self.stop = stop
        self.on_event = on_event
        self.now = now
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
        self.streaming: dict[int, int] = {}
        """Pieces streamed so far of each answer still arriving, by worker thread."""
        self.started = time.monotonic()
        self.spend = pricing.Spend(pricing.parse(options.prices), options.max_cost)
        for w in prepared.work:  # before anything is sent: every cost must be countable
            self.spend.check_priced(w.planned.plan.options.model, w.planned.plan.endpoint.url)
        self.http = make_http_client(
            options.timeouts,
            https=any(w.planned.plan.endpoint.url.startswith("https:") for w in prepared.work),
            connections=options.jobs,
            on_request=_count_request,
        )
        self.slots = _RequestSlots(options.jobs, stop, self._may_start)
        self.throttles: dict[str, Throttle] = {}
        self.clients: dict[tuple[str, str | None, Advice], _BatchClient] = {}
        for w in prepared.work:
            ep = w.planned.plan.endpoint
            throttle = self.throttles.setdefault(ep.url, Throttle(stop))
            key = _client_key(w.planned.plan)
            if key not in self.clients:
                client = _BatchClient(
                    ep.url,
                    ep.api_key,
                    policy=options.retry,
                    timeouts=options.timeouts,
                    throttle=throttle,
                    http=self.http,
                    advice=key[2],
                )
                client.slots = self.slots
                client.on_usage = self._received
                client.on_cost = self._spent
                client.on_failure = self._request_failed
                client.on_sending = self._sending
                client.on_streamed = self._streamed
                client.on_returned = self._returned
                self.clients[key] = client

    # -- bookkeeping (any thread) --------------------------------------------------------

    def _snapshot(self) -> Progress:
        return Progress(
            total=len(self.prepared.work),
            counts={s: self.counts.get(s, 0) for s in STATUSES},
            in_flight=self.in_flight,
            tokens=max(self.tokens, self.received),
            elapsed=time.monotonic() - self.started,
            tokens_estimated=self.estimated or self.received_estimated,
            requests=self.requests,
            streaming=sum(self.streaming.values()),
        )

    def _emit(self, kind: Any, **kw: Any) -> None:
        with self.lock:
            self.events.put(BatchEvent(kind=kind, progress=self._snapshot(), **kw))

    def _halt(self, reason: str, message: str) -> None:
        with self.lock:
            if self.halt.is_set():
                return
            self.halt_reason = reason
            self.halt.set()
        self._emit("halt", message=message)

    def _check_halts(self) -> None:
        if self.stop.is_set():
            self._halt(
                "interrupted",
                "interrupted: starting no new reviews; the ones in flight finish and are written",
            )
        budget = self.options.max_total_tokens
        used = max(self.tokens, self.received)
        if budget is not None and used >= budget:
            how = (
                f"about {used} tokens (estimated: the server reported no usage)"
                if self.estimated or self.received_estimated
                else f"{used} tokens"
            )
            self._halt(
                "budget",
                f"token budget reached: this run's answers used {how} "
                f"({name_of('max_total_tokens')} {budget}); starting no new reviews",
            )
        if self.spend.reached():
            self._halt(
                "cost",
                f"cost limit reached: this run's answers cost {self.spend.cost:g} "
                f"({name_of('max_cost')} {self.options.max_cost:g}); starting no new reviews",
            )

    def _spent(self, completion: Completion, model: str, url: str) -> None:
        self.spend.add(completion, model, url)
        self._check_halts()

    def _request_failed(self) -> None:
        if self.options.fail_fast:
            topic = current_topic()
            self._halt(
                "fail-fast", f"{topic} failed: {name_of('fail_fast')}, starting no new reviews"
            )

    def _received(self, tokens: int, estimated: bool) -> None:
        with self.lock:
            self.received += tokens
            self.received_estimated = self.received_estimated or estimated
            self.streaming.pop(threading.get_ident(), None)
        _local.answered = (tokens, estimated)
        self._check_halts()

    def _may_start(self) -> bool:
        """Called as a review's first request gets its slot: start it, unless halted."""
        self._check_halts()
        with self.lock:
            if self.halt.is_set():
                return False
        _local.starting = True
        return True

    def _sending(self) -> None:
        """A request holds its slot and goes out now: the one moment to say it starts."""
        with self.lock:
            self.requests += 1
            if getattr(_local, "starting", False):
                _local.starting, _local.started = False, True
                self.in_flight += 1
                self._emit("start", topic=current_topic(), action=getattr(_local, "action", None))
            note, _local.note = getattr(_local, "note", None), None
            if note:
                self._emit("continue", topic=current_topic(), message=note)

    def _announce(self, message: str) -> None:
        """A continuation's line, kept until its request holds a slot (see ``_sending``):
        one that never gets a slot (the batch was interrupted) is never said."""
        _local.note = message

    def _streamed(self, pieces: int) -> None:
        with self.lock:
            self.streaming[threading.get_ident()] = pieces

    def _returned(self) -> None:
        """A request gives its slot back: with its answer's tokens, or none (it failed)."""
        answered, _local.answered = getattr(_local, "answered", None), None
        tokens, estimated = answered if answered is not None else (None, False)
        with self.lock:
            self.requests -= 1
            self.streaming.pop(threading.get_ident(), None)
            self._emit("answered", topic=current_topic(), tokens=tokens, tokens_estimated=estimated)

    def _finish(self, report: EntryReport, *, started: bool) -> EntryReport:
        with self.lock:
            if started:
                self.in_flight -= 1
            self.counts[report.status] += 1
            self.tokens += report.new_tokens
            self.estimated = self.estimated or report.new_tokens_estimated
            self._emit("done", entry=report, topic=report.topic)
        if report.status == "failed" and self.options.fail_fast:
            self._halt(
                "fail-fast",
                f"{report.topic} failed: {name_of('fail_fast')}, starting no new reviews",
            )
        self._check_halts()
        return report

    # -- one entry (a worker thread) -----------------------------------------------------

    def _not_started(self, work: Work) -> EntryReport:
        reason = {
            "interrupted": "not started: interrupted",
            "budget": f"not started: {name_of('max_total_tokens')} reached",
            "cost": f"not started: {name_of('max_cost')} reached",
            "fail-fast": f"not started: {name_of('fail_fast')} after a failure",
        }.get(self.halt_reason or "", "not started")
        existing = work.existing
        return EntryReport(
            topic=work.topic,
            index=work.planned.entry.index,
            status="pending",
            answer_paths=[s.answer_path for s in existing],
            receipt_paths=[s.receipt_path for s in existing],
            error=reason,
            **_existing_usage(existing),
        )

    def run_one(self, work: Work) -> EntryReport:
        """One entry, in a worker thread; it starts when its first request gets a slot."""
        if self.halt.is_set():
            return self._finish(self._not_started(work), started=False)
        _local.topic, _local.action = work.topic, work.action
        _local.requests, _local.started, _local.first_request = 0, False, True
        _local.starting, _local.note, _local.answered = False, None, None
        try:
            report = self._review(work)
        finally:
            attempts = int(getattr(_local, "requests", 0))
            started = bool(getattr(_local, "started", False))
            _local.topic = _local.action = _local.note = None
            _local.first_request = _local.starting = False
        report.attempts = attempts
        return self._finish(report, started=started)

    def _review(self, work: Work) -> EntryReport:
        plan = work.planned.plan
        o = plan.options
        client = self.clients[_client_key(plan)]
        segments: list[Segment] = []
        old = 0
        status: Status
        error: str | None = None
        try:
            if work.action == "continue":
                segments.extend(segment_from(self.root, cs) for cs in work.existing)
                old = len(segments)
            else:
                primary_only = replace(o, continuation=replace(o.continuation, max_continuations=0))
                first = send_review(replace(plan, options=primary_only), client, now=self.now)
                segments.extend(first.segments)
            chain = Chain.from_plan(plan, segments)
            chain.missing_usage_told = not all(s.usage_reported for s in segments[old:])
            cap = o.continuation.max_continuations
            left = cap - (len(segments) - 1)
            if left > 0:
                continue_chain(
                    chain,
                    replace(o.continuation, max_continuations=left),
                    client,
                    allow_truncated_prompt=o.allow_truncated_prompt,
                    keep_reasoning=o.keep_reasoning,
                    now=self.now,
                    announce=self._announce,
                )
            status = "truncated" if segments[-1].truncated else "ok"
            if status == "truncated":
                error = _truncated_advice(segments, cap)
        except _NotStarted:
            return self._not_started(work)
        except Interrupted as exc:
            status, error = "pending", f"interrupted: {exc.message}"
        except ReviewError as exc:
            status, error = "failed", _one_line(exc)
        except Exception as exc:  # a bug must not lose the rest of the batch's report
            log.debug("internal error in %s", work.topic, exc_info=True)
            status, error = "failed", f"internal error: {type(exc).__name__}: {exc}"
        new = segments[old:]
        return EntryReport(
            topic=work.topic,
            index=work.planned.entry.index,
            status=status,
            answer_paths=[s.answer_path for s in segments],
            receipt_paths=[s.receipt_path for s in segments],
            error=error,
            new_segments=len(new),
            new_tokens=sum(s.counted_tokens for s in new),
            new_tokens_estimated=not all(s.usage_reported for s in new),
            findings=_finding_counts(self.root, segments),
            **_segments_usage(segments),
        )

    # -- the main thread -----------------------------------------------------------------

    def _drain(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if self.on_event is not None:
                self.on_event(event)

    def run(self) -> BatchReport:
        results: dict[int, EntryReport] = {}
        todo: list[tuple[int, Work]] = []
        for i, w in enumerate(self.prepared.work):
            if w.action == "skip":
                report = EntryReport(
                    topic=w.topic,
                    index=w.planned.entry.index,
                    status="skipped",
                    answer_paths=[s.answer_path for s in w.existing],
                    receipt_paths=[s.receipt_path for s in w.existing],
                    **_existing_usage(w.existing),
                )
                results[i] = self._finish(report, started=False)
            else:
                todo.append((i, w))
        self._drain()
        last_tick = time.monotonic()
        try:
            # Twice as many workers as request slots: while some write their files, the next
            # requests are already waiting for a slot, so the endpoint never idles on us.
            workers = 2 * self.options.jobs
            with ThreadPoolExecutor(workers, thread_name_prefix="batch") as pool:
                # Each worker runs in a copy of the caller's context: errors name options
                # as the caller's layer does (the command line: its flags).
                futures = {
                    pool.submit(contextvars.copy_context().run, self.run_one, w): i for i, w in todo
                }
                # Compile the receipt schema while the first requests are out, rather than
                # in every worker at its first receipt (or before anything is sent).
                fast_validators()
                waiting = set(futures)
                while waiting:
                    done, waiting = wait(waiting, timeout=0.1, return_when=FIRST_COMPLETED)
                    for f in done:
                        results[futures[f]] = f.result()
                    self._check_halts()
                    if time.monotonic() - last_tick >= 0.25:  # a live line shows streaming
                        last_tick = time.monotonic()
                        self._emit("tick")
                    self._drain()
        finally:
            self.http.close()
        self._drain()
        planned = self.prepared.planned
        return BatchReport(
            manifest=planned.manifest.shown,
            entries=[results[i] for i in range(len(self.prepared.work))],
            orphans=list(self.prepared.orphans),
            total_tokens=None if self.estimated else self.tokens,
            estimated_tokens=self.tokens if self.estimated else None,
            stopped=self.halt_reason,
            cost=self.spend.spent(),
            beyond_usage=dict(self.spend.beyond),
            shard=str(planned.shard) if planned.shard else None,
            entries_in_manifest=planned.total_entries,
            elapsed=time.monotonic() - self.started,
        )


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


# --------------------------------------------------------------------------- the report file


def check_report_path(path: Path) -> None:
    """Refuse, before anything is sent, a ``--report`` path that could not be written after
    the whole batch ran: a missing or unwritable folder, or a folder in the file's place."""
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"{name_of('report')} {path}: folder {folder} does not exist")
    if path.is_dir():
        raise OutputError(f"{name_of('report')} {path}: is a folder")
    check_writable_dir(folder, shown=f"{name_of('report')} {path}: folder {folder}")


def write_report(report: BatchReport, path: Path) -> None:
    """Write the report atomically (temp + fsync + rename): it may replace an older one."""
    data = (json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        write_replacing(path, data)
    except OSError as exc:
        raise OutputError(
            f"{name_of('report')} {path}: cannot write ({exc.strerror or exc})"
        ) from None
