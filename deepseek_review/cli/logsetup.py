"""The command line's log handler: each message one line on stderr, the API key never shown,
control characters shown as escapes.

Installed when a module that logs first takes the package's logger (:func:`util.logs.configure`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from deepseek_review.util.redact import redact
from deepseek_review.util.textsafe import escape


class _ScrubFilter(logging.Filter):
    """Defence in depth: no log line may carry the API key, whatever formatted it."""

    def __init__(self, secret: Callable[[], str | None]) -> None:
        super().__init__()
        self._secret = secret

    def filter(self, record: logging.LogRecord) -> bool:
        secret = self._secret()
        if secret:
            msg = record.getMessage()
            scrubbed = redact(msg, secret)
            if scrubbed != msg:
                record.msg, record.args = scrubbed, None
        return True


class _SafeFormatter(logging.Formatter):
    """Log lines quote servers, receipts and file names: their control characters are shown
    as escapes, never sent to the terminal."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return escape(super().formatMessage(record))

    def formatException(self, ei: Any) -> str:
        return escape(super().formatException(ei), multiline=True)

    def formatStack(self, stack_info: str) -> str:
        return escape(super().formatStack(stack_info), multiline=True)


def install(
    log: logging.Logger, *, verbose: bool, quiet: bool, secret: Callable[[], str | None]
) -> None:
    """``log``'s one handler: stderr, at the level ``-v``/``-q`` chose; ``secret()`` is the
    API key to scrub (read at each message: it is known only once a command planned)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_SafeFormatter("deepseek-review: %(message)s"))
    handler.addFilter(_ScrubFilter(secret))
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)
