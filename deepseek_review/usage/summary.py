"""Tokens and review counts per model and per month, read from the receipts alone.

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

from deepseek_review.errors import InputError
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.ollama.pricing import Price, price_of
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

    def to_json(self) -> dict[str, int | None]:
        """Token sums over the segments with known usage; null when none has any."""
        return {
            "reviews": self.reviews,
            "segments": self.segments,
            "segments_without_usage": self.without_usage,
            **{k: getattr(self, k) if self.usage_known else None for k in _TOKEN_KEYS},
            **self.extra.to_json(),
        }


@dataclass
class Stats:
    total: Tally = field(default_factory=Tally)
    by_model: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_month: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    by_model_month: dict[tuple[str, str], Tally] = field(default_factory=lambda: defaultdict(Tally))
    invalid: list[str] = field(default_factory=list)
    """Receipts that were not counted because they do not validate."""

    def to_json(self) -> dict[str, Any]:
        return {
            "total": self.total.to_json(),
            "by_model": {k: v.to_json() for k, v in sorted(self.by_model.items())},
            "by_month": {k: v.to_json() for k, v in sorted(self.by_month.items())},
            "by_model_month": [
                {"model": m, "month": mo, **t.to_json()}
                for (m, mo), t in sorted(self.by_model_month.items())
            ],
            "invalid": self.invalid,
        }


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
        record = record_of(root, rel)
        price = price_of(prices or {}, model, data["endpoint"])
        for tally in (
            stats.total,
            stats.by_model[model],
            stats.by_month[month],
            stats.by_model_month[(model, month)],
        ):
            tally.add(data)
            tally.extra.add(record, data["usage"]["completion_tokens"])
            tally.extra.add_cost(price, data["usage"], cache_hits(record))
    return stats
