"""The package's one logger, silent until the command line gives it a handler.

It lives here rather than in the package's ``__init__`` so that ``import deepseek_review``
(all ``--version`` needs) does not import :mod:`logging`; every module that logs imports it
from here, so the handler below is in place before any message.
"""

from __future__ import annotations

import logging

#: Every module's logger: one name, so ``--verbose`` and ``--quiet`` set one level.
log = logging.getLogger("deepseek_review")

# A library prints nothing: without this, Python's last-resort handler would write the
# warnings of library calls to stderr. The CLI replaces it with its own handler.
if not log.handlers:
    log.addHandler(logging.NullHandler())
