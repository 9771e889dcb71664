"""The options of ``run`` / ``review()``: the settled
values (:mod:`deepseek_review.options.merge`) made into the dataclasses a review runs on, the
same way for the command line, the library and every batch entry."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from deepseek_review.chat.endpoint import Endpoint, endpoint_pool, resolve_endpoint
from deepseek_review.chat.types import RetryPolicy, Timeouts
from deepseek_review.context.gather import ContextLimits
from deepseek_review.context.git_plan import GitOptions
from deepseek_review.context.places import refuse_git_data
from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.runner import find_repo_root
from deepseek_review.options.config import Setting, spellings
from deepseek_review.options.merge import (
    configured_layer,
    fields_of,
    given_layer,
    given_options,
    merge,
)
from deepseek_review.options.option import ENDPOINTS_ENV
from deepseek_review.options.table import name_of
from deepseek_review.reviewing.plan import ContinuationOptions, ReviewOptions

#: The git options of a review (:class:`~deepseek_review.context.git_plan.GitOptions`).
GIT_KEYS = (
    "diff", "staged", "rev", "since_last_review", "diff_context", "function_context",
    "whole_files", "renames", "include_lock_files", "include_generated", "include_binary",
)  # fmt: skip
#: Where each option of a review goes in :class:`~reviewing.pipeline.ReviewOptions` (``group.field``
#: for its nested dataclasses).
REVIEW_FIELDS = {
    "context": "context",
    "exclude": "exclude",
    "topic": "topic",
    "model": "model",
    "endpoint": "endpoint",
    "api_key_env": "api_key_env",
    "output_dir": "output_dir",
    "template": "template",
    "template_file": "template_file",
    "temperature": "temperature",
    "max_tokens": "max_tokens",
    "stream": "stream",
    "extra_body": "extra_body",
    "keep_reasoning": "keep_reasoning",
    "findings": "findings",
    "findings_from": "findings_from",
    "self_check": "self_check",
    "self_check_threshold": "self_check_threshold",
    "context_window": "context_window",
    "split": "split",
    "allow_truncated_prompt": "allow_truncated_prompt",
    "allow_secrets": "allow_secrets",
    "max_file_bytes": "limits.max_file_bytes",
    "max_context_bytes": "limits.max_context_bytes",
    "max_continuations": "continuation.max_continuations",
    "continuation_style": "continuation.style",
    "continuation_model": "continuation.model",
    "continuation_max_tokens": "continuation.max_tokens",
    "server": "continuation.server",
    "reasoning": "reasoning",
    "api": "api",
    "continuation_extra_body": "continuation.extra_body",
    "max_run_tokens": "max_run_tokens",
    "max_attempts": "retry.max_attempts",
    "retry_wait": "retry.backoff_initial",
    "connect_timeout": "timeouts.connect",
    "read_timeout": "timeouts.read",
    "total_timeout": "timeouts.total",
    **{k: f"git.{k}" for k in GIT_KEYS},
}


def build_review_options(
    values: Mapping[str, Setting],
    prompt: str,
    root: Path,
    *,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    operator_endpoints: tuple[str, ...] = (),
) -> ReviewOptions:
    """The :class:`ReviewOptions` of settled ``values`` (every key of :data:`REVIEW_FIELDS`):
    what ``run``, ``review()`` and every batch entry build, from one mapping. A batch gives
    its run's ``retry`` and ``timeouts`` (its entries share one client per endpoint)."""

    g = fields_of(values, REVIEW_FIELDS)
    return ReviewOptions(
        **g[""],
        prompt=prompt,
        repo_root=str(root),
        limits=ContextLimits(**g["limits"]),
        continuation=ContinuationOptions(**g["continuation"]),
        git=GitOptions(**g["git"]),
        retry=retry or RetryPolicy(**g["retry"]),
        timeouts=timeouts or Timeouts(**g["timeouts"]),
        endpoint_named_by=values["endpoint"].named_by,
        server_declared=values["server"].source != "default",
        operator_endpoints=operator_endpoints,
    )


def read_prompt_file(path: Path, shown: str, limit: int) -> str:
    """A prompt file, read no further than ``limit`` bytes (plus one, so that a longer one is
    refused): ``/dev/zero`` must not fill the memory."""
    where = f"{name_of('prompt_file')} {shown}"
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
        if len(data) > limit:
            raise InputError(f"{where}: over {name_of('max_context_bytes')} {limit}")
        return data.decode("utf-8")
    except FileNotFoundError:
        raise InputError(f"{where}: no such file") from None
    except UnicodeDecodeError:
        raise InputError(f"{where}: not UTF-8") from None
    except OSError as exc:
        raise InputError(f"{where}: cannot read ({exc.strerror or exc})") from None


