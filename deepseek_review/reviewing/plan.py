"""Planning one review: check everything and build the exact request, sending nothing.

What ``--dry-run`` shows and what ``run`` sends (:func:`plan_review`). Every refusal (bad
context, bad endpoint, secrets, a prompt over the limits, options a continuation could only
fail on once an answer has been paid for) happens here, before anything is written.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any, Literal

from deepseek_review.chat.endpoint import Endpoint, resolve_endpoint
from deepseek_review.chat.native import native_endpoint
from deepseek_review.chat.tokens import (
    PLAIN_ESTIMATE,
    Count,
    estimate_sizes,
    refuse_over_cap,
    worst_case,
)
from deepseek_review.chat.types import RetryPolicy, Timeouts
from deepseek_review.context.gather import (
    ContextFile,
    ContextLimits,
    Gathered,
    Output,
    Skipped,
    gather_context,
)
from deepseek_review.context.git_change import plan_git
from deepseek_review.context.git_plan import GitOptions, GitPlan
from deepseek_review.context.places import refuse_git_data
from deepseek_review.errors import InputError, ReviewError
from deepseek_review.git.runner import find_repo_root, resolve_inside
from deepseek_review.ollama.reasoning import with_reasoning
from deepseek_review.options.table import SERVER_PRESETS, check, default, name_of
from deepseek_review.records.naming import check_topic, longest_name
from deepseek_review.records.receipt import check_recordable
from deepseek_review.records.storage import check_writable_dir
from deepseek_review.reviewing import since_last
from deepseek_review.reviewing.calibration import counter_for
from deepseek_review.reviewing.prompt import Template, frame_messages, load_template
from deepseek_review.reviewing.request import (
    BodyOptions,
    PreparedRequest,
    WireMessage,
    check_extra_body,
    message_sizes,
    prepare,
    sent_contents,
)
from deepseek_review.util.logs import log

# The built-in defaults live in the option table (:mod:`options.table`); these names are theirs.
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
    exclude: tuple[str, ...] = ()
    """git pathspecs of what folders and globs list that is left out (``--exclude``)."""
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
    findings_from: str = default("findings_from")
    """``auto``, ``structured`` or ``block``: where ``findings`` come from
    (:mod:`.extraction`)."""
    self_check: bool = default("self_check")
    self_check_threshold: int = default("self_check_threshold")
    continuation: ContinuationOptions = field(default_factory=ContinuationOptions)
    context_window: int | None = default("context_window")
    allow_truncated_prompt: bool = default("allow_truncated_prompt")
    allow_secrets: bool = default("allow_secrets")
    reasoning: str | None = default("reasoning")
    api: str = default("api")
    server_declared: bool = True
    """Whether ``continuation.server`` was declared (a flag, the environment, a file) rather
    than left at its default: an undeclared one is asked for by the findings extraction
    (:func:`.extraction.probed_kind`)."""
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
    split: bool = default("split")
    """Review in parts that fit the window, then a synthesis (:mod:`.split_run`); the
    library's :func:`plan_review` plans one review whatever it says."""
    max_run_tokens: int | None = None
    """The operator's cap on what the run may use (flag or environment, never a repository
    file): a review whose worst case is over it is refused before it is sent."""
    pool: tuple[Endpoint, ...] = ()
    """``run --split`` over several servers (``--endpoint`` given more than once, with their
    keys): its parts are spread over them (:mod:`.reviewing.pool`); ``endpoint`` is the one
    it is planned with."""
    jobs_per_endpoint: int | None = None
    """Requests each server of ``pool`` gets at once (None: ``jobs`` spread evenly)."""

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
    """The context files' paths, hashes and sizes; their texts are in the body only."""
    framed: tuple[WireMessage, ...]
    """The messages as parts, their texts never joined (the body was written from them)."""
    prepared: PreparedRequest
    token_estimate: int
    framed_bytes: int
    """The prompt's bytes as sent: the files with their headings, fences and list, the
    template and the request (what ``--max-context-bytes`` limits)."""
    options: ReviewOptions
    skipped: tuple[Skipped, ...] = ()
    """What a folder or glob found that was left out, each with why."""
    pins: Mapping[str, Any] | None = None
    """What the request record pins in git (:mod:`deepseek_review.context.pins`)."""
    receipt_paths: tuple[str, ...] = ()
    """The receipt's ``context_files``: a diff's changed paths, then the whole files."""
    change_lines: int | None = None
    """The lines of the patch of a change under review (``--diff``, ``--staged``); None
    when no change is."""
    names: Mapping[str, str] = field(default_factory=dict)
    """How errors name the options set by the environment or the config file
    (:func:`deepseek_review.options.table.naming_as`), for what sending it may still refuse."""
    token_count: Count | None = None
    """The prompt's tokens as the fit checks count them (:class:`chat.tokens.Counter`):
    calibrated from what the server reported before, or (once it was asked: a dry run, the
    run's pre-flight) by its own tokenizer; None: :attr:`token_estimate`, plainly estimated.
    ``token_estimate`` stays the plain estimate, what the record keeps and the check for a
    silently clipped prompt uses."""

    @property
    def count(self) -> Count:
        """:attr:`token_count`, or the plain estimate."""
        return self.token_count or Count(self.token_estimate, PLAIN_ESTIMATE)

    @property
    def messages(self) -> tuple[WireMessage, ...]:
        """The messages with their texts, read back from the body (a copy of the prompt: for
        callers that show or compare them; sending needs only the body)."""
        return tuple(replace(m, content=t) for m, t in zip(self.framed, self.texts, strict=True))

    @property
    def texts(self) -> tuple[str, ...]:
        """Each message's text as sent, read back from the body."""
        return tuple(sent_contents(self.prepared.body_bytes))

    @property
    def context_bytes(self) -> int:
        """The context files' bytes."""
        return sum(f.size for f in self.files)


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


