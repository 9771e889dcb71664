"""One review end to end: plan, send, write, and continue while cut off (the library's core).

The CLI only parses arguments into :class:`ReviewOptions` and renders the
:class:`ReviewResult`. Planning is :mod:`reviewing.plan`'s (nothing is written until a usable answer
has arrived); sending and continuing is the review job's (:mod:`reviewing.job`), which ``continue``
and
``batch`` run too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Protocol

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.server_hints import Advice
from deepseek_review.chat.types import ProgressFn, RetryPolicy, Timeouts
from deepseek_review.reviewing.job import (
    ProgressSink,
    job_from_plan,
    no_progress_message,
    preflight_primary,
    run_job,
)
from deepseek_review.reviewing.plan import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_OUTPUT_DIR,
    ContinuationOptions,
    GatherFn,
    ReviewOptions,
    ReviewPlan,
    plan_review,
)
from deepseek_review.reviewing.segment import Segment

if TYPE_CHECKING:  # a dry run makes no client
    from deepseek_review.chat.client import ChatClient

# What other modules and the tests import from here (planning is .plan's).
__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_OUTPUT_DIR",
    "ContinuationOptions",
    "GatherFn",
    "ReviewOptions",
    "ReviewPlan",
    "ReviewResult",
    "make_client",
    "no_progress_message",
    "plan_review",
    "review",
    "send_review",
]


@dataclass(frozen=True)
class ReviewResult:
    """A finished (or still truncated) review: its segments in chain order."""

    segments: tuple[Segment, ...]
    endpoint: str
    context_files: tuple[str, ...]
    extraction: tuple[Segment, ...] = ()
    """The findings extraction's segments (``findings_from`` structured or auto), the one
    whose findings were used last (:mod:`.extraction`)."""
    self_check: tuple[Segment, ...] = ()
    """The self-check's segments (``self_check``), likewise."""

    @property
    def truncated(self) -> bool:
        return bool(self.segments) and self.segments[-1].truncated

    @property
    def text(self) -> str:
        """The stitched answer: every segment's text in chain order."""
        return "".join(s.content for s in self.segments)

    @property
    def stalled(self) -> bool:
        """Still cut off, and the last segment added no text: continuing at the same cap
        would pay for the same nothing again (see :func:`no_progress_message`)."""
        return bool(self.segments) and self.segments[-1].made_no_progress

    @property
    def usage_reported(self) -> bool:
        return all(s.usage_reported for s in self.segments)

    @property
    def total_tokens(self) -> int | None:
        """The server's count over every segment; None when it reported none for some."""
        if not self.usage_reported:
            return None
        return sum(s.usage.total_tokens for s in self.segments)

    @property
    def estimated_tokens(self) -> int | None:
        """When some usage is unknown: the known counts plus estimates for the rest."""
        if self.usage_reported:
            return None
        return sum(s.counted_tokens for s in self.segments)


def send_review(
    plan: ReviewPlan,
    client: ChatClient,
    *,
    progress: ProgressFn | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ReviewResult:
    """Send a planned review, write its segments, and continue it while it is cut off."""
    done = run_job(job_from_plan(plan), client, events=ProgressSink(progress), now=now)
    return ReviewResult(
        segments=tuple(done.segments),
        endpoint=plan.endpoint.url,
        context_files=plan.receipt_paths or tuple(f.path for f in plan.files),
        extraction=tuple(done.extraction),
        self_check=tuple(done.self_check),
    )


class ClientOptions(Protocol):
    """What a client is made from (:class:`ReviewOptions` and ``continue``'s options)."""

    @property
    def retry(self) -> RetryPolicy: ...
    @property
    def timeouts(self) -> Timeouts: ...
    @property
    def continuation(self) -> ContinuationOptions: ...
    @property
    def api_key_env(self) -> str | None: ...


def make_client(endpoint: Endpoint, options: ClientOptions) -> ChatClient:
    """The client of one review's endpoint (hints worded for its server and key variable)."""
    from deepseek_review.chat.client import ChatClient

    return ChatClient(
        endpoint.url,
        endpoint.api_key,
        policy=options.retry,
        timeouts=options.timeouts,
        advice=Advice.of(endpoint, options.continuation.server, options.api_key_env),
    )


def preflight_review(plan: ReviewPlan) -> ReviewPlan:
    """The checks ``run`` asks the server before its first request
    (:func:`reviewing.job.preflight_primary`),
    made for a dry run: only the server's metadata and tokenizer are asked (Ollama's
    ``/api/version``, ``/api/show``, ``/api/ps``; llama.cpp's and vLLM's ``/tokenize``), never
    its chat endpoint. The plan is returned with the count the server gave."""
    from deepseek_review.chat.tokenize import asks
    from deepseek_review.ollama.fit import asks_server

    server = plan.options.continuation.server
    if not (asks(server) or asks_server(server, plan.endpoint.url)):
        return plan
    job = job_from_plan(plan)
    assert job.primary is not None, "a planned review has its primary"
    with make_client(plan.endpoint, plan.options) as client:
        count = preflight_primary(job, job.primary, client)
    return replace(plan, token_count=count)


def review(
    options: ReviewOptions,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
) -> ReviewResult:
    """Run one review end to end (the library entry point)."""
    plan = plan_review(options, env)
    with make_client(plan.endpoint, options) as client:
        return send_review(plan, client, progress=progress)