def _prompt(given: Mapping[str, Any], limit: int, root: Path) -> str:
    """The prompt from its one source: text, a file (never in git's data, where the checkout
    token lives), or a text stream (read up to ``limit``)."""
    prompt, path = given.get("prompt"), given.get("prompt_file")
    if prompt is not None and path is not None:
        both = f"{name_of('prompt')} or {name_of('prompt_file')}"
        raise ConfigError(f"give the prompt once: {both}, not both")
    if path is not None:
        refuse_git_data(root, str(path), Path(path).resolve(), what=name_of("prompt_file"))
        return read_prompt_file(Path(path), str(path), limit)
    if prompt is None or isinstance(prompt, str):
        return prompt or ""
    source = getattr(prompt, "name", "a stream")
    try:
        text = str(prompt.read(limit + 1))
    except UnicodeDecodeError:
        raise InputError(f"the prompt read from {source} is not UTF-8") from None
    if len(text) > limit:
        over = f"{name_of('max_context_bytes')} {limit}"
        raise InputError(f"the prompt read from {source} is over {over}")
    return text


def review_options(
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, ReviewOptions]:
    """The repository root and the options of ``run`` / ``review()``.

    ``given`` holds the options of ``run`` in snake_case, each only when the caller set it
    (None is "not set"); ``prompt`` may also be a text stream."""
    root, options, _ = review_setup(given, repo_root=repo_root, env=env)
    return root, options


def review_setup(
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, ReviewOptions, dict[str, str]]:
    """:func:`review_options`, and how to name the options whose values came from the
    environment or the config file (planning's errors name them so:
    :func:`options.table.naming_as`)."""
    given = given_options(given, "run", "review()")
    root = find_repo_root(repo_root)
    configured = configured_layer(root, env)
    asked = given
    given, pool = operator_pool(given, configured, env)
    values = merge([given_layer(given), configured], [*REVIEW_FIELDS, "jobs_per_endpoint"])
    if not values["split"].value:
        _refuse_several(asked.get("endpoint"), pool)
    prompt = _prompt(given, values["max_context_bytes"].value, root)
    options = build_review_options(values, prompt, root)
    if pool:
        per = values["jobs_per_endpoint"].value
        options = dataclasses.replace(options, pool=pool, jobs_per_endpoint=per)
    return root, options, spellings(values)


def _refuse_several(given: str | tuple[str, ...] | None, pool: tuple[Endpoint, ...]) -> None:
    """One review goes to one server: ``--endpoint`` given more than once (or
    ``DEEPSEEK_REVIEW_ENDPOINTS`` naming several) is refused unless ``split`` spreads parts."""
    how = f"unless {name_of('split')} spreads the review's parts over several servers"
    if isinstance(given, tuple) and len(given) > 1:
        raise ConfigError(
            f"{name_of('endpoint')} was given more than once; it takes one value {how}"
        )
    if pool:
        raise ConfigError(f"{ENDPOINTS_ENV} names {len(pool)} servers; run takes one {how}")


def operator_pool(
    given: Mapping[str, Any], configured: Mapping[str, Setting], env: Mapping[str, str] | None
) -> tuple[dict[str, Any], tuple[Endpoint, ...]]:
    """The servers the operator named (``--endpoint`` each time given, else
    ``DEEPSEEK_REVIEW_ENDPOINTS``), each with the key that may go there, when there are two
    or more; and ``given`` with the one endpoint entries are planned with: the first that is
    not loopback (so the secret scan is the strictest any server of the pool needs), else
    the first."""
    env = os.environ if env is None else env
    urls = endpoint_pool(given.get("endpoint"), env)
    out = dict(given)
    if len(urls) < 2:
        if urls and not isinstance(given.get("endpoint"), str):
            out["endpoint"] = urls[0]
        return out, ()
    key_env = merge([given_layer(given), configured], ["api_key_env"])["api_key_env"].value
    pool = tuple(resolve_endpoint(u, env, key_env=key_env) for u in urls)
    out["endpoint"] = next((ep.url for ep in pool if not ep.is_loopback), urls[0])
    return out, pool
