"""Running a batch entry with ``split = true``: its parts, then its synthesis, as ``run
--split`` runs them (:func:`deepseek_review.reviewing.split_run.run_split`: the same files,
the same split record, the same resuming), with the batch's scheduling around each request.

Every request of the entry (a part's, a merge's, the synthesis's, and their continuations)
takes one of the batch's ``jobs`` slots; each part's first request asks the board whether new
work may start, so a budget, ``fail_fast`` or an interrupt stops starting parts as it stops
starting entries. The entry is one entry of the report: it starts with its first request,
its usage is every receipt's, and its status is the worst of its reviews' (a failed part
fails the entry with a one-line reason; the others still finish). Over a pool of servers
(:class:`PooledSplitEntry`), each review goes where the pool sends it, as an ordinary entry
does, and moves on with what it wrote when its server is drained.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.batch.report import EntryReport, Status, existing_usage, one_line
from deepseek_review.batch.schedule import EntryEvents, PoolGate, RequestSlots, on_pool
from deepseek_review.errors import InputError, Interrupted, ReviewError
from deepseek_review.reviewing.job import JobResult, job_from_plan, run_job
from deepseek_review.reviewing.pipeline import ReviewResult
from deepseek_review.reviewing.pool import Pool, Server, affinity, going_on
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.batch.plan import Work
    from deepseek_review.chat.client import ChatClient
    from deepseek_review.chat.endpoint import Endpoint
    from deepseek_review.chat.types import ProgressFn
    from deepseek_review.reviewing.job_spec import RequestGate
    from deepseek_review.reviewing.plan import ReviewPlan
    from deepseek_review.reviewing.segment import Segment
    from deepseek_review.reviewing.split_plan import SplitReview
    from deepseek_review.reviewing.split_run import PartOutcome, SplitOutcome
    from deepseek_review.trust.rule import TrustPolicy


class PartEvents(EntryEvents):
    """One review of a split entry, told to the board as the entry's: only the entry's very
    first request starts it (one entry in flight, however many parts it has), and every
    attempt counts as the entry's."""

    def __init__(self, entry: EntryEvents) -> None:
        super().__init__(entry.board, entry.topic, entry.action, entry.url)
        self.entry = entry

    def sending(self, *, first: bool, note: str | None) -> None:
        with self.board.lock:  # reentrant: the board's own bookkeeping takes it too
            lead = first and not self.entry.started
            super().sending(first=lead, note=note)
            if lead:
                self.entry.started = True

    def attempt(self) -> None:
        with self.board.lock:
            self.entry.attempts += 1


class SplitEntry:
    """A split entry's run: how each of its reviews is sent through the batch's gate, and
    what this run wrote."""

    def __init__(
        self,
        client: ChatClient,
        gate: RequestGate,
        events: EntryEvents,
        now: Callable[[], datetime],
    ) -> None:
        self.client, self.gate, self.events, self.now = client, gate, events, now
        self.lock = threading.Lock()
        self.new: list[Segment] = []

    def send(self, plan: ReviewPlan, progress: ProgressFn | None) -> ReviewResult | None:
        """Send one part, merge or the synthesis (None: the gate refused to start it)."""
        done = JobResult()
        try:
            run_job(
                job_from_plan(plan, label=plan.options.topic),
                self.client,
                gate=self.gate,
                events=PartEvents(self.events),
                result=done,
                now=self.now,
            )
        finally:  # what was written counts, also when the review then failed
            with self.lock:
                self.new += done.new_segments
        if done.not_started:
            return None
        files = plan.receipt_paths or tuple(f.path for f in plan.files)
        return ReviewResult(tuple(done.segments), plan.endpoint.url, files)


class PooledSplitEntry(SplitEntry):
    """A split entry in a batch over several servers: each of its reviews takes one of the
    batch's slots and one of a server's (:class:`PoolGate`), so its parts are spread over
    the pool as entries are; a review whose server stops answering is moved, with what it
    wrote of its chain, to another (the server drained once for the whole batch)."""

    def __init__(
        self,
        client_for: Callable[[ReviewPlan, Endpoint], ChatClient],
        plan: ReviewPlan,
        pool: Pool,
        slots: RequestSlots,
        index: int,
        events: EntryEvents,
        now: Callable[[], datetime],
    ) -> None:
        first = client_for(plan, pool.servers[0].serving(plan.endpoint))
        super().__init__(first, slots.gate(index), events, now)
        self.client_for, self.pool, self.slots, self.index = client_for, pool, slots, index

    def send(self, plan: ReviewPlan, progress: ProgressFn | None) -> ReviewResult | None:
        done = JobResult()
        gate = PoolGate(self.slots, self.pool, self.index, affinity(plan))
        url = [plan.endpoint.url]  # the server that answered last

        def send(server: Server) -> None:
            ep = server.serving(plan.endpoint)
            events = PartEvents(self.events)
            events.url, events.on_answer = ep.url, partial(self.pool.answered, server)
            url[0] = ep.url
            run_job(
                going_on(plan, tuple(done.segments))._replace(
                    endpoint=ep, label=plan.options.topic
                ),
                self.client_for(plan, ep),
                gate=gate,
                events=events,
                result=done,
                now=self.now,
            )

        try:
            if not on_pool(gate, self.pool, done, send):
                return None
        finally:
            with self.lock:
                self.new += done.new_segments
        files = plan.receipt_paths or tuple(f.path for f in plan.files)
        return ReviewResult(tuple(done.segments), url[0], files)


