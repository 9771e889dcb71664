"""deepseek-review: ask a DeepSeek model to review repository files, with verifiable receipts.

The library API is one call per command: :func:`review` (and :func:`plan_review` /
:func:`send_review`), :func:`continue_review`, :func:`show`, :func:`verify`, :func:`stats`,
:func:`findings`, :func:`run_batch` (and :func:`plan_batch` / :func:`execute_batch`),
:func:`sign` and :func:`attest` (signed reviews: :func:`signing_key`, :func:`signed_with`) and
:func:`configuration` (see :mod:`deepseek_review.api`); they apply keywords > environment >
config file > defaults as the commands do, return dataclasses and raise :class:`ReviewError`
subclasses. Each name is imported on first use from the module that holds it.
"""

from __future__ import annotations

from ._version import __version__

# Not typing's: `deepseek-review --version` imports this package and nothing else it need not.
TYPE_CHECKING = False

if TYPE_CHECKING:
    from typing import Any

    from deepseek_review.api import (
        attest,
        configuration,
        continue_review,
        execute_batch,
        findings,
        plan_batch,
        plan_review,
        review,
        run_batch,
        send_review,
        show,
        sign,
        signed_with,
        signing_key,
        stats,
        verify,
    )
    from deepseek_review.batch.run import BatchOptions, BatchReport, EntryReport
    from deepseek_review.errors import ReviewError
    from deepseek_review.reviewing.pipeline import ContinuationOptions, ReviewOptions, ReviewResult
    from deepseek_review.reviewing.segment import Segment
    from deepseek_review.verification import CheckResult, ReceiptReport, VerifyReport

#: Where each public name that is not a library call lives (the calls are in :mod:`.api`).
_HOMES = {
    "ReviewOptions": "reviewing.pipeline",
    "ContinuationOptions": "reviewing.pipeline",
    "ReviewResult": "reviewing.pipeline",
    "Segment": "reviewing.segment",
    "VerifyReport": "verification",
    "ReceiptReport": "verification",
    "CheckResult": "verification",
    "BatchOptions": "batch.run",
    "BatchReport": "batch.run",
    "EntryReport": "batch.run",
    "ReviewError": "errors",
}

__all__ = [
    "BatchOptions",
    "BatchReport",
    "CheckResult",
    "ContinuationOptions",
    "EntryReport",
    "ReceiptReport",
    "ReviewError",
    "ReviewOptions",
    "ReviewResult",
    "Segment",
    "VerifyReport",
    "__version__",
    "attest",
    "configuration",
    "continue_review",
    "execute_batch",
    "findings",
    "plan_batch",
    "plan_review",
    "review",
    "run_batch",
    "send_review",
    "show",
    "sign",
    "signed_with",
    "signing_key",
    "stats",
    "verify",
]


#: Each public name, imported on first use from the module that holds it.
_LAZY = {name: _HOMES.get(name, "api") for name in __all__ if name != "__version__"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepseek_review' has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
