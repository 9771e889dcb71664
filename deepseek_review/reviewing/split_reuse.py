"""Reusing an earlier plan's parts in a split review planned again (``run --split``).

A re-plan (a file added or resized, a calibrated count) renumbers the parts and rewrites
every part's note ("part i of n", what the other parts cover), so no part's request is the
same bytes as before. A part whose request is an earlier part's but for that note and its
topic (the same files, ranges, bytes, model, options and template) is the same review of the
same content: its finished chain is reused (:mod:`.split_run`) instead of sent again.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepseek_review.records.stored import ChainSegment
    from deepseek_review.reviewing.split_plan import PlannedPart, SplitReview

_NOTE = re.compile(r"This is part \d+ of \d+ of a review split.*?\\n\\n")


def content_key(body: Any, topic: str) -> str:
    """A part's request but for what a re-plan changes without changing what is reviewed:
    its topic, and its note ("part i of n", what the other parts cover)."""
    text = json.dumps(body, sort_keys=True, ensure_ascii=False).replace(topic, "\0topic")
    return hashlib.sha256(_NOTE.sub("\0note", text, count=1).encode("utf-8")).hexdigest()


def by_content(
    chains: dict[str, list[list[ChainSegment]]], review: SplitReview
) -> dict[str, list[list[ChainSegment]]]:
    """The finished chains of any earlier plan's parts, by :func:`content_key`: answered
    by the planned endpoint or, over a pool (``--endpoint`` given more than once), by any
    server of the operator's pool (as a pooled batch resumes whichever answered)."""
    from deepseek_review.chat.endpoint import canonical

    urls = {canonical(e.url) for e in (review.endpoint, *review.options.pool)}
    out: dict[str, list[list[ChainSegment]]] = {}
    for topic, found in chains.items():
        if not _PART_TOPIC.fullmatch(topic.removeprefix(review.options.topic)):
            continue
        for c in found:
            record = c[0].record
            if record is not None and canonical(c[0].receipt.endpoint) in urls:
                out.setdefault(content_key(record.body, topic), []).append(c)
    return out


_PART_TOPIC = re.compile(r"-part-\d+-of-\d+")


def reused(same: dict[str, list[list[ChainSegment]]], p: PlannedPart) -> list[ChainSegment] | None:
    """The newest earlier chain whose request is ``p``'s but for its note and topic."""
    from deepseek_review.records.naming import name_order

    found = same.get(content_key(p.plan.prepared.record_body, p.topic), [])
    return max(found, key=lambda c: name_order(c[0].receipt_path)) if found else None
