"""Writing one answer segment: the answer, its request record, then its receipt.

Order matters. The answer is written first (and claims the file name); its hash is taken from
the bytes read back from disk; then the optional reasoning file, the request record, and the
receipt last. The receipt is the commit point: a segment without a receipt is unfinished and
is ignored by ``verify``, ``continue`` and resumed batches (see docs/batch.md, "Crashes").
The ``if crash_at()`` lines are the crash tests' hook (:func:`records.storage.crash_at`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from deepseek_review._version import __version__
from deepseek_review.chat.tokens import estimate_exchange
from deepseek_review.chat.types import Completion, Usage
from deepseek_review.context.gather import ContextFile
from deepseek_review.context.pins import receipt_paths
from deepseek_review.errors import OutputError
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.naming import claim_answer, sibling_paths, stem_for, utc_stamp
from deepseek_review.records.parts import has_ranges
from deepseek_review.records.receipt import (
    CONTINUATION,
    PRIMARY,
    Receipt,
    created_at,
    validated_bytes,
)
from deepseek_review.records.request_record import (
    Continuation,
    FileEntry,
    RequestRecord,
    Response,
    version_for,
)
from deepseek_review.records.storage import PRIVATE_MODE, crash_at, crash_point, write_output
from deepseek_review.reviewing.request import PreparedRequest
from deepseek_review.signing.hook import after_receipt

ZERO_USAGE = Usage(0, 0, 0)


@dataclass(frozen=True)
class Segment:
    """One written answer with its receipt and request record."""

    answer_path: str
    receipt_path: str
    record_path: str
    answer_sha256: str
    prompt_sha256: str
    usage: Usage
    usage_reported: bool
    finish_reason: str | None
    model: str
    reasoning_path: str | None
    attempts: int
    content: str
    """The segment's text (what the answer file holds)."""
    max_tokens: int | None = None
    """The token cap of its request (None when unknown: a receipt from another tool)."""
    estimated_tokens: int | None = None
    """When the server reported no usage: an estimate of the tokens it used; else None."""
    findings_path: str | None = None
    """The findings file written beside it (``run --findings``, on the segment ending a chain)."""

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"

    @property
    def made_no_progress(self) -> bool:
        """Cut off by the cap without adding any answer text (e.g. the reasoning used it all)."""
        return self.truncated and self.content == ""

    @property
    def counted_tokens(self) -> int:
        """Its tokens as a budget counts them: the server's count, else the estimate."""
        return self.usage.total_tokens if self.usage_reported else self.estimated_tokens or 0


class SegmentSpec(NamedTuple):
    """What to write for one completed request."""

    root: Path
    out_dir: Path
    topic: str
    model: str
    endpoint: str
    prepared: PreparedRequest
    completion: Completion
    content: str
    """The segment text: the completion's content, minus an echoed prefill."""
    echo_stripped_chars: int = 0
    context_files: tuple[ContextFile, ...] = ()
    git: Mapping[str, Any] | None = None
    """What the record pins in git (:mod:`context.pins`); a diff's paths join the receipt's."""
    template: tuple[str, str] | None = None
    prompt_token_estimate: int = 0
    continuation: Continuation | None = None
    keep_reasoning: bool = False
    findings: Callable[[str], bytes | None] | None = None
    """``run --findings``: given the answer's path, the findings file of the chain ending here
    (None: none to write); asked only when this segment is not cut off."""
    findings_when_cut_off: bool = False
    """Ask ``findings`` also when this segment is cut off (a findings extraction whose
    findings then come from the review's block)."""


def _rel(root: Path, path: Path) -> str:
    return path.relative_to(root).as_posix()


def _message_keys(keys: tuple[str, ...]) -> list[str]:
    """Unique, non-empty, in order: what the schema's ``message_keys`` allows."""
    return list(dict.fromkeys(k for k in keys if k))


def write_segment(spec: SegmentSpec, now: datetime) -> Segment:
    """Write the segment ``spec`` describes in the order that makes the receipt the commit
    point: answer, reasoning, findings, request record, receipt (then its signature)."""
    c = spec.completion
    answer, answer_rel, answer_sha = _write_answer(spec, now)
    paths = sibling_paths(answer)
    reasoning = _write_reasoning(spec, paths["reasoning"])
    findings = _write_findings(spec, answer_rel, paths["findings"])
    receipt_rel = _rel(spec.root, paths["receipt"])
    record = _record(spec, now, answer_rel, receipt_rel, reasoning, findings)
    record_rel = _rel(spec.root, paths["record"])
    write_output(
        paths["record"],
        record.to_bytes(),
        shown=record_rel,
        mode=PRIVATE_MODE,  # the prompt, the template: not for other users of the machine
    )
    if crash_at():
        crash_point("after-record")
    usage = c.usage or ZERO_USAGE
    receipt = _receipt(spec, now, answer_rel, answer_sha, usage)
    write_output(paths["receipt"], validated_bytes(receipt, shown=receipt_rel), shown=receipt_rel)
    if crash_at():
        crash_point("after-receipt")
    after_receipt(spec.root, receipt_rel)  # signs it when run with a signing key
    return Segment(
        answer_path=answer_rel,
        receipt_path=receipt_rel,
        record_path=record_rel,
        answer_sha256=answer_sha,
        prompt_sha256=spec.prepared.prompt_sha256,
        usage=usage,
        usage_reported=c.usage is not None,
        finish_reason=c.finish_reason,
        model=spec.model,
        reasoning_path=reasoning[0] if reasoning else None,
        attempts=c.attempts,
        content=spec.content,
        max_tokens=_int_or_none(spec.prepared.record_body.get("max_tokens")),
        estimated_tokens=None
        if c.usage is not None
        else estimate_exchange(len(spec.prepared.body_bytes), c.content, c.reasoning),
        findings_path=findings[0] if findings else None,
    )


