"""What a review job is handed: the chain to extend (:class:`Job`), the request gate it asks
before each request, and the event sink it tells what its requests do.

``run`` and ``continue`` hand it an :class:`OpenGate` and a :class:`ProgressSink`; a batch its
scheduler's slots and one sink per entry (:mod:`batch.schedule`). Both are plain arguments of
:func:`reviewing.job.run_job`: nothing is read from the thread or set on the shared client.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.tokens import Count
from deepseek_review.chat.types import Completion, ProgressFn
from deepseek_review.context.gather import ContextFile
from deepseek_review.errors import ReviewError
from deepseek_review.records.naming import SELF_CHECK_TOPIC_SUFFIX
from deepseek_review.reviewing.extraction import (
    Extraction,
    SelfCheck,
    extraction_topic,
)
from deepseek_review.reviewing.plan import (
    ContinuationOptions,
    ReviewPlan,
    extraction_mode,
    known_server,
)
from deepseek_review.reviewing.request import BodyOptions, PreparedRequest, WireMessage
from deepseek_review.reviewing.segment import Segment
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.finding.sidecar import Hook as FindingsHook


class RequestGate(Protocol):
    """Admits each request of a job (a batch: one of its ``jobs`` slots, and its halts)."""

    def acquire(self, *, first: bool) -> bool:
        """Wait for leave to send; ``first``: the job's first request (where a batch decides
        whether the review starts at all). False: do not send; nothing is held."""

    def release(self) -> None:
        """The request admitted last is over (answered or not)."""


class EventSink(Protocol):
    """Told what a job's requests do, in order, from the job's thread."""

    def sending(self, *, first: bool, note: str | None) -> None:
        """A request was admitted and goes out now; ``note``: a continuation's line."""

    def attempt(self) -> None:
        """One HTTP attempt of the request (retries included) is sent."""

    def streamed(self, tokens: int, elapsed: float) -> None:
        """The answer's tokens streamed in so far (estimated from its bytes of text)."""

    def answered(self, completion: Completion, tokens: int, estimated: bool, model: str) -> None:
        """The answer arrived: its tokens (an estimate when the server reported none); the
        completion and model say what it cost."""

    def failed(self, error: ReviewError) -> None:
        """The request failed for good (not told for an interruption)."""

    def returned(self) -> None:
        """The request is over, answered or not; the gate is released right after."""


class OpenGate:
    """``run`` and ``continue``: every request goes at once."""

    def acquire(self, *, first: bool) -> bool:
        return True

    def release(self) -> None:
        return None


@dataclass
class ProgressSink:
    """``run`` and ``continue``: continuation lines logged, streaming shown by ``progress``."""

    progress: ProgressFn | None = None

    def sending(self, *, first: bool, note: str | None) -> None:
        if note:
            log.info("%s", note)

    def attempt(self) -> None:
        return None

    def streamed(self, tokens: int, elapsed: float) -> None:
        if self.progress is not None:
            self.progress(tokens, elapsed)

    def answered(self, completion: Completion, tokens: int, estimated: bool, model: str) -> None:
        return None

    def failed(self, error: ReviewError) -> None:
        return None

    def returned(self) -> None:
        return None


class Primary(NamedTuple):
    """The planned primary request (sent when no segment exists yet)."""

    prepared: PreparedRequest
    token_estimate: int
    files: tuple[ContextFile, ...]
    template: tuple[str, str]
    git: Mapping[str, Any] | None = None
    """What the request record pins in git (:mod:`deepseek_review.context.pins`)."""
    token_count: Count | None = None
    """The prompt's tokens as the plan counted them (:attr:`ReviewPlan.count`)."""


class Job(NamedTuple):
    """A chain to extend: where it is written, what it asks, and what exists of it."""

    root: Path
    out_dir: Path
    out_shown: str
    """``out_dir`` as the user named it, in errors."""
    topic: str
    endpoint: Endpoint
    base_messages: tuple[WireMessage, ...]
    body: BodyOptions
    """Options of the primary request (model, temperature, extra body)."""
    continuation: ContinuationOptions
    """``max_continuations``: how many this job may send."""
    existing: tuple[Segment, ...] = ()
    primary: Primary | None = None
    """Sent first when ``existing`` is empty."""
    allow_truncated_prompt: bool = False
    keep_reasoning: bool = False
    force: bool = False
    """Send the first continuation even though the last segment ended normally."""
    label: str | None = None
    """Put on the job's log lines (a batch: the entry's topic)."""
    reasoning: str | None = None
    """The ``reasoning`` level, checked by the pre-flight before the primary."""
    findings: FindingsHook | None = None
    """``findings``: makes the findings file of the segment that ends the chain."""
    extraction: Extraction | None = None
    """``findings`` by a findings extraction after the chain (:mod:`.extraction`), instead."""
    self_check: SelfCheck | None = None
    """``self_check``: the findings scored in one more request once they are written."""
    git: Mapping[str, Any] | None = None
    """What the chain's primary record pins in git (:mod:`context.pins`), pinned by every
    continuation's record too: the same files, so the whole chain rebuilds from the same
    blobs after the working tree moved on."""
    keep_loaded: tuple[int, Any] | None = None
    """A batch on Ollama's native API (:mod:`batch.sizing`): ``num_ctx`` at least, and the
    ``keep_alive``, of its continuations, so they do not reload the model either."""


