"""``run --max-cost``: refuse, before anything is sent, a review whose worst case costs more.

The worst case is the one ``--max-run-tokens`` is held against (:func:`.chat.tokens.worst_case`):
every answer at its cap, every continuation allowed, each re-sending the prompt and what was
answered. It is priced at the operator's ``prices`` (the environment's, as ``batch
--max-cost`` counts: a repository's config could price its reviews at 0), prompt tokens at
the input price, except where the server is known to report prompt-cache hits (DeepSeek's
API): there a continuation's re-sent prefix, sent seconds before, is counted at the cache-hit
price. A first request is never counted as a hit: nothing says its prefix is still cached.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from deepseek_review.errors import ConfigError
from deepseek_review.ollama.pricing import Price, check_trusted, parse, price_of
from deepseek_review.options.merge import configured_layer
from deepseek_review.options.table import check, name_of
from deepseek_review.reviewing.plan import ReviewOptions, refinement_requests, refinements_named
from deepseek_review.util.textsafe import plural

#: Hosts whose servers report prompt-cache hits and bill them apart.
CACHE_REPORTING_HOSTS = frozenset({"api.deepseek.com"})


def reports_cache_hits(server: str, url: str) -> bool:
    """Whether the server bills prompt-cache hits apart and reports them (DeepSeek's API)."""
    return server == "deepseek" or urlsplit(url).hostname in CACHE_REPORTING_HOSTS


def worst_cost(
    price: Price, prompt: int, first: int, later: int, continuations: int, cached: bool
) -> float:
    """The most one review can cost: as :func:`.chat.tokens.worst_case` counts its tokens,
    with each continuation's re-sent prefix at the cache-hit price when ``cached``."""
    total = price.cost(prompt, first)
    answered = first
    for _ in range(continuations):
        resent = prompt + answered
        total += price.cost(resent, later, resent if cached else 0)
        answered += later
    return total


def operator_price(root: Path, env: Mapping[str, str] | None, model: str, url: str) -> Price:
    """``model``'s price at ``url`` from the operator's ``prices`` (the environment)."""
    setting = configured_layer(root, env).get("prices")
    check_trusted(setting is not None and setting.named_by is None)
    price = price_of(parse(setting.value if setting is not None else {}), model, url)
    if price is None:
        host = urlsplit(url).netloc
        raise ConfigError(
            f"{name_of('max_cost')} needs a price for {model} ({model!r} or "
            f"'{model}@{host}' in {name_of('prices')})"
        )
    return price


def refuse_plan_over_cost(
    limit: float | None,
    root: Path,
    env: Mapping[str, str] | None,
    options: ReviewOptions,
    url: str,
    prompts: Sequence[int],
    what: str,
) -> None:
    """Refuse reviews of ``prompts`` (estimated prompt tokens, one per review) whose worst
    cases at the operator's price of ``options.model`` add up to more than ``limit``: each
    with the findings extraction and self-check that follow it
    (:func:`.plan.refinement_requests`)."""
    if limit is None:
        return
    check("max_cost", limit)
    price = operator_price(root, env, options.model, url)
    cont = options.continuation
    later = cont.max_tokens or options.max_tokens
    cached = reports_cache_hits(cont.server, url)
    refining = sum(price.cost(p, c) for p, c in refinement_requests(options, url))
    costs = [
        worst_cost(price, p, options.max_tokens, later, cont.max_continuations, cached) + refining
        for p in prompts
    ]
    refuse_over_cost(limit, costs, what + refinements_named(options, url))


def refuse_over_cost(limit: float | None, costs: Sequence[float], what: str) -> None:
    """Refuse work whose reviews' worst cases (``costs``) add up to more than ``limit``."""
    if limit is None:
        return
    total = sum(costs)
    if total > limit:
        reviews = "" if len(costs) == 1 else f" ({plural(len(costs), 'review')})"
        raise ConfigError(
            f"{name_of('max_cost')} {limit:g}: {what}{reviews} may cost up to {total:.6g} at "
            f"the operator's prices (every answer at its cap, every continuation allowed); "
            "nothing was sent",
            hint=f"raise {name_of('max_cost')}, lower {name_of('max_tokens')} or "
            f"{name_of('max_continuations')}, or review less context",
        )
