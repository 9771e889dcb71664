"""The package's one logger, silent until the command line gives it a handler.

It lives here rather than in the package's ``__init__`` so that ``import deepseek_review``
(all ``--version`` needs) does not import :mod:`logging`; every module that logs imports it
from here, so the handler below is in place before any message. :mod:`logging` itself is
imported when the first such module asks for :data:`log` (about 4% of a short command's
start-up): a command whose modules never log (``verify``, ``config``, ``--help``) does not
load it, and the command line's handler waits in :func:`configure` until then.
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
