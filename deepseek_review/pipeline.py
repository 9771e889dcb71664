"""One review end to end: gather, build, send, write, and continue while cut off.

This is the library's core; the CLI only parses arguments into :class:`ReviewOptions` and
renders the :class:`ReviewResult`. Nothing is written until a usable answer has arrived, and
every refusal (bad context, bad endpoint, secrets, a clipped prompt) happens before anything
is written.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from .calls import Completion, ProgressFn, RetryPolicy, Timeouts
from .client import ChatClient
from .context import ContextFile, ContextLimits, Gathered, Output, Skipped, gather_context
from .endpoint import Endpoint, resolve_endpoint
from .errors import InputError, PromptTruncated
from .gitreview import GitOptions, plan_git
from .ollama.fit import preflight
from .ollama.native import native_endpoint
from .ollama.reasoning import with_reasoning
from .options import SERVER_PRESETS, check, default, name_of
from .prompt import Template, continuation_directive, load_template, render_messages, text_bytes
from .records.naming import check_topic, longest_name
from .records.parts import AnswerRef
from .records.receipt import check_recordable
from .records.request_record import Continuation
from .repo import find_repo_root, resolve_inside
from .request import (
    BodyOptions,
    PreparedRequest,
    WireMessage,
    check_extra_body,
    prepare,
)
from .segment import Segment, SegmentSpec, write_segment
from .serverhints import Advice
from .storage import check_writable_dir, ensure_dir
from .tokens import estimate_tokens, looks_clipped

if TYPE_CHECKING:
    from .finding.sidecar import Hook as FindingsHook

log = logging.getLogger("deepseek_review")

# The built-in defaults live in the option table (:mod:`.options`); these names are theirs.
DEFAULT_MODEL: str = default("model")
DEFAULT_OUTPUT_DIR: str = default("output_dir")
DEFAULT_MAX_TOKENS: int = default("max_tokens")

ContinuationStyle = Literal["prefill", "directive"]
_DEFAULT_STYLE: ContinuationStyle = default("continuation_style")


@dataclass(frozen=True)
class ContinuationOptions:
    max_continuations: int = default("max_continuations")
    style: ContinuationStyle = _DEFAULT_STYLE
    model: str | None = default("continuation_model")
    max_tokens: int | None = default("continuation_max_tokens")
    server: str = default("server")
    extra_body: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check("max_continuations", self.max_continuations)
        check("continuation_style", self.style)
        check("server", self.server)
        check_extra_body(self.extra_body, name_of("continuation_extra_body"))
        if self.max_tokens is not None:
            check("continuation_max_tokens", self.max_tokens)


@dataclass(frozen=True)
class ReviewOptions:
    """Everything a review needs, as plain values (the CLI and the batch build these)."""

    context: tuple[str, ...]
    prompt: str
    topic: str = default("topic")
    model: str = default("model")
    repo_root: str | None = None
    output_dir: str = default("output_dir")
    template: str | None = None
    template_file: str | None = None
    temperature: float = default("temperature")
    max_tokens: int = default("max_tokens")
    stream: bool = default("stream")
    extra_body: Mapping[str, Any] = field(default_factory=dict)
    limits: ContextLimits = field(default_factory=ContextLimits)
    keep_reasoning: bool = default("keep_reasoning")
    findings: bool = default("findings")
    continuation: ContinuationOptions = field(default_factory=ContinuationOptions)
    context_window: int | None = default("context_window")
    allow_truncated_prompt: bool = default("allow_truncated_prompt")
    allow_secrets: bool = default("allow_secrets")
    reasoning: str | None = default("reasoning")
    api: str = default("api")
    endpoint: str | None = default("endpoint")
    endpoint_named_by: str | None = None
    """The repository file (config, manifest) that chose ``endpoint``; None when the operator
    did. Such an endpoint must be loopback or one the operator chose, and gets the key only then.
    """
    operator_endpoints: tuple[str, ...] = ()
    """Endpoints the operator chose besides the environment's (``batch --endpoint``)."""
    outputs: tuple[Output, ...] = ()
    """What else the tool writes besides ``output_dir`` (a batch: every entry's output folder,
    its report): folders and globs never send it."""
    api_key_env: str | None = default("api_key_env")
    """The variable holding the key; None: ``OLLAMA_API_KEY``, sent over https only."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    git: GitOptions = field(default_factory=GitOptions)

    def body_options(self) -> BodyOptions:
        return BodyOptions(
            model=self.model,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            stream=self.stream,
            extra_body=dict(
                with_reasoning(self.extra_body, self.continuation.server, self.reasoning, self.api)
            ),
            api=self.api,
        )


@dataclass(frozen=True)
class ReviewPlan:
    """A review ready to send: what ``--dry-run`` shows, and what ``run`` sends."""

    root: Path
    endpoint: Endpoint
    out_dir: Path
    template: Template
    files: tuple[ContextFile, ...]
    """The context files' paths, hashes and sizes; their texts are in ``messages`` only."""
    messages: tuple[WireMessage, ...]
    prepared: PreparedRequest
    token_estimate: int
    options: ReviewOptions
    skipped: tuple[Skipped, ...] = ()
    """What a folder or glob found that was left out, each with why."""
    pins: Mapping[str, Any] | None = None
    """What the request record pins in git (:mod:`.pinning`)."""
    receipt_paths: tuple[str, ...] = ()
    """The receipt's ``context_files``: a diff's changed paths, then the whole files."""

    @property
    def context_bytes(self) -> int:
        """The context files' bytes."""
        return sum(f.size for f in self.files)

    @property
    def framed_bytes(self) -> int:
        """The prompt's bytes as sent: the files with their headings, fences and list, the
        template and the request (what ``--max-context-bytes`` limits)."""
        return text_bytes(self.messages)


