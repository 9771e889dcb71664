"""A batch's report: one record per entry of the shard, from receipts that exist, never
fabricated; and the report file (written atomically, its path checked before anything is sent).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from deepseek_review.errors import OutputError, ReviewError
from deepseek_review.options.table import OPTIONS, name_of
from deepseek_review.records.storage import check_writable_dir, write_replacing
from deepseek_review.records.stored import ChainSegment
from deepseek_review.reviewing.job import no_progress_message
from deepseek_review.reviewing.segment import Segment

Status = Literal["ok", "skipped", "truncated", "failed", "pending"]
STATUSES: tuple[Status, ...] = ("ok", "skipped", "truncated", "failed", "pending")
REPORT_SCHEMA = "deepseek_review_batch_report_v1"


@dataclass
class EntryReport:
    """What happened to one entry. Paths and usage come from receipts that exist, only."""

    topic: str
    index: int
    status: Status
    answer_paths: list[str] = field(default_factory=list)
    receipt_paths: list[str] = field(default_factory=list)
    usage: dict[str, int] | None = None
    """Summed over the chain's receipts (all of them, also those of earlier runs); None when
    there are none, or when the server reported no usage for one of them (unknown, not 0)."""
    usage_reported: bool | None = None
    """Whether every receipt of the chain holds the server's count; None without receipts."""
    estimated_tokens: int | None = None
    """When some usage is unknown: counts and estimates for this run's segments, else None."""
    attempts: int = 0
    """HTTP requests this run made for the entry (retries included)."""
    error: str | None = None
    reason: str | None = None
    """Why a skipped entry was skipped when it is not done (nothing new since the last review)."""
    new_segments: int = 0
    """Segments (receipts) this run wrote for the entry."""
    new_tokens: int = 0
    """Tokens of the receipts this run wrote for the entry (estimated where unreported)."""
    new_tokens_estimated: bool = False
    findings: dict[str, int] | None = None
    """Finding counts by severity, from the findings file beside the chain's last segment
    (``findings = true``); None without one; a split entry's: its synthesis's."""
    split: dict[str, Any] | None = None
    """A split entry's (``split = true``, in parts): how many parts, how many done, the
    synthesis's status and answer, the split record; None for an ordinary entry."""

    def as_json(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "index": self.index,
            "status": self.status,
            "answer_paths": list(self.answer_paths),
            "receipt_paths": list(self.receipt_paths),
            "usage": dict(self.usage) if self.usage is not None else None,
            "usage_reported": self.usage_reported,
            "estimated_tokens": self.estimated_tokens,
            "attempts": self.attempts,
            "new_segments": self.new_segments,
            "error": self.error,
            "reason": self.reason,
            "findings": self.findings,
            "split": self.split,
        }


@dataclass
class BatchReport:
    manifest: str
    entries: list[EntryReport]
    orphans: list[str] = field(default_factory=list)
    total_tokens: int | None = 0
    """Tokens of the receipts written by this run (what ``--max-total-tokens`` counts); None
    when the server reported no usage for some of them."""
    estimated_tokens: int | None = None
    """When some usage is unknown: what the budget counted, with estimates; else None."""
    stopped: str | None = None
    """Why work stopped early: ``interrupted``, ``budget``, ``cost`` or ``fail-fast``; None
    if not."""
    cost: float | None = None
    """What this run's answers cost at the ``prices`` setting; None when none had a price."""
    beyond_usage: dict[str, int] = field(default_factory=dict)
    """This run's reasoning tokens and prompt-cache hits and misses, as servers reported."""
    shard: str | None = None
    entries_in_manifest: int = 0
    elapsed: float = 0.0

    @property
    def counts(self) -> dict[str, int]:
        c = Counter(e.status for e in self.entries)
        return {s: c.get(s, 0) for s in STATUSES}

    @property
    def complete(self) -> bool:
        return all(e.status in ("ok", "skipped") for e in self.entries)

    @property
    def status(self) -> str:
        return "complete" if self.complete else "incomplete"

    def as_json(self) -> dict[str, Any]:
        return {
            "report": REPORT_SCHEMA,
            "status": self.status,
            "counts": self.counts,
            "total_tokens": self.total_tokens,
            "estimated_tokens": self.estimated_tokens,
            "cost": self.cost,
            **self.beyond_usage,
            "stopped": self.stopped,
            "manifest": self.manifest,
            "shard": self.shard,
            "entries_in_manifest": self.entries_in_manifest,
            "elapsed_seconds": round(self.elapsed, 3),
            "orphans": list(self.orphans),
            "entries": [e.as_json() for e in self.entries],
        }