class PlanBase:
    """What a review's plan takes from its options but its topic and prompt: the request's
    options, where it goes, where it is written, the template and the context; and whether
    the options a continuation would use check out (None: not asked yet)."""

    __slots__ = ("after", "body", "endpoint", "git", "out_dir", "root", "template")

    def __init__(
        self,
        body: BodyOptions,
        endpoint: Endpoint,
        root: Path,
        out_dir: Path,
        template: Template,
        git: GitPlan,
    ) -> None:
        self.body, self.endpoint, self.root, self.out_dir = body, endpoint, root, out_dir
        self.template, self.git = template, git
        self.after: ReviewError | bool | None = None


def plan_base(
    options: ReviewOptions,
    env: Mapping[str, str],
    gather: GatherFn = gather_context,
    *,
    git: GitPlan | None = None,
) -> PlanBase:
    """The first step of a plan (:class:`PlanBase`): the endpoint, the folders, the template
    and the context as git gives it; ``git``: that context, made already (a split review's
    part of a change), instead of made from ``options``."""
    body_options = options.body_options()  # validates model, limits, extra body
    endpoint = resolve_endpoint(
        options.endpoint,
        env,
        key_env=options.api_key_env,
        named_by=options.endpoint_named_by,
        operator=options.operator_endpoints,
        what=name_of("endpoint"),
    )
    endpoint = native_endpoint(endpoint, options.api, options.continuation.server)
    root = find_repo_root(options.repo_root)
    out_dir, out_named = resolve_inside(root, options.output_dir, what=name_of("output_dir"))
    refuse_git_data(root, options.output_dir, out_dir, what=name_of("output_dir"))
    if options.template_file is not None:
        real = Path(options.template_file).resolve()
        refuse_git_data(root, options.template_file, real, what=name_of("template_file"))
    template = load_template(options.template, options.template_file)
    outputs = outputs_of(root, out_dir, out_named, options.outputs)
    # Exclusions travel with the specs, as git's ``:(exclude)`` magic (a change drops them too).
    specs = (*options.context, *(f":(exclude){x}" for x in options.exclude))
    if git is not None:
        return PlanBase(body_options, endpoint, root, out_dir, template, git)
    narrow = None
    if options.git.since_last_review:
        narrow = partial(since_last.narrow, root, out_named, options.topic)
    gitplan = plan_git(options.git, root, specs, options.limits, outputs, gather, narrow=narrow)
    return PlanBase(body_options, endpoint, root, out_dir, template, gitplan)