@dataclass(frozen=True)
class ReviewResult:
    """A finished (or still truncated) review: its segments in chain order."""

    segments: tuple[Segment, ...]
    endpoint: str
    context_files: tuple[str, ...]

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


#: Gathers context files (``gather_context``'s signature); a batch passes a caching one.
GatherFn = Callable[[Path, Sequence[str], ContextLimits, Sequence[Output]], Gathered]


def outputs_of(
    root: Path, out_dir: Path, named: str, others: Sequence[Output]
) -> tuple[Output, ...]:
    """What a review's folders and globs leave out: its output folder ``out_dir`` (resolved;
    ``named`` is the path as given, which differs through a symlink) and ``others``, each
    path once, in a canonical order (a batch's entries share one gathering)."""
    own = [Output(out_dir.relative_to(root).as_posix()), Output(named)]
    unique = {o.path: o for o in reversed([*others, *own])}
    return tuple(sorted(unique.values(), key=lambda o: o.path))


def review_longest_name(options: ReviewOptions) -> str:
    """The longest file name the review may write (its continuations' names included)."""
    stems = [(options.model, False)]
    if options.continuation.max_continuations > 0:
        stems.append((options.continuation.model or options.model, True))
    return longest_name(options.topic, stems)


def continuation_body(body: BodyOptions, options: ContinuationOptions) -> BodyOptions:
    """The options of every continuation request of a chain whose primary had ``body``."""
    body_extra, _ = SERVER_PRESETS[options.server]
    preset = body_extra if options.style == "prefill" else {}
    return BodyOptions(
        model=options.model or body.model,
        temperature=body.temperature,
        max_tokens=options.max_tokens or body.max_tokens,
        stream=body.stream,
        extra_body={**body.extra_body, **preset, **options.extra_body},
        api=body.api,
    )


