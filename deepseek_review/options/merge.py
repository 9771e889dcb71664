"""The flag > environment > config file > default merge: what a caller gave, the environment
and the config file, made into settled values, the same way for the command line and the
library.

A batch entry adds its own levels: :func:`merge` takes any number. Every value is typed and
checked by the option table, and an error names the option as the calling layer spells it
(:func:`.table.name_of`). What a command builds from the settled values lives with the command
(:mod:`deepseek_review.reviewing.setup`, :mod:`deepseek_review.batch.setup`).
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deepseek_review.errors import ConfigError
from deepseek_review.options.config import Setting, resolve
from deepseek_review.options.table import OPTIONS, check, in_scope

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
        if scope in OPTIONS[key].repeats and isinstance(value, list | tuple):
            out[key] = tuple(check(key, v) for v in value)  # one value per server of a pool
            continue
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


def fields_of(
    values: Mapping[str, Setting], fields: Mapping[str, str]
) -> dict[str, dict[str, Any]]:
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
