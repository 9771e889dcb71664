"""Planning a split review (``run --split``): every part planned to its exact request.

Each part is an ordinary review (:func:`.plan.plan_review` of the part's files), its topic
``<topic>-part-01-of-05``, its request saying which part it is and what the others cover, its
continuations no more than keep every request within the window. Nothing is sent or written
here (but the server may be asked its window); :mod:`.split_run` sends it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.tokens import refuse_over_cap
from deepseek_review.context.gather import ContextFile, ContextLimits, Gathered, Output
from deepseek_review.context.git_hunks import FileChange, file_changes, part_plan
from deepseek_review.context.git_plan import GitPlan, frame_diff
from deepseek_review.context.ranges import file_range
from deepseek_review.errors import ConfigError, InputError, PromptDoesNotFit
from deepseek_review.options.table import check, name_of
from deepseek_review.records.naming import check_topic
from deepseek_review.reviewing.plan import (
    GatherFn,
    PlanBase,
    ReviewOptions,
    ReviewPlan,
    plan_base,
    plan_review,
)
from deepseek_review.reviewing.prompt import frame_messages, load_template
from deepseek_review.reviewing.split import (
    NOTE_MAX_BYTES,
    NotReviewed,
    Part,
    SplitPlan,
    count_tokens,
    counting,
    margin_for,
    part_notes,
    plan_parts,
)
from deepseek_review.reviewing.split_diff import plan_change_parts
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import plural

if TYPE_CHECKING:
    from deepseek_review.git.diff import Diff

SYNTHESIS_TEMPLATE = "synthesis"
#: What gathering for a split is allowed in all: the parts are held to the window instead.
_NO_TOTAL = 1 << 62
#: Room per answer heading, fence and list line in the synthesis's estimate, in tokens.
ANSWER_FRAME = 64


@dataclass(frozen=True)
class PlannedPart:
    part: Part
    topic: str
    plan: ReviewPlan


@dataclass(frozen=True)
class SplitReview:
    """What ``run --split`` will do: the parts, each planned to its exact request."""

    options: ReviewOptions
    split: SplitPlan
    parts: tuple[PlannedPart, ...]
    synthesis_topic: str
    synthesis_estimate: int
    """The synthesis's prompt if every part's answer were at its cap (one request each)."""
    root: Path
    out_dir: Path
    endpoint: Endpoint
    env: Mapping[str, str] = field(repr=False, default_factory=dict)
    names: Mapping[str, str] = field(default_factory=dict)
    """How errors name the options the environment or the config file set."""
    jobs: int = 1
    """Parts sent at the same time."""
    change: Mapping[str, Any] | None = None
    """A change's commits and each file it shows with its count of hunks (what the split
    record says the parts cover); None: files, not a change."""

    @property
    def answer_room(self) -> int:
        """The tokens each part's answer may average for the synthesis to fit the window."""
        split = self.split
        framing = self.synthesis_estimate - len(self.parts) * (
            self.options.max_tokens + ANSWER_FRAME
        )
        free = split.window - self.options.max_tokens - split.margin - framing
        return max(0, free // len(self.parts) - ANSWER_FRAME)

    @property
    def merge_estimate(self) -> tuple[int, int]:
        """(requests, tokens) of the merges before the synthesis if every answer were at
        ``--max-tokens``: each merge's prompt as large as a part's may be, each holding as
        many answers as fit (at least two)."""
        cap = self.options.max_tokens
        framing = self.synthesis_estimate - len(self.parts) * (cap + ANSWER_FRAME)
        room = self.split.part_cap - framing
        per = max(2, room // (cap + ANSWER_FRAME))
        count, requests = len(self.parts), 0
        while count * (cap + ANSWER_FRAME) > room and count > 1:
            count = -(-count // per)
            requests += count
        return requests, requests * (self.split.part_cap + cap)

    @property
    def total_tokens(self) -> int:
        """What the plan may use: every prompt, and every answer at ``--max-tokens`` (no
        continuation), the merges and the synthesis included."""
        cap = self.options.max_tokens
        parts = sum(p.plan.token_estimate + cap for p in self.parts)
        synthesis = min(self.synthesis_estimate, self.split.part_cap) + cap
        return parts + self.merge_estimate[1] + synthesis


def fixed_gathering(files: Sequence[ContextFile]) -> GatherFn:
    """A gathering that yields exactly ``files`` (a part's, or the answers merged)."""

    def gather(
        root: Path, specs: Sequence[str], limits: ContextLimits, outputs: Sequence[Output]
    ) -> Gathered:
        return Gathered(files)

    return gather


def part_topics(topic: str, n: int) -> tuple[list[str], str]:
    """The topics of ``n`` parts and of the synthesis, checked (``--topic`` too long for them
    is refused naming it)."""
    width = max(2, len(str(n)))
    topics = [f"{topic}-part-{i:0{width}d}-of-{n:0{width}d}" for i in range(1, n + 1)]
    synthesis = f"{topic}-synthesis"
    for t in [*topics, synthesis]:
        try:
            check_topic(t)
        except ConfigError:
            raise ConfigError(
                f"{name_of('topic')} {topic}: too long for the parts' names ({t})"
            ) from None
    return topics, synthesis


def _base_tokens(options: ReviewOptions, topic: str) -> int:
    """Every part's prompt without its files, the note's room included."""
    template = load_template(options.template, options.template_file)
    room = "x" * NOTE_MAX_BYTES + "\n\n" + options.prompt
    framed = frame_messages(template, room, topic, [])
    return sum(count_tokens("".join(p for p in parts if isinstance(p, str))) for _, parts in framed)


def _secret_files(
    options: ReviewOptions, endpoint: Endpoint, files: Sequence[ContextFile]
) -> list[NotReviewed]:
    """The files the secret scan flags, for a remote endpoint (unless ``--allow-secrets``):
    not sent, listed as not reviewed."""
    if options.allow_secrets or endpoint.is_local:
        return []
    from deepseek_review.context.secrets import scan_files

    out: dict[str, NotReviewed] = {}
    for f in scan_files(files):
        if f.path not in out:
            why = f"looks like it holds a secret (line {f.line}: {f.kind}); not sent to "
            why += endpoint.url
            out[f.path] = NotReviewed(f.path, why)
    return list(out.values())


def plan_split_review(
    options: ReviewOptions,
    env: Mapping[str, str],
    *,
    window_of: Callable[[Endpoint], int | None] | None = None,
    max_total_tokens: int | None = None,
) -> SplitReview | ReviewPlan:
    """The parts of a split review, each planned to its exact request; the ordinary review's
    plan when the whole context fits one part. ``window_of``: asks the server its context
    window, when ``--context-window`` is not given (:func:`window_from_server`). Refused
    before anything is sent: no window known, a window too small for any file, a plan over
    ``--max-total-tokens`` or ``--max-run-tokens``.

    A change (``--diff``, ``--staged``) is split at file, then hunk boundaries
    (:mod:`.split_diff`); every part's request then holds its part of the change, made from
    the pinned commits, so that ``verify`` makes it again.
    """
    check_topic(options.topic)
    wide = replace(options, limits=ContextLimits(options.limits.max_file_bytes, _NO_TOTAL))
    base = plan_base(wide, env)
    window = _window(options, base.endpoint, window_of)
    left = [NotReviewed(s.path, s.reason) for s in base.git.skipped if not s.own]
    secret = _secret_files(options, base.endpoint, base.git.files)
    held = {n.path for n in secret}
    files = [f for f in base.git.files if f.path not in held]
    every = [] if base.git.diff is None else file_changes(base.git.diff)
    change = _change_json(base.git, every)
    changes = every
    if changes:
        found = _secret_files(options, base.endpoint, [_as_file(fc) for fc in changes])
        secret += found
        changes = [fc for fc in changes if fc.path not in {n.path for n in found}]
    with counting(_calibrated(options, base.endpoint, env)):
        split = _parts(options, base, window, files, changes, [*left, *secret])
    units = len(changes) + len(files)
    whole = not any(f.hunks for f in split.parts[0].files)
    if len(split.parts) == 1 and not secret and len(split.parts[0].files) == units and whole:
        log.info("%s: the whole context fits one review", name_of("split"))
        return plan_review(replace(options, split=False), env)  # the caller may plan it again
    topics, synthesis_topic = part_topics(options.topic, len(split.parts))
    planned = _planned_parts(options, env, base, split, topics, window, every)
    with counting(split.bytes_per_token):
        estimate = _synthesis_estimate(options, synthesis_topic, len(split.parts))
    review = SplitReview(
        options, split, tuple(planned), synthesis_topic, estimate, base.root, base.out_dir,
        base.endpoint, env, change=change,
    )  # fmt: skip
    _refuse_over_budget(review, max_total_tokens)
    return review


def _as_file(fc: FileChange) -> ContextFile:
    """A file's change as the secret scan reads it."""
    return ContextFile(fc.path, fc.text, "", 0)


def _planned_parts(
    options: ReviewOptions,
    env: Mapping[str, str],
    base: PlanBase,
    split: SplitPlan,
    topics: Sequence[str],
    window: int,
    changes: Sequence[FileChange],
) -> list[PlannedPart]:
    """Each part planned to its exact request: its files (or their ranges) and, with a change
    or ``--rev``, its part of git's plan (the change's files and hunks, the pins)."""
    texts = {f.path: f for f in base.git.files}
    notes = part_notes(split)
    from_git = base.git.git is not None and (base.git.diff is not None or bool(options.git.rev))
    planned = []
    for part, topic in zip(split.parts, topics, strict=True):
        prompt = notes[part.number - 1] + "\n\n" + options.prompt
        part_options = replace(
            options, topic=topic, prompt=prompt, split=False, context_window=window
        )
        part_files = [
            texts[f.path] if f.lines is None else file_range(texts[f.path], *f.lines)
            for f in part.files
            if not f.change
        ]
        chosen: dict[str, list[tuple[int, int]]] = {}
        for f in part.files:
            if f.change:
                chosen.setdefault(f.path, []).extend([] if f.hunks is None else [f.hunks[:2]])
        git = part_plan(base.git, part_files, chosen, changes) if from_git else None
        plan = planned_within(part_options, env, part_files, window, split.margin, git=git)
        if plan.token_estimate > split.part_cap:  # the sum planning made is an upper bound
            raise PromptDoesNotFit(
                f"part {part.number} is about {plan.token_estimate} tokens, over the part's "
                f"room of {split.part_cap}: a planning error; nothing was sent"
            )
        planned.append(PlannedPart(part, topic, plan))
    return planned


def _change_json(git: GitPlan, changes: Sequence[FileChange]) -> dict[str, Any] | None:
    """The change a split record says its parts cover: its commits, and each file it shows
    with its count of hunks (the files left out are listed as not reviewed)."""
    if git.diff is None or git.git is None:
        return None
    return {
        **git.git["commits"],
        "files": [{"path": fc.path, "hunks": len(fc.hunks)} for fc in changes],
    }


def _calibrated(options: ReviewOptions, endpoint: Endpoint, env: Mapping[str, str]) -> float | None:
    """The bytes a token the same endpoint and model's earlier counts say, erring high
    (:mod:`deepseek_review.reviewing.calibration`); None when none are remembered."""
    from deepseek_review.chat.tokens import calibrated_bytes_per_token
    from deepseek_review.reviewing.calibration import load

    bpt = calibrated_bytes_per_token(load(endpoint.url, options.model, env))
    if bpt is None:
        return None
    # In steps of a quarter byte, down: more samples seldom change the plan, so a re-run
    # finds the parts an earlier run sent (resuming compares their exact requests).
    return max(1.0, math.floor(bpt * 4) / 4)


def _window(
    options: ReviewOptions, endpoint: Endpoint, window_of: Callable[[Endpoint], int | None] | None
) -> int:
    """``--context-window``, else what the server says; refused when neither is known."""
    window = options.context_window
    if window is None and window_of is not None:
        window = window_of(endpoint)
    if window is None:
        raise ConfigError(
            f"{name_of('split')} needs the model's context window: give "
            f"{name_of('context_window')} (the server did not say it)"
        )
    return int(check("context_window", window))


def _parts(
    options: ReviewOptions,
    base: PlanBase,
    window: int,
    files: list[ContextFile],
    changes: list[FileChange],
    left: list[NotReviewed],
) -> SplitPlan:
    """The plan of parts, refused when the window leaves no room for a file or none fits."""
    endpoint = base.endpoint
    margin = margin_for(window)
    units = max(1, len(files) + len(changes))
    longest_topic = part_topics(options.topic, units)[1] + "-part-9999-of-9999"
    base_tokens = _base_tokens(options, longest_topic)
    if base.git.diff is not None:
        base_tokens += _change_frame_tokens(base.git.diff)
    if window - options.max_tokens - margin - base_tokens <= 0:
        said = (
            f"{name_of('context_window')} {window}"
            if options.context_window is not None
            else f"the model's context window ({window} tokens, as {endpoint.url} says)"
        )
        raise ConfigError(
            f"{said} leaves no room for files: "
            f"{name_of('max_tokens')} {options.max_tokens}, a margin of {margin} and the "
            f"template and request (about {base_tokens} tokens) fill it",
            hint=f"lower {name_of('max_tokens')}, or shorten the prompt",
        )
    planner: Callable[..., SplitPlan] = plan_parts
    if base.git.diff is not None:
        planner = partial(plan_change_parts, changes)
    split = planner(
        files,
        window=window,
        max_tokens=options.max_tokens,
        margin=margin,
        base_tokens=base_tokens,
        not_reviewed=left,
    )
    if not split.parts:
        listed = "; ".join(f"{n.path}: {n.reason}" for n in split.not_reviewed[:3])
        raise InputError(f"{name_of('split')}: no file can be reviewed ({listed})")
    return split


def _change_frame_tokens(diff: Diff) -> int:
    """What framing a part of ``diff`` adds to its prompt but its files' sections: the
    heading, the fences, what was left out of the change (its hunk notes are the units')."""
    empty = replace(diff, text="", shown=(), hunks=())
    return count_tokens(frame_diff(empty)) + ANSWER_FRAME


def continuations_within(options: ReviewOptions, prompt: int, window: int, margin: int) -> int:
    """How many of ``options``' continuations keep every request of the chain within the
    window: the i-th re-sends the prompt and every answer so far (the first at
    ``--max-tokens``, each later one at its cap) and asks for one more cap."""
    first = options.max_tokens
    later = options.continuation.max_tokens or first
    fit = (window - margin - prompt - first) // later
    return max(0, min(options.continuation.max_continuations, fit))


def planned_within(
    options: ReviewOptions,
    env: Mapping[str, str],
    files: Sequence[ContextFile],
    window: int,
    margin: int,
    *,
    git: GitPlan | None = None,
) -> ReviewPlan:
    """A part's, a merge's or the synthesis's plan, its continuations no more than keep each
    request within the window (a chain still cut off is then reported as truncated).
    ``git``: the part's context as git gives it (a part of a change, files of ``--rev``)."""
    plan = plan_review(options, env, gather=fixed_gathering(files), git=git)
    tokens = max(plan.token_estimate, plan.count.tokens)  # calibrated, when it says more
    allowed = continuations_within(options, tokens, window, margin)
    if allowed == options.continuation.max_continuations:
        return plan
    # Fewer continuations change no byte of the request, and need nothing the plan did not
    # check already (their body, the worst case): the same plan, with them.
    fewer = replace(options.continuation, max_continuations=allowed)
    return replace(plan, options=replace(options, continuation=fewer))


def window_from_server(options: ReviewOptions) -> Callable[[Endpoint], int | None]:
    """What an Ollama server says the model runs with (:mod:`deepseek_review.ollama.probe`,
    as :mod:`deepseek_review.ollama.fit` asks it): the loaded model's context, a Modelfile's
    ``num_ctx``, or (Ollama's own API, which sizes ``num_ctx`` to each request) the context
    the model was trained for; None when it says nothing."""

    def ask(endpoint: Endpoint) -> int | None:
        from urllib.parse import urlsplit

        from deepseek_review.ollama import probe
        from deepseek_review.ollama.fit import asks_server

        if not asks_server(options.continuation.server, endpoint.url):
            return None
        from deepseek_review.reviewing.pipeline import make_client

        with make_client(endpoint, options) as client:
            facts = probe.model_facts(client, options.model)
        if facts is None:
            return None
        known = facts.context
        if known is not None:
            return known[0]
        native = urlsplit(endpoint.url).path == probe.NATIVE_CHAT_PATH
        return facts.trained_context if native else None

    return ask


def framing_tokens(template_name: str, prompt: str, topic: str) -> int:
    """The tokens of a bundled template's messages around no files."""
    framed = frame_messages(load_template(template_name), prompt, topic, [])
    return sum(count_tokens("".join(p for p in ps if isinstance(p, str))) for _, ps in framed)


def _synthesis_estimate(options: ReviewOptions, topic: str, parts: int) -> int:
    framing = framing_tokens(SYNTHESIS_TEMPLATE, options.prompt, topic)
    return framing + parts * (options.max_tokens + ANSWER_FRAME)


def _refuse_over_budget(review: SplitReview, max_total_tokens: int | None) -> None:
    total = review.total_tokens
    n = len(review.parts)
    if max_total_tokens is not None and total > max_total_tokens:
        raise ConfigError(
            f"{name_of('max_total_tokens')} {max_total_tokens}: the split review may use up to "
            f"{total} tokens ({plural(n, 'part')} and the synthesis, every answer at "
            f"{name_of('max_tokens')} {review.options.max_tokens}); nothing was sent",
            hint=f"raise {name_of('max_total_tokens')}, lower {name_of('max_tokens')}, or "
            "review less context",
        )
    refuse_over_cap(review.options.max_run_tokens, worst_case(review), "the split review")


def worst_case(review: SplitReview) -> int:
    """The most tokens a split review may use: every part's and the synthesis's worst case
    (what ``max_run_tokens`` counts)."""
    from deepseek_review.reviewing.plan import review_worst_case

    worst = sum(review_worst_case(review.options, p.plan.token_estimate) for p in review.parts)
    return worst + review_worst_case(review.options, review.synthesis_estimate)
