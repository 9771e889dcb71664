"""A local token estimate, good enough to notice a prompt the server silently clipped.

No tokenizer ships with the tool (DeepSeek's is not on PyPI in a small, offline form), so the
estimate is bytes / 4, which for English prose and code lands within about ±40 % of BPE
counts. The silent-truncation check only fires when the server reports *less than half* the
estimate, a gap no tokenizer difference explains but a clipped context (Ollama keeps
``num_ctx`` tokens, 4096 by default) does.
"""

from __future__ import annotations

from collections.abc import Iterable

BYTES_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
#: Prompts smaller than this are never judged clipped: chat templates dominate them.
MIN_TOKENS_TO_JUDGE = 512
#: Reported prompt tokens below this fraction of the estimate mean the prompt was clipped.
CLIPPED_RATIO = 0.5


def estimate_tokens(texts: Iterable[str]) -> int:
    return estimate_sizes(utf8_size(t) for t in texts)


def utf8_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))  # no 5 MB copy for ASCII


def bytes_as_tokens(size: int) -> int:
    """The tokens of a text of ``size`` bytes, estimated (what a stream received so far)."""
    return -(-size // BYTES_PER_TOKEN)


def estimate_sizes(sizes: Iterable[int]) -> int:
    """The estimate of messages whose texts have these sizes in bytes."""
    return sum(-(-size // BYTES_PER_TOKEN) + MESSAGE_OVERHEAD for size in sizes)


def estimate_exchange(body_bytes: int, *answer_texts: str | None) -> int:
    """Tokens one request and its answer used, estimated: for a server that reports no usage
    (llama.cpp's when streaming), so a token budget still holds. The body's bytes stand for
    the prompt (a little high: JSON quoting), the answer's and reasoning's texts for the rest.
    """
    return -(-body_bytes // BYTES_PER_TOKEN) + estimate_tokens(t for t in answer_texts if t)


def looks_clipped(reported_prompt_tokens: int, estimate: int) -> bool:
    return estimate >= MIN_TOKENS_TO_JUDGE and reported_prompt_tokens < CLIPPED_RATIO * estimate


def worst_case(prompt: int, first: int, later: int, continuations: int, answered: int = 0) -> int:
    """The most tokens a review's requests can use: the first asks for up to ``first`` tokens
    on a ``prompt`` of that estimate, and each of up to ``continuations`` more re-sends the
    prompt with everything answered so far (``answered`` already, before the first) and asks
    for up to ``later``. What the operator's ``max_run_tokens`` is held against."""
    total = 0
    for cap in [first] + [later] * continuations:
        total += prompt + answered + cap
        answered += cap
    return total


def refuse_over_cap(cap: int | None, estimate: int, what: str) -> None:
    """Refuse, before anything is sent, work whose worst case (``estimate``, worded by
    ``what``) is over the operator's ``max_run_tokens``."""
    if cap is None or estimate <= cap:
        return
    from deepseek_review.errors import ConfigError
    from deepseek_review.options.table import name_of

    raise ConfigError(
        f"{name_of('max_run_tokens')} {cap}: {what} may use up to {estimate} tokens (each "
        "prompt re-sent with every continuation allowed, every answer at its cap); nothing "
        "was sent",
        hint=f"raise {name_of('max_run_tokens')}, or lower the caps on the command line "
        "(--max-tokens, --max-continuations)",
    )
