"""When to try a request again, and how long to wait first: the retry policy's mechanics.

An attempt that failed in a way worth another try raises :class:`Retryable`, carrying the
error to raise once tries run out. :func:`retrying` waits with exponential backoff and
jitter, honours ``Retry-After`` up to the policy's cap (slowing every job on that endpoint,
through its :class:`Throttle`), and stops at the policy's attempts or at the failure's own
cap, whichever comes first. No HTTP here: the client decides what is worth retrying.
"""

from __future__ import annotations

import random
import threading
import time

from tenacity import RetryCallState, Retrying, retry_if_exception_type

from deepseek_review.chat.types import RetryPolicy
from deepseek_review.errors import BadResponse, Interrupted, ServerError
from deepseek_review.util.logs import log


class Retryable(Exception):
    """An attempt failed in a way worth another try; carries the final error to raise.

    ``cap``: the most attempts in all this failure is worth (None: the policy's)."""

    def __init__(
        self,
        final: ServerError | BadResponse,
        retry_after: float | None = None,
        cap: int | None = None,
    ):
        super().__init__(final.message)
        self.final = final
        self.retry_after = retry_after
        self.cap = cap


class Throttle:
    """Shared by every job on one endpoint: a 429 slows everyone, not just its own job."""

    def __init__(self, stop: threading.Event | None = None) -> None:
        self._lock = threading.Lock()
        self._not_before = 0.0
        self.stop = stop or threading.Event()

    def penalize(self, seconds: float) -> None:
        with self._lock:
            self._not_before = max(self._not_before, time.monotonic() + seconds)

    def busy(self) -> None:
        """The server answered 429 or 503 (too busy): a pool gives it fewer requests at once."""

    def wait_turn(self) -> None:
        while True:
            with self._lock:
                delay = self._not_before - time.monotonic()
            if delay <= 0:
                return
            self.sleep(delay)

    def sleep(self, seconds: float) -> None:
        if self.stop.wait(seconds):
            raise Interrupted("interrupted while waiting to retry")


def parse_retry_after(value: str | None, cap: float) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP-date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        import email.utils  # only for an HTTP-date, which few servers send

        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), cap)


def retrying(policy: RetryPolicy, throttle: Throttle, *, label: str | None = None) -> Retrying:
    """Tenacity's loop for one request: retries :class:`Retryable` only, re-raising the
    last one when tries run out; every wait is the throttle's (a stop event interrupts it)."""

    def wait(state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        backoff = min(policy.backoff_max, policy.backoff_initial * 2 ** (state.attempt_number - 1))
        delay = random.uniform(backoff / 2, backoff) if backoff else 0.0
        if isinstance(exc, Retryable) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        return delay

    def limit(state: RetryCallState) -> int:
        """The most attempts this failure gets: --max-attempts, or fewer for a kind that a
        retry seldom mends (its cap)."""
        exc = state.outcome.exception() if state.outcome else None
        cap = exc.cap if isinstance(exc, Retryable) else None
        return policy.max_attempts if cap is None else min(cap, policy.max_attempts)

    def before_sleep(state: RetryCallState) -> None:
        exc = state.outcome.exception() if state.outcome else None
        delay = state.upcoming_sleep
        if isinstance(exc, Retryable) and exc.retry_after is not None:
            throttle.penalize(delay)
        log.warning(
            "attempt %d/%d failed: %s; retrying in %.1fs",
            state.attempt_number,
            limit(state),
            exc,
            delay,
            extra={"batch_topic": label} if label else None,
        )

    def stop(state: RetryCallState) -> bool:
        return state.attempt_number >= limit(state)

    return Retrying(
        stop=stop,
        wait=wait,
        retry=retry_if_exception_type(Retryable),
        before_sleep=before_sleep,
        sleep=throttle.sleep,
        reraise=True,
    )