def _after(
    options: ReviewOptions, body: BodyOptions, url: str, folder: str, paths: list[str]
) -> None:
    """What could otherwise only fail once an answer has been paid for."""
    if options.continuation.max_continuations > 0:
        continuation_body(body, options.continuation)
    check_recordable(model=options.model, endpoint=url, folder=folder, context_files=paths)
    if options.continuation.max_continuations > 0 and options.continuation.model:
        check_recordable(
            model=options.continuation.model, endpoint=url, folder=folder, context_files=None
        )


#: The options :class:`SharedPlans` does not share a plan's base across.
_PER_REVIEW = frozenset({"topic", "prompt"})


class SharedPlans:
    """The part of a plan that does not depend on the review's topic and prompt, made once
    for the reviews whose other options are the very same objects (a batch's entries that
    differ only in topic and prompt: :class:`~batch.manifest_share.EntryOptions` builds them so):
    the
    same values, and the same refusal, each would have made. One per batch (one environment,
    one planning thread); a change (``--diff``, ``--staged``), whose plan looks at the topic,
    is planned in full each time."""

    def __init__(self) -> None:
        # By the identity of the options' values; the values are kept, so no other object
        # can take one's id while the memo lives.
        self._bases: dict[tuple[int, ...], tuple[list[Any], PlanBase | ReviewError]] = {}

    def base(self, options: ReviewOptions, env: Mapping[str, str], gather: GatherFn) -> PlanBase:
        if options.git.diff is not None or options.git.staged:
            return plan_base(options, env, gather)
        values = [v for k, v in vars(options).items() if k not in _PER_REVIEW]
        values.append(env)
        key = tuple(map(id, values))
        known = self._bases.get(key)
        if known is None:
            try:
                known = values, plan_base(options, env, gather)
            except ReviewError as exc:
                known = values, exc
            self._bases[key] = known
        if isinstance(known[1], ReviewError):
            raise known[1]
        return known[1]


def plan_review(
    options: ReviewOptions,
    env: Mapping[str, str] | None = None,
    *,
    gather: GatherFn = gather_context,
    check_output: bool = True,
    shared: SharedPlans | None = None,
    git: GitPlan | None = None,
) -> ReviewPlan:
    """Check everything and build the exact request, without sending or writing anything.

    Everything that can be checked before paying for an answer is checked here: the
    continuation requests' options, and (unless ``check_output`` is off: a batch checks each
    folder once) that the output folder can be written. ``shared`` (a batch's) makes what
    does not depend on the topic and prompt once for all the reviews that share it. ``git``:
    the context as git gives it, made already (:func:`plan_base`).
    """
    env = os.environ if env is None else env
    _check_own_options(options)
    if shared is None:
        base = plan_base(options, env, gather, git=git)
    else:
        base = shared.base(options, env, gather)
    root, endpoint, out_dir, template = base.root, base.endpoint, base.out_dir, base.template
    body_options, gitplan = base.body, base.git
    kept = None if shared is None else base  # alone, the files' texts go with the body
    del base
    skipped, pins, receipt_paths = gitplan.skipped, gitplan.git, gitplan.receipt_paths
    files: list[ContextFile] = gitplan.files
    _refuse_prompt(options, endpoint, [*files, *gitplan.scanned])
    framed = frame_messages(template, options.prompt, options.topic, files, gitplan.lead)
    messages = tuple(WireMessage(role, parts, None) for role, parts in framed)
    sizes = message_sizes(messages)
    check_framed_size(sum(sizes), sum(f.size for f in files), options.limits)
    # From here the texts live in ``texts`` only, which the body takes as it is written; the
    # plan keeps what the record needs (path, hash, size): the body is the one large thing left.
    texts = {f.path: f.text for f in files}
    files = [ContextFile(f.path, "", f.sha256, f.size, f.lines) for f in files]
    change_lines = _lines(gitplan.scanned[0].text) if gitplan.scanned else None
    del gitplan
    prepared = prepare(body_options, messages, texts, sizes)
    estimate = estimate_sizes(sizes)
    count = _counted(endpoint.url, options, sizes)
    out_rel = out_dir.relative_to(root).as_posix()
    _after_once(kept, options, body_options, endpoint.url, out_rel, receipt_paths)
    refuse_over_cap(options.max_run_tokens, review_worst_case(options, estimate), _what(options))
    if check_output:
        _check_output_dir(options, root, out_dir)
    return ReviewPlan(
        root=root, endpoint=endpoint, out_dir=out_dir, template=template, files=tuple(files),
        framed=messages, prepared=prepared, token_estimate=estimate, token_count=count,
        framed_bytes=sum(sizes), options=options, skipped=skipped, pins=pins,
        receipt_paths=tuple(receipt_paths), change_lines=change_lines,
    )  # fmt: skip