def plan_review(
    options: ReviewOptions,
    env: Mapping[str, str] | None = None,
    *,
    gather: GatherFn = gather_context,
    check_output: bool = True,
) -> ReviewPlan:
    """Check everything and build the exact request, without sending or writing anything.

    Everything that can be checked before paying for an answer is checked here: the
    continuation requests' options, and (unless ``check_output`` is off: a batch checks each
    folder once) that the output folder can be written.
    """
    env = os.environ if env is None else env
    check_topic(options.topic)
    if options.context_window is not None:
        check("context_window", options.context_window)
    body_options = options.body_options()  # validates model, limits, extra body
    endpoint = resolve_endpoint(
        options.endpoint,
        env,
        key_env=options.api_key_env,
        named_by=options.endpoint_named_by,
        operator=options.operator_endpoints,
        what=name_of("endpoint") if options.endpoint_named_by is None else "endpoint",
    )
    endpoint = native_endpoint(endpoint, options.api, options.continuation.server)
    root = find_repo_root(options.repo_root)
    out_dir, out_named = resolve_inside(root, options.output_dir, what=name_of("output_dir"))
    template = load_template(options.template, options.template_file)
    outputs = outputs_of(root, out_dir, out_named, options.outputs)
    gitplan = plan_git(
        options.git, root, options.context, options.limits, outputs, gather,
        topic=options.topic, out_dir=out_named,
    )  # fmt: skip
    skipped = gitplan.skipped
    files: list[ContextFile] = gitplan.files
    prompt_bytes = len(options.prompt.encode("utf-8", errors="surrogatepass"))
    if prompt_bytes > options.limits.max_context_bytes:
        raise InputError(
            f"the prompt is {prompt_bytes} bytes, over {name_of('max_context_bytes')} "
            f"{options.limits.max_context_bytes}"
        )
    if not (options.allow_secrets or endpoint.is_local):
        from .secretscan import refuse_secrets

        # The prompt leaves the machine too: scan it as if it were one more file.
        prompt_file = ContextFile(path="<prompt>", text=options.prompt, sha256="", size=0)
        refuse_secrets([prompt_file, *files, *gitplan.scanned], endpoint=endpoint.url)
    rendered = render_messages(template, options.prompt, options.topic, files, gitplan.lead)
    check_framed_size(text_bytes(rendered), sum(f.size for f in files), options.limits)
    # From here the texts live on in the messages only; the plan keeps what the record needs
    # (path, hash, size), so a large context is not held twice while the body is built.
    files = [replace(f, text="") for f in files]
    messages = tuple(WireMessage.from_message(m) for m in rendered)
    del rendered
    prepared = prepare(body_options, messages)
    estimate = estimate_tokens(m.content for m in messages)
    if options.context_window is not None and estimate > options.context_window:
        log.warning(
            "the prompt is about %d tokens, over the declared %s %d: the server "
            "may silently drop part of it",
            estimate,
            name_of("context_window"),
            options.context_window,
        )
    # What could otherwise only fail once an answer has been paid for is checked now.
    if options.continuation.max_continuations > 0:
        continuation_body(body_options, options.continuation)
    out_rel = out_dir.relative_to(root).as_posix()
    check_recordable(
        model=options.model,
        endpoint=endpoint.url,
        folder=out_rel,
        context_files=gitplan.receipt_paths,
    )
    if options.continuation.max_continuations > 0 and options.continuation.model:
        check_recordable(
            model=options.continuation.model,
            endpoint=endpoint.url,
            folder=out_rel,
            context_files=None,
        )
    if check_output:
        named = f"{name_of('output_dir')} {options.output_dir}"
        check_writable_dir(out_dir, shown=named, root=root, longest=review_longest_name(options))
    return ReviewPlan(
        root=root,
        endpoint=endpoint,
        out_dir=out_dir,
        template=template,
        files=tuple(files),
        messages=messages,
        prepared=prepared,
        token_estimate=estimate,
        options=options,
        skipped=skipped,
        pins=gitplan.git,
        receipt_paths=tuple(gitplan.receipt_paths),
    )


def check_framed_size(framed: int, files: int, limits: ContextLimits) -> None:
    """Refuse a prompt whose bytes as sent, framing and all, are over ``--max-context-bytes``:
    3,000 tiny files are mostly headings, fences and list lines."""
    if framed > limits.max_context_bytes:
        raise InputError(
            f"the prompt as framed is {framed} bytes ({files} of context files and "
            f"{framed - files} of framing: headings, fences, the file list, the template and "
            f"the prompt), over {name_of('max_context_bytes')} {limits.max_context_bytes}"
        )


