"""One review job: a primary request (unless segments exist), then continuations while cut off.

``run``, ``continue`` and ``batch`` all run a chain through :func:`run_job`; they differ only
in what they hand it: ``run`` a planned primary and nothing existing, ``continue`` the segments
rebuilt from records, ``batch`` either, plus its scheduler's :class:`RequestGate` and
:class:`EventSink`. The job asks the gate *before* each request (saying whether it is the
job's first) and tells the sink what happens; a first request the gate refuses is a
"not started" result, a later one is :class:`~deepseek_review.errors.Interrupted`.

Each segment is written (answer, record, receipt: :func:`reviewing.segment.write_segment`) as soon
as
its answer has arrived and been checked; :meth:`JobResult.segments` are in chain order.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from functools import partial
from typing import TYPE_CHECKING

from deepseek_review.chat import tokenize
from deepseek_review.chat.endpoint import safe_url
from deepseek_review.chat.tokens import (
    PLAIN_ESTIMATE,
    Count,
    Sample,
    estimate_exchange,
    estimate_sizes,
    looks_clipped,
)
from deepseek_review.chat.types import Completion
from deepseek_review.context.gather import ContextFile
from deepseek_review.errors import Interrupted, PromptDoesNotFit, PromptTruncated, ReviewError
from deepseek_review.ollama.fit import preflight
from deepseek_review.options.table import SERVER_PRESETS, name_of
from deepseek_review.records.parts import AnswerRef
from deepseek_review.records.request_record import Continuation
from deepseek_review.records.storage import ensure_dir
from deepseek_review.reviewing.calibration import counter_for, remember
from deepseek_review.reviewing.job_spec import (
    EventSink,
    Job,
    JobResult,
    OpenGate,
    Primary,
    ProgressSink,
    RequestGate,
    job_from_plan,
)
from deepseek_review.reviewing.plan import continuation_body
from deepseek_review.reviewing.prompt import continuation_directive
from deepseek_review.reviewing.request import (
    BodyOptions,
    PreparedRequest,
    WireMessage,
    message_sizes,
    prepare,
    sent_contents,
    with_native_fields,
)
from deepseek_review.reviewing.segment import Segment, SegmentSpec, write_segment
from deepseek_review.util.logs import log

if TYPE_CHECKING:  # the HTTP stack is imported by whoever makes the client, not by planning
    from deepseek_review.chat.client import ChatClient

__all__ = [
    "EventSink",
    "Job",
    "JobResult",
    "OpenGate",
    "ProgressSink",
    "RequestGate",
    "job_from_plan",
    "no_progress_message",
    "run_job",
]


# --------------------------------------------------------------------------- the job


def preflight_primary(job: Job, primary: Primary, client: ChatClient) -> Count:
    """What the server is asked before a job's first request (a server with a tokenizer: the
    prompt's tokens; Ollama's pre-flight: does the prompt fit, can the model think at the level
    asked): the one check of ``run`` before it sends and of ``run --dry-run`` instead of
    sending, so that both refuse alike. Returns the prompt's count, the server's when it
    gave one."""
    server = job.continuation.server
    count = primary.token_count or Count(primary.token_estimate, PLAIN_ESTIMATE)
    if tokenize.asks(server):
        counter = counter_for(client.url, job.body.model, server=server, client=client)
        texts = sent_contents(primary.prepared.body_bytes)
        roles = (m.role for m in primary.prepared.messages)
        chat = [{"role": r, "content": t} for r, t in zip(roles, texts, strict=True)]
        asked = counter.count(chat)
        if asked.exact:
            count = asked
            _refuse_over_window(count, job.body.max_tokens, client.url, job.body.model)
    preflight(
        client,
        server=server,
        model=job.body.model,
        estimate=count.tokens,
        max_tokens=job.body.max_tokens,
        allow=job.allow_truncated_prompt,
        reasoning=job.reasoning,
        how=count.how,
    )
    return count


def _refuse_over_window(count: Count, max_tokens: int, url: str, model: str) -> None:
    """A server that said its window with its count (vLLM's ``max_model_len``) refuses a
    prompt whose tokens and ``max_tokens`` are over it: said before anything is sent."""
    if count.window is None or count.tokens + max_tokens <= count.window:
        return
    raise PromptDoesNotFit(
        f"the prompt ({count}) plus {name_of('max_tokens')} {max_tokens} needs "
        f"{count.tokens + max_tokens} tokens, but {safe_url(url)} runs {model} with a context "
        f"of {count.window} (its /tokenize's max_model_len); nothing was sent",
        hint=(
            f"review it in parts that fit ({name_of('split')}), send less context or lower "
            f"{name_of('max_tokens')}"
        ),
    )


def remember_usage(url: str, model: str, prepared: PreparedRequest, completion: Completion) -> None:
    """Keep what the server counted for this prompt (:mod:`reviewing.calibration`), so the next
    plan for the same endpoint and model estimates from it; a prompt it looks to have clipped
    is not kept."""
    usage = completion.usage
    if usage is None:
        return
    sizes = message_sizes(prepared.messages)
    if looks_clipped(usage.prompt_tokens, estimate_sizes(sizes)):
        return
    remember(url, model, Sample(sum(sizes), len(sizes), usage.prompt_tokens))


def run_job(
    job: Job,
    client: ChatClient,
    *,
    gate: RequestGate | None = None,
    events: EventSink | None = None,
    result: JobResult | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> JobResult:
    """Run ``job`` to its end: the primary (when nothing exists), then continuations while the
    last segment is cut off, up to the cap. A segment cut off without adding any text ends the
    chain (it is ``stalled``) unless the continuation cap is larger than that segment's.

    ``result`` (optional) is filled in as the job goes, so a caller that catches an error
    still has what was written."""
    run = _Run(job, client, gate or OpenGate(), events or ProgressSink(), now, result)
    return run.run()


class _Run:
    """One job's run. Its public methods (:meth:`ask`, :meth:`check_answer`,
    :meth:`first_spec`, :meth:`log`) are what :mod:`.refine` sends its own requests with."""

    def __init__(
        self,
        job: Job,
        client: ChatClient,
        gate: RequestGate,
        events: EventSink,
        now: Callable[[], datetime],
        result: JobResult | None,
    ) -> None:
        self.job, self.client, self.gate, self.events, self.now = job, client, gate, events, now
        self.result = result if result is not None else JobResult()
        self.result.segments[:] = job.existing
        self.told = False
        """Whether the user was told that the server reports no usage (once per review)."""
        self._joined: tuple[WireMessage, ...] | None = None
        """The primary's messages with their texts, once a continuation needs them."""

    def log(self, level: int, msg: str, *args: object) -> None:
        """Logs for this job: a batch's lines carry its topic."""
        extra = {"batch_topic": self.job.label} if self.job.label else None
        log.log(level, msg, *args, extra=extra)

    def run(self) -> JobResult:
        job, r = self.job, self.result
        if not r.segments:
            assert job.primary is not None, "a job without segments needs its primary"
            if not self._primary(job.primary):
                r.not_started = True
                return r
        self._continue()
        # The chain is done here (complete, or cut off with no continuation left): the one
        # place for what follows a whole review (its findings).
        # Only a chain this job added to: a finished one found again (a batch resumed) was.
        if job.extraction is not None and r.new and not r.segments[-1].truncated:
            from deepseek_review.reviewing.refine import extract

            extract(self, job.extraction)
        written = (r.extraction or r.new_segments)[-1:]
        if job.self_check is not None and written:
            from deepseek_review.reviewing.refine import self_check

            if written[0].findings_path is None:
                self.log(logging.WARNING, "no findings file to self-check")
            else:
                self_check(self, job.self_check, written[0].findings_path)
        return r

    def ask(
        self, prepared: PreparedRequest, body: BodyOptions, note: str | None, *, primary: bool
    ) -> Completion | None:
        """One request through the gate; None when the gate refused the job's first.
        ``primary``: the chain's first request, whose answer may not be empty."""
        first = not self.result.started
        if not self.gate.acquire(first=first):
            if first:
                return None
            raise Interrupted("interrupted before sending")
        self.result.started = True
        try:
            self.events.sending(first=first, note=note)
            completion = self.client.complete(
                prepared.body_bytes,
                model=body.model,
                stream=body.stream,
                progress=self.events.streamed,
                on_attempt=self.events.attempt,
                label=self.job.label,
                first_answer=primary,
            )
            if completion.usage is not None:
                self.events.answered(completion, completion.usage.total_tokens, False, body.model)
            else:
                guess = estimate_exchange(
                    len(prepared.body_bytes), completion.content, completion.reasoning
                )
                self.events.answered(completion, guess, True, body.model)
        except ReviewError as exc:
            if not isinstance(exc, Interrupted):
                self.events.failed(exc)
            raise
        finally:
            self.events.returned()
            self.gate.release()
        if completion.usage is not None:  # a cache, written with the server's slot given back
            remember_usage(self.client.url, body.model, prepared, completion)
        return completion

    def check_answer(self, completion: Completion, estimate: int) -> None:
        """Checks and notes on an answer that arrived, before it is written."""
        self._check_prompt_kept(completion, estimate)
        if completion.usage is None and not self.told:
            self.told = True
            self.log(
                logging.WARNING,
                "the server reported no token usage: tokens are unknown (estimated where a "
                "count is needed; receipts hold zeros, marked usage_reported=false in the "
                "request record), and the check for a silently truncated prompt is off for "
                "this review",
            )

    def _check_prompt_kept(self, completion: Completion, estimate: int) -> None:
        """Refuse an answer to a prompt the server silently clipped (Ollama does, at num_ctx)."""
        msg = clipped_message(completion, estimate, self.client.url)
        if msg is None:
            return
        if self.job.allow_truncated_prompt:
            self.log(
                logging.WARNING,
                "%s (%s: keeping the answer)",
                msg,
                name_of("allow_truncated_prompt"),
            )
            return
        raise PromptTruncated(
            msg,
            hint="raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH=<tokens> "
            f"ollama serve), send less context, or allow it with "
            f"{name_of('allow_truncated_prompt')}",
        )

    def _primary(self, p: Primary) -> bool:
        job = self.job
        # Before the job's first request, outside the gate: the Ollama pre-flight.
        preflight_primary(job, p, self.client)
        completion = self.ask(p.prepared, job.body, None, primary=True)
        if completion is None:
            return False
        self.check_answer(completion, p.token_estimate)
        ensure_dir(job.out_dir, shown=job.out_shown)
        findings = job.findings and partial(job.findings, completion.content)
        spec = self.first_spec(
            p.prepared, completion, job.topic, p.files, p.template, p.token_estimate, findings
        )
        self._write(spec._replace(git=p.git, keep_reasoning=job.keep_reasoning))
        return True

    def first_spec(
        self,
        prepared: PreparedRequest,
        completion: Completion,
        topic: str,
        files: tuple[ContextFile, ...],
        template: tuple[str, str],
        estimate: int,
        findings: Callable[[str], bytes | None] | None,
    ) -> SegmentSpec:
        """The segment of a chain's first request: the review's, or its findings
        extraction's (``topic``: its own)."""
        job = self.job
        return SegmentSpec(
            root=job.root,
            out_dir=job.out_dir,
            topic=topic,
            model=job.body.model,
            endpoint=job.endpoint.url,
            prepared=prepared,
            completion=completion,
            content=completion.content,
            context_files=files,
            template=template,
            prompt_token_estimate=estimate,
            findings=findings,
        )

    def _write(self, spec: SegmentSpec) -> None:
        """Write one segment (answer, record, receipt last) and add it to the chain: every
        segment a job writes passes here, the one place for what follows a receipt (signing)."""
        segment = write_segment(spec, self.now())
        self.result.segments.append(segment)
        self.result.new += 1

    def _base_messages(self) -> tuple[WireMessage, ...]:
        """The primary's messages with their texts: a planned primary's were never joined
        (the body was written from the files), so they are read back from the body sent."""
        base = self.job.base_messages
        if all(m.content is not None for m in base):
            return base
        if self._joined is None:
            assert self.job.primary is not None, "unjoined messages come with their primary"
            sent = sent_contents(self.job.primary.prepared.body_bytes)
            self._joined = tuple(replace(m, content=t) for m, t in zip(base, sent, strict=True))
        return self._joined

    def _continue(self) -> None:
        """Ask for continuations while the last answer was cut off (one more, ``--force``d,
        after one that ended normally), up to the cap, stopping at one that adds nothing."""
        job, segments = self.job, self.result.segments
        options = job.continuation
        body = continuation_body(job.body, options)
        made = 0
        while segments[-1].truncated or (job.force and made == 0):
            forced = job.force and made == 0 and not segments[-1].truncated
            if made >= options.max_continuations:
                break
            if not forced and _repeats_nothing(segments[-1], body.max_tokens):
                break  # the caller says why: the result is ``stalled``
            made += 1
            if not self._continue_once(body, made, forced=forced):
                self.result.not_started = True
                return

    def _continue_once(self, body: BodyOptions, made: int, *, forced: bool) -> bool:
        """Ask for continuation ``made`` and write it; False: refused before anything was sent."""
        job, segments = self.job, self.result.segments
        options = job.continuation
        so_far = "".join(s.content for s in segments)
        messages = (
            *self._base_messages(),
            *_continuation_tail(segments, so_far, options.style, options.server),
        )
        sizes = message_sizes(messages)  # counted once: the body and the estimate
        prepared = prepare(body, messages, sizes=sizes)
        if job.keep_loaded is not None:
            prepared = with_native_fields(prepared, *job.keep_loaded, at_least=True)
        estimate = estimate_sizes(sizes)
        count = counter_for(self.client.url, body.model).estimate(sizes)
        preflight(
            self.client,
            server=options.server,
            model=body.model,
            estimate=count.tokens,
            max_tokens=body.max_tokens,
            allow=job.allow_truncated_prompt,
            how=count.how,
        )
        why = f"ended normally ({name_of('force')})" if forced else "was cut off at the token cap"
        note = (
            f"continuation {made}/{options.max_continuations}: "
            f"{segments[-1].answer_path} {why}; asking {body.model} to go on"
        )
        completion = self.ask(prepared, body, note, primary=False)
        if completion is None:  # refused before the job sent anything
            return False
        self.check_answer(completion, estimate)
        content, echoed = strip_echo(completion.content, so_far)
        if echoed:
            self.log(
                logging.INFO,
                "the server echoed the %d prefilled characters; kept them out",
                echoed,
            )
        ensure_dir(job.out_dir, shown=job.out_dir.name)
        self._write(
            self._continuation_spec(body, prepared, completion, estimate, so_far, content, echoed)
        )
        return True

    def _continuation_spec(
        self,
        body: BodyOptions,
        prepared: PreparedRequest,
        completion: Completion,
        estimate: int,
        so_far: str,
        content: str,
        echoed: int,
    ) -> SegmentSpec:
        """The next continuation's segment: ``completion``'s answer (``content``: without the
        ``echoed`` characters of ``so_far``, the chain's answer until now, that it repeated) to
        the request ``prepared``."""
        job, segments = self.job, self.result.segments
        options = job.continuation
        return SegmentSpec(
            root=job.root,
            out_dir=job.out_dir,
            topic=job.topic,
            model=body.model,
            endpoint=job.endpoint.url,
            prepared=prepared,
            completion=completion,
            content=content,
            echo_stripped_chars=echoed,
            git=job.git,
            prompt_token_estimate=estimate,
            continuation=Continuation(
                index=len(segments),
                style=options.style,
                server=options.server,
                primary_answer_path=segments[0].answer_path,
                previous_answer_path=segments[-1].answer_path,
            ),
            keep_reasoning=job.keep_reasoning,
            findings=job.findings and partial(job.findings, so_far + content),
        )