def _check_own_options(options: ReviewOptions) -> None:
    """Refuse a topic or a context window no review could have, before anything is read."""
    check_topic(options.topic)
    check("findings_from", options.findings_from)
    if options.findings:
        from deepseek_review.reviewing.extraction import extraction_topic

        if extraction_mode(options) != "block":
            extraction_topic(options.topic)
    if options.context_window is not None:
        check("context_window", options.context_window)


def _check_output_dir(options: ReviewOptions, root: Path, out_dir: Path) -> None:
    """Refuse an output folder the review's files could not be written into."""
    named = f"{name_of('output_dir')} {options.output_dir}"
    check_writable_dir(out_dir, shown=named, root=root, longest=review_longest_name(options))


def _refuse_prompt(options: ReviewOptions, endpoint: Endpoint, sent: list[ContextFile]) -> None:
    """Refuse a prompt over ``--max-context-bytes``, or secrets in the prompt or in ``sent``
    (the files that leave the machine) unless they go to a local endpoint or are allowed."""
    prompt_bytes = len(options.prompt.encode("utf-8", errors="surrogatepass"))
    if prompt_bytes > options.limits.max_context_bytes:
        raise InputError(
            f"the prompt is {prompt_bytes} bytes, over {name_of('max_context_bytes')} "
            f"{options.limits.max_context_bytes}"
        )
    if not (options.allow_secrets or endpoint.is_local):
        from deepseek_review.context.secrets import refuse_secrets

        # The prompt leaves the machine too: scan it as if it were one more file.
        prompt_file = ContextFile(path="<prompt>", text=options.prompt, sha256="", size=0)
        refuse_secrets([prompt_file, *sent], endpoint=endpoint.url)


def _after_once(
    kept: PlanBase | None,
    options: ReviewOptions,
    body: BodyOptions,
    url: str,
    folder: str,
    paths: list[str],
) -> None:
    """What could otherwise only fail once an answer has been paid for, checked now
    (:func:`_after`); its outcome kept on a shared base (``kept``) for the next review."""
    if kept is None:
        _after(options, body, url, folder, paths)
        return
    if kept.after is None:
        try:
            _after(options, body, url, folder, paths)
            kept.after = True
        except ReviewError as exc:
            kept.after = exc
    if isinstance(kept.after, ReviewError):
        raise kept.after


def _counted(url: str, options: ReviewOptions, sizes: Sequence[int]) -> Count:
    """The prompt's tokens as the fit checks count them (calibrated from what the server at
    ``url`` reported before, when it did), warned about when over ``context_window``."""
    count = counter_for(url, options.model).estimate(sizes)
    warn_over_window(count, options.context_window)
    return count


