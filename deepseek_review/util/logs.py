"""The package's one logger, silent until the command line gives it a handler.

Every module that logs imports :data:`log` from here, so the handler is in place before any
message. The logger is made when the first such module asks for it; a handler the command line
gives before then waits in :func:`configure`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

    #: Every module's logger: one name, so ``--verbose`` and ``--quiet`` set one level.
    log: logging.Logger

_setup: Callable[[logging.Logger], None] | None = None


def configure(setup: Callable[[logging.Logger], None]) -> None:
    """Have ``setup`` give the logger its handlers and level: now when it exists, else as
    soon as a module that logs takes it (the latest ``setup`` wins)."""
    global _setup
    logger = globals().get("log")
    if logger is not None:
        setup(logger)
    else:
        _setup = setup


def __getattr__(name: str) -> Any:
    """:data:`log`, made on first use."""
    if name != "log":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import logging

    logger = logging.getLogger("deepseek_review")
    # A library prints nothing: without this, Python's last-resort handler would write the
    # warnings of library calls to stderr. The CLI replaces it with its own handler.
    if not logger.handlers:
        logger.addHandler(logging.NullHandler())
    globals()["log"] = logger
    if _setup is not None:
        _setup(logger)
    return logger