# --------------------------------------------------------------------------- helpers


def _continuation_tail(
    segments: list[Segment], so_far: str, style: str, server: str
) -> list[WireMessage]:
    """The messages a continuation adds to the primary's: the answer so far (prefilled, or
    followed by the directive to go on)."""
    refs = tuple(
        AnswerRef(s.answer_path, s.answer_sha256, len(s.content.encode("utf-8"))) for s in segments
    )
    if style == "prefill":
        _, prefill_extra = SERVER_PRESETS[server]
        return [WireMessage("assistant", refs, so_far, extra=prefill_extra)]
    directive = continuation_directive()
    return [WireMessage("assistant", refs, so_far), WireMessage("user", (directive,), directive)]


def clipped_message(completion: Completion, estimate: int, url: str) -> str | None:
    """Why the answer looks like one to a silently clipped prompt; None when it does not."""
    if completion.usage is None:
        return None
    kept = completion.usage.prompt_tokens
    if not looks_clipped(kept, estimate):
        return None
    return (
        f"{url} kept only {kept} prompt tokens of about {estimate} sent: the server silently "
        "truncated the prompt"
    )


def strip_echo(content: str, so_far: str) -> tuple[str, int]:
    """Servers such as llama-server repeat the prefilled text first; keep it out."""
    if so_far and content.startswith(so_far):
        return content[len(so_far) :], len(so_far)
    return content, 0


def no_progress_message(segment: Segment) -> str:
    """Why a chain whose last segment added no text was not continued (one line)."""
    cap = f" of {segment.max_tokens} tokens" if segment.max_tokens else ""
    return (
        f"{segment.answer_path} added no answer text before the token cap{cap}: the cap is "
        "too small for the model's reasoning; stopped rather than pay for continuations that "
        "would do the same"
    )


def _repeats_nothing(segment: Segment, cap: int) -> bool:
    """A continuation at ``cap`` would only repeat ``segment``: it added no text, and its own
    cap was no smaller (a cap unknown, from another tool's receipt, gets the benefit)."""
    return segment.made_no_progress and segment.max_tokens is not None and cap <= segment.max_tokens