def usage_fields(chain: Sequence[tuple[Mapping[str, int], bool]]) -> dict[str, Any]:
    """A report entry's ``usage`` and ``usage_reported`` from its receipts' (usage, whether
    the server reported it): a chain with an unknown count has an unknown sum, not a low one."""
    if not chain:
        return {"usage": None, "usage_reported": None}
    if not all(reported for _, reported in chain):
        return {"usage": None, "usage_reported": False}
    keys = ("prompt_tokens", "completion_tokens", "total_tokens")
    usage = {k: sum(int(u.get(k, 0)) for u, _ in chain) for k in keys}
    return {"usage": usage, "usage_reported": True}


def existing_usage(existing: Sequence[ChainSegment]) -> dict[str, Any]:
    return usage_fields([(s.receipt.usage, s.usage_reported) for s in existing])


def finding_counts(
    root: Path, segments: list[Segment], new: Sequence[Segment] = ()
) -> dict[str, int] | None:
    """The counts of the findings file beside the chain's last answer. When this run wrote
    that answer (the last of ``new``), it says whether it wrote a findings file: without one,
    nothing is looked up."""
    if not segments:
        return None
    last = segments[-1]
    if new and new[-1] is last and last.findings_path is None:
        return None
    from deepseek_review.finding.sidecar import counts_beside

    return counts_beside(root, last.answer_path)


def segments_usage(segments: Sequence[Segment]) -> dict[str, Any]:
    fields = usage_fields([(s.usage.as_dict(), s.usage_reported) for s in segments])
    if fields["usage_reported"] is False:
        fields["estimated_tokens"] = sum(s.counted_tokens for s in segments)
    return fields


def truncated_advice(segments: Sequence[Segment], cap: int) -> str:
    """What to do about a chain still cut off: advice that works. (A different ``max_tokens``
    changes the request, so the review would start over; a plain re-run sends nothing once
    ``max_continuations`` is used up; at the same cap, a segment that added no text would be
    repeated for nothing.)"""
    last = segments[-1]
    used = len(segments) - 1
    more = f"max_continuations (e.g. {OPTIONS['max_continuations'].long_flag} {2 * max(cap, 1)})"
    if last.made_no_progress:
        also = f" and {more}" if used >= cap else ""
        return (
            f"{no_progress_message(last)}; raise continuation_max_tokens (the cap of each "
            f"continuation){also} and run the batch again to continue it"
        )
    return (
        f"still cut off at the token cap after {used} continuation(s) (max_continuations "
        f"{cap}); to continue it, run the batch again with a higher {more}, or run "
        f"`deepseek-review continue {last.answer_path}`; a different max_tokens would restart "
        "the review instead"
    )


def one_line(exc: ReviewError) -> str:
    text = exc.message + (f" ({exc.hint})" if exc.hint else "")
    return " ".join(text.split())


def check_report_path(path: Path) -> None:
    """Refuse, before anything is sent, a ``--report`` path that could not be written after
    the whole batch ran: a missing or unwritable folder, or a folder in the file's place."""
    folder = path.parent
    if not folder.is_dir():
        raise OutputError(f"{name_of('report')} {path}: folder {folder} does not exist")
    if path.is_dir():
        raise OutputError(f"{name_of('report')} {path}: is a folder")
    check_writable_dir(folder, shown=f"{name_of('report')} {path}: folder {folder}")


def write_report(report: BatchReport, path: Path) -> None:
    """Write the report atomically (temp + fsync + rename): it may replace an older one."""
    data = (json.dumps(report.as_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")
    try:
        write_replacing(path, data)
    except OSError as exc:
        raise OutputError(
            f"{name_of('report')} {path}: cannot write ({exc.strerror or exc})"
        ) from None
