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
(:mod:`options.table`). Failures raise :class:`~deepseek_review.errors.ReviewError` subclasses
(each with its ``exit_code``), never ``SystemExit``; an error names an option by its key;
nothing is printed (status goes to the ``deepseek_review`` logger).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from deepseek_review.api.batch import (
        BatchPlan,
        execute_batch,
        plan_batch,
        preflight_batch,
        run_batch,
    )
    from deepseek_review.api.records import (
        attest,
        findings,
        sign,
        signed_with,
        signing_key,
        stats,
        verify,
        verify_splits,
    )
    from deepseek_review.api.run import (
        api_key,
        configuration,
        continue_review,
        cost_estimate,
        plan_review,
        plan_run,
        repo_root,
        review,
        send_review,
        send_split,
        show,
    )
    from deepseek_review.api.views import Configuration, ShownChain
    from deepseek_review.batch.manifest_file import ManifestError

#: Where each name lives: a call imports only its own command family's module (``run``
#: need not load the batch's or verify's), on first use.
_MODULES = {
    "deepseek_review.api.batch": (
        "BatchPlan",
        "execute_batch",
        "plan_batch",
        "preflight_batch",
        "run_batch",
    ),
    "deepseek_review.api.views": (
        "Configuration",
        "ShownChain",
    ),
    "deepseek_review.api.run": (
        "api_key",
        "configuration",
        "continue_review",
        "cost_estimate",
        "plan_review",
        "plan_run",
        "repo_root",
        "review",
        "send_review",
        "send_split",
        "show",
    ),
    "deepseek_review.api.records": (
        "attest",
        "findings",
        "sign",
        "signed_with",
        "signing_key",
        "stats",
        "verify",
        "verify_splits",
    ),
    "deepseek_review.batch.manifest_file": ("ManifestError",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(home), name)
    globals()[name] = value
    return value


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
    "plan_run",
    "preflight_batch",
    "repo_root",
    "review",
    "run_batch",
    "send_review",
    "send_split",
    "show",
    "sign",
    "signed_with",
    "signing_key",
    "stats",
    "verify",
    "verify_splits",
]
