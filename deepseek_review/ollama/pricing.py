"""Prices per million tokens, from the ``prices`` setting, and what a segment cost.

``prices`` maps a model name (or ``<model>@<host[:port]>`` for one endpoint's price, which wins)
to ``{"input": ..., "output": ..., "cache_hit": ...}`` in any currency, per million tokens;
``cache_hit`` (the price of prompt tokens served from the server's cache, DeepSeek's API and
Ollama's cloud report them) defaults to ``input``. The table only ever changes figures shown
(``stats``), so a repository's config may set it: a wrong price misleads, it sends nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..errors import ConfigError
from ..options import name_of

_KEYS = ("input", "output", "cache_hit")


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