def review_split(
    work: Work,
    entry: SplitEntry,
    *,
    root: Path,
    jobs: int,
    policy: TrustPolicy,
    resume: bool,
    halted: Callable[[], str],
) -> EntryReport:
    """Run a split entry's parts not done yet and its synthesis; its report. ``halted``:
    what a part not started for a halt is reported with."""
    from deepseek_review.reviewing.split_run import run_split

    split = work.planned.split
    assert split is not None, "a split entry has its parts"
    review = replace(split, jobs=jobs)
    try:
        outcome = run_split(
            review, entry.client, send=entry.send, policy=policy, resume=resume, now=entry.now
        )
    except Interrupted as exc:
        return _report(work, review, entry, "pending", f"interrupted: {exc.message}", root)
    except ReviewError as exc:
        return _report(work, review, entry, "failed", one_line(exc), root)
    except Exception as exc:  # a bug must not lose the rest of the batch's report
        log.debug("internal error in %s", work.topic, exc_info=True)
        bug = f"internal error: {type(exc).__name__}: {exc}"
        return _report(work, review, entry, "failed", bug, root)
    status, error = _status(outcome, halted())
    return _report(work, review, entry, status, error, root, outcome)


def _status(outcome: SplitOutcome, halted: str) -> tuple[Status, str | None]:
    """The entry's status: failed when a review failed (naming it), pending when a halt left
    some not started, truncated when one is still cut off, else ok (skipped: nothing sent)."""
    reviews = [*outcome.parts, *outcome.merges, outcome.synthesis]
    n = len(outcome.parts)
    done = sum(1 for p in outcome.parts if p.status == "done")
    failed = [o for o in reviews if o.status == "failed" and o.error is not None]
    if failed:
        o = failed[0]
        more = f" ({len(failed) - 1} more failed)" if len(failed) > 1 else ""
        assert o.error is not None
        return "failed", (
            f"{_named(o, n)} failed: {one_line(o.error)}{more}; {done} of {n} parts done, "
            "run the batch again to resume"
        )
    if any(o.status == "not run" for o in outcome.parts) or outcome.synthesis.status == "not run":
        return "pending", f"{halted} ({done} of {n} parts done)"
    cut = [o for o in reviews if o.status == "truncated" and o.error is not None]
    if cut:
        assert cut[0].error is not None
        return "truncated", one_line(cut[0].error)
    if any(not o.resumed for o in reviews if o.status == "done"):
        return "ok", None
    return "skipped", None


def _named(o: PartOutcome, parts: int) -> str:
    if o.round:
        return f"merge {o.number} (round {o.round})"
    return "the synthesis" if o.number == 0 else f"part {o.number} of {parts}"


def _report(
    work: Work,
    review: SplitReview,
    entry: SplitEntry,
    status: Status,
    error: str | None,
    root: Path,
    outcome: SplitOutcome | None = None,
) -> EntryReport:
    """The entry's report: every receipt of its reviews (parts, merges, synthesis; those of
    earlier runs too), this run's segments, the split record and how far the parts got."""
    reviews: Sequence[PartOutcome] = ()
    if outcome is not None:
        reviews = [*outcome.parts, *outcome.merges, outcome.synthesis]
    receipts = [r for o in reviews for r, _, _ in o.chain]
    new = entry.new
    report = EntryReport(
        topic=work.topic,
        index=work.planned.entry.index,
        status=status,
        answer_paths=[a for o in reviews for _, a, _ in o.chain],
        receipt_paths=receipts,
        error=error,
        new_segments=len(new),
        new_tokens=sum(s.counted_tokens for s in new),
        new_tokens_estimated=not all(s.usage_reported for s in new),
        **_usage(root, receipts),
    )
    report.split = _split_data(review, outcome)
    if outcome is not None and outcome.synthesis.chain:
        from deepseek_review.finding.sidecar import counts_beside

        report.findings = counts_beside(root, outcome.synthesis.chain[-1][1])
    return report


def _usage(root: Path, receipts: Sequence[str]) -> dict[str, Any]:
    """Usage summed over every receipt (unknown when one does not load)."""
    from deepseek_review.records.stored import load_segment

    try:
        return existing_usage([load_segment(root, r) for r in receipts])
    except InputError:
        return {"usage": None, "usage_reported": False}


def _split_data(review: SplitReview, outcome: SplitOutcome | None) -> dict[str, Any]:
    """The report's ``split``: how many parts, how many done (and of those, from earlier
    runs), the synthesis's status and answer, the split record this run wrote."""
    parts = outcome.parts if outcome is not None else ()
    synthesis = outcome.synthesis if outcome is not None else None
    return {
        "parts": len(review.parts),
        "parts_done": sum(1 for o in parts if o.status == "done"),
        "parts_resumed": sum(1 for o in parts if o.status == "done" and o.resumed),
        "merges": 0 if outcome is None else len(outcome.merges),
        "synthesis": "not run" if synthesis is None else synthesis.status,
        "synthesis_answer": synthesis.chain[-1][1] if synthesis and synthesis.chain else None,
        "not_reviewed": len(review.split.not_reviewed),
        "record": None if outcome is None else outcome.record_path,
    }
