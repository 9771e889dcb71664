"""What the request records add to ``stats``: reasoning tokens, prompt-cache hits and misses,
and tokens per second, beside the receipts' three counts.

A receipt's request record (its sibling ``<stem>.request.json``) holds what the server reported
beyond the receipt (``response.usage_details``) and how long the request took
(``response.elapsed_seconds``, retries included). A record that is missing or unreadable adds
nothing: these figures inform and are not checked (``verify`` checks the record).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.git.runner import read_regular_file
from deepseek_review.ollama.pricing import Price
from deepseek_review.records.naming import sibling
from deepseek_review.records.request_record import RequestRecord


@dataclass
class Extra:
    """The request records' sums for one tally."""

    reasoning_tokens: int = 0
    cache_hit_tokens: int = 0
    cache_miss_tokens: int = 0
    cache_reported: int = 0
    """Segments whose server reported its prompt-cache hits (the others': unknown, not 0)."""
    miss_reported: int = 0
    """Segments whose server reported its prompt-cache misses."""
    timed_completion_tokens: int = 0
    seconds: float = 0.0
    cost: float = 0.0
    priced: int = 0
    """Segments with known usage and a price (``prices``): those :attr:`cost` sums."""
    unpriced: int = 0

    def add_cost(self, price: Price | None, usage: Mapping[str, int], cache_hit: int) -> None:
        if not any(usage.values()):  # usage unknown: no cost either
            return
        if price is None:
            self.unpriced += 1
            return
        self.priced += 1
        self.cost += price.cost(usage["prompt_tokens"], usage["completion_tokens"], cache_hit)

    def add(self, record: RequestRecord | None, completion_tokens: int) -> None:
        response = record.response if record is not None else None
        if response is None:
            return
        details = response.usage_details or {}
        self.reasoning_tokens += details.get("reasoning_tokens", 0)
        self.cache_hit_tokens += details.get("prompt_cache_hit_tokens", 0)
        self.cache_miss_tokens += details.get("prompt_cache_miss_tokens", 0)
        self.cache_reported += "prompt_cache_hit_tokens" in details
        self.miss_reported += "prompt_cache_miss_tokens" in details
        if response.elapsed_seconds and response.usage_reported:
            self.timed_completion_tokens += completion_tokens
            self.seconds += response.elapsed_seconds

    def to_json(self) -> dict[str, Any]:
        """Reasoning tokens; prompt-cache hits and misses (null: no server reported them,
        never an invented 0) and the hit share of the prompts whose server reports cache use;
        completion tokens per second of request time (null: none timed)."""
        cached = self.cache_hit_tokens + self.cache_miss_tokens
        return {
            "reasoning_tokens": self.reasoning_tokens,
            "prompt_cache_hit_tokens": self.cache_hit_tokens if self.cache_reported else None,
            "prompt_cache_miss_tokens": self.cache_miss_tokens if self.miss_reported else None,
            "cache_hit_share": round(self.cache_hit_tokens / cached, 4) if cached else None,
            "tokens_per_second": (
                round(self.timed_completion_tokens / self.seconds, 2) if self.seconds else None
            ),
            "cost": round(self.cost, 6) if self.priced else None,
            "segments_without_price": self.unpriced,
        }


def cache_hits(record: RequestRecord | None) -> int:
    """The prompt tokens a segment's server said came from its cache (0: none said)."""
    response = record.response if record is not None else None
    details = (response.usage_details if response is not None else None) or {}
    return details.get("prompt_cache_hit_tokens", 0)


def record_of(root: Path, receipt_rel: str) -> RequestRecord | None:
    """The request record beside a receipt, or None when it is missing or unreadable."""
    try:
        rel = sibling(receipt_rel, "record")
        raw = read_regular_file(root / rel)
        return RequestRecord.load(raw, rel)
    except (ValueError, OSError, InputError):
        return None
