"""The library API: one call per job, plain values in, dataclasses out.

    from deepseek_review import review, verify, run_batch

    result = review(context=["docs/spec.md"], prompt="Check the arithmetic.",
                    endpoint="http://127.0.0.1:11434", topic="spec_check")
    print(result.segments[-1].answer_path, result.truncated, result.text[:200])

    report = verify(["reviews"], root=".", strict=True)
    assert report.ok, report.failed_checks

    batch = run_batch("reviews.toml", jobs=8)
    print(batch.status, batch.counts)

Failures raise :class:`~deepseek_review.errors.ReviewError` subclasses (each with its
``exit_code``), never ``SystemExit``; nothing is printed (status goes to the
``deepseek_review`` logger).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .batch import BatchReport, EventFn
    from .client import ProgressFn
    from .pipeline import ReviewOptions, ReviewResult
    from .verification import VerifyReport


def review(
    options: ReviewOptions | None = None,
    /,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    repo_root: str | Path | None = None,
    **fields: Any,
) -> ReviewResult:
    """Run one review end to end (``deepseek-review run``).

    Keywords are ``run``'s options in snake_case (``context``, ``prompt``, ``topic``,
    ``model``, ``endpoint``, ``max_tokens``, ``max_continuations``, ``server``, ...); what they
    leave unset comes from the environment (``DEEPSEEK_REVIEW_*``) and the repository's config
    file, exactly as for ``run``. A :class:`~deepseek_review.pipeline.ReviewOptions` instead
    is taken as complete (no config applied), with keywords replacing its fields. ``env``
    replaces ``os.environ``.
    """
    from .frontdoor import review_options
    from .pipeline import review as _review

    if options is None:
        _, options = review_options(fields, repo_root=repo_root, env=env)
    elif fields or repo_root is not None:
        if repo_root is not None:
            fields["repo_root"] = str(repo_root)
        options = dataclasses.replace(options, **fields)
    return _review(options, env=env, progress=progress)


def verify(
    paths: Sequence[str] = (),
    *,
    root: str | Path | None = None,
    strict: bool = False,
    jobs: int | None = None,
) -> VerifyReport:
    """Check receipts without re-running the model (``deepseek-review verify``).

    ``paths`` are receipts, answers or folders relative to ``root`` (default: the enclosing
    git work tree); none means the configured output folder. The report lists every check of
    every receipt; ``report.ok`` is the verdict.
    """
    from .config import resolve
    from .repo import find_repo_root
    from .verification import verify as _verify

    repo = find_repo_root(root)
    default = str(resolve(repo)["output_dir"])
    return _verify(list(paths), root=repo, strict=strict, jobs=jobs, default_folder=default)


def run_batch(
    manifest: str | Path,
    *,
    jobs: int = 4,
    shard: str | None = None,
    repo_root: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
    fail_fast: bool = False,
    max_total_tokens: int | None = None,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
    env: Mapping[str, str] | None = None,
    resume: bool = True,
    resume_from: str | None = None,
) -> BatchReport:
    """Run every review of a manifest (``deepseek-review batch``); resumes what exists.

    ``overrides`` are entry keys applied to every entry that does not set them (like the
    command's flags). Set ``stop`` to stop starting new reviews; ``on_event`` receives a
    :class:`~deepseek_review.batch.BatchEvent` per start, finish or skip, in this thread.
    ``resume_from`` (a git revision) adopts only receipts committed unchanged there;
    ``resume=False`` adopts none.
    """
    from .batch import BatchOptions
    from .batch import run_batch as _run_batch

    options = BatchOptions(
        manifest=str(manifest),
        overrides=dict(overrides or {}),
        repo_root=None if repo_root is None else str(repo_root),
        shard=shard,
        jobs=jobs,
        fail_fast=fail_fast,
        max_total_tokens=max_total_tokens,
        resume=resume,
        trusted_rev=resume_from,
    )
    return _run_batch(options, env=env, stop=stop, on_event=on_event)


__all__ = ["review", "run_batch", "verify"]
