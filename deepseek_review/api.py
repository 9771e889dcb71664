"""The library API: one call per command, plain values in, dataclasses out.

    from deepseek_review import review, verify, run_batch

    result = review(context=["docs/spec.md"], prompt="Check the arithmetic.",
                    endpoint="http://127.0.0.1:11434", topic="spec_check")
    print(result.segments[-1].answer_path, result.truncated, result.text[:200])

    report = verify(["reviews"], root=".", strict=True)
    assert report.ok, report.failed_checks

    batch = run_batch("reviews.toml", jobs=8)
    print(batch.status, batch.counts)

Every call applies keywords > environment (``DEEPSEEK_REVIEW_*``) > the repository's config
file > built-in defaults exactly as its command does (the command line calls these very
functions): keywords are the command's options in snake_case, from one option table
(:mod:`.options`). Failures raise :class:`~deepseek_review.errors.ReviewError` subclasses
(each with its ``exit_code``), never ``SystemExit``; an error names an option by its key;
nothing is printed (status goes to the ``deepseek_review`` logger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .api_batch import (
    BatchPlan,
    execute_batch,
    plan_batch,
    run_batch,
)
from .api_records import (
    attest,
    findings,
    sign,
    signed_with,
    signing_key,
    stats,
    verify,
)
from .api_run import (
    Configuration,
    ShownChain,
    api_key,
    configuration,
    continue_review,
    cost_estimate,
    plan_review,
    repo_root,
    review,
    send_review,
    show,
)

if TYPE_CHECKING:
    from .manifestfile import ManifestError


def __getattr__(name: str) -> Any:
    # Loaded on first use: a manifest's reader is a batch's cost, not every call's.
    if name == "ManifestError":
        from .manifestfile import ManifestError

        return ManifestError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BatchPlan",
    "Configuration",
    "ManifestError",
    "ShownChain",
    "api_key",
    "attest",
    "configuration",
    "continue_review",
    "cost_estimate",
    "execute_batch",
    "findings",
    "plan_batch",
    "plan_review",
    "repo_root",
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