def check_prompt_kept(completion: Completion, estimate: int, *, allow: bool, url: str) -> None:
    """Refuse an answer to a prompt the server silently clipped (Ollama does, at num_ctx)."""
    if completion.usage is None:
        return
    kept = completion.usage.prompt_tokens
    if not looks_clipped(kept, estimate):
        return
    msg = (
        f"{url} kept only {kept} prompt tokens of about {estimate} sent: the server silently "
        "truncated the prompt"
    )
    if allow:
        log.warning("%s (%s: keeping the answer)", msg, name_of("allow_truncated_prompt"))
        return
    raise PromptTruncated(
        msg,
        hint="raise the server's context length (Ollama: OLLAMA_CONTEXT_LENGTH=<tokens> "
        f"ollama serve), send less context, or allow it with {name_of('allow_truncated_prompt')}",
    )


def strip_echo(content: str, so_far: str) -> tuple[str, int]:
    """Servers such as llama-server repeat the prefilled text first; keep it out."""
    if so_far and content.startswith(so_far):
        return content[len(so_far) :], len(so_far)
    return content, 0


@dataclass
class Chain:
    """A chain being extended: its base messages and the segments so far."""

    root: Path
    out_dir: Path
    topic: str
    endpoint: Endpoint
    base_messages: tuple[WireMessage, ...]
    body: BodyOptions
    """Options of the primary request (model, temperature, extra body)."""
    segments: list[Segment]
    primary_answer_path: str
    missing_usage_told: bool = False
    """Whether the user was told that the server reports no usage (said once per review)."""
    findings: FindingsHook | None = None
    """``run --findings``: makes the findings file of the segment that ends the chain."""

    @classmethod
    def from_plan(cls, plan: ReviewPlan, segments: list[Segment]) -> Chain:
        """The chain of a planned review whose first segments are ``segments``."""
        return cls(
            root=plan.root,
            out_dir=plan.out_dir,
            topic=plan.options.topic,
            endpoint=plan.endpoint,
            base_messages=plan.messages,
            body=plan.options.body_options(),
            segments=segments,
            primary_answer_path=segments[0].answer_path,
            findings=_findings_hook(plan) if plan.options.findings else None,
        )


def _tell_missing_usage(completion: Completion, told: bool) -> bool:
    """Say once per review that the server reported no usage, and what that turns off;
    returns whether it has been said."""
    if completion.usage is None and not told:
        log.warning(
            "the server reported no token usage: tokens are unknown (estimated where a count "
            "is needed; receipts hold zeros, marked usage_reported=false in the request "
            "record), and the check for a silently truncated prompt is off for this review"
        )
        return True
    return told


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


