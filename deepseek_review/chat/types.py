"""What one call to the model is and returns: the answer, its token counts, how long and how
often to try. Plain values, no HTTP: the modules that only record or plan a call (segments,
manifests, options) import this without loading httpx."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

from deepseek_review.errors import ConfigError
from deepseek_review.options.table import check, default

#: Called while a stream arrives: (the answer's tokens so far, estimated from the bytes of its
#: text and reasoning: a stream chunk may carry one token or many; seconds since the request).
ProgressFn = Callable[[int, float], None]


# Usage and Completion are named tuples (immutable plain values); RetryPolicy and Timeouts
# check their values, so they are dataclasses.


class Usage(NamedTuple):
    """Token counts a server reported for one answer."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int

    def as_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


class Completion(NamedTuple):
    """One completed answer, exactly as the server sent it."""

    content: str
    reasoning: str | None
    finish_reason: str | None
    usage: Usage | None
    """None when the server reported no usage (some servers never do when streaming)."""
    message_keys: tuple[str, ...]
    model: str | None
    attempts: int
    elapsed: float
    usage_details: Mapping[str, int] = MappingProxyType({})
    """Counts beyond ``usage`` (reasoning tokens, prompt-cache hits and misses): recorded in
    the request record, never in the receipt."""


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry a request that failed in a way worth another try."""

    max_attempts: int = default("max_attempts")
    backoff_initial: float = default("retry_wait")
    backoff_max: float = 30.0
    retry_after_cap: float = 120.0

    def __post_init__(self) -> None:
        check("max_attempts", self.max_attempts)
        check("retry_wait", self.backoff_initial)
        for name, value in (
            ("the longest backoff", self.backoff_max),
            ("the Retry-After cap", self.retry_after_cap),
        ):
            if not (math.isfinite(value) and value >= 0):
                raise ConfigError(f"{name} must be 0 or more seconds, got {value:g}")


@dataclass(frozen=True)
class Timeouts:
    """How long to wait for a connection, for the next bytes, and for a whole attempt."""

    connect: float = default("connect_timeout")
    read: float = default("read_timeout")
    """Longest wait for the next bytes: a non-streamed answer arrives whole, so this bounds
    the whole generation; when streaming it bounds the gap between chunks."""
    total: float = default("total_timeout")
    """Longest one attempt may take, from connecting to the answer's last byte: a server that
    drips bytes or streams nothing forever is cut off here (each retry gets its own)."""

    def __post_init__(self) -> None:
        check("connect_timeout", self.connect)
        check("read_timeout", self.read)
        check("total_timeout", self.total)