def _write_answer(spec: SegmentSpec, now: datetime) -> tuple[Path, str, str]:
    """Write the answer under a new stem (claiming the name): its path, repo-relative path and
    the hash of the bytes read back from disk."""
    is_cont = spec.continuation is not None
    stem = stem_for(spec.topic, spec.model, utc_stamp(now), continuation=is_cont)
    shown_dir = _rel(spec.root, spec.out_dir) if spec.out_dir != spec.root else "."
    answer = claim_answer(spec.out_dir, stem, spec.content.encode("utf-8"), shown_folder=shown_dir)
    if crash_at():
        crash_point("after-answer")
    answer_rel = _rel(spec.root, answer)
    try:
        answer_sha = sha256_tag(answer.read_bytes())
    except OSError as exc:
        raise OutputError(f"{answer_rel}: cannot read back ({exc.strerror or exc})") from None
    return answer, answer_rel, answer_sha


def _write_reasoning(spec: SegmentSpec, path: Path) -> tuple[str, str] | None:
    """The model's reasoning, when kept (``--keep-reasoning``) and there is some: written
    readable by its owner only; (path, sha256), or None."""
    if not (spec.keep_reasoning and spec.completion.reasoning):
        return None
    data = spec.completion.reasoning.encode("utf-8")
    rel = _rel(spec.root, path)
    write_output(path, data, shown=rel, mode=PRIVATE_MODE)
    return rel, sha256_tag(data)


def _record(
    spec: SegmentSpec,
    now: datetime,
    answer_rel: str,
    receipt_rel: str,
    reasoning: tuple[str, str] | None,
    findings: tuple[str, str] | None,
) -> RequestRecord:
    """The request record of the segment: what was sent, and what came back."""
    c = spec.completion
    is_cont = spec.continuation is not None
    ranged = any(has_ranges(m.parts) for m in spec.prepared.messages)
    diff = None if spec.git is None else spec.git.get("diff")
    hunked = isinstance(diff, Mapping) and "hunks" in diff
    return RequestRecord(
        record=version_for(ranged, hunked),
        tool=f"deepseek-review {__version__}",
        kind="continuation" if is_cont else "primary",
        created_at=created_at(now),
        answer_path=answer_rel,
        receipt_path=receipt_rel,
        endpoint=spec.endpoint,
        prompt_sha256=spec.prepared.prompt_sha256,
        prompt_token_estimate=spec.prompt_token_estimate,
        body=spec.prepared.record_body,
        response=Response(
            finish_reason=c.finish_reason,
            usage=c.usage.as_dict() if c.usage else None,
            usage_reported=c.usage is not None,
            message_keys=c.message_keys,
            model=c.model,
            attempts=c.attempts,
            elapsed_seconds=round(c.elapsed, 3),
            content_sha256=sha256_tag(c.content.encode("utf-8")),
            echo_stripped_chars=spec.echo_stripped_chars,
            reasoning_chars=len(c.reasoning or ""),
            reasoning_path=reasoning[0] if reasoning else None,
            reasoning_sha256=reasoning[1] if reasoning else None,
            usage_details=dict(c.usage_details) or None,
        ),
        continuation=spec.continuation,
        template=spec.template,
        context_files=tuple(
            FileEntry(f.path, f.sha256, f.size, None if f.lines is None else f.lines.span)
            for f in spec.context_files
        ),
        findings=findings,
        git=spec.git,
    )


def _receipt(
    spec: SegmentSpec, now: datetime, answer_rel: str, answer_sha: str, usage: Usage
) -> Receipt:
    """The receipt of the segment: the answer's hash bound to the prompt's."""
    is_cont = spec.continuation is not None
    return Receipt(
        schema=CONTINUATION if is_cont else PRIMARY,
        created_at=created_at(now),
        model=spec.model,
        endpoint=spec.endpoint,
        prompt_sha256=spec.prepared.prompt_sha256,
        answer_sha256=answer_sha,
        usage=usage.as_dict(),
        answer_path=answer_rel,
        context_files=None
        if is_cont
        else tuple(receipt_paths([f.path for f in spec.context_files], spec.git)),
        previous_answer_path=spec.continuation.previous_answer_path if spec.continuation else None,
        message_keys=tuple(_message_keys(spec.completion.message_keys)) if is_cont else None,
    )


def _write_findings(spec: SegmentSpec, answer_rel: str, path: Path) -> tuple[str, str] | None:
    """The findings file of a chain ending with this segment, written after the answer and
    before the record that lists it: (path, sha256), or None."""
    cut_off = spec.completion.finish_reason == "length" and not spec.findings_when_cut_off
    if spec.findings is None or cut_off:
        return None
    data = spec.findings(answer_rel)
    if data is None:
        return None
    rel = _rel(spec.root, path)
    write_output(path, data, shown=rel)
    return rel, sha256_tag(data)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