def continue_chain(
    chain: Chain,
    options: ContinuationOptions,
    client: ChatClient,
    *,
    allow_truncated_prompt: bool = False,
    keep_reasoning: bool = False,
    progress: ProgressFn | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    force: bool = False,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Send continuation requests while the last segment is cut off, up to the cap.

    A segment that was cut off without adding any text ends the chain (the result is
    ``stalled``) unless the continuation cap is larger than that segment's. ``force`` sends
    the first continuation even though the last segment ended normally. Each continuation's
    line ("asking ... to go on") is logged, or given to ``announce``: a batch says it only
    once the request holds a slot and is really sent.
    """
    _, prefill_extra = SERVER_PRESETS[options.server]
    body = continuation_body(chain.body, options)
    made = 0
    while chain.segments[-1].truncated or (force and made == 0):
        forced = force and made == 0 and not chain.segments[-1].truncated
        if made >= options.max_continuations:
            break
        if not forced and _repeats_nothing(chain.segments[-1], body.max_tokens):
            break  # the caller says why: the result is ``stalled``
        made += 1
        so_far = "".join(s.content for s in chain.segments)
        refs = tuple(
            AnswerRef(s.answer_path, s.answer_sha256, len(s.content.encode("utf-8")))
            for s in chain.segments
        )
        if options.style == "prefill":
            tail = [WireMessage("assistant", refs, so_far, extra=prefill_extra)]
        else:
            directive = continuation_directive()
            tail = [
                WireMessage("assistant", refs, so_far),
                WireMessage("user", (directive,), directive),
            ]
        messages = (*chain.base_messages, *tail)
        prepared = prepare(body, messages)
        estimate = estimate_tokens(m.content for m in messages)
        preflight(
            client,
            server=options.server,
            model=body.model,
            estimate=estimate,
            max_tokens=body.max_tokens,
            allow=allow_truncated_prompt,
        )
        index = len(chain.segments)
        why = f"ended normally ({name_of('force')})" if forced else "was cut off at the token cap"
        line = (
            f"continuation {made}/{options.max_continuations}: "
            f"{chain.segments[-1].answer_path} {why}; asking {body.model} to go on"
        )
        if announce is None:
            log.info("%s", line)
        else:
            announce(line)
        completion = client.complete(
            prepared.body_bytes, model=body.model, stream=body.stream, progress=progress
        )
        check_prompt_kept(completion, estimate, allow=allow_truncated_prompt, url=client.url)
        chain.missing_usage_told = _tell_missing_usage(completion, chain.missing_usage_told)
        content, echoed = strip_echo(completion.content, so_far)
        if echoed:
            log.info("the server echoed the %d prefilled characters; kept them out", echoed)
        ensure_dir(chain.out_dir, shown=chain.out_dir.name)
        segment = write_segment(
            SegmentSpec(
                root=chain.root,
                out_dir=chain.out_dir,
                topic=chain.topic,
                model=body.model,
                endpoint=chain.endpoint.url,
                prepared=prepared,
                completion=completion,
                content=content,
                echo_stripped_chars=echoed,
                prompt_token_estimate=estimate,
                continuation=Continuation(
                    index=index,
                    style=options.style,
                    server=options.server,
                    primary_answer_path=chain.primary_answer_path,
                    previous_answer_path=chain.segments[-1].answer_path,
                ),
                keep_reasoning=keep_reasoning,
                findings=chain.findings and partial(chain.findings, so_far + content),
            ),
            now(),
        )
        chain.segments.append(segment)


def send_review(
    plan: ReviewPlan,
    client: ChatClient,
    *,
    progress: ProgressFn | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> ReviewResult:
    """Send a planned review, write its segments, and continue it while it is cut off."""
    o = plan.options
    preflight(
        client,
        server=o.continuation.server,
        model=o.model,
        estimate=plan.token_estimate,
        max_tokens=o.max_tokens,
        allow=o.allow_truncated_prompt,
        reasoning=o.reasoning,
    )
    completion = client.complete(
        plan.prepared.body_bytes, model=o.model, stream=o.stream, progress=progress
    )
    check_prompt_kept(
        completion, plan.token_estimate, allow=o.allow_truncated_prompt, url=client.url
    )
    told = _tell_missing_usage(completion, False)
    ensure_dir(plan.out_dir, shown=o.output_dir)
    findings = _findings_hook(plan) if o.findings else None
    primary = write_segment(
        SegmentSpec(
            root=plan.root,
            out_dir=plan.out_dir,
            topic=o.topic,
            model=o.model,
            endpoint=plan.endpoint.url,
            prepared=plan.prepared,
            completion=completion,
            content=completion.content,
            context_files=plan.files,
            git=plan.pins,
            template=(plan.template.name, plan.template.sha256),
            prompt_token_estimate=plan.token_estimate,
            keep_reasoning=o.keep_reasoning,
            findings=findings and partial(findings, completion.content),
        ),
        now(),
    )
    chain = Chain.from_plan(plan, [primary])
    chain.missing_usage_told = told
    continue_chain(
        chain,
        o.continuation,
        client,
        allow_truncated_prompt=o.allow_truncated_prompt,
        keep_reasoning=o.keep_reasoning,
        progress=progress,
        now=now,
    )
    return ReviewResult(
        segments=tuple(chain.segments),
        endpoint=plan.endpoint.url,
        context_files=plan.receipt_paths or tuple(f.path for f in plan.files),
    )


def _findings_hook(plan: ReviewPlan) -> FindingsHook:
    from .finding.sidecar import hook

    return hook(plan.root, ((f.path, f.sha256) for f in plan.files))


def make_client(endpoint: Endpoint, options: ReviewOptions) -> ChatClient:
    return ChatClient(
        endpoint.url,
        endpoint.api_key,
        policy=options.retry,
        timeouts=options.timeouts,
        advice=Advice.of(endpoint, options.continuation.server, options.api_key_env),
    )


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