def job_from_plan(
    plan: ReviewPlan,
    existing: tuple[Segment, ...] = (),
    *,
    max_continuations: int | None = None,
    label: str | None = None,
    existing_git: Mapping[str, Any] | None = None,
) -> Job:
    """The job of a planned review: its primary unless ``existing`` segments are given
    (then ``existing_git``: what their primary's record pins, which the new ones pin too)."""
    o = plan.options
    cont = o.continuation
    mode = extraction_mode(o, plan.endpoint.url)
    known = known_server(o, plan.endpoint.url)
    if max_continuations is not None:
        cont = replace(cont, max_continuations=max_continuations)
    return Job(
        root=plan.root,
        out_dir=plan.out_dir,
        out_shown=o.output_dir,
        topic=o.topic,
        endpoint=plan.endpoint,
        base_messages=plan.framed,
        body=o.body_options(),
        continuation=cont,
        existing=existing,
        primary=Primary(
            plan.prepared,
            plan.token_estimate,
            plan.files,
            (plan.template.name, plan.template.sha256),
            plan.pins,
            plan.count,
        ),
        allow_truncated_prompt=o.allow_truncated_prompt,
        keep_reasoning=o.keep_reasoning,
        label=label,
        reasoning=o.reasoning,
        findings=findings_hook(plan) if o.findings and mode == "block" else None,
        extraction=extraction_of(plan, mode) if o.findings and mode != "block" else None,
        self_check=SelfCheck(
            extraction_topic(o.topic, SELF_CHECK_TOPIC_SUFFIX),
            known or cont.server,
            o.self_check_threshold,
            known is not None,
        )
        if o.findings and o.self_check
        else None,
        git=existing_git if existing else plan.pins,
    )


def _findings_files(plan: ReviewPlan) -> tuple[list[tuple[str, str, Any]], Any]:
    """The context files (path, sha256, lines) as sent and the change of a planned review."""
    from deepseek_review.finding.hunks import change_in

    change = change_in(plan.pins, (p for m in plan.framed for p in m.parts))
    files = [(f.path, f.sha256, None if f.lines is None else f.lines.span) for f in plan.files]
    return files, change


def findings_hook(plan: ReviewPlan) -> FindingsHook:
    """The findings file maker of a planned review's chain (its context files as sent)."""
    from deepseek_review.finding.sidecar import hook

    return hook(plan.root, *_findings_files(plan))


def extraction_of(plan: ReviewPlan, mode: str) -> Extraction:
    """The findings extraction of a planned review (``mode``: structured or auto)."""
    from deepseek_review.finding.sidecar import maker

    o = plan.options
    known = known_server(o, plan.endpoint.url)
    return Extraction(
        mode=mode,
        topic=extraction_topic(o.topic),
        server=known or o.continuation.server,
        url=plan.endpoint.url,
        make=maker(plan.root, *_findings_files(plan)),
        declared=known is not None,
    )


@dataclass
class JobResult:
    """What a job did: every segment of the chain (existing first) and how many it added.

    While the job runs it is the job's progress: a caller that catches the job's error reads
    the segments written before it."""

    segments: list[Segment] = field(default_factory=list)
    new: int = 0
    started: bool = False
    """Its first request was admitted (a batch counts the review as started)."""
    not_started: bool = False
    """The gate refused its first request: nothing was sent."""
    extraction: list[Segment] = field(default_factory=list)
    """The findings extraction's segments (:mod:`.extraction`), each its own primary: the
    one whose findings were used last."""
    self_check: list[Segment] = field(default_factory=list)
    """The self-check's segments, likewise."""

    @property
    def new_segments(self) -> list[Segment]:
        return self.segments[len(self.segments) - self.new :]
