"""The front door: what a caller gave, the environment and the config file, made into the
options of one call, the same way for the command line and the library.

Precedence is flags or keywords > environment > config file > built-in defaults, for
``review``, ``continue_review`` and ``run_batch`` alike (a batch entry adds its own levels:
:func:`merge` takes any number). Every value is typed and checked by the option table, and an
error names the option as the calling layer spells it (:func:`.options.name_of`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.runner import find_repo_root
from deepseek_review.options.config import Setting, resolve, spellings
from deepseek_review.options.table import OPTIONS, check, in_scope, name_of

if TYPE_CHECKING:
    from deepseek_review.batch.run import BatchOptions
    from deepseek_review.chat.types import RetryPolicy, Timeouts
    from deepseek_review.reviewing.continuation import ContinueOptions
    from deepseek_review.reviewing.pipeline import ReviewOptions

#: The git options of a review (:class:`~.gitreview.GitOptions`).
GIT_KEYS = (
    "diff", "staged", "rev", "since_last_review", "diff_context", "function_context",
    "whole_files", "renames", "include_lock_files", "include_generated", "include_binary",
)  # fmt: skip
#: Where each option of a review goes in :class:`~.pipeline.ReviewOptions` (``group.field``
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
    "context_window": "context_window",
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
_CONTINUE_FIELDS = {
    "endpoint": "endpoint",
    "api_key_env": "api_key_env",
    "stream": "stream",
    "continuation_max_tokens": "max_tokens",
    "allow_truncated_prompt": "allow_truncated_prompt",
    "allow_secrets": "allow_secrets",
    "keep_reasoning": "keep_reasoning",
    "force": "force",
    "max_run_tokens": "max_run_tokens",
    **{k: v for k, v in REVIEW_FIELDS.items() if v.startswith(("continuation.", "retry.", "time"))},
}

Layer = Mapping[str, Setting]


def given_options(given: Mapping[str, Any], scope: str, what: str) -> dict[str, Any]:
    """The options a caller gave (None is "not given"), typed and checked.

    An option ``scope`` does not take is a :class:`ConfigError` naming it, with the closest
    one it takes."""
    allowed = sorted(o.key for o in in_scope(scope) if not o.cli_only)
    out: dict[str, Any] = {}
    for key, value in given.items():
        if key not in allowed:
            if key in OPTIONS:
                raise ConfigError(f"{key!r} is not an option of {what}")
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(f"unknown option {key!r} for {what}{hint}")
        if value is None:
            continue
        streamed = key == "prompt" and hasattr(value, "read")  # the text comes from a stream
        out[key] = value if streamed else check(key, value)
    return out


def given_layer(given: Mapping[str, Any]) -> dict[str, Setting]:
    return {k: Setting(k, v, "flag") for k, v in given.items()}


def configured_layer(root: Path, env: Mapping[str, str] | None) -> Layer:
    """What the environment and the config file set (not the defaults), with its sources. The
    whole config file is read and checked, also where the caller's values win."""
    settings = resolve(root, env=env)
    return {k: s for k, s in settings.items.items() if s.source != "default"}


#: The built-in defaults as settings, made once (a batch merges them for every entry).
_DEFAULTS = {k: Setting(k, o.default, "default") for k, o in OPTIONS.items()}


def _default(key: str) -> Setting:
    default = OPTIONS[key].default
    if isinstance(default, dict):  # a mutable default is never shared
        return Setting(key, dict(default), "default")
    return _DEFAULTS[key]


def merge(layers: Sequence[Layer], keys: Sequence[str]) -> dict[str, Setting]:
    """Every option of ``keys`` from the first layer that sets it, else its default.

    A template file set at some level beats a template name set at a less specific one or
    the default (a config file's name does not clash with a file the caller chose)."""
    out: dict[str, Setting] = {}
    level: dict[str, int] = {}
    for key in keys:
        for i, layer in enumerate(layers):
            s = layer.get(key)
            if s is not None and s.value is not None:
                out[key], level[key] = s, i
                break
        else:
            out[key] = _default(key)
    if "template_file" in level and level.get("template", len(layers)) > level["template_file"]:
        out["template"] = Setting("template", None, "default")
    return out


def _fields(values: Mapping[str, Setting], fields: Mapping[str, str]) -> dict[str, dict[str, Any]]:
    """The values as the dataclasses' fields take them (a manifest's list of context as a
    tuple, its integer temperature as a float), by group (``""``: the top level). Their
    ranges are checked by the dataclasses, with the table's checks."""
    groups: dict[str, dict[str, Any]] = {}
    for key, path in fields.items():
        group, _, name = path.rpartition(".")
        s = values[key]
        typed = s.value if s.value is None or s.source == "default" else OPTIONS[key].typed(s.value)
        groups.setdefault(group, {})[name] = typed
    return groups


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
    from deepseek_review.chat.types import RetryPolicy, Timeouts
    from deepseek_review.context.gather import ContextLimits
    from deepseek_review.context.git_plan import GitOptions
    from deepseek_review.reviewing.plan import ContinuationOptions, ReviewOptions

    g = _fields(values, REVIEW_FIELDS)
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
        from deepseek_review.context.places import refuse_git_data

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
    environment or the config file (planning's errors name them so: :func:`.options.naming_as`)."""
    given = given_options(given, "run", "review()")
    root = find_repo_root(repo_root)
    values = merge([given_layer(given), configured_layer(root, env)], list(REVIEW_FIELDS))
    prompt = _prompt(given, values["max_context_bytes"].value, root)
    return root, build_review_options(values, prompt, root), spellings(values)


def continue_options(
    path: str,
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, ContinueOptions]:
    """The repository root and the options of ``continue`` / ``continue_review()``.

    The endpoint is the receipt's unless the caller names one: a continuation goes back to
    the server that wrote the chain, so the environment's and the config file's are not
    consulted."""
    from deepseek_review.chat.types import RetryPolicy, Timeouts
    from deepseek_review.reviewing.continuation import ContinueOptions
    from deepseek_review.reviewing.plan import ContinuationOptions

    given = given_options(given, "continue", "continue_review()")
    root = find_repo_root(repo_root)
    configured = {k: s for k, s in configured_layer(root, env).items() if k != "endpoint"}
    values = merge([given_layer(given), configured], list(_CONTINUE_FIELDS))
    g = _fields(values, _CONTINUE_FIELDS)
    options = ContinueOptions(
        path=path,
        repo_root=str(root),
        **g[""],
        continuation=ContinuationOptions(**g["continuation"]),
        retry=RetryPolicy(**g["retry"]),
        timeouts=Timeouts(**g["timeouts"]),
    )
    return root, options


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
    from deepseek_review.batch.run import BatchOptions
    from deepseek_review.chat.types import RetryPolicy, Timeouts

    given = given_options(given, "batch", "run_batch()")
    root = find_repo_root(repo_root)
    run_keys = [o.key for o in in_scope("batch") if not o.review and not o.argument]
    configured = configured_layer(root, env)
    values = merge([given_layer(given), configured], run_keys)
    v = {k: s.value for k, s in values.items()}
    options = BatchOptions(
        manifest=os.fspath(manifest),
        format=v["format"],
        overrides={k: x for k, x in given.items() if OPTIONS[k].review},
        repo_root=str(root),
        shard=v["shard"],
        jobs=v["jobs"],
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
