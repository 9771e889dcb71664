"""``continue``: extend an existing truncated chain from its last segment.

For a chain this tool wrote, the primary request's messages are rebuilt from its request
record, byte for byte, and refused if a context file changed since (the continuation would no
longer continue the same conversation). For a chain from another emitter (no record, e.g. the
seed repository's receipts) the continuation is built from the answer so far alone, and the
user is told so.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .chain import ChainSegment, find_chain, read_answer
from .client import ChatClient, ProgressFn, RetryPolicy, Timeouts, Usage
from .endpoint import DEFAULT_KEY_ENV, resolve_endpoint
from .errors import InputError
from .prompt import FileRef, Part
from .repo import find_repo_root, resolve_inside
from .request import CORE_FIELDS, AnswerRef, BodyOptions, WireMessage, repo_reader, sha256_tag
from .resources import prompts_dir
from .review import (
    DEFAULT_MAX_TOKENS,
    Chain,
    ContinuationOptions,
    ReviewResult,
    continue_chain,
)
from .segment import Segment

log = logging.getLogger("deepseek_review")


@dataclass(frozen=True)
class ContinueOptions:
    path: str
    repo_root: str | None = None
    endpoint: str | None = None
    api_key_env: str = DEFAULT_KEY_ENV
    stream: bool = True
    max_tokens: int | None = None
    continuation: ContinuationOptions = field(default_factory=ContinuationOptions)
    allow_truncated_prompt: bool = False
    keep_reasoning: bool = False
    force: bool = False
    """Continue even when the last segment's record says it ended normally."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)


@dataclass(frozen=True)
class ContinueOutcome:
    result: ReviewResult
    new_segments: int
    had_record: bool
    already_complete: bool = False


def _parts_from_record(content: Any) -> tuple[Part | AnswerRef, ...]:
    if isinstance(content, str):
        return (content,)
    out: list[Part | AnswerRef] = []
    for p in content["$parts"]:
        if isinstance(p, str):
            out.append(p)
        elif "$file" in p:
            r = p["$file"]
            out.append(FileRef(r["path"], r["sha256"], r["bytes"]))
        else:
            r = p["$answer"]
            out.append(AnswerRef(r["path"], r["sha256"], r["bytes"]))
    return tuple(out)


def base_messages_from_record(root: Path, record: dict[str, Any]) -> tuple[WireMessage, ...]:
    """The primary request's messages, rebuilt exactly; refused if a context file changed."""
    read = repo_reader(root)
    messages = []
    changed: list[str] = []
    missing: list[str] = []
    for m in record["body"]["messages"]:
        parts = _parts_from_record(m["content"])
        texts = []
        for p in parts:
            if isinstance(p, str):
                texts.append(p)
                continue
            data = read(p.path)
            if data is None:
                missing.append(p.path)
            elif sha256_tag(data) != p.sha256:
                changed.append(p.path)
            else:
                texts.append(data.decode("utf-8"))
        extra = {k: v for k, v in m.items() if k not in ("role", "content")}
        messages.append(WireMessage(m["role"], parts, "".join(texts), extra=extra))
    if changed or missing:
        what = "changed since the review" if changed else "missing"
        names = ", ".join(changed or missing)
        raise InputError(
            f"cannot continue: context file {what}: {names} (the continuation would not "
            "continue the same conversation; run a new review instead)"
        )
    return tuple(messages)


def _body_from_record(record: dict[str, Any], stream: bool, max_tokens: int | None) -> BodyOptions:
    body = record["body"]
    extra = {k: v for k, v in body.items() if k not in CORE_FIELDS and k != "stream_options"}
    return BodyOptions(
        model=body["model"],
        temperature=float(body.get("temperature", 0.0)),
        max_tokens=max_tokens or int(body.get("max_tokens", DEFAULT_MAX_TOKENS)),
        stream=stream,
        extra_body=extra,
    )


def _topic(answer_path: str) -> str:
    name = answer_path.rsplit("/", 1)[-1]
    topic = name.split("_deepseek_", 1)[0]
    return topic if topic and topic != name else "review"


def _as_segment(root: Path, seg: ChainSegment, assume_truncated: bool) -> Segment:
    text = read_answer(root, seg)
    r = seg.receipt
    finish = seg.finish_reason or ("length" if assume_truncated else None)
    return Segment(
        answer_path=r.answer_path,
        receipt_path=seg.receipt_path,
        record_path=seg.receipt_path.replace(".receipt.json", ".request.json"),
        answer_sha256=r.answer_sha256,
        prompt_sha256=r.prompt_sha256,
        usage=Usage(**r.usage),
        usage_reported=True,
        finish_reason=finish,
        model=r.model,
        reasoning_path=None,
        attempts=0,
        content=text,
    )


def continue_existing(
    options: ContinueOptions,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    client: ChatClient | None = None,
) -> ContinueOutcome:
    env = os.environ if env is None else env
    root = find_repo_root(options.repo_root)
    chain_segs = find_chain(root, options.path)
    last = chain_segs[-1]
    primary = chain_segs[0]
    segments = [_as_segment(root, s, s is last) for s in chain_segs]
    if last.finish_reason is not None and last.finish_reason != "length" and not options.force:
        log.info(
            "%s ended with finish_reason %r: the review is complete, nothing to continue",
            last.answer_path,
            last.finish_reason,
        )
        return ContinueOutcome(
            result=ReviewResult(
                tuple(segments), last.receipt.endpoint, primary.receipt.context_files or ()
            ),
            new_segments=0,
            had_record=primary.record is not None,
            already_complete=True,
        )
    if last.finish_reason is None:
        log.info(
            "%s has no request record: its finish reason is unknown; continuing as asked",
            last.answer_path,
        )
    endpoint = resolve_endpoint(
        options.endpoint or last.receipt.endpoint, env, key_env=options.api_key_env
    )
    if primary.record is not None:
        base = base_messages_from_record(root, primary.record)
        body = _body_from_record(primary.record, options.stream, options.max_tokens)
    else:
        log.warning(
            "%s has no request record (written by another tool): continuing from the "
            "answer so far alone, without the original prompt or context",
            primary.receipt_path,
        )
        intro = (
            (prompts_dir() / "continuation-without-context.md").read_text(encoding="utf-8").strip()
        )
        base = (WireMessage("user", (intro,), intro),)
        body = BodyOptions(
            model=last.receipt.model,
            max_tokens=options.max_tokens or DEFAULT_MAX_TOKENS,
            stream=options.stream,
        )
    out_dir, _ = resolve_inside(
        root, last.answer_path.rsplit("/", 1)[0] if "/" in last.answer_path else "."
    )
    chain = Chain(
        root=root,
        out_dir=out_dir,
        topic=_topic(primary.answer_path),
        endpoint=endpoint,
        base_messages=base,
        body=body,
        segments=segments,
        primary_answer_path=primary.answer_path,
    )
    before = len(chain.segments)
    own = client is None
    client = client or ChatClient(
        endpoint.url, endpoint.api_key, policy=options.retry, timeouts=options.timeouts
    )
    try:
        continue_chain(
            chain,
            options.continuation,
            client,
            allow_truncated_prompt=options.allow_truncated_prompt,
            keep_reasoning=options.keep_reasoning,
            progress=progress,
        )
    finally:
        if own:
            client.close()
    return ContinueOutcome(
        result=ReviewResult(
            tuple(chain.segments), endpoint.url, primary.receipt.context_files or ()
        ),
        new_segments=len(chain.segments) - before,
        had_record=primary.record is not None,
    )
