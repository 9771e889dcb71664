"""Planning a batch entry with ``split = true``: the parts of a split review, as ``run
--split`` plans them (:func:`deepseek_review.reviewing.split_plan.plan_split_review`).

An entry whose context fits one review is planned as an ordinary entry (as ``run --split``
makes one ordinary review of it). A split entry's :attr:`PlannedEntry.plan` is its first
part's plan (its folder, endpoint, model and client are the entry's); the parts, the
synthesis and resuming are :mod:`deepseek_review.batch.split_send`'s.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepseek_review.reviewing.plan import ReviewOptions, ReviewPlan
    from deepseek_review.reviewing.split_plan import SplitReview


def plan_split_entry(
    options: ReviewOptions,
    env: Mapping[str, str] | None,
    plan: Callable[..., ReviewPlan],
    **kw: Any,
) -> tuple[ReviewPlan, SplitReview | None]:
    """The entry's plan and, when its context does not fit one review, its split review
    (the window from ``context_window``, else asked of the server as ``run`` asks it)."""
    from deepseek_review.reviewing.split_plan import (
        SplitReview,
        plan_split_review,
        window_from_server,
    )

    planned = plan_split_review(
        options, os.environ if env is None else env, window_of=window_from_server(options)
    )
    if isinstance(planned, SplitReview):
        return planned.parts[0].plan, planned
    return plan(replace(options, split=False), env, **kw), None