def warn_over_window(count: Count, window: int | None) -> None:
    """Warn when the prompt alone is over the declared ``context_window``."""
    if window is not None and count.tokens > window:
        log.warning(
            "the prompt is %s, over the declared %s %d: the server may silently drop part of it",
            count,
            name_of("context_window"),
            window,
        )


def review_worst_case(options: ReviewOptions, prompt_tokens: int) -> int:
    """The most tokens a review of ``prompt_tokens`` can use with its caps and continuations."""
    cont = options.continuation
    later = cont.max_tokens or options.max_tokens
    total = worst_case(prompt_tokens, options.max_tokens, later, cont.max_continuations)
    return total + sum(p + c for p, c in refinement_requests(options))


def refinement_requests(options: ReviewOptions, url: str | None = None) -> list[tuple[int, int]]:
    """The worst requests that follow a review asking for its findings, as (prompt tokens,
    answer cap): a findings extraction (its framing and every answer) and a self-check (on
    the findings file: anchored JSON, ~2x the answers), each asked twice at most."""
    from deepseek_review.reviewing.extraction import FRAMING_TOKENS

    cont = options.continuation
    answers = options.max_tokens + (cont.max_tokens or options.max_tokens) * cont.max_continuations
    out: list[tuple[int, int]] = []
    if _extracts(options, url):
        out += [(FRAMING_TOKENS + answers, options.max_tokens)] * 2
    if options.findings and options.self_check:
        out += [(FRAMING_TOKENS + 2 * answers, options.max_tokens)] * 2
    return out


def refinements_named(options: ReviewOptions, url: str | None = None) -> str:
    """`` and its findings extraction and self-check`` (what follows a review), or ""."""
    more = [
        w
        for w, on in (
            ("findings extraction", _extracts(options, url)),
            ("self-check", options.findings and options.self_check),
        )
        if on
    ]
    return f" and its {' and '.join(more)}" if more else ""


def _what(options: ReviewOptions) -> str:
    """What ``max_run_tokens`` holds a review's worst case against, in its refusal."""
    return "the review" + refinements_named(options)


def known_server(options: ReviewOptions, url: str | None = None) -> str | None:
    """The review's server kind as declared, or as the host of ``url`` (default: the
    ``endpoint`` option) says; on Ollama's native API, Ollama. None: the server is asked."""
    from deepseek_review.reviewing.extraction import declared_kind

    if options.api == "ollama":
        return "ollama"
    server = options.continuation.server
    return declared_kind(server, options.server_declared, url or options.endpoint)


def extraction_mode(options: ReviewOptions, url: str | None = None) -> str:
    """What ``findings_from`` means for the review's server (:func:`.extraction.resolved_mode`),
    as :func:`known_server` knows it."""
    from deepseek_review.reviewing.extraction import resolved_mode

    server = known_server(options, url) or options.continuation.server
    return resolved_mode(options.findings_from, server, options.api)


def _extracts(options: ReviewOptions, url: str | None = None) -> bool:
    """Whether the review's findings are asked for by a findings extraction after it."""
    return options.findings and extraction_mode(options, url) != "block"


def _lines(text: str) -> int:
    """The lines of ``text``, a last one without its newline counted too."""
    return text.count("\n") + (bool(text) and not text.endswith("\n"))


def check_framed_size(framed: int, files: int, limits: ContextLimits) -> None:
    """Refuse a prompt whose bytes as sent, framing and all, are over ``--max-context-bytes``:
    3,000 tiny files are mostly headings, fences and list lines."""
    if framed > limits.max_context_bytes:
        raise InputError(
            f"the prompt as framed is {framed} bytes ({files} of context files and "
            f"{framed - files} of framing: headings, fences, the file list, the template and "
            f"the prompt), over {name_of('max_context_bytes')} {limits.max_context_bytes}"
        )
