"""Tokens and review counts per model, month and server (the endpoint's host), read from the
receipts, with what their request records add (:mod:`.totals`).

A review is a primary receipt; its continuations add segments and tokens, counted under the
model that wrote each segment. Receipts that do not validate are not counted, only listed,
so a total never includes a number nobody can check. A receipt whose usage is all zeros was
written for a server that reported none (the frozen schema needs integers): its tokens are
unknown, not 0, and it is counted in ``segments_without_usage`` instead.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from deepseek_review.errors import InputError
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.ollama.pricing import Price, bundled, price_of
from deepseek_review.records.receipt import PRIMARY, fast_valid
from deepseek_review.usage.totals import Extra, cache_hits, record_of
from deepseek_review.verification import DEFAULT_FOLDER, discover, parse_receipt

_TOKEN_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")


@dataclass
class Tally:
    reviews: int = 0
    segments: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    without_usage: int = 0
    """Segments whose server reported no usage: their tokens are unknown."""
    extra: Extra = field(default_factory=Extra)
    """What the request records add (:mod:`deepseek_review.usage.totals`)."""

    @property
    def usage_known(self) -> bool:
        """Whether any segment's tokens are known (else the token sums mean nothing)."""
        return self.without_usage < self.segments or not self.segments

    def add(self, receipt: dict[str, Any]) -> None:
        self.segments += 1
        self.reviews += receipt["schema"] == PRIMARY
        usage = receipt["usage"]
        if not any(usage.values()):
            self.without_usage += 1
            return
        self.prompt_tokens += usage["prompt_tokens"]
        self.completion_tokens += usage["completion_tokens"]
        self.total_tokens += usage["total_tokens"]

    @property
    def cached_prompt_tokens(self) -> int | None:
        """Prompt tokens the servers said came from their cache; None (unknown) when no
        segment's server said (Ollama reports none: not 0)."""
        return self.extra.cache_hit_tokens if self.extra.cache_reported else None

    def to_json(self) -> dict[str, int | None]:
        """Token sums over the segments with known usage; null when none has any."""
        return {
            "reviews": self.reviews,
            "segments": self.segments,
            "segments_without_usage": self.without_usage,
            **{k: getattr(self, k) if self.usage_known else None for k in _TOKEN_KEYS},
            "cached_prompt_tokens": self.cached_prompt_tokens,
            "segments_without_cache_report": self.segments - self.extra.cache_reported,
            **self.extra.to_json(),
        }


@dataclass
class Stats:
    total: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_month: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_model_month: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_server: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    """By the receipt's endpoint's host[:port]."""
    by_model_server: dict[tuple[str, str], Tally] = field(
        default_factory=lambda: defaultdict(Tally)
    )
    invalid: list[str] = field(default_factory=list)
    """Receipts that were not counted because they do not validate."""
    bundled_prices_used: bool = False
    """Some cost is counted in the bundled price list (the ``prices`` setting named none)."""

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total.to_json(),
            "by_model": {k: v.to_json() for k, v in sorted(self.by_model.items())},
            "by_month": {k: v.to_json() for k, v in sorted(self.by_month.items())},
            "by_model_month": [
                {"model": m, "month": mo, **t.to_json()}
                for (m, mo), t in sorted(self.by_model_month.items())
            ],
            "by_server": {k: v.to_json() for k, v in sorted(self.by_server.items())},
            "by_model_server": [
                {"model": m, "server": s, **t.to_json()}
                for (m, s), t in sorted(self.by_model_server.items())
            ],
            "invalid": self.invalid,
            "bundled_prices": self.price_list(),
        }

    def price_list(self) -> dict[str, str] | None:
        """Where the bundled prices come from and when they were checked, if any cost is
        counted in them."""
        if not self.bundled_prices_used:
            return None
        p = bundled()
        return {"checked": p.checked, "source": p.source, "currency": p.currency}


def collect_stats(
    root: Path,
    paths: Sequence[str] = (),
    default_folder: str = DEFAULT_FOLDER,
    prices: Mapping[str, Price] | None = None,
) -> Stats:
    """Tally every valid receipt under ``paths`` (default: the output folder); with
    ``prices``, what the segments cost."""
    receipts = discover(root, paths, default_folder).receipts
    stats = Stats()
    for rel in receipts:
        try:
            path, _ = resolve_inside(root, rel, what="receipt")
            raw = read_regular_file(path)
        except (InputError, OSError):
            stats.invalid.append(rel)
            continue
        data, problem = parse_receipt(raw)
        if problem is not None or not fast_valid(data):
            stats.invalid.append(rel)
            continue
        model, month = data["model"], data["created_at"][:7]
        server = urlsplit(data["endpoint"]).netloc
        record = record_of(root, rel)
        price = price_of(prices or {}, model, data["endpoint"])
        if price is None:
            price = price_of(bundled().prices, model, data["endpoint"])
            stats.bundled_prices_used = stats.bundled_prices_used or price is not None
        for tally in (
            stats.total,
            stats.by_model[model],
            stats.by_month[month],
            stats.by_model_month[(model, month)],
            stats.by_server[server],
            stats.by_model_server[(model, server)],
        ):
            tally.add(data)
            tally.extra.add(record, data["usage"]["completion_tokens"])
            tally.extra.add_cost(price, data["usage"], cache_hits(record))
    return stats
