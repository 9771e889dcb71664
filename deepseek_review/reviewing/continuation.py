"""``continue``: extend an existing truncated chain from its last segment.

For a chain this tool wrote, the primary request's messages are rebuilt from its request
record, byte for byte, and refused if a context file changed since (the continuation would no
longer continue the same conversation). For a chain from another emitter (no record, e.g. the
seed repository's receipts) the continuation is built from the answer so far alone, and the
user is told so.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.endpoint import Endpoint, resolve_endpoint
from deepseek_review.chat.native import chain_api, native_endpoint, openai_url, recorded_extra
from deepseek_review.chat.tokens import (
    BYTES_PER_TOKEN,
    estimate_sizes,
    estimate_tokens,
    refuse_over_cap,
    worst_case,
)
from deepseek_review.chat.types import ProgressFn, RetryPolicy, Timeouts, Usage
from deepseek_review.context.gather import ContextFile
from deepseek_review.context.pins import pinned_reader
from deepseek_review.context.places import refuse_git_data
from deepseek_review.context.types import LineRange
from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.runner import find_repo_root, resolve_inside
from deepseek_review.options.merge import (
    configured_layer,
    fields_of,
    given_layer,
    given_options,
    merge,
)
from deepseek_review.options.table import name_of
from deepseek_review.records.chain import read_answer
from deepseek_review.records.naming import longest_name, topic_of
from deepseek_review.records.parts import file_refs
from deepseek_review.records.rebuild import repo_reader, resolve
from deepseek_review.records.receipt import check_recordable
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.records.storage import check_writable_dir
from deepseek_review.records.stored import ChainSegment
from deepseek_review.reviewing.continue_findings import FindingsAsk, chain_findings
from deepseek_review.reviewing.job import Job, JobResult, ProgressSink, run_job
from deepseek_review.reviewing.pipeline import (
    DEFAULT_MAX_TOKENS,
    ContinuationOptions,
    ReviewResult,
    make_client,
)
from deepseek_review.reviewing.request import CORE_FIELDS, BodyOptions, WireMessage, message_sizes
from deepseek_review.reviewing.segment import Segment
from deepseek_review.reviewing.setup import REVIEW_FIELDS
from deepseek_review.trust.rule import TrustPolicy, trusted_chain
from deepseek_review.util.logs import log
from deepseek_review.util.resources import prompts_dir


@dataclass(frozen=True)
class ContinueOptions:
    path: str
    repo_root: str | None = None
    endpoint: str | None = None
    api_key_env: str | None = None
    stream: bool = True
    max_tokens: int | None = None
    continuation: ContinuationOptions = field(default_factory=ContinuationOptions)
    allow_truncated_prompt: bool = False
    keep_reasoning: bool = False
    force: bool = False
    """Send one continuation even when the last segment's record says it ended normally."""
    allow_secrets: bool = False
    """Send context that looks like it holds secrets to an endpoint that is not loopback."""
    max_run_tokens: int | None = None
    """The operator's cap: continuations whose worst case is over it are refused unsent."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    findings: FindingsAsk = field(default_factory=FindingsAsk)
    """``--findings`` and its options: the chain's findings, made as ``run`` makes them once
    the chain is complete (:mod:`.continue_findings`)."""
    server_declared: bool = True
    """``continuation.server`` was declared (else the server is asked what it is)."""


@dataclass(frozen=True)
class ContinueOutcome:
    result: ReviewResult
    new_segments: int
    had_record: bool
    already_complete: bool = False
    max_continuations: int = 0
    """The continuations this call allowed."""


def rebuild_base(
    root: Path, record: RequestRecord, where: str
) -> tuple[tuple[WireMessage, ...], list[ContextFile]]:
    """The primary request's messages, rebuilt exactly, and the context files they hold (in
    order); refused if a context file changed. ``where`` names the record in errors. A
    reference outside the repository root is refused without being read (a record may be
    hostile)."""
    try:
        messages = record.messages
    except InputError as exc:
        raise InputError(f"{where}: {exc.message}") from None
    for m in messages:
        for ref in m.refs():
            try:
                resolve_inside(root, ref.path, what="reference")
            except InputError:
                raise InputError(
                    f"{where}: references {ref.path} (outside the repository root); "
                    "refusing to read it"
                ) from None
    rebuilt = resolve(messages, pinned_reader(root, record.git, repo_reader(root)))
    if rebuilt.changed or rebuilt.missing:
        what = "changed since the review" if rebuilt.changed else "missing"
        names = ", ".join(rebuilt.changed or rebuilt.missing)
        raise InputError(
            f"cannot continue: context file {what}: {names} (the continuation would not "
            "continue the same conversation; run a new review instead)"
        )
    wire = tuple(
        WireMessage(m.role, m.parts, text, extra=m.extra)
        for m, text in zip(messages, rebuilt.contents, strict=True)
    )
    texts = rebuilt.texts
    files = [
        ContextFile(
            path,
            texts[path],
            ref.sha256,
            len(texts[path].encode("utf-8")),
            None if ref.lines is None else LineRange(*ref.lines),
        )
        for path, ref in file_refs(messages).items()
    ]
    return wire, files


def _body_from_record(
    record: RequestRecord, stream: bool, max_tokens: int | None, *, where: str
) -> BodyOptions:
    body = record.body
    extra = {k: v for k, v in body.items() if k not in CORE_FIELDS and k != "stream_options"}
    model = body.get("model")
    temperature = body.get("temperature", 0.0)
    recorded_max = body.get("max_tokens", DEFAULT_MAX_TOKENS)
    for name, value, ok in (
        ("model", model, isinstance(model, str)),
        ("temperature", temperature, isinstance(temperature, int | float)),
        ("max_tokens", recorded_max, isinstance(recorded_max, int)),
    ):
        if not ok or isinstance(value, bool):
            raise InputError(f"{where}: request record: body.{name} is {value!r}")
    assert isinstance(model, str)
    try:
        return BodyOptions(
            model=model,
            temperature=float(temperature),
            max_tokens=max_tokens or recorded_max,
            stream=stream,
            extra_body=extra,
        )
    except ConfigError as exc:  # the record's values (the user's were checked before)
        raise InputError(f"{where}: request record: {exc.message}") from None


def segment_from(root: Path, cs: ChainSegment, *, assume_truncated: bool = False) -> Segment:
    """A segment already on disk, as the chain-extending code wants it (answer hash checked).

    Its finish reason comes from its request record; without one (other emitters) it is
    unknown, and taken as ``length`` when ``assume_truncated`` (the user asked to continue).
    """
    r = cs.receipt
    content = read_answer(root, cs)
    record = cs.record
    cap = None if record is None else record.body.get("max_tokens")
    estimated = None
    if not cs.usage_reported and record is not None:  # only a record says so
        thought = record.response.reasoning_chars or 0
        estimated = (
            (record.prompt_token_estimate or 0)
            + estimate_tokens([content])
            + thought // BYTES_PER_TOKEN
        )
    return Segment(
        answer_path=r.answer_path,
        receipt_path=cs.receipt_path,
        record_path=cs.record_path,
        answer_sha256=r.answer_sha256,
        prompt_sha256=r.prompt_sha256,
        usage=Usage(**r.usage),
        usage_reported=cs.usage_reported,
        finish_reason=cs.finish_reason or ("length" if assume_truncated else None),
        model=r.model,
        reasoning_path=None,
        attempts=0,
        content=content,
        max_tokens=cap if isinstance(cap, int) and not isinstance(cap, bool) else None,
        estimated_tokens=estimated,
    )


def continue_existing(
    options: ContinueOptions,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    client: ChatClient | None = None,
) -> ContinueOutcome:
    """Extend the chain whose answer or receipt ``options.path`` names, from its last segment."""
    env = os.environ if env is None else env
    root = find_repo_root(options.repo_root)
    chain_segs = trusted_chain(root, options.path, TrustPolicy.configured())
    last = chain_segs[-1]
    primary = chain_segs[0]
    segments = [segment_from(root, s, assume_truncated=s is last) for s in chain_segs]
    complete = _already_complete(options, last, primary, segments)
    if complete is not None:
        return complete
    api = chain_api(last.receipt.endpoint)
    endpoint = _endpoint(options, env, last, api)
    if last.finish_reason is None:
        log.info(
            "%s has no request record: its finish reason is unknown; continuing as asked",
            last.answer_path,
        )
    base, body = _request(options, root, primary, last, endpoint, api)
    folder, out_dir, topic = _writable_folder(options, root, last, primary, body, endpoint)
    _refuse_over_cap(options, body, base, segments)
    server = (options.continuation.server, options.server_declared)
    found = chain_findings(options.findings, root, primary, topic, endpoint.url, api, server)
    job = Job(
        root=root,
        out_dir=out_dir,
        out_shown=folder,
        topic=topic,
        endpoint=endpoint,
        base_messages=base,
        body=body,
        continuation=options.continuation,
        existing=tuple(segments),
        allow_truncated_prompt=options.allow_truncated_prompt,
        keep_reasoning=options.keep_reasoning,
        force=options.force,
        git=None if primary.record is None else primary.record.git,
        findings=found.hook,
        extraction=found.extraction,
        self_check=found.self_check,
    )
    done = _run(job, options, client, progress)
    return ContinueOutcome(
        result=ReviewResult(
            tuple(done.segments),
            endpoint.url,
            primary.receipt.context_files or (),
            tuple(done.extraction),
            tuple(done.self_check),
        ),
        new_segments=done.new,
        had_record=primary.record is not None,
        max_continuations=options.continuation.max_continuations,
    )


def _run(
    job: Job, options: ContinueOptions, client: ChatClient | None, progress: ProgressFn | None
) -> JobResult:
    """Run the job with ``client``, or a client of its own (closed after)."""
    own = client is None
    client = client or make_client(job.endpoint, options)
    try:
        return run_job(job, client, events=ProgressSink(progress))
    finally:
        if own:
            client.close()


def _already_complete(
    options: ContinueOptions, last: ChainSegment, primary: ChainSegment, segments: list[Segment]
) -> ContinueOutcome | None:
    """The outcome of a chain whose last answer finished, which is not continued unless
    ``--force``d; None: continue it."""
    if last.finish_reason is None or last.finish_reason == "length" or options.force:
        return None
    log.info(
        "%s ended with finish_reason %r: the review is complete, nothing to continue "
        "(%s sends one continuation anyway)",
        last.answer_path,
        last.finish_reason,
        name_of("force"),
    )
    return ContinueOutcome(
        result=ReviewResult(
            tuple(segments), last.receipt.endpoint, primary.receipt.context_files or ()
        ),
        new_segments=0,
        had_record=primary.record is not None,
        already_complete=True,
        max_continuations=options.continuation.max_continuations,
    )


def _endpoint(
    options: ContinueOptions, env: Mapping[str, str], last: ChainSegment, api: str
) -> Endpoint:
    """Where the continuation goes. A receipt does not choose a destination: anyone who can
    write to the repository can edit it. Its endpoint is used only if loopback or one the
    operator chose too."""
    endpoint = resolve_endpoint(
        options.endpoint or openai_url(last.receipt.endpoint),
        env,
        key_env=options.api_key_env,
        named_by=None if options.endpoint else "a receipt",
        what=name_of("endpoint") if options.endpoint else f"{last.receipt_path}: endpoint",
    )
    return native_endpoint(endpoint, api)


def _request(
    options: ContinueOptions,
    root: Path,
    primary: ChainSegment,
    last: ChainSegment,
    endpoint: Endpoint,
    api: str,
) -> tuple[tuple[WireMessage, ...], BodyOptions]:
    """The messages the continuations follow and their body's options: the primary request
    rebuilt from its record (its files scanned for secrets like a new review's), or, without a
    record, an introduction to the answer so far alone."""
    if primary.record is not None:
        where = primary.record_path
        base, files = rebuild_base(root, primary.record, where)
        body = _body_from_record(primary.record, options.stream, options.max_tokens, where=where)
        body = replace(body, api=api, extra_body=recorded_extra(body.extra_body, api))
        if not (options.allow_secrets or endpoint.is_local):
            from deepseek_review.context.secrets import refuse_secrets

            refuse_secrets(files, endpoint=endpoint.url)
        return base, body
    log.warning(
        "%s has no request record (written by another tool): continuing from the "
        "answer so far alone, without the original prompt or context",
        primary.receipt_path,
    )
    intro = (prompts_dir() / "continuation-without-context.md").read_text(encoding="utf-8").strip()
    body = BodyOptions(
        model=last.receipt.model,
        max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
        stream=options.stream,
        api=api,
    )
    return (WireMessage("user", (intro,), intro),), body


def _writable_folder(
    options: ContinueOptions,
    root: Path,
    last: ChainSegment,
    primary: ChainSegment,
    body: BodyOptions,
    endpoint: Endpoint,
) -> tuple[str, Path, str]:
    """The chain's folder (as written, and resolved) and topic, refused before paying if the
    continuations could not be written or recorded there."""
    folder = last.answer_path.rsplit("/", 1)[0] if "/" in last.answer_path else "."
    out_dir, _ = resolve_inside(root, folder)
    refuse_git_data(root, folder, out_dir, what=f"{last.receipt_path}: its folder")
    topic = topic_of(primary.answer_path) or "review"
    model = options.continuation.model or body.model
    longest = longest_name(topic, [(model, True)])
    check_writable_dir(out_dir, shown=folder, root=root, longest=longest)  # before paying
    check_recordable(model=model, endpoint=endpoint.url, folder=folder, context_files=None)
    return folder, out_dir, topic


def _refuse_over_cap(
    options: ContinueOptions,
    body: BodyOptions,
    base: tuple[WireMessage, ...],
    segments: list[Segment],
) -> None:
    """Refuse continuations that could together use more than ``max_run_tokens``."""
    made = max(options.continuation.max_continuations, 1 if options.force else 0)
    if options.max_run_tokens is not None and made:
        later = options.continuation.max_tokens or body.max_tokens
        prompt = estimate_sizes(message_sizes(base))
        answered = estimate_tokens(s.content for s in segments)
        estimate = worst_case(prompt, later, later, made - 1, answered=answered)
        refuse_over_cap(options.max_run_tokens, estimate, "continuing the chain")


#: Where each option of ``continue`` goes in :class:`ContinueOptions`.
CONTINUE_FIELDS = {
    "endpoint": "endpoint",
    "api_key_env": "api_key_env",
    "stream": "stream",
    "continuation_max_tokens": "max_tokens",
    "allow_truncated_prompt": "allow_truncated_prompt",
    "allow_secrets": "allow_secrets",
    "keep_reasoning": "keep_reasoning",
    "force": "force",
    "max_run_tokens": "max_run_tokens",
    **{k: v for k, v in REVIEW_FIELDS.items() if v.startswith(("continuation.", "retry.", "time"))},
    **{k: f"findings.{k}" for k in FindingsAsk._fields},
}


def continue_options(
    path: str,
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, ContinueOptions]:
    """The repository root and the options of ``continue`` / ``continue_review()``.

    The endpoint is the receipt's unless the caller names one: a continuation goes back to
    the server that wrote the chain, so the environment's and the config file's are not
    consulted."""

    given = given_options(given, "continue", "continue_review()")
    root = find_repo_root(repo_root)
    configured = {k: s for k, s in configured_layer(root, env).items() if k != "endpoint"}
    values = merge([given_layer(given), configured], list(CONTINUE_FIELDS))
    g = fields_of(values, CONTINUE_FIELDS)
    options = ContinueOptions(
        path=path,
        repo_root=str(root),
        **g[""],
        continuation=ContinuationOptions(**g["continuation"]),
        retry=RetryPolicy(**g["retry"]),
        timeouts=Timeouts(**g["timeouts"]),
        findings=FindingsAsk(**g["findings"]),
        server_declared=values["server"].source != "default",
    )
    return root, options
