"""Prices per million tokens, from the ``prices`` setting, and what a segment cost.

``prices`` maps a model name (or ``<model>@<host[:port]>`` for one endpoint's price, which wins)
to ``{"input": ..., "output": ..., "cache_hit": ...}`` in any currency, per million tokens;
``cache_hit`` (the price of prompt tokens served from the server's cache, DeepSeek's API and
Ollama's cloud report them) defaults to ``input``. The table only ever changes figures shown
(``stats``, ``--dry-run``, the batch report), so a repository's config may set it: a wrong
price misleads, it sends nothing. ``batch --max-cost`` counts only in prices the operator set
(the environment): a repository could price its own reviews at 0 and lift the cap.

DeepSeek's own API prices ship with the tool (``deepseek_review/data/prices.json``, dated):
:func:`shown_price_of` falls back on them for the figures shown, never for a cap.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from deepseek_review.chat.types import Completion
from deepseek_review.errors import ConfigError
from deepseek_review.options.table import name_of

_KEYS = ("input", "output", "cache_hit")
_BEYOND = ("reasoning_tokens", "prompt_cache_hit_tokens", "prompt_cache_miss_tokens")


@dataclass(frozen=True)
class Price:
    """Per million tokens."""

    input: float
    output: float
    cache_hit: float

    def cost(self, prompt: int, completion: int, cache_hit: int = 0) -> float:
        """What one request cost: cached prompt tokens at ``cache_hit``, the rest at ``input``."""
        hit = min(cache_hit, prompt)
        return ((prompt - hit) * self.input + hit * self.cache_hit + completion * self.output) / 1e6


def parse(table: Mapping[str, Any]) -> dict[str, Price]:
    """The ``prices`` table, checked: a ConfigError names the entry that is wrong."""
    out: dict[str, Price] = {}
    for key, row in table.items():
        where = f"{name_of('prices')}[{key!r}]"
        if not isinstance(row, dict) or not {"input", "output"} <= row.keys():
            raise ConfigError(f"{where} must be a table with input and output prices")
        extra = sorted(set(row) - set(_KEYS))
        if extra:
            raise ConfigError(f"{where} has {extra[0]!r}; the keys are {', '.join(_KEYS)}")
        values: dict[str, Any] = {k: row.get(k, row["input"]) for k in _KEYS}
        for k, v in values.items():
            if isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v < 1e9:
                raise ConfigError(f"{where}.{k} must be a price of 0 or more, got {v!r}")
        out[key] = Price(**{k: float(v) for k, v in values.items()})
    return out


def price_of(prices: Mapping[str, Price], model: str, endpoint: str) -> Price | None:
    """The price of ``model`` at ``endpoint``: its endpoint's own, else the model's."""
    host = urlsplit(endpoint).netloc
    return prices.get(f"{model}@{host}") or prices.get(model)


@dataclass(frozen=True)
class PriceList:
    """The price list that ships with the tool (``deepseek_review/data/prices.json``)."""

    prices: dict[str, Price]
    checked: str
    """The date its figures were last checked against :attr:`source`."""
    source: str
    currency: str


@functools.cache
def bundled() -> PriceList:
    """DeepSeek's API prices as the tool ships them: what ``stats`` and ``--dry-run`` count in
    where the ``prices`` setting names no price (never ``--max-cost``: see the module)."""
    import json

    from deepseek_review.util.resources import resource_dir

    data = json.loads((resource_dir("data") / "prices.json").read_text(encoding="utf-8"))
    return PriceList(parse(data["prices"]), data["checked"], data["source"], data["currency"])


def shown_price_of(prices: Mapping[str, Price], model: str, endpoint: str) -> Price | None:
    """The price to show for ``model`` at ``endpoint``: the ``prices`` setting's, else the
    bundled list's."""
    return price_of(prices, model, endpoint) or price_of(bundled().prices, model, endpoint)


def check_trusted(operator_prices: bool) -> None:
    """``--max-cost`` counts only in prices the operator set: a repository's config could
    price its own reviews at 0 and so lift the cap."""
    if not operator_prices:
        raise ConfigError(
            f"{name_of('max_cost')} counts only in prices the operator sets "
            f"(DEEPSEEK_REVIEW_PRICES): the repository's config could price its reviews at 0"
        )


class Spend:
    """What a batch's answers cost so far, for ``--max-cost`` and the report (thread-safe)."""

    def __init__(self, prices: Mapping[str, Price], limit: float | None) -> None:
        self.prices, self.limit = prices, limit
        self.cost = 0.0
        self.priced = 0
        self.beyond: dict[str, int] = dict.fromkeys(_BEYOND, 0)
        """Reasoning tokens and prompt-cache hits and misses the servers reported."""
        self._lock = threading.Lock()

    def check_priced(self, model: str, endpoint: str) -> None:
        """With a limit, every model must have a price: a cost not counted is not capped."""
        if self.limit is not None and price_of(self.prices, model, endpoint) is None:
            host = urlsplit(endpoint).netloc
            raise ConfigError(
                f"{name_of('max_cost')} needs a price for {model} ({model!r} or "
                f"'{model}@{host}' in {name_of('prices')})"
            )

    def add(self, completion: Completion, model: str, endpoint: str) -> None:
        price = price_of(self.prices, model, endpoint)
        usage = completion.usage
        details = completion.usage_details
        with self._lock:
            for key in _BEYOND:
                self.beyond[key] += details.get(key, 0)
            if price is None or usage is None:
                return
            hit = details.get("prompt_cache_hit_tokens", 0)
            self.cost += price.cost(usage.prompt_tokens, usage.completion_tokens, hit)
            self.priced += 1

    def reached(self) -> bool:
        return self.limit is not None and self.cost >= self.limit

    def spent(self) -> float | None:
        """The cost so far, rounded; None when no answer had a price."""
        return round(self.cost, 6) if self.priced else None
