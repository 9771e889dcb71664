"""Review options from what the caller gave, the environment and the config file.

``run`` and the library's ``review()`` both build their :class:`ReviewOptions` here, so a
repository's ``.deepseek-review.toml`` and ``DEEPSEEK_REVIEW_*`` apply to both the same way
(flags or keywords > environment > config file > defaults), and the same request bytes follow.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .client import RetryPolicy, Timeouts
from .config import KEYS, resolve
from .context import ContextLimits
from .errors import ConfigError
from .pipeline import ContinuationOptions, ReviewOptions
from .repo import find_repo_root

#: Options that are not settings (no config key, no environment variable): per call only.
CALL_ONLY = frozenset(
    {
        "context",
        "prompt",
        "topic",
        "template_file",
        "extra_body",
        "keep_reasoning",
        "continuation_extra_body",
        "allow_truncated_prompt",
        "allow_secrets",
        "retry_wait",
    }
)


def review_options(
    given: Mapping[str, Any],
    *,
    repo_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Path, ReviewOptions]:
    """The repository root and the review's options.

    ``given`` holds setting keys (``model``, ``max_tokens``, ``server``, ...) and call-only
    options (``context``, ``prompt``, ...), each only when the caller set it (None is "not
    set"). An unknown key is a :class:`ConfigError` naming it.
    """
    unknown = sorted(k for k in given if k not in KEYS and k not in CALL_ONLY)
    if unknown:
        raise ConfigError(f"unknown option {unknown[0]!r}")
    root = find_repo_root(repo_root)
    flags = {k: v for k, v in given.items() if k in KEYS and v is not None}
    cfg = resolve(root, flags, env)
    call = {k: v for k, v in given.items() if k in CALL_ONLY and v is not None}
    context = call.get("context", ())
    template_file = call.get("template_file")
    options = ReviewOptions(
        context=(context,) if isinstance(context, str) else tuple(context),
        prompt=call.get("prompt", ""),
        topic=call.get("topic", "review"),
        model=cfg["model"],
        repo_root=str(root),
        output_dir=cfg["output_dir"],
        # A template file given by the caller replaces the configured template name.
        template=given.get("template") if template_file else cfg["template"],
        template_file=template_file,
        temperature=cfg["temperature"],
        max_tokens=cfg["max_tokens"],
        stream=cfg["stream"],
        extra_body=dict(call.get("extra_body", {})),
        limits=ContextLimits(
            max_file_bytes=cfg["max_file_bytes"], max_context_bytes=cfg["max_context_bytes"]
        ),
        keep_reasoning=call.get("keep_reasoning", False),
        continuation=ContinuationOptions(
            max_continuations=cfg["max_continuations"],
            style=cfg["continuation_style"],
            model=cfg["continuation_model"],
            max_tokens=cfg["continuation_max_tokens"],
            server=cfg["server"],
            extra_body=dict(call.get("continuation_extra_body", {})),
        ),
        context_window=cfg["context_window"],
        allow_truncated_prompt=call.get("allow_truncated_prompt", False),
        allow_secrets=call.get("allow_secrets", False),
        endpoint=cfg["endpoint"],
        endpoint_named_by=cfg.items["endpoint"].named_by,
        api_key_env=cfg["api_key_env"],
        retry=RetryPolicy(
            max_attempts=cfg["max_attempts"], backoff_initial=call.get("retry_wait", 1.0)
        ),
        timeouts=Timeouts(
            connect=cfg["connect_timeout"], read=cfg["read_timeout"], total=cfg["total_timeout"]
        ),
    )
    return root, options
