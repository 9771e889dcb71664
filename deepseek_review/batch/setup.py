"""The options of ``batch`` / ``run_batch()``, from the settled values
(:mod:`deepseek_review.options.merge`), the same way for the command line and the library."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepseek_review.batch.run import BatchOptions
from deepseek_review.chat.types import RetryPolicy, Timeouts
from deepseek_review.git.runner import find_repo_root
from deepseek_review.options.merge import configured_layer, given_layer, given_options, merge
from deepseek_review.options.table import OPTIONS, in_scope
from deepseek_review.reviewing.setup import operator_pool


def batch_options(
    manifest: str | os.PathLike[str],
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, BatchOptions]:
    """The repository root and the options of ``batch`` / ``run_batch()``: the options of a
    review that were given apply to every entry that does not set them (``overrides``); the
    others belong to the whole run."""
    given = given_options(given, "batch", "run_batch()")
    root = find_repo_root(repo_root)
    run_keys = [o.key for o in in_scope("batch") if not o.review and not o.argument]
    configured = configured_layer(root, env)
    given, endpoints = operator_pool(given, configured, env)
    values = merge([given_layer(given), configured], run_keys)
    v = {k: s.value for k, s in values.items()}
    options = BatchOptions(
        manifest=os.fspath(manifest),
        format=v["format"],
        overrides={k: x for k, x in given.items() if OPTIONS[k].review},
        repo_root=str(root),
        shard=v["shard"],
        jobs=v["jobs"],
        endpoints=endpoints,
        jobs_per_endpoint=v["jobs_per_endpoint"],
        fail_fast=v["fail_fast"],
        max_total_tokens=v["max_total_tokens"],
        max_cost=v["max_cost"],
        prices=configured["prices"].value if "prices" in configured else {},
        operator_prices="prices" in configured and configured["prices"].named_by is None,
        retry=RetryPolicy(max_attempts=v["max_attempts"], backoff_initial=v["retry_wait"]),
        timeouts=Timeouts(v["connect_timeout"], v["read_timeout"], v["total_timeout"]),
        resume=v["resume"],
        trusted_rev=v["trusted_rev"],
        report=None if v["report"] is None else os.fspath(v["report"]),
    )
    return root, options
